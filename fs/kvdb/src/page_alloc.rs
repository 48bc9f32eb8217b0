//! The write transaction's page allocator: the one place that decides where a new page comes
//! from, for nodes and values while a transaction builds them and for its commit alike.
//!
//! Policy: take a run from the freelist (first fit), else grow the store up to the pager's
//! capacity ([`Freelist::take_or_grow`], the placement rule a barrier's freelist extent follows
//! too); else, if pages are held for a barrier, make one ([`Db::reclaim_held`]) and try the
//! freelist again; else [`Error::NoSpace`]. Pages freed and not yet reusable (pending readers,
//! held for a barrier) are never handed out. At commit, [`PageAlloc::check_reserve`] keeps
//! [`reserve_pages`] free for transactions that may use them.
//!
//! State: the runs taken from the freelist by this transaction (given back if it does not
//! commit); pages past the old end are noted as fresh in the freelist. Runs under the writer
//! lock (the caller holds the write transaction and passes its [`WriterState`]).

use alloc::vec::Vec;

use crate::error::{Error, Result};
use crate::freelist::Freelist;
use crate::page::PageId;
use crate::pager::Pager;
use crate::store::{Db, WriterState};

/// Pages kept back for deletions in a store of `capacity_pages`: 1/64 of it, at least 16 and
/// at most half. A copy-on-write tree needs new pages before it can free old ones, so a store
/// filled to the last page could not even delete. A write transaction that would leave fewer
/// free pages than this, and uses more pages than it frees, fails with [`Error::NoSpace`];
/// deletions ([`crate::Tx::use_reserve`], or any transaction that frees as much as it takes)
/// may use them. 1/64 covers rewriting every leaf of a bucket of chunk-sized values plus the freelist
/// that lists them (at most one leaf per ~100 values and 8 bytes per freed page).
pub fn reserve_pages(capacity_pages: u64) -> u64 {
    (capacity_pages / 64).max(16).min(capacity_pages / 2)
}

/// The write transaction's page allocator (see the module docs).
#[derive(Default)]
pub(crate) struct PageAlloc {
    /// Runs taken from the freelist (given back if the transaction does not commit).
    taken: Vec<(PageId, u64)>,
}

impl PageAlloc {
    /// Take `n` contiguous pages. `end` is the store's size in pages as the transaction sees it;
    /// it moves past pages the store grows by (or a barrier's freelist extent).
    pub fn take<P: Pager>(
        &mut self,
        db: &Db<P>,
        writer: &mut WriterState,
        end: &mut u64,
        n: u64,
    ) -> Result<PageId> {
        let capacity_pages = db.pager.capacity() / db.page_size as u64;
        if let Some((id, grown)) = writer.freelist.take_or_grow(n, end, capacity_pages) {
            if !grown {
                self.taken.push((id, n));
            }
            return Ok(id);
        }
        if db.reclaim_held(writer, end)? {
            if let Some(id) = writer.freelist.take(n) {
                self.taken.push((id, n));
                return Ok(id);
            }
        }
        Err(Error::NoSpace)
    }

    /// Give every run taken from the freelist back to it (the transaction does not commit).
    pub fn give_back(&mut self, freelist: &mut Freelist) {
        for &(id, n) in &self.taken {
            freelist.untake(id, n);
        }
        self.taken.clear();
    }

    /// The reserve: a transaction that leaves more pages in use than it found may not leave
    /// fewer than [`reserve_pages`] free (growing the file or the freelist counts as use),
    /// unless it asked for the reserve. `start` and `end` are the store's size in pages when
    /// the transaction began and now; `freed` what it frees; `keep_free` pages the caller
    /// promised elsewhere ([`crate::Tx::keep_free`]), kept free on top of the reserve.
    pub fn check_reserve(
        &self,
        writer: &WriterState,
        capacity_pages: u64,
        (start, end): (u64, u64),
        freed: &[(PageId, u64)],
        use_reserve: bool,
        keep_free: u64,
    ) -> Result<()> {
        let taken_now: u64 = self.taken.iter().map(|t| t.1).sum();
        let grown = (end - start) + taken_now;
        let released: u64 = freed.iter().map(|f| f.1).sum();
        if grown > released && !use_reserve {
            let free_after = capacity_pages.saturating_sub(end) + writer.freelist.total_count();
            if free_after < reserve_pages(capacity_pages).saturating_add(keep_free) {
                return Err(Error::NoSpace);
            }
        }
        Ok(())
    }
}
