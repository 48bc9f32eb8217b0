//! Free-page tracking.
//!
//! `free` pages may be reused now. `pending[t]` holds the pages freed by the commit of transaction
//! `t`: they are still part of snapshot `t - 1`, so they move to `free` only once no open reader
//! has a snapshot older than `t`. On disk the freelist is one extent of pages listing
//! `free ∪ pending ∪ held` (after a restart nobody holds an old snapshot).
//!
//! Deferred commits (no barrier, no meta write) add a second rule: the newest *durable* meta is
//! what a crash goes back to, so a page it references must not be overwritten before a newer
//! meta is durable. A page freed since the last barrier is therefore either
//! - *fresh*: taken (or grown) since the last barrier, so the durable meta cannot reference it
//!   (it was free, or past the end, when the barrier completed): it goes to `pending[t]` and
//!   follows the reader rule only; or
//! - *held*: possibly referenced by the durable meta: it waits in `held[t]` until the next
//!   barrier completes ([`Freelist::barrier_done`]), then joins `pending[t]`.

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::vec::Vec;

use crate::error::{Error, Result};
use crate::page::{self, PageId, HEADER_SIZE, KIND_FREELIST};

#[derive(Clone, Debug, Default)]
pub struct Freelist {
    free: BTreeSet<PageId>,
    pending: BTreeMap<u64, Vec<PageId>>,
    /// Pages freed by commit `t` since the last barrier that the durable meta may reference.
    held: BTreeMap<u64, Vec<PageId>>,
    /// Pages taken or grown since the last barrier (never referenced by the durable meta).
    fresh: BTreeSet<PageId>,
}

impl Freelist {
    /// Decode the on-disk freelist extent; every id must be a non-meta page below `page_count`.
    pub fn decode(buf: &[u8], id: PageId, page_count: u64) -> Result<Freelist> {
        let count = page::check_header(buf, id, KIND_FREELIST)?;
        if count > (buf.len() - HEADER_SIZE) / 8 {
            return Err(Error::Corrupted("freelist count exceeds extent"));
        }
        let mut free = BTreeSet::new();
        for i in 0..count {
            let p = page::get_u64(buf, HEADER_SIZE + i * 8)?;
            if p < 2 || p >= page_count {
                return Err(Error::Corrupted("freelist page out of range"));
            }
            free.insert(p);
        }
        Ok(Freelist {
            free,
            ..Freelist::default()
        })
    }

    /// Pages needed to store this freelist with `extra` more ids.
    pub fn pages_needed(&self, page_size: usize, extra: usize) -> u64 {
        let ids = self.total_count() as usize + extra;
        (HEADER_SIZE + ids * 8).div_ceil(page_size) as u64
    }

    /// Serialise `free ∪ pending ∪ held` into `buf` (the whole extent, zeroed) as page `id`.
    pub fn encode(&self, buf: &mut [u8], id: PageId) {
        self.encode_with(buf, id, &[]);
    }

    /// [`Freelist::encode`], listing the pages of `extra` as free too (the extent this one
    /// replaces, freed once the meta that points at this one is durable).
    pub fn encode_with(&self, buf: &mut [u8], id: PageId, extra: &[(PageId, u64)]) {
        let mut ids: Vec<PageId> = self.free.iter().copied().collect();
        for &(start, n) in extra {
            ids.extend(start..start + n);
        }
        for p in self.pending.values().chain(self.held.values()) {
            ids.extend_from_slice(p);
        }
        ids.sort_unstable();
        ids.dedup();
        page::put_u16(buf, 0, KIND_FREELIST);
        page::put_u32(buf, 4, ids.len() as u32);
        page::put_u64(buf, 8, id);
        for (i, p) in ids.iter().enumerate() {
            page::put_u64(buf, HEADER_SIZE + i * 8, *p);
        }
    }

    /// Take `n` contiguous free pages, or `None` if no run is long enough.
    pub fn take(&mut self, n: u64) -> Option<PageId> {
        let start = if n == 1 {
            *self.free.first()?
        } else {
            let mut run_start = 0;
            let mut run_len = 0;
            let mut found = None;
            for &p in &self.free {
                if run_len > 0 && p == run_start + run_len {
                    run_len += 1;
                } else {
                    run_start = p;
                    run_len = 1;
                }
                if run_len == n {
                    found = Some(run_start);
                    break;
                }
            }
            found?
        };
        for p in start..start + n {
            self.free.remove(&p);
            self.fresh.insert(p);
        }
        Some(start)
    }

    /// Note pages a transaction added past the store's end: like taken ones, the durable meta
    /// cannot reference them.
    pub fn grown(&mut self, start: PageId, n: u64) {
        self.fresh.extend(start..start + n);
    }

    /// Give back pages taken by a transaction that did not commit.
    pub fn untake(&mut self, start: PageId, n: u64) {
        self.free.extend(start..start + n);
    }

    /// Record pages freed by the commit of `txid`: fresh ones wait for readers only, the others
    /// also for the next barrier.
    pub fn free_at(&mut self, txid: u64, pages: &[(PageId, u64)]) {
        let mut fresh = Vec::new();
        let mut held = Vec::new();
        for &(start, n) in pages {
            for p in start..start + n {
                if self.fresh.contains(&p) {
                    fresh.push(p);
                } else {
                    held.push(p);
                }
            }
        }
        if !fresh.is_empty() {
            self.pending.entry(txid).or_default().extend(fresh);
        }
        if !held.is_empty() {
            self.held.entry(txid).or_default().extend(held);
        }
    }

    /// Forget what a failed commit of `txid` recorded.
    pub fn unfree_at(&mut self, txid: u64) {
        self.pending.remove(&txid);
        self.held.remove(&txid);
    }

    /// A barrier made commit `durable_txid` durable: no page freed by it or before is referenced
    /// by the durable meta any more (a transaction still open, with a later txid, keeps its
    /// held pages), and nothing taken so far is fresh relative to the next barrier.
    pub fn barrier_done(&mut self, durable_txid: u64) {
        let later = self.held.split_off(&durable_txid.saturating_add(1));
        for (t, pages) in core::mem::replace(&mut self.held, later) {
            self.pending.entry(t).or_default().extend(pages);
        }
        self.fresh.clear();
    }

    /// Pages waiting for the next barrier (held) plus pages taken since the last one: what a
    /// barrier would settle. [`crate::Db`] forces a barrier when it exceeds its bound.
    pub fn since_barrier(&self) -> u64 {
        (self.held.values().map(Vec::len).sum::<usize>() + self.fresh.len()) as u64
    }

    /// Pages held for the next barrier.
    pub fn held_count(&self) -> u64 {
        self.held.values().map(Vec::len).sum::<usize>() as u64
    }

    /// Move to `free` every pending set freed by a commit `t <= oldest_reader` (no reader can see
    /// it). `oldest_reader` is the oldest open snapshot, or `u64::MAX` when there is none.
    pub fn release(&mut self, oldest_reader: u64) {
        while let Some((&t, _)) = self.pending.first_key_value() {
            if t > oldest_reader {
                break;
            }
            if let Some(pages) = self.pending.remove(&t) {
                self.free.extend(pages);
            }
        }
    }

    /// Number of pages listed, free now, pending or held (what the store will have free once
    /// no reader holds an old snapshot and the next barrier completed).
    pub fn total_count(&self) -> u64 {
        (self.free.len() + self.pending.values().map(Vec::len).sum::<usize>()) as u64
            + self.held_count()
    }

    /// Number of pages free now (not counting pending ones).
    pub fn free_count(&self) -> usize {
        self.free.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_pages_wait_for_older_readers() {
        let mut f = Freelist::default();
        f.free_at(5, &[(10, 2)]);
        f.free_at(6, &[(20, 1)]);
        f.barrier_done(u64::MAX);
        assert_eq!(f.take(1), None);
        // A reader of snapshot 4 can still see pages freed by commit 5.
        f.release(4);
        assert_eq!(f.take(1), None);
        f.release(5);
        assert_eq!(f.take(2), Some(10));
        f.release(u64::MAX);
        assert_eq!(f.take(1), Some(20));
        assert_eq!(f.free_count(), 0);
    }

    #[test]
    fn contiguous_runs_and_roundtrip() {
        let mut f = Freelist::default();
        f.free_at(1, &[(3, 1), (7, 4), (20, 2)]);
        f.barrier_done(u64::MAX);
        f.release(u64::MAX);
        assert_eq!(f.take(3), Some(7));
        f.untake(7, 3);
        let mut buf = [0u8; 1024];
        f.encode(&mut buf, 30);
        let g = Freelist::decode(&buf, 30, 40).unwrap();
        assert_eq!(g.free, f.free);
        assert!(
            Freelist::decode(&buf, 30, 21).is_err(),
            "ids beyond page_count are corrupt"
        );
        assert!(Freelist::decode(&buf, 31, 40).is_err(), "wrong page id");
    }

    #[test]
    fn pages_of_the_durable_meta_wait_for_the_barrier() {
        let mut f = Freelist::default();
        // Pages 10 and 11 belong to the durable meta; a deferred commit 5 frees them.
        f.free_at(5, &[(10, 2)]);
        f.release(u64::MAX);
        assert_eq!(
            f.take(1),
            None,
            "held until the next barrier, even with no reader"
        );
        assert_eq!(f.held_count(), 2);
        assert_eq!(
            f.total_count(),
            2,
            "listed on disk: free in the state being committed"
        );
        f.barrier_done(u64::MAX);
        assert_eq!(f.held_count(), 0);
        f.release(4);
        assert_eq!(f.take(1), None, "then the reader rule still applies");
        f.release(u64::MAX);
        assert_eq!(f.take(2), Some(10));
    }

    #[test]
    fn fresh_pages_are_reused_before_the_barrier() {
        let mut f = Freelist::default();
        f.grown(30, 1); // commit 5 grew the store by page 30
        f.free_at(6, &[(30, 1)]); // commit 6 freed it again: never in a durable meta
        f.release(5);
        assert_eq!(f.take(1), None, "a reader of snapshot 5 still sees page 30");
        f.release(u64::MAX);
        assert_eq!(f.take(1), Some(30));
        // Taken again: still fresh, so freeing it once more does not hold it either.
        f.free_at(7, &[(30, 1)]);
        f.release(u64::MAX);
        assert_eq!(f.take(1), Some(30));
        // After a barrier page 30 may be in the durable meta: the next free holds it.
        f.barrier_done(u64::MAX);
        f.free_at(8, &[(30, 1)]);
        f.release(u64::MAX);
        assert_eq!(f.take(1), None);
        assert_eq!(f.since_barrier(), 1);
    }

    #[test]
    fn a_barrier_releases_only_what_it_made_durable() {
        let mut f = Freelist::default();
        f.free_at(4, &[(10, 1)]);
        f.free_at(6, &[(11, 1)]); // freed by an open transaction 6
        f.barrier_done(5); // the barrier wrote meta 5
        f.release(u64::MAX);
        assert_eq!(f.take(1), Some(10));
        assert_eq!(f.take(1), None, "page 11 is still in durable meta 5");
        f.barrier_done(6);
        f.release(u64::MAX);
        assert_eq!(f.take(1), Some(11));
    }

    #[test]
    fn failed_commit_forgets_held_pages() {
        let mut f = Freelist::default();
        f.free_at(3, &[(12, 3)]);
        f.unfree_at(3);
        f.barrier_done(u64::MAX);
        f.release(u64::MAX);
        assert_eq!(f.total_count(), 0);
    }
}
