//! Deferred commits ([`kvdb::Tx::commit_deferred`]) and barriers ([`kvdb::Db::sync`]).
//!
//! The crash test records every page write and barrier of a random mix of deferred commits,
//! durable commits and syncs, cuts the log at every prefix (and tears the write at the cut),
//! reopens the image and checks it holds exactly the state of the last barrier whose meta
//! write is in the prefix. That fails if a page of the durable state is overwritten before a
//! newer meta is durable, if a meta lands in the slot of the durable one, or if a barrier
//! writes its meta before the pages it references.

mod common;

use common::{dump, random_edits, Model, XorShift64};
use kvdb::{Db, MemPager, Options, Pager, PagerEvent, RECORD_CHURN_BYTES, RECORD_MAX_BYTES};

struct Run {
    initial: Vec<u8>,
    log: Vec<PagerEvent>,
    /// (index in `log` of a meta-page write, the state that meta describes), in order.
    barriers: Vec<(usize, Model)>,
    page_size: usize,
}

#[derive(Clone, Copy, Debug)]
enum Step {
    Deferred,
    Durable,
    Sync,
}

fn is_meta_write(offset: u64, page_size: usize) -> bool {
    offset == 0 || offset == page_size as u64
}

/// A random workload; `bound` is the barrier bound in pages (small values force barriers).
fn workload(page_size: usize, seed: u64, steps: u32, bound: Option<u64>) -> Run {
    let db = Db::create(MemPager::new(), Options { page_size }).unwrap();
    if let Some(b) = bound {
        db.set_barrier_bound(b);
    }
    let initial = db.pager().image();
    db.pager().record();
    let mut rng = XorShift64::new(seed);
    let mut log = Vec::new();
    let mut barriers = Vec::new();
    // A reader kept open across commits: what it sees must never change.
    let mut reader: Option<(kvdb::Tx<'_, MemPager>, Model)> = None;
    for t in 0..steps {
        let step = match rng.below(10) {
            0..=6 => Step::Deferred,
            7 | 8 => Step::Durable,
            _ => Step::Sync,
        };
        match step {
            Step::Sync => {
                db.sync().unwrap();
            }
            Step::Deferred | Step::Durable => {
                let tx = db.begin_write().unwrap();
                let b = tx
                    .get_or_create_bucket(format!("b{}", t % 3).as_bytes())
                    .unwrap();
                let ops = 1 + rng.below(40);
                random_edits(&b, &mut rng, t, ops, 300, (1500, 6000), 150);
                if t % 7 == 3 {
                    let _ = tx.delete_bucket(b"b2");
                }
                if t % 11 == 5 {
                    // A deferred commit that fails part-way leaves no trace either.
                    db.pager().fail_writes_after(Some(0));
                    assert!(tx.commit_deferred().is_err());
                    db.pager().fail_writes_after(None);
                } else if matches!(step, Step::Durable) {
                    tx.commit().unwrap();
                } else {
                    tx.commit_deferred().unwrap();
                }
            }
        }
        let state = dump(&db).unwrap();
        let events = db.pager().take_log();
        db.pager().record();
        let mut metas = 0;
        for ev in events {
            if let PagerEvent::Write(offset, _) = &ev {
                if is_meta_write(*offset, page_size) {
                    metas += 1;
                    barriers.push((log.len(), state.clone()));
                }
            }
            log.push(ev);
        }
        assert!(metas <= 1, "one barrier per step at most");
        if matches!(step, Step::Durable | Step::Sync) {
            assert!(!db.sync_pending(), "{step:?} leaves nothing pending");
        }
        match &reader {
            Some((tx, seen)) => {
                assert_eq!(
                    &common_dump_tx(tx),
                    seen,
                    "an open reader's snapshot changed"
                );
                if rng.below(6) == 0 {
                    reader = None;
                }
            }
            None if rng.below(4) == 0 => {
                reader = Some((db.begin_read().unwrap(), state.clone()));
            }
            None => {}
        }
    }
    drop(reader);
    Run {
        initial,
        log,
        barriers,
        page_size,
    }
}

/// The contents a read transaction sees (the store-wide `dump` begins its own).
fn common_dump_tx(tx: &kvdb::Tx<'_, MemPager>) -> Model {
    use common::Item;
    fn bucket(b: &kvdb::Bucket<'_, '_, MemPager>) -> Model {
        let mut out = Model::new();
        let mut c = b.cursor();
        let mut e = c.first().unwrap();
        while let Some(entry) = e {
            let key = entry.key().to_vec();
            let item = match entry.value() {
                Some(v) => Item::Value(v.to_vec()),
                None => Item::Bucket(bucket(&b.get_bucket(&key).unwrap())),
            };
            out.insert(key, item);
            e = c.next().unwrap();
        }
        out
    }
    let mut out = Model::new();
    let mut c = tx.buckets();
    let mut e = c.first().unwrap();
    while let Some(entry) = e {
        let key = entry.key().to_vec();
        out.insert(
            key.clone(),
            Item::Bucket(bucket(&tx.get_bucket(&key).unwrap())),
        );
        e = c.next().unwrap();
    }
    out
}

fn apply(image: &mut Vec<u8>, offset: u64, data: &[u8]) {
    let end = offset as usize + data.len();
    if image.len() < end {
        image.resize(end, 0);
    }
    image[offset as usize..end].copy_from_slice(data);
}

/// The state after the first `n` events: the last barrier whose meta write is among them.
fn expected(run: &Run, n: usize) -> Model {
    run.barriers
        .iter()
        .rev()
        .find(|(i, _)| *i < n)
        .map_or_else(Model::new, |(_, m)| m.clone())
}

fn check(image: Vec<u8>, ok: &[Model], what: &str) {
    let db = Db::open(MemPager::from_image(image))
        .unwrap_or_else(|e| panic!("{what}: open failed: {e}"));
    let got = dump(&db).unwrap_or_else(|e| panic!("{what}: read failed: {e}"));
    assert!(
        ok.contains(&got),
        "{what}: state is none of the {} acceptable ones",
        ok.len()
    );
    // The recovered store accepts new deferred and durable writes.
    let tx = db.begin_write().unwrap();
    tx.get_or_create_bucket(b"after")
        .unwrap()
        .put(b"k", b"v")
        .unwrap();
    tx.commit_deferred().unwrap();
    db.sync().unwrap();
}

fn crash_at_every_prefix(run: &Run) {
    assert!(
        run.barriers.len() >= 5,
        "only {} barriers",
        run.barriers.len()
    );
    let mut image = run.initial.clone();
    for n in 0..=run.log.len() {
        let before = expected(run, n);
        check(
            image.clone(),
            std::slice::from_ref(&before),
            &format!("cut after {n} events"),
        );
        if let Some(PagerEvent::Write(offset, data)) = run.log.get(n) {
            // Torn: only the first part of this write lands (a sector, or half of it); a meta
            // write is torn inside the meta, so it must not count and the other slot must
            // still hold the previous barrier's meta.
            let keep = if is_meta_write(*offset, run.page_size) {
                40
            } else {
                (data.len() / 2).clamp(1, 512)
            };
            let mut torn = image.clone();
            apply(&mut torn, *offset, &data[..keep]);
            check(torn, &[before], &format!("torn write {n}"));
            apply(&mut image, *offset, data);
        }
    }
}

#[test]
fn deferred_crash_consistency_4k() {
    crash_at_every_prefix(&workload(4096, 11, 60, None));
}

#[test]
fn deferred_crash_consistency_1k_forced_barriers() {
    // A small bound: barriers forced by deferred commits themselves.
    let run = workload(1024, 12, 60, Some(24));
    crash_at_every_prefix(&run);
}

#[test]
fn deferred_commit_writes_no_meta_and_no_barrier() {
    let db = Db::create(MemPager::new(), Options::default()).unwrap();
    db.pager().record();
    let tx = db.begin_write().unwrap();
    tx.create_bucket(b"b").unwrap().put(b"k", b"v").unwrap();
    tx.commit_deferred().unwrap();
    let log = db.pager().take_log();
    assert!(!log.is_empty());
    for ev in &log {
        match ev {
            PagerEvent::Sync => panic!("a deferred commit issued a barrier"),
            PagerEvent::Write(off, _) => assert!(!is_meta_write(*off, 4096), "meta written"),
        }
    }
    // Visible at once to readers and the next writer, durable only after sync.
    assert!(db.sync_pending());
    let tx = db.begin_read().unwrap();
    assert_eq!(
        &*tx.get_bucket(b"b").unwrap().get(b"k").unwrap().unwrap(),
        b"v"
    );
    drop(tx);
    let image = db.pager().image();
    let reopened = Db::open(MemPager::from_image(image)).unwrap();
    assert!(
        dump(&reopened).unwrap().is_empty(),
        "not durable before the barrier"
    );
    db.pager().record();
    assert!(db.sync().unwrap());
    assert!(!db.sync().unwrap(), "a second sync has nothing to do");
    let log = db.pager().take_log();
    // The barrier writes the freelist extent the deferred commit did not, then the meta, whose
    // commit record lists what was written since the last barrier, then one sync.
    assert_eq!(log.len(), 3, "freelist, meta, sync: {:?}", log.len());
    assert!(matches!(log[0], PagerEvent::Write(off, _) if !is_meta_write(off, 4096)));
    assert!(
        matches!(&log[1], PagerEvent::Write(off, m) if is_meta_write(*off, 4096)
        && kvdb::page::Meta::has_record(m))
    );
    assert_eq!(log[2], PagerEvent::Sync);
    let reopened = Db::open(MemPager::from_image(db.pager().image())).unwrap();
    assert_eq!(dump(&reopened).unwrap(), dump(&db).unwrap());
}

/// Overwrites of pages the durable meta references, seen in the log: none may happen between
/// a barrier and the next one.
#[test]
fn durable_pages_are_not_overwritten_before_the_next_barrier() {
    let ps = 4096usize;
    let db = Db::create(MemPager::new(), Options { page_size: ps }).unwrap();
    let tx = db.begin_write().unwrap();
    let b = tx.create_bucket(b"b").unwrap();
    for i in 0..200u32 {
        b.put(format!("k{i:04}").as_bytes(), &[1u8; 100]).unwrap();
    }
    tx.commit().unwrap();
    let durable_image = db.pager().image();
    db.pager().record();
    let mut rng = XorShift64::new(5);
    for round in 0..50u32 {
        let tx = db.begin_write().unwrap();
        let b = tx.get_bucket(b"b").unwrap();
        b.put(
            format!("k{:04}", rng.below(200)).as_bytes(),
            &[round as u8; 100],
        )
        .unwrap();
        tx.commit_deferred().unwrap();
    }
    let log = db.pager().take_log();
    // The deferred commits wrote only pages the durable state does not use: the durable image
    // with all their writes applied still opens to exactly the durable state.
    let mut image = durable_image.clone();
    for ev in &log {
        if let PagerEvent::Write(off, data) = ev {
            apply(&mut image, *off, data);
        }
    }
    let reopened = Db::open(MemPager::from_image(image)).unwrap();
    let durable = dump(&Db::open(MemPager::from_image(durable_image)).unwrap()).unwrap();
    assert_eq!(dump(&reopened).unwrap(), durable);
    // And the store stays compact: 50 rewrites of one leaf reuse the same few pages.
    let written: std::collections::BTreeSet<u64> = log
        .iter()
        .filter_map(|e| match e {
            PagerEvent::Write(off, _) => Some(off / ps as u64),
            PagerEvent::Sync => None,
        })
        .collect();
    assert!(
        written.len() < 30,
        "{} distinct pages written for 50 one-key updates",
        written.len()
    );
    assert!(
        db.pager().len() / (ps as u64) < 40,
        "store grew to {} pages",
        db.pager().len() / ps as u64
    );
}

#[test]
fn reopen_after_many_barriers_alternates_slots() {
    // Deferred commits skip txids between barriers; the meta must still alternate slots, so a
    // torn meta write never destroys the durable one.
    let db = Db::create(MemPager::new(), Options::default()).unwrap();
    for round in 0..9u32 {
        for _ in 0..(round % 3) {
            let tx = db.begin_write().unwrap();
            tx.get_or_create_bucket(b"b")
                .unwrap()
                .put(b"k", &[round as u8])
                .unwrap();
            tx.commit_deferred().unwrap();
        }
        db.pager().record();
        let tx = db.begin_write().unwrap();
        tx.get_or_create_bucket(b"b")
            .unwrap()
            .put(b"r", &[round as u8])
            .unwrap();
        tx.commit().unwrap();
        let log = db.pager().take_log();
        let meta_offsets: Vec<u64> = log
            .iter()
            .filter_map(|e| match e {
                PagerEvent::Write(off, _) if is_meta_write(*off, 4096) => Some(*off),
                _ => None,
            })
            .collect();
        assert_eq!(meta_offsets.len(), 1);
        // The durable meta before this commit is in the other slot: tear this write.
        let mut image = db.pager().image();
        image[meta_offsets[0] as usize + 8] ^= 0xff;
        let reopened = Db::open(MemPager::from_image(image)).unwrap();
        let tx = reopened.begin_read().unwrap();
        let r = tx
            .get_bucket(b"b")
            .ok()
            .and_then(|b| b.get(b"r").unwrap().map(|v| v.to_vec()));
        let want = round.checked_sub(1).map(|p| vec![p as u8]);
        assert_eq!(r, want, "round {round}: the previous barrier's state");
    }
}

#[test]
fn pages_held_for_a_barrier_are_reclaimed_when_space_runs_out() {
    let ps = 4096usize;
    let db = Db::create(
        MemPager::new().with_capacity_limit(256 * ps as u64),
        Options { page_size: ps },
    )
    .unwrap();
    let tx = db.begin_write().unwrap();
    tx.create_bucket(b"b")
        .unwrap()
        .put(b"a", &vec![1u8; 150 * ps])
        .unwrap();
    tx.commit().unwrap();
    // Deleting the value frees 150 pages the durable meta still references: held.
    let tx = db.begin_write().unwrap();
    tx.get_bucket(b"b").unwrap().delete(b"a").unwrap();
    tx.commit_deferred().unwrap();
    assert!(db.sync_pending());
    // 120 pages do not fit in what is free now (about 100 pages), but do once the held
    // pages are released by a barrier, which the allocation makes.
    let tx = db.begin_write().unwrap();
    tx.get_bucket(b"b")
        .unwrap()
        .put(b"c", &vec![2u8; 120 * ps])
        .unwrap();
    tx.commit_deferred().unwrap();
    assert!(db.pager().len() <= 256 * ps as u64);
    // The barrier made the delete durable; the new value is durable after the next one.
    let image = db.pager().image();
    let reopened = Db::open(MemPager::from_image(image)).unwrap();
    let t = reopened.begin_read().unwrap();
    assert!(t.get_bucket(b"b").unwrap().get(b"a").unwrap().is_none());
    drop(t);
    db.sync().unwrap();
    let reopened = Db::open(MemPager::from_image(db.pager().image())).unwrap();
    let t = reopened.begin_read().unwrap();
    assert_eq!(
        t.get_bucket(b"b")
            .unwrap()
            .get(b"c")
            .unwrap()
            .unwrap()
            .len(),
        120 * ps
    );
}

/// Small deferred commits, then a barrier: after a few of them the barrier flushes once (its
/// meta page carries a commit record); after a long run that rewrote the same tree pages past
/// `RECORD_CHURN_BYTES` (no longer summed on every commit) it flushes twice. Either way the
/// store reopens with the last state.
#[test]
fn long_runs_of_small_commits_end_with_two_flushes() {
    for (commits, want_flushes) in [(3u32, 1usize), (1500, 2)] {
        let db = Db::create(MemPager::new(), Options { page_size: 4096 }).unwrap();
        db.set_barrier_bound(1 << 20);
        db.pager().record();
        for i in 0..commits {
            let tx = db.begin_write().unwrap();
            let b = tx.get_or_create_bucket(b"files").unwrap();
            b.put(format!("k{}", i % 50).as_bytes(), &i.to_le_bytes())
                .unwrap();
            tx.commit_deferred().unwrap();
        }
        let written: u64 = db
            .pager()
            .take_log()
            .iter()
            .map(|e| match e {
                PagerEvent::Write(_, d) => d.len() as u64,
                _ => 0,
            })
            .sum();
        if want_flushes == 1 {
            assert!(
                written < RECORD_MAX_BYTES,
                "{written} bytes written by {commits} commits"
            );
        } else {
            assert!(
                written > RECORD_CHURN_BYTES,
                "{written} bytes written by {commits} commits"
            );
        }
        db.pager().record();
        db.sync().unwrap();
        let flushes = db
            .pager()
            .take_log()
            .iter()
            .filter(|e| matches!(e, PagerEvent::Sync))
            .count();
        assert_eq!(flushes, want_flushes, "after {commits} small commits");
        let state = dump(&db).unwrap();
        let image = db.pager().image();
        drop(db);
        let again = Db::open(MemPager::from_image(image)).unwrap();
        assert_eq!(
            dump(&again).unwrap(),
            state,
            "after {commits} small commits"
        );
    }
}
