//! Commit: writing a write transaction out and making it visible (and, for a durable commit,
//! durable).
//!
//! Order: spill dirty buckets deepest first (each writes its new root into its parent's
//! entry), then the root bucket, then (durable commits only) the freelist; write all pages;
//! then, for a durable commit, the barrier: `sync`, the meta page into the slot not holding the
//! durable meta, `sync` (the first `sync` is left out when the meta page carries a commit
//! record, see `store.rs`; a deferred commit only publishes the new meta to readers, and forces
//! a barrier when too many pages wait for one). Until a meta page is durable the previous
//! barrier's state is what a reopen finds. If any step before the meta write fails, every
//! page the transaction took goes back to the freelist and the error is returned; the store is
//! as it was. State: none of its own; it runs on the transaction's, under the writer lock
//! (then the snapshot lock, briefly, to publish).

use alloc::vec;
use alloc::vec::Vec;

use crate::error::{Error, Result};
use crate::node::LeafValue;
use crate::page::PageId;
use crate::pager::Pager;
use crate::tree::{PutMode, WriteCtx};
use crate::tx::{Tx, WriteState};

impl<P: Pager> Tx<'_, P> {
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
    /// the next barrier ([`Db::sync`](crate::Db::sync), a durable [`Tx::commit`], or one forced
    /// when too many pages wait for it). A crash before that goes back to the last barrier's
    /// state, which stays intact: pages it references are not reused until a newer meta is
    /// durable. An error leaves the store as it was.
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

    fn commit_inner(&self, durable: bool) -> Result<()> {
        let mut st = self.state.borrow_mut();
        let st = &mut *st;
        let Some(ws) = st.write.as_mut() else {
            return Err(Error::TxReadOnly);
        };
        let db = self.db;
        let ps = db.page_size as u64;
        let txid = self.meta.txid;
        let mut page_count = st.page_count;
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
                pages,
                use_reserve,
                keep_free,
                ..
            } = ws;
            for &(_, b) in &order {
                let bucket = &mut st.buckets[b];
                if bucket.deleted || !bucket.dirty {
                    continue;
                }
                let mut ctx = WriteCtx {
                    src: db.pages(self.meta.page_count),
                    freed,
                };
                let root = ctx.spill(
                    &mut bucket.tree,
                    &mut |n| pages.take(db, guard, &mut page_count, n),
                    &mut writes,
                )?;
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
                src: db.pages(self.meta.page_count),
                freed,
            };
            let root = ctx.spill(
                &mut root_bucket.tree,
                &mut |n| pages.take(db, guard, &mut page_count, n),
                &mut writes,
            )?;

            // A durable commit writes the freelist its meta points at; the old extent is part
            // of the previous commit: free it like any page. A deferred commit writes none (the
            // next barrier does, see `Db::barrier`): its meta keeps the old extent's place.
            let mut fl_extent = None;
            if durable {
                if old_fl != 0 {
                    freed.push((old_fl, old_fl_pages));
                }
                guard.freelist.free_at(txid, freed);
                let fl_pages = guard.freelist.pages_needed(db.page_size, 0);
                let fl = pages.take(db, guard, &mut page_count, fl_pages)?;
                let mut buf = vec![0u8; (fl_pages * ps) as usize];
                guard.freelist.encode(&mut buf, fl);
                fl_extent = Some((fl, fl_pages, buf));
            } else {
                guard.freelist.free_at(txid, freed);
            }
            pages.check_reserve(
                guard,
                capacity_pages,
                (self.meta.page_count, page_count),
                freed,
                *use_reserve,
                *keep_free,
            )?;
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
            db.write_noted(guard, &list, false, false)?;
            if durable {
                // Every page of this and earlier deferred commits, then the meta: a barrier
                // (one flush after them all when the meta can carry a commit record).
                let record = db.commit_record(guard);
                if record.is_none() {
                    db.sync_unnoted(guard)?;
                }
                // From here on a failure leaves the meta page's state unknown (poisoned).
                db.write_meta(guard, &meta, record.as_deref())?;
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
            db.note_free(guard, page_count);
        }
        Ok(())
    }
}
