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
//!   is refused ([`MountError`] says why; as a [`VfsError`](vfs::VfsError) it is
//!   `InvalidInput`, or the store's error). Orphans left by a crash are freed at mount.
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
//!   up to the threshold has them written at once by the pager straight from the caller's
//!   buffer to fresh pages, in no tree yet: a short transaction takes and places the pages
//!   ([`kvdb::Tx::reserve_placed`]), the bytes go out without the writer lock
//!   ([`kvdb::Db::write_placed`], so other writers' transactions and device writes run
//!   meanwhile), then its partial end chunks go through the cache. The file's write-back
//!   entry lists the placed chunks (`Pending::placed`) in place of the cached or placed ones
//!   they replace, and the entry's next commit (fsync, sync, the timer, a metadata operation
//!   on the file, unmount) inserts them all in one transaction ([`kvdb::Bucket::put_placed`])
//!   with the buffered ends, so a large write costs no commit of its own and a crash keeps it
//!   whole or not at all (the placed pages are free on disk until that commit). Reads overlay
//!   them from the disk; a buffered write to a placed chunk commits the file first. Until a
//!   direct write's chunks are listed, other writes to the file wait (`State::direct_busy`).
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
//! From the bottom up (a module names only modules listed before it; `make check-layers`
//! checks that no file-level import loop comes back):
//! [`format`] (the on-disk records), `error` (the one kvdb-to-vfs error conversion), `tuning`
//! (default limits and thresholds), `atime` (the `relatime` rule), `snapshot_cache` (inode
//! records and chunk locations of recent snapshots), `state` (what `DbFs::state` guards: the
//! write-back entries, open counts, fsync waiters, the direct write in flight), `txn` (one
//! operation's write transaction), `fsck`, `mounted` (the [`DbFs`] value and its plain
//! accessors), then the modules that add `impl DbFs` blocks: `reserve` (space reservations
//! for buffered writes), `read` (the read paths), `writeback` (commits, group fsync,
//! barriers, the timer), `write` (buffered and direct writes), `mount` (mkfs, the mount
//! checks, orphans), `node` (the [`vfs::Node`] calls) and `filesystem` (the
//! [`vfs::FileSystem`] calls and unmount). Each says which locks it takes.
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

mod atime;
mod error;
mod filesystem;
pub mod format;
mod fsck;
mod mount;
mod mounted;
mod node;
mod read;
mod reserve;
mod snapshot_cache;
mod state;
mod tuning;
mod txn;
mod write;
mod writeback;

pub use format::{
    Inode, Superblock, DBFS_MAGIC, FORMAT_VERSION, MAX_FILE_SIZE, NAME_MAX, ROOT_INO,
};
pub use mount::{MkfsOptions, MountError};
pub use mounted::DbFs;
pub use node::DbNode;
pub use tuning::{
    DEFAULT_CHUNK_SIZE, DEFAULT_DIRTY_LIMIT, DIRECT_READ_MIN, DIRECT_WRITE_MIN,
    UNBOUNDED_REPORTED_BYTES, WRITEBACK_SECS,
};
