//! Cursor walks: ordered traversal of one bucket's tree with seek / first / last / next / prev.
//!
//! State: a [`Walk`] keeps the path from the root to its leaf: clean pages are held as pager
//! pages (so keys and values come out zero-copy), dirty nodes as arena indices. It reads the
//! tree through a [`TreeSource`] given to every call (the bucket handle), so this module knows
//! neither transactions nor the database. If the bucket changes while a walk is open (same
//! write transaction), the walk notices through the bucket's version counter and re-seeks to
//! the key it was on before stepping. The public [`crate::Cursor`] pairs a walk with its bucket.

use alloc::vec::Vec;

use crate::bytes::Bytes;
use crate::error::{Error, Result};
use crate::node::{Child, Entries, LeafValue};
use crate::page;
use crate::pager::Pager;
use crate::source::TreeSource;
use crate::tree::{branch_index, MAX_DEPTH};

/// One entry under a cursor: a key with a value, or a key naming a nested bucket.
pub struct Entry<'db, P: Pager + 'db> {
    key: Bytes<'db, P>,
    value: Option<Value<'db, P>>,
    /// Where a committed overflow value lies in the store: (byte offset, length).
    loc: Option<(u64, u64)>,
    /// The value is the overflow value at `loc`, not read (see
    /// [`crate::Cursor::locate_overflow_values`]).
    located: bool,
}

/// An entry's value bytes.
enum Value<'db, P: Pager + 'db> {
    /// Inline in the leaf page the key borrows from: a range of that page. The entry holds
    /// the page once (in its key): a scan takes and drops one handle per entry, not two (with
    /// reference-counted pages each is an atomic update).
    KeyPage(usize, usize),
    /// Bytes of their own (an overflow value, or a dirty node's).
    Bytes(Bytes<'db, P>),
}

impl<'db, P: Pager + 'db> Entry<'db, P> {
    /// The key.
    pub fn key(&self) -> &[u8] {
        &self.key
    }
    /// The value, or `None` for a nested bucket.
    ///
    /// Also `None` for an overflow value a cursor was told only to locate
    /// ([`crate::Cursor::locate_overflow_values`]): see [`Entry::value_len`].
    pub fn value(&self) -> Option<&[u8]> {
        match self.value.as_ref()? {
            Value::KeyPage(s, e) => Some(self.key.page_range(*s, *e)),
            Value::Bytes(b) => Some(b),
        }
    }
    /// The value's length in bytes, whether or not its bytes were read; `None` for a nested
    /// bucket.
    pub fn value_len(&self) -> Option<u64> {
        match (self.value(), self.located) {
            (Some(v), _) => Some(v.len() as u64),
            (None, true) => self.loc.map(|(_, len)| len),
            (None, false) => None,
        }
    }
    /// For a value stored in overflow pages of a committed snapshot: its byte offset in the
    /// store and its length, so a caller can move it with [`crate::Pager::read_into`] (e.g. a
    /// device read straight into its buffer) instead of copying it from [`Entry::value`].
    /// `None` for inline values, buckets, and values written by this transaction.
    pub fn overflow_location(&self) -> Option<(u64, u64)> {
        self.loc
    }
    /// Whether the key names a nested bucket.
    pub fn is_bucket(&self) -> bool {
        self.value.is_none() && !self.located
    }
    /// Key and value as owned-or-borrowed byte handles.
    pub fn into_parts(self) -> (Bytes<'db, P>, Option<Bytes<'db, P>>) {
        let value = self.value.map(|v| match v {
            Value::KeyPage(s, e) => self.key.same_page(s, e),
            Value::Bytes(b) => b,
        });
        (self.key, value)
    }
}

enum Frame<'db, P: Pager + 'db> {
    Page {
        page: P::Page<'db>,
        leaf: bool,
        count: usize,
        index: usize,
    },
    Dirty {
        node: usize,
        leaf: bool,
        count: usize,
        index: usize,
    },
}

impl<P: Pager> Frame<'_, P> {
    fn parts(&mut self) -> (bool, usize, &mut usize) {
        match self {
            Frame::Page {
                leaf, count, index, ..
            }
            | Frame::Dirty {
                leaf, count, index, ..
            } => (*leaf, *count, index),
        }
    }
}

/// Where to put the index when entering a node.
#[derive(Clone, Copy)]
enum Target<'k> {
    First,
    Last,
    Key(&'k [u8]),
}

/// The position of a cursor in one bucket's tree (the tree itself is passed to every call).
pub(crate) struct Walk<'db, P: Pager + 'db> {
    stack: Vec<Frame<'db, P>>,
    version: u64,
    /// The key under the cursor, kept only while the tree may change (to re-seek after changes).
    current: Option<Vec<u8>>,
    /// Overflow values of clean pages are located, not read (`Cursor::locate_overflow_values`).
    pub(crate) lazy_overflow: bool,
    /// The tree cannot change under the walk (a read transaction), as of its last positioning:
    /// [`Walk::next_borrowed`] may then step without re-seeking and lend entries of its leaf.
    fixed: bool,
}

/// An entry lent by [`crate::Cursor::next_borrowed`]: key and inline value borrowed from the
/// cursor's leaf page (no handle on the page is taken: with reference-counted pages, such as
/// [`crate::FilePager`]'s, each handle is an atomic increment and decrement, a third of a full
/// scan's time), or an owned [`Entry`] for anything else (a value in overflow pages, a nested
/// bucket, an entry of a write transaction's changed nodes).
pub enum EntryRef<'c, 'db, P: Pager + 'db> {
    /// An inline value in a committed leaf page, borrowed from the cursor.
    Page {
        /// The key.
        key: &'c [u8],
        /// The value.
        value: &'c [u8],
    },
    /// Any other entry, as [`crate::Cursor::next`] returns it.
    Entry(Entry<'db, P>),
}

impl<'c, 'db, P: Pager + 'db> EntryRef<'c, 'db, P> {
    /// The key.
    pub fn key(&self) -> &[u8] {
        match self {
            EntryRef::Page { key, .. } => key,
            EntryRef::Entry(e) => e.key(),
        }
    }
    /// The value, or `None` for a nested bucket (as [`Entry::value`]).
    pub fn value(&self) -> Option<&[u8]> {
        match self {
            EntryRef::Page { value, .. } => Some(value),
            EntryRef::Entry(e) => e.value(),
        }
    }
}

impl<'db, P: Pager + 'db> Walk<'db, P> {
    pub(crate) fn new() -> Self {
        Walk {
            stack: Vec::new(),
            version: 0,
            current: None,
            lazy_overflow: false,
            fixed: false,
        }
    }

    /// Move to the first entry.
    pub fn first<S: Src<'db, P>>(&mut self, src: &S) -> Result<Option<Entry<'db, P>>> {
        self.position(src, Target::First)?;
        self.settle(src, true)
    }

    /// Move to the last entry.
    pub fn last<S: Src<'db, P>>(&mut self, src: &S) -> Result<Option<Entry<'db, P>>> {
        self.position(src, Target::Last)?;
        self.settle(src, false)
    }

    /// Move to the first entry whose key is `>= key`.
    pub fn seek<S: Src<'db, P>>(&mut self, src: &S, key: &[u8]) -> Result<Option<Entry<'db, P>>> {
        self.position(src, Target::Key(key))?;
        self.settle(src, true)
    }

    /// Move to the next entry (the first one if the cursor is not positioned yet).
    // Not `Iterator::next`: it is fallible, and pairs with `prev`/`seek` on the same position.
    #[allow(clippy::should_implement_trait)]
    pub fn next<S: Src<'db, P>>(&mut self, src: &S) -> Result<Option<Entry<'db, P>>> {
        if self.stack.is_empty() {
            return self.first(src);
        }
        if self.stale(src) {
            let Some(key) = self.current.take() else {
                return self.first(src);
            };
            match self.seek(src, &key)? {
                Some(e) if e.key() != key.as_slice() => return Ok(Some(e)),
                Some(_) => {}
                None => return Ok(None),
            }
        }
        if !self.step(src, true)? {
            self.finish();
            return Ok(None);
        }
        self.settle(src, true)
    }

    /// [`Walk::next`], lending the entry where it can ([`EntryRef`]). A walk that is not
    /// positioned, or whose tree may change (a write transaction), takes the owned path.
    pub fn next_borrowed<S: Src<'db, P>>(
        &mut self,
        src: &S,
    ) -> Result<Option<EntryRef<'_, 'db, P>>> {
        if self.stack.is_empty() || !self.fixed {
            return Ok(self.next(src)?.map(EntryRef::Entry));
        }
        if !self.step(src, true)? {
            self.finish();
            return Ok(None);
        }
        if !self.settle_position(src, true)? {
            return Ok(None);
        }
        if let Some(Frame::Page { page, index, .. }) = self.stack.last() {
            let slot = page::leaf_slot(page, *index)?;
            if slot.flags == page::FLAG_INLINE {
                return Ok(Some(EntryRef::Page {
                    key: &page[slot.key],
                    value: &page[slot.value],
                }));
            }
        }
        Ok(self.read_current(src)?.map(EntryRef::Entry))
    }

    /// Move to the previous entry (the last one if the cursor is not positioned yet).
    pub fn prev<S: Src<'db, P>>(&mut self, src: &S) -> Result<Option<Entry<'db, P>>> {
        if self.stack.is_empty() {
            return self.last(src);
        }
        if self.stale(src) {
            let Some(key) = self.current.take() else {
                return self.last(src);
            };
            if self.seek(src, &key)?.is_none() {
                return self.last(src);
            }
        }
        if !self.step(src, false)? {
            self.finish();
            return Ok(None);
        }
        self.settle(src, false)
    }

    fn stale<S: Src<'db, P>>(&self, src: &S) -> bool {
        self.version != src.version()
    }

    fn finish(&mut self) {
        self.stack.clear();
        self.current = None;
    }

    /// Rebuild the path from the root towards `target`.
    fn position<S: Src<'db, P>>(&mut self, src: &S, target: Target<'_>) -> Result<()> {
        self.stack.clear();
        self.current = None;
        let (root, version) = src.root()?;
        self.version = version;
        self.fixed = !src.may_change();
        if root == Child::Page(0) {
            return Ok(());
        }
        self.descend(src, root, target)
    }

    /// Push frames from `child` down to a leaf.
    fn descend<S: Src<'db, P>>(
        &mut self,
        src: &S,
        mut child: Child,
        target: Target<'_>,
    ) -> Result<()> {
        loop {
            if self.stack.len() >= MAX_DEPTH {
                return Err(Error::Corrupted("tree too deep"));
            }
            let frame = self.load(src, child, target)?;
            let next = match &frame {
                Frame::Page {
                    page,
                    leaf: false,
                    index,
                    ..
                } => Some(Child::Page(page::branch_slot(page, *index)?.1)),
                Frame::Dirty {
                    node,
                    leaf: false,
                    index,
                    ..
                } => Some(dirty_child(src, *node, *index)?),
                _ => None,
            };
            self.stack.push(frame);
            match next {
                Some(c) => child = c,
                None => return Ok(()),
            }
        }
    }

    fn load<S: Src<'db, P>>(
        &self,
        src: &S,
        child: Child,
        target: Target<'_>,
    ) -> Result<Frame<'db, P>> {
        match child {
            Child::Page(id) => {
                let page = src.page(id)?;
                let (leaf, count) = page::node_header(&page, id)?;
                let index = match target {
                    Target::First => 0,
                    Target::Last => count.saturating_sub(1),
                    Target::Key(k) if leaf => {
                        page::leaf_search(&page, count, k)?.unwrap_or_else(|i| i)
                    }
                    Target::Key(k) => page::branch_search(&page, count, k)?,
                };
                Ok(Frame::Page {
                    page,
                    leaf,
                    count,
                    index,
                })
            }
            Child::Dirty(node) => {
                let (leaf, count, index) = src.with_dirty(node, |n| {
                    let (leaf, count) = (n.is_leaf(), n.len());
                    let index = match (&n.entries, target) {
                        (_, Target::First) => 0,
                        (_, Target::Last) => count.saturating_sub(1),
                        (Entries::Leaf(e), Target::Key(k)) => {
                            e.partition_point(|(x, _)| page::key_cmp(x, k).is_lt())
                        }
                        (Entries::Branch(e), Target::Key(k)) => branch_index(e, k),
                    };
                    (leaf, count, index)
                })?;
                Ok(Frame::Dirty {
                    node,
                    leaf,
                    count,
                    index,
                })
            }
        }
    }

    /// Move one leaf position forward or backward, crossing leaves; false at either end.
    fn step<S: Src<'db, P>>(&mut self, src: &S, forward: bool) -> Result<bool> {
        loop {
            let Some(top) = self.stack.last_mut() else {
                return Ok(false);
            };
            let (leaf, count, index) = top.parts();
            let moved = if forward {
                if *index + 1 < count {
                    *index += 1;
                    true
                } else {
                    false
                }
            } else if *index > 0 && count > 0 {
                *index = (*index).min(count) - 1;
                true
            } else {
                false
            };
            if !moved {
                self.stack.pop();
                continue;
            }
            if leaf {
                return Ok(true);
            }
            // Moved within a branch: descend to the nearest leaf on that side.
            let child = match self.stack.last() {
                Some(Frame::Page { page, index, .. }) => {
                    Child::Page(page::branch_slot(page, *index)?.1)
                }
                Some(Frame::Dirty { node, index, .. }) => dirty_child(src, *node, *index)?,
                None => return Ok(false),
            };
            self.descend(
                src,
                child,
                if forward { Target::First } else { Target::Last },
            )?;
            let Some(top) = self.stack.last_mut() else {
                return Ok(false);
            };
            let (_, count, _) = top.parts();
            if count > 0 {
                return Ok(true);
            }
            // Empty leaf: keep going from it.
        }
    }

    /// After positioning, make sure the cursor is on a real entry (skip past empty leaves or
    /// an index one past the end of a leaf), then read it.
    fn settle<S: Src<'db, P>>(&mut self, src: &S, forward: bool) -> Result<Option<Entry<'db, P>>> {
        if !self.settle_position(src, forward)? {
            return Ok(None);
        }
        let entry = self.read_current(src)?;
        if src.may_change() {
            self.current = entry.as_ref().map(|e| e.key().to_vec());
        }
        Ok(entry)
    }

    /// The positioning part of [`Walk::settle`]: false (and the walk finished) past either end.
    fn settle_position<S: Src<'db, P>>(&mut self, src: &S, forward: bool) -> Result<bool> {
        loop {
            let Some(top) = self.stack.last_mut() else {
                return Ok(false);
            };
            let (_, count, index) = top.parts();
            if *index < count {
                return Ok(true);
            }
            if !self.step(src, forward)? {
                self.finish();
                return Ok(false);
            }
        }
    }

    fn read_current<S: Src<'db, P>>(&self, src: &S) -> Result<Option<Entry<'db, P>>> {
        match self.stack.last() {
            None => Ok(None),
            Some(Frame::Page { page, index, .. }) => {
                let slot = page::leaf_slot(page, *index)?;
                let key = Bytes::page(page.clone(), slot.key.clone());
                let mut loc = None;
                let mut located = false;
                let value = match slot.flags {
                    page::FLAG_INLINE => Some(Value::KeyPage(slot.value.start, slot.value.end)),
                    flags => {
                        let v = LeafValue::decode(flags, &page[slot.value])?;
                        match v {
                            LeafValue::Overflow { page, len } => {
                                // A damaged page id may overflow here; the checks below
                                // reject it.
                                loc = page.checked_mul(src.page_size() as u64).map(|at| (at, len));
                                if self.lazy_overflow {
                                    src.check_overflow(page, len)?;
                                    if loc.is_none() {
                                        return Err(Error::Corrupted("overflow out of range"));
                                    }
                                    located = true;
                                    None
                                } else {
                                    value_of(src, v)?.map(Value::Bytes)
                                }
                            }
                            v => value_of(src, v)?.map(Value::Bytes),
                        }
                    }
                };
                Ok(Some(Entry {
                    key,
                    value,
                    loc,
                    located,
                }))
            }
            Some(Frame::Dirty { node, index, .. }) => {
                let (key, value) = src.with_dirty(*node, |n| match &n.entries {
                    Entries::Leaf(e) => {
                        e.get(*index).cloned().ok_or(Error::Corrupted("leaf index"))
                    }
                    _ => Err(Error::Corrupted("dangling dirty node")),
                })??;
                let value = match value {
                    LeafValue::Inline(v) => Some(Bytes::owned(v.into_vec())),
                    v => value_of(src, v)?,
                }
                .map(Value::Bytes);
                Ok(Some(Entry {
                    key: Bytes::owned(key.into_vec()),
                    value,
                    loc: None,
                    located: false,
                }))
            }
        }
    }
}

/// A tree source whose pages are `P`'s: what a walk reads through.
pub(crate) trait Src<'db, P: Pager + 'db>: TreeSource<Page = P::Page<'db>> {}

impl<'db, P: Pager + 'db, S: TreeSource<Page = P::Page<'db>>> Src<'db, P> for S {}

/// Child `index` of dirty branch `node`.
fn dirty_child<S: TreeSource>(src: &S, node: usize, index: usize) -> Result<Child> {
    src.with_dirty(node, |n| match &n.entries {
        Entries::Branch(e) => e
            .get(index)
            .map(|(_, c)| *c)
            .ok_or(Error::Corrupted("branch index")),
        _ => Err(Error::Corrupted("dangling dirty node")),
    })?
}

/// The value bytes of a non-inline leaf value: an overflow value read as one slice, `None` for
/// a nested bucket (an inline value is read from its slot, never through here).
fn value_of<'db, P: Pager + 'db, S: Src<'db, P>>(
    src: &S,
    value: LeafValue,
) -> Result<Option<Bytes<'db, P>>> {
    match value {
        LeafValue::Overflow { page, len } => {
            let buf = src.overflow(page, len)?;
            let n = buf.len();
            Ok(Some(Bytes::page(buf, 0..n)))
        }
        LeafValue::Bucket { .. } | LeafValue::Inline(_) => Ok(None),
    }
}
