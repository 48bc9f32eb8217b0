//! File-system tests: contents, offsets, open flags, names, directories, sizes. Linux semantics.

use user_tests::prelude::*;

use crate::{ensure, expect_errno, get_file, put_file, same_bytes, Check, Ctx, TestResult};

fn is_dir(st: &Stat) -> bool {
    st.st_mode & S_IFMT == S_IFDIR
}

fn is_reg(st: &Stat) -> bool {
    st.st_mode & S_IFMT == S_IFREG
}

/// A byte pattern that differs at every offset within a period of 251.
fn pattern(len: usize, salt: u8) -> Vec<u8> {
    (0..len)
        .map(|i| ((i % 251) as u8).wrapping_add(salt))
        .collect()
}

pub fn write_read_lseek(cx: &Ctx) -> TestResult {
    let p = cx.path("f");
    let f = File::open(&p, O_RDWR | O_CREAT | O_TRUNC, 0o644).what("create")?;
    ensure!(
        f.write(b"hello, world").what("write")? == 12,
        "write did not write 12 bytes"
    );
    ensure!(
        f.seek(0, SEEK_CUR).what("lseek")? == 12,
        "offset after write is not 12"
    );
    let mut buf = [0u8; 64];
    ensure!(
        f.read(&mut buf).what("read at EOF")? == 0,
        "read at EOF did not return 0"
    );
    ensure!(
        f.seek(0, SEEK_SET).what("lseek 0")? == 0,
        "lseek(0, SEEK_SET) did not return 0"
    );
    ensure!(
        f.read(&mut buf[..5]).what("read 5")? == 5,
        "read of 5 bytes came back short"
    );
    same_bytes(&buf[..5], b"hello", "first 5 bytes")?;
    let n = f.read(&mut buf).what("read rest")?;
    same_bytes(&buf[..n], b", world", "rest of the file")?;
    ensure!(
        f.read(&mut buf).what("read at EOF")? == 0,
        "second read at EOF did not return 0"
    );
    f.seek(7, SEEK_SET).what("lseek 7")?;
    f.write_all(b"W").what("overwrite at 7")?;
    ensure!(
        f.stat().what("fstat")?.st_size == 12,
        "overwrite changed the size"
    );
    f.close().what("close")?;
    same_bytes(&get_file(&p)?, b"hello, World", "file after overwrite")
}

pub fn read_at_eof_returns_0(cx: &Ctx) -> TestResult {
    let p = cx.path("empty");
    put_file(&p, b"")?;
    let f = File::open_read(&p).what("open")?;
    let mut buf = [0u8; 16];
    ensure!(
        f.read(&mut buf).what("read")? == 0,
        "read of an empty file did not return 0"
    );
    ensure!(
        f.pread(&mut buf, 1000).what("pread")? == 0,
        "pread past EOF did not return 0"
    );
    put_file(&p, b"abc")?;
    let f = File::open_read(&p).what("open")?;
    ensure!(
        f.pread(&mut buf, 3).what("pread at EOF")? == 0,
        "pread at exactly EOF did not return 0"
    );
    ensure!(
        f.pread(&mut buf, 2).what("pread")? == 1,
        "pread of the last byte did not return 1"
    );
    Ok(())
}

pub fn pwrite_pread_offsets(cx: &Ctx) -> TestResult {
    let p = cx.path("f");
    let f = File::open(&p, O_RDWR | O_CREAT | O_TRUNC, 0o644).what("create")?;
    ensure!(
        f.pwrite(b"abc", 10).what("pwrite at 10")? == 3,
        "pwrite did not write 3 bytes"
    );
    ensure!(
        f.stat().what("fstat")?.st_size == 13,
        "size after pwrite at 10 is not 13"
    );
    ensure!(
        f.seek(0, SEEK_CUR).what("lseek")? == 0,
        "pwrite moved the file offset"
    );
    let mut buf = [0xffu8; 32];
    let n = f.pread(&mut buf, 0).what("pread 0")?;
    same_bytes(&buf[..n], b"\0\0\0\0\0\0\0\0\0\0abc", "hole + data")?;
    let n = f.pread(&mut buf[..10], 11).what("pread 11")?;
    same_bytes(&buf[..n], b"bc", "pread from 11")?;
    ensure!(
        f.seek(0, SEEK_CUR).what("lseek")? == 0,
        "pread moved the file offset"
    );
    f.write_all(b"XY").what("write at 0")?;
    f.close().what("close")?;
    same_bytes(
        &get_file(&p)?,
        b"XY\0\0\0\0\0\0\0\0abc",
        "file after write at 0",
    )
}

pub fn io_across_blocks(cx: &Ctx) -> TestResult {
    let p = cx.path("big");
    let data = pattern(300_000, 3);
    let f = File::open(&p, O_RDWR | O_CREAT | O_TRUNC, 0o644).what("create")?;
    for chunk in data.chunks(1000) {
        f.write_all(chunk).what("write 1000")?;
    }
    ensure!(
        f.stat().what("fstat")?.st_size == 300_000,
        "size is not 300000"
    );
    let mut buf = vec![0u8; 5000];
    for off in [
        0usize, 1, 511, 512, 4095, 4096, 65535, 65536, 131071, 299_999, 295_000,
    ] {
        let n = f.pread_full(&mut buf, off as u64).what("pread")?;
        let end = (off + 5000).min(data.len());
        same_bytes(
            &buf[..n],
            &data[off..end],
            &format!("pread of 5000 at {off}"),
        )?;
    }
    // Overwrite across a 4 KiB boundary and re-read around it.
    f.pwrite_all(b"0123456789", 4091)
        .what("pwrite across 4096")?;
    let mut want = data.clone();
    want[4091..4101].copy_from_slice(b"0123456789");
    f.close().what("close")?;
    same_bytes(
        &get_file(&p)?,
        &want,
        "file after overwrite across a block boundary",
    )
}

/// Large reads into buffers that do not start on a page (a malloc'ed buffer: fio's, dd's),
/// right after the file is written and again: every byte lands where it belongs.
pub fn large_reads_unaligned_buffers(cx: &Ctx) -> TestResult {
    let p = cx.path("unaligned");
    let len = 3 << 20;
    let data = pattern(len, 7);
    let f = File::open(&p, O_RDWR | O_CREAT | O_TRUNC, 0o644).what("create")?;
    for chunk in data.chunks(1 << 20) {
        f.write_all(chunk).what("write 1 MiB")?;
    }
    f.sync().what("fsync")?;
    let mut buf = sys::AnonMap::new((1 << 20) + 8192).what("mmap a buffer")?;
    for (shift, off, n) in [
        (16usize, 0u64, 1usize << 20),
        (512, 1 << 20, 1 << 20),
        (4000, 4096, (1 << 20) + 512),
        (16, (2 << 20) + 100, 700_000),
    ] {
        let dst = &mut buf.as_mut_slice()[shift..shift + n];
        let got = f.pread_full(dst, off).what("pread")?;
        let want = &data[off as usize..(off as usize + n).min(len)];
        same_bytes(
            &dst[..got],
            want,
            &format!("pread of {n} at {off} into a buffer {shift} bytes into a page"),
        )?;
    }
    f.close().what("close")
}

/// The same through a disk node (dbfs-os's raw disk `/dev/vdc`, read only): a read into a
/// buffer that does not start on a page goes to the device as it is and must return what a
/// read into a page-aligned buffer does. Not run elsewhere (no such disk).
pub fn disk_reads_unaligned_buffers(_cx: &Ctx) -> TestResult {
    if sys::counters().is_err() {
        return Ok(()); // not dbfs-os: there is no scratch disk to read
    }
    let f = File::open("/dev/vdc", O_RDONLY, 0).what("open /dev/vdc")?;
    let n = (1 << 20) + 1536;
    let mut aligned = sys::AnonMap::new(n + 4096).what("mmap a buffer")?;
    let mut skewed = sys::AnonMap::new(n + 4096).what("mmap a buffer")?;
    for (shift, off) in [(16usize, 0u64), (4000, 512 * 8), (511, 3 << 20)] {
        let want = &mut aligned.as_mut_slice()[..n];
        let got_want = f.pread_full(want, off).what("pread, aligned")?;
        let dst = &mut skewed.as_mut_slice()[shift..shift + n];
        dst.fill(0xee);
        let got = f.pread_full(dst, off).what("pread, unaligned")?;
        ensure!(got == got_want, "{got} bytes against {got_want} at {off}");
        same_bytes(
            &dst[..got],
            &aligned.as_mut_slice()[..got],
            &format!("/dev/vdc at {off} into a buffer {shift} bytes into a page"),
        )?;
    }
    f.close().what("close")
}

pub fn lseek_whence(cx: &Ctx) -> TestResult {
    let p = cx.path("f");
    put_file(&p, &pattern(100, 0))?;
    let f = File::open(&p, O_RDWR, 0).what("open")?;
    ensure!(
        f.seek(0, SEEK_END).what("SEEK_END")? == 100,
        "SEEK_END 0 is not 100"
    );
    ensure!(
        f.seek(-10, SEEK_END).what("SEEK_END -10")? == 90,
        "SEEK_END -10 is not 90"
    );
    ensure!(
        f.seek(5, SEEK_CUR).what("SEEK_CUR")? == 95,
        "SEEK_CUR +5 is not 95"
    );
    ensure!(
        f.seek(200, SEEK_SET).what("SEEK_SET 200")? == 200,
        "SEEK_SET past EOF failed"
    );
    ensure!(
        f.stat().what("fstat")?.st_size == 100,
        "seeking past EOF changed the size"
    );
    f.write_all(b"z").what("write at 200")?;
    ensure!(
        f.stat().what("fstat")?.st_size == 201,
        "write at 200 did not make the size 201"
    );
    let mut buf = [0xffu8; 101];
    ensure!(
        f.pread_full(&mut buf, 100).what("pread")? == 101,
        "short pread"
    );
    ensure!(
        buf[..100].iter().all(|&b| b == 0),
        "the gap before the write is not zeros"
    );
    ensure!(buf[100] == b'z', "the byte written at 200 is wrong");
    expect_errno(f.seek(-1, SEEK_SET), Errno::EINVAL, "lseek(-1, SEEK_SET)")?;
    expect_errno(
        f.seek(-1000, SEEK_CUR),
        Errno::EINVAL,
        "lseek(-1000, SEEK_CUR) from 201",
    )?;
    ensure!(
        f.seek(0, SEEK_CUR).what("SEEK_CUR")? == 201,
        "a failed lseek moved the offset"
    );
    Ok(())
}

pub fn write_zero_bytes(cx: &Ctx) -> TestResult {
    let p = cx.path("f");
    put_file(&p, b"abc")?;
    let f = File::open(&p, O_WRONLY, 0).what("open")?;
    ensure!(
        f.write(b"").what("write 0 bytes")? == 0,
        "write of 0 bytes did not return 0"
    );
    ensure!(
        f.stat().what("fstat")?.st_size == 3,
        "a 0-byte write changed the size"
    );
    Ok(())
}

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

pub fn mkdir_existing_eexist(cx: &Ctx) -> TestResult {
    let d = cx.path("d");
    sys::mkdir(&d, 0o755).what("mkdir")?;
    ensure!(
        is_dir(&sys::stat(&d).what("stat")?),
        "mkdir made something that is not S_IFDIR"
    );
    expect_errno(
        sys::mkdir(&d, 0o755),
        Errno::EEXIST,
        "mkdir of an existing directory",
    )?;
    let f = cx.path("f");
    put_file(&f, b"")?;
    expect_errno(sys::mkdir(&f, 0o755), Errno::EEXIST, "mkdir over a file")?;
    Ok(())
}

pub fn rmdir_semantics(cx: &Ctx) -> TestResult {
    let d = cx.path("d");
    sys::mkdir(&d, 0o755).what("mkdir")?;
    let f = cx.path("d/f");
    put_file(&f, b"x")?;
    expect_errno(
        sys::rmdir(&d),
        Errno::ENOTEMPTY,
        "rmdir of a non-empty directory",
    )?;
    expect_errno(sys::rmdir(&f), Errno::ENOTDIR, "rmdir of a file")?;
    sys::unlink(&f).what("unlink")?;
    sys::rmdir(&d).what("rmdir of the emptied directory")?;
    expect_errno(sys::stat(&d), Errno::ENOENT, "stat after rmdir")?;
    expect_errno(
        sys::rmdir(&d),
        Errno::ENOENT,
        "rmdir of a missing directory",
    )?;
    Ok(())
}

pub fn unlink_directory_eisdir(cx: &Ctx) -> TestResult {
    let d = cx.path("d");
    sys::mkdir(&d, 0o755).what("mkdir")?;
    expect_errno(sys::unlink(&d), Errno::EISDIR, "unlink of a directory")?;
    expect_errno(
        sys::unlink(&cx.path("missing")),
        Errno::ENOENT,
        "unlink of a missing name",
    )?;
    ensure!(
        is_dir(&sys::stat(&d).what("stat")?),
        "the directory is gone after a failed unlink"
    );
    Ok(())
}

pub fn unlink_then_recreate(cx: &Ctx) -> TestResult {
    let p = cx.path("f");
    put_file(&p, &pattern(10_000, 7))?;
    sys::unlink(&p).what("unlink")?;
    expect_errno(sys::stat(&p), Errno::ENOENT, "stat after unlink")?;
    let f = File::open(&p, O_RDWR | O_CREAT | O_EXCL, 0o644).what("re-create")?;
    ensure!(
        f.stat().what("fstat")?.st_size == 0,
        "re-created file is not empty"
    );
    f.write_all(b"second").what("write")?;
    f.close().what("close")?;
    same_bytes(&get_file(&p)?, b"second", "re-created file")
}

/// Every entry of `dir` through getdents64 with a `buf`-byte buffer, checking each record.
fn list(dir: &str, buf: usize) -> Result<Vec<(String, u8)>, String> {
    let mut out = Vec::new();
    for e in sys::read_dir_with(dir, buf).what("open directory")? {
        let e = e.what("getdents64")?;
        ensure!(
            (e.reclen as usize).is_multiple_of(8),
            "d_reclen {} of {:?} is not a multiple of 8",
            e.reclen,
            e.name
        );
        ensure!(
            e.reclen as usize >= dirent64_reclen(e.name.len()),
            "d_reclen {} too small for {:?}",
            e.reclen,
            e.name
        );
        ensure!(e.ino != 0, "d_ino of {:?} is 0", e.name);
        out.push((e.name, e.kind));
    }
    Ok(out)
}

fn names_sorted(entries: &[(String, u8)]) -> Vec<String> {
    let mut v: Vec<String> = entries.iter().map(|(n, _)| n.clone()).collect();
    v.sort();
    v
}

pub fn getdents_exact_names(cx: &Ctx) -> TestResult {
    let d = cx.path("d");
    sys::mkdir(&d, 0o755).what("mkdir")?;
    for n in ["a", "bb", "ccc"] {
        put_file(&user_tests::path_join(&d, n), n.as_bytes())?;
    }
    sys::mkdir(&user_tests::path_join(&d, "sub"), 0o755).what("mkdir sub")?;
    let want = [".", "..", "a", "bb", "ccc", "sub"];
    for buf in [4096usize, 64, 32] {
        let entries = list(&d, buf)?;
        let got = names_sorted(&entries);
        ensure!(
            got == want,
            "listing with a {buf}-byte buffer: got {got:?}, expected {want:?}"
        );
        for (name, kind) in &entries {
            let ok = match name.as_str() {
                "." | ".." | "sub" => *kind == DT_DIR || *kind == DT_UNKNOWN,
                _ => *kind == DT_REG || *kind == DT_UNKNOWN,
            };
            ensure!(ok, "d_type {kind} of {name:?} is wrong");
        }
    }
    // A buffer too small for one record is EINVAL; reading past the end returns 0; lseek(0)
    // rewinds.
    let f = File::open(&d, O_RDONLY | O_DIRECTORY, 0).what("open directory")?;
    let mut tiny = [0u8; 8];
    expect_errno(
        sys::getdents64(f.fd(), &mut tiny),
        Errno::EINVAL,
        "getdents64 with 8 bytes",
    )?;
    let mut buf = vec![0u8; 4096];
    let mut total = 0;
    loop {
        match sys::getdents64(f.fd(), &mut buf).what("getdents64")? {
            0 => break,
            n => total += n,
        }
    }
    ensure!(total > 0, "getdents64 returned nothing");
    ensure!(
        sys::getdents64(f.fd(), &mut buf).what("getdents64 at end")? == 0,
        "getdents64 at the end is not 0"
    );
    f.seek(0, SEEK_SET).what("lseek directory to 0")?;
    ensure!(
        sys::getdents64(f.fd(), &mut buf).what("getdents64 after rewind")? > 0,
        "lseek(0) did not rewind the directory"
    );
    Ok(())
}

pub fn getdents_many_small_buffer(cx: &Ctx) -> TestResult {
    let d = cx.path("d");
    sys::mkdir(&d, 0o755).what("mkdir")?;
    let mut want: Vec<String> = (0..100).map(|i| format!("file{i:03}")).collect();
    for n in &want {
        put_file(&user_tests::path_join(&d, n), b"")?;
    }
    // Remove a few so the directory has holes.
    for i in (0..100).step_by(7) {
        sys::unlink(&user_tests::path_join(&d, &format!("file{i:03}"))).what("unlink")?;
    }
    want.retain(|n| n[4..].parse::<usize>().map(|i| i % 7 != 0).unwrap_or(true));
    want.push(".".into());
    want.push("..".into());
    want.sort();
    let got = names_sorted(&list(&d, 100)?);
    ensure!(
        got.len() == want.len(),
        "got {} names, expected {}",
        got.len(),
        want.len()
    );
    ensure!(got == want, "listing differs: got {got:?}");
    Ok(())
}

pub fn rename_semantics(cx: &Ctx) -> TestResult {
    let (a, b, c) = (cx.path("a"), cx.path("b"), cx.path("c"));
    put_file(&a, b"AAA")?;
    put_file(&b, b"B")?;
    sys::rename(&a, &b).what("rename a over existing b")?;
    expect_errno(sys::stat(&a), Errno::ENOENT, "stat a after rename")?;
    same_bytes(&get_file(&b)?, b"AAA", "b after rename over it")?;
    sys::rename(&b, &c).what("rename b to new name c")?;
    same_bytes(&get_file(&c)?, b"AAA", "c after rename")?;
    let d = cx.path("d");
    sys::mkdir(&d, 0o755).what("mkdir d")?;
    let dc = cx.path("d/c");
    sys::rename(&c, &dc).what("rename c into d/")?;
    same_bytes(&get_file(&dc)?, b"AAA", "d/c after rename")?;
    put_file(&a, b"new a")?;
    expect_errno(
        sys::renameat2(AT_FDCWD, &a, AT_FDCWD, &dc, RENAME_NOREPLACE),
        Errno::EEXIST,
        "RENAME_NOREPLACE onto an existing name",
    )?;
    same_bytes(&get_file(&dc)?, b"AAA", "d/c after a refused rename")?;
    expect_errno(
        sys::rename(&cx.path("missing"), &b),
        Errno::ENOENT,
        "rename of a missing name",
    )?;
    sys::rename(&a, &a).what("rename a file to itself")?;
    same_bytes(&get_file(&a)?, b"new a", "a after renaming it to itself")
}

pub fn rename_directories(cx: &Ctx) -> TestResult {
    let (d1, d2, f) = (cx.path("d1"), cx.path("d2"), cx.path("f"));
    sys::mkdir(&d1, 0o755).what("mkdir d1")?;
    put_file(&cx.path("d1/inner"), b"in")?;
    sys::mkdir(&d2, 0o755).what("mkdir d2")?;
    put_file(&f, b"f")?;
    expect_errno(
        sys::rename(&d1, &f),
        Errno::ENOTDIR,
        "rename a directory over a file",
    )?;
    expect_errno(
        sys::rename(&f, &d2),
        Errno::EISDIR,
        "rename a file over a directory",
    )?;
    expect_errno(
        sys::rename(&d1, &cx.path("d1/inside")),
        Errno::EINVAL,
        "rename a directory into itself",
    )?;
    sys::rename(&d1, &d2).what("rename a directory over an empty directory")?;
    expect_errno(sys::stat(&d1), Errno::ENOENT, "stat d1 after rename")?;
    same_bytes(
        &get_file(&cx.path("d2/inner"))?,
        b"in",
        "d2/inner after the rename",
    )?;
    sys::mkdir(&d1, 0o755).what("mkdir d1 again")?;
    expect_errno(
        sys::rename(&d1, &d2),
        Errno::ENOTEMPTY,
        "rename over a non-empty directory",
    )
}

pub fn at_calls_relative_to_dirfd(cx: &Ctx) -> TestResult {
    let d = File::open(&cx.dir, O_RDONLY | O_DIRECTORY, 0).what("open the test directory")?;
    let fd = sys::openat(d.fd(), "rel", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        .what("openat(dirfd, rel)")?;
    sys::write_all(fd, b"relative").what("write")?;
    sys::close(fd).what("close")?;
    same_bytes(
        &get_file(&cx.path("rel"))?,
        b"relative",
        "file created with openat",
    )?;
    let st = sys::fstatat(d.fd(), "rel", 0).what("fstatat(dirfd, rel)")?;
    ensure!(st.st_size == 8, "fstatat size {} is not 8", st.st_size);
    sys::mkdirat(d.fd(), "sub", 0o755).what("mkdirat")?;
    ensure!(
        is_dir(&sys::stat(&cx.path("sub")).what("stat sub")?),
        "mkdirat did not make a directory"
    );
    sys::unlinkat(d.fd(), "sub", AT_REMOVEDIR).what("unlinkat AT_REMOVEDIR")?;
    sys::unlinkat(d.fd(), "rel", 0).what("unlinkat")?;
    let left = list(&cx.dir, 4096)?;
    ensure!(
        left.len() == 2,
        "directory not empty after unlinkat: {:?}",
        names_sorted(&left)
    );
    Ok(())
}

pub fn many_files(cx: &Ctx) -> TestResult {
    let n = 200;
    for i in 0..n {
        put_file(&cx.path(&format!("many_{i}")), format!("{i}").as_bytes())?;
    }
    for i in 0..n {
        let p = cx.path(&format!("many_{i}"));
        same_bytes(&get_file(&p)?, format!("{i}").as_bytes(), &p)?;
    }
    for i in 0..n {
        sys::unlink(&cx.path(&format!("many_{i}"))).what("unlink")?;
    }
    let left = list(&cx.dir, 4096)?;
    ensure!(
        left.len() == 2,
        "{} entries left after unlinking all",
        left.len() - 2
    );
    Ok(())
}

pub fn ftruncate_grow_shrink(cx: &Ctx) -> TestResult {
    let p = cx.path("f");
    let f = File::open(&p, O_RDWR | O_CREAT | O_TRUNC, 0o644).what("create")?;
    f.write_all(b"0123456789").what("write")?;
    f.set_len(100).what("ftruncate grow to 100")?;
    ensure!(
        f.stat().what("fstat")?.st_size == 100,
        "size after growing is not 100"
    );
    let mut want = b"0123456789".to_vec();
    want.resize(100, 0);
    let mut buf = vec![0xffu8; 200];
    let n = f.pread_full(&mut buf, 0).what("pread")?;
    same_bytes(&buf[..n], &want, "grown file (zeros after the data)")?;
    f.set_len(5).what("ftruncate shrink to 5")?;
    ensure!(
        f.stat().what("fstat")?.st_size == 5,
        "size after shrinking is not 5"
    );
    let n = f.pread_full(&mut buf, 0).what("pread")?;
    same_bytes(&buf[..n], b"01234", "shrunk file")?;
    f.set_len(10).what("ftruncate grow to 10")?;
    let n = f.pread_full(&mut buf, 0).what("pread")?;
    same_bytes(
        &buf[..n],
        b"01234\0\0\0\0\0",
        "re-grown file must not resurrect old bytes",
    )?;
    f.set_len(3 * 4096 + 1)
        .what("ftruncate grow across blocks")?;
    let n = f.pread_full(&mut buf, 3 * 4096 - 100).what("pread")?;
    ensure!(
        n == 101 && buf[..n].iter().all(|&b| b == 0),
        "bytes near the new end are not zeros"
    );
    f.set_len(0).what("ftruncate to 0")?;
    ensure!(
        f.stat().what("fstat")?.st_size == 0,
        "size after truncating to 0 is not 0"
    );
    f.close().what("close")?;
    let ro = File::open_read(&p).what("open read-only")?;
    expect_errno(ro.set_len(1), Errno::EINVAL, "ftruncate of a read-only fd")?;
    Ok(())
}

pub fn fstat_types_and_sizes(cx: &Ctx) -> TestResult {
    let p = cx.path("f");
    put_file(&p, &pattern(5000, 0))?;
    let st = sys::stat(&p).what("stat file")?;
    ensure!(
        is_reg(&st),
        "st_mode {:o} of a file is not S_IFREG",
        st.st_mode
    );
    ensure!(st.st_size == 5000, "st_size {} is not 5000", st.st_size);
    ensure!(st.st_blksize > 0, "st_blksize is {}", st.st_blksize);
    ensure!(st.st_ino != 0, "st_ino is 0");
    let f = File::open_read(&p).what("open")?;
    let fst = f.stat().what("fstat")?;
    ensure!(
        fst.st_ino == st.st_ino && fst.st_size == 5000 && is_reg(&fst),
        "fstat differs from stat"
    );
    let d = cx.path("d");
    sys::mkdir(&d, 0o755).what("mkdir")?;
    let dst = sys::stat(&d).what("stat dir")?;
    ensure!(
        is_dir(&dst),
        "st_mode {:o} of a directory is not S_IFDIR",
        dst.st_mode
    );
    let df = File::open(&d, O_RDONLY | O_DIRECTORY, 0).what("open dir")?;
    ensure!(
        is_dir(&df.stat().what("fstat dir")?),
        "fstat of a directory fd is not S_IFDIR"
    );
    ensure!(
        st.st_ino != dst.st_ino,
        "file and directory have the same st_ino"
    );
    Ok(())
}

pub fn statfs_ok(cx: &Ctx) -> TestResult {
    let st = sys::statfs(&cx.dir).what("statfs")?;
    ensure!(st.f_bsize > 0, "f_bsize is {}", st.f_bsize);
    ensure!(
        st.f_namelen >= 255 || st.f_namelen == 0,
        "f_namelen {} is below 255",
        st.f_namelen
    );
    ensure!(
        st.f_bfree <= st.f_blocks && st.f_bavail <= st.f_blocks,
        "free blocks exceed total"
    );
    expect_errno(
        sys::statfs(&cx.path("missing")),
        Errno::ENOENT,
        "statfs of a missing path",
    )
}

pub fn fsync_ok(cx: &Ctx) -> TestResult {
    let p = cx.path("f");
    let f = File::create(&p).what("create")?;
    f.write_all(&pattern(10_000, 9)).what("write")?;
    f.sync().what("fsync file")?;
    f.close().what("close")?;
    let d = File::open(&cx.dir, O_RDONLY | O_DIRECTORY, 0).what("open dir")?;
    d.sync().what("fsync directory")?;
    same_bytes(&get_file(&p)?, &pattern(10_000, 9), "file after fsync")
}

pub fn symlink_readlink(cx: &Ctx) -> TestResult {
    let (target, l) = (cx.path("target"), cx.path("l"));
    put_file(&target, b"through the link")?;
    sys::symlink("target", &l).what("symlink")?;
    ensure!(
        sys::readlink(&l).what("readlink")? == "target",
        "readlink is not \"target\""
    );
    let lst = sys::lstat(&l).what("lstat")?;
    ensure!(
        lst.st_mode & S_IFMT == S_IFLNK,
        "lstat mode {:o} is not S_IFLNK",
        lst.st_mode
    );
    ensure!(
        lst.st_size == 6,
        "symlink st_size {} is not the target length 6",
        lst.st_size
    );
    ensure!(
        is_reg(&sys::stat(&l).what("stat")?),
        "stat does not follow the link"
    );
    same_bytes(&get_file(&l)?, b"through the link", "read through the link")?;
    expect_errno(
        sys::readlink(&target),
        Errno::EINVAL,
        "readlink of a regular file",
    )?;
    expect_errno(
        sys::symlink("x", &target),
        Errno::EEXIST,
        "symlink over an existing name",
    )?;
    expect_errno(
        sys::open(&l, O_RDONLY | O_NOFOLLOW, 0),
        Errno::ELOOP,
        "O_NOFOLLOW on a link",
    )?;
    let dangling = cx.path("dangling");
    sys::symlink("nowhere", &dangling).what("symlink dangling")?;
    expect_errno(
        sys::open(&dangling, O_RDONLY, 0),
        Errno::ENOENT,
        "open a dangling link",
    )?;
    sys::unlink(&l).what("unlink the link")?;
    same_bytes(
        &get_file(&target)?,
        b"through the link",
        "target after unlinking the link",
    )
}

pub fn hard_link(cx: &Ctx) -> TestResult {
    let (f, g) = (cx.path("f"), cx.path("g"));
    put_file(&f, b"shared")?;
    sys::link(&f, &g).what("link")?;
    let (sf, sg) = (sys::stat(&f).what("stat f")?, sys::stat(&g).what("stat g")?);
    ensure!(sf.st_ino == sg.st_ino, "linked names have different inodes");
    ensure!(sf.st_nlink == 2, "st_nlink {} is not 2", sf.st_nlink);
    let w = File::open(&g, O_WRONLY | O_APPEND, 0).what("open g")?;
    w.write_all(b"!").what("write via g")?;
    drop(w);
    same_bytes(&get_file(&f)?, b"shared!", "f after writing via g")?;
    expect_errno(
        sys::link(&f, &g),
        Errno::EEXIST,
        "link onto an existing name",
    )?;
    expect_errno(
        sys::link(&cx.dir, &cx.path("dirlink")),
        Errno::EPERM,
        "link to a directory",
    )?;
    sys::unlink(&f).what("unlink f")?;
    ensure!(
        sys::stat(&g).what("stat g")?.st_nlink == 1,
        "st_nlink after unlink is not 1"
    );
    same_bytes(&get_file(&g)?, b"shared!", "g after unlinking f")
}

pub fn chmod_mode_bits(cx: &Ctx) -> TestResult {
    let p = cx.path("f");
    put_file(&p, b"")?;
    for mode in [0o600u32, 0o755, 0o640] {
        sys::chmod(&p, mode).what("chmod")?;
        let got = sys::stat(&p).what("stat")?.st_mode;
        ensure!(
            got & 0o7777 == mode,
            "mode {:o} after chmod {mode:o}",
            got & 0o7777
        );
        ensure!(got & S_IFMT == S_IFREG, "chmod changed the file type");
    }
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

pub fn dir_nlink_counts_subdirs(cx: &Ctx) -> TestResult {
    let d = cx.path("d");
    sys::mkdir(&d, 0o755).what("mkdir")?;
    ensure!(
        sys::stat(&d).what("stat")?.st_nlink == 2,
        "new directory st_nlink is not 2"
    );
    for s in ["a", "b"] {
        sys::mkdir(&user_tests::path_join(&d, s), 0o755).what("mkdir sub")?;
    }
    put_file(&cx.path("d/f"), b"")?;
    let n = sys::stat(&d).what("stat")?.st_nlink;
    ensure!(
        n == 4,
        "st_nlink {n} of a directory with 2 subdirectories is not 4"
    );
    Ok(())
}

pub fn dot_and_dotdot_paths(cx: &Ctx) -> TestResult {
    let d = cx.path("d");
    sys::mkdir(&d, 0o755).what("mkdir d")?;
    put_file(&cx.path("f"), b"via dotdot")?;
    same_bytes(&get_file(&cx.path("d/../f"))?, b"via dotdot", "d/../f")?;
    same_bytes(
        &get_file(&cx.path("./d/./../f"))?,
        b"via dotdot",
        "./d/./../f",
    )?;
    let up = sys::stat(&cx.path("d/..")).what("stat d/..")?;
    let here = sys::stat(&cx.dir).what("stat the test directory")?;
    ensure!(
        up.st_ino == here.st_ino,
        "d/.. is not the test directory (st_ino differs)"
    );
    expect_errno(
        sys::mkdir(&cx.path("d/."), 0o755),
        Errno::EEXIST,
        "mkdir d/.",
    )?;
    expect_errno(sys::rmdir(&cx.path("d/.")), Errno::EINVAL, "rmdir d/.")?;
    expect_errno(sys::rmdir(&cx.path("d/..")), Errno::ENOTEMPTY, "rmdir d/..")?;
    expect_errno(sys::unlink(&cx.path("d/.")), Errno::EISDIR, "unlink d/.")?;
    sys::mkdir(&cx.path("e/"), 0o755).what("mkdir with a trailing slash")?;
    ensure!(
        is_dir(&sys::stat(&cx.path("e")).what("stat e")?),
        "e is not a directory"
    );
    sys::rmdir(&cx.path("e/")).what("rmdir with a trailing slash")
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

/// Four readers of their own cold files, 4 KiB at a time in turn (as fio's jobs read): each
/// file's data is right, and the kernel's read-ahead follows the four streams, so the disk
/// sees large requests. With one stream each read broke the others' sequence and every cluster
/// stayed at its first size: 32 requests per 2 MiB file, 128 in all (the bound below is half
/// that, with room for the tree's own pages).
pub fn interleaved_readers_read_ahead(cx: &Ctx) -> TestResult {
    const FILES: usize = 4;
    const LEN: usize = 2 << 20;
    let paths: Vec<String> = (0..FILES).map(|j| cx.path(&format!("r{j}"))).collect();
    for (j, p) in paths.iter().enumerate() {
        let f = File::open(p, O_RDWR | O_CREAT | O_TRUNC, 0o644).what("create")?;
        f.write_all(&pattern(LEN, j as u8)).what("write")?;
        f.sync().what("fsync")?;
    }
    sys::drop_caches().what("drop_caches")?;
    let files: Vec<File> = paths
        .iter()
        .map(|p| File::open(p, O_RDONLY, 0))
        .collect::<Result<_, _>>()
        .what("open")?;
    let before = sys::counters().what("counters")?;
    let mut buf = vec![0u8; 4096];
    for at in (0..LEN).step_by(4096) {
        for (j, f) in files.iter().enumerate() {
            ensure!(
                f.pread(&mut buf, at as u64).what("pread")? == 4096,
                "short read of r{j} at {at}"
            );
            let want = |i: usize| (((at + i) % 251) as u8).wrapping_add(j as u8);
            ensure!(
                (0..4096).step_by(509).all(|i| buf[i] == want(i)),
                "r{j} at {at}: wrong bytes"
            );
        }
    }
    let after = sys::counters().what("counters")?;
    let requests = after.dev_read_requests - before.dev_read_requests;
    ensure!(
        requests <= 64,
        "{requests} device reads for {FILES} interleaved sequential readers of {} KiB each",
        LEN >> 10
    );
    Ok(())
}
