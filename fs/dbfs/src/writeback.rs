//! The write-back cache's commits: how a write transaction folds buffered data and drops it
//! once committed ([`DbFs::write_op`]), group commits ([`DbFs::flush`]), barriers, the
//! write-back timer, and the last release of a node. What `DbFs::state` guards ([`State`]:
//! buffered inodes and chunks, open counts, fsync waiters, the direct write in flight) is
//! defined in `state`, below this module and everything else that touches the cache.
//!
//! # Lock rules
//! Two locks, always in this order: kvdb's writer lock (held by the one write transaction),
//! then `DbFs::state`. A commit holds `state` only while its pages are built and again, still
//! holding the writer lock, to drop what it folded ([`kvdb::Tx::commit_then`]); the commit's
//! I/O runs without `state`. Nothing here waits for the writer lock while holding `state`.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use kvdb::{Pager, Tx};
use vfs::{TimeSet, VfsError, VfsResult};

use crate::error::kv;
use crate::format::{self, Inode};
use crate::mounted::DbFs;
use crate::read::read_inode;
use crate::state::{Flush, Pending, State, WriteBack};
use crate::tuning::WRITEBACK_SECS;
use crate::txn::Txn;

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
        let (r, folded, durable) = {
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
            let (changed, reshaped) = (t.changed_inodes(), t.reshaped());
            st.committing = changed;
            st.reshaping = reshaped;
            (r, folded, durable || st.sync_metadata)
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
            st.reshaping.clear();
            for (ino, gen, size) in folded {
                match st.wb.pending.get_mut(&ino) {
                    Some(p) if p.gen == gen => {
                        st.wb.discard(ino);
                        st.write_errors.remove(&ino);
                    }
                    Some(p) => {
                        // Its placed chunks were inserted or freed by this commit (no
                        // direct write placed more meanwhile: that needs the writer lock).
                        p.placed.clear();
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
                            }
                        }
                        WriteBack::update_reservation(&mut st.wb.reserved, p);
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
            let mut st = self.state.lock();
            st.committing.clear();
            st.reshaping.clear();
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
                    placed: BTreeMap::new(),
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
                    .chain(
                        p.placed
                            .range(first_new..)
                            .map(|(_, pl)| format::footprint(pl.len as usize)),
                    )
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
                    .is_some_and(|p| !p.chunks.is_empty() || !p.placed.is_empty())
                {
                    st.write_errors.insert(ino, e);
                }
            }
            None => {
                for (&ino, p) in st.wb.pending.iter() {
                    if !p.chunks.is_empty() || !p.placed.is_empty() {
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
