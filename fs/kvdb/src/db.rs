//! Opening a store and beginning transactions: the top of kvdb.
//!
//! [`Db::create`] / [`Db::open`] (the meta pages and freelist read at open), the transaction
//! entry points ([`Db::begin_read`], [`Db::begin_write`] and its variants), [`Db::sync`] and the
//! accessors. State: none of its own; the shared state and the barrier are `store.rs`
//! (whose lock rules apply: `begin_write` takes the writer lock, then briefly the snapshot).

use alloc::vec;

use crate::sync::MutexGuard;

use crate::error::{Error, Result};
use crate::freelist::Freelist;
use crate::page::{self, Meta, MAX_PAGE_SIZE, META_SIZE, MIN_PAGE_SIZE};
use crate::page_alloc::reserve_pages;
use crate::pager::Pager;
use crate::store::{Db, WriterState};
use crate::tx::Tx;

/// Creation parameters.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Page size in bytes: a power of two in 1 KiB..=64 KiB. Default 4 KiB.
    pub page_size: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options { page_size: 4096 }
    }
}

impl<P: Pager> Db<P> {
    /// Format `pager` as an empty database (overwriting its first two pages) and open it.
    pub fn create(pager: P, options: Options) -> Result<Db<P>> {
        let ps = options.page_size;
        if !page::valid_page_size(ps) {
            return Err(Error::InvalidOptions);
        }
        if pager.capacity() < 2 * ps as u64 {
            return Err(Error::NoSpace);
        }
        let mut meta = Meta {
            page_size: ps as u32,
            txid: 0,
            root: 0,
            root_seq: 0,
            freelist: 0,
            freelist_pages: 0,
            page_count: 2,
        };
        let mut buf = vec![0u8; 2 * ps];
        meta.encode(&mut buf[..ps]);
        meta.txid = 1;
        meta.encode(&mut buf[ps..]);
        pager.write(&[(0, &buf)])?;
        pager.sync()?;
        Ok(Db::from_parts(pager, meta, 1, Freelist::default()))
    }

    /// Open an existing database: the newer of the two valid meta pages wins. Any inconsistency in
    /// the meta pages or the freelist is [`Error::Corrupted`]; the tree itself is checked lazily,
    /// page by page, as it is read.
    pub fn open(pager: P) -> Result<Db<P>> {
        let len = pager.len();
        if len < META_SIZE as u64 {
            return Err(Error::Corrupted("image smaller than a meta page"));
        }
        let first = Meta::decode(&pager.read(0, META_SIZE)?).ok();
        // The second meta sits one page in; if the first is unreadable, try every page size.
        let mut second = None;
        let mut ps = MIN_PAGE_SIZE;
        while ps <= MAX_PAGE_SIZE {
            if first.is_none_or(|m| m.page_size as usize == ps) && len >= (ps + META_SIZE) as u64 {
                if let Ok(m) = Meta::decode(&pager.read(ps as u64, META_SIZE)?) {
                    if m.page_size as usize == ps {
                        second = Some(m);
                        break;
                    }
                }
            }
            ps *= 2;
        }
        // Barriers alternate slots (not txid parity: deferred commits skip txids), so the
        // newest valid meta wins wherever it is, and the next barrier overwrites the other slot.
        // A newest meta with a commit record was flushed together with its pages: it wins only
        // if they all reached the disk, else the other one (durable before it was written).
        let (newest, older) = match (first, second) {
            (Some(a), Some(b)) if b.txid > a.txid => ((b, 1), Some((a, 0))),
            (Some(a), Some(b)) => ((a, 0), Some((b, 1))),
            (Some(a), None) => ((a, 0), None),
            (None, Some(b)) => ((b, 1), None),
            (None, None) => return Err(Error::Corrupted("no valid meta page")),
        };
        let (meta, slot) = if Self::record_holds(&pager, newest.0, newest.1)? {
            newest
        } else {
            older.ok_or(Error::Corrupted(
                "the newest meta's pages are not on the disk and no older meta is valid",
            ))?
        };
        let ps = meta.page_size as u64;
        let needed = meta
            .page_count
            .checked_mul(ps)
            .ok_or(Error::Corrupted("bad page count"))?;
        if needed > len {
            return Err(Error::Corrupted("image truncated"));
        }
        let freelist = if meta.freelist == 0 {
            Freelist::default()
        } else {
            let extent_len = usize::try_from(meta.freelist_pages * ps)
                .map_err(|_| Error::Corrupted("freelist too large"))?;
            let buf = pager.read(meta.freelist * ps, extent_len)?;
            Freelist::decode(&buf, meta.freelist, meta.page_count)?
        };
        Ok(Db::from_parts(pager, meta, slot, freelist))
    }

    /// Whether the meta in `slot` (decoded as `meta`) may be trusted: it carries no commit
    /// record, or every range its record lists still has its sum on the disk.
    fn record_holds(pager: &P, meta: Meta, slot: u64) -> Result<bool> {
        let ps = meta.page_size as usize;
        let at = slot * ps as u64;
        if !Meta::has_record(&pager.read(at, META_SIZE)?) {
            return Ok(true);
        }
        if at + ps as u64 > pager.len() {
            return Ok(false);
        }
        let page = pager.read(at, ps)?;
        let Ok(record) = Meta::decode_record(&page) else {
            return Ok(false);
        };
        drop(page);
        // Never written: a record is at most RECORD_MAX_BYTES (and reading more could exhaust
        // memory on a damaged image).
        let total = record.iter().map(|e| u64::from(e.len)).sum::<u64>();
        if total > crate::store::RECORD_MAX_BYTES {
            return Ok(false);
        }
        for e in record {
            // Past the end: an image file the last writes would have grown (or a truncated
            // image, which the older meta then has to fit).
            if e.offset
                .checked_add(u64::from(e.len))
                .is_none_or(|end| end > pager.len())
            {
                return Ok(false);
            }
            if page::range_sum(&pager.read(e.offset, e.len as usize)?) != e.sum {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Durability barrier: make the newest commit durable if a deferred commit left it
    /// pending (`sync`, the meta page to the slot not holding the durable meta, `sync`).
    /// Returns whether there was anything to do. Waits for an open write transaction.
    pub fn sync(&self) -> Result<bool> {
        let mut writer = self.writer.lock();
        self.barrier(&mut writer)
    }

    /// Whether commits made by [`Tx::commit_deferred`] wait for a barrier ([`Db::sync`]).
    pub fn sync_pending(&self) -> bool {
        let snap = self.snapshot.lock();
        snap.durable_txid != snap.meta.txid
    }

    /// Txid of the newest commit known to be durable.
    pub fn durable_txid(&self) -> u64 {
        self.snapshot.lock().durable_txid
    }

    /// Bound (in pages, at least 1) on pages held for, or written since, the last barrier: a
    /// deferred commit leaving more forces a barrier. Default: 16 MiB worth of pages.
    pub fn set_barrier_bound(&self, pages: u64) {
        self.writer.lock().barrier_bound = pages.max(1);
    }

    /// Run `f` with the txid of the newest commit while holding the snapshot lock: the cheap
    /// way to copy a few bytes of that snapshot whose place is already known (a location such
    /// as [`crate::Entry::overflow_location`], remembered under the same txid), with neither a
    /// read transaction nor a tree walk. Sound because a page of the newest snapshot is only
    /// reused by a write transaction that *begins* after the next commit, and beginning one
    /// takes this lock to find the oldest reader; so until `f` returns those pages stay as they
    /// are (read them with [`Pager::read`]). `f` must be short (it holds up every `begin_read`
    /// and `begin_write`) and must not begin a transaction itself (it would wait forever).
    pub fn with_committed<R>(&self, f: impl FnOnce(u64) -> R) -> R {
        let snap = self.snapshot.lock();
        f(snap.meta.txid)
    }

    /// Begin a read transaction: a snapshot of the last commit. O(1) in the store size: it copies
    /// the meta and registers its txid (a map keyed by txid: O(log distinct open snapshots)).
    pub fn begin_read(&self) -> Result<Tx<'_, P>> {
        let meta = {
            let mut snap = self.snapshot.lock();
            let meta = snap.meta;
            *snap.readers.entry(meta.txid).or_insert(0) += 1;
            meta
        };
        Ok(Tx::new_read(self, meta))
    }

    /// Begin the write transaction, waiting (spinning) while another one is open. A thread that
    /// already holds the write transaction must not call this again (it would wait forever); use
    /// [`Db::try_begin_write`] where that can happen.
    pub fn begin_write(&self) -> Result<Tx<'_, P>> {
        self.start_write(self.writer.lock())
    }

    fn start_write<'a>(&'a self, mut writer: MutexGuard<'a, WriterState>) -> Result<Tx<'a, P>> {
        if writer.poisoned {
            return Err(Error::Poisoned);
        }
        // Pages held for the barrier are not reusable yet: when the store runs short of
        // space, make them so first (a store filled by held pages must not fail writes).
        if writer.freelist.held_count() > 0 {
            let (page_count, capacity) = {
                let snap = self.snapshot.lock();
                (
                    snap.meta.page_count,
                    self.pager.capacity() / self.page_size as u64,
                )
            };
            let free_now = capacity.saturating_sub(page_count) + writer.freelist.total_count()
                - writer.freelist.held_count();
            if free_now < 2 * reserve_pages(capacity) {
                self.barrier(&mut writer)?;
            }
        }
        let (meta, oldest) = {
            let snap = self.snapshot.lock();
            (
                snap.meta,
                snap.readers.keys().next().copied().unwrap_or(u64::MAX),
            )
        };
        writer.freelist.release(oldest);
        Ok(Tx::new_write(self, meta, writer))
    }

    /// Begin the write transaction of a commit that will be durable ([`Tx::commit`]). If as
    /// many pages as wait for a barrier would not fit in the store's free space (grown into
    /// or reusable now), make the newest commit durable first so the transaction can reuse
    /// them (e.g. a large file deleted by a deferred commit, then a new one written and
    /// fsynced in a nearly full store). Otherwise no extra barrier: the commit's own barrier
    /// covers the deferred commits before it, and a separate one would cost two more device
    /// flushes for every fsync that follows a deferred commit; the store then grows by at
    /// most what waits for a barrier, which the barrier bound limits, and those pages are
    /// free again after the commit.
    pub fn begin_write_durable(&self) -> Result<Tx<'_, P>> {
        let mut writer = self.writer.lock();
        let held = writer.freelist.held_count();
        if !writer.poisoned && held > 0 {
            let (page_count, capacity) = {
                let snap = self.snapshot.lock();
                (
                    snap.meta.page_count,
                    self.pager.capacity() / self.page_size as u64,
                )
            };
            let free_now =
                capacity.saturating_sub(page_count) + writer.freelist.total_count() - held;
            if free_now < held + 2 * reserve_pages(capacity) {
                self.barrier(&mut writer)?;
            }
        }
        self.start_write(writer)
    }

    /// The write transaction, or `None` if another one is open.
    pub fn try_begin_write(&self) -> Result<Option<Tx<'_, P>>> {
        match self.writer.try_lock() {
            Some(writer) => self.start_write(writer).map(Some),
            None => Ok(None),
        }
    }

    /// `begin_write()` if `writable`, else `begin_read()` (the jammdb spelling).
    pub fn tx(&self, writable: bool) -> Result<Tx<'_, P>> {
        if writable {
            self.begin_write()
        } else {
            self.begin_read()
        }
    }

    /// The page size chosen at creation.
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// Longest key accepted by `put` (page size / 8).
    pub fn max_key_len(&self) -> usize {
        page::max_key_len(self.page_size)
    }

    /// The pager, e.g. to read its counters or image.
    pub fn pager(&self) -> &P {
        &self.pager
    }

    /// Close the database and give back the pager.
    pub fn into_pager(self) -> P {
        self.pager
    }

    /// Pages free for writes as of the newest commit, counting those freed but not reusable
    /// yet (held for a barrier or by a reader; the allocator gets them back when it runs
    /// short), and the [`reserve_pages`] too. Never waits for the write transaction.
    pub fn free_pages(&self) -> u64 {
        self.snapshot.lock().free_pages
    }

    /// Pages in use up to the high-water mark, and pages free for reuse right now. Never waits:
    /// `free_pages` is `None` while a write transaction is open.
    pub fn stats(&self) -> Stats {
        let meta = self.snapshot.lock().meta;
        let (free, placed) = match self.writer.try_lock() {
            Some(w) => (
                Some(w.freelist.free_count() as u64),
                Some(w.freelist.placed_count()),
            ),
            None => (None, None),
        };
        Stats {
            txid: meta.txid,
            page_count: meta.page_count,
            free_pages: free,
            placed_pages: placed,
        }
    }
}

/// Space accounting, from [`Db::stats`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stats {
    /// Last committed transaction.
    pub txid: u64,
    /// High-water mark in pages (the store's size).
    pub page_count: u64,
    /// Pages on the freelist that the next write transaction may reuse (`None` while a write
    /// transaction holds the freelist).
    pub free_pages: Option<u64>,
    /// Pages placed by [`crate::Tx::reserve_placed`] and not inserted or dropped yet (`None`
    /// while a write transaction holds the freelist).
    pub placed_pages: Option<u64>,
}
