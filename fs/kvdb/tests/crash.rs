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
