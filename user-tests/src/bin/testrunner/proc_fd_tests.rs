//! `/proc/self/fd` and `/dev/fd`: a descriptor's link names its file (`pipe:[ino]` for a
//! pipe), and opening the link reaches the open file itself, even after its name moved, with
//! an offset of its own; a pipe opened through it is the same pipe (bash's `<(command)`).

use user_tests::prelude::*;

use crate::{ensure, expect_errno, put_file, Check, Ctx, TestResult};

pub fn proc_fd_links(cx: &Ctx) -> TestResult {
    let (f, moved) = (cx.path("fdlink"), cx.path("fdlink-moved"));
    put_file(&f, b"hello fd")?;
    let fd = sys::open(&f, O_RDONLY, 0).what("open")?;
    let link = format!("/proc/self/fd/{fd}");
    let text = sys::readlink(&link).what("readlink /proc/self/fd/N");
    let mut head = [0u8; 2];
    let first = sys::read(fd, &mut head).what("read 2 bytes");
    // The walk follows the link to the open file, not to the name it had.
    let renamed = sys::rename(&f, &moved).what("rename");
    let again = sys::open(&format!("/dev/fd/{fd}"), O_RDONLY, 0).what("open /dev/fd/N");
    let mut buf = [0u8; 16];
    let got = again.and_then(|g| {
        let n = sys::read(g, &mut buf).what("read through the link");
        let _ = sys::close(g);
        n
    });
    let _ = sys::close(fd);
    let _ = sys::unlink(&moved);
    ensure!(text? == f, "the link's text is not the file's path");
    ensure!(first? == 2, "short read");
    renamed?;
    let n = got?;
    ensure!(
        &buf[..n] == b"hello fd",
        "the file opened through the link read {:?} (its own offset starts at 0)",
        core::str::from_utf8(&buf[..n])
    );
    // A closed descriptor, and names that are not a descriptor's.
    expect_errno(
        sys::open("/proc/self/fd/999", O_RDONLY, 0),
        Errno::ENOENT,
        "open /proc/self/fd/999",
    )?;
    expect_errno(
        sys::readlink("/proc/self/fd/01"),
        Errno::ENOENT,
        "readlink /proc/self/fd/01",
    )?;
    // A pipe: the link says pipe:[ino], and an open of it reads what the write end writes.
    let (r, w) = sys::pipe2(0).what("pipe2")?;
    let text = sys::readlink(&format!("/dev/fd/{r}")).what("readlink a pipe's link");
    let r2 = sys::open(&format!("/dev/fd/{r}"), O_RDONLY, 0).what("open a pipe's link");
    let wrote = sys::write(w, b"through the pipe").what("write");
    let mut pbuf = [0u8; 32];
    let read = r2
        .as_ref()
        .map_err(|e| e.clone())
        .and_then(|&r2| sys::read(r2, &mut pbuf).what("read the reopened pipe"));
    for d in [Ok(r), Ok(w), r2] {
        if let Ok(d) = d {
            let _ = sys::close(d);
        }
    }
    let text = text?;
    ensure!(
        text.starts_with("pipe:[") && text.ends_with(']'),
        "a pipe's link reads {text:?}"
    );
    wrote?;
    let n = read?;
    ensure!(
        &pbuf[..n] == b"through the pipe",
        "the reopened pipe read other bytes"
    );
    Ok(())
}
