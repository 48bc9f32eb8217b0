//! A full dbfs image through a real FUSE mount: writes fail with ENOSPC (never EIO, and the
//! tool does not die), committed files stay intact, deleting works on the full disk and gives
//! the space back, `statfs` agrees, and the image is fsck-clean afterwards. Without /dev/fuse
//! the test prints a note and passes.

mod common;

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::*;

const MIB: usize = 1 << 20;

fn avail(dir: &Path) -> u64 {
    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: `c` is a NUL-terminated path; `st` is a plain-data out parameter.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above; both pointers are valid for the call.
    assert_eq!(unsafe { libc::statvfs(c.as_ptr(), &mut st) }, 0, "statvfs");
    st.f_bavail * st.f_frsize
}

fn errno(e: &std::io::Error) -> i32 {
    e.raw_os_error().unwrap_or(-1)
}

#[test]
fn full_image_enospc_keeps_data_and_frees_on_delete() {
    if !fuse_available() {
        return;
    }
    let (_tmp, image, mnt) = fresh_image("full", "12M");
    let m = Mounted::new(&image, &mnt, "", Duration::from_secs(110));

    let keep: Vec<(String, Vec<u8>)> = (0..3)
        .map(|i| (format!("keep{i}"), pattern(i, 5000 + i as usize * 200_000)))
        .collect();
    for (name, data) in &keep {
        let mut f = File::create(m.path(name)).unwrap();
        f.write_all(data).unwrap();
        f.sync_all().unwrap();
    }
    fs::create_dir(m.path("emptydir")).unwrap();
    let before = avail(&m.mnt);

    // Fill: 128 KiB writes, fsync every MiB, until an error; it must be ENOSPC.
    let piece = pattern(99, 128 << 10);
    let mut f = File::create(m.path("filler")).unwrap();
    let (mut acked, mut committed) = (0usize, 0usize);
    let err = loop {
        if let Err(e) = f.write_all(&piece) {
            break ("write", e);
        }
        acked += piece.len();
        if acked % MIB == 0 {
            match f.sync_all() {
                Ok(()) => committed = acked,
                Err(e) => break ("fsync", e),
            }
        }
        assert!(
            acked < 64 * MIB,
            "64 MiB written to a 12 MiB image without ENOSPC"
        );
    };
    eprintln!(
        "filled: {acked} bytes accepted, {committed} committed; {} failed: {}",
        err.0, err.1
    );
    assert_eq!(
        errno(&err.1),
        libc::ENOSPC,
        "{} failed with {}, not ENOSPC",
        err.0,
        err.1
    );
    let fsync_after = f.sync_all();
    assert!(
        fsync_after.as_ref().is_ok()
            || fsync_after
                .as_ref()
                .is_err_and(|e| errno(e) == libc::ENOSPC),
        "fsync after the fill: {fsync_after:?}"
    );
    drop(f);
    // What committed is what statfs promised (within metadata overhead), and little is left.
    assert!(
        committed as u64 <= before + MIB as u64,
        "{committed} committed > {before} available"
    );
    assert!(
        committed as u64 + before / 20 + MIB as u64 >= before,
        "only {committed} of {before} fit"
    );
    assert!(
        avail(&m.mnt) < 2 * MIB as u64,
        "{} still available",
        avail(&m.mnt)
    );
    // Small creates fail with ENOSPC too, never EIO.
    let mut made = 0;
    let create_err = loop {
        match File::create(m.path(&format!("m{made}"))) {
            Ok(_) => made += 1,
            Err(e) => break Some(e),
        }
        if made >= 3000 {
            break None;
        }
    };
    if let Some(e) = &create_err {
        assert_eq!(errno(e), libc::ENOSPC, "create on a full image: {e}");
    }
    for (name, data) in &keep {
        assert_eq!(
            &fs::read(m.path(name)).unwrap(),
            data,
            "{name} on the full image"
        );
    }

    // Delete on the full image: truncate, unlink, rmdir all succeed.
    OpenOptions::new()
        .write(true)
        .open(m.path("filler"))
        .unwrap()
        .set_len(0)
        .unwrap();
    fs::remove_file(m.path("filler")).unwrap();
    for i in 0..made {
        fs::remove_file(m.path(&format!("m{i}"))).unwrap();
    }
    fs::remove_dir(m.path("emptydir")).unwrap();
    let freed = avail(&m.mnt);
    assert!(
        freed + before / 20 + MIB as u64 >= before,
        "deleting freed only {freed} of {before}"
    );
    let again = pattern(7, 4 * MIB);
    {
        let mut f = File::create(m.path("again")).unwrap();
        f.write_all(&again).unwrap();
        f.sync_all().unwrap();
    }
    assert_eq!(fs::read(m.path("again")).unwrap(), again);
    assert!(
        m.unmount(),
        "the mount process failed or did not unmount cleanly"
    );

    let out = run(Command::new(BIN).arg("fsck").arg(&image));
    assert!(
        out.status.success(),
        "fsck after the fill:\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let out = run(Command::new(BIN).arg("cat").arg(&image).arg("/keep2"));
    assert_eq!(out.stdout, keep[2].1, "keep2 after unmount");
}

/// The lost-write bug: buffered writes to a nearly full image were all accepted, `syncfs`
/// returned 0, and the commit at unmount failed with ENOSPC, losing them. Now, in both cache
/// modes and with `syncfs` or `fsync`: the first failure is ENOSPC, and when write(2), the
/// sync and close(2) all succeeded for some bytes, exactly those bytes are in the file after
/// unmount and mount.
#[test]
fn accepted_writes_on_a_nearly_full_image_survive_unmount() {
    if !fuse_available() {
        return;
    }
    for opts in ["nowriteback_cache", ""] {
        for use_syncfs in [true, false] {
            let what = format!("-o '{opts}', syncfs {use_syncfs}");
            let (_tmp, image, mnt) = fresh_image("lost", "12M");
            let m = Mounted::new(&image, &mnt, opts, Duration::from_secs(100));
            // No fsync while filling: everything stays buffered (in dbfs or the kernel).
            let piece = pattern(5, 64 << 10);
            let mut f = File::create(m.path("data")).unwrap();
            let mut accepted = 0usize;
            let write_err = loop {
                match f.write(&piece) {
                    Ok(n) => accepted += n,
                    Err(e) => break Some(e),
                }
                if accepted >= 24 * MIB {
                    break None;
                }
            };
            if let Some(e) = &write_err {
                assert_eq!(errno(e), libc::ENOSPC, "{what}: write failed with {e}");
            }
            let sync = if use_syncfs {
                use std::os::fd::AsRawFd;
                // SAFETY: the descriptor is open for the call.
                if unsafe { libc::syncfs(f.as_raw_fd()) } == 0 {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            } else {
                f.sync_all()
            };
            if let Err(e) = &sync {
                assert_eq!(errno(e), libc::ENOSPC, "{what}: sync failed with {e}");
            }
            let close = close_checked(f);
            if let Err(e) = &close {
                assert_eq!(errno(e), libc::ENOSPC, "{what}: close failed with {e}");
            }
            eprintln!(
                "{what}: {accepted} bytes accepted, write error {:?}, sync {:?}, close {:?}",
                write_err.as_ref().map(errno),
                sync.as_ref().err().map(errno),
                close.as_ref().err().map(errno)
            );
            assert!(
                write_err.is_some() || sync.is_err() || close.is_err(),
                "{what}: 24 MiB accepted and synced on a 12 MiB image"
            );
            assert!(m.unmount(), "{what}: the mount process failed at unmount");
            if sync.is_ok() && close.is_ok() {
                // Everything was reported written: all of it must be there.
                let m = Mounted::new(&image, &mnt, opts, Duration::from_secs(60));
                let got = fs::read(m.path("data")).unwrap();
                assert_eq!(got.len(), accepted, "{what}: size after remount");
                for (i, c) in got.chunks(piece.len()).enumerate() {
                    assert!(c == &piece[..c.len()], "{what}: piece {i} differs");
                }
                assert!(m.unmount(), "{what}: second unmount");
            }
            let out = run(Command::new(BIN).arg("fsck").arg(&image));
            assert!(out.status.success(), "{what}: fsck");
        }
    }
}

/// Files open with the kernel's page cache kept (`keep_cache`, the default), so a re-read
/// need not reach dbfs. A write dbfs refused (here ENOSPC when the kernel writes its dirty
/// pages back at close) leaves pages in the kernel that dbfs does not hold: the next open
/// must drop them, so a reader sees the image's bytes. With the write-back cache the kernel
/// keeps its own idea of the size while it caches the file (FUSE trusts its cached size), so
/// past the stored end a reader sees zeros up to that size, not the refused data; without
/// the cache, write(2) fails and the sizes agree too.
#[test]
fn refused_writes_are_not_read_back_from_the_kernels_cache() {
    if !fuse_available() {
        return;
    }
    for opts in ["", "nokeep_cache", "nowriteback_cache"] {
        let (_tmp, image, mnt) = fresh_image("stale", "12M");
        let m = Mounted::new(&image, &mnt, opts, Duration::from_secs(100));
        let piece = pattern(7, 64 << 10);
        let mut f = File::create(m.path("data")).unwrap();
        let mut refused = false;
        for _ in 0..(24 * MIB / piece.len()) {
            if f.write_all(&piece).is_err() {
                refused = true;
                break;
            }
        }
        let closed = close_checked(f).is_ok();
        assert!(
            refused || !closed,
            "-o '{opts}': 24 MiB written and closed on a 12 MiB image"
        );
        let seen = fs::read(m.path("data")).unwrap();
        assert!(m.unmount(), "-o '{opts}': unmount");
        let m = Mounted::new(&image, &mnt, opts, Duration::from_secs(60));
        let stored = fs::read(m.path("data")).unwrap();
        assert!(m.unmount(), "-o '{opts}': second unmount");
        assert!(
            seen.len() >= stored.len(),
            "-o '{opts}': {} bytes read while mounted, {} stored",
            seen.len(),
            stored.len()
        );
        if opts == "nowriteback_cache" {
            assert_eq!(seen.len(), stored.len(), "-o '{opts}': size");
        }
        assert!(
            seen[..stored.len()] == stored[..],
            "-o '{opts}': the bytes read while mounted are not the image's"
        );
        let stale = seen[stored.len()..].iter().filter(|&&b| b != 0).count();
        assert_eq!(
            stale,
            0,
            "-o '{opts}': {stale} bytes of refused data read past the stored {} bytes",
            stored.len()
        );
    }
}
