//! The transaction type and its state.
//!
//! A [`Tx`] is either a read transaction (a snapshot: the meta of the last commit when it began)
//! or the write transaction (holds the writer lock for its whole life). State: the snapshot's
//! meta, the arena of buckets opened in it (each a tree with its dirty nodes), and for the
//! writer the [`WriteState`]: the writer-lock guard, the pages it freed, its page allocator and
//! whether it may use the reserve. The arena lives behind a `RefCell`: a [`crate::Bucket`] is a
//! cheap handle (transaction, arena index), so several handles, nested buckets and cursors can
//! be used at once (transactions are used from one thread).
//!
//! The jobs around it have their own modules: `bucket` (the bucket handle and its operations),
//! `overflow` (large values), `commit` (writing a transaction out). Dropping a write
//! transaction gives back every page it took; dropping a reader ends its snapshot.

use alloc::vec::Vec;
use core::cell::RefCell;

use smallvec::SmallVec;

use crate::sync::MutexGuard;

use crate::error::{Error, Result};
use crate::page::{self, Meta, PageId};
use crate::page_alloc::PageAlloc;
use crate::pager::Pager;
use crate::source::SnapshotPages;
use crate::store::{Db, WriterState};
use crate::tree::Tree;

/// One bucket opened in this transaction.
pub(crate) struct BucketState {
    pub parent: Option<usize>,
    /// Inline up to 24 bytes (every dbfs bucket name): opening a bucket allocates nothing
    /// (a dbfs unlink opens eight).
    pub name: crate::node::KeyBytes,
    pub tree: Tree,
    pub seq: u64,
    /// Its tree or sequence changed: the parent's entry must be rewritten at commit.
    pub dirty: bool,
    pub deleted: bool,
    /// Bumped by every change, so cursors know to re-seek.
    pub version: u64,
}

/// What only the write transaction has.
pub(crate) struct WriteState<'db> {
    pub guard: MutexGuard<'db, WriterState>,
    pub freed: Vec<(PageId, u64)>,
    /// Where its new pages come from; remembers those taken from the freelist.
    pub pages: PageAlloc,
    /// Set by [`Tx::use_reserve`]: this transaction may dip into the reserve.
    pub use_reserve: bool,
    /// Set by [`Tx::keep_free`]: pages to leave free besides the reserve.
    pub keep_free: u64,
    /// Runs this transaction placed ([`Tx::reserve_placed`]): no longer placed if it does not
    /// commit.
    pub placed_now: Vec<(PageId, u64)>,
    /// Placed runs this transaction inserted or dropped: placed again if it does not commit.
    pub adopted: Vec<(PageId, u64)>,
}

/// A transaction's mutable state (behind the `RefCell`).
pub(crate) struct TxState<'db> {
    /// The root and the buckets opened so far. Two in place: a read transaction (dbfs opens
    /// one bucket for a file read) allocates nothing, so harts reading side by side do not
    /// meet at the heap's lock.
    pub buckets: SmallVec<[BucketState; 2]>,
    pub write: Option<WriteState<'db>>,
    pub page_count: u64,
}

/// A transaction. Dropping a write transaction without [`Tx::commit`] rolls it back.
pub struct Tx<'db, P: Pager> {
    pub(crate) db: &'db Db<P>,
    pub(crate) meta: Meta,
    pub(crate) state: RefCell<TxState<'db>>,
    /// Committed (or failed to): dropping it must not give its pages back again.
    pub(crate) done: bool,
}

impl<'db, P: Pager> Tx<'db, P> {
    pub(crate) fn new_read(db: &'db Db<P>, meta: Meta) -> Self {
        Self::new(db, meta, None)
    }

    pub(crate) fn new_write(
        db: &'db Db<P>,
        mut meta: Meta,
        guard: MutexGuard<'db, WriterState>,
    ) -> Self {
        meta.txid += 1;
        Self::new(
            db,
            meta,
            Some(WriteState {
                guard,
                freed: Vec::new(),
                pages: PageAlloc::default(),
                use_reserve: false,
                keep_free: 0,
                placed_now: Vec::new(),
                adopted: Vec::new(),
            }),
        )
    }

    fn new(db: &'db Db<P>, meta: Meta, write: Option<WriteState<'db>>) -> Self {
        let root = BucketState {
            parent: None,
            name: crate::node::KeyBytes::new(),
            tree: Tree::new(meta.root),
            seq: meta.root_seq,
            dirty: false,
            deleted: false,
            version: 0,
        };
        // Room for the root and a few opened buckets, so opening them does not reallocate
        // (a short read transaction opens one, in place; a dbfs unlink eight).
        let mut buckets = SmallVec::new();
        if write.is_some() {
            buckets.reserve(12);
        }
        buckets.push(root);
        let state = TxState {
            buckets,
            write,
            page_count: meta.page_count,
        };
        Tx {
            db,
            meta,
            state: RefCell::new(state),
            done: false,
        }
    }

    /// The store's pager (for [`crate::Pager::read_into`] of a value's location).
    pub fn pager(&self) -> &'db P {
        self.db.pager()
    }

    /// The store's page size.
    pub fn page_size(&self) -> usize {
        self.db.page_size
    }

    /// Whether this is the write transaction.
    pub fn writable(&self) -> bool {
        self.state.borrow().write.is_some()
    }

    /// The transaction id: the snapshot's commit for a reader, the commit-to-be for the writer.
    pub fn id(&self) -> u64 {
        self.meta.txid
    }

    /// Pages on the freelist this write transaction may reuse (`None` for a read transaction).
    pub fn reusable_pages(&self) -> Option<u64> {
        self.state
            .borrow()
            .write
            .as_ref()
            .map(|w| w.guard.freelist.free_count() as u64)
    }

    /// Drop the transaction's changes (same as dropping it).
    pub fn rollback(self) {}

    /// Let this write transaction use the reserved pages (see `reserve_pages`): for
    /// deletions, which need fresh pages (copy-on-write) before they free any, so that removing
    /// files still works on a full store. A transaction that frees at least as many pages as it
    /// takes may use the reserve without asking. No effect on a read transaction.
    pub fn use_reserve(&self) {
        if let Some(ws) = self.state.borrow_mut().write.as_mut() {
            ws.use_reserve = true;
        }
    }

    /// Make this write transaction fail at commit with [`crate::Error::NoSpace`] if it uses
    /// more pages than it frees and leaves fewer than `pages` free on top of the reserve:
    /// space a layer above promised to someone else (dbfs's buffered writes, accepted and
    /// not yet committed). No effect on a transaction that may use the reserve.
    pub fn keep_free(&self, pages: u64) {
        if let Some(ws) = self.state.borrow_mut().write.as_mut() {
            ws.keep_free = pages;
        }
    }

    /// Give back pages taken from the freelist and forget this transaction's frees.
    pub(crate) fn rollback_pages(&mut self) {
        let txid = self.meta.txid;
        let st = self.state.get_mut();
        if let Some(ws) = st.write.as_mut() {
            for &(page, n) in &ws.placed_now {
                ws.guard.freelist.unplace(page, n);
            }
            ws.pages.give_back(&mut ws.guard.freelist);
            ws.guard.freelist.unfree_at(txid);
            for &(page, n) in &ws.adopted {
                ws.guard.freelist.place(page, n);
            }
            ws.placed_now.clear();
            ws.adopted.clear();
        }
    }

    pub(crate) fn check_writable(&self) -> Result<()> {
        if self.state.borrow().write.is_some() {
            Ok(())
        } else {
            Err(Error::TxReadOnly)
        }
    }

    /// The size limits of a pair (what `put` and `put_direct` refuse before touching anything).
    pub(crate) fn check_pair(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.check_pair_len(key, value.len())
    }

    pub(crate) fn check_pair_len(&self, key: &[u8], value_len: usize) -> Result<()> {
        if key.is_empty() || key.len() > page::max_key_len(self.db.page_size) {
            return Err(Error::KeyTooLarge);
        }
        if value_len as u64 > u32::MAX as u64 {
            return Err(Error::ValueTooLarge);
        }
        Ok(())
    }

    /// Take `n` contiguous pages for a node or value this transaction writes ([`PageAlloc`]).
    pub(crate) fn alloc(&self, st: &mut TxState<'db>, n: u64) -> Result<PageId> {
        let ws = st.write.as_mut().ok_or(Error::TxReadOnly)?;
        ws.pages.take(self.db, &mut ws.guard, &mut st.page_count, n)
    }

    /// The pages of this transaction's snapshot, up to its current size.
    pub(crate) fn pages(&self) -> SnapshotPages<'db, P> {
        self.db.pages(self.state.borrow().page_count)
    }
}

impl<P: Pager> Drop for Tx<'_, P> {
    fn drop(&mut self) {
        if self.state.get_mut().write.is_some() {
            if !self.done {
                self.rollback_pages();
            }
        } else {
            self.db.end_read(self.meta.txid);
        }
    }
}
