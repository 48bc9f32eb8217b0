//! Unit tests of the adapter with probe replies: what the operations answer, without a mount.

use std::ffi::OsStr;
use std::time::Duration;

use fuser::{
    Errno, FileAttr, FileHandle, FopenFlags, Generation, INodeNo, LockOwner, OpenFlags, WriteFlags,
};
use vfs::FileSystem;

use crate::answer::{AnsEmpty, AnsEntry, AnsOpen, AnsWrite, Caller};

use super::state::DbFuse;
use crate::answer::AnsError;
use std::cell::Cell;
use std::rc::Rc;

/// A reply that keeps what the operation answered: `Ok(value)` or the error.
#[derive(Clone, Default)]
struct Probe(Rc<Cell<Option<Result<u64, Errno>>>>);

impl Probe {
    fn take(&self) -> Result<u64, Errno> {
        self.0.take().expect("the operation answered")
    }
}

impl AnsError for Probe {
    fn error(self, e: Errno) {
        self.0.set(Some(Err(e)));
    }
}
impl AnsEntry for Probe {
    fn entry(self, _: &Duration, attr: &FileAttr, _: Generation) {
        self.0.set(Some(Ok(attr.ino.0)));
    }
}
impl AnsOpen for Probe {
    fn opened(self, fh: FileHandle, _: FopenFlags) {
        self.0.set(Some(Ok(fh.0)));
    }
}
impl AnsWrite for Probe {
    fn written(self, n: u32) {
        self.0.set(Some(Ok(u64::from(n))));
    }
}
impl AnsEmpty for Probe {
    fn ok(self) {
        self.0.set(Some(Ok(0)));
    }
}

/// A write-back write (`FUSE_WRITE_CACHE`) dbfs refuses is reported by the file's next
/// flush (close) or fsync, once; a refused write of a caller (O_DIRECT, or without the
/// write-back cache) is that caller's error alone. The kernel does not always keep the
/// error of its write-back writes for close(2) (see `set_close_errors`).
#[test]
fn a_refused_write_back_write_is_reported_by_the_next_flush_or_fsync() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("img");
    crate::image::mkfs(&path, 12 << 20, 16 << 10, 4096, "t").unwrap();
    let fs = crate::image::open_image(&path, false).unwrap();
    let root = fs.root().unwrap();
    let new = vfs::NewNode {
        ftype: vfs::FileType::Regular,
        perm: 0o644,
        uid: 0,
        gid: 0,
        rdev: 0,
    };
    for name in ["cached", "direct", "synced"] {
        root.create(name, &new).unwrap();
    }
    let fuse = DbFuse::new(fs, false).unwrap();
    let me = Caller { uid: 0, gid: 0 };
    let root_ino = INodeNo(root.getattr().unwrap().ino);
    let open = |name: &str| {
        let p = Probe::default();
        fuse.lookup(&me, root_ino, OsStr::new(name), p.clone());
        let ino = INodeNo(p.take().unwrap());
        fuse.open(&me, ino, OpenFlags(libc::O_RDWR), p.clone());
        (ino, FileHandle(p.take().unwrap()))
    };
    let piece = vec![7u8; 1 << 20];
    // Fill the image 1 MiB at a time until dbfs refuses a write.
    let fill = |ino: INodeNo, fh: FileHandle, flags: WriteFlags| {
        for i in 0..64u64 {
            let p = Probe::default();
            fuse.write(
                &me,
                ino,
                fh,
                i << 20,
                &piece,
                flags,
                OpenFlags(0),
                None,
                p.clone(),
            );
            if let Err(e) = p.take() {
                return e;
            }
        }
        panic!("64 MiB accepted on a 12 MiB image");
    };
    let flush = |ino, fh| {
        let p = Probe::default();
        fuse.flush(&me, ino, fh, LockOwner(0), p.clone());
        p.take()
    };
    let fsync = |ino, fh| {
        let p = Probe::default();
        fuse.fsync(&me, ino, fh, false, p.clone());
        p.take()
    };
    let unlink = |name: &str| {
        let p = Probe::default();
        fuse.unlink(&me, root_ino, OsStr::new(name), p.clone());
        p.take().unwrap();
    };

    let (ino, fh) = open("cached");
    assert_eq!(fill(ino, fh, WriteFlags::FUSE_WRITE_CACHE), Errno::ENOSPC);
    assert_eq!(
        flush(ino, fh),
        Err(Errno::ENOSPC),
        "close after a refused write-back"
    );
    assert_eq!(flush(ino, fh), Ok(0), "reported once");

    // The space the first file holds is given back, then a caller's own write is refused.
    unlink("cached");
    let (ino, fh) = open("direct");
    assert_eq!(fill(ino, fh, WriteFlags::empty()), Errno::ENOSPC);
    assert_eq!(flush(ino, fh), Ok(0), "the caller was told already");

    unlink("direct");
    let (ino, fh) = open("synced");
    assert_eq!(fill(ino, fh, WriteFlags::FUSE_WRITE_CACHE), Errno::ENOSPC);
    assert_eq!(
        fsync(ino, fh),
        Err(Errno::ENOSPC),
        "fsync after a refused write-back"
    );
    assert_eq!(flush(ino, fh), Ok(0), "fsync reported it");
}
