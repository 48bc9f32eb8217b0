//! devfs: `/dev` with the console, `null`, `zero`, one node per disk (`vda`, `vdb`, ...), and
//! Linux's links into procfs: `fd` (to `/proc/self/fd`), `stdin`, `stdout`, `stderr`.
//!
//! Disk nodes go straight to the driver (like O_DIRECT): an aligned call is one call to the
//! request layer (from the user's pages, without a copy; the layer splits it into requests
//! of at most 1 MiB, all in flight together), unaligned edges are read-modify-written. They bypass any block cache, so they are the
//! "raw device" the benchmarks measure file systems against; do not write to the node of a
//! disk that is mounted.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;
use core::any::Any;

use vfs::{
    BlockDevice, DirEntry, FileSystem, FileType, Metadata, Node, NodeRef, Timestamp, VfsError,
    VfsResult, SECTOR_SIZE,
};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Console,
    Null,
    Zero,
    /// `/dev/full`: reads zeros, and every write finds the device full (ENOSPC).
    Full,
    /// `/dev/urandom` and `/dev/random` (`crate::arch::random`: not cryptographic).
    Random,
}

pub struct DevFs {
    root: Arc<DevDir>,
}

struct DevDir {
    entries: Vec<(String, NodeRef)>,
}

struct CharDev {
    kind: Kind,
    ino: u64,
}

/// A symbolic link with a fixed text.
struct DevLink {
    target: &'static str,
    ino: u64,
}

/// devfs's links: name, text, inode number.
const LINKS: [(&str, &str, u64); 4] = [
    ("fd", "/proc/self/fd", 30),
    ("stdin", "/proc/self/fd/0", 31),
    ("stdout", "/proc/self/fd/1", 32),
    ("stderr", "/proc/self/fd/2", 33),
];

/// The device number of the `i`th disk (vda = 0): Linux's virtio-blk major is dynamic, 254
/// is what it usually gets; each disk has 16 minors (for partitions).
pub fn disk_rdev(i: usize) -> u64 {
    (254 << 8) | (i as u64 * 16)
}

pub struct DiskNode {
    dev: Arc<dyn BlockDevice>,
    ino: u64,
    rdev: u64,
}

impl DiskNode {
    /// The disk's size in bytes (BLKGETSIZE64).
    pub fn size_bytes(&self) -> u64 {
        self.dev.size_bytes()
    }
}

impl DevFs {
    pub fn new(disks: Vec<(String, Arc<dyn BlockDevice>)>) -> Arc<DevFs> {
        let mut entries: Vec<(String, NodeRef)> = vec![
            (
                String::from("console"),
                Arc::new(CharDev {
                    kind: Kind::Console,
                    ino: 2,
                }),
            ),
            (
                String::from("tty"),
                Arc::new(CharDev {
                    kind: Kind::Console,
                    ino: 5,
                }),
            ),
            (
                String::from("urandom"),
                Arc::new(CharDev {
                    kind: Kind::Random,
                    ino: 6,
                }),
            ),
            (
                String::from("random"),
                Arc::new(CharDev {
                    kind: Kind::Random,
                    ino: 7,
                }),
            ),
            (
                String::from("null"),
                Arc::new(CharDev {
                    kind: Kind::Null,
                    ino: 3,
                }),
            ),
            (
                String::from("zero"),
                Arc::new(CharDev {
                    kind: Kind::Zero,
                    ino: 4,
                }),
            ),
            (
                String::from("full"),
                Arc::new(CharDev {
                    kind: Kind::Full,
                    ino: 8,
                }),
            ),
        ];
        for (name, target, ino) in LINKS {
            entries.push((String::from(name), Arc::new(DevLink { target, ino })));
        }
        for (i, (name, dev)) in disks.into_iter().enumerate() {
            let rdev = disk_rdev(i);
            entries.push((
                name,
                Arc::new(DiskNode {
                    dev,
                    ino: 10 + i as u64,
                    rdev,
                }),
            ));
        }
        Arc::new(DevFs {
            root: Arc::new(DevDir { entries }),
        })
    }
}

impl FileSystem for DevFs {
    fn fs_name(&self) -> &'static str {
        "devfs"
    }
    fn root(&self) -> VfsResult<NodeRef> {
        Ok(self.root.clone())
    }
    fn statfs(&self) -> VfsResult<vfs::FsStats> {
        Ok(vfs::FsStats {
            fs_type: 0x1373,
            block_size: 4096,
            name_max: 255,
            ..Default::default()
        })
    }
}

impl Node for DevLink {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn getattr(&self) -> VfsResult<Metadata> {
        Ok(meta(
            self.ino,
            FileType::Symlink,
            0o777,
            self.target.len() as u64,
            0,
        ))
    }
    fn readlink(&self) -> VfsResult<String> {
        Ok(String::from(self.target))
    }
}

/// Attributes of a synthetic node (root-owned, no times): devfs, procfs, sockets, timerfds.
pub(crate) fn meta(ino: u64, ftype: FileType, perm: u32, size: u64, rdev: u64) -> Metadata {
    Metadata {
        ino,
        ftype,
        perm,
        nlink: if ftype == FileType::Directory { 2 } else { 1 },
        uid: 0,
        gid: 0,
        size,
        blocks: 0,
        blksize: 4096,
        rdev,
        atime: Timestamp::default(),
        mtime: Timestamp::default(),
        ctime: Timestamp::default(),
    }
}

/// Emit the entries of a synthetic directory from `cookie` on: `.`, `..` (both given
/// `self_ino` and 1), then `entries` (name, inode, type); a cookie is a position in that list.
pub(super) fn list(
    cookie: u64,
    self_ino: u64,
    entries: &[(String, u64, FileType)],
    sink: &mut dyn FnMut(DirEntry<'_>) -> bool,
) -> VfsResult<()> {
    let mut i = cookie as usize;
    loop {
        let (name, ino, ftype) = match i {
            0 => (".", self_ino, FileType::Directory),
            1 => ("..", 1, FileType::Directory),
            _ => match entries.get(i - 2) {
                Some((n, ino, t)) => (n.as_str(), *ino, *t),
                None => return Ok(()),
            },
        };
        if !sink(DirEntry {
            ino,
            ftype,
            name,
            next_cookie: i as u64 + 1,
        }) {
            return Ok(());
        }
        i += 1;
    }
}

impl Node for DevDir {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn getattr(&self) -> VfsResult<Metadata> {
        Ok(meta(1, FileType::Directory, 0o755, 0, 0))
    }
    fn lookup(&self, name: &str) -> VfsResult<NodeRef> {
        self.entries
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, node)| node.clone())
            .ok_or(VfsError::NotFound)
    }
    fn create(&self, name: &str, _new: &vfs::NewNode) -> VfsResult<NodeRef> {
        match self.lookup(name) {
            Ok(_) => Err(VfsError::AlreadyExists),
            Err(_) => Err(VfsError::NotPermitted),
        }
    }
    fn readdir(&self, cookie: u64, sink: &mut dyn FnMut(DirEntry<'_>) -> bool) -> VfsResult<()> {
        let mut entries = Vec::with_capacity(self.entries.len());
        for (n, node) in &self.entries {
            let m = node.getattr()?;
            entries.push((n.clone(), m.ino, m.ftype));
        }
        list(cookie, 1, &entries, sink)
    }
}

/// Whether `node` is `/dev/random` or `/dev/urandom` (their ioctls: `RNDGETENTCNT`).
pub fn is_random(node: &dyn Node) -> bool {
    node.as_any()
        .downcast_ref::<CharDev>()
        .is_some_and(|c| c.kind == Kind::Random)
}

/// The entropy the random devices report (`RNDGETENTCNT`,
/// `/proc/sys/kernel/random/entropy_avail`): Linux 5.18's fixed 256 bits once the generator is
/// seeded, which ours is from boot (`arch::random`).
pub const ENTROPY_BITS: u32 = 256;

/// Whether `node` is `/dev/zero` (mmap makes anonymous memory of it, as Linux does).
pub fn is_zero(node: &dyn Node) -> bool {
    node.as_any()
        .downcast_ref::<CharDev>()
        .is_some_and(|c| c.kind == Kind::Zero)
}

/// Whether `node` is the console terminal (`/dev/console`, `/dev/tty`).
pub fn is_console(node: &dyn Node) -> bool {
    node.as_any()
        .downcast_ref::<CharDev>()
        .is_some_and(|c| c.kind == Kind::Console)
}

impl Node for CharDev {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn getattr(&self) -> VfsResult<Metadata> {
        let rdev = match self.kind {
            Kind::Console if self.ino == 5 => 5 << 8,
            Kind::Console => (5 << 8) | 1,
            Kind::Null => (1 << 8) | 3,
            Kind::Zero => (1 << 8) | 5,
            Kind::Full => (1 << 8) | 7,
            Kind::Random if self.ino == 7 => (1 << 8) | 8,
            Kind::Random => (1 << 8) | 9,
        };
        Ok(meta(self.ino, FileType::CharDevice, 0o666, 0, rdev))
    }
    fn setattr(&self, _attr: &vfs::SetAttr) -> VfsResult<Metadata> {
        self.getattr()
    }
    /// Reads of zeros (/dev/zero, /dev/full), nothing and random bytes need no lock but the
    /// generator's spin lock: a kernel runs them without its big lock, on several harts at
    /// once. The terminal's may sleep.
    fn parallel_read(&self, _len: usize) -> bool {
        self.kind != Kind::Console
    }
    fn read_at(&self, _offset: u64, buf: &mut [u8]) -> VfsResult<usize> {
        match self.kind {
            Kind::Null => Ok(0),
            Kind::Random => {
                crate::arch::random::fill(buf);
                Ok(buf.len())
            }
            Kind::Zero | Kind::Full => {
                buf.fill(0);
                Ok(buf.len())
            }
            // The terminal (`tty`); the syscall layer reads it through `tty::read` directly,
            // with O_NONBLOCK and EINTR, so this path only serves VFS-typed callers.
            Kind::Console => crate::tty::read(buf, false).map_err(|_| VfsError::Io),
        }
    }
    fn write_at(&self, _offset: u64, buf: &[u8]) -> VfsResult<usize> {
        match self.kind {
            Kind::Console => crate::tty::write(buf),
            Kind::Full if !buf.is_empty() => return Err(VfsError::NoSpace),
            _ => {}
        }
        Ok(buf.len())
    }
}

impl DiskNode {
    /// Whether pieces of these lengths at `offset` can go to the driver as they are: sector
    /// aligned, whole sectors, inside the disk.
    fn whole_sectors(&self, offset: u64, lens: impl Iterator<Item = usize>) -> Option<usize> {
        let mut len = 0usize;
        for l in lens {
            if !l.is_multiple_of(SECTOR_SIZE) {
                return None;
            }
            len = len.checked_add(l)?;
        }
        let end = offset.checked_add(len as u64)?;
        (offset.is_multiple_of(SECTOR_SIZE as u64) && len > 0 && end <= self.dev.size_bytes())
            .then_some(len)
    }

    /// Read or write the byte range [offset, offset + len) with sector-aligned requests.
    fn rw(
        &self,
        offset: u64,
        len: usize,
        mut op: impl FnMut(u64, usize, usize, &mut Vec<u8>) -> VfsResult<()>,
    ) -> VfsResult<usize> {
        let size = self.dev.size_bytes();
        if offset >= size {
            return Ok(0);
        }
        let len = len.min((size - offset) as usize);
        let mut done = 0;
        let mut bounce = Vec::new();
        while done < len {
            let at = offset + done as u64;
            let head = (at % SECTOR_SIZE as u64) as usize;
            let n = if head == 0 && len - done >= SECTOR_SIZE {
                (len - done) / SECTOR_SIZE * SECTOR_SIZE
            } else {
                (SECTOR_SIZE - head).min(len - done)
            };
            op(at / SECTOR_SIZE as u64, head, n, &mut bounce)?;
            done += n;
            let _ = &mut bounce;
        }
        Ok(len)
    }
}

impl Node for DiskNode {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn getattr(&self) -> VfsResult<Metadata> {
        Ok(meta(
            self.ino,
            FileType::BlockDevice,
            0o660,
            self.dev.size_bytes(),
            self.rdev,
        ))
    }
    fn setattr(&self, _attr: &vfs::SetAttr) -> VfsResult<Metadata> {
        self.getattr()
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> VfsResult<usize> {
        let dev = self.dev.clone();
        let base = offset;
        self.rw(offset, buf.len(), |sector, head, n, bounce| {
            let at = (sector * SECTOR_SIZE as u64 + head as u64 - base) as usize;
            if head == 0 && n % SECTOR_SIZE == 0 {
                // Sleeps until the disk is done when the caller's buffer cannot go away
                // meanwhile (`task::may_wait_away_reading`), else polls.
                dev.read_scatter_shared(sector, &mut [&mut buf[at..at + n]])
            } else {
                bounce.resize(SECTOR_SIZE, 0);
                dev.read_sectors(sector, bounce)?;
                buf[at..at + n].copy_from_slice(&bounce[head..head + n]);
                Ok(())
            }
        })
    }
    fn write_at(&self, offset: u64, buf: &[u8]) -> VfsResult<usize> {
        let dev = self.dev.clone();
        let base = offset;
        if offset >= dev.size_bytes() && !buf.is_empty() {
            return Err(VfsError::NoSpace);
        }
        self.rw(offset, buf.len(), |sector, head, n, bounce| {
            let at = (sector * SECTOR_SIZE as u64 + head as u64 - base) as usize;
            if head == 0 && n % SECTOR_SIZE == 0 {
                dev.write_sectors(sector, &buf[at..at + n])
            } else {
                bounce.resize(SECTOR_SIZE, 0);
                dev.read_sectors(sector, bounce)?;
                bounce[head..head + n].copy_from_slice(&buf[at..at + n]);
                dev.write_sectors(sector, bounce)
            }
        })
    }
    /// The user's pages straight from the disk, the whole range in one call to the request
    /// layer, which splits it into requests and keeps them in flight together (the `rawq`
    /// benchmark's full queue). A buffer that does not start on a page qualifies too (only
    /// its first and last pieces end inside a sector; `BlockDevice::read_scatter`). A range
    /// that does not start on a sector, or is not whole sectors, takes `read_at`'s path.
    fn read_scattered_at(&self, offset: u64, bufs: &mut [&mut [u8]]) -> Option<VfsResult<usize>> {
        let (len, _) = vfs::scatter_shape(bufs.iter().map(|b| b.len()))?;
        self.whole_sectors(offset, core::iter::once(len))?;
        let sector = offset / SECTOR_SIZE as u64;
        match self.dev.read_scatter(sector, bufs) {
            // Pieces this device cannot take as they are (too few per request): the range
            // itself was checked, so read it the other way.
            Err(VfsError::InvalidInput) => None,
            r => Some(r.map(|()| len)),
        }
    }
    /// As [`DiskNode::read_scattered_at`], for writes (`write_gather`: no copy either).
    fn write_gathered_at(&self, offset: u64, bufs: &[&[u8]]) -> Option<VfsResult<usize>> {
        let len = self.whole_sectors(offset, bufs.iter().map(|b| b.len()))?;
        let sector = offset / SECTOR_SIZE as u64;
        Some(self.dev.write_gather(&[(sector, bufs)]).map(|()| len))
    }
    fn fsync(&self, _data_only: bool) -> VfsResult<()> {
        self.dev.flush()
    }
}

/// The part of `text` at `offset` that fits `buf`.
pub(super) fn read_text(text: &[u8], offset: u64, buf: &mut [u8]) -> VfsResult<usize> {
    let Ok(start) = usize::try_from(offset) else {
        return Ok(0);
    };
    if start >= text.len() {
        return Ok(0);
    }
    let n = buf.len().min(text.len() - start);
    buf[..n].copy_from_slice(&text[start..start + n]);
    Ok(n)
}
