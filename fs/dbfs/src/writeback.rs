//! The write-back cache and the commits that empty it: everything `DbFs::state` guards
//! ([`State`]: buffered inodes and chunks, open counts, fsync waiters, the direct write in
//! flight), how a write transaction folds buffered data and drops it once committed
//! ([`DbFs::write_op`]), group commits ([`DbFs::flush`]), barriers, the write-back timer, and
//! the last release of a node.
//!
//! # Lock rules
//! Two locks, always in this order: kvdb's writer lock (held by the one write transaction),
//! then `DbFs::state`. A commit holds `state` only while its pages are built and again, still
//! holding the writer lock, to drop what it folded ([`kvdb::Tx::commit_then`]); the commit's
//! I/O runs without `state`. Nothing here waits for the writer lock while holding `state`.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use kvdb::{Pager, Tx};
use vfs::{TimeSet, Timestamp, VfsError, VfsResult};

use crate::format;
use crate::read::read_inode;
use crate::snapshot_cache::{ChunkLocs, SnapshotInodes};
use crate::txn::Txn;
use crate::{kv, DbFs, Inode, WRITEBACK_SECS};

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
    pub bytes: usize,
    /// Pages the dirty chunks take as stored values (see [`crate::reserve`]).
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
    /// Drop the buffered chunks `[first, end)` of `ino` (a direct write stored newer ones).
    pub(crate) fn drop_chunks(&mut self, ino: u64, first: u64, end: u64, page_size: u64, cs: u64) {
        let Some(p) = self.pending.get_mut(&ino) else {
            return;
        };
        let gone: Vec<u64> = p.chunks.range(first..end).map(|(&i, _)| i).collect();
        for idx in gone {
            let charged = p.chunks.get(&idx).map(|b| p.commit_len(idx, b.len(), cs));
            p.partial.remove(&idx);
            if let (Some(buf), Some(charged)) = (p.chunks.remove(&idx), charged) {
                p.bytes = p.bytes.saturating_sub(buf.len());
                p.value_pages = p
                    .value_pages
                    .saturating_sub(crate::reserve::value_pages(charged, page_size));
                self.dirty_bytes = self.dirty_bytes.saturating_sub(buf.len());
            }
        }
        WriteBack::update_reservation(&mut self.reserved, p);
    }

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
    /// The write-back cache as the last small read found it (see [`ReadMemo`]).
    pub read_memo: ReadMemo,
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
    /// Inode -> txid of the newest deferred commit that changed its stored record (its data,
    /// its attributes, or, for a directory, its entries). An `fsync` of an inode with nothing
    /// buffered needs a barrier only if that commit is newer than the durable one; entries
    /// a barrier made durable are dropped by [`DbFs::barrier`] (and ignored until then).
    pub not_durable: BTreeMap<u64, u64>,
    /// Every commit is durable (`dirsync`): the behaviour before deferred commits.
    pub sync_metadata: bool,
    /// When the oldest deferred commit not yet durable was made (the write-back timer makes
    /// it durable [`WRITEBACK_SECS`] later).
    pub unsynced_since: Option<Timestamp>,
    /// Write-back errors not reported yet, per inode: set when a commit nobody waits for (the
    /// timer, the dirty limit, the last close) fails for buffered data of the inode; taken by
    /// [`DbFs::take_write_error`] (FUSE's `flush`, i.e. close(2)); dropped once the data
    /// commits (then nothing was lost). The data itself stays buffered meanwhile, so `fsync`
    /// and `sync` retry and report on their own.
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
        self.direct_busy.is_some_and(|d| d.ino == ino)
            || (!self.committing.is_empty() && self.committing.contains(&ino))
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

impl<P: Pager> DbFs<P> {
    /// Set the write-back limit in bytes (0: every write commits at once).
    pub fn set_dirty_limit(&self, bytes: usize) {
        self.state.lock().wb.limit = bytes;
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
            if let Err(e) = flushed {
                self.note_write_error(None, e);
            }
            self.barrier()?;
            return flushed;
        }
        if self.db.sync_pending() {
            let since = *self.state.lock().unsynced_since.get_or_insert(now);
            if now.sec.saturating_sub(since.sec) >= WRITEBACK_SECS {
                return self.barrier();
            }
        } else {
            // A barrier kvdb made on its own (its bound) left these stale; a commit made
            // since may have added a newer one, which stays.
            let durable = self.db.durable_txid();
            let mut st = self.state.lock();
            st.unsynced_since = None;
            st.not_durable.retain(|_, t| *t > durable);
        }
        Ok(())
    }

    /// Make every commit so far durable (kvdb's barrier; nothing to do when none is pending).
    pub(crate) fn barrier(&self) -> VfsResult<()> {
        // Cleared first: a commit made meanwhile sets it again, and one the barrier covers
        // leaves it stale, which the timer sees (nothing pending) and clears.
        self.state.lock().unsynced_since = None;
        self.db.sync().map_err(kv)?;
        let durable = self.db.durable_txid();
        self.state.lock().not_durable.retain(|_, t| *t > durable);
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
    pub(crate) fn run_txn<R>(
        &self,
        tx: Tx<'_, P>,
        f: impl FnOnce(&mut Txn<'_, '_, P>) -> VfsResult<R>,
    ) -> VfsResult<R> {
        self.run_txn_as(tx, false, f)
    }

    /// [`DbFs::run_txn`], durable when it returns if `durable` (fsync, sync).
    pub(crate) fn run_txn_as<R>(
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
            // Space promised to buffered data this commit does not store stays free for it.
            if st.wb.reserved > 0 {
                let mut folded = t.folded.clone();
                folded.sort_unstable();
                folded.dedup();
                let folded_pages: u64 = folded
                    .iter()
                    .filter_map(|ino| st.wb.pending.get(ino).map(|p| p.reserved))
                    .sum();
                let left = st.wb.reserved.saturating_sub(folded_pages);
                if left > 0 {
                    tx.keep_free(left + crate::reserve::COMMIT_PAGES);
                }
            }
            let changed = t.changed_inodes();
            st.committing = changed;
            (r, folded, st.direct_busy, durable || st.sync_metadata)
        };
        // The folded entries go while kvdb's writer lock is still held, so the next write
        // transaction never finds an entry whose data this commit already stored (it would
        // count those chunks as new).
        let txid = tx.id();
        let after = || {
            let mut guard = self.state.lock();
            let st = &mut *guard;
            // In the same critical section as the discards below: an fsync never finds an
            // inode's buffered data gone without this commit noted.
            if !durable {
                for &ino in &st.committing {
                    st.not_durable.insert(ino, txid);
                }
            }
            st.committing.clear();
            // A direct write's chunks are stored now: the cached ones it replaced go, and
            // buffered writes to the file may go on.
            if let Some(d) = direct {
                st.wb.drop_chunks(
                    d.ino,
                    d.first,
                    d.end,
                    self.db.page_size() as u64,
                    self.chunk_size,
                );
                if let Some(p) = st.wb.pending.get_mut(&d.ino) {
                    p.inode.size = p.inode.size.max(d.end.saturating_mul(self.chunk_size));
                }
                st.direct_busy = None;
            }
            for (ino, gen, size) in folded {
                match st.wb.pending.get_mut(&ino) {
                    Some(p) if p.gen == gen => {
                        st.wb.discard(ino);
                        st.write_errors.remove(&ino);
                    }
                    Some(p) => {
                        // Written while the commit ran: stays dirty; the store now holds the
                        // folded size.
                        if let Some(size) = size {
                            p.stored_size = size;
                            if !p.partial.is_empty() {
                                // A partly loaded chunk is charged at the stored chunk's
                                // length, which this size may change.
                                let (cs, ps) = (self.chunk_size, self.db.page_size() as u64);
                                p.value_pages = p
                                    .chunks
                                    .iter()
                                    .map(|(&i, b)| p.commit_len(i, b.len(), cs))
                                    .map(|len| crate::reserve::value_pages(len, ps))
                                    .sum();
                                WriteBack::update_reservation(&mut st.wb.reserved, p);
                            }
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
                    if !st.wb.pending.contains_key(&ino) && !st.closed_pending() {
                        // Nothing buffered: what was committed (data, or the entries of a
                        // directory) becomes durable, unless a barrier made it so already
                        // (then no device flush at all).
                        let newest = st.not_durable.get(&ino).copied();
                        drop(st);
                        if newest.is_none_or(|t| t <= self.db.durable_txid()) {
                            return Ok(());
                        }
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
                if !st.wb.pending.contains_key(&ino) && !st.closed_pending() {
                    // Committed by the transaction we waited for; maybe not durably.
                    drop(st);
                    drop(tx);
                    return self.barrier();
                }
                // The waiting fsyncs' inodes, and every closed file's buffered data (which
                // the last close leaves to the next durable commit: see `release_node`).
                let mut v: Vec<u64> = st
                    .wb
                    .pending
                    .keys()
                    .copied()
                    .filter(|i| st.fsync_wanted.contains_key(i) || !st.open.contains_key(i))
                    .collect();
                if st.wb.pending.contains_key(&ino) && !v.contains(&ino) {
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

    /// Set `ino`'s atime and/or mtime (ctime becomes now, as in a setattr transaction) in its
    /// write-back entry, like a relatime update: they commit with the file's data (fsync, the
    /// timer, the dirty limit, sync, unmount, or the next metadata operation on the file), so a
    /// crash loses them exactly when it would lose a buffered write. `false`, changing nothing,
    /// when every commit is synchronous (`sync_metadata`) or a commit of the inode is running:
    /// the caller then runs the transaction.
    pub(crate) fn buffer_times(
        &self,
        ino: u64,
        atime: Option<TimeSet>,
        mtime: Option<TimeSet>,
    ) -> VfsResult<bool> {
        let now = self.clock.now();
        let resolve = |ts: TimeSet| match ts {
            TimeSet::Now => now,
            TimeSet::At(x) => x,
        };
        let mut st = self.state.lock();
        if st.sync_metadata || st.in_flight(ino) {
            return Ok(false);
        }
        let p = self.pending_mut(&mut st, ino)?;
        if let Some(a) = atime {
            p.inode.atime = resolve(a);
        }
        if let Some(m) = mtime {
            p.inode.mtime = resolve(m);
        }
        p.inode.ctime = now;
        p.gen += 1;
        Ok(true)
    }

    /// The write-back entry of `ino`, created from the stored record if absent.
    pub(crate) fn pending_mut<'s>(
        &self,
        st: &'s mut State,
        ino: u64,
    ) -> VfsResult<&'s mut Pending> {
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
                    partial: BTreeMap::new(),
                    bytes: 0,
                    value_pages: 0,
                    reserved: 0,
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

    pub(crate) fn open_node(&self, ino: u64) {
        *self.state.lock().open.entry(ino).or_insert(0) += 1;
    }

    /// Remember that a commit nobody waited for failed with `e` for the buffered data of
    /// `ino` (`None`: of every inode with buffered data).
    pub(crate) fn note_write_error(&self, ino: Option<u64>, e: VfsError) {
        let mut st = self.state.lock();
        let st = &mut *st;
        match ino {
            Some(ino) => {
                if st
                    .wb
                    .pending
                    .get(&ino)
                    .is_some_and(|p| !p.chunks.is_empty())
                {
                    st.write_errors.insert(ino, e);
                }
            }
            None => {
                for (&ino, p) in st.wb.pending.iter() {
                    if !p.chunks.is_empty() {
                        st.write_errors.insert(ino, e);
                    }
                }
            }
        }
    }

    /// The error of a failed background commit of `ino`'s data not reported yet, if its data
    /// is still not committed; reported once.
    pub(crate) fn take_write_error(&self, ino: u64) -> VfsResult<()> {
        match self.state.lock().write_errors.remove(&ino) {
            Some(e) => Err(e),
            None => Ok(()),
        }
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
        // A linked file's buffered data (and times) stay buffered at the last close: the next
        // durable commit folds every closed file's entry (any fsync, `sync`), as do the
        // write-back timer, the dirty limit, unmount and a metadata operation on the file
        // (rename over it, say). So closing costs no commit, a file deleted soon after it was
        // written (a compiler's temporaries, a mail spool) is never written to the store, and
        // a file written, closed and then made durable by an fsync of its directory (or of
        // anything) has its data there too.
        if !unlinked {
            return Ok(());
        }
        drop(st);
        let r = self.write_op(|t| {
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
        });
        if let Err(e) = r {
            self.note_write_error(Some(ino), e);
        }
        r
    }
}
