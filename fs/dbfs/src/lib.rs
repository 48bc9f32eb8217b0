//! dbfs: a POSIX file system whose superblock, inodes, directory entries, symlinks, xattrs and
//! file data all live in the [`kvdb`] copy-on-write B+tree store.
//!
//! Layer: below the kernel VFS and the host FUSE tool (both call the [`vfs`] traits), above a
//! [`kvdb::Db`] over a [`kvdb::Pager`] (the kernel's page-fault-driven disk window, a
//! `FilePager` on the host, a `MemPager` in tests). `no_std` + `alloc`, no `unsafe`, no globals:
//! two mounted [`DbFs`] values share nothing.
//!
//! # Entry points
//! - [`DbFs::mkfs`] formats a pager (page size, chunk size, label, uuid, root owner).
//! - [`DbFs::mount`] / [`DbFs::mount_checked`] open it: the superblock's magic, version, page
//!   size, chunk size and feature bits are checked and an image this code does not understand
//!   is refused ([`MountError`] says why; as a [`VfsError`] it is `InvalidInput`, or the
//!   store's error). Orphans left by a crash are freed at mount.
//! - The mounted value implements [`vfs::FileSystem`]; its nodes ([`DbNode`]) implement
//!   [`vfs::Node`]. [`DbFs::writeback_tick`] is the write-back timer (call it periodically).
//!   [`DbNode::fallocate`] is outside the vfs traits for now.
//! - [`DbFs::fsck`] checks the committed image (names vs cookies, link counts, parents,
//!   orphans, chunk placement and accounting, counters) and lists the problems it finds.
//! - Unmount = drop the last `Arc<DbFs>` (it commits the write-back cache; call
//!   [`vfs::FileSystem::sync`] first to see errors). [`DbFs::pager`] gives the pager back for
//!   inspection.
//!
//! # Key schema (see [`format`]; keys big-endian, record fields little-endian)
//! | bucket     | key                         | value                                          |
//! |------------|-----------------------------|------------------------------------------------|
//! | `meta`     | `"superblock"`              | magic, version, page size, chunk size, feature bits, uuid, next inode number, inode count, creation time, label |
//! | `inodes`   | ino                         | 104-byte [`Inode`]: type, perm, uid, gid, nlink, size, allocated bytes, rdev, a/m/ctime (s + ns), parent and next cookie (directories) |
//! | `names`    | dir ino ++ name             | cookie, ino, type (the name index: lookup)     |
//! | `cookies`  | dir ino ++ cookie           | ino, type, name (listing order: readdir)       |
//! | `data`     | ino ++ chunk index          | chunk bytes (absent: a hole, reads as zeros)   |
//! | `symlinks` | ino                         | target                                         |
//! | `xattrs`   | ino ++ name                 | value                                          |
//! | `orphans`  | ino                         | empty: unlinked while open, freed at last release or at the next mount |
//!
//! Readdir cookies: `0` is `.`, `1` is `..`, each entry gets the directory's next cookie
//! (`>= 2`, never reused in that directory), and `next_cookie` of an entry is its cookie + 1.
//! A listing resumes with a cursor seek to `(dir, cookie)`, so entries added or removed during a
//! listing never make others repeat or disappear (a renamed entry gets a new cookie; an
//! exchanged pair keeps its positions). Chunks of a file are adjacent keys, so a read of any
//! size is one cursor seek and `next` steps; no stored byte at or past a file's size is
//! non-zero (truncate cuts the last chunk), so growing a file never resurrects old data.
//!
//! # Transactions and durability contract
//! - Every metadata operation (create, mkdir, mknod, symlink, link, unlink, rmdir, rename,
//!   setattr/truncate, fallocate, set/removexattr) is exactly one kvdb write transaction that
//!   checks and updates together; inode numbers are allocated in it. It commits *deferred*
//!   ([`kvdb::Tx::commit_deferred`]): atomic and visible at once, but durable only at the next
//!   *barrier* (kvdb's `sync`: device flush, meta page, device flush), like ext4's journal
//!   commit. Barriers happen on `fsync` of any node (a file: its data and every commit before;
//!   a directory: its entries, so a new name is durable once the file *and* its directory
//!   were fsynced, as POSIX asks), on `sync`, on unmount, from [`DbFs::writeback_tick`] once
//!   the oldest commit not yet durable is [`WRITEBACK_SECS`] old, and inside kvdb when the
//!   pages waiting for one exceed its bound. **After a crash the store is exactly the state of
//!   the last completed barrier**: always consistent, every operation either wholly there or
//!   wholly absent, everything fsynced there, and at most about [`WRITEBACK_SECS`] (twice
//!   that for buffered data) of returned operations lost. [`DbFs::set_sync_metadata`]
//!   (`dirsync`) restores the old rule: every commit is durable when it returns.
//! - `write_at` goes to a write-back cache (per mount, in [`DbFs`]): whole chunks, merged with
//!   stored content for partial writes; reads see it. The cache is committed, as one
//!   transaction per flush, on `fsync`, on the last `release` of the node, on `sync`, when the
//!   dirty bytes reach the limit ([`DEFAULT_DIRTY_LIMIT`], [`DbFs::set_dirty_limit`]; the write
//!   that crosses it commits, so a write costs at most one transaction), on
//!   [`DbFs::writeback_tick`] when the oldest dirty data is older than [`WRITEBACK_SECS`], when
//!   a metadata operation touches the inode (it folds the buffered data into its own
//!   transaction), and when the `DbFs` is dropped (unmount). Closing a file that was only
//!   read commits nothing: its buffered atime waits for the timer or the next commit.
//!   Only the commits of `fsync` and `sync` are durable ones; the others are deferred like
//!   metadata operations. Concurrent `fsync`s share commits (see Locks). **Data is durable
//!   once `fsync` (or `sync`) returns**; data written but not yet flushed or not yet behind a
//!   barrier is lost by a crash, in whole flushes (a flush is atomic: the file's size, times
//!   and chunks commit together).
//! - Direct writes ([`DIRECT_WRITE_MIN`], [`DbFs::set_direct_write_min`]; on by default only
//!   when the pager's [`kvdb::Pager::direct_writes`] says so): a write whose whole chunks add
//!   up to the threshold stores them at once in one transaction of their own (committed like a
//!   metadata operation, folding the file's other buffered data), their pages written by the
//!   pager straight from the caller's buffer ([`kvdb::Bucket::put_direct`]); its partial end
//!   chunks then go through the cache. Cached chunks it replaces are dropped at its commit;
//!   until then buffered writes to the file wait (`State::direct_busy`). A crash may keep
//!   the whole chunks of such a write without its buffered ends.
//! - `atime` follows Linux `relatime` and is buffered like data ([`DbFs::set_noatime`] turns
//!   it off, e.g. for read-only media).
//! - A full store: kvdb keeps a reserve ([`kvdb::reserve_pages`], 1/64 of the store) that
//!   only deletions may use, so unlink, rmdir, rename over a name and shrinking truncates
//!   still commit when writes cannot; `statfs` reports it as free but not available. A flush
//!   that does not fit fails with `NoSpace` and changes nothing: the buffered data stays
//!   dirty and `fsync`, `sync` and the last close report `NoSpace` while it cannot commit. A
//!   write finding the cache at its limit retries the flush first and, if that fails, returns
//!   `NoSpace` without buffering anything. Unlinking or truncating the file drops its buffered
//!   data with it, so deleting is how space comes back.
//!
//! # Locks
//! Two locks, always taken in this order: kvdb's writer lock (held by the one write
//! transaction), then `DbFs::state` (the write-back cache, open counts, fsync waiters). On the
//! host they are blocking OS locks, in the kernel spin locks ([`kvdb::sync`]).
//! - A write transaction takes the writer lock, then `state` while the operation runs and its
//!   folded chunks are copied into the transaction; it releases `state` for the commit's I/O
//!   (page writes and the two device barriers) and takes it again, still holding the writer
//!   lock, to drop the folded cache entries ([`kvdb::Tx::commit_then`]). An entry written
//!   while its commit ran has a new generation and stays, dirty.
//! - Readers take `state` only to look at the cache and begin their read snapshot (O(1)), and
//!   copy from the store without it; readers of chunks still in the cache copy under it. So
//!   readers and buffered writers go on while a commit waits for the device.
//! - A small read (inside one chunk, at most `SMALL_READ_MAX` bytes) of a file with no
//!   buffered chunks, whose chunk location and size are remembered for the newest commit
//!   (`ChunkLocs`, `SnapshotInodes`), begins no read transaction: it copies under `state`
//!   and kvdb's snapshot lock ([`kvdb::Db::with_committed`]: no write transaction can begin
//!   meanwhile, so the snapshot's pages stay). Sequential 4 KiB reads walk the tree once per
//!   32 chunks per commit instead of once per call.
//! - `fsync` registers its inode as waiting, then waits for the writer lock; the commit that
//!   gets it folds every waiting inode (group commit), and a waiter whose data was committed
//!   meanwhile returns without a commit of its own.
//! - Directory operations (lookup, readdir, readlink, getxattr) take no dbfs lock at all,
//!   only a read snapshot; no lock is held while a readdir sink runs.
//!
//! # What needs the caller's identity (not checked here)
//! The vfs traits carry no credentials, so permission checks (search/write permission on
//! directories, sticky-directory deletion, who may chown/chmod/utimens, clearing set-id bits on
//! write by a non-owner) are the caller's (kernel VFS / FUSE adapter). dbfs applies the rules
//! that need no identity: setgid directories pass their group (and, to subdirectories, the
//! setgid bit) on, and chown of a non-directory clears set-user-ID and (if group-executable)
//! set-group-ID as Linux does.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod format;
mod fsck;
mod node;
mod txn;

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::fmt;

use kvdb::sync::Mutex;
use kvdb::{Db, Pager, Tx};
use vfs::{
    Clock, FileSystem, FileType, FsStats, Metadata, NodeRef, Timestamp, VfsError, VfsResult,
};

pub use format::{
    Inode, Superblock, DBFS_MAGIC, FORMAT_VERSION, MAX_FILE_SIZE, NAME_MAX, ROOT_INO,
};
pub use node::DbNode;

use format::{bucket, ino_key, pair_key, MAX_CHUNK_SIZE, MIN_CHUNK_SIZE, MIN_PAGE_SIZE};
use txn::Txn;

/// Default write-back limit: a write that brings the buffered bytes to this commits them.
pub const DEFAULT_DIRTY_LIMIT: usize = 16 << 20;
/// [`DbFs::writeback_tick`] commits buffered data older than this many seconds.
pub const WRITEBACK_SECS: i64 = 5;
/// Default data chunk size.
pub const DEFAULT_CHUNK_SIZE: u32 = 16 << 10;
/// Reads of at least this many bytes move whole stored chunks with [`kvdb::Pager::read_into`]
/// when the pager says that beats a copy (the kernel window: a device read straight into the
/// caller's buffer, like FAT32's direct I/O for large runs).
pub const DIRECT_READ_MIN: usize = 128 << 10;
/// Reads of at most this many bytes inside one chunk may copy from a remembered chunk location
/// ([`ChunkLocs`]) under the store's snapshot lock, without a read transaction.
pub(crate) const SMALL_READ_MAX: usize = 64 << 10;
/// Writes whose whole chunks add up to at least this many bytes store those chunks at once, in
/// one transaction, without the write-back cache, when the pager says its
/// [`kvdb::Pager::write_direct`] beats a copy (the kernel window: a device write straight from
/// the caller's buffer, like FAT32 overwriting in place). See [`DbFs::set_direct_write_min`].
pub const DIRECT_WRITE_MIN: usize = 128 << 10;
/// `statfs` size reported for a pager without a size limit (e.g. a growing host file).
pub const UNBOUNDED_REPORTED_BYTES: u64 = 1 << 40;

/// The one conversion from kvdb errors to the vfs error.
pub(crate) fn kv(e: kvdb::Error) -> VfsError {
    match e {
        kvdb::Error::Io | kvdb::Error::Poisoned => VfsError::Io,
        kvdb::Error::Corrupted(_) => VfsError::Corrupted,
        kvdb::Error::NoSpace => VfsError::NoSpace,
        kvdb::Error::KeyTooLarge => VfsError::NameTooLong,
        kvdb::Error::ValueTooLarge => VfsError::FileTooLarge,
        kvdb::Error::TxReadOnly => VfsError::ReadOnly,
        kvdb::Error::InvalidOptions => VfsError::InvalidInput,
        // Our buckets exist by construction: their absence or a key of the wrong kind is
        // damage.
        kvdb::Error::BucketExists
        | kvdb::Error::BucketNotFound
        | kvdb::Error::IncompatibleValue => VfsError::Corrupted,
    }
}

/// Parameters of [`DbFs::mkfs`], recorded in the superblock.
#[derive(Clone, Debug)]
pub struct MkfsOptions {
    /// kvdb page size: a power of two in 4 KiB..=64 KiB.
    pub page_size: usize,
    /// Bytes per data chunk: a power of two in 512..=1 MiB.
    pub chunk_size: u32,
    /// Volume label, at most 64 bytes.
    pub label: String,
    /// Volume uuid (the caller supplies randomness; no_std has none).
    pub uuid: [u8; 16],
    pub root_perm: u32,
    pub root_uid: u32,
    pub root_gid: u32,
    /// Creation time, and the root directory's times.
    pub time: Timestamp,
}

impl Default for MkfsOptions {
    fn default() -> Self {
        MkfsOptions {
            page_size: 4096,
            chunk_size: DEFAULT_CHUNK_SIZE,
            label: String::new(),
            uuid: [0; 16],
            root_perm: 0o755,
            root_uid: 0,
            root_gid: 0,
            time: Timestamp::default(),
        }
    }
}

/// Why [`DbFs::mount_checked`] refused an image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MountError {
    /// The kvdb store could not be opened (not a kvdb image, truncated, corrupt, I/O).
    Store(kvdb::Error),
    /// A kvdb store without a dbfs superblock.
    NotDbfs,
    /// A dbfs format version this code does not know.
    UnsupportedVersion(u32),
    /// Feature bits this code does not know.
    UnknownFeatures(u32),
    /// The superblock's page size disagrees with the store's.
    PageSizeMismatch { superblock: u32, store: usize },
    /// A chunk size outside 512..=1 MiB or not a power of two.
    BadChunkSize(u32),
    /// A bucket or the root directory is missing or damaged.
    Damaged(&'static str),
}

impl fmt::Display for MountError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MountError::Store(e) => write!(f, "cannot open the kvdb store: {e}"),
            MountError::NotDbfs => write!(f, "not a dbfs image (no dbfs superblock)"),
            MountError::UnsupportedVersion(v) => {
                write!(f, "dbfs format version {v} is not supported (this build reads version {FORMAT_VERSION})")
            }
            MountError::UnknownFeatures(b) => write!(f, "image uses unknown dbfs features {b:#x}"),
            MountError::PageSizeMismatch { superblock, store } => {
                write!(
                    f,
                    "superblock page size {superblock} differs from the store's {store}"
                )
            }
            MountError::BadChunkSize(c) => write!(f, "unsupported chunk size {c}"),
            MountError::Damaged(what) => write!(f, "damaged image: {what}"),
        }
    }
}

impl From<MountError> for VfsError {
    fn from(e: MountError) -> VfsError {
        match e {
            MountError::Store(e) => kv(e),
            MountError::Damaged(_) => VfsError::Corrupted,
            _ => VfsError::InvalidInput,
        }
    }
}

/// Buffered state of one inode in the write-back cache.
pub(crate) struct Pending {
    /// The record as the caller sees it (size, times updated by buffered writes).
    pub inode: Inode,
    /// The size in the store (chunks at or past it are absent or zero there).
    pub stored_size: u64,
    /// Dirty chunks: index -> bytes (at most a chunk; past its length the chunk reads zeros).
    pub chunks: BTreeMap<u64, Vec<u8>>,
    pub bytes: usize,
    /// Bumped by every change to the entry, so a commit that folded it can tell whether it
    /// changed while the commit ran (then the entry stays, still dirty).
    pub gen: u64,
}

pub(crate) struct WriteBack {
    pub pending: BTreeMap<u64, Pending>,
    pub dirty_bytes: usize,
    pub limit: usize,
    /// When the oldest buffered change was made.
    pub since: Option<Timestamp>,
}

impl WriteBack {
    /// Drop the buffered chunks `[first, end)` of `ino` (a direct write stored newer ones).
    fn drop_chunks(&mut self, ino: u64, first: u64, end: u64) {
        let Some(p) = self.pending.get_mut(&ino) else {
            return;
        };
        let gone: Vec<u64> = p.chunks.range(first..end).map(|(&i, _)| i).collect();
        for idx in gone {
            if let Some(buf) = p.chunks.remove(&idx) {
                p.bytes = p.bytes.saturating_sub(buf.len());
                self.dirty_bytes = self.dirty_bytes.saturating_sub(buf.len());
            }
        }
    }

    fn discard(&mut self, ino: u64) {
        if let Some(p) = self.pending.remove(&ino) {
            self.dirty_bytes = self.dirty_bytes.saturating_sub(p.bytes);
        }
        if self.pending.is_empty() {
            self.since = None;
        }
    }
}

/// Everything `DbFs::state` guards.
pub(crate) struct State {
    pub wb: WriteBack,
    /// Open counts per inode (`Node::open` / `release`).
    pub open: BTreeMap<u64, u32>,
    /// Reads do not update atime (read-only media, benchmarks).
    pub noatime: bool,
    /// Inodes whose `fsync` is waiting for the write transaction: whichever commit runs next
    /// folds them all (group commit), and each waiter then finds its data committed.
    pub fsync_wanted: BTreeMap<u64, u32>,
    /// Inode records of recent read snapshots, for the read path.
    pub icache: SnapshotInodes,
    /// Where recently read chunks lie in recent snapshots, for small reads (see [`ChunkLocs`]).
    pub chunk_locs: ChunkLocs,
    /// Large writes store their whole chunks directly when those add up to this many bytes
    /// (`usize::MAX`: never).
    pub direct_write_min: usize,
    /// The direct write whose transaction is running, if any: (its number, ino, first chunk,
    /// end chunk). Buffered writes to that inode wait for it, and reads of it leave atime
    /// alone, so nothing builds on the contents it is replacing; its commit drops the cached
    /// chunks it replaced (see [`DbFs::write_whole_chunks`]).
    pub direct_busy: Option<DirectWrite>,
    /// Numbers the direct writes, so a failed one clears only its own `direct_busy`.
    pub direct_seq: u64,
    /// Inodes whose stored record the transaction now committing changes; set while its I/O
    /// runs without `state`, cleared once the new store is published. A write-back entry is
    /// never created for them meanwhile: it would start from the record that commit replaces
    /// (a read snapshot still shows it) and a later flush would write that back.
    pub committing: Vec<u64>,
    /// Every commit is durable (`dirsync`): the behaviour before deferred commits.
    pub sync_metadata: bool,
    /// When the oldest deferred commit not yet durable was made (the write-back timer makes
    /// it durable [`WRITEBACK_SECS`] later).
    pub unsynced_since: Option<Timestamp>,
}

impl State {
    /// A transaction that changes `ino`'s stored record is running or committing (a direct
    /// write to it, or any commit of it): nothing may be built on the record it replaces.
    fn in_flight(&self, ino: u64) -> bool {
        self.direct_busy.is_some_and(|d| d.ino == ino) || self.committing.contains(&ino)
    }
}

/// See [`State::direct_busy`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DirectWrite {
    pub seq: u64,
    pub ino: u64,
    pub first: u64,
    pub end: u64,
}

/// A few inode records as stored in given snapshots: `(txid, ino) -> record`. A snapshot
/// never changes, so an entry is right for as long as its txid is the one a reader sees; a
/// sequential reader of one file then looks its inode up once per commit, not once per call.
#[derive(Default)]
pub(crate) struct SnapshotInodes {
    slots: [(u64, u64, Option<Inode>); 8],
    next: usize,
}

impl SnapshotInodes {
    fn get(&self, txid: u64, ino: u64) -> Option<&Inode> {
        self.slots
            .iter()
            .find(|s| s.0 == txid && s.1 == ino)
            .and_then(|s| s.2.as_ref())
    }
    fn put(&mut self, txid: u64, ino: u64, inode: Inode) {
        self.slots[self.next] = (txid, ino, Some(inode));
        self.next = (self.next + 1) % self.slots.len();
    }
}

/// Chunks one [`ChunkLocs`] run remembers: a sequential 4 KiB reader walks the tree once per
/// this many chunks (per commit).
const CHUNK_RUN: usize = 32;

/// Where a few runs of consecutive stored chunks lie, as committed in given snapshots:
/// `(txid, ino)` -> chunk `first + k` is an overflow value of `locs[k].1` bytes at store offset
/// `locs[k].0`. Like [`SnapshotInodes`], a run is right for as long as its txid is the newest
/// commit, so a small read of a remembered chunk copies it under [`kvdb::Db::with_committed`]
/// with neither a read transaction nor a tree walk ([`DbFs::read_remembered`]). Runs are only
/// walked for readers that look sequential (or re-read a chunk), so random reads pay nothing.
#[derive(Default)]
pub(crate) struct ChunkLocs {
    slots: [ChunkRun; 4],
    next: usize,
}

#[derive(Default, Clone, Copy)]
struct ChunkRun {
    /// `ino` 0 (no inode has it): an empty slot.
    ino: u64,
    txid: u64,
    first: u64,
    len: usize,
    locs: [(u64, u32); CHUNK_RUN],
    /// The last chunk of `ino` a small read did not find here (or the last of the run).
    last_miss: u64,
}

impl ChunkLocs {
    fn get(&self, txid: u64, ino: u64, idx: u64) -> Option<(u64, u32)> {
        let r = self.slots.iter().find(|r| r.ino == ino && r.txid == txid)?;
        let k = usize::try_from(idx.checked_sub(r.first)?).ok()?;
        if k < r.len {
            Some(r.locs[k])
        } else {
            None
        }
    }

    /// Whether a run of `ino` (of any snapshot) holds chunk `idx`.
    fn covers(&self, ino: u64, idx: u64) -> bool {
        self.slots
            .iter()
            .any(|r| r.ino == ino && idx >= r.first && idx - r.first < r.len as u64)
    }

    /// A small read of chunk `idx` of `ino` found no location: whether the reader looks
    /// sequential (this chunk or the next one after the last miss), so a run is worth walking.
    fn missed(&mut self, ino: u64, idx: u64) -> bool {
        if let Some(r) = self.slots.iter_mut().find(|r| r.ino == ino) {
            let sequential = idx == r.last_miss || Some(idx) == r.last_miss.checked_add(1);
            r.last_miss = idx;
            return sequential;
        }
        self.slots[self.next] = ChunkRun {
            ino,
            last_miss: idx,
            ..ChunkRun::default()
        };
        self.next = (self.next + 1) % self.slots.len();
        false
    }

    fn put(&mut self, txid: u64, ino: u64, first: u64, locs: &[(u64, u32)]) {
        let at = match self.slots.iter().position(|r| r.ino == ino) {
            Some(at) => at,
            None => {
                let at = self.next;
                self.next = (self.next + 1) % self.slots.len();
                at
            }
        };
        let r = &mut self.slots[at];
        let len = locs.len().min(CHUNK_RUN);
        *r = ChunkRun {
            ino,
            txid,
            first,
            len,
            last_miss: first + len.saturating_sub(1) as u64,
            ..ChunkRun::default()
        };
        r.locs[..len].copy_from_slice(&locs[..len]);
    }
}

/// Why [`DbFs::flush`] runs: it decides what the commit folds and whether it is still needed
/// once the write transaction is ours.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Flush {
    /// `fsync` of one inode: its buffered data, plus every other inode whose fsync waits.
    Inode(u64),
    /// Everything buffered, if anything is (timer, unmount).
    All,
    /// Everything buffered, and commit even if nothing is (`sync`: makes freed pages reusable).
    AllAlways,
    /// Everything buffered, if the dirty limit is still reached (a writer crossed it).
    Limit,
}

/// A mounted dbfs.
pub struct DbFs<P: Pager> {
    db: Db<P>,
    clock: Arc<dyn Clock>,
    params: Superblock,
    chunk_size: u64,
    state: Mutex<State>,
    me: Weak<DbFs<P>>,
}

impl<P: Pager> DbFs<P> {
    /// Format `pager` as an empty dbfs and give it back (mount it with [`DbFs::mount`]).
    pub fn mkfs(pager: P, opts: MkfsOptions) -> VfsResult<P> {
        if !opts.page_size.is_power_of_two() || !(MIN_PAGE_SIZE..=65536).contains(&opts.page_size) {
            return Err(VfsError::InvalidInput);
        }
        if !valid_chunk_size(opts.chunk_size) || opts.label.len() > format::LABEL_MAX {
            return Err(VfsError::InvalidInput);
        }
        let db = Db::create(
            pager,
            kvdb::Options {
                page_size: opts.page_size,
            },
        )
        .map_err(kv)?;
        {
            let tx = db.begin_write().map_err(kv)?;
            for name in bucket::ALL {
                tx.create_bucket(name).map_err(kv)?;
            }
            let sb = Superblock {
                version: FORMAT_VERSION,
                page_size: opts.page_size as u32,
                chunk_size: opts.chunk_size,
                incompat: 0,
                uuid: opts.uuid,
                label: opts.label.clone(),
                next_ino: ROOT_INO + 1,
                inode_count: 1,
                created: opts.time,
            };
            tx.get_bucket(bucket::META)
                .map_err(kv)?
                .put(format::SUPERBLOCK_KEY, &sb.encode())
                .map_err(kv)?;
            let root = Inode {
                ftype: FileType::Directory,
                perm: opts.root_perm & 0o7777,
                uid: opts.root_uid,
                gid: opts.root_gid,
                nlink: 2,
                size: 0,
                alloc_bytes: 0,
                rdev: 0,
                atime: opts.time,
                mtime: opts.time,
                ctime: opts.time,
                parent: ROOT_INO,
                next_cookie: 2,
            };
            tx.get_bucket(bucket::INODES)
                .map_err(kv)?
                .put(&ino_key(ROOT_INO), &root.encode())
                .map_err(kv)?;
            tx.commit().map_err(kv)?;
        }
        Ok(db.into_pager())
    }

    /// Mount a dbfs image; see [`DbFs::mount_checked`] for why it may be refused.
    pub fn mount(pager: P, clock: Arc<dyn Clock>) -> VfsResult<Arc<DbFs<P>>> {
        Self::mount_checked(pager, clock).map_err(VfsError::from)
    }

    /// Mount, saying precisely why an image is refused. Frees orphans a crash left behind
    /// (best effort: a read-only pager keeps them).
    pub fn mount_checked(pager: P, clock: Arc<dyn Clock>) -> Result<Arc<DbFs<P>>, MountError> {
        let db = Db::open(pager).map_err(MountError::Store)?;
        let params = Self::check_image(&db)?;
        let chunk_size = u64::from(params.chunk_size);
        let db_direct_writes = db.pager().direct_writes();
        let fs = Arc::new_cyclic(|me| DbFs {
            db,
            clock,
            params,
            chunk_size,
            state: Mutex::new(State {
                wb: WriteBack {
                    pending: BTreeMap::new(),
                    dirty_bytes: 0,
                    limit: DEFAULT_DIRTY_LIMIT,
                    since: None,
                },
                open: BTreeMap::new(),
                noatime: false,
                fsync_wanted: BTreeMap::new(),
                icache: SnapshotInodes::default(),
                chunk_locs: ChunkLocs::default(),
                direct_write_min: if db_direct_writes {
                    DIRECT_WRITE_MIN
                } else {
                    usize::MAX
                },
                direct_busy: None,
                committing: Vec::new(),
                direct_seq: 0,
                sync_metadata: false,
                unsynced_since: None,
            }),
            me: me.clone(),
        });
        let _ = fs.free_orphans();
        Ok(fs)
    }

    fn check_image(db: &Db<P>) -> Result<Superblock, MountError> {
        let tx = db.begin_read().map_err(MountError::Store)?;
        let meta = match tx.get_bucket(bucket::META) {
            Ok(b) => b,
            Err(kvdb::Error::BucketNotFound) | Err(kvdb::Error::IncompatibleValue) => {
                return Err(MountError::NotDbfs)
            }
            Err(e) => return Err(MountError::Store(e)),
        };
        let raw = meta
            .get(format::SUPERBLOCK_KEY)
            .map_err(MountError::Store)?
            .ok_or(MountError::NotDbfs)?;
        let sb = Superblock::decode(&raw).ok_or(MountError::NotDbfs)?;
        if sb.version != FORMAT_VERSION {
            return Err(MountError::UnsupportedVersion(sb.version));
        }
        if sb.incompat != 0 {
            return Err(MountError::UnknownFeatures(sb.incompat));
        }
        if sb.page_size as usize != db.page_size() {
            return Err(MountError::PageSizeMismatch {
                superblock: sb.page_size,
                store: db.page_size(),
            });
        }
        if !valid_chunk_size(sb.chunk_size) {
            return Err(MountError::BadChunkSize(sb.chunk_size));
        }
        for name in bucket::ALL {
            if tx.get_bucket(name).is_err() {
                return Err(MountError::Damaged("a dbfs bucket is missing"));
            }
        }
        let root = tx
            .get_bucket(bucket::INODES)
            .and_then(|b| b.get(&ino_key(ROOT_INO)))
            .map_err(MountError::Store)?
            .ok_or(MountError::Damaged("no root directory"))?;
        match Inode::decode(&root) {
            Ok(i) if i.ftype == FileType::Directory => Ok(sb),
            _ => Err(MountError::Damaged("root directory record")),
        }
    }

    fn free_orphans(&self) -> VfsResult<()> {
        let orphans: Vec<u64> = {
            let tx = self.db.begin_read().map_err(kv)?;
            let b = tx.get_bucket(bucket::ORPHANS).map_err(kv)?;
            let mut c = b.cursor();
            let mut out = Vec::new();
            let mut e = c.first().map_err(kv)?;
            while let Some(entry) = e {
                out.extend(format::be_u64(entry.key()));
                e = c.next().map_err(kv)?;
            }
            out
        };
        if orphans.is_empty() {
            return Ok(());
        }
        self.write_op(|t| {
            for ino in orphans {
                match t.inode(ino) {
                    Ok(i) if i.nlink == 0 => t.free_inode(ino)?,
                    Ok(_) => {
                        t.bucket(bucket::ORPHANS)?
                            .delete(&ino_key(ino))
                            .map_err(kv)?;
                    }
                    Err(VfsError::NotFound) => {
                        t.bucket(bucket::ORPHANS)?
                            .delete(&ino_key(ino))
                            .map_err(kv)?;
                    }
                    Err(e) => return Err(e),
                }
            }
            Ok(())
        })
    }

    /// The superblock as mounted (label, uuid, page and chunk size; counters as of mount).
    pub fn superblock(&self) -> &Superblock {
        &self.params
    }

    /// Bytes per data chunk.
    pub fn chunk_size(&self) -> u32 {
        self.params.chunk_size
    }

    /// The store's pager (counters, or the image of a `MemPager`).
    pub fn pager(&self) -> &P {
        self.db.pager()
    }

    /// Check the committed image's consistency (one read snapshot; buffered writes are not
    /// looked at). Returns the problems found; empty means consistent.
    pub fn fsck(&self) -> VfsResult<Vec<String>> {
        let tx = self.db.begin_read().map_err(kv)?;
        fsck::check(&tx, self.chunk_size)
    }

    /// Set the write-back limit in bytes (0: every write commits at once).
    pub fn set_dirty_limit(&self, bytes: usize) {
        self.state.lock().wb.limit = bytes;
    }

    /// `noatime`: reads stop updating atime (for read-only media, where buffered atime updates
    /// could never be committed). Default: Linux `relatime`.
    pub fn set_noatime(&self, noatime: bool) {
        self.state.lock().noatime = noatime;
    }

    /// Store the whole chunks of writes whose whole chunks add up to at least `bytes` directly
    /// (one transaction per write, pages written by [`kvdb::Pager::write_direct`], no
    /// write-back cache); `None` buffers every write. The default is [`DIRECT_WRITE_MIN`] when
    /// the pager's [`kvdb::Pager::direct_writes`] says so, else `None`.
    pub fn set_direct_write_min(&self, bytes: Option<usize>) {
        self.state.lock().direct_write_min = bytes.map_or(usize::MAX, |b| b.max(1));
    }

    /// Bytes buffered in the write-back cache.
    pub fn dirty_bytes(&self) -> usize {
        self.state.lock().wb.dirty_bytes
    }

    /// Force a barrier once more than `bytes` of store pages were written, or are held, since
    /// the last one ([`kvdb::Db::set_barrier_bound`]; default
    /// [`kvdb::DEFAULT_BARRIER_BOUND_BYTES`]). The kernel keeps the default: those pages are
    /// dirty frames of its disk window. The host tool raises it: its pages are in the host's
    /// page cache, and a bound is only how far the image may grow before a barrier frees
    /// the held pages.
    pub fn set_barrier_bound(&self, bytes: u64) {
        let ps = self.db.page_size() as u64;
        self.db.set_barrier_bound(bytes.div_ceil(ps));
    }

    /// Make every commit durable when it returns (`dirsync`), as dbfs did before commits were
    /// deferred: each metadata operation and flush then pays a barrier. Default: off.
    pub fn set_sync_metadata(&self, on: bool) {
        self.state.lock().sync_metadata = on;
        if on {
            // What was committed before is made durable now, so "every returned operation is
            // durable" holds from here on.
            let _ = self.barrier();
        }
    }

    /// The write-back timer: commit buffered data older than [`WRITEBACK_SECS`], and make
    /// commits older than that durable (one barrier).
    pub fn writeback_tick(&self) -> VfsResult<()> {
        let now = self.clock.now();
        let due = self
            .state
            .lock()
            .wb
            .since
            .is_some_and(|t| now.sec.saturating_sub(t.sec) >= WRITEBACK_SECS);
        if due {
            // The flushed data is already old: it becomes durable with it. A flush that fails
            // (e.g. the store is full) must not keep what did commit from becoming durable.
            let flushed = self.flush(Flush::All);
            self.barrier()?;
            return flushed;
        }
        if self.db.sync_pending() {
            let since = *self.state.lock().unsynced_since.get_or_insert(now);
            if now.sec.saturating_sub(since.sec) >= WRITEBACK_SECS {
                return self.barrier();
            }
        } else {
            self.state.lock().unsynced_since = None;
        }
        Ok(())
    }

    /// Make every commit so far durable (kvdb's barrier; nothing to do when none is pending).
    fn barrier(&self) -> VfsResult<()> {
        // Cleared first: a commit made meanwhile sets it again, and one the barrier covers
        // leaves it stale, which the timer sees (nothing pending) and clears.
        self.state.lock().unsynced_since = None;
        self.db.sync().map_err(kv)?;
        Ok(())
    }

    /// Run `f` as one write transaction, then drop the write-back entries it folded (those
    /// that did not change meanwhile). On any error nothing is committed and the cache is
    /// untouched.
    ///
    /// Locking: kvdb's writer lock first (`begin_write`), then `state` while `f` runs and the
    /// transaction's pages are built; `state` is released for the commit itself (page writes
    /// and the two device flushes), so readers and buffered writers go on meanwhile. Readers see
    /// the folded entries until they are dropped, and an entry's bytes equal what the commit
    /// stores, so the old snapshot + cache and the new snapshot + cache read the same.
    pub(crate) fn write_op<R>(
        &self,
        f: impl FnOnce(&mut Txn<'_, '_, P>) -> VfsResult<R>,
    ) -> VfsResult<R> {
        let tx = self.db.begin_write().map_err(kv)?;
        self.run_txn(tx, f)
    }

    /// The body of [`DbFs::write_op`] for a write transaction the caller already began: a
    /// deferred commit (durable at the next barrier) unless `sync_metadata` is set.
    fn run_txn<R>(
        &self,
        tx: Tx<'_, P>,
        f: impl FnOnce(&mut Txn<'_, '_, P>) -> VfsResult<R>,
    ) -> VfsResult<R> {
        self.run_txn_as(tx, false, f)
    }

    /// [`DbFs::run_txn`], durable when it returns if `durable` (fsync, sync).
    fn run_txn_as<R>(
        &self,
        tx: Tx<'_, P>,
        durable: bool,
        f: impl FnOnce(&mut Txn<'_, '_, P>) -> VfsResult<R>,
    ) -> VfsResult<R> {
        let now = self.clock.now();
        let (r, folded, direct, durable) = {
            let mut st = self.state.lock();
            let mut t = Txn::new(&tx, self.chunk_size, &st, now);
            let r = f(&mut t)?;
            t.finish()?;
            // (ino, generation folded, size the commit stores)
            let folded: Vec<(u64, u64, Option<u64>)> = t
                .folded
                .iter()
                .filter_map(|&ino| {
                    st.wb
                        .pending
                        .get(&ino)
                        .map(|p| (ino, p.gen, t.cached_size(ino)))
                })
                .collect();
            let changed = t.changed_inodes();
            st.committing = changed;
            (r, folded, st.direct_busy, durable || st.sync_metadata)
        };
        // The folded entries go while kvdb's writer lock is still held, so the next write
        // transaction never finds an entry whose data this commit already stored (it would
        // count those chunks as new).
        let after = || {
            let mut st = self.state.lock();
            st.committing.clear();
            // A direct write's chunks are stored now: the cached ones it replaced go, and
            // buffered writes to the file may go on.
            if let Some(d) = direct {
                st.wb.drop_chunks(d.ino, d.first, d.end);
                if let Some(p) = st.wb.pending.get_mut(&d.ino) {
                    p.inode.size = p.inode.size.max(d.end.saturating_mul(self.chunk_size));
                }
                st.direct_busy = None;
            }
            for (ino, gen, size) in folded {
                match st.wb.pending.get_mut(&ino) {
                    Some(p) if p.gen == gen => st.wb.discard(ino),
                    Some(p) => {
                        // Written while the commit ran: stays dirty; the store now holds the
                        // folded size.
                        if let Some(size) = size {
                            p.stored_size = size;
                        }
                    }
                    None => {}
                }
            }
        };
        let committed = if durable {
            tx.commit_then(after)
        } else {
            tx.commit_deferred_then(after)
        };
        if let Err(e) = committed {
            // Nothing was published: the stored records are the old ones again.
            self.state.lock().committing.clear();
            return Err(kv(e));
        }
        if !durable {
            self.state.lock().unsynced_since.get_or_insert(now);
        }
        Ok(r)
    }

    /// Commit buffered writes (see [`Flush`]) in one transaction. Waits for the write
    /// transaction; a commit that ran meanwhile may have done the work already.
    pub(crate) fn flush(&self, why: Flush) -> VfsResult<()> {
        {
            let mut st = self.state.lock();
            match why {
                Flush::Inode(ino) => {
                    if !st.wb.pending.contains_key(&ino) {
                        // Nothing buffered: what was committed (data, or the entries of a
                        // directory) becomes durable.
                        drop(st);
                        return self.barrier();
                    }
                    *st.fsync_wanted.entry(ino).or_insert(0) += 1;
                }
                Flush::All | Flush::Limit if st.wb.pending.is_empty() => return Ok(()),
                _ => {}
            }
        }
        // A durable flush begins with the barrier its deferred predecessors need anyway, so
        // pages they freed are reused now (see `Db::begin_write_durable`).
        let durable = matches!(why, Flush::Inode(_) | Flush::AllAlways);
        let tx = if durable {
            self.db.begin_write_durable()
        } else {
            self.db.begin_write()
        };
        let mut st = self.state.lock();
        if let Flush::Inode(ino) = why {
            if let Some(n) = st.fsync_wanted.get_mut(&ino) {
                *n -= 1;
                if *n == 0 {
                    st.fsync_wanted.remove(&ino);
                }
            }
        }
        let tx = tx.map_err(kv)?;
        let inos: Vec<u64> = match why {
            Flush::Inode(ino) => {
                if !st.wb.pending.contains_key(&ino) {
                    // Committed by the transaction we waited for; maybe not durably.
                    drop(st);
                    drop(tx);
                    return self.barrier();
                }
                let mut v: Vec<u64> = st
                    .fsync_wanted
                    .keys()
                    .copied()
                    .filter(|i| st.wb.pending.contains_key(i))
                    .collect();
                if !v.contains(&ino) {
                    v.push(ino);
                }
                v
            }
            Flush::Limit if st.wb.dirty_bytes < st.wb.limit => return Ok(()),
            _ => st.wb.pending.keys().copied().collect(),
        };
        if inos.is_empty() && why != Flush::AllAlways {
            return Ok(());
        }
        drop(st);
        // fsync and sync are durability points; the timer, the dirty limit and unmount are
        // not (unmount's barrier follows in `drop`).
        self.run_txn_as(tx, durable, |t| {
            for ino in inos {
                match t.inode(ino) {
                    // Freed by a metadata operation after we looked: nothing left to write.
                    Ok(_) | Err(VfsError::NotFound) => {}
                    Err(e) => return Err(e),
                }
            }
            Ok(())
        })
    }

    /// The write-back entry of `ino`, created from the stored record if absent.
    fn pending_mut<'s>(&self, st: &'s mut State, ino: u64) -> VfsResult<&'s mut Pending> {
        let now = self.clock.now();
        match st.wb.pending.entry(ino) {
            alloc::collections::btree_map::Entry::Occupied(o) => Ok(o.into_mut()),
            alloc::collections::btree_map::Entry::Vacant(v) => {
                let inode = {
                    let tx = self.db.begin_read().map_err(kv)?;
                    read_inode(&tx, ino)?
                };
                st.wb.since.get_or_insert(now);
                Ok(v.insert(Pending {
                    inode,
                    stored_size: inode.size,
                    chunks: BTreeMap::new(),
                    bytes: 0,
                    gen: 0,
                }))
            }
        }
    }

    /// The record of `ino` as callers see it (buffered changes included).
    pub(crate) fn inode(&self, ino: u64) -> VfsResult<Inode> {
        let st = self.state.lock();
        if let Some(p) = st.wb.pending.get(&ino) {
            // st_blocks counts buffered chunks past the stored size too (what they will take).
            let mut i = p.inode;
            let cs = self.chunk_size;
            let first_new = p.stored_size.div_ceil(cs);
            i.alloc_bytes = i.alloc_bytes.saturating_add(
                p.chunks
                    .range(first_new..)
                    .map(|(_, b)| format::footprint(b.len()))
                    .sum::<u64>(),
            );
            return Ok(i);
        }
        let tx = self.db.begin_read().map_err(kv)?;
        drop(st);
        read_inode(&tx, ino)
    }

    pub(crate) fn metadata(&self, ino: u64, i: &Inode) -> Metadata {
        Metadata {
            ino,
            ftype: i.ftype,
            perm: i.perm,
            nlink: i.nlink,
            uid: i.uid,
            gid: i.gid,
            size: i.size,
            blocks: i.alloc_bytes / 512,
            blksize: self.params.chunk_size,
            rdev: i.rdev,
            atime: i.atime,
            mtime: i.mtime,
            ctime: i.ctime,
        }
    }

    /// Begin a read transaction (for readers that do not care about the write-back cache).
    pub(crate) fn begin_read(&self) -> VfsResult<Tx<'_, P>> {
        self.db.begin_read().map_err(kv)
    }

    /// `read_at` of a regular file: one read transaction, one cursor walk over the chunks,
    /// bytes copied once from the store's page into `buf`; buffered chunks overlay it.
    pub(crate) fn read_file(&self, ino: u64, offset: u64, buf: &mut [u8]) -> VfsResult<usize> {
        let mut st = self.state.lock();
        // Not while a direct write to the file commits (its entry would be built on the
        // record that write replaces).
        let atime = !st.noatime && !buf.is_empty() && !st.in_flight(ino);
        let mut walk = false;
        if let Some(r) = self.read_remembered(&mut st, ino, offset, buf, atime, &mut walk) {
            let (n, due) = r?;
            // As below: an inode read from the store gets its relatime update buffered. (A
            // buffered record is not looked at by reads.)
            if let Some(now) = due {
                let p = self.pending_mut(&mut st, ino)?;
                if relatime_due(&p.inode, now) {
                    p.inode.atime = now;
                    p.gen += 1;
                }
            }
            return Ok(n);
        }
        self.read_stored(st, ino, offset, buf, atime, walk)
    }

    /// [`DbFs::read_file`] into the pieces of `bufs` (a scattered read: the kernel passes the
    /// user's pages, and the bytes go there straight from the store's pages or the disk,
    /// without a bounce buffer). Used for reads of at least [`DIRECT_READ_MIN`] bytes; `None`
    /// for smaller ones (their fast path wants one slice: the caller joins the pieces).
    pub(crate) fn read_scattered(
        &self,
        ino: u64,
        offset: u64,
        bufs: &mut [&mut [u8]],
    ) -> Option<VfsResult<usize>> {
        let mut out = Pieces::new(bufs);
        if out.len() < DIRECT_READ_MIN {
            return None;
        }
        let st = self.state.lock();
        let atime = !st.noatime && !st.in_flight(ino);
        Some(self.read_stored(st, ino, offset, &mut out, atime, false))
    }

    /// The part of [`DbFs::read_file`] after its small-read fast path.
    fn read_stored<O: Out + ?Sized>(
        &self,
        mut st: kvdb::sync::MutexGuard<'_, State>,
        ino: u64,
        offset: u64,
        buf: &mut O,
        atime: bool,
        walk: bool,
    ) -> VfsResult<usize> {
        let now = self.clock.now();
        // A cache entry without chunks (only a buffered atime) leaves the store authoritative
        // for the data: read it like an uncached file, without holding `state`.
        if let Some(p) = st.wb.pending.get(&ino).filter(|p| p.chunks.is_empty()) {
            let size = p.inode.size;
            let tx = self.db.begin_read().map_err(kv)?;
            drop(st);
            let n = clamp_len(size, offset, buf.len());
            if n > 0 {
                read_chunks(&tx, ino, self.chunk_size, offset, buf, n)?;
                self.remember_chunks(&tx, ino, offset, n, walk);
            }
            return Ok(n);
        }
        if let Some(p) = st.wb.pending.get(&ino) {
            let n = clamp_len(p.inode.size, offset, buf.len());
            let out = buf;
            if n > 0 {
                if offset < p.stored_size {
                    let tx = self.db.begin_read().map_err(kv)?;
                    read_chunks(&tx, ino, self.chunk_size, offset, out, n)?;
                } else {
                    out.zero(0, n);
                }
                overlay(p, self.chunk_size, offset, out, n);
            }
            if atime && relatime_due(&p.inode, now) {
                if let Some(p) = st.wb.pending.get_mut(&ino) {
                    p.inode.atime = now;
                    p.gen += 1;
                }
            }
            return Ok(n);
        }
        let tx = self.db.begin_read().map_err(kv)?;
        let cached = st.icache.get(tx.id(), ino).copied();
        drop(st);
        let inode = match cached {
            Some(i) => i,
            None => {
                let i = read_inode(&tx, ino)?;
                self.state.lock().icache.put(tx.id(), ino, i);
                i
            }
        };
        let n = clamp_len(inode.size, offset, buf.len());
        if n > 0 {
            read_chunks(&tx, ino, self.chunk_size, offset, buf, n)?;
            self.remember_chunks(&tx, ino, offset, n, walk);
        }
        drop(tx);
        if atime && relatime_due(&inode, now) {
            let mut st = self.state.lock();
            if st.in_flight(ino) {
                return Ok(n);
            }
            let p = self.pending_mut(&mut st, ino)?;
            if relatime_due(&p.inode, now) {
                p.inode.atime = now;
                p.gen += 1;
            }
        }
        Ok(n)
    }

    /// Whether a read of `n` bytes at `offset` may use [`ChunkLocs`]: inside one chunk, and
    /// small (the copy runs under the store's snapshot lock).
    fn small_read(&self, offset: u64, n: usize) -> bool {
        n > 0
            && n <= SMALL_READ_MAX
            && offset / self.chunk_size == (offset + n as u64 - 1) / self.chunk_size
    }

    /// The fast path of a small read of a file whose data is all in the store (no buffered
    /// chunks): if the newest commit's location of the chunk is remembered ([`ChunkLocs`]) and
    /// so is the size (the buffered record, or [`SnapshotInodes`]), copy from the store under
    /// [`kvdb::Db::with_committed`]. `st` is held throughout, so the snapshot is the one the
    /// write-back cache describes, as for [`DbFs::begin_read`] under `state`. `None`: take the
    /// slow path, and `walk` says whether it should remember a run of chunk locations (the
    /// reader looks sequential: [`ChunkLocs::missed`]). `Some(Ok((n, stored)))`: `n` bytes
    /// read; `due` is the time to store as the atime when `atime` (the read may update it) and
    /// the record comes from the store (no buffered one) and its relatime update is due. The
    /// clock is read only then; the record is looked at in place, not copied.
    fn read_remembered(
        &self,
        st: &mut State,
        ino: u64,
        offset: u64,
        buf: &mut [u8],
        atime: bool,
        walk: &mut bool,
    ) -> Option<VfsResult<(usize, Option<Timestamp>)>> {
        let buffered = match st.wb.pending.get(&ino) {
            Some(p) if !p.chunks.is_empty() => return None,
            Some(p) => Some(p.inode.size),
            None => None,
        };
        if buf.is_empty() || buf.len() > SMALL_READ_MAX {
            return None;
        }
        let cs = self.chunk_size;
        let idx = offset / cs;
        // Random readers mostly end here, without taking the snapshot lock.
        if !st.chunk_locs.covers(ino, idx) {
            *walk = st.chunk_locs.missed(ino, idx);
            return None;
        }
        self.db.with_committed(|txid| {
            let (size, due) = match buffered {
                Some(size) => (size, None),
                None => match st.icache.get(txid, ino) {
                    Some(i) => {
                        let due = if atime {
                            let now = self.clock.now();
                            relatime_due(i, now).then_some(now)
                        } else {
                            None
                        };
                        (i.size, due)
                    }
                    None => {
                        *walk = st.chunk_locs.missed(ino, idx);
                        return None;
                    }
                },
            };
            let n = clamp_len(size, offset, buf.len());
            if n == 0 {
                return Some(Ok((0, due)));
            }
            if !self.small_read(offset, n) {
                return None;
            }
            let Some((at, len)) = st.chunk_locs.get(txid, ino, idx) else {
                *walk = st.chunk_locs.missed(ino, idx);
                return None;
            };
            let in_chunk = offset - idx * cs;
            let have = u64::from(len).saturating_sub(in_chunk).min(n as u64) as usize;
            if have > 0 {
                // Whole pages, as kvdb reads them.
                let ps = self.db.page_size() as u64;
                let Some(start) = at
                    .checked_add(in_chunk)
                    .filter(|s| s.checked_add(ps + have as u64).is_some())
                else {
                    return Some(Err(VfsError::Corrupted));
                };
                let from = start - start % ps;
                let to = (start + have as u64).div_ceil(ps) * ps;
                let pages = match self.db.pager().read(from, (to - from) as usize) {
                    Ok(p) => p,
                    Err(e) => return Some(Err(kv(e))),
                };
                let skip = (start - from) as usize;
                buf[..have].copy_from_slice(&pages[skip..skip + have]);
            }
            buf[have..n].fill(0);
            Some(Ok((n, due)))
        })
    }

    /// After a small read through `tx` missed [`ChunkLocs`] and the reader looks sequential
    /// (`walk`, from [`DbFs::read_remembered`]): remember where the chunks from this one on lie
    /// in `tx`'s snapshot (one cursor walk of up to [`CHUNK_RUN`] consecutive stored chunks),
    /// so the next reads take the fast path.
    fn remember_chunks(&self, tx: &Tx<'_, P>, ino: u64, offset: u64, n: usize, walk: bool) {
        if !walk || !self.small_read(offset, n) {
            return;
        }
        let cs = self.chunk_size;
        let idx = offset / cs;
        let mut locs: Vec<(u64, u32)> = Vec::with_capacity(CHUNK_RUN);
        // A failed walk only means the next reads take the slow path (which reports errors).
        if chunk_run(tx, ino, idx, cs, &mut locs).is_ok() && !locs.is_empty() {
            self.state.lock().chunk_locs.put(tx.id(), ino, idx, &locs);
        }
    }

    /// `write_at` of a regular file: into the write-back cache; commits only if the dirty limit
    /// is reached (then everything buffered goes in one transaction).
    pub(crate) fn write_file(&self, ino: u64, offset: u64, data: &[u8]) -> VfsResult<usize> {
        self.write_gathered(ino, offset, &Src::new(&[data]))
    }

    /// [`DbFs::write_file`] of the concatenation of `data`'s pieces (a gathered write: the
    /// kernel passes the user's pages as they lie, and each byte is copied once, into the
    /// write-back cache).
    pub(crate) fn write_gathered(&self, ino: u64, offset: u64, data: &Src<'_>) -> VfsResult<usize> {
        self.write_src(ino, offset, data, true)
    }

    /// The write itself. `may_flush`: whether a full cache may be committed here (not for the
    /// partial chunks a direct write buffers for its own transaction to take).
    fn write_src(
        &self,
        ino: u64,
        offset: u64,
        data: &Src<'_>,
        may_flush: bool,
    ) -> VfsResult<usize> {
        if data.len() == 0 {
            return Ok(0);
        }
        let end = offset
            .checked_add(data.len() as u64)
            .filter(|&e| e <= MAX_FILE_SIZE)
            .ok_or(VfsError::FileTooLarge)?;
        // A cache still at its limit means the last flush failed (a full store): try again
        // before buffering more, and fail this write if it still cannot commit. So a write that
        // returns ENOSPC buffered nothing, and a full store cannot grow the cache without end.
        let (full, direct_min) = {
            let st = self.state.lock();
            (st.wb.dirty_bytes >= st.wb.limit, st.direct_write_min)
        };
        if full && may_flush {
            self.flush(Flush::Limit)?;
        }
        let now = self.clock.now();
        let cs = self.chunk_size;
        {
            // Enough whole chunks: they are stored now, straight from `data`. The partial
            // chunks at either end are buffered first, and the transaction storing the whole
            // chunks folds them (it folds the file's buffered data like any metadata
            // operation), so the write commits as one: a crash never keeps half of it. If
            // that transaction fails (a full store), the write returns the error with its ends
            // still buffered, as a failed write may leave part of its bytes in the file.
            let (first, last) = (offset.div_ceil(cs), end / cs);
            if last > first && (last - first).saturating_mul(cs) >= direct_min as u64 {
                // Each whole chunk as the pieces of `data` it spans (with a user's pages, the
                // pages themselves: kvdb sends them to the disk without a copy).
                let head = (first * cs - offset) as usize;
                let body = ((last - first) * cs) as usize;
                let chunks: Vec<Vec<&[u8]>> = (0..last - first)
                    .map(|i| data.pieces_in(head + (i * cs) as usize, cs as usize))
                    .collect();
                if head > 0 {
                    self.write_src(ino, offset, &Src::new(&data.pieces_in(0, head)), false)?;
                }
                if head + body < data.len() {
                    let rest = data.pieces_in(head + body, data.len() - head - body);
                    self.write_src(ino, last * cs, &Src::new(&rest), false)?;
                }
                self.write_whole_chunks(ino, first, &chunks)?;
                return Ok(data.len());
            }
        }
        // Whole chunks not in the cache are copied into fresh buffers before taking `state`,
        // so writers to different files (and readers) do not wait for each other's copies.
        // A whole chunk already cached is overwritten in place under the lock (no allocation,
        // and the buffer is still warm), as are partial chunks, which merge with what is
        // buffered or stored. The whole chunks lie between the first and the last chunk
        // boundary inside the write, in order: the loop below takes them from the front.
        let first_whole = offset.div_ceil(cs);
        let whole_end = end / cs;
        let head = (first_whole * cs - offset) as usize;
        let cached: Vec<bool> = {
            let st = self.state.lock();
            let p = st.wb.pending.get(&ino);
            (first_whole..whole_end.max(first_whole))
                .map(|i| {
                    p.and_then(|p| p.chunks.get(&i))
                        .is_some_and(|b| b.len() == cs as usize)
                })
                .collect()
        };
        let mut whole: alloc::collections::VecDeque<Option<Vec<u8>>> = (first_whole
            ..whole_end.max(first_whole))
            .zip(&cached)
            .map(|(i, &cached)| {
                let at = head + ((i - first_whole) * cs) as usize;
                (!cached).then(|| data.to_vec(at, cs as usize))
            })
            .collect();
        let mut guard = self.state.lock();
        while guard.direct_busy.is_some_and(|d| d.ino == ino)
            || (guard.committing.contains(&ino) && !guard.wb.pending.contains_key(&ino))
        {
            // A direct write to this file, or a transaction changing its record, is
            // committing: wait for it (it holds the writer lock until the new store is
            // published and the cache updated), then look again.
            drop(guard);
            drop(self.db.begin_write().map_err(kv)?);
            guard = self.state.lock();
        }
        let st = &mut *guard;
        let p = self.pending_mut(st, ino)?;
        let mut reader: Option<Tx<'_, P>> = None;
        let mut added = 0usize;
        let mut pos = offset;
        let mut src = 0usize;
        while src < data.len() {
            let idx = pos / cs;
            let in_chunk = (pos % cs) as usize;
            let take = (cs as usize - in_chunk).min(data.len() - src);
            if in_chunk == 0 && take == cs as usize {
                match (
                    whole.pop_front().ok_or(VfsError::Io)?,
                    p.chunks.get_mut(&idx),
                ) {
                    (None, Some(buf)) if buf.len() == take => data.copy_to(src, buf),
                    (copy, _) => {
                        // Copied before the lock, or (rarely) no longer cached as a whole chunk
                        // since we looked: copied now.
                        let copy = copy.unwrap_or_else(|| data.to_vec(src, take));
                        added += copy
                            .len()
                            .saturating_sub(p.chunks.get(&idx).map_or(0, |b| b.len()));
                        p.chunks.insert(idx, copy);
                    }
                }
                pos += take as u64;
                src += take;
                continue;
            }
            match p.chunks.entry(idx) {
                alloc::collections::btree_map::Entry::Occupied(o) => {
                    let buf = o.into_mut();
                    let old = buf.len();
                    if old < in_chunk + take {
                        buf.resize(in_chunk + take, 0);
                        added += in_chunk + take - old;
                    }
                    data.copy_to(src, &mut buf[in_chunk..in_chunk + take]);
                }
                alloc::collections::btree_map::Entry::Vacant(v) => {
                    // A partial chunk: merged with what the store holds.
                    let mut buf = if idx * cs < p.stored_size {
                        if reader.is_none() {
                            reader = Some(self.db.begin_read().map_err(kv)?);
                        }
                        match &reader {
                            Some(tx) => load_chunk(tx, ino, idx, cs)?,
                            None => Vec::new(),
                        }
                    } else {
                        Vec::new()
                    };
                    if buf.len() < in_chunk + take {
                        buf.resize(in_chunk + take, 0);
                    }
                    data.copy_to(src, &mut buf[in_chunk..in_chunk + take]);
                    added += buf.len();
                    v.insert(buf);
                }
            }
            pos += take as u64;
            src += take;
        }
        drop(reader);
        p.inode.size = p.inode.size.max(end);
        p.inode.mtime = now;
        p.inode.ctime = now;
        p.bytes += added;
        p.gen += 1;
        st.wb.dirty_bytes += added;
        let over = st.wb.dirty_bytes >= st.wb.limit && may_flush;
        drop(guard);
        if over {
            match self.flush(Flush::Limit) {
                // This write is buffered (it is not undone): the next write retries the flush
                // and fails, as do fsync, sync and the last close.
                Ok(()) | Err(VfsError::NoSpace) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(data.len())
    }

    /// Store `chunks` (each the pieces of one whole chunk, from chunk `first` on) in one write
    /// transaction through [`kvdb::Bucket::put_direct_gathered`]: the pager writes their pages
    /// straight from the pieces (no copy into the write-back cache or the store's page buffers;
    /// pieces not on page boundaries are joined by kvdb), and the commit (the same
    /// [`DbFs::run_txn`] as metadata operations, so the same durability) publishes them with
    /// the file's new size and times. The transaction folds the file's other buffered data,
    /// like a metadata operation; cached chunks this write replaces are not stored but dropped
    /// at its commit ([`State::direct_busy`] keeps buffered writers to the file waiting until
    /// then, so no later write is lost).
    fn write_whole_chunks(&self, ino: u64, first: u64, chunks: &[Vec<&[u8]>]) -> VfsResult<()> {
        let cs = self.chunk_size;
        let count = chunks.len() as u64;
        let end = first + count;
        let tx = self.db.begin_write().map_err(kv)?;
        let me = {
            let mut st = self.state.lock();
            st.direct_seq += 1;
            let d = DirectWrite {
                seq: st.direct_seq,
                ino,
                first,
                end,
            };
            st.direct_busy = Some(d);
            d
        };
        let r = self.run_txn(tx, |t| {
            let mut inode = t.inode(ino)?;
            let keys: Vec<[u8; 16]> = (first..end).map(|idx| pair_key(ino, idx)).collect();
            let pairs: Vec<(&[u8], &[&[u8]])> = keys
                .iter()
                .map(|k| k.as_slice())
                .zip(chunks.iter().map(|c| c.as_slice()))
                .collect();
            let replaced = t
                .bucket(bucket::DATA)?
                .put_direct_gathered(&pairs)
                .map_err(kv)?;
            let old: u64 = replaced
                .iter()
                .flatten()
                .map(|&len| format::footprint(len as usize))
                .sum();
            inode.alloc_bytes = inode
                .alloc_bytes
                .saturating_add(count * format::footprint(cs as usize))
                .saturating_sub(old);
            inode.size = inode.size.max(end * cs);
            inode.mtime = t.now;
            inode.ctime = t.now;
            t.set_inode(ino, inode);
            Ok(())
        });
        if r.is_err() {
            // Nothing was committed: the cache is as it was.
            let mut st = self.state.lock();
            if st.direct_busy == Some(me) {
                st.direct_busy = None;
            }
        }
        r
    }

    pub(crate) fn open_node(&self, ino: u64) {
        *self.state.lock().open.entry(ino).or_insert(0) += 1;
    }

    /// Last release: commit the node's buffered data, and free it if it has no links left.
    pub(crate) fn release_node(&self, ino: u64) -> VfsResult<()> {
        let mut st = self.state.lock();
        let left = match st.open.get_mut(&ino) {
            Some(n) => {
                *n = n.saturating_sub(1);
                *n
            }
            None => 0,
        };
        if left > 0 {
            return Ok(());
        }
        st.open.remove(&ino);
        let unlinked = match st.wb.pending.get(&ino) {
            Some(p) => p.inode.nlink == 0,
            None => {
                let tx = self.db.begin_read().map_err(kv)?;
                match read_inode(&tx, ino) {
                    Ok(i) => i.nlink == 0,
                    Err(VfsError::NotFound) => return Ok(()),
                    Err(e) => return Err(e),
                }
            }
        };
        // Buffered data commits at the last close; a buffered atime alone (the file was only
        // read) is left to the write-back timer, so reading costs no commit.
        let data = st
            .wb
            .pending
            .get(&ino)
            .is_some_and(|p| !p.chunks.is_empty());
        if !unlinked && !data {
            return Ok(());
        }
        drop(st);
        self.write_op(|t| {
            if t.st.open.contains_key(&ino) {
                // Opened again while we waited for the write transaction: its last release
                // will do this.
                return Ok(());
            }
            let i = match t.inode(ino) {
                Ok(i) => i,
                Err(VfsError::NotFound) => return Ok(()),
                Err(e) => return Err(e),
            };
            if i.nlink == 0 {
                t.free_inode(ino)?;
            }
            Ok(())
        })
    }
}

impl<P: Pager + Send + Sync + 'static> DbFs<P> {
    pub(crate) fn node(&self, ino: u64, ftype: FileType) -> VfsResult<NodeRef> {
        let fs = self.me.upgrade().ok_or(VfsError::Io)?;
        Ok(Arc::new(DbNode::new(fs, ino, ftype)))
    }
}

/// The bytes of one write: the concatenation of `pieces` (one slice for `write_at`, the
/// user's pages for a gathered write).
pub(crate) struct Src<'a> {
    pieces: &'a [&'a [u8]],
    len: usize,
    /// Where the last copy began: (piece index, offset of that piece). Writes copy front to
    /// back, so the next copy starts looking there instead of at the first piece.
    hint: core::cell::Cell<(usize, usize)>,
}

impl<'a> Src<'a> {
    pub(crate) fn new(pieces: &'a [&'a [u8]]) -> Self {
        Src {
            pieces,
            len: pieces.iter().map(|p| p.len()).sum(),
            hint: core::cell::Cell::new((0, 0)),
        }
    }

    /// The pieces from the one holding byte `at` on, and `at` relative to that piece.
    fn seek(&self, at: usize) -> (&'a [&'a [u8]], usize) {
        let (mut i, mut start) = self.hint.get();
        if at < start {
            (i, start) = (0, 0);
        }
        while i < self.pieces.len() && at >= start + self.pieces[i].len() {
            start += self.pieces[i].len();
            i += 1;
        }
        self.hint.set((i, start));
        (&self.pieces[i..], at - start)
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The pieces holding the bytes `at..at + n`, cut to that range.
    fn pieces_in(&self, at: usize, n: usize) -> Vec<&'a [u8]> {
        let (pieces, mut at) = self.seek(at);
        let mut out = Vec::new();
        let mut left = n;
        for piece in pieces {
            if left == 0 {
                break;
            }
            let k = (piece.len() - at).min(left);
            out.push(&piece[at..at + k]);
            left -= k;
            at = 0;
        }
        out
    }

    /// Copy the bytes at `at..at + dst.len()` into `dst` (the caller keeps the range inside).
    fn copy_to(&self, at: usize, dst: &mut [u8]) {
        let mut done = 0;
        for piece in self.pieces_in(at, dst.len()) {
            dst[done..done + piece.len()].copy_from_slice(piece);
            done += piece.len();
        }
    }

    /// The bytes at `at..at + n`, copied (no zero fill first).
    fn to_vec(&self, at: usize, n: usize) -> Vec<u8> {
        self.pieces_in(at, n).concat()
    }
}

fn valid_chunk_size(c: u32) -> bool {
    c.is_power_of_two() && (MIN_CHUNK_SIZE..=MAX_CHUNK_SIZE).contains(&c)
}

/// Bytes a read of `len` at `offset` returns from a file of `size`.
fn clamp_len(size: u64, offset: u64, len: usize) -> usize {
    if offset >= size {
        0
    } else {
        (size - offset).min(len as u64) as usize
    }
}

/// Linux `relatime`: update atime if it is not newer than mtime or ctime, or a day old.
fn relatime_due(i: &Inode, now: Timestamp) -> bool {
    i.atime <= i.mtime || i.atime <= i.ctime || now.sec.saturating_sub(i.atime.sec) >= 24 * 3600
}

pub(crate) fn read_inode<P: Pager>(tx: &Tx<'_, P>, ino: u64) -> VfsResult<Inode> {
    match tx
        .get_bucket(bucket::INODES)
        .map_err(kv)?
        .get(&ino_key(ino))
        .map_err(kv)?
    {
        Some(raw) => Inode::decode(&raw),
        None => Err(VfsError::NotFound),
    }
}

fn load_chunk<P: Pager>(tx: &Tx<'_, P>, ino: u64, idx: u64, cs: u64) -> VfsResult<Vec<u8>> {
    let key = pair_key(ino, idx);
    let data = tx.get_bucket(bucket::DATA).map_err(kv)?;
    let mut cursor = data.cursor();
    let Some(e) = cursor
        .seek(&key)
        .map_err(kv)?
        .filter(|e| e.key() == key.as_slice())
    else {
        return Ok(Vec::new());
    };
    let value = e.value().ok_or(VfsError::Corrupted)?;
    if value.len() as u64 > cs {
        return Err(VfsError::Corrupted);
    }
    match e.overflow_location() {
        // A pager with direct reads (the kernel window) reads the chunk from the disk straight
        // into the new buffer: no page faults, no frames for pages about to be replaced.
        Some((at, len))
            if tx.pager().direct_reads() && at % 512 == 0 && len == value.len() as u64 =>
        {
            let mut buf = alloc::vec![0u8; len.next_multiple_of(512) as usize];
            tx.pager().read_into(at, &mut buf).map_err(kv)?;
            buf.truncate(len as usize);
            Ok(buf)
        }
        _ => Ok(value.to_vec()),
    }
}

/// Where the stored chunks of `ino` from `idx` on lie: up to [`CHUNK_RUN`] consecutive chunks
/// held as overflow values (store offset, length), stopping at a hole or an inline value.
fn chunk_run<P: Pager>(
    tx: &Tx<'_, P>,
    ino: u64,
    idx: u64,
    cs: u64,
    locs: &mut Vec<(u64, u32)>,
) -> VfsResult<()> {
    let data = tx.get_bucket(bucket::DATA).map_err(kv)?;
    let mut cursor = data.cursor();
    let mut entry = cursor.seek(&pair_key(ino, idx)).map_err(kv)?;
    while let Some(e) = entry {
        let want = idx
            .checked_add(locs.len() as u64)
            .ok_or(VfsError::Corrupted)?;
        if e.key() != pair_key(ino, want).as_slice() {
            break;
        }
        match e.overflow_location() {
            Some((at, len)) if len <= cs => locs.push((at, len as u32)),
            _ => break,
        }
        if locs.len() == CHUNK_RUN {
            break;
        }
        entry = cursor.next().map_err(kv)?;
    }
    Ok(())
}

/// Fill `out` with the stored bytes of `ino` at `offset`: one cursor seek, then `next` per
/// chunk; holes and bytes past a chunk's stored length are zeros.
fn read_chunks<P: Pager, O: Out + ?Sized>(
    tx: &Tx<'_, P>,
    ino: u64,
    cs: u64,
    offset: u64,
    out: &mut O,
    len: usize,
) -> VfsResult<()> {
    let data = tx.get_bucket(bucket::DATA).map_err(kv)?;
    let end = offset + len as u64;
    if len == 0 {
        return Ok(());
    }
    let direct = len >= DIRECT_READ_MIN && tx.pager().direct_reads();
    if offset / cs == (end - 1) / cs && !direct {
        // Inside one chunk (the small-read case): one point lookup, cheaper than a cursor.
        let idx = offset / cs;
        let in_chunk = (offset - idx * cs) as usize;
        let have = match data.get(&pair_key(ino, idx)).map_err(kv)? {
            Some(v) if v.len() as u64 > cs => return Err(VfsError::Corrupted),
            Some(v) => {
                let have = v.len().saturating_sub(in_chunk).min(len);
                // A chunk may store fewer bytes than `in_chunk` (grown by truncate): zeros.
                if have > 0 {
                    out.put(0, &v[in_chunk..in_chunk + have]);
                }
                have
            }
            None => 0,
        };
        out.zero(have, len - have);
        return Ok(());
    }
    let mut cursor = data.cursor();
    // Direct reads: (store offset, position in `out`, length), merged where both are adjacent.
    let mut runs: Vec<(u64, usize, usize)> = Vec::new();
    let mut pos = offset;
    let mut entry = cursor.seek(&pair_key(ino, offset / cs)).map_err(kv)?;
    while pos < end {
        let Some(e) = entry else { break };
        let key = e.key();
        if key.len() != 16 || format::be_u64(key) != Some(ino) {
            break;
        }
        let idx = format::be_u64(&key[8..]).ok_or(VfsError::Corrupted)?;
        let start = idx.checked_mul(cs).ok_or(VfsError::Corrupted)?;
        if start >= end {
            break;
        }
        let value = e.value().ok_or(VfsError::Corrupted)?;
        if value.len() as u64 > cs || start.saturating_add(cs) <= pos {
            return Err(VfsError::Corrupted);
        }
        if start > pos {
            let gap = (start - pos) as usize;
            let at = (pos - offset) as usize;
            out.zero(at, gap);
            pos = start;
        }
        let in_chunk = (pos - start) as usize;
        let take = (start.saturating_add(cs).min(end) - pos) as usize;
        let at = (pos - offset) as usize;
        let have = value.len().saturating_sub(in_chunk).min(take);
        if have > 0 {
            let src = e.overflow_location().map(|(o, _)| o + in_chunk as u64);
            match src {
                Some(src) if direct && src % 512 == 0 && have % 512 == 0 => match runs.last_mut() {
                    Some((s, a, n)) if *s + *n as u64 == src && *a + *n == at => *n += have,
                    _ => runs.push((src, at, have)),
                },
                _ => out.put(at, &value[in_chunk..in_chunk + have]),
            }
        }
        out.zero(at + have, take - have);
        pos += take as u64;
        if pos >= end {
            break;
        }
        entry = cursor.next().map_err(kv)?;
    }
    let at = (pos - offset) as usize;
    out.zero(at, len - at);
    for (src, at, n) in runs {
        out.read_from(tx.pager(), src, at, n).map_err(kv)?;
    }
    Ok(())
}

/// Copy buffered chunks over `out` (the bytes at `offset`).
fn overlay<O: Out + ?Sized>(p: &Pending, cs: u64, offset: u64, out: &mut O, len: usize) {
    let end = offset + len as u64;
    for (&idx, buf) in p.chunks.range(offset / cs..end.div_ceil(cs)) {
        let start = idx * cs;
        let from = start.max(offset);
        let to = (start + cs).min(end);
        let a = (from - offset) as usize;
        let b = (to - offset) as usize;
        let in_chunk = (from - start) as usize;
        let have = buf.len().saturating_sub(in_chunk).min(b - a);
        if have > 0 {
            out.put(a, &buf[in_chunk..in_chunk + have]);
        }
        out.zero(a + have, b - a - have);
    }
}

/// Where a read's bytes go: one slice, or the pieces of a scattered read ([`Pieces`]).
/// Positions are offsets into the concatenation; callers keep them inside [`Out::len`].
pub(crate) trait Out {
    fn len(&self) -> usize;
    /// Copy `src` to `at..at + src.len()`.
    fn put(&mut self, at: usize, src: &[u8]);
    /// Zero `at..at + n`.
    fn zero(&mut self, at: usize, n: usize);
    /// Read `n` bytes of the store at `src` into `at..at + n` ([`Pager::read_into`]).
    fn read_from<P: Pager>(&mut self, pager: &P, src: u64, at: usize, n: usize)
        -> kvdb::Result<()>;
}

impl Out for [u8] {
    fn len(&self) -> usize {
        <[u8]>::len(self)
    }
    fn put(&mut self, at: usize, src: &[u8]) {
        self[at..at + src.len()].copy_from_slice(src);
    }
    fn zero(&mut self, at: usize, n: usize) {
        self[at..at + n].fill(0);
    }
    fn read_from<P: Pager>(
        &mut self,
        pager: &P,
        src: u64,
        at: usize,
        n: usize,
    ) -> kvdb::Result<()> {
        pager.read_into(src, &mut self[at..at + n])
    }
}

/// The pieces of a scattered read as one [`Out`].
pub(crate) struct Pieces<'a, 'b> {
    pieces: &'a mut [&'b mut [u8]],
    len: usize,
}

impl<'a, 'b> Pieces<'a, 'b> {
    pub(crate) fn new(pieces: &'a mut [&'b mut [u8]]) -> Self {
        let len = pieces.iter().map(|p| p.len()).sum();
        Pieces { pieces, len }
    }

    /// The parts of the pieces that hold `at..at + n`, in order.
    fn parts(&mut self, at: usize, n: usize) -> Vec<&mut [u8]> {
        let mut parts: Vec<&mut [u8]> = Vec::new();
        let (mut skip, mut have) = (at, 0);
        for piece in self.pieces.iter_mut() {
            if have == n {
                break;
            }
            if skip >= piece.len() {
                skip -= piece.len();
                continue;
            }
            let k = (piece.len() - skip).min(n - have);
            parts.push(&mut piece[skip..skip + k]);
            have += k;
            skip = 0;
        }
        parts
    }
}

impl Out for Pieces<'_, '_> {
    fn len(&self) -> usize {
        self.len
    }
    fn put(&mut self, at: usize, src: &[u8]) {
        let mut off = 0;
        for part in self.parts(at, src.len()) {
            part.copy_from_slice(&src[off..off + part.len()]);
            off += part.len();
        }
    }
    fn zero(&mut self, at: usize, n: usize) {
        for part in self.parts(at, n) {
            part.fill(0);
        }
    }
    fn read_from<P: Pager>(
        &mut self,
        pager: &P,
        src: u64,
        at: usize,
        n: usize,
    ) -> kvdb::Result<()> {
        // All parts in one `read_into_pieces` (the window pager: one scattered device read
        // into the user's pages) when each is whole sectors; else part by part.
        let mut parts = self.parts(at, n);
        if src.is_multiple_of(512) && parts.iter().all(|p| p.len().is_multiple_of(512)) {
            return pager.read_into_pieces(src, &mut parts);
        }
        let mut from = src;
        for part in parts {
            pager.read_into(from, part)?;
            from += part.len() as u64;
        }
        Ok(())
    }
}

impl<P: Pager + Send + Sync + 'static> FileSystem for DbFs<P> {
    fn fs_name(&self) -> &'static str {
        "dbfs"
    }

    fn root(&self) -> VfsResult<NodeRef> {
        self.node(ROOT_INO, FileType::Directory)
    }

    /// Blocks are kvdb pages. The total is the pager's capacity ([`UNBOUNDED_REPORTED_BYTES`]
    /// for a pager that can grow without limit); free = pages on kvdb's freelist + pages the
    /// store can still grow by; available = free minus kvdb's reserve for deletions
    /// ([`kvdb::reserve_pages`]). Files: inodes in use from the superblock; free inodes are
    /// estimated as one per free page.
    fn statfs(&self) -> VfsResult<FsStats> {
        // Beginning a write transaction releases pages freed by commits no reader can see;
        // holding it, the freelist count is exact.
        let (stats, free_pages) = {
            let w = self.db.begin_write().map_err(kv)?;
            (self.db.stats(), w.reusable_pages())
        };
        let used_inodes = {
            let tx = self.db.begin_read().map_err(kv)?;
            let raw = tx
                .get_bucket(bucket::META)
                .map_err(kv)?
                .get(format::SUPERBLOCK_KEY)
                .map_err(kv)?;
            raw.and_then(|r| Superblock::decode(&r))
                .ok_or(VfsError::Corrupted)?
                .inode_count
        };
        let ps = self.db.page_size() as u64;
        let cap = self.db.pager().capacity();
        let cap = if cap == u64::MAX {
            UNBOUNDED_REPORTED_BYTES
        } else {
            cap
        };
        let total = (cap / ps).max(stats.page_count);
        let free = free_pages.unwrap_or(0) + total.saturating_sub(stats.page_count);
        // kvdb keeps pages back for deletions: free, but not available to writes.
        let available = free.saturating_sub(kvdb::reserve_pages(total));
        Ok(FsStats {
            fs_type: DBFS_MAGIC,
            block_size: ps,
            blocks: total,
            blocks_free: free,
            blocks_available: available,
            files: used_inodes.saturating_add(free),
            files_free: free,
            name_max: NAME_MAX as u64,
        })
    }

    /// Commit everything buffered (one transaction; also when nothing is buffered, so pages
    /// freed by earlier commits become reusable).
    fn sync(&self) -> VfsResult<()> {
        self.flush(Flush::AllAlways)
    }
}

impl<P: Pager> Drop for DbFs<P> {
    /// Unmount: commit the write-back cache (errors cannot be reported here; call `sync` first
    /// to see them).
    fn drop(&mut self) {
        let _ = self.flush(Flush::All);
        let _ = self.barrier();
    }
}
