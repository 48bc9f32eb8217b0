//! Free-page tracking.
//!
//! `free` pages may be reused now. `pending[t]` holds the pages freed by the commit of transaction
//! `t`: they are still part of snapshot `t - 1`, so they move to `free` only once no open reader
//! has a snapshot older than `t`. On disk the freelist is one extent of pages listing
//! `free ∪ pending` (after a restart nobody holds an old snapshot).

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::vec::Vec;

use crate::error::{Error, Result};
use crate::page::{self, PageId, HEADER_SIZE, KIND_FREELIST};

#[derive(Clone, Debug, Default)]
pub struct Freelist {
    free: BTreeSet<PageId>,
    pending: BTreeMap<u64, Vec<PageId>>,
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
            pending: BTreeMap::new(),
        })
    }

    /// Pages needed to store this freelist with `extra` more ids.
    pub fn pages_needed(&self, page_size: usize, extra: usize) -> u64 {
        let ids = self.free.len() + self.pending.values().map(Vec::len).sum::<usize>() + extra;
        (HEADER_SIZE + ids * 8).div_ceil(page_size) as u64
    }

    /// Serialise `free ∪ pending` into `buf` (the whole extent, zeroed) as page `id`.
    pub fn encode(&self, buf: &mut [u8], id: PageId) {
        let mut ids: Vec<PageId> = self.free.iter().copied().collect();
        for p in self.pending.values() {
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
        }
        Some(start)
    }

    /// Give back pages taken by a transaction that did not commit.
    pub fn untake(&mut self, start: PageId, n: u64) {
        self.free.extend(start..start + n);
    }

    /// Record pages freed by the commit of `txid`.
    pub fn free_at(&mut self, txid: u64, pages: &[(PageId, u64)]) {
        if pages.is_empty() {
            return;
        }
        let list = self.pending.entry(txid).or_default();
        for &(start, n) in pages {
            list.extend(start..start + n);
        }
    }

    /// Forget what a failed commit of `txid` recorded.
    pub fn unfree_at(&mut self, txid: u64) {
        self.pending.remove(&txid);
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

    /// Number of pages listed, free now or pending (what the store will have free once no
    /// reader holds an old snapshot).
    pub fn total_count(&self) -> u64 {
        (self.free.len() + self.pending.values().map(Vec::len).sum::<usize>()) as u64
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
}
