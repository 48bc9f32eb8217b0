//! Transactions and buckets.
//!
//! A [`Tx`] is either a read transaction (a snapshot: the meta of the last commit when it began)
//! or the write transaction (holds the writer lock for its whole life). Its buckets live in an
//! arena inside the transaction, behind a `RefCell`: a [`Bucket`] is a cheap handle (transaction,
//! arena index), so several handles, nested buckets and cursors can be used at once.
//!
//! Commit: spill dirty buckets deepest first (each writes its new root into its parent's entry),
//! then the root bucket, then (durable commits only) the freelist; write all pages; then, for a
//! durable commit, the barrier: `sync`, the meta page into the slot not holding the durable meta, `sync` (a
//! deferred commit only publishes the new meta to readers). Until a meta page is durable the
//! previous barrier's state is what a reopen finds. If any step before the meta write fails,
//! every page the transaction took goes back to the freelist and the error is returned; the
//! store is as it was.

use alloc::vec;
use alloc::vec::Vec;
use core::cell::RefCell;
use core::ops::Deref;

use crate::sync::MutexGuard;

use crate::cursor::Cursor;
use crate::db::{Db, WriterState};
use crate::error::{Error, Result};
use crate::node::{Child, LeafValue};
use crate::page::{self, Meta, PageId};
use crate::page_alloc::PageAlloc;
use crate::pager::Pager;
use crate::tree::{self, Found, PutMode, Tree, WriteCtx, MAX_DEPTH};

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

/// One bucket opened in this transaction.
pub(crate) struct BucketState {
    pub parent: Option<usize>,
    pub name: Vec<u8>,
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
    /// Pages taken from the freelist (given back if the transaction does not commit).
    pub taken: Vec<(PageId, u64)>,
    /// Set by [`Tx::use_reserve`]: this transaction may dip into the reserve.
    pub use_reserve: bool,
}

pub(crate) struct TxState<'db> {
    pub buckets: Vec<BucketState>,
    pub write: Option<WriteState<'db>>,
    pub page_count: u64,
}

/// A transaction. Dropping a write transaction without [`Tx::commit`] rolls it back.
pub struct Tx<'db, P: Pager> {
    pub(crate) db: &'db Db<P>,
    pub(crate) meta: Meta,
    pub(crate) state: RefCell<TxState<'db>>,
    done: bool,
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
                taken: Vec::new(),
                use_reserve: false,
            }),
        )
    }

    fn new(db: &'db Db<P>, meta: Meta, write: Option<WriteState<'db>>) -> Self {
        let root = BucketState {
            parent: None,
            name: Vec::new(),
            tree: Tree::new(meta.root),
            seq: meta.root_seq,
            dirty: false,
            deleted: false,
            version: 0,
        };
        // Room for the root and a few opened buckets, so opening them does not reallocate
        // (a short read transaction opens one or two).
        let mut buckets = Vec::with_capacity(4);
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

    /// Whether this is the write transaction.
    pub fn writable(&self) -> bool {
        self.state.borrow().write.is_some()
    }

    /// The transaction id: the snapshot's commit for a reader, the commit-to-be for the writer.
    pub fn id(&self) -> u64 {
        self.meta.txid
    }

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

    /// Make every change durable, or return an error and leave the store as it was. Also makes
    /// every earlier deferred commit durable (one barrier covers them all).
    pub fn commit(mut self) -> Result<()> {
        self.done = true;
        let result = self.commit_inner(true);
        if result.is_err() {
            self.rollback_pages();
        }
        result.map(|_| ())
    }

    /// Commit without a durability barrier: the pages are written (no `sync`, no meta page), the
    /// new state is published to later readers and writers at once, and it becomes durable with
    /// the next barrier ([`Db::sync`], a durable [`Tx::commit`], or one forced when too many
    /// pages wait for it). A crash before that goes back to the last barrier's state, which
    /// stays intact: pages it references are not reused until a newer meta is durable. An
    /// error leaves the store as it was.
    pub fn commit_deferred(mut self) -> Result<()> {
        self.done = true;
        let result = self.commit_inner(false);
        if result.is_err() {
            self.rollback_pages();
        }
        result.map(|_| ())
    }

    /// [`Tx::commit_then`] with [`Tx::commit_deferred`]'s durability.
    pub fn commit_deferred_then<R>(mut self, after: impl FnOnce() -> R) -> Result<R> {
        self.done = true;
        let result = self.commit_inner(false);
        if result.is_err() {
            self.rollback_pages();
        }
        result.map(|_| after())
    }

    /// Pages on the freelist this write transaction may reuse (`None` for a read transaction).
    pub fn reusable_pages(&self) -> Option<u64> {
        self.state
            .borrow()
            .write
            .as_ref()
            .map(|w| w.guard.freelist.free_count() as u64)
    }

    /// [`Tx::commit`], then run `after` while this transaction still holds the writer lock:
    /// the next write transaction starts only once `after` returned. A layer that keeps its own
    /// state about uncommitted changes (dbfs's write-back cache) updates it here, so the next
    /// writer never sees the new store beside the old state. `after` does not run if the
    /// commit fails.
    pub fn commit_then<R>(mut self, after: impl FnOnce() -> R) -> Result<R> {
        self.done = true;
        let result = self.commit_inner(true);
        if result.is_err() {
            self.rollback_pages();
        }
        result.map(|_| after())
    }

    /// Drop the transaction's changes (same as dropping it).
    pub fn rollback(self) {}

    /// Let this write transaction use the reserved pages ([`crate::reserve_pages`]): for
    /// deletions, which need fresh pages (copy-on-write) before they free any, so that removing
    /// files still works on a full store. A transaction that frees at least as many pages as it
    /// takes may use the reserve without asking. No effect on a read transaction.
    pub fn use_reserve(&self) {
        if let Some(ws) = self.state.borrow_mut().write.as_mut() {
            ws.use_reserve = true;
        }
    }

    fn commit_inner(&self, durable: bool) -> Result<()> {
        let mut st = self.state.borrow_mut();
        let st = &mut *st;
        let Some(ws) = st.write.as_mut() else {
            return Err(Error::TxReadOnly);
        };
        let db = self.db;
        let ps = db.page_size as u64;
        let txid = self.meta.txid;
        let page_count = st.page_count;
        let capacity_pages = db.pager.capacity() / ps;
        let mut writes: Vec<(PageId, Vec<u8>)> = Vec::new();
        // Where the freelist extent is now: a barrier made while this transaction ran (to
        // reclaim held pages) wrote a new one, so `self.meta`'s may be gone already.
        let (old_fl, old_fl_pages) = {
            let m = db.snapshot.lock().meta;
            (m.freelist, m.freelist_pages)
        };

        // Deepest buckets first, so each parent sees its children's new roots.
        let depth = |mut b: usize| {
            let mut d = 0;
            while let Some(p) = st.buckets[b].parent {
                b = p;
                d += 1;
            }
            d
        };
        let mut order: Vec<(usize, usize)> = (1..st.buckets.len()).map(|b| (depth(b), b)).collect();
        order.sort_unstable_by(|a, b| b.cmp(a));
        {
            let WriteState {
                guard,
                freed,
                taken,
                use_reserve,
            } = ws;
            let mut pages = PageAlloc {
                db,
                writer: guard,
                taken,
                page_count,
                capacity_pages,
            };
            for &(_, b) in &order {
                let bucket = &mut st.buckets[b];
                if bucket.deleted || !bucket.dirty {
                    continue;
                }
                let mut ctx = WriteCtx {
                    db,
                    page_count: self.meta.page_count,
                    freed,
                };
                let root = ctx.spill(&mut bucket.tree, &mut |n| pages.take(n), &mut writes)?;
                let (seq, name) = (bucket.seq, bucket.name.clone());
                let parent = bucket.parent.unwrap_or(0);
                let parent = &mut st.buckets[parent];
                ctx.put(
                    &mut parent.tree,
                    &name,
                    LeafValue::Bucket { root, seq },
                    PutMode::SetBucket,
                )?;
                parent.dirty = true;
            }
            let root_bucket = &mut st.buckets[0];
            let mut ctx = WriteCtx {
                db,
                page_count: self.meta.page_count,
                freed,
            };
            let root = ctx.spill(&mut root_bucket.tree, &mut |n| pages.take(n), &mut writes)?;

            // A durable commit writes the freelist its meta points at; the old extent is part
            // of the previous commit: free it like any page. A deferred commit writes none (the
            // next barrier does, see `Db::barrier`): its meta keeps the old extent's place.
            let mut fl_extent = None;
            if durable {
                if old_fl != 0 {
                    freed.push((old_fl, old_fl_pages));
                }
                pages.writer.freelist.free_at(txid, freed);
                let fl_pages = pages.writer.freelist.pages_needed(db.page_size, 0);
                let fl = pages.take(fl_pages)?;
                let mut buf = vec![0u8; (fl_pages * ps) as usize];
                pages.writer.freelist.encode(&mut buf, fl);
                fl_extent = Some((fl, fl_pages, buf));
            } else {
                pages.writer.freelist.free_at(txid, freed);
            }
            let page_count = pages.page_count;
            // The reserve: a transaction that leaves more pages in use than it found may not
            // leave fewer than `reserve_pages` free (growing the file or the freelist counts as
            // use), unless it asked for the reserve; the store is left exactly as it was.
            let taken_now: u64 = pages.taken.iter().map(|t| t.1).sum();
            let grown = (page_count - self.meta.page_count) + taken_now;
            let released: u64 = freed.iter().map(|f| f.1).sum();
            if grown > released && !*use_reserve {
                let free_after =
                    capacity_pages.saturating_sub(page_count) + pages.writer.freelist.total_count();
                if free_after < crate::reserve_pages(capacity_pages) {
                    return Err(Error::NoSpace);
                }
            }
            let mut meta = self.meta;
            meta.freelist = old_fl;
            meta.freelist_pages = old_fl_pages;
            if let Some((fl, fl_pages, buf)) = fl_extent {
                writes.push((fl, buf));
                meta.freelist = fl;
                meta.freelist_pages = fl_pages;
            }
            meta.root = root;
            meta.root_seq = st.buckets[0].seq;
            meta.page_count = page_count;
            st.page_count = page_count;

            writes.sort_unstable_by_key(|w| w.0);
            let list: Vec<(u64, &[u8])> = writes
                .iter()
                .map(|(id, b)| (id * ps, b.as_slice()))
                .collect();
            if guard.poisoned {
                return Err(Error::Poisoned);
            }
            db.pager.write(&list)?;
            if durable {
                // Every page of this and earlier deferred commits, then the meta: a barrier.
                db.pager.sync()?;
                // From here on a failure leaves the meta page's state unknown (poisoned).
                db.write_meta(guard, &meta)?;
                guard.freelist_stale = false;
            } else {
                guard.freelist_stale = true;
                db.snapshot.lock().meta = meta;
                if guard.freelist.since_barrier() > guard.barrier_bound {
                    // The commit is done and published whatever happens here; a failing
                    // barrier leaves it pending, and the next barrier reports the error again.
                    let _ = db.barrier(guard);
                }
            }
        }
        Ok(())
    }

    /// Give back pages taken from the freelist and forget this transaction's frees.
    fn rollback_pages(&mut self) {
        let txid = self.meta.txid;
        let st = self.state.get_mut();
        if let Some(ws) = st.write.as_mut() {
            for &(id, n) in &ws.taken {
                ws.guard.freelist.untake(id, n);
            }
            ws.taken.clear();
            ws.guard.freelist.unfree_at(txid);
        }
    }

    // ---- internal bucket operations (used by Bucket and Cursor) ----

    fn check_writable(&self) -> Result<()> {
        if self.state.borrow().write.is_some() {
            Ok(())
        } else {
            Err(Error::TxReadOnly)
        }
    }

    pub(crate) fn lookup(&self, b: usize, key: &[u8]) -> Result<Option<Found<'db, P>>> {
        let st = self.state.borrow();
        let bucket = &st.buckets[b];
        if bucket.deleted {
            return Err(Error::BucketNotFound);
        }
        tree::lookup(self.db, st.page_count, &bucket.tree, key)
    }

    fn found_value(&self, found: Found<'db, P>) -> Result<(u32, LeafValue, Option<Bytes<'db, P>>)> {
        Ok(match found {
            Found::Page(page, slot) => {
                if slot.flags == page::FLAG_INLINE {
                    (
                        slot.flags,
                        LeafValue::Inline(Vec::new()),
                        Some(Bytes::page(page, slot.value)),
                    )
                } else {
                    let v = LeafValue::decode(slot.flags, &page[slot.value.clone()])?;
                    (slot.flags, v, None)
                }
            }
            Found::Dirty(LeafValue::Inline(v)) => (
                page::FLAG_INLINE,
                LeafValue::Inline(Vec::new()),
                Some(Bytes::owned(v)),
            ),
            Found::Dirty(v) => (1, v, None),
        })
    }

    pub(crate) fn value_of(
        &self,
        value: LeafValue,
        inline: Option<Bytes<'db, P>>,
    ) -> Result<Option<Bytes<'db, P>>> {
        match value {
            LeafValue::Bucket { .. } => Ok(None),
            LeafValue::Overflow { page, len } => {
                let page_count = self.state.borrow().page_count;
                let buf = self.db.read_overflow(page, len, page_count)?;
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

    /// The size limits of a pair (what `put` and `put_direct` refuse before touching anything).
    fn check_pair(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.check_pair_len(key, value.len())
    }

    fn check_pair_len(&self, key: &[u8], value_len: usize) -> Result<()> {
        if key.is_empty() || key.len() > page::max_key_len(self.db.page_size) {
            return Err(Error::KeyTooLarge);
        }
        if value_len as u64 > u32::MAX as u64 {
            return Err(Error::ValueTooLarge);
        }
        Ok(())
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
            LeafValue::Inline(value.to_vec())
        };
        let ws = st.write.as_mut().ok_or(Error::TxReadOnly)?;
        let mut ctx = WriteCtx {
            db: self.db,
            page_count: self.meta.page_count,
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

    /// Write a large value to fresh contiguous pages now (nobody can see them until commit).
    fn write_overflow(&self, st: &mut TxState<'db>, value: &[u8]) -> Result<LeafValue> {
        let ps = self.db.page_size;
        let n = value.len().div_ceil(ps) as u64;
        let id = self.alloc(st, n)?;
        let full = value.len() / ps * ps;
        let rest = &value[full..];
        // The last page padded with zeros, only when the value does not end on a page (a
        // chunk-sized value is written straight from `value`, with no page buffer to fill).
        let tail = if rest.is_empty() {
            Vec::new()
        } else {
            let mut t = vec![0u8; ps];
            t[..rest.len()].copy_from_slice(rest);
            t
        };
        let base = id * ps as u64;
        let mut writes: Vec<(u64, &[u8])> = Vec::with_capacity(2);
        if full > 0 {
            writes.push((base, &value[..full]));
        }
        if !rest.is_empty() {
            writes.push((base + full as u64, &tail));
        }
        if let Err(e) = self.db.pager.write(&writes) {
            if let Some(ws) = st.write.as_mut() {
                ws.freed.push((id, n));
            }
            return Err(e);
        }
        Ok(LeafValue::Overflow {
            page: id,
            len: value.len() as u64,
        })
    }

    /// [`Bucket::put_direct`]: allocate every large value's pages, write their whole pages
    /// with one [`Pager::write_direct`] (straight from the caller's bytes) and the padded last
    /// pages with one `write`, then insert the pairs. Returns the replaced values' lengths.
    fn put_direct(&self, b: usize, pairs: &[(&[u8], &[&[u8]])]) -> Result<Vec<Option<u64>>> {
        self.check_writable()?;
        let ps = self.db.page_size;
        let lens: Vec<usize> = pairs
            .iter()
            .map(|(_, pieces)| pieces.iter().map(|p| p.len()).sum())
            .collect();
        for (&(key, _), &len) in pairs.iter().zip(&lens) {
            self.check_pair_len(key, len)?;
        }
        let mut st = self.state.borrow_mut();
        let st = &mut *st;
        if st.buckets[b].deleted {
            return Err(Error::BucketNotFound);
        }
        // Pages of each pair's value (None: stored inline), all taken before anything is
        // written: one extent for all of them if the store has one (the values then lie in
        // order, and the pager can write them as one piece), else one per value.
        let pages_of =
            |len: usize| (len > page::max_inline_len(ps)).then(|| len.div_ceil(ps) as u64);
        let total: u64 = lens.iter().filter_map(|&len| pages_of(len)).sum();
        let mut next = if total > 0 {
            self.alloc(st, total).ok()
        } else {
            None
        };
        let mut extents: Vec<Option<(PageId, u64)>> = Vec::with_capacity(pairs.len());
        let mut direct: Vec<(u64, &[u8])> = Vec::new();
        // Whole pages of values whose pieces do not fall on page boundaries, joined.
        let mut joined: Vec<(u64, Vec<u8>)> = Vec::new();
        let mut tails: Vec<(u64, Vec<u8>)> = Vec::new();
        let mut failed = None;
        for (&(_, pieces), &len) in pairs.iter().zip(&lens) {
            let Some(n) = pages_of(len) else {
                extents.push(None);
                continue;
            };
            let id = match next.as_mut() {
                Some(at) => {
                    *at += n;
                    *at - n
                }
                None => match self.alloc(st, n) {
                    Ok(id) => id,
                    Err(e) => {
                        failed = Some(e);
                        break;
                    }
                },
            };
            extents.push(Some((id, n)));
            let base = id * ps as u64;
            let full = len / ps * ps;
            // The whole pages go straight from the pieces when each piece inside them starts
            // and ends on a page boundary of the value; otherwise they are joined first.
            let mut at = 0;
            let mut aligned = true;
            for piece in pieces.iter() {
                if at < full && (at % ps != 0 || (piece.len() % ps != 0 && at + piece.len() < full))
                {
                    aligned = false;
                    break;
                }
                at += piece.len();
            }
            let mut tail = if full < len {
                vec![0u8; ps]
            } else {
                Vec::new()
            };
            let mut at = 0;
            let mut whole = Vec::new();
            for piece in pieces.iter() {
                let in_full = piece.len().min(full.saturating_sub(at));
                if in_full > 0 {
                    if aligned {
                        direct.push((base + at as u64, &piece[..in_full]));
                    } else {
                        whole.extend_from_slice(&piece[..in_full]);
                    }
                }
                let rest = &piece[in_full..];
                if !rest.is_empty() {
                    let t = at + in_full - full;
                    tail[t..t + rest.len()].copy_from_slice(rest);
                }
                at += piece.len();
            }
            if !whole.is_empty() {
                joined.push((base, whole));
            }
            if full < len {
                tails.push((base + full as u64, tail));
            }
        }
        let written = match failed {
            Some(e) => Err(e),
            None => {
                direct.extend(joined.iter().map(|(o, w)| (*o, w.as_slice())));
                direct.sort_unstable_by_key(|w| w.0);
                tails.sort_unstable_by_key(|w| w.0);
                let tails: Vec<(u64, &[u8])> =
                    tails.iter().map(|(o, t)| (*o, t.as_slice())).collect();
                let d = if direct.is_empty() {
                    Ok(())
                } else {
                    self.db.pager.write_direct(&direct)
                };
                d.and_then(|_| {
                    if tails.is_empty() {
                        Ok(())
                    } else {
                        self.db.pager.write(&tails)
                    }
                })
            }
        };
        let ws = st.write.as_mut().ok_or(Error::TxReadOnly)?;
        if let Err(e) = written {
            // Nothing references the pages: they go back with the transaction's frees.
            ws.freed.extend(extents.iter().flatten().copied());
            return Err(e);
        }
        let mut ctx = WriteCtx {
            db: self.db,
            page_count: self.meta.page_count,
            freed: &mut ws.freed,
        };
        let bucket = &mut st.buckets[b];
        bucket.version += 1;
        bucket.dirty = true;
        let mut replaced = Vec::with_capacity(pairs.len());
        for (i, ((&(key, pieces), extent), &len)) in
            pairs.iter().zip(&extents).zip(&lens).enumerate()
        {
            let leaf_value = match *extent {
                Some((page, _)) => LeafValue::Overflow {
                    page,
                    len: len as u64,
                },
                None => LeafValue::Inline(pieces.concat()),
            };
            match ctx.put(&mut bucket.tree, key, leaf_value, PutMode::Value) {
                Ok(Some(LeafValue::Overflow { page, len })) => {
                    ctx.freed.push((page, len.div_ceil(ps as u64).max(1)));
                    replaced.push(Some(len));
                }
                Ok(Some(LeafValue::Inline(v))) => replaced.push(Some(v.len() as u64)),
                Ok(_) => replaced.push(None),
                Err(e) => {
                    // This pair and the ones after it are not inserted: free their pages.
                    ctx.freed.extend(extents[i..].iter().flatten().copied());
                    return Err(e);
                }
            }
        }
        Ok(replaced)
    }

    /// Take `n` contiguous pages for a node or value this transaction writes ([`PageAlloc`]).
    fn alloc(&self, st: &mut TxState<'db>, n: u64) -> Result<PageId> {
        let ws = st.write.as_mut().ok_or(Error::TxReadOnly)?;
        let mut pages = PageAlloc {
            db: self.db,
            writer: &mut ws.guard,
            taken: &mut ws.taken,
            page_count: st.page_count,
            capacity_pages: self.db.pager.capacity() / self.db.page_size as u64,
        };
        let id = pages.take(n);
        st.page_count = pages.page_count;
        id
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
            db: self.db,
            page_count: self.meta.page_count,
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
                    db: self.db,
                    page_count: self.meta.page_count,
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
            name: name.to_vec(),
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
            .position(|b| !b.deleted && b.parent == Some(parent) && b.name == name)
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
            db: self.db,
            page_count: self.meta.page_count,
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
                let buf = self.db.read_page(id, page_count)?;
                let (leaf, count) = page::node_header(&buf, id)?;
                freed.push((id, 1));
                for i in 0..count {
                    if leaf {
                        let slot = page::leaf_slot(&buf, i)?;
                        let v = LeafValue::decode(slot.flags, &buf[slot.value.clone()])?;
                        values.push((buf[slot.key].to_vec(), v));
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
                    crate::node::Entries::Leaf(e) => values.extend(e.iter().cloned()),
                    crate::node::Entries::Branch(e) => children.extend(e.iter().map(|(_, c)| *c)),
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
