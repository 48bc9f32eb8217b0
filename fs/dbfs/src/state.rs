//! The state `DbFs::state` guards ([`State`]) and its parts: the write-back entries
//! ([`Pending`] per inode in a [`PendingMap`], inside [`WriteBack`]), the piece masks of partly
//! loaded chunks, the direct write in flight ([`DirectWrite`]), and why a flush runs
//! ([`Flush`]).
//!
//! Layer: plain data with no I/O and no locks of its own, below every module that reads or
//! changes the cache (`read`, `write`, `writeback`, `reserve`, `txn`, `mount`); it names
//! nothing of theirs, so they all build on it without an import loop. The rules for changing
//! it (lock order, generations, what a commit folds) are in `writeback`'s docs; the
//! reservation arithmetic on these fields is in `reserve`.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use vfs::{Timestamp, VfsError};

use crate::format::Inode;
use crate::snapshot_cache::{ChunkLocs, SnapshotInodes, SnapshotNames};

/// Buffered state of one inode in the write-back cache.
pub(crate) struct Pending {
    /// The record as the caller sees it (size, times updated by buffered writes).
    pub inode: Inode,
    /// The size in the store (chunks at or past it are absent or zero there).
    pub stored_size: u64,
    /// Dirty chunks: index -> bytes (at most a chunk; past its length the chunk reads zeros).
    /// A chunk listed in [`Pending::partial`] holds the newest bytes only in its loaded pieces.
    pub chunks: BTreeMap<u64, Vec<u8>>,
    /// Partly loaded chunks: index -> mask of the pieces ([`piece_size`]) of `chunks[index]`
    /// that hold the newest bytes; the others are still as the store has them (their bytes in
    /// the buffer are zeros and mean nothing). A write covering whole pieces of a stored chunk
    /// that is not cached makes such a chunk instead of reading the stored one to merge; the
    /// store is read only when a write touches part of a piece not loaded (then the chunk is
    /// loaded whole and leaves this map) or when the chunk is committed ([`fill_pieces`]
    /// inside the committing transaction). Only chunks that start below `stored_size` are
    /// here; a chunk whose pieces are all loaded is an ordinary one (not listed).
    pub partial: BTreeMap<u64, u64>,
    /// Whole chunks a direct write placed ([`kvdb::Tx::reserve_placed`]): index -> where
    /// their bytes are on the disk. They are in no tree yet: the next commit of the entry
    /// inserts them ([`kvdb::Bucket::put_placed`]), or frees them if the file lost them
    /// meanwhile (truncated, unlinked). Never also in `chunks`: a direct write drops the
    /// cached chunks it replaces, and a buffered write to a placed chunk commits the entry
    /// first. They hold no memory (not in `bytes`) and their pages are taken already (not in
    /// `value_pages`).
    pub placed: BTreeMap<u64, kvdb::Placed>,
    pub bytes: usize,
    /// Pages the dirty chunks take as stored values (see `reserve`).
    pub value_pages: u64,
    /// Pages reserved for this entry's commit (its share of [`WriteBack::reserved`]).
    pub reserved: u64,
    /// Bumped by every change to the entry, so a commit that folded it can tell whether it
    /// changed while the commit ran (then the entry stays, still dirty).
    pub gen: u64,
}

/// The write-back entries by inode, with a count of the changes made to them: every change
/// goes through a method here that counts it (reads see the map itself), so a reader that
/// remembers what it found ([`ReadMemo`]) knows it still holds while the count is unchanged.
#[derive(Default)]
pub(crate) struct PendingMap {
    map: BTreeMap<u64, Pending>,
    changes: u64,
}

impl core::ops::Deref for PendingMap {
    type Target = BTreeMap<u64, Pending>;
    fn deref(&self) -> &Self::Target {
        &self.map
    }
}

impl PendingMap {
    /// Changes so far (a new count after each `&mut` access below).
    pub(crate) fn changes(&self) -> u64 {
        self.changes
    }
    pub(crate) fn get_mut(&mut self, ino: &u64) -> Option<&mut Pending> {
        self.changes += 1;
        self.map.get_mut(ino)
    }
    pub(crate) fn remove(&mut self, ino: &u64) -> Option<Pending> {
        self.changes += 1;
        self.map.remove(ino)
    }
    pub(crate) fn entry(
        &mut self,
        ino: u64,
    ) -> alloc::collections::btree_map::Entry<'_, u64, Pending> {
        self.changes += 1;
        self.map.entry(ino)
    }
}

/// What the last small read found in the write-back cache for its inode: `buffered` is the
/// size of the inode's entry, `None` without one (an entry with chunks is never remembered).
/// Right while [`PendingMap::changes`] is still `changes`; a repeated small read of the same
/// file then skips the map's search.
#[derive(Default, Clone, Copy)]
pub(crate) struct ReadMemo {
    pub ino: u64,
    pub changes: u64,
    pub buffered: Option<u64>,
}

pub(crate) struct WriteBack {
    pub pending: PendingMap,
    pub dirty_bytes: usize,
    /// Pages reserved for the commits of the buffered data (sum of [`Pending::reserved`]).
    pub reserved: u64,
    pub limit: usize,
    /// When the oldest buffered change was made.
    pub since: Option<Timestamp>,
}

/// The unit of a partly loaded chunk ([`Pending::partial`]): 4 KiB, the page size of the
/// kernel's page cache and of most writers' buffers (an aligned 4 KiB write then never reads
/// the store), and a mask of pieces fits one `u64` for chunks up to 256 KiB. Bigger chunks use
/// a 64th of a chunk; chunks of 4 KiB or less are one piece (a write covering it is a
/// whole-chunk write anyway).
pub(crate) fn piece_size(cs: u64) -> u64 {
    cs.min((cs / 64).max(4096))
}

/// The mask of every piece of a chunk.
pub(crate) fn full_mask(cs: u64) -> u64 {
    let n = cs / piece_size(cs);
    if n >= 64 {
        u64::MAX
    } else {
        (1u64 << n) - 1
    }
}

/// The pieces of chunk `idx` that a write of `[a, b)` (offsets in the chunk) leaves with no
/// stored byte that matters: those it covers up to the stored size (past `stored_size` the
/// store holds zeros, which a fresh buffer holds too), and those wholly past it.
pub(crate) fn covered_pieces(cs: u64, stored_size: u64, idx: u64, a: u64, b: u64) -> u64 {
    let ps = piece_size(cs);
    let stored_end = stored_size.saturating_sub(idx * cs).min(cs);
    let mut m = 0u64;
    for i in 0..cs / ps {
        let (s, e) = (i * ps, ((i + 1) * ps).min(stored_end));
        if e <= s || (a <= s && b >= e) {
            m |= 1 << i;
        }
    }
    m
}

/// The pieces a write of `[a, b)` (offsets in the chunk, `a < b`) touches.
pub(crate) fn touched_pieces(cs: u64, a: u64, b: u64) -> u64 {
    let ps = piece_size(cs);
    (a / ps..b.div_ceil(ps)).fold(0u64, |m, i| m | 1 << i)
}

/// Complete a partly loaded chunk: copy the pieces not in `loaded` from `stored` (the stored
/// chunk's bytes; zeros past its end) into `buf`, which grows to cover them.
pub(crate) fn fill_pieces(cs: u64, buf: &mut Vec<u8>, loaded: u64, stored: &[u8]) {
    let ps = piece_size(cs) as usize;
    for i in 0..(cs as usize / ps) {
        if loaded & (1 << i) != 0 {
            continue;
        }
        let (s, e) = (i * ps, ((i + 1) * ps).min(stored.len()));
        if s < e {
            if buf.len() < e {
                buf.resize(e, 0);
            }
            buf[s..e].copy_from_slice(&stored[s..e]);
        }
        // Past the stored bytes the piece reads zeros; the buffer holds zeros there already
        // (nothing writes an unloaded piece).
    }
}

impl Pending {
    /// The length chunk `idx` (buffered as `buf_len` bytes) will have when committed, at most:
    /// a partly loaded chunk may become as long as the stored one.
    pub(crate) fn commit_len(&self, idx: u64, buf_len: usize, cs: u64) -> usize {
        if self.partial.contains_key(&idx) {
            let stored = self.stored_size.saturating_sub(idx * cs).min(cs) as usize;
            buf_len.max(stored)
        } else {
            buf_len
        }
    }
}

impl WriteBack {
    pub(crate) fn discard(&mut self, ino: u64) {
        if let Some(p) = self.pending.remove(&ino) {
            self.dirty_bytes = self.dirty_bytes.saturating_sub(p.bytes);
            self.reserved = self.reserved.saturating_sub(p.reserved);
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
    /// Directory entries of recent read snapshots, for lookups.
    pub names: SnapshotNames,
    /// The write-back cache as the last small read found it (see [`ReadMemo`]).
    pub read_memo: ReadMemo,
    /// Where recently read chunks lie in recent snapshots, for small reads (see [`ChunkLocs`]).
    pub chunk_locs: ChunkLocs,
    /// Large writes store their whole chunks directly when those add up to this many bytes
    /// (`usize::MAX`: never).
    pub direct_write_min: usize,
    /// The direct writes under way (at most one per inode): (its number, ino, first chunk,
    /// end chunk). Other writes to that inode wait for it, and reads of it leave atime alone,
    /// so nothing builds on the contents it is replacing; its last step drops the cached
    /// chunks it replaced (see [`DbFs::place_whole_chunks`](crate::DbFs::place_whole_chunks)).
    pub direct_busy: Vec<DirectWrite>,
    /// Numbers the direct writes, so each clears only its own `direct_busy` entry.
    pub direct_seq: u64,
    /// Inodes whose stored record the transaction now committing changes; set while its I/O
    /// runs without `state`, cleared once the new store is published. A write-back entry is
    /// never created for them meanwhile: it would start from the record that commit replaces
    /// (a read snapshot still shows it) and a later flush would write that back.
    pub committing: Vec<u64>,
    /// Of `committing`, the inodes whose write-back entry that transaction folded while the
    /// operation itself changed the file (a chmod, a truncate, a punched hole: anything
    /// beyond storing the buffered writes). The entry still holds the file as it was before
    /// the operation (the commit stores a changed copy, and drops the entry once published),
    /// so a write to such a file waits for the commit instead of adding to the entry: the
    /// entry would outlive the commit and bring back what the operation changed.
    pub reshaping: Vec<u64>,
    /// Inode -> txid of the newest deferred commit that changed its stored record (its data,
    /// its attributes, or, for a directory, its entries). An `fsync` of an inode with nothing
    /// buffered needs a barrier only if that commit is newer than the durable one; entries
    /// a barrier made durable are dropped by [`DbFs::barrier`](crate::DbFs::barrier) (and
    /// ignored until then).
    pub not_durable: BTreeMap<u64, u64>,
    /// Every commit is durable (`dirsync`): the behaviour before deferred commits.
    pub sync_metadata: bool,
    /// When the oldest deferred commit not yet durable was made (the write-back timer makes
    /// it durable [`WRITEBACK_SECS`](crate::WRITEBACK_SECS) later).
    pub unsynced_since: Option<Timestamp>,
    /// Write-back errors not reported yet, per inode: set when a commit nobody waits for (the
    /// timer, the dirty limit, the last close) fails for buffered data of the inode; taken by
    /// [`DbFs::take_write_error`](crate::DbFs::take_write_error) (FUSE's `flush`, i.e.
    /// close(2)); dropped once the data commits (then nothing was lost). The data itself stays
    /// buffered meanwhile, so `fsync` and `sync` retry and report on their own.
    pub write_errors: BTreeMap<u64, VfsError>,
}

impl State {
    /// Some file whose buffered entry is not open any more: a durable commit folds it.
    pub(crate) fn closed_pending(&self) -> bool {
        self.wb.pending.keys().any(|i| !self.open.contains_key(i))
    }

    /// A transaction that changes `ino`'s stored record is running or committing (a direct
    /// write to it, or any commit of it): nothing may be built on the record it replaces.
    pub(crate) fn in_flight(&self, ino: u64) -> bool {
        // The length first: `contains` sets up its unrolled scan even for an empty list,
        // and this runs on every read.
        self.direct_busy_for(ino) || (!self.committing.is_empty() && self.committing.contains(&ino))
    }

    /// A direct write to `ino` is under way.
    pub(crate) fn direct_busy_for(&self, ino: u64) -> bool {
        self.direct_busy.iter().any(|d| d.ino == ino)
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

/// Why [`DbFs::flush`](crate::DbFs::flush) runs: it decides what the commit folds and
/// whether it is still needed once the write transaction is ours.
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
