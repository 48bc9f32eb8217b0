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
//! failure before the meta write changes nothing, one during it poisons the store.

use alloc::collections::BTreeMap;
use alloc::vec;

use crate::sync::Mutex;

use crate::error::{Error, Result};
use crate::freelist::Freelist;
use crate::page::{Meta, PageId};
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
            }),
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
            if let Err(e) = self.pager.write(&[(fl * ps, &buf)]) {
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
        if let Err(e) = self.pager.sync() {
            if let Some((_, fl, n, false)) = old_extent {
                writer.freelist.untake(fl, n);
            }
            return Err(e);
        }
        if let Some((old, ..)) = old_extent {
            if old.0 != 0 {
                // Referenced by the durable meta until the write below: held, then free.
                writer.freelist.free_at(meta.txid, &[old]);
            }
        }
        self.write_meta(writer, &meta)?;
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

    /// Write `meta` to the slot not holding the durable meta and `sync`; on success it is the
    /// durable meta and the snapshot readers start from. The caller holds the writer lock and
    /// has made every page `meta` references durable.
    pub(crate) fn write_meta(&self, writer: &mut WriterState, meta: &Meta) -> Result<()> {
        let ps = self.page_size;
        let mut meta_page = vec![0u8; ps];
        meta.encode(&mut meta_page);
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
