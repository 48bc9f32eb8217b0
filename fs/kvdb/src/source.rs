//! The page source: how the B+tree code (`tree`, `cursor`) reads pages without knowing about
//! databases or transactions.
//!
//! State: none of its own. [`PageSource`] is a snapshot's pages, bounds-checked against its
//! high-water mark; [`SnapshotPages`] is the one implementation over a [`Pager`] (a transaction
//! builds it from its page count). [`TreeSource`] adds one bucket's tree as a cursor sees it:
//! root, change counter and the transaction's dirty nodes (implemented by the bucket handle).
//!
//! Contract: a page id outside `2..page_count` (or an overflow run reaching past it) is
//! [`Error::Corrupted`], never a read past the snapshot; a page stays valid as long as the
//! pager's page type lives (see [`Pager`]). The tree code is generic over these traits (no `dyn`),
//! so every call is monomorphic and inlines as a direct pager read did.

use core::ops::Deref;

use crate::error::{Error, Result};
use crate::node::{Child, Node};
use crate::page::PageId;
use crate::pager::Pager;

/// Where the tree code reads pages from: one snapshot of the store.
pub(crate) trait PageSource {
    /// A page's bytes: a pager page, borrowed (memory window) or owned.
    type Page: Deref<Target = [u8]> + Clone;

    /// The store's page size in bytes.
    fn page_size(&self) -> usize;

    /// Node page `id`.
    fn page(&self, id: PageId) -> Result<Self::Page>;

    /// An overflow value of `len` bytes starting at page `first`, as one slice.
    fn overflow(&self, first: PageId, len: u64) -> Result<Self::Page>;

    /// The checks of [`PageSource::overflow`] without the read: the value's pages lie inside
    /// the snapshot.
    fn check_overflow(&self, first: PageId, len: u64) -> Result<()>;
}

/// One bucket's tree as a cursor walks it: its pages, plus what the open transaction holds.
pub(crate) trait TreeSource: PageSource {
    /// The tree's root and its change counter; [`Error::BucketNotFound`] once deleted.
    fn root(&self) -> Result<(Child, u64)>;

    /// The change counter (bumped by every change to the bucket).
    fn version(&self) -> u64;

    /// Run `f` on dirty node `node` of the tree; a missing one is [`Error::Corrupted`].
    fn with_dirty<R>(&self, node: usize, f: impl FnOnce(&Node) -> R) -> Result<R>;

    /// Whether the tree may change under a cursor (a write transaction): the cursor then
    /// remembers its key to re-seek.
    fn may_change(&self) -> bool;
}

/// The pages of one snapshot of a store: `pager` up to `page_count` pages.
pub(crate) struct SnapshotPages<'db, P> {
    pub pager: &'db P,
    pub page_size: usize,
    pub page_count: u64,
}

impl<P> Clone for SnapshotPages<'_, P> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<P> Copy for SnapshotPages<'_, P> {}

impl<'db, P: Pager> PageSource for SnapshotPages<'db, P> {
    type Page = P::Page<'db>;

    fn page_size(&self) -> usize {
        self.page_size
    }

    fn page(&self, id: PageId) -> Result<P::Page<'db>> {
        if id < 2 || id >= self.page_count {
            return Err(Error::Corrupted("page id out of range"));
        }
        self.pager.read(id * self.page_size as u64, self.page_size)
    }

    fn overflow(&self, first: PageId, len: u64) -> Result<P::Page<'db>> {
        self.check_overflow(first, len)?;
        let len = usize::try_from(len).map_err(|_| Error::Corrupted("overflow too large"))?;
        self.pager.read(first * self.page_size as u64, len)
    }

    fn check_overflow(&self, first: PageId, len: u64) -> Result<()> {
        let pages = len.div_ceil(self.page_size as u64).max(1);
        let end = first
            .checked_add(pages)
            .ok_or(Error::Corrupted("overflow out of range"))?;
        if first < 2 || end > self.page_count {
            return Err(Error::Corrupted("overflow out of range"));
        }
        usize::try_from(len).map_err(|_| Error::Corrupted("overflow too large"))?;
        Ok(())
    }
}
