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

use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use smallvec::SmallVec;

use crate::error::{Error, Result};
use crate::page::{self, PageId, HEADER_SIZE, KIND_FREELIST, KIND_FREELIST_RUNS};

/// A set of pages kept as maximal runs (`start -> length`), so that the cost of every
/// operation follows the number of runs, not of pages: a 1 MiB write frees and takes 256
/// pages in a handful of runs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Runs {
    map: BTreeMap<PageId, u64>,
    pages: u64,
}

impl Runs {
    /// Add `[start, start + n)`; pages already in the set are counted once.
    fn insert(&mut self, start: PageId, n: u64) {
        if n == 0 {
            return;
        }
        let (mut s, mut e) = (start, start.saturating_add(n));
        if let Some((&ps, &pl)) = self.map.range(..=s).next_back() {
            if ps + pl >= s {
                s = ps;
                e = e.max(ps + pl);
                self.map.remove(&ps);
                self.pages -= pl;
            }
        }
        while let Some((&ns, &nl)) = self.map.range(s..).next() {
            if ns > e {
                break;
            }
            e = e.max(ns + nl);
            self.map.remove(&ns);
            self.pages -= nl;
        }
        self.map.insert(s, e - s);
        self.pages += e - s;
    }

    /// The runs overlapping `[start, end)`, in order (no allocation: a commit frees tens of
    /// runs, and each lookup allocating its answer was a third of the freelist's work).
    fn overlapping(&self, start: PageId, end: PageId) -> impl Iterator<Item = (PageId, u64)> + '_ {
        let before = self
            .map
            .range(..start)
            .next_back()
            .filter(|(&ps, &pl)| ps + pl > start);
        before
            .into_iter()
            .chain(self.map.range(start..end))
            .map(|(&s, &l)| (s, l))
    }

    /// Take `[start, start + n)` out of the set (pages not in it are ignored).
    fn remove(&mut self, start: PageId, n: u64) {
        let end = start.saturating_add(n);
        let runs: SmallVec<[(PageId, u64); 4]> = self.overlapping(start, end).collect();
        for (rs, rl) in runs {
            self.map.remove(&rs);
            self.pages -= rl;
            if rs < start {
                self.map.insert(rs, start - rs);
                self.pages += start - rs;
            }
            if rs + rl > end {
                self.map.insert(end, rs + rl - end);
                self.pages += rs + rl - end;
            }
        }
    }

    /// `[start, start + n)` split into the parts inside the set and the parts outside it,
    /// appended to `inside` and `outside`.
    fn split_into(&self, start: PageId, n: u64, inside: &mut RunList, outside: &mut RunList) {
        let end = start.saturating_add(n);
        let mut at = start;
        for (rs, rl) in self.overlapping(start, end) {
            let (s, e) = (rs.max(start), (rs + rl).min(end));
            if s > at {
                outside.push((at, s - at));
            }
            inside.push((s, e - s));
            at = e;
        }
        if at < end {
            outside.push((at, end - at));
        }
    }

    /// The lowest run of at least `n` pages (first fit, so the store stays compact).
    fn first_fit(&self, n: u64) -> Option<PageId> {
        self.map.iter().find(|&(_, &l)| l >= n).map(|(&s, _)| s)
    }

    fn iter(&self) -> impl Iterator<Item = (PageId, u64)> + '_ {
        self.map.iter().map(|(&s, &l)| (s, l))
    }

    fn clear(&mut self) {
        self.map.clear();
        self.pages = 0;
    }
}

/// Runs of pages, `(start, length)`.
type RunList = Vec<(PageId, u64)>;

fn pages_in(runs: &[(PageId, u64)]) -> u64 {
    runs.iter().map(|r| r.1).sum()
}

#[derive(Clone, Debug, Default)]
pub struct Freelist {
    free: Runs,
    pending: BTreeMap<u64, Vec<(PageId, u64)>>,
    /// Pages freed by commit `t` since the last barrier that the durable meta may reference.
    held: BTreeMap<u64, Vec<(PageId, u64)>>,
    /// Pages taken or grown since the last barrier (never referenced by the durable meta).
    fresh: Runs,
    /// Pages in `pending` and in `held`, kept as they change: every write transaction asks
    /// (the barrier check, the free count), and between barriers `held` lists every run a
    /// commit freed, so summing it each time made a long run of small commits quadratic.
    pending_pages: u64,
    held_pages: u64,
    /// Pages placed by [`crate::Tx::reserve_placed`] and not in any tree yet: nobody may take
    /// them, and the extent on disk lists them as free (a crash before their value is
    /// inserted leaves them free, not leaked).
    placed: Runs,
}

/// Bytes per run in a freelist extent: start and length.
const RUN_SIZE: usize = 16;

/// `runs` sorted, with runs that touch end to start joined into one (overlapping ones, which
/// a correct caller never gives, are left apart as given). Empty runs are dropped.
fn joined(runs: &[(PageId, u64)]) -> Vec<(PageId, u64)> {
    let mut sorted: Vec<(PageId, u64)> = runs.iter().copied().filter(|r| r.1 > 0).collect();
    // Usually a few ascending runs (a file's pages in the order it wrote them): the stable
    // sort merges the runs it finds, where the unstable one would partition them again.
    sorted.sort();
    let mut out: Vec<(PageId, u64)> = Vec::with_capacity(sorted.len());
    for (start, n) in sorted {
        match out.last_mut() {
            Some((s, l)) if s.checked_add(*l) == Some(start) => *l += n,
            _ => out.push((start, n)),
        }
    }
    out
}

impl Freelist {
    /// Decode the on-disk freelist extent; every page must be a non-meta page below
    /// `page_count`. Reads the run format this crate writes and the one-id-per-page format of
    /// earlier images.
    pub fn decode(buf: &[u8], id: PageId, page_count: u64) -> Result<Freelist> {
        let kind = if buf.len() >= 2 {
            u16::from_le_bytes([buf[0], buf[1]])
        } else {
            0
        };
        let (entry, kind) = if kind == KIND_FREELIST {
            (8, KIND_FREELIST)
        } else {
            (RUN_SIZE, KIND_FREELIST_RUNS)
        };
        let count = page::check_header(buf, id, kind)?;
        if count > (buf.len() - HEADER_SIZE) / entry {
            return Err(Error::Corrupted("freelist count exceeds extent"));
        }
        let mut free = Runs::default();
        for i in 0..count {
            let at = HEADER_SIZE + i * entry;
            let (start, n) = if entry == 8 {
                (page::get_u64(buf, at)?, 1)
            } else {
                (page::get_u64(buf, at)?, page::get_u64(buf, at + 8)?)
            };
            if start < 2 || n == 0 || start.checked_add(n).is_none_or(|end| end > page_count) {
                return Err(Error::Corrupted("freelist page out of range"));
            }
            free.insert(start, n);
        }
        Ok(Freelist {
            free,
            ..Freelist::default()
        })
    }

    /// Pages needed to store this freelist with `extra` more runs.
    pub fn pages_needed(&self, page_size: usize, extra: usize) -> u64 {
        let runs = self.free.map.len()
            + self
                .pending
                .values()
                .chain(self.held.values())
                .map(Vec::len)
                .sum::<usize>()
            + self.placed.map.len()
            + extra;
        (HEADER_SIZE + runs * RUN_SIZE).div_ceil(page_size) as u64
    }

    /// Serialise `free ∪ pending ∪ held ∪ placed` into `buf` (the whole extent, zeroed) as
    /// page `id`.
    pub fn encode(&self, buf: &mut [u8], id: PageId) {
        self.encode_with(buf, id, &[]);
    }

    /// [`Freelist::encode`], listing the pages of `extra` as free too (the extent this one
    /// replaces, freed once the meta that points at this one is durable).
    pub fn encode_with(&self, buf: &mut [u8], id: PageId, extra: &[(PageId, u64)]) {
        let mut all = self.free.clone();
        for &(start, n) in self
            .pending
            .values()
            .chain(self.held.values())
            .flatten()
            .chain(extra)
        {
            all.insert(start, n);
        }
        for (start, n) in self.placed.iter() {
            all.insert(start, n);
        }
        page::put_u16(buf, 0, KIND_FREELIST_RUNS);
        page::put_u32(buf, 4, all.map.len() as u32);
        page::put_u64(buf, 8, id);
        for (i, (start, n)) in all.iter().enumerate() {
            page::put_u64(buf, HEADER_SIZE + i * RUN_SIZE, start);
            page::put_u64(buf, HEADER_SIZE + i * RUN_SIZE + 8, n);
        }
    }

    /// Take `n` contiguous free pages (the lowest run long enough), or `None` if there is none.
    pub fn take(&mut self, n: u64) -> Option<PageId> {
        if n == 0 {
            return None;
        }
        let start = self.free.first_fit(n)?;
        self.free.remove(start, n);
        self.fresh.insert(start, n);
        Some(start)
    }

    /// Note pages a transaction added past the store's end: like taken ones, the durable meta
    /// cannot reference them.
    pub fn grown(&mut self, start: PageId, n: u64) {
        self.fresh.insert(start, n);
    }

    /// Where `n` new contiguous pages come from: the store's one placement rule. The lowest
    /// free run long enough; else the pages past `end` (the store's size in pages, moved past
    /// them) if they stay within `capacity` pages. Returns the first page and whether the store
    /// grew, or `None` when neither fits. Pages held for a barrier are not free here: making
    /// them so is the caller's decision (`PageAlloc::take`).
    pub fn take_or_grow(&mut self, n: u64, end: &mut u64, capacity: u64) -> Option<(PageId, bool)> {
        if let Some(id) = self.take(n) {
            return Some((id, false));
        }
        let id = *end;
        *end = id.checked_add(n).filter(|&e| e <= capacity)?;
        self.grown(id, n);
        Some((id, true))
    }

    /// Give back pages taken by a transaction that did not commit.
    pub fn untake(&mut self, start: PageId, n: u64) {
        self.free.insert(start, n);
    }

    /// Record pages freed by the commit of `txid`: fresh ones wait for readers only, the others
    /// also for the next barrier.
    /// The runs are joined first where they are adjacent: deleting a file frees each of its
    /// chunks' pages as a run of its own, and a file written in order has them side by side,
    /// so the sets kept here (and moved into `free`, one insert per run, when readers allow)
    /// hold a few runs instead of one per chunk.
    pub fn free_at(&mut self, txid: u64, pages: &[(PageId, u64)]) {
        let mut fresh = Vec::new();
        let mut held = Vec::new();
        for (start, n) in joined(pages) {
            self.fresh.split_into(start, n, &mut fresh, &mut held);
        }
        if !fresh.is_empty() {
            self.pending_pages += pages_in(&fresh);
            self.pending.entry(txid).or_default().extend(fresh);
        }
        if !held.is_empty() {
            self.held_pages += pages_in(&held);
            self.held.entry(txid).or_default().extend(held);
        }
    }

    /// Forget what a failed commit of `txid` recorded.
    pub fn unfree_at(&mut self, txid: u64) {
        if let Some(runs) = self.pending.remove(&txid) {
            self.pending_pages -= pages_in(&runs);
        }
        if let Some(runs) = self.held.remove(&txid) {
            self.held_pages -= pages_in(&runs);
        }
    }

    /// A barrier made commit `durable_txid` durable: no page freed by it or before is referenced
    /// by the durable meta any more (a transaction still open, with a later txid, keeps its
    /// held pages), and nothing taken so far is fresh relative to the next barrier.
    pub fn barrier_done(&mut self, durable_txid: u64) {
        let later = self.held.split_off(&durable_txid.saturating_add(1));
        for (t, runs) in core::mem::replace(&mut self.held, later) {
            let n = pages_in(&runs);
            self.held_pages -= n;
            self.pending_pages += n;
            self.pending.entry(t).or_default().extend(runs);
        }
        self.fresh.clear();
    }

    /// Pages waiting for the next barrier (held) plus pages taken since the last one: what a
    /// barrier would settle. [`crate::Db`] forces a barrier when it exceeds its bound.
    pub fn since_barrier(&self) -> u64 {
        self.held_count() + self.fresh.pages
    }

    /// Pages held for the next barrier.
    pub fn held_count(&self) -> u64 {
        self.held_pages
    }

    /// Move to `free` every pending set freed by a commit `t <= oldest_reader` (no reader can see
    /// it). `oldest_reader` is the oldest open snapshot, or `u64::MAX` when there is none.
    pub fn release(&mut self, oldest_reader: u64) {
        while let Some((&t, _)) = self.pending.first_key_value() {
            if t > oldest_reader {
                break;
            }
            if let Some(runs) = self.pending.remove(&t) {
                self.pending_pages -= pages_in(&runs);
                for (start, n) in runs {
                    self.free.insert(start, n);
                }
            }
        }
    }

    /// A test of whether a page of `[start, start + n)` is free now, waits for readers to
    /// become free, or is placed (in no tree: see [`Freelist::place`]); pages held for a
    /// barrier are not listed (the durable meta references them). For many ranges: the
    /// pending runs are sorted once.
    pub fn lister(&self) -> impl Fn(PageId, u64) -> bool + '_ {
        let mut pending: Vec<(PageId, u64)> = self.pending.values().flatten().copied().collect();
        pending.sort_unstable();
        move |start, n| {
            let end = start.saturating_add(n);
            // Runs of one set are disjoint: only the last one starting before `end` can reach
            // into the range.
            let reaches =
                |run: Option<(PageId, u64)>| run.is_some_and(|(s, l)| s.saturating_add(l) > start);
            reaches(
                self.free
                    .map
                    .range(..end)
                    .next_back()
                    .map(|(&s, &l)| (s, l)),
            ) || reaches(
                pending
                    .partition_point(|&(s, _)| s < end)
                    .checked_sub(1)
                    .map(|i| pending[i]),
            ) || reaches(
                self.placed
                    .map
                    .range(..end)
                    .next_back()
                    .map(|(&s, &l)| (s, l)),
            )
        }
    }

    /// Number of pages listed, free now, pending or held (what the store will have free once
    /// no reader holds an old snapshot and the next barrier completed).
    pub fn total_count(&self) -> u64 {
        self.free.pages + self.pending_pages + self.held_pages
    }

    /// Note `[start, start + n)`, just taken, as placed: written, in no tree, free on disk.
    pub fn place(&mut self, start: PageId, n: u64) {
        self.placed.insert(start, n);
    }

    /// Take `[start, start + n)` out of the placed pages (a value inserts them, or they are
    /// freed); `false`, changing nothing, unless every page of it is placed.
    pub fn unplace(&mut self, start: PageId, n: u64) -> bool {
        let end = start.saturating_add(n);
        let inside: u64 = self
            .placed
            .overlapping(start, end)
            .map(|(s, l)| (s + l).min(end) - s.max(start))
            .sum();
        if n == 0 || inside != n {
            return false;
        }
        self.placed.remove(start, n);
        true
    }

    /// Pages placed and not inserted yet.
    pub fn placed_count(&self) -> u64 {
        self.placed.pages
    }

    /// Number of pages free now (not counting pending ones).
    pub fn free_count(&self) -> usize {
        self.free.pages as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deleted file's chunk pages, freed one run per chunk in any order, are kept as the
    /// few runs they form (fresh and held apart), with the same page counts.
    #[test]
    fn adjacent_freed_runs_are_kept_joined() {
        let mut f = Freelist::default();
        f.grown(1000, 64); // 1000..1064 fresh
        let mut pages: Vec<(PageId, u64)> = (0..64).map(|i| (1000 + i, 1)).collect();
        pages.extend((0..32).map(|i| (200 + i, 1)));
        pages.push((300, 0));
        pages.reverse();
        f.free_at(9, &pages);
        assert_eq!(f.pending.get(&9), Some(&vec![(1000, 64)]));
        assert_eq!(f.held.get(&9), Some(&vec![(200, 32)]));
        assert_eq!((f.pending_pages, f.held_count()), (64, 32));
        assert_eq!(joined(&[(5, 2), (1, 2), (3, 2), (9, 1)]), [(1, 6), (9, 1)]);
        // Overlaps (a caller's bug) are not merged into one run of the wrong length.
        assert_eq!(joined(&[(1, 4), (3, 2)]), [(1, 4), (3, 2)]);
    }

    /// The kept counts agree with the lists through frees, a failed commit, a barrier and
    /// releases (what the barrier check and `Db::free_pages` read).
    #[test]
    fn counts_follow_the_lists() {
        let recount = |f: &Freelist| {
            let p: u64 = f.pending.values().map(|r| pages_in(r)).sum();
            let h: u64 = f.held.values().map(|r| pages_in(r)).sum();
            (p, h)
        };
        let mut f = Freelist::default();
        f.grown(100, 10); // 100..110 fresh
        f.free_at(5, &[(20, 4), (104, 2)]); // 20..24 held, 104..106 pending
        assert_eq!(recount(&f), (2, 4));
        assert_eq!((f.pending_pages, f.held_count()), (2, 4));
        f.free_at(6, &[(30, 3)]);
        f.unfree_at(6);
        assert_eq!((f.pending_pages, f.held_count()), recount(&f));
        f.free_at(7, &[(40, 5)]);
        f.barrier_done(5); // txid 5's held runs become pending; 7 stays held
        assert_eq!(recount(&f), (6, 5));
        assert_eq!((f.pending_pages, f.held_count()), (6, 5));
        f.release(5);
        assert_eq!((f.pending_pages, f.held_count()), recount(&f));
        assert_eq!(f.total_count(), 6 + 5);
        assert_eq!(f.free_count(), 6);
    }

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
    #[test]
    fn runs_merge_split_and_count_pages_once() {
        let mut r = Runs::default();
        r.insert(10, 5); // 10..15
        r.insert(20, 5); // 20..25
        r.insert(15, 5); // joins both: 10..25
        assert_eq!(r.iter().collect::<Vec<_>>(), [(10, 15)]);
        r.insert(12, 20); // overlaps: 10..32, pages counted once
        assert_eq!(
            (r.iter().collect::<Vec<_>>(), r.pages),
            (vec![(10, 22)], 22)
        );
        r.remove(14, 4); // a hole: 10..14, 18..32
        assert_eq!(r.iter().collect::<Vec<_>>(), [(10, 4), (18, 14)]);
        assert_eq!(r.pages, 18);
        r.remove(8, 3); // the front: 11..14
        r.remove(30, 10); // the back: 18..30
        assert_eq!(r.iter().collect::<Vec<_>>(), [(11, 3), (18, 12)]);
        assert_eq!(r.pages, 15);
        let (mut inside, mut outside) = (Vec::new(), Vec::new());
        r.split_into(9, 12, &mut inside, &mut outside); // 9..21
        assert_eq!(inside, [(11, 3), (18, 3)]);
        assert_eq!(outside, [(9, 2), (14, 4)]);
        assert_eq!(r.first_fit(4), Some(18));
        assert_eq!(r.first_fit(3), Some(11));
        assert_eq!(r.first_fit(13), None);
    }

    #[test]
    fn a_freed_run_is_held_only_where_it_was_not_fresh() {
        let mut f = Freelist::default();
        f.grown(100, 4); // 100..104 fresh
        f.free_at(7, &[(98, 8)]); // 98..106: 100..104 fresh, the rest held
        assert_eq!(f.held_count(), 4);
        f.release(u64::MAX);
        assert_eq!(f.free_count(), 4);
        assert_eq!(f.take(4), Some(100));
        assert_eq!(f.total_count(), 4, "the held pages are still listed");
    }

    #[test]
    fn extents_of_the_page_list_format_still_decode() {
        // What earlier versions wrote: one id per free page.
        let mut buf = [0u8; 256];
        page::put_u16(&mut buf, 0, KIND_FREELIST);
        page::put_u32(&mut buf, 4, 4);
        page::put_u64(&mut buf, 8, 9);
        for (i, id) in [3u64, 4, 5, 7].iter().enumerate() {
            page::put_u64(&mut buf, HEADER_SIZE + i * 8, *id);
        }
        let f = Freelist::decode(&buf, 9, 10).unwrap();
        assert_eq!(f.free.iter().collect::<Vec<_>>(), [(3, 3), (7, 1)]);
        assert!(
            Freelist::decode(&buf, 9, 7).is_err(),
            "page 7 is past the end"
        );
    }

    #[test]
    fn a_run_past_the_end_or_empty_is_corrupt() {
        let mut f = Freelist::default();
        f.untake(5, 3);
        let mut buf = [0u8; 128];
        f.encode(&mut buf, 20);
        assert!(Freelist::decode(&buf, 20, 8).is_ok());
        assert!(Freelist::decode(&buf, 20, 7).is_err());
        page::put_u64(&mut buf, HEADER_SIZE + 8, 0);
        assert!(Freelist::decode(&buf, 20, 8).is_err(), "a run of no pages");
    }
}
