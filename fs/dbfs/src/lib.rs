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
//!   commit. Barriers happen on `fsync` of any node whose own commits are not all durable
//!   yet (a file: its data and every commit before; a directory: its entries, so a new name
//!   is durable once the file *and* its directory were fsynced, as POSIX asks; an fsync of a
//!   node no undurable commit changed flushes nothing, whatever else waits for a barrier),
//!   on `sync`, on unmount, from [`DbFs::writeback_tick`] once
//!   the oldest commit not yet durable is [`WRITEBACK_SECS`] old, and inside kvdb when the
//!   pages waiting for one exceed its bound. **After a crash the store is exactly the state of
//!   the last completed barrier**: always consistent, every operation either wholly there or
//!   wholly absent, everything fsynced there, and at most about [`WRITEBACK_SECS`] (twice
//!   that for buffered data) of returned operations lost. [`DbFs::set_sync_metadata`]
//!   (`dirsync`) restores the old rule: every commit is durable when it returns.
//! - `write_at` goes to a write-back cache (per mount, in [`DbFs`]): whole chunks, merged with
//!   stored content for partial writes; reads see it. A write covering whole 4 KiB pieces of
//!   a stored chunk that is not cached does not read the stored chunk: the cached chunk is
//!   *partly loaded* (a mask says which pieces hold the newest bytes; reads take the others
//!   from the store), and the missing pieces are read only when a write touches part of one
//!   (the chunk is then loaded whole) or when the chunk commits (inside the committing
//!   transaction). So overwriting a file page by page reads nothing. The cache is committed, as one
//!   transaction per flush, on `fsync` (which also folds every *closed* file's buffered data, as
//!   does any durable commit), on `sync`, when the
//!   dirty bytes reach the limit ([`DEFAULT_DIRTY_LIMIT`], [`DbFs::set_dirty_limit`]; the write
//!   that crosses it commits, so a write costs at most one transaction), on
//!   [`DbFs::writeback_tick`] when the oldest dirty data is older than [`WRITEBACK_SECS`], when
//!   a metadata operation touches the inode (it folds the buffered data into its own
//!   transaction), and when the `DbFs` is dropped (unmount). The last `release` (close)
//!   commits nothing: a file deleted soon after it was written is never stored, and one
//!   written, closed and then covered by any fsync (its directory's, say) is stored with it.
//!   A setattr of a regular file's atime/mtime alone is buffered the same way (it commits with
//!   the data).
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
//!   still commit when writes cannot; `statfs` reports it as free but not available.
//! - Space for buffered writes is reserved when they are accepted (`reserve`: value pages
//!   of every dirty chunk plus an estimate of the tree pages its commit rewrites, checked
//!   against [`kvdb::Db::free_pages`] less the reserve). A write whose reservation does not
//!   fit commits what is buffered and tries once more, then fails with `NoSpace`, buffering
//!   nothing; every other commit leaves the reservations of the data it does not store free
//!   ([`kvdb::Tx::keep_free`]). So the commits of accepted writes (timer, dirty limit,
//!   unmount) do not run out of space; `statfs` counts reserved pages as unavailable.
//! - A commit that fails (I/O, or a full store despite the estimate) changes nothing and
//!   drops nothing: the buffered data stays dirty, and `fsync` and `sync`
//!   retry it and report the error until it commits (the error sticks with the data, as
//!   Linux's errseq sticks with the mapping). The error of a commit nobody waited for (timer,
//!   dirty limit) is also kept per inode until its data commits, and
//!   [`DbNode::take_write_error`] reports it once (close(2): the kernel's, and dbfs-fuse's
//!   `flush` with `-o close_errors`). Unlinking or
//!   truncating the file drops its buffered data with it, so deleting is how space comes back.
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
//! # Modules
//! `mount` (mkfs, the mount checks, orphans), `writeback` (the state `DbFs::state` guards,
//! the write-back cache, commits, group fsync, barriers, the timer), `read` (the read paths),
//! `write` (buffered and direct writes), `reserve` (space reservations for buffered
//! writes), `snapshot_cache` (inode records and chunk locations
//! of recent snapshots), `txn` (one operation's write transaction), `node` (the [`vfs::Node`]
//! calls), `fsck`, [`format`] (the on-disk records). Each says which locks it takes.
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
#![warn(missing_docs)]

extern crate alloc;

pub mod format;
mod fsck;
mod mount;
mod node;
mod read;
mod reserve;
mod snapshot_cache;
mod txn;
mod write;
mod writeback;

use alloc::string::String;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;

use kvdb::sync::Mutex;
use kvdb::{Db, Pager, Tx};
use vfs::{Clock, FileSystem, FileType, FsStats, Metadata, NodeRef, VfsError, VfsResult};

pub use format::{
    Inode, Superblock, DBFS_MAGIC, FORMAT_VERSION, MAX_FILE_SIZE, NAME_MAX, ROOT_INO,
};
pub use mount::{MkfsOptions, MountError};
pub use node::DbNode;

use format::bucket;
#[cfg(doc)]
use snapshot_cache::ChunkLocs;
use writeback::{Flush, State};

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
}

impl<P: Pager + Send + Sync + 'static> DbFs<P> {
    pub(crate) fn node(&self, ino: u64, ftype: FileType) -> VfsResult<NodeRef> {
        let fs = self.me.upgrade().ok_or(VfsError::Io)?;
        Ok(Arc::new(DbNode::new(fs, ino, ftype)))
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
    /// for a pager that can grow without limit); free = pages on kvdb's freelist (also those
    /// waiting for a reader or a barrier) + pages the store can still grow by
    /// ([`kvdb::Db::free_pages`]); available = free minus kvdb's reserve for deletions
    /// ([`kvdb::reserve_pages`]) and minus the pages reserved for buffered writes. Files: inodes in use from the superblock; free inodes are
    /// estimated as one per free page.
    fn statfs(&self) -> VfsResult<FsStats> {
        // Pages freed by commits count as free at once, also those a reader or the next
        // barrier still holds: the allocator makes a barrier when it runs short, so they are
        // there for writes (a deleted file's space shows up in `df` right away).
        let (stats, free_pages) = (self.db.stats(), self.db.free_pages());
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
        // `free_pages` counts the pager's whole capacity past the store's end: keep only the
        // listed pages of it, then add the growth room of the reported size.
        let cap_pages = self.db.pager().capacity() / ps;
        let listed = free_pages.saturating_sub(cap_pages.saturating_sub(stats.page_count));
        let free = listed + total.saturating_sub(stats.page_count);
        // kvdb keeps pages back for deletions: free, but not available to writes; and pages
        // reserved for buffered writes are as good as used (see `reserve`).
        let promised = self.state.lock().wb.promised_pages();
        let available = free
            .saturating_sub(kvdb::reserve_pages(total))
            .saturating_sub(promised);
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
