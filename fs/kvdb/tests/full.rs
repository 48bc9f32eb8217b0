//! A full store: writes fail with `NoSpace` while the reserve is kept, the failed transaction
//! changes nothing (in memory or on disk, no page leaked), deletions still commit on a full
//! store, and after them writing works again.

mod common;

use common::dump;
use kvdb::{reserve_pages, Db, Error, MemPager, Options, Pager};

const PS: u64 = 4096;

/// Pages not in use: past the high-water mark, or listed free (now or pending).
fn free_pages(db: &Db<MemPager>) -> u64 {
    // A write transaction releases pages no reader can see any more; then stats are exact.
    db.begin_write().unwrap().rollback();
    let s = db.stats();
    db.pager().capacity() / PS - s.page_count + s.free_pages.unwrap()
}

fn value(i: u32, len: usize) -> Vec<u8> {
    (0..len).map(|j| (i as usize * 31 + j) as u8).collect()
}

/// Fill with one value per transaction until `NoSpace`; returns how many committed.
fn fill(db: &Db<MemPager>, from: u32, len: usize) -> u32 {
    for i in from.. {
        let tx = db.begin_write().unwrap();
        let r = tx
            .get_or_create_bucket(b"b")
            .and_then(|b| b.put(format!("k{i:06}").as_bytes(), &value(i, len)))
            .and_then(|_| tx.commit());
        match r {
            Ok(()) => {}
            Err(Error::NoSpace) => return i - from,
            Err(e) => panic!("put {i}: {e:?}"),
        }
    }
    unreachable!()
}

#[test]
fn full_store_keeps_reserve_deletes_and_refills() {
    let cap_pages = 512; // 2 MiB
    let db = Db::create(
        MemPager::new().with_capacity_limit(cap_pages * PS),
        Options::default(),
    )
    .unwrap();
    let reserve = reserve_pages(cap_pages);
    assert_eq!(reserve, 16);
    // Large values (overflow pages) first, then small ones to use up what is left.
    let big = fill(&db, 0, 20_000);
    let small = fill(&db, 100_000, 100);
    assert!(big > 50, "only {big} values of 20 KB fit in 2 MiB");
    let free = free_pages(&db);
    assert!(
        free >= reserve,
        "writes used the reserve: {free} free, reserve {reserve}"
    );
    assert!(free < reserve + 8, "stopped early: {free} free");

    // The failed transaction left the store as the last commit: same contents after reopen,
    // and the same free-page count (nothing leaked by the attempt).
    let committed = dump(&db).unwrap();
    for _ in 0..3 {
        assert_eq!(fill(&db, 200_000, 20_000), 0);
        assert_eq!(free_pages(&db), free);
    }
    let reopened = Db::open(MemPager::from_image(db.pager().image())).unwrap();
    assert_eq!(dump(&reopened).unwrap(), committed);

    // Deleting works on the full store, one small key at a time (the hardest case: each
    // transaction frees little and must copy a leaf path first).
    for i in 100_000..100_000 + small.min(20) {
        let tx = db.begin_write().unwrap();
        tx.use_reserve();
        assert!(tx
            .get_bucket(b"b")
            .unwrap()
            .delete(format!("k{i:06}").as_bytes())
            .unwrap());
        tx.commit()
            .unwrap_or_else(|e| panic!("delete k{i:06} on a full store: {e:?}"));
    }
    // A deletion that frees as much as it takes needs no permission.
    let tx = db.begin_write().unwrap();
    for i in 0..big / 2 {
        tx.get_bucket(b"b")
            .unwrap()
            .delete(format!("k{i:06}").as_bytes())
            .unwrap();
    }
    tx.commit().unwrap();
    assert!(
        free_pages(&db) > free + (big as u64 / 2) * 4,
        "deleting freed too little"
    );
    // Writing works again, and what was never deleted is intact.
    assert!(fill(&db, 300_000, 20_000) >= big / 2 - 1);
    let tx = db.begin_read().unwrap();
    let b = tx.get_bucket(b"b").unwrap();
    for i in big / 2..big {
        assert_eq!(
            b.get(format!("k{i:06}").as_bytes())
                .unwrap()
                .unwrap()
                .as_ref(),
            &value(i, 20_000)[..]
        );
    }
}

#[test]
fn use_reserve_reaches_the_last_page_and_no_further() {
    let cap_pages = 256;
    let db = Db::create(
        MemPager::new().with_capacity_limit(cap_pages * PS),
        Options::default(),
    )
    .unwrap();
    fill(&db, 0, 3000);
    let before = dump(&db).unwrap();
    // With the reserve allowed, growth continues into it, until the hard limit.
    let mut extra = 0;
    loop {
        let tx = db.begin_write().unwrap();
        tx.use_reserve();
        let r = tx
            .get_bucket(b"b")
            .and_then(|b| b.put(format!("r{extra:06}").as_bytes(), &value(extra, 3000)))
            .and_then(|_| tx.commit());
        match r {
            Ok(()) => extra += 1,
            Err(Error::NoSpace) => break,
            Err(e) => panic!("{e:?}"),
        }
    }
    assert!(extra > 0, "the reserve gave nothing");
    assert!(free_pages(&db) < reserve_pages(cap_pages));
    assert_ne!(dump(&db).unwrap(), before);
    let reopened = Db::open(MemPager::from_image(db.pager().image())).unwrap();
    assert_eq!(dump(&reopened).unwrap(), dump(&db).unwrap());
}
