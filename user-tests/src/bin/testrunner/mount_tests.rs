//! mount(2) and umount2(2) at run time: Linux's errno for each refusal, and a disk unmounted,
//! mounted somewhere else (its files there), and mounted back where it was.
//!
//! The disks are those of `make test-guest` (init's `test`): vdb is FAT32 at /fat, vdc is the
//! raw disk (never formatted: not a file system), vdd is dbfs at /dbfs. The test moves the
//! file system the test directory is NOT on, so it skips where those mounts are not found.

use user_tests::prelude::*;

use crate::{ensure, expect_errno, get_file, put_file, Check, Ctx, TestResult};

const MNT_DETACH: u32 = 2;

/// The mount point, device and type of `point` in /proc/mounts, if mounted.
fn mounted(point: &str) -> Result<Option<(String, String)>, String> {
    let text = get_file("/proc/mounts")?;
    let text = String::from_utf8_lossy(&text);
    Ok(text.lines().find_map(|l| {
        let f: Vec<&str> = l.split(' ').collect();
        (f.len() > 2 && f[1] == point).then(|| (String::from(f[0]), String::from(f[2])))
    }))
}

/// The other file system (the one the test directory is not on): its mount point, disk and
/// type; the inner error is why a test skips (that disk is not what is mounted there).
type Other = (&'static str, &'static str, &'static str);
fn other_mount(cx: &Ctx) -> Result<Result<Other, String>, String> {
    let (other, dev, fstype) = if cx.fat {
        ("/dbfs", "/dev/vdd", "dbfs")
    } else {
        ("/fat", "/dev/vdb", "vfat")
    };
    match mounted(other)? {
        Some((d, _)) if d == dev => Ok(Ok((other, dev, fstype))),
        m => Ok(Err(format!("{other} is not {dev} ({m:?})"))),
    }
}

pub fn mount_umount_errors_and_move(cx: &Ctx) -> TestResult {
    let (other, dev, fstype) = match other_mount(cx)? {
        Ok(o) => o,
        Err(why) => return skip(&why),
    };
    let mnt = cx.path("mnt");
    sys::mkdir(&mnt, 0o755).what("mkdir mnt")?;
    let file = cx.path("file");
    put_file(&file, b"x")?;

    // The refusals, each with Linux's errno.
    expect_errno(
        sys::mount(Some(dev), &mnt, Some("nosuchfs"), 0),
        Errno::ENODEV,
        "unknown type",
    )?;
    expect_errno(
        sys::mount(Some(dev), &mnt, None, 0),
        Errno::EINVAL,
        "NULL type",
    )?;
    expect_errno(
        sys::mount(None, &mnt, Some(fstype), 0),
        Errno::EINVAL,
        "NULL source",
    )?;
    expect_errno(
        sys::mount(Some(&file), &mnt, Some(fstype), 0),
        Errno::ENOTBLK,
        "a file as source",
    )?;
    expect_errno(
        sys::mount(Some("/dev/null"), &mnt, Some(fstype), 0),
        Errno::ENOTBLK,
        "a character device",
    )?;
    expect_errno(
        sys::mount(Some(dev), &cx.path("none"), Some(fstype), 0),
        Errno::ENOENT,
        "a missing mount point",
    )?;
    expect_errno(
        sys::mount(Some(dev), &file, Some(fstype), 0),
        Errno::ENOTDIR,
        "a file as mount point",
    )?;
    expect_errno(
        sys::mount(Some(dev), &mnt, Some(fstype), 0),
        Errno::EBUSY,
        "a mounted disk",
    )?;
    expect_errno(
        sys::mount(Some("/dev/vdc"), &mnt, Some("vfat"), 0),
        Errno::EINVAL,
        "no FAT32 on vdc",
    )?;
    expect_errno(
        sys::mount(Some("/dev/vdc"), &mnt, Some("dbfs"), 0),
        Errno::EINVAL,
        "no dbfs on vdc",
    )?;
    expect_errno(
        sys::mount(Some(dev), &mnt, Some(fstype), 32),
        Errno::EINVAL,
        "MS_REMOUNT of a directory",
    )?;
    expect_errno(
        sys::umount2(&mnt, 0),
        Errno::EINVAL,
        "umount of a directory",
    )?;
    expect_errno(
        sys::umount2(other, 0x100),
        Errno::EINVAL,
        "umount2 with an unknown flag",
    )?;
    expect_errno(
        sys::umount2(&cx.path("none"), 0),
        Errno::ENOENT,
        "umount of a missing path",
    )?;
    expect_errno(sys::umount2("/", 0), Errno::EBUSY, "umount of the root")?;

    // Busy while a file in it is open; then unmounted, moved to mnt and back.
    let marker = format!("{other}/mount-test.{}", sys::getpid());
    put_file(&marker, b"moved with its disk")?;
    let open = File::open_read(&marker).what("open the marker")?;
    expect_errno(
        sys::umount2(other, 0),
        Errno::EBUSY,
        "umount with an open file",
    )?;
    expect_errno(
        sys::umount2(other, MNT_DETACH),
        Errno::EBUSY,
        "lazy umount with an open file",
    )?;
    open.close().what("close the marker")?;
    sys::umount2(other, 0).what(&format!("umount {other}"))?;
    let moved = (|| -> TestResult {
        ensure!(
            mounted(other)?.is_none(),
            "{other} still in /proc/mounts after umount"
        );
        expect_errno(
            sys::stat(&marker),
            Errno::ENOENT,
            "the marker with its disk unmounted",
        )?;
        sys::mount(Some(dev), &mnt, Some(fstype), 0).what(&format!("mount {dev} at mnt"))?;
        let got = get_file(&format!("{mnt}/mount-test.{}", sys::getpid()))?;
        ensure!(
            got == b"moved with its disk",
            "the marker read through mnt: {got:?}"
        );
        match mounted(&mnt)? {
            Some((d, _)) if d == dev => {}
            m => return Err(format!("/proc/mounts has {m:?} at {mnt}")),
        }
        expect_errno(
            sys::mount(Some(dev), other, Some(fstype), 0),
            Errno::EBUSY,
            "a second mount",
        )?;
        expect_errno(sys::rmdir(&mnt), Errno::EBUSY, "rmdir of a mount point")?;
        sys::umount2(&mnt, 0).what("umount mnt")
    })();
    // Back where it was, whatever happened above.
    let _ = sys::umount2(&mnt, 0);
    sys::mount(Some(dev), other, Some(fstype), 0).what(&format!("mount {dev} back at {other}"))?;
    moved?;
    ensure!(
        get_file(&marker)? == b"moved with its disk",
        "the marker after the way back"
    );
    sys::unlink(&marker).what("unlink the marker")
}

fn skip(why: &str) -> TestResult {
    println!("  (mount test not run: {why})");
    Ok(())
}

const MS_RDONLY: usize = 1;
const MS_REMOUNT: usize = 32;

/// A mount switched to read-only and back (MS_REMOUNT | MS_RDONLY): EBUSY while a file is open
/// for writing, then EROFS from each way of changing it, reads still answered, "ro" in
/// /proc/mounts; read-write again, a change works.
pub fn remount_read_only(cx: &Ctx) -> TestResult {
    let (other, dev, fstype) = match other_mount(cx)? {
        Ok(o) => o,
        Err(why) => return skip(&why),
    };
    let dir = format!("{other}/ro-test.{}", sys::getpid());
    sys::mkdir(&dir, 0o755).what("mkdir")?;
    let file = format!("{dir}/file");
    put_file(&file, b"kept")?;
    let ro = MS_REMOUNT | MS_RDONLY;
    let writer = File::open(&file, O_WRONLY, 0).what("open for writing")?;
    expect_errno(
        sys::mount(Some(dev), other, Some(fstype), ro),
        Errno::EBUSY,
        "remount ro with a file open for writing",
    )?;
    writer.close().what("close the writer")?;
    let reader = File::open_read(&file).what("open for reading")?;
    sys::mount(Some(dev), other, Some(fstype), ro).what("remount ro")?;
    let checks = (|| -> TestResult {
        match get_file("/proc/mounts")?
            .split(|&b| b == b'\n')
            .map(|l| String::from_utf8_lossy(l).into_owned())
            .find(|l| l.split(' ').nth(1) == Some(other))
        {
            Some(l) if l.split(' ').nth(3) == Some("ro") => {}
            l => return Err(format!("/proc/mounts line of {other}: {l:?}")),
        }
        ensure!(get_file(&file)? == b"kept", "the file read on the ro mount");
        let new = format!("{dir}/new");
        expect_errno(
            File::open(&file, O_WRONLY, 0),
            Errno::EROFS,
            "open O_WRONLY",
        )?;
        expect_errno(
            File::open(&file, O_RDONLY | O_TRUNC, 0),
            Errno::EROFS,
            "O_TRUNC",
        )?;
        expect_errno(
            File::open(&new, O_CREAT | O_RDWR, 0o644),
            Errno::EROFS,
            "creat",
        )?;
        expect_errno(sys::mkdir(&new, 0o755), Errno::EROFS, "mkdir")?;
        expect_errno(sys::unlink(&file), Errno::EROFS, "unlink")?;
        expect_errno(sys::rename(&file, &new), Errno::EROFS, "rename")?;
        expect_errno(sys::chmod(&file, 0o600), Errno::EROFS, "chmod")?;
        expect_errno(sys::symlink("file", &new), Errno::EROFS, "symlink")?;
        // Linux: a second remount read-only changes nothing.
        sys::mount(Some(dev), other, Some(fstype), ro).what("remount ro again")
    })();
    reader.close().what("close the reader")?;
    sys::mount(Some(dev), other, Some(fstype), MS_REMOUNT).what("remount rw")?;
    checks?;
    put_file(&file, b"changed")?;
    ensure!(get_file(&file)? == b"changed", "a write after remount rw");
    sys::unlink(&file).what("unlink")?;
    sys::rmdir(&dir).what("rmdir")
}
