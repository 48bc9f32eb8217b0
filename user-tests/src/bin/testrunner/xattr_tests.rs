//! Extended attributes through `{,l,f}{get,set,list,remove}xattr`: Linux semantics (size
//! queries, ERANGE, ENODATA, XATTR_CREATE / XATTR_REPLACE, user.* refused on symlinks); on FAT,
//! which stores none, EOPNOTSUPP and an empty list, as Linux's vfat.

use user_tests::abi::syscall::{XATTR_CREATE, XATTR_REPLACE};
use user_tests::prelude::*;

use crate::{ensure, expect_errno, put_file, Check, Ctx, TestResult};

pub fn xattr_semantics(cx: &Ctx) -> TestResult {
    let f = cx.path("f");
    put_file(&f, b"data")?;
    if cx.fat {
        expect_errno(
            sys::setxattr(&f, "user.a", b"v", 0),
            Errno::EOPNOTSUPP,
            "setxattr on FAT",
        )?;
        expect_errno(
            sys::getxattr(&f, "user.a"),
            Errno::EOPNOTSUPP,
            "getxattr on FAT",
        )?;
        let names = sys::listxattr(&f).what("listxattr on FAT")?;
        ensure!(names.is_empty(), "listxattr on FAT: {names:?}");
        return Ok(());
    }
    // Absent, then set, read with a size query, a short buffer and an exact one.
    expect_errno(
        sys::getxattr(&f, "user.a"),
        Errno::ENODATA,
        "getxattr of a missing name",
    )?;
    sys::setxattr(&f, "user.a", b"hello", 0).what("setxattr user.a")?;
    let n = sys::getxattr_into(&f, "user.a", &mut []).what("size query")?;
    ensure!(n == 5, "size query: {n}, want 5");
    expect_errno(
        sys::getxattr_into(&f, "user.a", &mut [0u8; 4]),
        Errno::ERANGE,
        "4-byte buffer",
    )?;
    let mut buf = [0u8; 16];
    let n = sys::getxattr_into(&f, "user.a", &mut buf).what("getxattr")?;
    ensure!(&buf[..n] == b"hello", "value {:?}", &buf[..n]);
    // Create / replace flags, bad flags, empty and over-long names.
    expect_errno(
        sys::setxattr(&f, "user.a", b"x", XATTR_CREATE),
        Errno::EEXIST,
        "XATTR_CREATE on an existing name",
    )?;
    expect_errno(
        sys::setxattr(&f, "user.b", b"x", XATTR_REPLACE),
        Errno::ENODATA,
        "XATTR_REPLACE on a missing name",
    )?;
    sys::setxattr(&f, "user.a", b"", XATTR_REPLACE).what("XATTR_REPLACE to an empty value")?;
    ensure!(
        sys::getxattr(&f, "user.a").what("getxattr")?.is_empty(),
        "value not emptied"
    );
    expect_errno(
        sys::setxattr(&f, "user.b", b"x", 4),
        Errno::EINVAL,
        "unknown flag",
    )?;
    expect_errno(sys::setxattr(&f, "", b"x", 0), Errno::ERANGE, "empty name")?;
    let long = format!("user.{}", "n".repeat(251));
    expect_errno(
        sys::setxattr(&f, &long, b"x", 0),
        Errno::ERANGE,
        "256-byte name",
    )?;
    sys::setxattr(&f, &long[..255], b"x", 0).what("255-byte name")?;
    // Listing: NUL-terminated names, size query, ERANGE.
    sys::setxattr(&f, "user.b", &[7u8; 3000], XATTR_CREATE).what("setxattr user.b")?;
    let mut names = sys::listxattr(&f).what("listxattr")?;
    names.sort();
    ensure!(
        names
            == [
                String::from("user.a"),
                String::from("user.b"),
                String::from(&long[..255])
            ],
        "names {names:?}"
    );
    let need = sys::listxattr_into(&f, &mut []).what("list size query")?;
    ensure!(need == 7 + 7 + 256, "list size {need}");
    expect_errno(
        sys::listxattr_into(&f, &mut [0u8; 10]),
        Errno::ERANGE,
        "short list buffer",
    )?;
    // Descriptor calls see the same attributes.
    let file = File::open_read(&f).what("open")?;
    let n = sys::fgetxattr_into(file.fd(), "user.b", &mut [0u8; 4096]).what("fgetxattr")?;
    ensure!(n == 3000, "fgetxattr length {n}");
    sys::fsetxattr(file.fd(), "user.c", b"fd", 0).what("fsetxattr")?;
    ensure!(
        sys::getxattr(&f, "user.c").what("getxattr user.c")? == b"fd",
        "fsetxattr value"
    );
    sys::fremovexattr(file.fd(), "user.c").what("fremovexattr")?;
    drop(file);
    // Remove; a missing one is ENODATA.
    sys::removexattr(&f, "user.b").what("removexattr")?;
    expect_errno(
        sys::removexattr(&f, "user.b"),
        Errno::ENODATA,
        "removexattr twice",
    )?;
    expect_errno(
        sys::getxattr(&f, "user.b"),
        Errno::ENODATA,
        "getxattr after remove",
    )?;
    // Directories take user.*; symlinks do not (l* calls act on the link, others follow it).
    let d = cx.path("d");
    sys::mkdir(&d, 0o755).what("mkdir")?;
    sys::setxattr(&d, "user.d", b"dir", 0).what("setxattr on a directory")?;
    let l = cx.path("l");
    sys::symlink("f", &l).what("symlink")?;
    expect_errno(
        sys::lsetxattr(&l, "user.x", b"x", 0),
        Errno::EPERM,
        "lsetxattr user.* on a symlink",
    )?;
    ensure!(
        sys::getxattr(&l, "user.a").is_ok(),
        "getxattr through a symlink does not follow it"
    );
    expect_errno(
        sys::lgetxattr(&l, "user.a"),
        Errno::ENODATA,
        "lgetxattr on the link itself",
    )?;
    expect_errno(
        sys::getxattr(&cx.path("missing"), "user.a"),
        Errno::ENOENT,
        "getxattr of a missing file",
    )?;
    Ok(())
}
