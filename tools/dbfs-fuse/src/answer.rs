//! How an operation of the adapter answers, whichever way its request came.
//!
//! The adapter's operations ([`crate::adapter::DbFuse`]) reply through the traits here, not
//! through fuser's reply types, because requests reach them two ways: read from `/dev/fuse` by
//! fuser's session threads ([`crate::dev`]), whose reply types implement these traits, and
//! taken from the kernel's per-CPU io_uring queues ([`crate::uring`]), whose reply slot
//! implements them by writing the reply into the ring's buffer. Each trait has the methods of
//! the fuser reply type it stands for, with the same signatures, so an operation reads the same
//! either way.

use std::ffi::OsStr;
use std::time::Duration;

use fuser::{Errno, FileAttr, FileHandle, FopenFlags, Generation, INodeNo, Request};

/// Who sent a request: the parts of `fuser::Request` the operations read.
#[derive(Clone, Copy, Debug)]
pub struct Caller {
    pub uid: u32,
    pub gid: u32,
}

impl Caller {
    pub fn of(req: &Request) -> Caller {
        Caller {
            uid: req.uid(),
            gid: req.gid(),
        }
    }

    pub fn uid(&self) -> u32 {
        self.uid
    }

    pub fn gid(&self) -> u32 {
        self.gid
    }
}

/// Every answer can be an error.
pub trait AnsError {
    fn error(self, err: Errno);
}

pub trait AnsEntry: AnsError {
    fn entry(self, ttl: &Duration, attr: &FileAttr, generation: Generation);
}

pub trait AnsAttr: AnsError {
    fn attr(self, ttl: &Duration, attr: &FileAttr);
}

pub trait AnsData: AnsError + Sized {
    fn data(self, data: &[u8]);

    /// Answer with the bytes `fill` writes into a buffer of `len` bytes (it returns how many,
    /// or an error). By default the buffer is one the thread keeps, then sent with `data`; a
    /// transport with a reply buffer of its own lets `fill` write there (one copy less).
    fn data_from(self, len: usize, fill: impl FnOnce(&mut [u8]) -> Result<usize, Errno>) {
        if len > KEPT_BUF_MAX {
            let mut buf = vec![0u8; len];
            match fill(&mut buf) {
                Ok(n) => self.data(&buf[..n.min(len)]),
                Err(e) => self.error(e),
            }
            return;
        }
        // Each thread keeps its buffer: a new one per request was 1 MiB of fresh memory to
        // fault in and zero for every 1 MiB read (dbfs writes every byte it returns, holes
        // included, so stale bytes never reach the reply). `data` copies it out before the
        // next request.
        DATA_BUF.with_borrow_mut(|buf| {
            if buf.len() < len {
                buf.resize(len, 0);
            }
            match fill(&mut buf[..len]) {
                Ok(n) => self.data(&buf[..n.min(len)]),
                Err(e) => self.error(e),
            }
        });
    }
}

/// The largest reply buffer a thread keeps for [`AnsData::data_from`] (a read's largest).
const KEPT_BUF_MAX: usize = 1 << 20;

thread_local! {
    static DATA_BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

pub trait AnsEmpty: AnsError {
    fn ok(self);
}

pub trait AnsOpen: AnsError {
    fn opened(self, fh: FileHandle, flags: FopenFlags);
}

pub trait AnsWrite: AnsError {
    fn written(self, size: u32);
}

pub trait AnsCreate: AnsError {
    fn created(
        self,
        ttl: &Duration,
        attr: &FileAttr,
        generation: Generation,
        fh: FileHandle,
        flags: FopenFlags,
    );
}

pub trait AnsStatfs: AnsError {
    #[allow(clippy::too_many_arguments)]
    fn statfs(
        self,
        blocks: u64,
        bfree: u64,
        bavail: u64,
        files: u64,
        ffree: u64,
        bsize: u32,
        namelen: u32,
        frsize: u32,
    );
}

pub trait AnsXattr: AnsError {
    fn size(self, size: u32);
    fn data(self, data: &[u8]);
}

pub trait AnsLseek: AnsError {
    fn offset(self, offset: i64);
}

/// A directory listing: `add` returns true when the entry did not fit (the buffer is full).
pub trait AnsDir: AnsError {
    fn add<T: AsRef<OsStr>>(
        &mut self,
        ino: INodeNo,
        offset: u64,
        kind: fuser::FileType,
        name: T,
    ) -> bool;
    fn ok(self);
}

pub trait AnsDirPlus: AnsError {
    fn add<T: AsRef<OsStr>>(
        &mut self,
        ino: INodeNo,
        offset: u64,
        name: T,
        ttl: &Duration,
        attr: &FileAttr,
        generation: Generation,
    ) -> bool;
    fn ok(self);
}

macro_rules! fuser_error {
    ($($t:ty),*) => {$(
        impl AnsError for $t {
            fn error(self, err: Errno) {
                <$t>::error(self, err)
            }
        }
    )*};
}

fuser_error!(
    fuser::ReplyEntry,
    fuser::ReplyAttr,
    fuser::ReplyData,
    fuser::ReplyEmpty,
    fuser::ReplyOpen,
    fuser::ReplyWrite,
    fuser::ReplyCreate,
    fuser::ReplyStatfs,
    fuser::ReplyXattr,
    fuser::ReplyLseek,
    fuser::ReplyDirectory,
    fuser::ReplyDirectoryPlus
);

impl AnsEntry for fuser::ReplyEntry {
    fn entry(self, ttl: &Duration, attr: &FileAttr, generation: Generation) {
        fuser::ReplyEntry::entry(self, ttl, attr, generation)
    }
}

impl AnsAttr for fuser::ReplyAttr {
    fn attr(self, ttl: &Duration, attr: &FileAttr) {
        fuser::ReplyAttr::attr(self, ttl, attr)
    }
}

impl AnsData for fuser::ReplyData {
    fn data(self, data: &[u8]) {
        fuser::ReplyData::data(self, data)
    }
}

impl AnsEmpty for fuser::ReplyEmpty {
    fn ok(self) {
        fuser::ReplyEmpty::ok(self)
    }
}

impl AnsOpen for fuser::ReplyOpen {
    fn opened(self, fh: FileHandle, flags: FopenFlags) {
        fuser::ReplyOpen::opened(self, fh, flags)
    }
}

impl AnsWrite for fuser::ReplyWrite {
    fn written(self, size: u32) {
        fuser::ReplyWrite::written(self, size)
    }
}

impl AnsCreate for fuser::ReplyCreate {
    fn created(
        self,
        ttl: &Duration,
        attr: &FileAttr,
        generation: Generation,
        fh: FileHandle,
        flags: FopenFlags,
    ) {
        fuser::ReplyCreate::created(self, ttl, attr, generation, fh, flags)
    }
}

impl AnsStatfs for fuser::ReplyStatfs {
    fn statfs(
        self,
        blocks: u64,
        bfree: u64,
        bavail: u64,
        files: u64,
        ffree: u64,
        bsize: u32,
        namelen: u32,
        frsize: u32,
    ) {
        fuser::ReplyStatfs::statfs(
            self, blocks, bfree, bavail, files, ffree, bsize, namelen, frsize,
        )
    }
}

impl AnsXattr for fuser::ReplyXattr {
    fn size(self, size: u32) {
        fuser::ReplyXattr::size(self, size)
    }
    fn data(self, data: &[u8]) {
        fuser::ReplyXattr::data(self, data)
    }
}

impl AnsLseek for fuser::ReplyLseek {
    fn offset(self, offset: i64) {
        fuser::ReplyLseek::offset(self, offset)
    }
}

impl AnsDir for fuser::ReplyDirectory {
    fn add<T: AsRef<OsStr>>(
        &mut self,
        ino: INodeNo,
        offset: u64,
        kind: fuser::FileType,
        name: T,
    ) -> bool {
        fuser::ReplyDirectory::add(self, ino, offset, kind, name)
    }
    fn ok(self) {
        fuser::ReplyDirectory::ok(self)
    }
}

impl AnsDirPlus for fuser::ReplyDirectoryPlus {
    fn add<T: AsRef<OsStr>>(
        &mut self,
        ino: INodeNo,
        offset: u64,
        name: T,
        ttl: &Duration,
        attr: &FileAttr,
        generation: Generation,
    ) -> bool {
        fuser::ReplyDirectoryPlus::add(self, ino, offset, name, ttl, attr, generation)
    }
    fn ok(self) {
        fuser::ReplyDirectoryPlus::ok(self)
    }
}
