//! Crash tests: record every page write and barrier of a workload, cut the log at every prefix
//! (and tear the last write), reopen the image, and check the store holds exactly the last
//! committed state (or, when the cut falls between a meta write and its barrier, either state).

mod common;

use common::{dump, random_edits, Model, XorShift64};
use kvdb::{Db, MemPager, Options, PagerEvent};

struct Run {
    initial: Vec<u8>,
    log: Vec<PagerEvent>,
    /// (log length when the commit returned, state after it), in commit order.
    commits: Vec<(usize, Model)>,
}

fn workload(page_size: usize, seed: u64) -> Run {
    let db = Db::create(MemPager::new(), Options { page_size }).unwrap();
    let initial = db.pager().image();
    db.pager().record();
    let mut commits = Vec::new();
    let mut rng = XorShift64::new(seed);
    let mut log_len = 0;
    for t in 0..24u32 {
        let tx = db.begin_write().unwrap();
        let b = tx
            .get_or_create_bucket(format!("b{}", t % 3).as_bytes())
            .unwrap();
        let ops = 10 + rng.below(120);
        random_edits(&b, &mut rng, t, ops, 400, (2000, 9000), 200);
        if t % 5 == 1 {
            let n = b.get_or_create_bucket(b"nested").unwrap();
            n.put(format!("n{t}").as_bytes(), b"nested value").unwrap();
        }
        if t == 17 {
            tx.delete_bucket(b"b1").unwrap();
        }
        if t == 9 {
            // A commit that fails part-way must leave no trace.
            db.pager().fail_writes_after(Some(0));
            assert!(tx.commit().is_err());
            db.pager().fail_writes_after(None);
            continue;
        }
        tx.commit().unwrap();
        let state = dump(&db).unwrap();
        let log = db.pager().take_log();
        db.pager().record();
        log_len += log.len();
        commits.push((log_len, state));
        // Keep the whole log: re-append what we took.
        LOG.with(|l| l.borrow_mut().extend(log));
    }
    let log = LOG.with(|l| std::mem::take(&mut *l.borrow_mut()));
    assert_eq!(log.len(), log_len);
    Run {
        initial,
        log,
        commits,
    }
}

thread_local! {
    static LOG: std::cell::RefCell<Vec<PagerEvent>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn apply(image: &mut Vec<u8>, offset: u64, data: &[u8]) {
    let end = offset as usize + data.len();
    if image.len() < end {
        image.resize(end, 0);
    }
    image[offset as usize..end].copy_from_slice(data);
}

/// States acceptable after the first `n` events: the last commit whose meta write and barrier are
/// both in the prefix; plus the next one if its meta write is in but its barrier is not.
fn acceptable(run: &Run, n: usize, meta_write_partial: bool) -> Vec<Model> {
    let mut last = Model::new();
    for (end, state) in &run.commits {
        if *end <= n {
            last = state.clone();
        } else {
            // The meta write is event end-2 and its barrier end-1.
            let mut ok = vec![last];
            if n == end - 1 || (meta_write_partial && n == end - 2) {
                ok.push(state.clone());
            }
            return ok;
        }
    }
    vec![last]
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
    // The recovered store must accept new writes.
    let tx = db.begin_write().unwrap();
    tx.get_or_create_bucket(b"after")
        .unwrap()
        .put(b"k", b"v")
        .unwrap();
    tx.commit().unwrap();
}

fn crash_at_every_prefix(page_size: usize, seed: u64) {
    let run = workload(page_size, seed);
    assert!(run.commits.len() >= 20);
    let mut image = run.initial.clone();
    let mut cuts = 0;
    for n in 0..=run.log.len() {
        check(
            image.clone(),
            &acceptable(&run, n, false),
            &format!("cut after {n} events"),
        );
        cuts += 1;
        if let Some(PagerEvent::Write(offset, data)) = run.log.get(n) {
            // Torn: only the first part of this write lands (a sector, or half of it).
            let keep = (data.len() / 2).clamp(1, 512);
            let mut torn = image.clone();
            apply(&mut torn, *offset, &data[..keep]);
            check(torn, &acceptable(&run, n, true), &format!("torn write {n}"));
            apply(&mut image, *offset, data);
        }
    }
    assert!(cuts > 100, "only {cuts} cuts");
    // The complete log gives the last state.
    assert_eq!(
        dump(&Db::open(MemPager::from_image(image)).unwrap()).unwrap(),
        run.commits.last().unwrap().1
    );
}

#[test]
fn crash_consistency_4k() {
    crash_at_every_prefix(4096, 1);
}

#[test]
fn crash_consistency_1k() {
    crash_at_every_prefix(1024, 2);
}

/// A disk that keeps only some of the writes it got since the last flush, in any order: cut
/// the log after every event, apply every write before the cut's last barrier, and of the
/// writes after it a random subset (a meta page that carries a commit record may land while
/// pages it lists do not). The store must open in an acceptable state every time.
fn crash_with_lost_unflushed_writes(page_size: usize, seed: u64) {
    let run = workload(page_size, seed);
    let syncs = run
        .log
        .iter()
        .filter(|e| matches!(e, PagerEvent::Sync))
        .count();
    // Most commits are small enough to end with one flush (a commit record), so the case
    // this test is about occurs.
    assert!(
        syncs < 2 * run.commits.len(),
        "{syncs} flushes for {} commits: no commit record used",
        run.commits.len()
    );
    let mut rng = XorShift64::new(seed ^ 0x5eed);
    let mut flushed = run.initial.clone();
    let mut since_flush: Vec<(u64, &[u8])> = Vec::new();
    let mut meta_without_pages = 0;
    for n in 0..=run.log.len() {
        for trial in 0..3 {
            let mut image = flushed.clone();
            let mut kept_meta = false;
            let mut dropped = 0;
            for (k, &(offset, data)) in since_flush.iter().enumerate() {
                let meta = offset < 2 * page_size as u64;
                // Trial 0 keeps the meta pages and drops the write before the last one (the
                // newest page a meta lists, usually); the others keep each write at random.
                let keep = if trial == 0 {
                    meta || k + 2 != since_flush.len()
                } else {
                    rng.below(2) == 0
                };
                if keep {
                    apply(&mut image, offset, data);
                    kept_meta |= meta;
                } else {
                    dropped += 1;
                }
            }
            if kept_meta && dropped > 0 {
                meta_without_pages += 1;
            }
            check(
                image,
                &acceptable(&run, n, true),
                &format!("cut after {n} events, trial {trial}"),
            );
        }
        match run.log.get(n) {
            Some(PagerEvent::Write(offset, data)) => since_flush.push((*offset, data)),
            Some(PagerEvent::Sync) => {
                for (offset, data) in since_flush.drain(..) {
                    apply(&mut flushed, offset, data);
                }
            }
            None => {}
        }
    }
    assert!(
        meta_without_pages > 20,
        "only {meta_without_pages} images with a meta page but not all its pages"
    );
}

#[test]
fn lost_unflushed_writes_4k() {
    crash_with_lost_unflushed_writes(4096, 3);
}

#[test]
fn lost_unflushed_writes_1k() {
    crash_with_lost_unflushed_writes(1024, 4);
}
