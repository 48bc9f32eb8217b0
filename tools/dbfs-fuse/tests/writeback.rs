//! What a writer sees with and without the kernel's FUSE write-back cache (on by default,
//! `-o nowriteback_cache` turns it off): the same bytes, sizes, times and seeks, both while
//! the kernel holds dirty pages and after a remount (what dbfs itself stored).
//!
//! With the cache the kernel reads through write-only handles to fill partial pages, owns the
//! file size and mtime until it writes them back, does O_APPEND itself and sends the data
//! late (at close, fsync or write-back): each check below fails if the adapter gets one of
//! those wrong.

mod common;

use std::fs::{self, File, FileTimes, OpenOptions};
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::time::{Duration, SystemTime};

use common::*;

fn lseek(f: &File, off: i64, whence: i32) -> Result<i64, i32> {
    // SAFETY: lseek on an open descriptor; no memory is passed.
    let r = unsafe { libc::lseek(f.as_raw_fd(), off, whence) };
    if r < 0 {
        Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(-1))
    } else {
        Ok(r)
    }
}

/// The files the checks leave, with what they must hold (checked before and after a remount).
struct Expect {
    files: Vec<(&'static str, Vec<u8>)>,
    /// The mtime set explicitly while dirty pages existed.
    stamped: SystemTime,
}

/// Run every check on the mount `m`; returns what must survive a remount.
fn write_checks(m: &Mounted) -> Expect {
    let mut files = Vec::new();

    // 1. Small unaligned writes through a write-only handle, then overwrites inside pages the
    //    kernel must first read (through that same write-only handle) after a reopen dropped
    //    the file's pages.
    let mut want = Vec::new();
    {
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(m.path("wronly"))
            .unwrap();
        for i in 0..300u64 {
            let piece = pattern(100 + i, 777);
            f.write_all(&piece).unwrap();
            want.extend_from_slice(&piece);
        }
        // Rewrite across a page boundary before anything reached dbfs (with the cache).
        let patch = pattern(7, 5000);
        f.write_at(&patch, 4000).unwrap();
        want[4000..9000].copy_from_slice(&patch);
        assert_eq!(f.metadata().unwrap().len(), want.len() as u64);
    }
    {
        let f = OpenOptions::new()
            .write(true)
            .open(m.path("wronly"))
            .unwrap();
        for (off, seed) in [(10u64, 1u64), (4090, 2), (100_000, 3), (233_000, 4)] {
            let patch = pattern(seed, 13);
            f.write_at(&patch, off).unwrap();
            want[off as usize..off as usize + 13].copy_from_slice(&patch);
        }
    }
    assert_eq!(
        fs::read(m.path("wronly")).unwrap(),
        want,
        "write-only handle"
    );
    files.push(("wronly", want));

    // 2. O_APPEND from two descriptors: each write lands at the end, in order.
    let mut want = Vec::new();
    {
        let open = || {
            OpenOptions::new()
                .append(true)
                .create(true)
                .open(m.path("append"))
                .unwrap()
        };
        let (mut a, mut b) = (open(), open());
        for i in 0..60u64 {
            let x = pattern(200 + i, 100 + i as usize);
            let y = pattern(400 + i, 37);
            a.write_all(&x).unwrap();
            b.write_all(&y).unwrap();
            want.extend_from_slice(&x);
            want.extend_from_slice(&y);
        }
        assert_eq!(a.metadata().unwrap().len(), want.len() as u64);
        let mut seen = Vec::new();
        File::open(m.path("append"))
            .unwrap()
            .read_to_end(&mut seen)
            .unwrap();
        assert!(seen == want, "O_APPEND read back while both are open");
    }
    assert_eq!(fs::read(m.path("append")).unwrap(), want, "O_APPEND");
    files.push(("append", want));

    // 3. Truncate while dirty pages exist, shrinking then growing, with writes on either side.
    let mut want = pattern(9, 100_000);
    {
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(m.path("trunc"))
            .unwrap();
        f.write_all_at(&want, 0).unwrap();
        f.set_len(10_000).unwrap();
        want.truncate(10_000);
        assert_eq!(f.metadata().unwrap().len(), 10_000);
        f.write_all_at(b"xyz", 50_000).unwrap();
        want.resize(50_000, 0);
        want.extend_from_slice(b"xyz");
        assert_eq!(f.metadata().unwrap().len(), 50_003);
        let mut buf = vec![1u8; 4];
        assert_eq!(f.read_at(&mut buf, 50_001).unwrap(), 2, "short read at EOF");
        assert_eq!(&buf[..2], b"yz");
        f.set_len(70_000).unwrap();
        want.resize(70_000, 0);
        f.write_all_at(b"q", 5).unwrap();
        want[5] = b'q';
    }
    assert_eq!(
        fs::read(m.path("trunc")).unwrap(),
        want,
        "truncate while dirty"
    );
    files.push(("trunc", want));

    // 4. SEEK_DATA / SEEK_HOLE see the writer's size, not what has reached dbfs.
    {
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(m.path("seek"))
            .unwrap();
        f.write_all_at(&pattern(5, 8192), 0).unwrap();
        assert_eq!(lseek(&f, 0, libc::SEEK_DATA), Ok(0));
        assert_eq!(lseek(&f, 0, libc::SEEK_HOLE), Ok(8192));
        assert_eq!(lseek(&f, 100, libc::SEEK_DATA), Ok(100));
        assert_eq!(lseek(&f, 8192, libc::SEEK_DATA), Err(libc::ENXIO));
        assert_eq!(lseek(&f, 0, libc::SEEK_END), Ok(8192));
    }
    files.push(("seek", pattern(5, 8192)));

    // 5. mtime: an explicit time set while the data is still dirty stays (as `cp -p` and
    //    `tar x` do: write, set the times, close); a later write moves it forward.
    let stamped = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    let data = pattern(11, 50_000);
    {
        let f = File::create(m.path("times")).unwrap();
        f.write_all_at(&data, 0).unwrap();
        f.set_times(FileTimes::new().set_modified(stamped)).unwrap();
    }
    assert_eq!(
        fs::metadata(m.path("times")).unwrap().modified().unwrap(),
        stamped
    );
    files.push(("times", data));
    let before = SystemTime::now() - Duration::from_secs(2);
    fs::write(m.path("moves"), b"x").unwrap();
    {
        let f = OpenOptions::new()
            .write(true)
            .open(m.path("moves"))
            .unwrap();
        f.set_times(FileTimes::new().set_modified(stamped)).unwrap();
        f.write_all_at(b"y", 0).unwrap();
    }
    let moved = fs::metadata(m.path("moves")).unwrap().modified().unwrap();
    assert!(moved >= before, "a write moves mtime: {moved:?}");
    files.push(("moves", b"y".to_vec()));

    // 6. A written file replaced by a rename (or unlinked) after its last close: the kernel
    //    may still send its times (SETATTR) at the next write-back or syncfs, for an inode
    //    dbfs has freed. syncfs must not fail for it, and the new file is what remains.
    fs::write(m.path("victim"), b"old").unwrap();
    fs::write(m.path("doomed"), b"gone").unwrap();
    fs::write(m.path("winner"), b"new contents").unwrap();
    fs::rename(m.path("winner"), m.path("victim")).unwrap();
    fs::remove_file(m.path("doomed")).unwrap();
    let root = File::open(&m.mnt).unwrap();
    // SAFETY: syncfs on an open descriptor; no memory is passed.
    let r = unsafe { libc::syncfs(root.as_raw_fd()) };
    assert_eq!(
        r,
        0,
        "syncfs after replacing a written file: {}",
        std::io::Error::last_os_error()
    );
    files.push(("victim", b"new contents".to_vec()));

    Expect { files, stamped }
}

fn check_stored(m: &Mounted, e: &Expect) {
    for (name, want) in &e.files {
        let back = fs::read(m.path(name)).unwrap();
        assert_eq!(back.len(), want.len(), "{name}: size after remount");
        assert!(&back == want, "{name}: contents after remount");
    }
    let md = fs::metadata(m.path("times")).unwrap();
    assert_eq!(md.modified().unwrap(), e.stamped, "set mtime after remount");
    let moved = fs::metadata(m.path("moves")).unwrap();
    assert!(
        moved.mtime() > 1_000_000_000 + 3600,
        "moved mtime after remount: {}",
        moved.mtime()
    );
}

fn run_with(opts: &str, tag: &str) {
    let tmp = tempfile::Builder::new()
        .prefix(&format!("dbfs-fuse-wb-{tag}-"))
        .tempdir()
        .unwrap();
    let image = tmp.path().join("dbfs.img");
    mkfs(&image, "128M");
    let mnt = tmp.path().join("mnt");
    let expect = {
        let m = Mounted::new(&image, &mnt, opts, Duration::from_secs(60));
        let e = write_checks(&m);
        assert!(m.unmount(), "clean unmount");
        e
    };
    let out = run(std::process::Command::new(BIN).arg("fsck").arg(&image));
    assert!(
        out.status.success(),
        "fsck: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let m = Mounted::new(&image, &mnt, opts, Duration::from_secs(60));
    check_stored(&m, &expect);
    assert!(m.unmount());
}

#[test]
fn writeback_cache_default() {
    if !fuse_available() {
        return;
    }
    run_with("", "on");
}

#[test]
fn writeback_cache_off() {
    if !fuse_available() {
        return;
    }
    run_with("nowriteback_cache", "off");
}
