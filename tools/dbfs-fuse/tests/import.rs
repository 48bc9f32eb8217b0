//! `dbfs-fuse import`: a host tree with every file type, hard links, owners, set-ID bits,
//! device numbers, times and extended attributes comes back identical through a FUSE mount of
//! the image (the way the guest's root image is built from a Debian tree).

mod common;

use std::collections::BTreeMap;
use std::ffi::CString;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::*;

fn cstr(p: &Path) -> CString {
    CString::new(p.as_os_str().as_bytes()).unwrap()
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// What must survive the import, per path relative to the tree's root.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Seen {
    mode: u32,
    uid: u32,
    gid: u32,
    rdev: u64,
    nlink: u64,
    size: u64,
    mtime: (i64, i64),
    target: Option<PathBuf>,
    data: Option<Vec<u8>>,
    /// The other paths with the same inode (hard links).
    same_inode_as: Vec<String>,
    user_xattr: Option<Vec<u8>>,
}

fn get_user_xattr(p: &Path) -> Option<Vec<u8>> {
    let (path, name) = (cstr(p), CString::new("user.dbfs_import").unwrap());
    let mut buf = [0u8; 64];
    // SAFETY: both strings are NUL-terminated; `buf` is writable for its length.
    let n = unsafe {
        libc::lgetxattr(
            path.as_ptr(),
            name.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    (n >= 0).then(|| buf[..n as usize].to_vec())
}

fn set_user_xattr(p: &Path, value: &[u8]) -> bool {
    let (path, name) = (cstr(p), CString::new("user.dbfs_import").unwrap());
    // SAFETY: both strings are NUL-terminated; `value` is readable for its length.
    unsafe {
        libc::lsetxattr(
            path.as_ptr(),
            name.as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            0,
        ) == 0
    }
}

fn walk(root: &Path) -> BTreeMap<String, Seen> {
    let mut paths = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if fs::symlink_metadata(&p).unwrap().is_dir() {
                stack.push(p.clone());
            }
            paths.push(p);
        }
    }
    let mut by_inode: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    let rel = |p: &Path| p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
    for p in &paths {
        let m = fs::symlink_metadata(p).unwrap();
        if !m.is_dir() {
            by_inode.entry(m.ino()).or_default().push(rel(p));
        }
    }
    paths
        .iter()
        .map(|p| {
            let m = fs::symlink_metadata(p).unwrap();
            let name = rel(p);
            let mut same: Vec<String> = if m.is_dir() {
                Vec::new()
            } else {
                by_inode[&m.ino()]
                    .iter()
                    .filter(|n| **n != name)
                    .cloned()
                    .collect()
            };
            same.sort();
            let seen = Seen {
                mode: m.mode(),
                uid: m.uid(),
                gid: m.gid(),
                rdev: m.rdev(),
                nlink: if m.is_dir() { 0 } else { m.nlink() },
                size: if m.is_dir() { 0 } else { m.len() },
                mtime: (m.mtime(), m.mtime_nsec()),
                target: m
                    .file_type()
                    .is_symlink()
                    .then(|| fs::read_link(p).unwrap()),
                data: m.is_file().then(|| fs::read(p).unwrap()),
                same_inode_as: same,
                user_xattr: get_user_xattr(p),
            };
            (name, seen)
        })
        .collect()
}

#[test]
fn a_host_tree_comes_back_identical_through_a_mount() {
    if !fuse_available() {
        return;
    }
    let (tmp, image, mnt) = fresh_image("import", "128M");
    let src = tmp.path().join("tree");
    fs::create_dir_all(src.join("usr/bin")).unwrap();
    fs::create_dir_all(src.join("etc/empty.d")).unwrap();
    fs::write(src.join("usr/bin/prog"), pattern(7, 300_000)).unwrap();
    fs::write(src.join("etc/empty"), b"").unwrap();
    fs::hard_link(src.join("usr/bin/prog"), src.join("usr/bin/prog-again")).unwrap();
    symlink("usr/bin", src.join("bin")).unwrap();
    symlink("/nowhere/at/all", src.join("etc/dangling")).unwrap();
    fs::write(src.join("usr/bin/su"), b"#!/bin/sh\n").unwrap();
    fs::set_permissions(src.join("usr/bin/su"), fs::Permissions::from_mode(0o4755)).unwrap();
    fs::set_permissions(src.join("etc/empty.d"), fs::Permissions::from_mode(0o1777)).unwrap();
    let xattrs = set_user_xattr(&src.join("usr/bin/prog"), b"v1");
    if !xattrs {
        eprintln!("note: the host's temporary directory has no user xattrs: that part is skipped");
    }
    let fifo = cstr(&src.join("etc/fifo"));
    // SAFETY: a NUL-terminated path; mkfifo has no other preconditions.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o640) }, 0);
    if is_root() {
        let null = cstr(&src.join("etc/null"));
        let dev = libc::makedev(1, 3);
        // SAFETY: a NUL-terminated path; as root mknod may make a device node.
        assert_eq!(
            unsafe { libc::mknod(null.as_ptr(), libc::S_IFCHR | 0o666, dev) },
            0
        );
        let blk = cstr(&src.join("etc/vda"));
        // SAFETY: as above.
        assert_eq!(
            unsafe { libc::mknod(blk.as_ptr(), libc::S_IFBLK | 0o600, libc::makedev(254, 0)) },
            0
        );
        let owned = cstr(&src.join("etc/empty"));
        // SAFETY: a NUL-terminated path; as root chown may give any owner.
        assert_eq!(unsafe { libc::lchown(owned.as_ptr(), 65534, 42) }, 0);
        let link = cstr(&src.join("bin"));
        // SAFETY: as above (the symlink itself, not its target).
        assert_eq!(unsafe { libc::lchown(link.as_ptr(), 7, 8) }, 0);
    } else {
        eprintln!("note: not root: device nodes and other owners are not tried");
    }
    // An mtime with nanoseconds, far from now.
    let t = [
        libc::timespec {
            tv_sec: 1_000_000_000,
            tv_nsec: 123_456_789,
        },
        libc::timespec {
            tv_sec: 1_100_000_000,
            tv_nsec: 987_654_321,
        },
    ];
    for p in ["usr/bin/prog", "etc", "bin"] {
        let c = cstr(&src.join(p));
        // SAFETY: a NUL-terminated path and an array of two timespecs.
        let r = unsafe {
            libc::utimensat(
                libc::AT_FDCWD,
                c.as_ptr(),
                t.as_ptr(),
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        assert_eq!(r, 0, "utimensat {p}");
    }

    let out = run(Command::new(BIN).arg("import").arg(&image).arg(&src));
    assert!(
        out.status.success(),
        "import: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("1 hard links"), "{said}");
    let fsck = run(Command::new(BIN).arg("fsck").arg(&image));
    assert!(
        fsck.status.success(),
        "fsck after import: {}",
        String::from_utf8_lossy(&fsck.stdout)
    );

    // A second import of the same tree meets names that exist: an error, nothing replaced.
    let again = run(Command::new(BIN).arg("import").arg(&image).arg(&src));
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("exists in the image"));
    // And a file is not a tree.
    let bad = run(Command::new(BIN)
        .arg("import")
        .arg(&image)
        .arg(src.join("etc/empty")));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("not a directory"));

    let want = walk(&src);
    let m = Mounted::new(&image, &mnt, "", Duration::from_secs(60));
    let got = walk(&m.mnt);
    for (name, w) in &want {
        let g = got
            .get(name)
            .unwrap_or_else(|| panic!("{name} missing in the image"));
        let mut w = w.clone();
        if !xattrs {
            w.user_xattr = g.user_xattr.clone();
        }
        assert_eq!(*g, w, "{name}");
    }
    assert_eq!(got.len(), want.len(), "extra names in the image");
    assert!(m.unmount(), "unmount");
}
