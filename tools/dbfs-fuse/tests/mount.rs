//! dbfs through a real FUSE mount, checked with std::fs and real tools.
//!
//! Each test mounts its own image (own temporary directory) with a time limit and unmounts even
//! when it fails (see `common::Mounted`). Without /dev/fuse the mount tests print a note and
//! pass; the offline tests (mkfs, fsck, ls, cat, put) always run.

mod common;

use std::collections::BTreeSet;
use std::ffi::CString;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::*;

fn errno<T>(r: std::io::Result<T>) -> i32 {
    match r {
        Ok(_) => 0,
        Err(e) => e.raw_os_error().unwrap_or(-1),
    }
}

fn cstr(p: &Path) -> CString {
    CString::new(p.as_os_str().as_bytes()).unwrap()
}

fn renameat2(from: &Path, to: &Path, flags: u32) -> i32 {
    let (a, b) = (cstr(from), cstr(to));
    // SAFETY: both strings are valid NUL-terminated paths that outlive the call.
    let r = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            flags,
        )
    };
    if r == 0 {
        0
    } else {
        std::io::Error::last_os_error().raw_os_error().unwrap_or(-1)
    }
}

fn listing(dir: &Path) -> BTreeSet<String> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

fn fsck_status(image: &Path) -> (i32, String) {
    let out = run(Command::new(BIN).arg("fsck").arg(image));
    (
        out.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[test]
fn posix_semantics_through_std_fs() {
    if !fuse_available() {
        return;
    }
    let (_tmp, image, mnt) = fresh_image("posix", "256M");
    let m = Mounted::new(&image, &mnt, "", Duration::from_secs(60));

    // Contents and sizes.
    let data = pattern(1, 300_000);
    fs::write(m.path("f"), &data).unwrap();
    assert_eq!(fs::read(m.path("f")).unwrap(), data);
    assert_eq!(fs::metadata(m.path("f")).unwrap().len(), 300_000);
    {
        let mut f = OpenOptions::new().append(true).open(m.path("f")).unwrap();
        f.write_all(b"tail").unwrap();
    }
    assert_eq!(fs::metadata(m.path("f")).unwrap().len(), 300_004);
    {
        let f = OpenOptions::new().write(true).open(m.path("f")).unwrap();
        f.set_len(10).unwrap();
        f.set_len(70_000).unwrap();
    }
    let back = fs::read(m.path("f")).unwrap();
    assert_eq!(&back[..10], &data[..10]);
    assert!(
        back[10..].iter().all(|&b| b == 0),
        "growing a file reads zeros"
    );
    {
        let mut f = OpenOptions::new()
            .read(true)
            .write(true)
            .open(m.path("f"))
            .unwrap();
        f.seek(SeekFrom::Start(1 << 20)).unwrap();
        f.write_all(b"far").unwrap();
        let mut buf = [1u8; 3];
        f.seek(SeekFrom::Start(500_000)).unwrap();
        f.read_exact(&mut buf).unwrap();
        assert_eq!(buf, [0, 0, 0], "hole reads zeros");
    }
    assert_eq!(fs::metadata(m.path("f")).unwrap().len(), (1 << 20) + 3);

    // errno of the common failures.
    assert_eq!(errno(fs::metadata(m.path("missing"))), libc::ENOENT);
    assert_eq!(errno(fs::create_dir(m.path("d"))), 0);
    assert_eq!(errno(fs::create_dir(m.path("d"))), libc::EEXIST);
    fs::write(m.path("d/x"), b"x").unwrap();
    assert_eq!(errno(fs::remove_dir(m.path("d"))), libc::ENOTEMPTY);
    assert_eq!(errno(fs::remove_dir(m.path("f"))), libc::ENOTDIR);
    assert_eq!(errno(fs::remove_file(m.path("d"))), libc::EISDIR);
    assert_eq!(
        errno(OpenOptions::new().write(true).open(m.path("d"))),
        libc::EISDIR
    );
    assert_eq!(errno(fs::metadata(m.path("f/x"))), libc::ENOTDIR);
    assert_eq!(
        errno(File::create(m.path(&"n".repeat(256)))),
        libc::ENAMETOOLONG
    );
    assert_eq!(errno(File::create(m.path(&"n".repeat(255)))), 0);
    assert_eq!(
        errno(
            OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(m.path("f"))
        ),
        libc::EEXIST
    );
    assert_eq!(
        errno(fs::hard_link(m.path("d"), m.path("dlink"))),
        libc::EPERM
    );

    // Listings (enough entries to need several readdir requests) and link counts.
    fs::create_dir(m.path("many")).unwrap();
    let mut want = BTreeSet::new();
    for i in 0..600 {
        let n = format!("entry-{i:04}-{}", "z".repeat(i % 40));
        File::create(m.path("many").join(&n)).unwrap();
        want.insert(n);
    }
    assert_eq!(listing(&m.path("many")), want);
    for i in (0..600).step_by(2) {
        let n = format!("entry-{i:04}-{}", "z".repeat(i % 40));
        fs::remove_file(m.path("many").join(&n)).unwrap();
        want.remove(&n);
    }
    assert_eq!(listing(&m.path("many")), want);
    fs::create_dir(m.path("d/sub1")).unwrap();
    fs::create_dir(m.path("d/sub2")).unwrap();
    assert_eq!(fs::metadata(m.path("d")).unwrap().nlink(), 4);
    fs::hard_link(m.path("d/x"), m.path("x2")).unwrap();
    assert_eq!(fs::metadata(m.path("x2")).unwrap().nlink(), 2);
    assert_eq!(
        fs::metadata(m.path("x2")).unwrap().ino(),
        fs::metadata(m.path("d/x")).unwrap().ino()
    );
    fs::remove_file(m.path("d/x")).unwrap();
    assert_eq!(fs::metadata(m.path("x2")).unwrap().nlink(), 1);
    assert_eq!(fs::read(m.path("x2")).unwrap(), b"x");

    // Symlinks.
    std::os::unix::fs::symlink("x2", m.path("sl")).unwrap();
    assert_eq!(fs::read_link(m.path("sl")).unwrap(), Path::new("x2"));
    assert_eq!(fs::read(m.path("sl")).unwrap(), b"x");
    assert!(fs::symlink_metadata(m.path("sl"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(fs::symlink_metadata(m.path("sl")).unwrap().len(), 2);
    std::os::unix::fs::symlink("nowhere", m.path("dangling")).unwrap();
    assert_eq!(errno(fs::metadata(m.path("dangling"))), libc::ENOENT);
    assert_eq!(errno(fs::read_link(m.path("x2"))), libc::EINVAL);

    // Rename, with and without flags.
    fs::write(m.path("r1"), b"one").unwrap();
    fs::write(m.path("r2"), b"two").unwrap();
    assert_eq!(
        renameat2(&m.path("r1"), &m.path("r2"), libc::RENAME_NOREPLACE),
        libc::EEXIST
    );
    assert_eq!(
        renameat2(&m.path("r1"), &m.path("r2"), libc::RENAME_EXCHANGE),
        0
    );
    assert_eq!(fs::read(m.path("r1")).unwrap(), b"two");
    assert_eq!(fs::read(m.path("r2")).unwrap(), b"one");
    assert_eq!(
        renameat2(&m.path("r1"), &m.path("r3"), libc::RENAME_EXCHANGE),
        libc::ENOENT
    );
    fs::rename(m.path("r1"), m.path("r2")).unwrap();
    assert_eq!(fs::read(m.path("r2")).unwrap(), b"two");
    assert_eq!(errno(fs::metadata(m.path("r1"))), libc::ENOENT);
    assert_eq!(
        errno(fs::rename(m.path("d"), m.path("d/sub1/inside"))),
        libc::EINVAL
    );
    assert_eq!(
        errno(fs::rename(m.path("many"), m.path("d"))),
        libc::ENOTEMPTY
    );
    assert_eq!(errno(fs::rename(m.path("r2"), m.path("d"))), libc::EISDIR);
    assert_eq!(
        errno(fs::rename(m.path("d/sub1"), m.path("r2"))),
        libc::ENOTDIR
    );
    fs::rename(m.path("d/sub2"), m.path("moved")).unwrap();
    assert_eq!(fs::metadata(m.path("d")).unwrap().nlink(), 3);
    assert_eq!(
        renameat2(&m.path("r2"), &m.path("r9"), libc::RENAME_WHITEOUT),
        libc::EINVAL
    );

    // Open, unlinked, still usable; gone after close.
    {
        let mut f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(m.path("tmpfile"))
            .unwrap();
        f.write_all(&pattern(2, 50_000)).unwrap();
        fs::remove_file(m.path("tmpfile")).unwrap();
        assert_eq!(errno(fs::metadata(m.path("tmpfile"))), libc::ENOENT);
        f.write_all(b"more").unwrap();
        f.seek(SeekFrom::Start(0)).unwrap();
        let mut back = Vec::new();
        f.read_to_end(&mut back).unwrap();
        assert_eq!(back.len(), 50_004);
        assert_eq!(&back[..50_000], &pattern(2, 50_000)[..]);
    }

    // Attributes.
    fs::set_permissions(m.path("r2"), fs::Permissions::from_mode(0o640)).unwrap();
    assert_eq!(fs::metadata(m.path("r2")).unwrap().mode() & 0o7777, 0o640);
    std::os::unix::fs::chown(m.path("r2"), Some(1234), Some(5678)).unwrap();
    let md = fs::metadata(m.path("r2")).unwrap();
    assert_eq!((md.uid(), md.gid()), (1234, 5678));
    let when = std::time::UNIX_EPOCH + Duration::new(1_000_000_000, 123_456_789);
    File::options()
        .write(true)
        .open(m.path("r2"))
        .unwrap()
        .set_modified(when)
        .unwrap();
    assert_eq!(
        fs::metadata(m.path("r2")).unwrap().modified().unwrap(),
        when
    );
    let before = fs::metadata(m.path("r2")).unwrap().ctime();
    assert!(before > 1_000_000_000);

    // Extended attributes.
    let p = cstr(&m.path("r2"));
    let (name, other) = (
        CString::new("user.colour").unwrap(),
        CString::new("user.none").unwrap(),
    );
    // SAFETY: valid C strings and buffers with the lengths passed.
    unsafe {
        assert_eq!(
            libc::setxattr(p.as_ptr(), name.as_ptr(), b"blue".as_ptr().cast(), 4, 0),
            0
        );
        assert_eq!(
            libc::setxattr(
                p.as_ptr(),
                name.as_ptr(),
                b"red".as_ptr().cast(),
                3,
                libc::XATTR_CREATE
            ),
            -1
        );
        assert_eq!(
            std::io::Error::last_os_error().raw_os_error(),
            Some(libc::EEXIST)
        );
        let mut buf = [0u8; 16];
        assert_eq!(
            libc::getxattr(
                p.as_ptr(),
                name.as_ptr(),
                buf.as_mut_ptr().cast(),
                buf.len()
            ),
            4
        );
        assert_eq!(&buf[..4], b"blue");
        assert_eq!(
            libc::getxattr(p.as_ptr(), name.as_ptr(), std::ptr::null_mut(), 0),
            4
        );
        assert_eq!(
            libc::getxattr(p.as_ptr(), name.as_ptr(), buf.as_mut_ptr().cast(), 2),
            -1
        );
        assert_eq!(
            std::io::Error::last_os_error().raw_os_error(),
            Some(libc::ERANGE)
        );
        assert_eq!(
            libc::getxattr(
                p.as_ptr(),
                other.as_ptr(),
                buf.as_mut_ptr().cast(),
                buf.len()
            ),
            -1
        );
        assert_eq!(
            std::io::Error::last_os_error().raw_os_error(),
            Some(libc::ENODATA)
        );
        let n = libc::listxattr(p.as_ptr(), buf.as_mut_ptr().cast(), buf.len());
        assert_eq!(&buf[..n as usize], b"user.colour\0");
        assert_eq!(libc::removexattr(p.as_ptr(), name.as_ptr()), 0);
        assert_eq!(libc::removexattr(p.as_ptr(), name.as_ptr()), -1);
        assert_eq!(
            std::io::Error::last_os_error().raw_os_error(),
            Some(libc::ENODATA)
        );
    }

    // Special files.
    let fifo = cstr(&m.path("fifo"));
    // SAFETY: valid C string.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    assert!(std::os::unix::fs::FileTypeExt::is_fifo(
        &fs::metadata(m.path("fifo")).unwrap().file_type()
    ));

    // fallocate, SEEK_DATA / SEEK_HOLE, copy_file_range, statfs.
    {
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(m.path("alloc"))
            .unwrap();
        use std::os::fd::AsRawFd;
        // SAFETY: a valid open descriptor.
        assert_eq!(unsafe { libc::fallocate(f.as_raw_fd(), 0, 0, 100_000) }, 0);
        assert_eq!(f.metadata().unwrap().len(), 100_000);
        // SAFETY: as above.
        assert_eq!(
            unsafe { libc::lseek(f.as_raw_fd(), 10, libc::SEEK_DATA) },
            10
        );
        // SAFETY: as above.
        assert_eq!(
            unsafe { libc::lseek(f.as_raw_fd(), 10, libc::SEEK_HOLE) },
            100_000
        );
        // SAFETY: as above.
        assert_eq!(
            unsafe { libc::lseek(f.as_raw_fd(), 100_000, libc::SEEK_DATA) },
            -1
        );
        assert_eq!(
            std::io::Error::last_os_error().raw_os_error(),
            Some(libc::ENXIO)
        );
    }
    // PUNCH_HOLE | KEEP_SIZE and ZERO_RANGE: zeros, the size kept (or grown past the end).
    {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::FileExt;
        let data = pattern(5, 300_000);
        fs::write(m.path("punch"), &data).unwrap();
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .open(m.path("punch"))
            .unwrap();
        let fd = f.as_raw_fd();
        let punch = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
        // SAFETY: a valid open descriptor.
        assert_eq!(unsafe { libc::fallocate(fd, punch, 1000, 200_000) }, 0);
        // SAFETY: as above.
        let zero = unsafe { libc::fallocate(fd, libc::FALLOC_FL_ZERO_RANGE, 299_000, 5000) };
        assert_eq!(zero, 0, "{}", std::io::Error::last_os_error());
        let mut want = data.clone();
        want[1000..201_000].fill(0);
        want[299_000..].fill(0);
        want.resize(304_000, 0);
        assert_eq!(f.metadata().unwrap().len(), 304_000);
        let mut got = vec![0u8; 304_000];
        f.read_exact_at(&mut got, 0).unwrap();
        assert!(got == want, "punched and zeroed ranges read back wrong");
    }
    let src = pattern(3, 2_000_000);
    fs::write(m.path("cfr-src"), &src).unwrap();
    {
        let mut a = File::open(m.path("cfr-src")).unwrap();
        let mut b = File::create(m.path("cfr-dst")).unwrap();
        assert_eq!(std::io::copy(&mut a, &mut b).unwrap(), 2_000_000);
    }
    assert_eq!(fs::read(m.path("cfr-dst")).unwrap(), src);
    {
        let mnt_c = cstr(&m.mnt);
        // SAFETY: zeroed statvfs is a valid out-buffer; the path is a valid C string.
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        assert_eq!(unsafe { libc::statvfs(mnt_c.as_ptr(), &mut st) }, 0);
        assert_eq!(st.f_namemax, 255);
        assert!(
            st.f_blocks as u64 * st.f_frsize as u64 >= 255 << 20,
            "statfs reports the image size"
        );
        assert!(st.f_bfree > 0 && st.f_bfree <= st.f_blocks);
    }

    // fsync and a clean unmount, then the image checks clean.
    File::open(m.path("cfr-dst")).unwrap().sync_all().unwrap();
    assert!(m.unmount(), "clean unmount");
    let (code, out) = fsck_status(&image);
    assert_eq!(code, 0, "fsck after the semantics test:\n{out}");
}

/// Copy host sources into a private snapshot, so files other people edit meanwhile cannot make
/// `diff -r` flaky.
fn fixture_tree(dest: &Path) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    fs::create_dir_all(dest).unwrap();
    for part in ["abi", "fs/vfs", "fs/dbfs", "fs/fat32", "tools/mkimage"] {
        let from = root.join(part);
        if from.exists() {
            let to = dest.join(part.replace('/', "-"));
            sh(
                dest,
                &format!("cp -a '{}' '{}'", from.display(), to.display()),
                60,
            );
            // Only the sources: build outputs and fuzz corpora (ignored by git) can be huge.
            sh(
                dest,
                &format!(
                    "find '{}' -depth -type d \\( -name target -o -name corpus -o -name artifacts \\) -exec rm -rf {{}} +",
                    to.display()
                ),
                60,
            );
        }
    }
    fs::write(dest.join("big.bin"), pattern(9, 3 << 20)).unwrap();
    fs::create_dir_all(dest.join("empty/dir")).unwrap();
    std::os::unix::fs::symlink("big.bin", dest.join("link-to-big")).unwrap();
    fs::hard_link(dest.join("big.bin"), dest.join("hard-big")).unwrap();
    fs::set_permissions(dest.join("big.bin"), fs::Permissions::from_mode(0o600)).unwrap();
}

#[test]
fn real_tools_on_the_mount() {
    if !fuse_available() {
        return;
    }
    let (tmp, image, mnt) = fresh_image("tools", "512M");
    let src = tmp.path().join("src");
    fixture_tree(&src);
    let m = Mounted::new(&image, &mnt, "", Duration::from_secs(110));
    let mp = m.mnt.display().to_string();
    let sp = src.display().to_string();
    let t = tmp.path();

    // cp -a and diff -r; cp -a keeps modes, times and the hard link.
    sh(
        t,
        &format!("cp -a '{sp}' '{mp}/tree' && diff -r '{sp}' '{mp}/tree'"),
        60,
    );
    let a = fs::metadata(src.join("big.bin")).unwrap();
    let b = fs::metadata(m.path("tree/big.bin")).unwrap();
    assert_eq!(
        (a.mode(), a.mtime(), a.mtime_nsec()),
        (b.mode(), b.mtime(), b.mtime_nsec())
    );
    assert_eq!(b.nlink(), 2);

    // tar round trip: tar from the mount, extract on the host, compare.
    sh(t, &format!("tar -C '{mp}' -cf '{}/t.tar' tree && mkdir -p '{}/untar' && tar -C '{}/untar' -xf '{}/t.tar' && diff -r '{sp}' '{}/untar/tree'",
        t.display(), t.display(), t.display(), t.display(), t.display()), 60);
    // ... and into the mount.
    sh(t, &format!("mkdir '{mp}/untar' && tar -C '{mp}/untar' -xf '{}/t.tar' && diff -r '{sp}' '{mp}/untar/tree'", t.display()), 60);

    // git, if present.
    if Command::new("git").arg("--version").output().is_ok() {
        sh(t, &format!(
            "cd '{mp}' && mkdir repo && cd repo && cp -a '{sp}/abi' . && git init -q && git add -A && \
             git -c user.name=t -c user.email=t@example.org commit -qm init && git status --porcelain | wc -l | grep -qx 0 && \
             echo change >> abi/Cargo.toml && git -c user.name=t -c user.email=t@example.org commit -qam change && git log --oneline | wc -l | grep -qx 2 && git fsck --no-progress --strict"
        ), 60);
    } else {
        eprintln!("note: git not installed; git check skipped");
    }

    // fio in verify mode.
    if Command::new("fio").arg("--version").output().is_ok() {
        sh(t, &format!(
            "fio --name=verify --directory='{mp}' --rw=randwrite --bs=4k --size=8m --verify=crc32c --do_verify=1 \
             --ioengine=psync --numjobs=2 --group_reporting --output-format=terse >/dev/null"
        ), 60);
    } else {
        eprintln!("note: fio not installed; fio verify skipped");
    }

    // rsync, if present.
    if Command::new("rsync").arg("--version").output().is_ok() {
        sh(
            t,
            &format!("rsync -aH '{sp}/' '{mp}/rsynced/' && diff -r '{sp}' '{mp}/rsynced'"),
            60,
        );
    } else {
        eprintln!("note: rsync not installed; rsync check skipped");
    }

    sh(
        t,
        &format!("rm -rf '{mp}/untar' && test ! -e '{mp}/untar'"),
        30,
    );
    assert!(m.unmount(), "clean unmount");
    let (code, out) = fsck_status(&image);
    assert_eq!(code, 0, "fsck after real tools:\n{out}");
}

#[test]
fn parallel_readers_and_writers() {
    if !fuse_available() {
        return;
    }
    let (_tmp, image, mnt) = fresh_image("parallel", "256M");
    let m = Mounted::new(&image, &mnt, "", Duration::from_secs(60));
    let data = pattern(77, 4 << 20);
    fs::write(m.path("shared"), &data).unwrap();
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let (m, data) = (&m, &data);
            s.spawn(move || {
                // Readers of one file, each at its own offsets, and a writer of its own file.
                let mut f = File::open(m.path("shared")).unwrap();
                let mut buf = vec![0u8; 65536];
                for i in 0..64u64 {
                    let off = ((i * 7 + t * 13) % 64) * 65536;
                    f.seek(SeekFrom::Start(off)).unwrap();
                    f.read_exact(&mut buf).unwrap();
                    assert_eq!(&buf[..], &data[off as usize..off as usize + 65536]);
                }
                let own = pattern(100 + t, 1 << 20);
                fs::write(m.path(&format!("own{t}")), &own).unwrap();
                assert_eq!(fs::read(m.path(&format!("own{t}"))).unwrap(), own);
            });
        }
    });
    assert!(m.unmount());
    assert_eq!(fsck_status(&image).0, 0);
}

/// The kernel caches names and attributes for an hour and directory listings while a
/// directory is unchanged (directories open without a request, so with `FOPEN_CACHE_DIR`):
/// every change made through the mount shows at once in listings, lookups, stat and reads,
/// from a second process too.
#[test]
fn kernel_caches_follow_every_change() {
    if !fuse_available() {
        return;
    }
    let (_tmp, image, mnt) = fresh_image("caches", "64M");
    let m = Mounted::new(&image, &mnt, "", Duration::from_secs(60));
    let d = m.path("d");
    fs::create_dir(&d).unwrap();
    let set = |names: &[&str]| names.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
    fs::write(d.join("a"), b"1").unwrap();
    fs::write(d.join("b"), b"22").unwrap();
    assert_eq!(listing(&d), set(&["a", "b"]));
    fs::write(d.join("c"), b"333").unwrap();
    assert_eq!(listing(&d), set(&["a", "b", "c"]));
    fs::remove_file(d.join("a")).unwrap();
    fs::rename(d.join("b"), d.join("e")).unwrap();
    fs::create_dir(d.join("sub")).unwrap();
    assert_eq!(listing(&d), set(&["c", "e", "sub"]));
    assert_eq!(errno(fs::metadata(d.join("a"))), libc::ENOENT);
    assert_eq!(errno(fs::metadata(d.join("b"))), libc::ENOENT);
    fs::hard_link(d.join("c"), d.join("sub/c2")).unwrap();
    assert_eq!(fs::metadata(d.join("c")).unwrap().nlink(), 2);
    fs::write(d.join("sub/c2"), b"4444").unwrap();
    assert_eq!(fs::read(d.join("c")).unwrap(), b"4444");
    assert_eq!(fs::metadata(d.join("c")).unwrap().len(), 4);
    fs::remove_file(d.join("sub/c2")).unwrap();
    assert_eq!(fs::metadata(d.join("c")).unwrap().nlink(), 1);
    fs::set_permissions(d.join("e"), fs::Permissions::from_mode(0o600)).unwrap();
    // Another process sees the same, through its own lookups.
    let out = sh(
        &d,
        "ls -1 . sub; stat -c '%n %s %h %a' c e; cat c; echo; mv c sub/; ls -1 . sub",
        30,
    );
    assert_eq!(
        out,
        ".:\nc\ne\nsub\n\nsub:\nc 4 1 644\ne 2 1 600\n4444\n.:\ne\nsub\n\nsub:\nc\n"
    );
    assert_eq!(listing(&d), set(&["e", "sub"]));
    assert_eq!(listing(&d.join("sub")), set(&["c"]));
    fs::remove_dir_all(&d).unwrap();
    assert!(listing(&m.path("")).is_empty());
}

#[test]
fn remount_keeps_data_and_signals_unmount_cleanly() {
    if !fuse_available() {
        return;
    }
    let (_tmp, image, mnt) = fresh_image("remount", "256M");
    let mut sums = Vec::new();
    {
        let m = Mounted::new(&image, &mnt, "", Duration::from_secs(60));
        fs::create_dir(m.path("dir")).unwrap();
        for (i, len) in [0usize, 1, 4095, 4096, 16384, 16385, 1 << 20, 5_000_001]
            .into_iter()
            .enumerate()
        {
            let data = pattern(i as u64 + 10, len);
            fs::write(m.path(&format!("dir/file{i}")), &data).unwrap();
            sums.push((format!("dir/file{i}"), checksum(&data), len));
        }
        // Buffered (not fsynced) data must survive a SIGTERM: the tool commits before exit.
        assert!(m.terminate(), "SIGTERM unmounts cleanly");
    }
    assert_eq!(mount_count(&mnt.canonicalize().unwrap()), 0);
    let (code, out) = fsck_status(&image);
    assert_eq!(code, 0, "{out}");
    let m = Mounted::new(&image, &mnt, "ro", Duration::from_secs(60));
    for (name, sum, len) in &sums {
        let back = fs::read(m.path(name)).unwrap();
        assert_eq!(back.len(), *len, "{name}");
        assert_eq!(checksum(&back), *sum, "{name}");
    }
    assert_eq!(errno(File::create(m.path("new"))), libc::EROFS);
    assert!(m.unmount());
}

#[test]
fn nobarrier_mount_is_durable_at_unmount() {
    if !fuse_available() {
        return;
    }
    let (_tmp, image, mnt) = fresh_image("nobarrier", "128M");
    let data = pattern(31, 3 << 20);
    {
        let m = Mounted::new(&image, &mnt, "nobarrier", Duration::from_secs(60));
        fs::create_dir(m.path("d")).unwrap();
        for i in 0..200 {
            fs::write(m.path(&format!("d/f{i}")), format!("{i}")).unwrap();
        }
        fs::write(m.path("big"), &data).unwrap();
        File::open(m.path("big")).unwrap().sync_all().unwrap();
        assert!(m.unmount());
    }
    let (code, out) = fsck_status(&image);
    assert_eq!(code, 0, "{out}");
    let m = Mounted::new(&image, &mnt, "", Duration::from_secs(60));
    assert_eq!(fs::read(m.path("big")).unwrap(), data);
    assert_eq!(fs::read_dir(m.path("d")).unwrap().count(), 200);
    assert_eq!(fs::read(m.path("d/f123")).unwrap(), b"123");
    assert!(m.unmount());
}

#[test]
fn background_mount_and_auto_unmount() {
    if !fuse_available() {
        return;
    }
    // auto_unmount needs allow_other/allow_root, which fusermount3 grants to other users only
    // with `user_allow_other` in /etc/fuse.conf.
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let conf = fs::read_to_string("/etc/fuse.conf").unwrap_or_default();
    if !root && !conf.lines().any(|l| l.trim() == "user_allow_other") {
        eprintln!(
            "note: not root and no user_allow_other in /etc/fuse.conf: auto_unmount test skipped"
        );
        return;
    }
    let (_tmp, image, mnt) = fresh_image("bg", "64M");
    fs::create_dir_all(&mnt).unwrap();
    let mnt = mnt.canonicalize().unwrap();
    let guard = background_auto_unmount(&image, &mnt);
    let pid = guard.1;
    fs::write(mnt.join("hello"), b"world").unwrap();
    assert_eq!(fs::read(mnt.join("hello")).unwrap(), b"world");
    // Kill the daemon without letting it unmount, with writes in flight (a thread writing and
    // fsyncing until its mount dies): auto_unmount must remove the mount. fusermount3 only
    // unmounts if it finds the FUSE connection gone, and without the tool's holder process
    // it looked while a worker thread still held /dev/fuse in about one kill in four.
    let busy = mnt.join("busy");
    let writer = std::thread::spawn(move || {
        let Ok(mut f) = File::create(&busy) else {
            return;
        };
        let block = vec![7u8; 1 << 20];
        for _ in 0..200 {
            if f.write_all(&block).and_then(|_| f.sync_data()).is_err() {
                return;
            }
        }
    });
    std::thread::sleep(Duration::from_millis(300));
    signal(pid, "-KILL");
    let start = std::time::Instant::now();
    // A killed daemon is gone only once its threads leave the kernel (an fdatasync in flight
    // finishes first), which takes seconds on a loaded machine.
    while mount_count(&mnt) > 0 && start.elapsed() < Duration::from_secs(40) {
        std::thread::sleep(Duration::from_millis(50));
    }
    if mount_count(&mnt) > 0 {
        // Say what is still holding the mount before failing.
        let ps = run(Command::new("ps").args(["-eo", "pid,ppid,stat,etimes,cmd"]));
        let ps = String::from_utf8_lossy(&ps.stdout);
        let relevant: Vec<&str> = ps
            .lines()
            .filter(|l| l.contains("fusermount") || l.contains("dbfs-fuse"))
            .collect();
        eprintln!("mount still present; processes:\n{}", relevant.join("\n"));
    }
    assert_eq!(mount_count(&mnt), 0, "auto_unmount removed the mount");
    let _ = writer.join();
    drop(guard);

    // SIGTERM of an auto_unmount mount: the tool unmounts and exits (fusermount3 leaves a
    // mount whose process still answers, so the tool must unmount it itself), and the data
    // written since the mount is in the image.
    let guard = background_auto_unmount(&image, &mnt);
    let pid = guard.1;
    fs::write(mnt.join("after"), b"term").unwrap();
    signal(pid, "-TERM");
    let start = std::time::Instant::now();
    // Running, not exited (an exited child of the finished parent can stay a zombie).
    let alive = || {
        fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|st| {
            st.rsplit_once(") ")
                .is_some_and(|(_, rest)| !rest.starts_with('Z'))
        })
    };
    while (mount_count(&mnt) > 0 || alive()) && start.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        mount_count(&mnt),
        0,
        "SIGTERM unmounted the auto_unmount mount"
    );
    assert!(!alive(), "the mount process exited after SIGTERM");
    drop(guard);
    let (code, out) = fsck_status(&image);
    assert_eq!(code, 0, "{out}");
    let cat = run(Command::new(BIN).arg("cat").arg(&image).arg("/after"));
    assert_eq!(cat.stdout, b"term");
}

/// `dbfs-fuse mount IMAGE MNT -o auto_unmount` in the background (the tool prints the mount
/// process's pid); the guard unmounts lazily and kills that process on drop.
fn background_auto_unmount(image: &Path, mnt: &Path) -> Guard {
    let out = run(Command::new("timeout")
        .args(["30", BIN, "mount"])
        .arg(image)
        .arg(mnt)
        .args(["-o", "auto_unmount"]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pid: i32 = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("pid on stdout");
    Guard(mnt.to_path_buf(), pid)
}

/// Send signal `sig` (as `kill` spells it, e.g. "-TERM") to process `pid`.
fn signal(pid: i32, sig: &str) {
    let _ = Command::new("kill")
        .args([sig, &pid.to_string()])
        .stderr(std::process::Stdio::null())
        .status();
}

/// Unmount lazily and kill the mount process on drop (for the background-mount test).
struct Guard(std::path::PathBuf, i32);
impl Drop for Guard {
    fn drop(&mut self) {
        if mount_count(&self.0) > 0 {
            let _ = Command::new("fusermount3").arg("-uz").arg(&self.0).status();
        }
        signal(self.1, "-KILL");
    }
}

#[test]
fn an_image_in_use_is_refused() {
    if !fuse_available() {
        return;
    }
    // A second writer would commit from its own idea of the free pages and corrupt the
    // image: while it is mounted read-write, `put` and `fsck` wait briefly, then refuse
    // with a reason; the mount is unaffected, and afterwards both work.
    let (tmp, image, mnt) = fresh_image("busy", "64M");
    let host = tmp.path().join("host.txt");
    fs::write(&host, b"from the host").unwrap();
    let m = Mounted::new(&image, &mnt, "", Duration::from_secs(60));
    fs::write(m.path("mounted.txt"), b"from the mount").unwrap();
    let put = run(Command::new(BIN)
        .arg("put")
        .arg(&image)
        .arg(&host)
        .arg("/host.txt"));
    assert!(
        !put.status.success(),
        "put into a mounted image was accepted"
    );
    let err = String::from_utf8_lossy(&put.stderr);
    assert!(err.contains("in use"), "put: {err}");
    let (code, out) = fsck_status(&image);
    assert_eq!(code, 2, "fsck of a mounted image: {out}");
    assert!(out.contains("in use"), "fsck: {out}");
    assert_eq!(fs::read(m.path("mounted.txt")).unwrap(), b"from the mount");
    assert!(m.unmount());
    let put = run(Command::new(BIN)
        .arg("put")
        .arg(&image)
        .arg(&host)
        .arg("/host.txt"));
    assert!(
        put.status.success(),
        "{}",
        String::from_utf8_lossy(&put.stderr)
    );
    let (code, out) = fsck_status(&image);
    assert_eq!(code, 0, "{out}");
    let m = Mounted::new(&image, &mnt, "ro", Duration::from_secs(60));
    assert_eq!(fs::read(m.path("host.txt")).unwrap(), b"from the host");
    assert_eq!(fs::read(m.path("mounted.txt")).unwrap(), b"from the mount");
    // Readers share: fsck of a read-only mount's image works.
    assert_eq!(fsck_status(&image).0, 0);
    assert!(m.unmount());
}

#[test]
fn offline_commands_and_corrupt_images() {
    let tmp = tempfile::tempdir().unwrap();
    let image = tmp.path().join("img");
    mkfs(&image, "32M");
    assert_eq!(fs::metadata(&image).unwrap().len(), 32 << 20);
    let host = tmp.path().join("payload");
    let data = pattern(42, 100_000);
    fs::write(&host, &data).unwrap();
    let put = run(Command::new(BIN)
        .arg("put")
        .arg(&image)
        .arg(&host)
        .arg("/payload"));
    assert!(
        put.status.success(),
        "{}",
        String::from_utf8_lossy(&put.stderr)
    );
    let cat = run(Command::new(BIN).arg("cat").arg(&image).arg("/payload"));
    assert!(cat.status.success());
    assert_eq!(cat.stdout, data);
    let ls = run(Command::new(BIN).arg("ls").arg(&image));
    assert!(
        String::from_utf8_lossy(&ls.stdout).contains("100000 payload"),
        "{}",
        String::from_utf8_lossy(&ls.stdout)
    );
    let missing = run(Command::new(BIN).arg("cat").arg(&image).arg("/nope"));
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&missing.stderr).contains("No such file"),
        "{}",
        String::from_utf8_lossy(&missing.stderr)
    );
    assert_eq!(fsck_status(&image).0, 0);

    // Not an image at all: refused with a reason, fsck exit 2.
    let junk = tmp.path().join("junk");
    fs::write(&junk, pattern(7, 1 << 20)).unwrap();
    let (code, out) = fsck_status(&junk);
    assert_eq!(code, 2, "{out}");
    let ls = run(Command::new(BIN).arg("ls").arg(&junk));
    assert_eq!(ls.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&ls.stderr).contains("junk"),
        "{}",
        String::from_utf8_lossy(&ls.stderr)
    );

    // Damage every page after the meta pages: fsck must report (1 or 2) and nothing may panic.
    let damaged = tmp.path().join("damaged");
    fs::copy(&image, &damaged).unwrap();
    {
        let mut f = OpenOptions::new().write(true).open(&damaged).unwrap();
        f.seek(SeekFrom::Start(8192)).unwrap();
        f.write_all(&pattern(8, 200 * 4096)).unwrap();
    }
    let (code, out) = fsck_status(&damaged);
    assert!(
        code == 1 || code == 2,
        "damaged image must not check clean (exit {code}):\n{out}"
    );
    assert!(!out.contains("panicked"), "{out}");
    for args in [vec!["ls"], vec!["cat", "/payload"]] {
        let o = run(Command::new(BIN)
            .arg(args[0])
            .arg(&damaged)
            .args(&args[1..]));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn corrupt_image_fails_to_mount_with_a_message() {
    if !fuse_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let junk = tmp.path().join("junk");
    fs::write(&junk, pattern(5, 1 << 20)).unwrap();
    let mnt = tmp.path().join("mnt");
    fs::create_dir(&mnt).unwrap();
    let out = run(Command::new("timeout")
        .args(["30", BIN, "mount"])
        .arg(&junk)
        .arg(&mnt));
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot open the kvdb store") || err.contains("not a dbfs image"),
        "{err}"
    );
    assert_eq!(mount_count(&mnt.canonicalize().unwrap()), 0);
}

/// A fresh 64 MiB image in a temporary directory other users may enter, for the tests that run
/// commands as them; `None` (the test is skipped) without FUSE or when not root.
fn image_for_other_users(name: &str) -> Option<(tempfile::TempDir, PathBuf, PathBuf)> {
    // SAFETY: geteuid has no preconditions.
    if !fuse_available() || unsafe { libc::geteuid() } != 0 {
        return None;
    }
    let (tmp, image, mnt) = fresh_image(name, "64M");
    fs::set_permissions(tmp.path(), fs::Permissions::from_mode(0o755)).unwrap();
    Some((tmp, image, mnt))
}

/// A write, truncate or fallocate by a caller without CAP_FSETID clears set-user-id, and
/// set-group-id when group-execute is set (Linux's rule); root's keep them. dbfs-fuse does
/// this itself: it asks the kernel for `FUSE_HANDLE_KILLPRIV_V2`, which saves the
/// `security.capability` lookup the kernel otherwise sends before every write.
#[test]
fn unprivileged_writes_clear_set_id_bits() {
    use std::os::unix::process::CommandExt;
    let Some((_tmp, image, mnt)) = image_for_other_users("killpriv") else {
        return;
    };
    let m = Mounted::new(&image, &mnt, "allow_other", Duration::from_secs(60));
    fs::set_permissions(m.path(""), fs::Permissions::from_mode(0o777)).unwrap();
    let as_user = |uid: u32, script: &str| {
        let out = Command::new("sh")
            .arg("-c")
            .arg(script)
            .current_dir(m.path(""))
            .uid(uid)
            .gid(uid)
            .output()
            .unwrap();
        assert!(out.status.success(), "{script}: {out:?}");
    };
    // (file, mode, who, what, mode after)
    let cases: [(&str, u32, u32, &str, u32); 5] = [
        ("w", 0o6777, 65534, "printf abc >> w", 0o0777),
        ("g", 0o2767, 65534, "printf abc >> g", 0o2767),
        ("t", 0o6777, 65534, "truncate -s 1 t", 0o0777),
        ("f", 0o6777, 65534, "fallocate -l 8192 f", 0o0777),
        ("r", 0o6777, 0, "printf abc >> r", 0o6777),
    ];
    for (name, mode, _, _, _) in cases {
        fs::write(m.path(name), b"0123").unwrap();
        fs::set_permissions(m.path(name), fs::Permissions::from_mode(mode)).unwrap();
    }
    for (name, mode, uid, script, after) in cases {
        as_user(uid, script);
        let got = fs::metadata(m.path(name)).unwrap().mode() & 0o7777;
        assert_eq!(got, after, "{name}: mode {mode:o}, `{script}` as uid {uid}");
    }
    assert_eq!(fs::read(m.path("w")).unwrap(), b"0123abc");
    assert_eq!(fs::read(m.path("t")).unwrap(), b"0");
    assert!(m.unmount());
}

/// The options of the mount at `mnt` as /proc/mounts lists them.
fn mount_options_of(mnt: &Path) -> Vec<String> {
    let mnt = mnt.canonicalize().unwrap();
    let mounts = fs::read_to_string("/proc/mounts").unwrap();
    let line = mounts
        .lines()
        .find(|l| l.split(' ').nth(1) == Some(mnt.to_str().unwrap()))
        .unwrap_or_else(|| panic!("{} not in /proc/mounts", mnt.display()));
    line.split(' ')
        .nth(3)
        .unwrap()
        .split(',')
        .map(String::from)
        .collect()
}

/// Mounted by root for root alone, dbfs-fuse leaves out `default_permissions` (root passes
/// those checks: it spares a GETATTR after every change to a directory), and root's rules
/// still hold: files of any mode are read and written, a file without an x bit is not
/// executed. With `allow_other`, or when asked for, the kernel checks, and another user is
/// refused what the mode bits refuse.
#[test]
fn the_kernel_checks_permissions_when_other_users_reach_the_mount() {
    use std::os::unix::process::CommandExt;
    let Some((_tmp, image, mnt)) = image_for_other_users("perms") else {
        return;
    };

    let m = Mounted::new(&image, &mnt, "", Duration::from_secs(60));
    assert!(!mount_options_of(&mnt).contains(&"default_permissions".to_string()));
    fs::create_dir(m.path("d")).unwrap();
    fs::write(m.path("d/secret"), b"abc").unwrap();
    fs::write(m.path("d/script"), b"#!/bin/sh\necho ran\n").unwrap();
    fs::set_permissions(m.path("d/secret"), fs::Permissions::from_mode(0o000)).unwrap();
    fs::set_permissions(m.path("d/script"), fs::Permissions::from_mode(0o644)).unwrap();
    fs::set_permissions(m.path("d"), fs::Permissions::from_mode(0o000)).unwrap();
    assert_eq!(fs::read(m.path("d/secret")).unwrap(), b"abc");
    fs::write(m.path("d/secret"), b"root").unwrap();
    let run = |p: &Path| Command::new(p).output().map(|o| o.stdout);
    assert_eq!(errno(run(&m.path("d/script"))), libc::EACCES);
    fs::set_permissions(m.path("d/script"), fs::Permissions::from_mode(0o700)).unwrap();
    assert_eq!(run(&m.path("d/script")).unwrap(), b"ran\n");
    // access(2) reaches dbfs-fuse now; its answer for root is the kernel's.
    let access = |rel: &str, mode: i32| {
        // SAFETY: a valid NUL-terminated path.
        unsafe { libc::access(cstr(&m.path(rel)).as_ptr(), mode) }
    };
    assert_eq!(access("d/secret", libc::R_OK | libc::W_OK), 0);
    assert_eq!(access("d/secret", libc::X_OK), -1);
    assert_eq!(access("d", libc::R_OK | libc::W_OK | libc::X_OK), 0);
    assert!(m.unmount());

    for opts in ["allow_other", "default_permissions"] {
        let m = Mounted::new(&image, &mnt, opts, Duration::from_secs(60));
        assert!(
            mount_options_of(&mnt).contains(&"default_permissions".to_string()),
            "-o {opts}"
        );
        assert_eq!(fs::read(m.path("d/secret")).unwrap(), b"root");
        if opts == "allow_other" {
            fs::set_permissions(m.path("d"), fs::Permissions::from_mode(0o755)).unwrap();
            fs::set_permissions(m.path("d/secret"), fs::Permissions::from_mode(0o600)).unwrap();
            let out = Command::new("cat")
                .arg(m.path("d/secret"))
                .uid(65534)
                .gid(65534)
                .output()
                .unwrap();
            assert!(
                !out.status.success(),
                "uid 65534 read a 0600 file of root's"
            );
            assert!(String::from_utf8_lossy(&out.stderr).contains("Permission denied"));
            fs::set_permissions(m.path("d"), fs::Permissions::from_mode(0o000)).unwrap();
        }
        assert!(m.unmount());
    }
}

/// The kernel's `fuse` module passes requests through per-CPU io_uring queues when its
/// `enable_uring` parameter is on (`make deps` turns it on) and the daemon asks for it.
fn kernel_offers_uring() -> bool {
    fs::read_to_string("/sys/module/fuse/parameters/enable_uring").is_ok_and(|s| s.trim() == "Y")
}

/// CPU time (ns) of the daemon's threads whose name starts with `prefix`, and how many.
fn thread_cpu(pid: u32, prefix: &str) -> (u64, usize) {
    let (mut ns, mut n) = (0, 0);
    for t in fs::read_dir(format!("/proc/{pid}/task")).unwrap().flatten() {
        let comm = fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        if comm.starts_with(prefix) {
            let stat = fs::read_to_string(t.path().join("schedstat")).unwrap_or_default();
            ns += stat
                .split(' ')
                .next()
                .and_then(|s| s.parse::<u64>().ok())
                .unwrap_or(0);
            n += 1;
        }
    }
    (ns, n)
}

/// One of every kind of request, and what a caller sees of them.
fn every_kind_of_request(root: &Path) -> Vec<String> {
    let mut seen = Vec::new();
    let d = root.join("d");
    fs::create_dir(&d).unwrap();
    for i in 0..300 {
        fs::write(d.join(format!("f{i}")), format!("file {i}")).unwrap();
    }
    let big = pattern(3, 3 << 20);
    fs::write(d.join("big"), &big).unwrap();
    seen.push(format!(
        "big same: {}",
        fs::read(d.join("big")).unwrap() == big
    ));
    let mut f = OpenOptions::new()
        .read(true)
        .write(true)
        .open(d.join("big"))
        .unwrap();
    f.seek(SeekFrom::Start(4093)).unwrap();
    f.write_all(b"middle").unwrap();
    f.sync_all().unwrap();
    let mut back = [0u8; 10];
    f.seek(SeekFrom::Start(4091)).unwrap();
    f.read_exact(&mut back).unwrap();
    seen.push(format!("read back {:?}", back));
    drop(f);
    std::os::unix::fs::symlink("f1", d.join("s")).unwrap();
    seen.push(format!("link -> {:?}", fs::read_link(d.join("s")).unwrap()));
    fs::hard_link(d.join("f2"), d.join("h")).unwrap();
    seen.push(format!(
        "nlink {}",
        fs::metadata(d.join("f2")).unwrap().nlink()
    ));
    fs::rename(d.join("f3"), d.join("r")).unwrap();
    fs::set_permissions(d.join("r"), fs::Permissions::from_mode(0o600)).unwrap();
    seen.push(format!(
        "mode {:o}",
        fs::metadata(d.join("r")).unwrap().mode()
    ));
    let path = CString::new(d.join("r").as_os_str().as_bytes()).unwrap();
    let key = CString::new("user.k").unwrap();
    // SAFETY: NUL-terminated strings and a buffer of the length given.
    let set = unsafe { libc::setxattr(path.as_ptr(), key.as_ptr(), b"v1".as_ptr().cast(), 2, 0) };
    let mut val = [0u8; 16];
    let got = unsafe { libc::getxattr(path.as_ptr(), key.as_ptr(), val.as_mut_ptr().cast(), 16) };
    seen.push(format!("xattr {set} {:?}", &val[..got.max(0) as usize]));
    for i in (0..300).step_by(2) {
        fs::remove_file(d.join(format!("f{i}"))).unwrap();
    }
    seen.push(format!(
        "missing: {:?}",
        fs::read(d.join("f0")).map_err(|e| e.kind())
    ));
    let mut names: Vec<String> = fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    seen.push(format!("{} names, first {:?}", names.len(), &names[..3]));
    fs::create_dir(d.join("sub")).unwrap();
    fs::remove_dir(d.join("sub")).unwrap();
    seen.push(format!("sub gone: {}", !d.join("sub").exists()));
    seen
}

/// Requests through the kernel's io_uring queues (`-o uring`, the default) and through
/// `/dev/fuse` (`-o nouring`) give a caller the same results; with the queues on, the ring
/// threads serve the requests.
#[test]
fn io_uring_and_dev_fuse_answer_alike() {
    if !fuse_available() {
        return;
    }
    let mut results = Vec::new();
    for opts in ["uring", "nouring"] {
        let (_tmp, image, mnt) = fresh_image("uring", "64M");
        let m = Mounted::new(&image, &mnt, opts, Duration::from_secs(60));
        let seen = every_kind_of_request(&m.mnt);
        let (ring_ns, rings) = thread_cpu(m.pid(), "dbfs-ring-");
        let (dev_ns, _) = thread_cpu(m.pid(), "fuser-");
        assert!(m.unmount(), "-o '{opts}': unmount");
        let out = Command::new(BIN).arg("fsck").arg(&image).output().unwrap();
        assert!(out.status.success(), "-o '{opts}': fsck");
        if opts == "uring" && kernel_offers_uring() {
            assert!(
                rings > 0,
                "no ring threads although the kernel offers io_uring"
            );
            assert!(
                ring_ns > dev_ns,
                "ring threads used {ring_ns} ns, /dev/fuse threads {dev_ns} ns"
            );
        } else {
            assert_eq!(rings, 0, "-o '{opts}': ring threads");
        }
        results.push(seen);
    }
    assert_eq!(results[0], results[1]);
}
