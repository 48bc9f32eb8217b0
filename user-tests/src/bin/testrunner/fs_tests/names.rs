//! The name space: mkdir, rmdir, unlink, rename (files and directories), the *at calls,
//! symlinks, hard links and `.`/`..` in paths.

use user_tests::prelude::*;

use crate::{ensure, expect_errno, get_file, put_file, same_bytes, Check, Ctx, TestResult};

use super::common::{is_dir, is_reg, list, names_sorted, pattern};

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
