//! [`Bytes`]: a key or value handed to the caller, borrowed from a pager page or owned.
//!
//! State: none beyond the page it holds. Contract: the bytes stay valid while the transaction
//! that returned them is open (see the type's docs for the memory-window case).

use alloc::vec::Vec;
use core::ops::Deref;

use crate::pager::Pager;

/// Bytes of a key or value: borrowed from a pager page when the pager allows it (zero-copy), or
/// owned when they come from a node the write transaction has modified.
///
/// Use them while the transaction that returned them is open. Pagers that hand out owned buffers
/// (`MemPager`, `FilePager`) keep the bytes valid afterwards too, but with a memory-window pager
/// (`Page = &[u8]`) the page may be reused by a later commit once no reader holds its snapshot.
pub struct Bytes<'db, P: Pager + 'db> {
    repr: Repr<'db, P>,
}

enum Repr<'db, P: Pager + 'db> {
    Page(P::Page<'db>, usize, usize),
    Owned(Vec<u8>),
}

impl<'db, P: Pager + 'db> Bytes<'db, P> {
    pub(crate) fn page(page: P::Page<'db>, range: core::ops::Range<usize>) -> Self {
        Bytes {
            repr: Repr::Page(page, range.start, range.end),
        }
    }
    pub(crate) fn owned(v: Vec<u8>) -> Self {
        Bytes {
            repr: Repr::Owned(v),
        }
    }

    /// Bytes `[start, end)` of the page these bytes borrow from (a range checked against that
    /// page when its slot was decoded). Empty for owned bytes: ranges are only taken of
    /// borrowed ones.
    pub(crate) fn page_range(&self, start: usize, end: usize) -> &[u8] {
        match &self.repr {
            Repr::Page(p, _, _) => p.get(start..end).unwrap_or_default(),
            Repr::Owned(_) => &[],
        }
    }

    /// A handle of its own on [`Bytes::page_range`].
    pub(crate) fn same_page(&self, start: usize, end: usize) -> Self {
        match &self.repr {
            Repr::Page(p, _, _) => Bytes::page(p.clone(), start..end),
            Repr::Owned(_) => Bytes::owned(Vec::new()),
        }
    }
}

impl<'db, P: Pager + 'db> Deref for Bytes<'db, P> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &self.repr {
            // The range was bounds-checked against this page when the slot was decoded.
            Repr::Page(p, s, e) => &p[*s..*e],
            Repr::Owned(v) => v,
        }
    }
}

impl<'db, P: Pager + 'db> Clone for Bytes<'db, P> {
    fn clone(&self) -> Self {
        match &self.repr {
            Repr::Page(p, s, e) => Bytes {
                repr: Repr::Page(p.clone(), *s, *e),
            },
            Repr::Owned(v) => Bytes {
                repr: Repr::Owned(v.clone()),
            },
        }
    }
}

impl<'db, P: Pager + 'db> core::fmt::Debug for Bytes<'db, P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{:?}", &**self)
    }
}

impl<'db, P: Pager + 'db> PartialEq<[u8]> for Bytes<'db, P> {
    fn eq(&self, other: &[u8]) -> bool {
        **self == *other
    }
}
