//! The database handle: open/create, the committed-meta snapshot, reader registry, writer lock.

use alloc::collections::BTreeMap;
use alloc::vec;

use crate::sync::{Mutex, MutexGuard};

use crate::error::{Error, Result};
use crate::freelist::Freelist;
use crate::page::{self, Meta, PageId, MAX_PAGE_SIZE, META_SIZE, MIN_PAGE_SIZE};
use crate::pager::Pager;
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

/// The committed state readers start from, and who is reading which snapshot.
pub(crate) struct Snapshot {
    pub meta: Meta,
    /// Open read transactions per snapshot txid.
    pub readers: BTreeMap<u64, usize>,
}

/// State only the (single) write transaction touches; its lock is the writer lock.
pub(crate) struct WriterState {
    pub freelist: Freelist,
    /// Set when a commit failed after it may have written its meta page.
    pub poisoned: bool,
}

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
        Ok(Db::from_parts(pager, meta, Freelist::default()))
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
        let meta = match (first, second) {
            (Some(a), Some(b)) => {
                if b.txid > a.txid {
                    b
                } else {
                    a
                }
            }
            (Some(m), None) | (None, Some(m)) => m,
            (None, None) => return Err(Error::Corrupted("no valid meta page")),
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
        Ok(Db::from_parts(pager, meta, freelist))
    }

    fn from_parts(pager: P, meta: Meta, freelist: Freelist) -> Db<P> {
        Db {
            pager,
            page_size: meta.page_size as usize,
            snapshot: Mutex::new(Snapshot {
                meta,
                readers: BTreeMap::new(),
            }),
            writer: Mutex::new(WriterState {
                freelist,
                poisoned: false,
            }),
        }
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

    fn start_write<'a>(
        &'a self,
        mut writer: MutexGuard<'a, WriterState>,
    ) -> Result<Tx<'a, P>> {
        if writer.poisoned {
            return Err(Error::Poisoned);
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

    /// Pages in use up to the high-water mark, and pages free for reuse right now. Never waits:
    /// `free_pages` is `None` while a write transaction is open.
    pub fn stats(&self) -> Stats {
        let meta = self.snapshot.lock().meta;
        let free = self
            .writer
            .try_lock()
            .map(|w| w.freelist.free_count() as u64);
        Stats {
            txid: meta.txid,
            page_count: meta.page_count,
            free_pages: free,
        }
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

    /// Read node page `id` of a snapshot whose high-water mark is `page_count`.
    pub(crate) fn read_page(&self, id: PageId, page_count: u64) -> Result<P::Page<'_>> {
        if id < 2 || id >= page_count {
            return Err(Error::Corrupted("page id out of range"));
        }
        self.pager.read(id * self.page_size as u64, self.page_size)
    }

    /// Read an overflow value of `len` bytes starting at page `id`.
    pub(crate) fn read_overflow(
        &self,
        id: PageId,
        len: u64,
        page_count: u64,
    ) -> Result<P::Page<'_>> {
        let pages = len.div_ceil(self.page_size as u64).max(1);
        let end = id
            .checked_add(pages)
            .ok_or(Error::Corrupted("overflow out of range"))?;
        if id < 2 || end > page_count {
            return Err(Error::Corrupted("overflow out of range"));
        }
        let len = usize::try_from(len).map_err(|_| Error::Corrupted("overflow too large"))?;
        self.pager.read(id * self.page_size as u64, len)
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
}
