//! open(2): its flags (O_CREAT, O_EXCL, O_TRUNC, O_APPEND, O_DIRECTORY), the errors of a bad
//! path or a directory, the lowest free descriptor, and a file that stays open after unlink.

use user_tests::prelude::*;

use crate::{ensure, expect_errno, get_file, put_file, same_bytes, Check, Ctx, TestResult};

use super::common::pattern;

pub fn o_creat_existing_keeps_data(cx: &Ctx) -> TestResult {
    let p = cx.path("f");
    put_file(&p, b"keep me")?;
    let f = File::open(&p, O_RDWR | O_CREAT, 0o644).what("O_CREAT on existing")?;
    f.close().what("close")?;
    same_bytes(
        &get_file(&p)?,
        b"keep me",
        "content after O_CREAT without O_TRUNC",
    )
}

pub fn o_excl_existing_eexist(cx: &Ctx) -> TestResult {
    let p = cx.path("f");
    put_file(&p, b"x")?;
    expect_errno(
        sys::open(&p, O_WRONLY | O_CREAT | O_EXCL, 0o644),
        Errno::EEXIST,
        "O_EXCL on a file",
    )?;
    let d = cx.path("d");
    sys::mkdir(&d, 0o755).what("mkdir")?;
    expect_errno(
        sys::open(&d, O_RDONLY | O_CREAT | O_EXCL, 0o644),
        Errno::EEXIST,
        "O_EXCL on a directory",
    )?;
    let n = cx.path("new");
    let f = File::open(&n, O_WRONLY | O_CREAT | O_EXCL, 0o644).what("O_EXCL on a new name")?;
    ensure!(
        f.stat().what("fstat")?.st_size == 0,
        "new file is not empty"
    );
    Ok(())
}

pub fn o_trunc(cx: &Ctx) -> TestResult {
    let p = cx.path("f");
    put_file(&p, &pattern(100, 1))?;
    let f = File::open(&p, O_RDONLY, 0).what("open read-only")?;
    ensure!(
        f.stat().what("fstat")?.st_size == 100,
        "plain open changed the size"
    );
    let f = File::open(&p, O_WRONLY | O_TRUNC, 0).what("open O_TRUNC")?;
    ensure!(
        f.stat().what("fstat")?.st_size == 0,
        "O_TRUNC did not make the size 0"
    );
    f.write_all(b"new").what("write")?;
    f.close().what("close")?;
    same_bytes(&get_file(&p)?, b"new", "content after O_TRUNC + write")
}

pub fn o_append(cx: &Ctx) -> TestResult {
    let p = cx.path("f");
    put_file(&p, b"abc")?;
    let f = File::open(&p, O_WRONLY | O_APPEND, 0).what("open O_APPEND")?;
    f.seek(0, SEEK_SET).what("lseek 0")?;
    f.write_all(b"def").what("write")?;
    ensure!(
        f.seek(0, SEEK_CUR).what("lseek")? == 6,
        "offset after an append write is not 6"
    );
    f.seek(1, SEEK_SET).what("lseek 1")?;
    f.write_all(b"g").what("write")?;
    f.close().what("close")?;
    same_bytes(&get_file(&p)?, b"abcdefg", "content after O_APPEND writes")
}

pub fn open_missing_enoent(cx: &Ctx) -> TestResult {
    expect_errno(
        sys::open(&cx.path("missing"), O_RDONLY, 0),
        Errno::ENOENT,
        "open missing",
    )?;
    expect_errno(
        sys::open(&cx.path("nodir/x"), O_WRONLY | O_CREAT, 0o644),
        Errno::ENOENT,
        "O_CREAT in a missing directory",
    )?;
    expect_errno(
        sys::stat(&cx.path("missing")),
        Errno::ENOENT,
        "stat missing",
    )?;
    expect_errno(
        sys::open("", O_RDONLY, 0),
        Errno::ENOENT,
        "open of the empty path",
    )?;
    Ok(())
}

pub fn o_directory_on_file_enotdir(cx: &Ctx) -> TestResult {
    let p = cx.path("f");
    put_file(&p, b"x")?;
    expect_errno(
        sys::open(&p, O_RDONLY | O_DIRECTORY, 0),
        Errno::ENOTDIR,
        "O_DIRECTORY on a file",
    )?;
    let fd = sys::open(&cx.dir, O_RDONLY | O_DIRECTORY, 0).what("O_DIRECTORY on a directory")?;
    sys::close(fd).what("close")
}

pub fn path_through_file_enotdir(cx: &Ctx) -> TestResult {
    let p = cx.path("f");
    put_file(&p, b"x")?;
    expect_errno(
        sys::open(&cx.path("f/x"), O_RDONLY, 0),
        Errno::ENOTDIR,
        "open f/x",
    )?;
    expect_errno(
        sys::open(&cx.path("f/x"), O_WRONLY | O_CREAT, 0o644),
        Errno::ENOTDIR,
        "create f/x",
    )?;
    expect_errno(
        sys::mkdir(&cx.path("f/d"), 0o755),
        Errno::ENOTDIR,
        "mkdir f/d",
    )?;
    expect_errno(sys::stat(&cx.path("f/")), Errno::ENOTDIR, "stat f/")?;
    Ok(())
}

pub fn directory_io_eisdir(cx: &Ctx) -> TestResult {
    let d = cx.path("d");
    sys::mkdir(&d, 0o755).what("mkdir")?;
    expect_errno(
        sys::open(&d, O_WRONLY, 0),
        Errno::EISDIR,
        "open a directory O_WRONLY",
    )?;
    expect_errno(
        sys::open(&d, O_RDWR, 0),
        Errno::EISDIR,
        "open a directory O_RDWR",
    )?;
    let f = File::open(&d, O_RDONLY | O_DIRECTORY, 0).what("open directory")?;
    let mut buf = [0u8; 16];
    expect_errno(f.read(&mut buf), Errno::EISDIR, "read from a directory fd")?;
    Ok(())
}

pub fn name_too_long(cx: &Ctx) -> TestResult {
    let long: String = "a".repeat(256);
    let p = cx.path(&long);
    expect_errno(
        sys::open(&p, O_WRONLY | O_CREAT, 0o644),
        Errno::ENAMETOOLONG,
        "create a 256-byte name",
    )?;
    expect_errno(
        sys::mkdir(&p, 0o755),
        Errno::ENAMETOOLONG,
        "mkdir a 256-byte name",
    )?;
    expect_errno(sys::stat(&p), Errno::ENAMETOOLONG, "stat a 256-byte name")?;
    let ok: String = "b".repeat(255);
    let p = cx.path(&ok);
    put_file(&p, b"255")?;
    same_bytes(&get_file(&p)?, b"255", "a file with a 255-byte name")?;
    sys::unlink(&p).what("unlink the 255-byte name")
}

pub fn lowest_fd_reused(cx: &Ctx) -> TestResult {
    let p = cx.path("f");
    put_file(&p, b"x")?;
    let a = sys::open(&p, O_RDONLY, 0).what("open a")?;
    let b = sys::open(&p, O_RDONLY, 0).what("open b")?;
    ensure!(b > a, "second fd {b} is not above the first {a}");
    sys::close(a).what("close a")?;
    let c = sys::open(&p, O_RDONLY, 0).what("open c")?;
    let (_, _) = (sys::close(b), sys::close(c));
    ensure!(
        c == a,
        "open after close returned fd {c}, not the lowest free {a}"
    );
    Ok(())
}

pub fn open_unlinked_file(cx: &Ctx) -> TestResult {
    let p = cx.path("f");
    put_file(&p, b"still here")?;
    let f = File::open(&p, O_RDWR, 0).what("open")?;
    sys::unlink(&p).what("unlink while open")?;
    expect_errno(sys::stat(&p), Errno::ENOENT, "stat after unlink")?;
    let mut buf = [0u8; 32];
    let n = f.pread(&mut buf, 0).what("pread after unlink")?;
    same_bytes(&buf[..n], b"still here", "content through the open fd")?;
    f.pwrite_all(b"!", 10).what("pwrite after unlink")?;
    ensure!(
        f.stat().what("fstat")?.st_size == 11,
        "size through the open fd is not 11"
    );
    put_file(&p, b"new")?;
    let n = f.pread(&mut buf, 0).what("pread")?;
    same_bytes(
        &buf[..n],
        b"still here!",
        "old file after re-creating the name",
    )
}
