//! Buckets: the [`Bucket`] handle and the operations behind it (get, put, delete, nested
//! buckets), and the public [`Cursor`].
//!
//! State: none of its own. A bucket's tree and counters live in the transaction's arena
//! ([`crate::tx`]); a handle is (transaction, arena index). The handle is the [`TreeSource`]
//! cursors read through: its transaction's pages, its tree's root, version and dirty nodes.
//! Deleting a bucket frees every page it references (nested buckets, overflow values)
//! with the transaction's frees.

use alloc::vec::Vec;

use crate::bytes::Bytes;
use crate::cursor::{Entry, EntryRef, Walk};
use crate::error::{Error, Result};
use crate::node::{Child, Entries, LeafValue, Node, ValueBytes};
use crate::page::{self, PageId};
use crate::pager::Pager;
use crate::source::{PageSource, TreeSource};
use crate::tree::{self, Found, PutMode, Tree, WriteCtx, MAX_DEPTH};
use crate::tx::{BucketState, Tx};

impl<'db, P: Pager> Tx<'db, P> {
    fn root(&self) -> Bucket<'_, 'db, P> {
        Bucket { tx: self, id: 0 }
    }

    /// Create a top-level bucket.
    pub fn create_bucket(&self, name: &[u8]) -> Result<Bucket<'_, 'db, P>> {
        self.root().create_bucket(name)
    }

    /// Open a top-level bucket, creating it if it does not exist.
    pub fn get_or_create_bucket(&self, name: &[u8]) -> Result<Bucket<'_, 'db, P>> {
        self.root().get_or_create_bucket(name)
    }

    /// Open a top-level bucket.
    pub fn get_bucket(&self, name: &[u8]) -> Result<Bucket<'_, 'db, P>> {
        self.root().get_bucket(name)
    }

    /// Delete a top-level bucket and everything in it.
    pub fn delete_bucket(&self, name: &[u8]) -> Result<()> {
        self.root().delete_bucket(name)
    }

    /// A cursor over the top-level bucket names (entries are all buckets).
    pub fn buckets(&self) -> Cursor<'_, 'db, P> {
        Cursor::new(self.root())
    }

    fn lookup(&self, b: usize, key: &[u8]) -> Result<Option<Found<P::Page<'db>>>> {
        let st = self.state.borrow();
        let bucket = &st.buckets[b];
        if bucket.deleted {
            return Err(Error::BucketNotFound);
        }
        tree::lookup(&self.db.pages(st.page_count), &bucket.tree, key)
    }

    fn found_value(
        &self,
        found: Found<P::Page<'db>>,
    ) -> Result<(u32, LeafValue, Option<Bytes<'db, P>>)> {
        Ok(match found {
            Found::Page(page, slot) => {
                if slot.flags == page::FLAG_INLINE {
                    (
                        slot.flags,
                        LeafValue::Inline(ValueBytes::new()),
                        Some(Bytes::page(page, slot.value)),
                    )
                } else {
                    let v = LeafValue::decode(slot.flags, &page[slot.value.clone()])?;
                    (slot.flags, v, None)
                }
            }
            Found::Dirty(LeafValue::Inline(v)) => (
                page::FLAG_INLINE,
                LeafValue::Inline(ValueBytes::new()),
                Some(Bytes::owned(v.into_vec())),
            ),
            Found::Dirty(v) => (1, v, None),
        })
    }

    fn value_of(
        &self,
        value: LeafValue,
        inline: Option<Bytes<'db, P>>,
    ) -> Result<Option<Bytes<'db, P>>> {
        match value {
            LeafValue::Bucket { .. } => Ok(None),
            LeafValue::Overflow { page, len } => {
                let page_count = self.state.borrow().page_count;
                let buf = self.db.pages(page_count).overflow(page, len)?;
                let n = buf.len();
                Ok(Some(Bytes::page(buf, 0..n)))
            }
            LeafValue::Inline(_) => Ok(inline),
        }
    }

    fn get(&self, b: usize, key: &[u8]) -> Result<Option<Bytes<'db, P>>> {
        let Some(found) = self.lookup(b, key)? else {
            return Ok(None);
        };
        let (_, value, inline) = self.found_value(found)?;
        if let LeafValue::Bucket { .. } = value {
            return Err(Error::IncompatibleValue);
        }
        self.value_of(value, inline)
    }

    fn put(&self, b: usize, key: &[u8], value: &[u8]) -> Result<()> {
        self.check_writable()?;
        let ps = self.db.page_size;
        self.check_pair(key, value)?;
        let mut st = self.state.borrow_mut();
        let st = &mut *st;
        if st.buckets[b].deleted {
            return Err(Error::BucketNotFound);
        }
        let leaf_value = if value.len() > page::max_inline_len(ps) {
            self.write_overflow(st, value)?
        } else {
            LeafValue::Inline(ValueBytes::from_slice(value))
        };
        let ws = st.write.as_mut().ok_or(Error::TxReadOnly)?;
        let mut ctx = WriteCtx {
            src: self.db.pages(self.meta.page_count),
            freed: &mut ws.freed,
        };
        let bucket = &mut st.buckets[b];
        let old = ctx.put(&mut bucket.tree, key, leaf_value.clone(), PutMode::Value);
        bucket.version += 1;
        bucket.dirty = true;
        match old {
            Ok(Some(LeafValue::Overflow { page, len })) => {
                ctx.freed.push((page, len.div_ceil(ps as u64).max(1)));
                Ok(())
            }
            Ok(_) => Ok(()),
            Err(e) => {
                if let LeafValue::Overflow { page, len } = leaf_value {
                    ctx.freed.push((page, len.div_ceil(ps as u64).max(1)));
                }
                Err(e)
            }
        }
    }

    fn delete(&self, b: usize, key: &[u8]) -> Result<bool> {
        self.check_writable()?;
        let Some(found) = self.lookup(b, key)? else {
            return Ok(false);
        };
        let (_, value, _) = self.found_value(found)?;
        if let LeafValue::Bucket { .. } = value {
            return Err(Error::IncompatibleValue);
        }
        let ps = self.db.page_size as u64;
        let mut st = self.state.borrow_mut();
        let st = &mut *st;
        let ws = st.write.as_mut().ok_or(Error::TxReadOnly)?;
        let mut ctx = WriteCtx {
            src: self.db.pages(self.meta.page_count),
            freed: &mut ws.freed,
        };
        let bucket = &mut st.buckets[b];
        let old = ctx.delete(&mut bucket.tree, key)?;
        bucket.version += 1;
        bucket.dirty = true;
        if let Some(LeafValue::Overflow { page, len }) = old {
            ctx.freed.push((page, len.div_ceil(ps).max(1)));
        }
        Ok(true)
    }

    fn delete_range(&self, b: usize, start: &[u8], end: Option<&[u8]>) -> Result<Vec<u64>> {
        self.check_writable()?;
        let ps = self.db.page_size as u64;
        let mut st = self.state.borrow_mut();
        let st = &mut *st;
        let ws = st.write.as_mut().ok_or(Error::TxReadOnly)?;
        let mut ctx = WriteCtx {
            src: self.db.pages(self.meta.page_count),
            freed: &mut ws.freed,
        };
        let bucket = &mut st.buckets[b];
        if bucket.deleted {
            return Err(Error::BucketNotFound);
        }
        let mut removed = Vec::new();
        let was = bucket.tree.root;
        let r = ctx.delete_range(&mut bucket.tree, start, end, &mut removed);
        if bucket.tree.root != was || !removed.is_empty() {
            // Its path was copied (the old pages are freed at commit) even if nothing in the
            // range existed: the new tree must be written.
            bucket.version += 1;
            bucket.dirty = true;
        }
        r?;
        let mut lens = Vec::with_capacity(removed.len());
        for v in removed {
            lens.push(match v {
                LeafValue::Overflow { page, len } => {
                    ctx.freed.push((page, len.div_ceil(ps).max(1)));
                    len
                }
                LeafValue::Inline(v) => v.len() as u64,
                LeafValue::Bucket { .. } => 0,
            });
        }
        Ok(lens)
    }

    fn open_bucket(&self, parent: usize, name: &[u8], create: bool) -> Result<usize> {
        if let Some(i) = self.find_open(parent, name) {
            return Ok(i);
        }
        let (root, seq) = match self.lookup(parent, name)? {
            Some(found) => match self.found_value(found)?.1 {
                LeafValue::Bucket { root, seq } => (root, seq),
                _ => return Err(Error::IncompatibleValue),
            },
            None if create => {
                self.check_writable()?;
                if name.is_empty() || name.len() > page::max_key_len(self.db.page_size) {
                    return Err(Error::KeyTooLarge);
                }
                let mut st = self.state.borrow_mut();
                let st = &mut *st;
                let ws = st.write.as_mut().ok_or(Error::TxReadOnly)?;
                let mut ctx = WriteCtx {
                    src: self.db.pages(self.meta.page_count),
                    freed: &mut ws.freed,
                };
                let p = &mut st.buckets[parent];
                ctx.put(
                    &mut p.tree,
                    name,
                    LeafValue::Bucket { root: 0, seq: 0 },
                    PutMode::NewBucket,
                )?;
                p.version += 1;
                p.dirty = true;
                (0, 0)
            }
            None => return Err(Error::BucketNotFound),
        };
        let mut st = self.state.borrow_mut();
        if root == 1 || root >= st.page_count {
            return Err(Error::Corrupted("bucket root out of range"));
        }
        st.buckets.push(BucketState {
            parent: Some(parent),
            name: crate::node::KeyBytes::from_slice(name),
            tree: Tree::new(root),
            seq,
            dirty: false,
            deleted: false,
            version: 0,
        });
        Ok(st.buckets.len() - 1)
    }

    fn find_open(&self, parent: usize, name: &[u8]) -> Option<usize> {
        let st = self.state.borrow();
        st.buckets
            .iter()
            .position(|b| !b.deleted && b.parent == Some(parent) && b.name.as_slice() == name)
    }

    fn delete_bucket_in(&self, parent: usize, name: &[u8]) -> Result<()> {
        self.check_writable()?;
        let found = self.lookup(parent, name)?.ok_or(Error::BucketNotFound)?;
        let LeafValue::Bucket { root, .. } = self.found_value(found)?.1 else {
            return Err(Error::IncompatibleValue);
        };
        let mut freed = Vec::new();
        match self.find_open(parent, name) {
            Some(b) => self.free_open_bucket(b, &mut freed, 0)?,
            None => self.free_pages(None, Child::Page(root), &mut freed, 0)?,
        }
        let mut st = self.state.borrow_mut();
        let st = &mut *st;
        let ws = st.write.as_mut().ok_or(Error::TxReadOnly)?;
        ws.freed.extend(freed);
        let mut ctx = WriteCtx {
            src: self.db.pages(self.meta.page_count),
            freed: &mut ws.freed,
        };
        let p = &mut st.buckets[parent];
        ctx.delete(&mut p.tree, name)?;
        p.version += 1;
        p.dirty = true;
        Ok(())
    }

    /// Free everything an open bucket references and mark it (and open descendants) deleted.
    fn free_open_bucket(
        &self,
        b: usize,
        freed: &mut Vec<(PageId, u64)>,
        depth: usize,
    ) -> Result<()> {
        let root = self.state.borrow().buckets[b].tree.root;
        self.free_pages(Some(b), root, freed, depth)?;
        self.state.borrow_mut().buckets[b].deleted = true;
        Ok(())
    }

    /// Free the pages of a subtree. `owner` is the open bucket the subtree belongs to (so nested
    /// buckets that are open in this transaction are freed through their own state).
    fn free_pages(
        &self,
        owner: Option<usize>,
        child: Child,
        freed: &mut Vec<(PageId, u64)>,
        depth: usize,
    ) -> Result<()> {
        if depth > MAX_DEPTH {
            return Err(Error::Corrupted("tree too deep"));
        }
        let ps = self.db.page_size as u64;
        let mut children = Vec::new();
        let mut values = Vec::new();
        match child {
            Child::Page(0) => return Ok(()),
            Child::Page(id) => {
                let page_count = self.state.borrow().page_count;
                let buf = self.db.pages(page_count).page(id)?;
                let (leaf, count) = page::node_header(&buf, id)?;
                freed.push((id, 1));
                for i in 0..count {
                    if leaf {
                        let slot = page::leaf_slot(&buf, i)?;
                        let v = LeafValue::decode(slot.flags, &buf[slot.value.clone()])?;
                        values.push((crate::node::KeyBytes::from_slice(&buf[slot.key]), v));
                    } else {
                        children.push(Child::Page(page::branch_slot(&buf, i)?.1));
                    }
                }
            }
            Child::Dirty(i) => {
                let st = self.state.borrow();
                let owner_b = owner.ok_or(Error::Corrupted("dirty node without bucket"))?;
                let node = st.buckets[owner_b]
                    .tree
                    .nodes
                    .get(i)
                    .ok_or(Error::Corrupted("dangling dirty node"))?;
                match &node.entries {
                    Entries::Leaf(e) => values.extend(e.iter().cloned()),
                    Entries::Branch(e) => children.extend(e.iter().map(|(_, c)| *c)),
                }
            }
        }
        for c in children {
            self.free_pages(owner, c, freed, depth + 1)?;
        }
        for (key, v) in values {
            match v {
                LeafValue::Overflow { page, len } => freed.push((page, len.div_ceil(ps).max(1))),
                LeafValue::Bucket { root, .. } => {
                    match owner.and_then(|o| self.find_open(o, &key)) {
                        Some(nested) => self.free_open_bucket(nested, freed, depth + 1)?,
                        None => self.free_pages(None, Child::Page(root), freed, depth + 1)?,
                    }
                }
                LeafValue::Inline(_) => {}
            }
        }
        Ok(())
    }
}

/// A handle on a bucket opened in a transaction. Cheap to copy around; all handles on the same
/// bucket see the same (uncommitted) contents.
pub struct Bucket<'tx, 'db, P: Pager> {
    pub(crate) tx: &'tx Tx<'db, P>,
    pub(crate) id: usize,
}

impl<P: Pager> Clone for Bucket<'_, '_, P> {
    fn clone(&self) -> Self {
        Bucket {
            tx: self.tx,
            id: self.id,
        }
    }
}

impl<'tx, 'db, P: Pager> Bucket<'tx, 'db, P> {
    /// The value under `key`, zero-copy from the page when the pager hands out borrowed pages.
    /// A nested bucket under `key` is [`Error::IncompatibleValue`].
    pub fn get(&self, key: &[u8]) -> Result<Option<Bytes<'db, P>>> {
        self.tx.get(self.id, key)
    }

    /// Insert or replace. Values longer than a sixth of a page go to contiguous overflow pages.
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.tx.put(self.id, key, value)
    }

    /// Insert or replace several pairs like [`Bucket::put`], writing the whole pages of each
    /// large value with [`Pager::write_direct`] straight from the caller's bytes, one call for
    /// all of them (so the kernel window can send adjacent values' pages as one device write
    /// instead of copying them into its frames). The pages are free in the committed store
    /// until this transaction commits, and the commit's barrier covers them. Stops at the first
    /// error; pairs before it stay inserted in the transaction. Returns, for each pair, the
    /// length of the value it replaced (`None`: the key was new).
    pub fn put_direct(&self, pairs: &[(&[u8], &[u8])]) -> Result<Vec<Option<u64>>> {
        let gathered: Vec<(&[u8], &[&[u8]])> = pairs
            .iter()
            .map(|(k, v)| (*k, core::slice::from_ref(v)))
            .collect();
        self.tx.put_direct(self.id, &gathered)
    }

    /// [`Bucket::put_direct`] of values given as pieces (each value is the concatenation of
    /// its pieces, e.g. the pages of a user buffer): the whole pages of a value whose pieces
    /// begin and end on its page boundaries are written straight from the pieces; those of
    /// other values are joined first.
    pub fn put_direct_gathered(&self, pairs: &[(&[u8], &[&[u8]])]) -> Result<Vec<Option<u64>>> {
        self.tx.put_direct(self.id, pairs)
    }

    /// Insert or replace pairs whose values an earlier transaction placed with
    /// [`Tx::reserve_placed`](crate::Tx::reserve_placed) and [`crate::Db::write_placed`] wrote
    /// (see [`crate::Placed`]): no bytes are written, the pages become the values' (a
    /// [`crate::Placed::cut`] value frees the pages past its length). A value that is not
    /// placed (inserted or dropped already) is [`crate::Error::Corrupted`] before anything
    /// changes. Stops at the first error; pairs before it stay inserted, the others stay
    /// placed. Returns, for each pair, the length of the value it replaced (`None`: the key
    /// was new).
    pub fn put_placed(&self, pairs: &[(&[u8], crate::Placed)]) -> Result<Vec<Option<u64>>> {
        self.tx.put_placed(self.id, pairs)
    }

    /// Insert many pairs in one go (sorted input is fastest: appends fill pages completely).
    /// Stops at the first error; pairs before it stay inserted in the transaction.
    pub fn put_many<K, V, I>(&self, pairs: I) -> Result<()>
    where
        K: AsRef<[u8]>,
        V: AsRef<[u8]>,
        I: IntoIterator<Item = (K, V)>,
    {
        for (k, v) in pairs {
            self.tx.put(self.id, k.as_ref(), v.as_ref())?;
        }
        Ok(())
    }

    /// Remove `key`; returns whether it existed. A bucket under `key` is
    /// [`Error::IncompatibleValue`] (use [`Bucket::delete_bucket`]).
    pub fn delete(&self, key: &[u8]) -> Result<bool> {
        self.tx.delete(self.id, key)
    }

    /// Remove every key in `[start, end)` (`end` `None`: to the bucket's last key) in one pass
    /// over the tree (values are not read); returns the lengths of the removed values, in key
    /// order. Like [`Bucket::delete`] for each key, without a lookup per key. A nested bucket in
    /// the range is [`Error::IncompatibleValue`], and after that error (as after any error
    /// here) the transaction must be dropped, not committed: part of the range may be gone
    /// already.
    pub fn delete_range(&self, start: &[u8], end: Option<&[u8]>) -> Result<Vec<u64>> {
        self.tx.delete_range(self.id, start, end)
    }

    /// Create a nested bucket.
    pub fn create_bucket(&self, name: &[u8]) -> Result<Bucket<'tx, 'db, P>> {
        self.tx.check_writable()?;
        if self.tx.lookup(self.id, name)?.is_some() {
            return Err(Error::BucketExists);
        }
        let id = self.tx.open_bucket(self.id, name, true)?;
        Ok(Bucket { tx: self.tx, id })
    }

    /// Open a nested bucket, creating it if missing.
    pub fn get_or_create_bucket(&self, name: &[u8]) -> Result<Bucket<'tx, 'db, P>> {
        let id = self.tx.open_bucket(self.id, name, self.tx.writable())?;
        Ok(Bucket { tx: self.tx, id })
    }

    /// Open a nested bucket.
    pub fn get_bucket(&self, name: &[u8]) -> Result<Bucket<'tx, 'db, P>> {
        let id = self.tx.open_bucket(self.id, name, false)?;
        Ok(Bucket { tx: self.tx, id })
    }

    /// Delete a nested bucket and everything in it.
    pub fn delete_bucket(&self, name: &[u8]) -> Result<()> {
        self.tx.delete_bucket_in(self.id, name)
    }

    /// A cursor over this bucket's entries, in key order.
    pub fn cursor(&self) -> Cursor<'tx, 'db, P> {
        Cursor::new(self.clone())
    }

    /// Increment and return the bucket's sequence counter (e.g. an inode allocator).
    pub fn next_sequence(&self) -> Result<u64> {
        self.tx.check_writable()?;
        let mut st = self.tx.state.borrow_mut();
        let b = &mut st.buckets[self.id];
        b.seq += 1;
        b.dirty = true;
        Ok(b.seq)
    }

    /// The bucket's sequence counter.
    pub fn sequence(&self) -> u64 {
        self.tx.state.borrow().buckets[self.id].seq
    }
}

/// An ordered cursor over one bucket.
pub struct Cursor<'tx, 'db, P: Pager> {
    bucket: Bucket<'tx, 'db, P>,
    walk: Walk<'db, P>,
}

impl<'tx, 'db, P: Pager> Cursor<'tx, 'db, P> {
    pub(crate) fn new(bucket: Bucket<'tx, 'db, P>) -> Self {
        Cursor {
            bucket,
            walk: Walk::new(),
        }
    }

    /// With `true`, entries whose value lies in overflow pages of a committed snapshot come
    /// without their bytes: [`Entry::value`] is `None` for them, [`Entry::value_len`] and
    /// [`Entry::overflow_location`] say where the value is. A caller that moves large values
    /// with [`Pager::read_into`] (straight into its own buffer) then does not read every value
    /// twice, once through [`Pager::read`] (on a host file: a `pread` and a cache copy) and
    /// once into its buffer.
    pub fn locate_overflow_values(&mut self, on: bool) {
        self.walk.lazy_overflow = on;
    }

    /// Move to the first entry.
    pub fn first(&mut self) -> Result<Option<Entry<'db, P>>> {
        self.walk.first(&self.bucket)
    }

    /// Move to the last entry.
    pub fn last(&mut self) -> Result<Option<Entry<'db, P>>> {
        self.walk.last(&self.bucket)
    }

    /// Move to the first entry whose key is `>= key`.
    pub fn seek(&mut self, key: &[u8]) -> Result<Option<Entry<'db, P>>> {
        self.walk.seek(&self.bucket, key)
    }

    /// Move to the next entry (the first one if the cursor is not positioned yet).
    // Not `Iterator::next`: it is fallible, and pairs with `prev`/`seek` on the same position.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<Entry<'db, P>>> {
        self.walk.next(&self.bucket)
    }

    /// Move to the previous entry (the last one if the cursor is not positioned yet).
    pub fn prev(&mut self) -> Result<Option<Entry<'db, P>>> {
        self.walk.prev(&self.bucket)
    }

    /// [`Cursor::next`], with the entry lent by the cursor where it can be: in a read
    /// transaction an inline value's key and value are borrowed from the leaf page the cursor
    /// holds, with no page handle taken per entry (see [`EntryRef`]); otherwise it is the
    /// owned [`Entry`]. For full scans.
    pub fn next_borrowed(&mut self) -> Result<Option<EntryRef<'_, 'db, P>>> {
        self.walk.next_borrowed(&self.bucket)
    }
}

impl<'db, P: Pager> PageSource for Bucket<'_, 'db, P> {
    type Page = P::Page<'db>;

    fn page_size(&self) -> usize {
        self.tx.db.page_size
    }

    fn page(&self, id: PageId) -> Result<P::Page<'db>> {
        self.tx.pages().page(id)
    }

    fn overflow(&self, first: PageId, len: u64) -> Result<P::Page<'db>> {
        self.tx.pages().overflow(first, len)
    }

    fn check_overflow(&self, first: PageId, len: u64) -> Result<()> {
        self.tx.pages().check_overflow(first, len)
    }
}

impl<P: Pager> TreeSource for Bucket<'_, '_, P> {
    fn root(&self) -> Result<(Child, u64)> {
        let st = self.tx.state.borrow();
        let b = &st.buckets[self.id];
        if b.deleted {
            return Err(Error::BucketNotFound);
        }
        Ok((b.tree.root, b.version))
    }

    fn version(&self) -> u64 {
        self.tx.state.borrow().buckets[self.id].version
    }

    fn with_dirty<R>(&self, node: usize, f: impl FnOnce(&Node) -> R) -> Result<R> {
        let st = self.tx.state.borrow();
        st.buckets[self.id]
            .tree
            .nodes
            .get(node)
            .map(f)
            .ok_or(Error::Corrupted("dangling dirty node"))
    }

    fn may_change(&self) -> bool {
        self.tx.writable()
    }
}
