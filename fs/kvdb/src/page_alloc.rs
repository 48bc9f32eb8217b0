//! The one page-allocation policy of a write transaction, used while it builds nodes
//! (`Tx::alloc`) and while it commits: take a run from the freelist (first fit); else grow the
//! store up to the pager's capacity; else, if pages are held for a barrier, make one
//! ([`Db::reclaim_held`]) and try the freelist again; else `NoSpace`. Every page taken is
//! recorded in `taken` (given back if the transaction does not commit); pages past the old end
//! are noted as fresh in the freelist.
//!
//! Runs under the writer lock (the caller holds the write transaction).

use alloc::vec::Vec;

use crate::db::{Db, WriterState};
use crate::error::{Error, Result};
use crate::page::PageId;
use crate::pager::Pager;

/// The write transaction's page allocator (see the module docs). `page_count` is the store's
/// size in pages as this transaction sees it; the caller copies it back.
pub(crate) struct PageAlloc<'a, P: Pager> {
    pub db: &'a Db<P>,
    pub writer: &'a mut WriterState,
    pub taken: &'a mut Vec<(PageId, u64)>,
    pub page_count: u64,
    pub capacity_pages: u64,
}

impl<P: Pager> PageAlloc<'_, P> {
    /// Take `n` contiguous pages for the write transaction.
    pub fn take(&mut self, n: u64) -> Result<PageId> {
        if let Some(id) = self.writer.freelist.take(n) {
            self.taken.push((id, n));
            return Ok(id);
        }
        let id = self.page_count;
        if id
            .checked_add(n)
            .is_none_or(|end| end > self.capacity_pages)
        {
            if self.db.reclaim_held(self.writer, &mut self.page_count)? {
                if let Some(id) = self.writer.freelist.take(n) {
                    self.taken.push((id, n));
                    return Ok(id);
                }
            }
            return Err(Error::NoSpace);
        }
        self.page_count += n;
        self.writer.freelist.grown(id, n);
        Ok(id)
    }
}
