//! Replies written into a ring entry's payload buffer: [`Slot`] implements the
//! [`crate::answer`] traits by encoding each reply as the FUSE ABI lays it out
//! (include/uapi/linux/fuse.h), what fuser does for `/dev/fuse`.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fuser::{Errno, FileAttr, FileHandle, FopenFlags, Generation, INodeNo};

use crate::answer::{
    AnsAttr, AnsCreate, AnsData, AnsDir, AnsDirPlus, AnsEmpty, AnsEntry, AnsError, AnsLseek,
    AnsOpen, AnsStatfs, AnsWrite, AnsXattr,
};

/// Bytes of `fuse_attr`, `fuse_entry_out` and `fuse_open_out` in a reply.
const ATTR_LEN: usize = 88;
const ENTRY_OUT_LEN: usize = 40 + ATTR_LEN;
const OPEN_OUT_LEN: usize = 16;

/// Where an operation writes its reply: the ring entry's payload buffer.
pub(super) struct Slot<'a> {
    pub(super) buf: &'a mut [u8],
    pub(super) len: usize,
    pub(super) error: Option<Errno>,
    pub(super) answered: bool,
    /// A listing's size limit (the `size` of the READDIR request).
    pub(super) limit: usize,
}

impl Slot<'_> {
    fn put(&mut self, bytes: &[u8]) -> bool {
        let end = self.len + bytes.len();
        if end > self.buf.len() {
            return false;
        }
        self.buf[self.len..end].copy_from_slice(bytes);
        self.len = end;
        true
    }

    fn answer(&mut self, bytes: &[u8]) {
        if !self.answered {
            self.answered = true;
            if !self.put(bytes) {
                self.error = Some(Errno::ERANGE);
            }
        }
    }
}

/// The `S_IF*` bits of a file type.
fn type_bits(kind: fuser::FileType) -> u32 {
    match kind {
        fuser::FileType::NamedPipe => libc::S_IFIFO,
        fuser::FileType::CharDevice => libc::S_IFCHR,
        fuser::FileType::BlockDevice => libc::S_IFBLK,
        fuser::FileType::Directory => libc::S_IFDIR,
        fuser::FileType::RegularFile => libc::S_IFREG,
        fuser::FileType::Symlink => libc::S_IFLNK,
        fuser::FileType::Socket => libc::S_IFSOCK,
    }
}

fn mode_of(attr: &FileAttr) -> u32 {
    type_bits(attr.kind) | u32::from(attr.perm)
}

fn secs_nsec(t: SystemTime) -> (u64, u32) {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => (d.as_secs(), d.subsec_nanos()),
        Err(e) => {
            let d = e.duration();
            let s = -(d.as_secs() as i64);
            if d.subsec_nanos() == 0 {
                (s as u64, 0)
            } else {
                ((s - 1) as u64, 1_000_000_000 - d.subsec_nanos())
            }
        }
    }
}

/// `fuse_write_out` and `fuse_getxattr_out`: a `u32` and 4 bytes of padding.
fn u32_out(v: u32) -> [u8; 8] {
    let mut b = [0u8; 8];
    b[..4].copy_from_slice(&v.to_ne_bytes());
    b
}

/// `fuse_attr`.
fn attr_bytes(attr: &FileAttr) -> [u8; ATTR_LEN] {
    let mut b = [0u8; ATTR_LEN];
    let (at, atn) = secs_nsec(attr.atime);
    let (mt, mtn) = secs_nsec(attr.mtime);
    let (ct, ctn) = secs_nsec(attr.ctime);
    for (i, v) in [attr.ino.0, attr.size, attr.blocks, at, mt, ct]
        .iter()
        .enumerate()
    {
        b[i * 8..i * 8 + 8].copy_from_slice(&v.to_ne_bytes());
    }
    let words = [
        atn,
        mtn,
        ctn,
        mode_of(attr),
        attr.nlink,
        attr.uid,
        attr.gid,
        attr.rdev,
        attr.blksize,
        attr.flags,
    ];
    for (i, v) in words.iter().enumerate() {
        b[48 + i * 4..52 + i * 4].copy_from_slice(&v.to_ne_bytes());
    }
    b
}

/// `fuse_entry_out`.
fn entry_bytes(ttl: &Duration, attr: &FileAttr, generation: Generation) -> [u8; ENTRY_OUT_LEN] {
    let mut b = [0u8; ENTRY_OUT_LEN];
    b[0..8].copy_from_slice(&attr.ino.0.to_ne_bytes());
    b[8..16].copy_from_slice(&generation.0.to_ne_bytes());
    b[16..24].copy_from_slice(&ttl.as_secs().to_ne_bytes());
    b[24..32].copy_from_slice(&ttl.as_secs().to_ne_bytes());
    b[32..36].copy_from_slice(&ttl.subsec_nanos().to_ne_bytes());
    b[36..40].copy_from_slice(&ttl.subsec_nanos().to_ne_bytes());
    b[40..].copy_from_slice(&attr_bytes(attr));
    b
}

fn open_bytes(fh: FileHandle, flags: FopenFlags) -> [u8; OPEN_OUT_LEN] {
    let mut b = [0u8; OPEN_OUT_LEN];
    b[0..8].copy_from_slice(&fh.0.to_ne_bytes());
    b[8..12].copy_from_slice(&flags.bits().to_ne_bytes());
    b
}

/// A `fuse_dirent` (after `prefix`, the `fuse_entry_out` of READDIRPLUS), padded to 8 bytes;
/// false when it does not fit in the listing's size.
fn put_dirent(s: &mut Slot<'_>, prefix: &[u8], ino: u64, off: u64, typ: u32, name: &[u8]) -> bool {
    let len = prefix.len() + 24 + name.len();
    let padded = (len + 7) & !7;
    if s.len + padded > s.limit.min(s.buf.len()) {
        return false;
    }
    let mut head = [0u8; 24];
    head[0..8].copy_from_slice(&ino.to_ne_bytes());
    head[8..16].copy_from_slice(&off.to_ne_bytes());
    head[16..20].copy_from_slice(&(name.len() as u32).to_ne_bytes());
    head[20..24].copy_from_slice(&typ.to_ne_bytes());
    s.put(prefix);
    s.put(&head);
    s.put(name);
    s.put(&[0u8; 8][..padded - len]);
    true
}

impl AnsError for &mut Slot<'_> {
    fn error(self, err: Errno) {
        if !self.answered {
            self.answered = true;
            self.error = Some(err);
        }
    }
}

impl AnsEntry for &mut Slot<'_> {
    fn entry(self, ttl: &Duration, attr: &FileAttr, generation: Generation) {
        self.answer(&entry_bytes(ttl, attr, generation));
    }
}

impl AnsAttr for &mut Slot<'_> {
    fn attr(self, ttl: &Duration, attr: &FileAttr) {
        let mut b = [0u8; 16 + ATTR_LEN];
        b[0..8].copy_from_slice(&ttl.as_secs().to_ne_bytes());
        b[8..12].copy_from_slice(&ttl.subsec_nanos().to_ne_bytes());
        b[16..].copy_from_slice(&attr_bytes(attr));
        self.answer(&b);
    }
}

impl AnsData for &mut Slot<'_> {
    fn data(self, data: &[u8]) {
        self.answer(data);
    }

    /// Straight into the ring's payload buffer (a READ has no payload of its own).
    fn data_from(self, len: usize, fill: impl FnOnce(&mut [u8]) -> Result<usize, Errno>) {
        if self.answered {
            return;
        }
        let Some(buf) = self.buf.get_mut(self.len..self.len + len) else {
            return self.error(Errno::ERANGE);
        };
        match fill(buf) {
            Ok(n) => {
                self.len += n.min(len);
                self.answered = true;
            }
            Err(e) => self.error(e),
        }
    }
}

impl AnsEmpty for &mut Slot<'_> {
    fn ok(self) {
        self.answer(&[]);
    }
}

impl AnsOpen for &mut Slot<'_> {
    fn opened(self, fh: FileHandle, flags: FopenFlags) {
        self.answer(&open_bytes(fh, flags));
    }
}

impl AnsWrite for &mut Slot<'_> {
    fn written(self, size: u32) {
        self.answer(&u32_out(size));
    }
}

impl AnsCreate for &mut Slot<'_> {
    fn created(
        self,
        ttl: &Duration,
        attr: &FileAttr,
        generation: Generation,
        fh: FileHandle,
        flags: FopenFlags,
    ) {
        let mut b = [0u8; ENTRY_OUT_LEN + OPEN_OUT_LEN];
        b[..ENTRY_OUT_LEN].copy_from_slice(&entry_bytes(ttl, attr, generation));
        b[ENTRY_OUT_LEN..].copy_from_slice(&open_bytes(fh, flags));
        self.answer(&b);
    }
}

impl AnsStatfs for &mut Slot<'_> {
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
        let mut b = [0u8; 80];
        for (i, v) in [blocks, bfree, bavail, files, ffree].iter().enumerate() {
            b[i * 8..i * 8 + 8].copy_from_slice(&v.to_ne_bytes());
        }
        for (i, v) in [bsize, namelen, frsize].iter().enumerate() {
            b[40 + i * 4..44 + i * 4].copy_from_slice(&v.to_ne_bytes());
        }
        self.answer(&b);
    }
}

impl AnsXattr for &mut Slot<'_> {
    fn size(self, size: u32) {
        self.answer(&u32_out(size));
    }
    fn data(self, data: &[u8]) {
        self.answer(data);
    }
}

impl AnsLseek for &mut Slot<'_> {
    fn offset(self, offset: i64) {
        self.answer(&offset.to_ne_bytes());
    }
}

impl AnsDir for &mut Slot<'_> {
    fn add<T: AsRef<OsStr>>(
        &mut self,
        ino: INodeNo,
        offset: u64,
        kind: fuser::FileType,
        name: T,
    ) -> bool {
        let typ = type_bits(kind) >> 12;
        !put_dirent(self, &[], ino.0, offset, typ, name.as_ref().as_bytes())
    }
    fn ok(self) {
        self.answered = true;
    }
}

impl AnsDirPlus for &mut Slot<'_> {
    fn add<T: AsRef<OsStr>>(
        &mut self,
        ino: INodeNo,
        offset: u64,
        name: T,
        ttl: &Duration,
        attr: &FileAttr,
        generation: Generation,
    ) -> bool {
        let entry = entry_bytes(ttl, attr, generation);
        let typ = mode_of(attr) >> 12;
        !put_dirent(self, &entry, ino.0, offset, typ, name.as_ref().as_bytes())
    }
    fn ok(self) {
        self.answered = true;
    }
}
