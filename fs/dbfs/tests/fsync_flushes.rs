//! How many device flushes (`Pager::sync`) an fsync costs, counted on a recording pager: a
//! barrier that wrote little is one (the pages and the meta page with its commit record, which
//! lists them), a larger one two (pages, then the meta page that points at them), an fsync of
//! a node whose changes are all durable is none, and what an fsync reported durable is there
//! after a power cut. A flush that comes back (e.g. a second one for a small change, or a
//! barrier for a node nothing changed) fails here.
mod common;

use common::*;
use kvdb::PagerEvent;
use vfs::{FileSystem, NodeRef};

/// Run `f` and return how many `Pager::sync` calls it made.
fn syncs(fs: &dbfs::DbFs<kvdb::MemPager>, f: impl FnOnce()) -> usize {
    fs.pager().record();
    f();
    fs.pager()
        .take_log()
        .iter()
        .filter(|e| **e == PagerEvent::Sync)
        .count()
}

fn fsync(n: &NodeRef) {
    n.fsync(false).unwrap();
}

#[test]
fn fsync_costs_one_barrier_and_nothing_when_durable() {
    let fs = fresh();
    let root = fs.root().unwrap();
    let d = root.create("d", &dir()).unwrap();
    let old = root.create("old", &reg()).unwrap();
    old.write_at(0, b"old data").unwrap();
    fs.sync().unwrap();

    // Everything durable: no flush, for a directory or a file.
    assert_eq!(syncs(&fs, || fsync(&d)), 0, "fsync of a durable directory");
    assert_eq!(syncs(&fs, || fsync(&old)), 0, "fsync of a durable file");

    // A name created (a deferred commit), then its directory fsynced: one barrier, one flush.
    d.create("f", &reg()).unwrap();
    assert_eq!(syncs(&fs, || fsync(&d)), 1, "fsync of a changed directory");
    assert!(names(&crash_copy(&fs).root().unwrap().lookup("d").unwrap()).contains(&"f".into()));
    assert_eq!(syncs(&fs, || fsync(&d)), 0, "second fsync of the directory");

    // Another directory changed: a file nothing changed still needs no flush, and the
    // directory that did change still gets its barrier.
    root.create("other", &reg()).unwrap();
    assert_eq!(
        syncs(&fs, || fsync(&old)),
        0,
        "untouched file beside a change"
    );
    assert_eq!(
        syncs(&fs, || fsync(&d)),
        0,
        "untouched directory beside a change"
    );
    assert_eq!(syncs(&fs, || fsync(&root)), 1, "the changed directory");
    assert!(crash_copy(&fs).root().unwrap().lookup("other").is_ok());

    // Buffered data, fsynced: one durable commit (its barrier), even after deferred commits
    // left pages waiting for one.
    let f = d.lookup("f").unwrap();
    for k in 0..20 {
        root.create(&format!("tmp{k}"), &reg()).unwrap();
        root.unlink(&format!("tmp{k}")).unwrap();
    }
    f.write_at(0, &pattern(100_000, 7)).unwrap();
    assert_eq!(syncs(&fs, || fsync(&f)), 1, "fsync of buffered data");
    assert_eq!(
        read_all(
            &crash_copy(&fs)
                .root()
                .unwrap()
                .lookup("d")
                .unwrap()
                .lookup("f")
                .unwrap()
        ),
        pattern(100_000, 7)
    );
    assert_eq!(syncs(&fs, || fsync(&f)), 0, "second fsync of the file");

    // More than a commit record covers (kvdb::RECORD_MAX_BYTES): a flush before the meta.
    let big = root.create("big", &reg()).unwrap();
    big.write_at(0, &pattern(3 << 20, 9)).unwrap();
    assert_eq!(syncs(&fs, || fsync(&big)), 2, "fsync of 3 MiB");
    assert_eq!(
        read_all(&crash_copy(&fs).root().unwrap().lookup("big").unwrap()),
        pattern(3 << 20, 9)
    );

    // A metadata change of the file itself (no buffered data): its barrier.
    f.truncate(10).unwrap();
    assert_eq!(syncs(&fs, || fsync(&f)), 1, "fsync after truncate");
    let after = crash_copy(&fs);
    let g = after
        .root()
        .unwrap()
        .lookup("d")
        .unwrap()
        .lookup("f")
        .unwrap();
    assert_eq!(g.getattr().unwrap().size, 10);
    assert_clean(&*after);
}

/// Concurrent fsyncs of changed files share barriers: never more than one barrier each, and
/// every file's data is there after a power cut.
#[test]
fn concurrent_fsyncs_share_barriers() {
    let fs = fresh();
    let root = fs.root().unwrap();
    let files: Vec<NodeRef> = (0..8)
        .map(|k| root.create(&format!("f{k}"), &reg()).unwrap())
        .collect();
    fs.sync().unwrap();
    let n = syncs(&fs, || {
        std::thread::scope(|s| {
            for (k, f) in files.iter().enumerate() {
                s.spawn(move || {
                    for round in 0..5u8 {
                        f.write_at(0, &pattern(20_000, k as u8 ^ round)).unwrap();
                        fsync(f);
                    }
                });
            }
        });
    });
    assert!(n <= 8 * 5, "{n} flushes for 40 fsyncs");
    let after = crash_copy(&fs);
    for k in 0..8 {
        let f = after.root().unwrap().lookup(&format!("f{k}")).unwrap();
        assert_eq!(read_all(&f), pattern(20_000, k as u8 ^ 4));
    }
}
