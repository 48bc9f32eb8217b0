//! The state every transaction of one database shares, and the durability barrier.
//!
//! State: [`Db`]'s pager, its committed [`Snapshot`] (the newest meta and the open readers per
//! snapshot txid) and the [`WriterState`] (the freelist, the durable meta slot, the barrier
//! bound). This module is below the transactions: they hold a `&Db` and call the barrier, the
//! meta write and the reader registry here. Opening a store and beginning transactions is
//! `db.rs`, above them.
//!
//! Locks: `Db::writer` (held by the write transaction for its whole life, and by a barrier)
//! guards the [`WriterState`]; `Db::snapshot` is held for a few instructions. Order: writer, then
//! snapshot. Ordering of a barrier: (the current freelist extent, if deferred commits left it
//! stale) -> `sync` -> the meta page into the slot not holding the durable meta -> `sync`; a
//! failure before the meta write changes nothing, one during it poisons the store. A barrier
//! that wrote little since the last one (at most [`RECORD_MAX_BYTES`] in ranges that fit a
//! commit record) skips the first `sync`: its meta page lists those ranges with their sums
//! ([`crate::page::FLAG_RECORD`]), and open trusts it only if they all reached the disk, so one
//! device flush is enough (a barrier that fsync makes for a small change costs one flush, not
//! two).

use alloc::collections::BTreeMap;
use alloc::vec;
use alloc::vec::Vec;
use core::sync::atomic::AtomicU64;
use core::sync::atomic::Ordering::SeqCst;

use crate::sync::Mutex;

use crate::error::{Error, Result};
use crate::freelist::Freelist;
use crate::page::{self, range_sum, Meta, PageId, RecordEntry};
use crate::pager::Pager;
use crate::source::SnapshotPages;

/// The committed state readers start from, and who is reading which snapshot.
pub(crate) struct Snapshot {
    pub meta: Meta,
    /// Txid of the newest meta known to be on stable storage (what a crash goes back to).
    /// Equal to `meta.txid` unless deferred commits wait for a barrier.
    pub durable_txid: u64,
    /// Open read transactions per snapshot txid.
    pub readers: BTreeMap<u64, usize>,
    /// Pages the store will have free once no reader holds an old snapshot and the next
    /// barrier completed (unused capacity + every page on the freelist), as of the newest
    /// commit. See [`Db::free_pages`].
    pub free_pages: u64,
}

/// State only the (single) write transaction touches; its lock is the writer lock.
pub(crate) struct WriterState {
    pub freelist: Freelist,
    /// Set when a commit failed after it may have written its meta page.
    pub poisoned: bool,
    /// Meta slot (0 or 1) holding the newest durable meta: the next barrier writes the other.
    pub durable_slot: u64,
    /// A deferred commit that leaves more pages than this held or freshly written since the
    /// last barrier forces one ([`Db::set_barrier_bound`]).
    pub barrier_bound: u64,
    /// The freelist extent the newest meta points at is out of date: deferred commits do not
    /// write one (nothing reads it before the next barrier, which writes a fresh one).
    pub freelist_stale: bool,
    /// What was written since the last barrier, for the next one's commit record.
    pub epoch: Epoch,
    /// [`Db::unnoted_writes`] as the last flush before a meta page found it.
    pub synced_unnoted: u64,
}

/// Bytes a barrier may have written since the last one and still end with a single device
/// flush (a commit record in its meta page, see [`crate::page::FLAG_RECORD`]): the sums cost a
/// pass over those bytes, and opening the store reads them all back.
pub const RECORD_MAX_BYTES: u64 = 1 << 20;

/// Bytes an [`Epoch`] hashes in all (ranges written again count again) before it gives up: a
/// long run of small commits with no barrier (unlinks, creates) rewrites the same few tree
/// pages over and over, and each commit's pages were summed though only the last sums reach a
/// record. Past this the barrier flushes twice, which costs one flush once; before, every
/// commit paid for its sums.
pub const RECORD_CHURN_BYTES: u64 = 4 * RECORD_MAX_BYTES;

/// The ranges written since the last barrier, each with the sum of its newest bytes, by store
/// offset: the next barrier's commit record. Spoiled (the barrier then flushes twice, as
/// without records) once they are too many or too large, more than [`RECORD_CHURN_BYTES`]
/// were summed, a write failed, or a write covered only part of an earlier range.
#[derive(Default)]
pub(crate) struct Epoch {
    ranges: BTreeMap<u64, (u32, u64)>,
    bytes: u64,
    /// Bytes summed since the last barrier, rewrites included.
    summed: u64,
    spoiled: bool,
}

impl Epoch {
    /// Note `writes`, which reached the pager; at most `max_ranges` are kept. `then`: bytes
    /// the writer is sure to write after these before any barrier (a value written inside a
    /// transaction is followed by at least its commit's leaf page).
    pub fn note(&mut self, writes: &[(u64, &[u8])], max_ranges: usize, then: u64) {
        // A batch past the byte bound or the churn bound (counting what is sure to follow)
        // spoils the record before anything is summed: pages are not hashed in vain (a 1 MiB
        // value write used to be summed whole, then spoiled by its own commit's pages).
        let total: u64 = writes.iter().map(|w| w.1.len() as u64).sum();
        self.summed = self.summed.saturating_add(total);
        if self.bytes.saturating_add(total).saturating_add(then) > RECORD_MAX_BYTES
            || self.summed.saturating_add(then) > RECORD_CHURN_BYTES
        {
            self.spoil();
        }
        for &(off, data) in writes {
            if self.spoiled {
                return;
            }
            if data.is_empty() {
                continue;
            }
            let len = data.len() as u64;
            let end = off.saturating_add(len);
            // Earlier ranges this write covers are replaced (a page freed and taken again
            // before the barrier); one it covers only in part cannot be described.
            while let Some((&s, &(l, _))) = self.ranges.range(..end).next_back() {
                let e = s + u64::from(l);
                if e <= off {
                    break;
                }
                if s < off || e > end {
                    self.spoil();
                    return;
                }
                self.ranges.remove(&s);
                self.bytes -= u64::from(l);
            }
            if len > u64::from(u32::MAX)
                || self.bytes + len > RECORD_MAX_BYTES
                || self.ranges.len() >= max_ranges
            {
                self.spoil();
                return;
            }
            self.ranges.insert(off, (len as u32, range_sum(data)));
            self.bytes += len;
        }
    }

    /// Writes failed (part of them may have landed): no record this time.
    pub fn spoil(&mut self) {
        self.spoiled = true;
        self.ranges.clear();
        self.bytes = 0;
    }
}

/// Default bound on pages held or written since the last barrier: 16 MiB worth.
pub const DEFAULT_BARRIER_BOUND_BYTES: u64 = 16 << 20;

/// A key-value store over a [`Pager`].
///
/// `Db` is a value: several databases (on several pagers) never share state. It is `Sync` when the
/// pager is, so read transactions may run on many threads while one thread writes.
pub struct Db<P: Pager> {
    pub(crate) pager: P,
    pub(crate) page_size: usize,
    pub(crate) snapshot: Mutex<Snapshot>,
    pub(crate) writer: Mutex<WriterState>,
    /// Writes made without the writer lock ([`Db::write_placed`]) that have returned: a
    /// barrier whose [`WriterState::synced_unnoted`] is behind flushes before its meta page.
    pub(crate) unnoted_writes: AtomicU64,
}

impl<P: Pager> Db<P> {
    pub(crate) fn from_parts(pager: P, meta: Meta, durable_slot: u64, freelist: Freelist) -> Db<P> {
        let page_size = meta.page_size as usize;
        let db = Db {
            pager,
            page_size,
            snapshot: Mutex::new(Snapshot {
                meta,
                durable_txid: meta.txid,
                readers: BTreeMap::new(),
                free_pages: 0,
            }),
            writer: Mutex::new(WriterState {
                freelist,
                poisoned: false,
                durable_slot,
                barrier_bound: (DEFAULT_BARRIER_BOUND_BYTES / page_size as u64).max(16),
                freelist_stale: false,
                epoch: Epoch::default(),
                synced_unnoted: 0,
            }),
            unnoted_writes: AtomicU64::new(0),
        };
        {
            let w = db.writer.lock();
            db.note_free(&w, meta.page_count);
        }
        db
    }

    /// Record the free pages after a commit (see [`Snapshot::free_pages`]).
    pub(crate) fn note_free(&self, writer: &WriterState, page_count: u64) {
        let capacity = self.pager.capacity() / self.page_size as u64;
        let free = capacity.saturating_sub(page_count) + writer.freelist.total_count();
        self.snapshot.lock().free_pages = free;
    }

    /// The barrier, with the writer lock held (so the snapshot meta is the newest commit and
    /// no commit runs meanwhile). A failure before the meta write changes nothing; one during
    /// it poisons the store (the slot's content is unknown).
    pub(crate) fn barrier(&self, writer: &mut WriterState) -> Result<bool> {
        self.barrier_with(writer, None)
    }

    /// [`Db::barrier`] while a write transaction is open: it may have grown the store past the
    /// newest commit's page count already (`tx_pages`), so a fresh freelist extent that has to
    /// grow the store goes past those pages, and `tx_pages` follows it.
    fn barrier_with(&self, writer: &mut WriterState, tx_pages: Option<&mut u64>) -> Result<bool> {
        if writer.poisoned {
            return Err(Error::Poisoned);
        }
        // With a transaction open, written pages may belong to it (not to the meta written
        // here): no commit record then.
        let open_tx = tx_pages.is_some();
        let mut meta = {
            let snap = self.snapshot.lock();
            if snap.durable_txid == snap.meta.txid {
                return Ok(false);
            }
            snap.meta
        };
        let mut old_extent = None;
        if writer.freelist_stale {
            // Deferred commits left the freelist extent as the durable meta had it: write the
            // current one to fresh pages. The old extent stays intact until the new meta is
            // durable, and is listed as free in the new one.
            let ps = self.page_size as u64;
            let old = (meta.freelist, meta.freelist_pages);
            let extra: &[(PageId, u64)] = if old.0 != 0 {
                core::slice::from_ref(&old)
            } else {
                &[]
            };
            let n = writer.freelist.pages_needed(self.page_size, extra.len());
            // The store's end as the open transaction (if any) sees it: an extent that has to
            // grow the store goes past that transaction's pages.
            let mut end = meta
                .page_count
                .max(tx_pages.as_deref().copied().unwrap_or(0));
            let capacity = self.pager.capacity() / ps;
            let (fl, grown) = writer
                .freelist
                .take_or_grow(n, &mut end, capacity)
                .ok_or(Error::NoSpace)?;
            let mut buf = alloc::vec![0u8; (n * ps) as usize];
            writer.freelist.encode_with(&mut buf, fl, extra);
            if let Err(e) = self.write_noted(writer, &[(fl * ps, &buf)], false, false) {
                if !grown {
                    writer.freelist.untake(fl, n);
                }
                return Err(e);
            }
            meta.freelist = fl;
            meta.freelist_pages = n;
            if grown {
                // Pages an open transaction grew into below the extent are neither listed nor
                // referenced by this meta: a crash before its commit leaks them, never reuses them.
                meta.page_count = end;
                if let Some(tx_pages) = tx_pages {
                    *tx_pages = end;
                }
            }
            old_extent = Some((old, fl, n, grown));
        }
        let record = if open_tx {
            None
        } else {
            self.commit_record(writer)
        };
        if record.is_none() {
            if let Err(e) = self.sync_unnoted(writer) {
                if let Some((_, fl, n, false)) = old_extent {
                    writer.freelist.untake(fl, n);
                }
                return Err(e);
            }
        }
        if let Some((old, ..)) = old_extent {
            if old.0 != 0 {
                // Referenced by the durable meta until the write below: held, then free.
                writer.freelist.free_at(meta.txid, &[old]);
            }
        }
        self.write_meta(writer, &meta, record.as_deref())?;
        writer.freelist_stale = false;
        Ok(true)
    }

    /// Out of free pages in an open write transaction (which has grown the store to
    /// `tx_pages`): if pages wait for a barrier, make the newest commit durable and release what that and the readers allow. Pages the open
    /// transaction freed stay put (the durable meta still references them). Returns whether
    /// anything may have become free.
    pub(crate) fn reclaim_held(
        &self,
        writer: &mut WriterState,
        tx_pages: &mut u64,
    ) -> Result<bool> {
        if writer.freelist.held_count() == 0 {
            return Ok(false);
        }
        self.barrier_with(writer, Some(tx_pages))?;
        let limit = {
            let snap = self.snapshot.lock();
            let oldest = snap.readers.keys().next().copied().unwrap_or(u64::MAX);
            oldest.min(snap.meta.txid)
        };
        writer.freelist.release(limit);
        Ok(true)
    }

    /// `pager.write` of `writes` (`pager.write_direct` if `direct`), noted for the next
    /// barrier's commit record; a failed write spoils the record (part of it may have landed).
    /// `value`: the writes are values of an open write transaction, so its commit writes at
    /// least one page more in the same epoch ([`Epoch::note`]'s `then`).
    pub(crate) fn write_noted(
        &self,
        writer: &mut WriterState,
        writes: &[(u64, &[u8])],
        direct: bool,
        value: bool,
    ) -> Result<()> {
        let r = if direct {
            self.pager.write_direct(writes)
        } else {
            self.pager.write(writes)
        };
        match r {
            // Pages freed again before the barrier are dropped from the record then, so keep
            // room for more ranges than a meta page holds.
            Ok(()) => writer.epoch.note(
                writes,
                4 * page::record_capacity(self.page_size),
                if value { self.page_size as u64 } else { 0 },
            ),
            Err(_) => writer.epoch.spoil(),
        }
        r
    }

    /// The commit record of a barrier made now with no write transaction open, or `None` if it
    /// must flush before its meta page (too much written, or a failed write). It lists the
    /// ranges written since the last barrier that are not free now: those the new meta
    /// references (nothing else is allocated). Pages written and freed again before the barrier
    /// are left out: they may be written again once the barrier is done, while the record of
    /// the newest durable meta must stay true until a newer one is durable (copy-on-write keeps
    /// every page the meta references, and only those, until then).
    pub(crate) fn commit_record(&self, writer: &WriterState) -> Option<Vec<RecordEntry>> {
        let e = &writer.epoch;
        // Writes made without the writer lock since the last flush are in no record.
        if e.spoiled || self.unnoted_writes.load(SeqCst) != writer.synced_unnoted {
            return None;
        }
        let ps = self.page_size as u64;
        let listed = writer.freelist.lister();
        let record: Vec<RecordEntry> = e
            .ranges
            .iter()
            .filter(|(&off, &(len, _))| {
                let first = off / ps;
                let end = (off + u64::from(len)).div_ceil(ps);
                !listed(first, end - first)
            })
            .map(|(&offset, &(len, sum))| RecordEntry { offset, len, sum })
            .collect();
        (record.len() <= page::record_capacity(self.page_size)).then_some(record)
    }

    /// `sync`, the flush before a meta page: it covers every [`Db::write_placed`] that had
    /// returned when it began, which [`WriterState::synced_unnoted`] then says.
    pub(crate) fn sync_unnoted(&self, writer: &mut WriterState) -> Result<()> {
        let done = self.unnoted_writes.load(SeqCst);
        self.pager.sync()?;
        writer.synced_unnoted = done;
        Ok(())
    }

    /// Write `meta` to the slot not holding the durable meta and `sync`; on success it is the
    /// durable meta and the snapshot readers start from. The caller holds the writer lock and
    /// has either made every page `meta` references durable (`record` is `None`) or passes
    /// the [`Db::commit_record`] of the pages written since the last barrier, which this one
    /// `sync` makes durable with the meta.
    pub(crate) fn write_meta(
        &self,
        writer: &mut WriterState,
        meta: &Meta,
        record: Option<&[RecordEntry]>,
    ) -> Result<()> {
        let ps = self.page_size;
        let mut meta_page = vec![0u8; ps];
        match record {
            Some(r) => meta.encode_record(&mut meta_page, r),
            None => meta.encode(&mut meta_page),
        }
        let slot = 1 - writer.durable_slot;
        if let Err(e) = self
            .pager
            .write(&[(slot * ps as u64, &meta_page)])
            .and_then(|_| self.pager.sync())
        {
            writer.poisoned = true;
            return Err(e);
        }
        writer.durable_slot = slot;
        writer.epoch = Epoch::default();
        writer.freelist.barrier_done(meta.txid);
        {
            let mut snap = self.snapshot.lock();
            snap.meta = *meta;
            snap.durable_txid = meta.txid;
        }
        self.pager.committed(meta.txid);
        Ok(())
    }

    pub(crate) fn end_read(&self, txid: u64) {
        let mut snap = self.snapshot.lock();
        if let Some(n) = snap.readers.get_mut(&txid) {
            *n -= 1;
            if *n == 0 {
                snap.readers.remove(&txid);
            }
        }
    }

    /// The pages of a snapshot whose high-water mark is `page_count`, for the tree code.
    pub(crate) fn pages(&self, page_count: u64) -> SnapshotPages<'_, P> {
        SnapshotPages {
            pager: &self.pager,
            page_size: self.page_size,
            page_count,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_batch_that_leaves_no_room_for_its_commit_is_not_summed() {
        let data = vec![7u8; RECORD_MAX_BYTES as usize];
        let writes = [(8192u64, data.as_slice())];
        // Alone (a barrier's or a commit's own pages), exactly the bound still makes a record.
        let mut e = Epoch::default();
        e.note(&writes, 1000, 0);
        assert!(!e.spoiled);
        assert_eq!(e.ranges.len(), 1);
        // A value of that size: its commit's leaf page follows, so no record can come of it,
        // and nothing is kept (or hashed).
        let mut e = Epoch::default();
        e.note(&writes, 1000, 4096);
        assert!(e.spoiled);
        assert!(e.ranges.is_empty());
        // A smaller value still leaves room: recorded.
        let mut e = Epoch::default();
        e.note(
            &[(8192, &data[..RECORD_MAX_BYTES as usize / 2])],
            1000,
            4096,
        );
        assert!(!e.spoiled);
        assert_eq!(e.ranges.len(), 1);
    }
}
