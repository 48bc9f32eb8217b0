//! Placed values (`Tx::reserve_placed`, `Db::write_placed`, `Bucket::put_placed`,
//! `Tx::drop_placed`): placed by one transaction and written after it, inserted or freed by
//! a later one; never handed out twice, free on disk until inserted (a crash before that
//! leaks nothing), placed again when the inserting transaction rolls back.

use kvdb::{Db, Error, MemPager, Options, PagerEvent, Placed};

fn mem_db() -> Db<MemPager> {
    Db::create(MemPager::new(), Options::default()).unwrap()
}

/// A store with an empty bucket `data`.
fn db_with_data() -> Db<MemPager> {
    let db = mem_db();
    let tx = db.begin_write().unwrap();
    tx.create_bucket(b"data").unwrap();
    tx.commit().unwrap();
    db
}

/// `placed` is a 64 KiB value and a 10,000-byte one, the only pages placed in `db`.
fn assert_two_placed(db: &Db<MemPager>, placed: &[Placed]) {
    assert_eq!(placed.len(), 2);
    assert_eq!((placed[0].pages, placed[0].len), (16, 64 << 10));
    assert_eq!((placed[1].pages, placed[1].len), (3, 10_000));
    assert_eq!(placed_pages(db), 19);
}

fn reopen(db: Db<MemPager>) -> Db<MemPager> {
    Db::open(MemPager::from_image(db.into_pager().image())).unwrap()
}

fn value(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31) ^ seed)
        .collect()
}

/// Place `values` in a transaction of their own (a deferred commit), then write them.
fn place(db: &Db<MemPager>, values: &[&[u8]]) -> Vec<Placed> {
    let lens: Vec<usize> = values.iter().map(|v| v.len()).collect();
    let placed = reserve(db, &lens);
    let pieces: Vec<[&[u8]; 1]> = values.iter().map(|v| [*v]).collect();
    let refs: Vec<&[&[u8]]> = pieces.iter().map(|p| &p[..]).collect();
    db.write_placed(&placed, &refs).unwrap();
    placed
}

/// Reserve pages for `lens` in a transaction of their own (a deferred commit).
fn reserve(db: &Db<MemPager>, lens: &[usize]) -> Vec<Placed> {
    let tx = db.begin_write().unwrap();
    let placed = tx.reserve_placed(lens).unwrap();
    tx.commit_deferred().unwrap();
    placed
}

fn placed_pages(db: &Db<MemPager>) -> u64 {
    db.stats().placed_pages.unwrap()
}

#[test]
fn placed_values_are_inserted_by_a_later_transaction() {
    let db = mem_db();
    let tx = db.begin_write().unwrap();
    tx.create_bucket(b"data")
        .unwrap()
        .put(b"old", &value(20_000, 9))
        .unwrap();
    tx.commit().unwrap();
    let (a, b) = (value(64 << 10, 1), value(10_000, 2));
    let placed = place(&db, &[&a, &b]);
    assert_two_placed(&db, &placed);
    // Nothing else may take their pages meanwhile.
    let tx = db.begin_write().unwrap();
    tx.get_bucket(b"data")
        .unwrap()
        .put(b"other", &value(30_000, 3))
        .unwrap();
    tx.commit_deferred().unwrap();
    // One replaces a value, one is new.
    let tx = db.begin_write().unwrap();
    let old = tx
        .get_bucket(b"data")
        .unwrap()
        .put_placed(&[(b"old", placed[1]), (b"new", placed[0])])
        .unwrap();
    assert_eq!(old, vec![Some(20_000), None]);
    tx.commit().unwrap();
    assert_eq!(placed_pages(&db), 0);
    let other = value(30_000, 3);
    assert_reopened(db, &[(b"new", &a), (b"old", &b), (b"other", &other)]);
}

/// Reopen `db` and find each key of bucket `data` holding its value.
fn assert_reopened(db: Db<MemPager>, want: &[(&[u8], &[u8])]) {
    let db = reopen(db);
    let tx = db.begin_read().unwrap();
    let data = tx.get_bucket(b"data").unwrap();
    for &(key, value) in want {
        assert_eq!(&*data.get(key).unwrap().unwrap(), value, "{key:?}");
    }
}

#[test]
fn a_crash_before_the_insert_leaves_the_pages_free() {
    let db = db_with_data();
    let placed = place(&db, &[&value(256 << 10, 4)]);
    assert_eq!(placed[0].pages, 64);
    // A barrier while they wait: the freelist it writes lists them as free.
    db.sync().unwrap();
    assert_eq!(placed_pages(&db), 64);
    let db = reopen(db);
    assert_eq!(placed_pages(&db), 0);
    // The reopened store lists them as free and hands them out again.
    let free = db.stats().free_pages.unwrap();
    assert!(free >= 64, "{free} pages free");
    let again = place(&db, &[&value(256 << 10, 5)]);
    assert!(again[0].page <= placed[0].page, "{again:?} {placed:?}");
}

#[test]
fn dropped_values_are_freed_and_cut_values_free_their_tail() {
    let db = db_with_data();
    let v = value(64 << 10, 6);
    let placed = place(&db, &[&v, &v]);
    let tx = db.begin_write().unwrap();
    tx.drop_placed(&placed[1..]).unwrap();
    tx.get_bucket(b"data")
        .unwrap()
        .put_placed(&[(b"k", placed[0].cut(5000))])
        .unwrap();
    tx.commit().unwrap();
    assert_eq!(placed_pages(&db), 0);
    // The dropped value's 16 pages and the cut one's 14 past its 2 are free.
    let db = reopen(db);
    let free = db.stats().free_pages.unwrap();
    assert!(free >= 30, "{free} pages free");
    let tx = db.begin_read().unwrap();
    assert_eq!(
        &*tx.get_bucket(b"data").unwrap().get(b"k").unwrap().unwrap(),
        &v[..5000]
    );
}

#[test]
fn rollbacks_and_misuse_leave_values_placed() {
    let db = db_with_data();
    // A placing transaction that does not commit places nothing.
    {
        let tx = db.begin_write().unwrap();
        tx.reserve_placed(&[64 << 10]).unwrap();
    }
    assert_eq!(placed_pages(&db), 0);
    let placed = place(&db, &[&value(64 << 10, 8)]);
    // An insert or drop that rolls back leaves it placed.
    {
        let tx = db.begin_write().unwrap();
        tx.get_bucket(b"data")
            .unwrap()
            .put_placed(&[(b"k", placed[0])])
            .unwrap();
    }
    {
        let tx = db.begin_write().unwrap();
        tx.drop_placed(&placed).unwrap();
    }
    assert_eq!(placed_pages(&db), 16);
    // Small values cannot be placed, and pages that are not placed cannot be inserted.
    let tx = db.begin_write().unwrap();
    assert_eq!(
        tx.reserve_placed(&[b"small".len()]),
        Err(Error::IncompatibleValue)
    );
    let bogus = Placed {
        page: placed[0].page + 100,
        ..placed[0]
    };
    assert!(matches!(
        tx.get_bucket(b"data").unwrap().put_placed(&[(b"k", bogus)]),
        Err(Error::Corrupted(_))
    ));
    assert!(matches!(tx.drop_placed(&[bogus]), Err(Error::Corrupted(_))));
    // Inserted once, a second insert of the same pages is refused.
    let data = tx.get_bucket(b"data").unwrap();
    data.put_placed(&[(b"k", placed[0])]).unwrap();
    assert!(matches!(
        data.put_placed(&[(b"k2", placed[0])]),
        Err(Error::Corrupted(_))
    ));
    tx.commit().unwrap();
    assert_eq!(placed_pages(&db), 0);
    let tx = db.begin_read().unwrap();
    assert_eq!(
        &*tx.get_bucket(b"data").unwrap().get(b"k").unwrap().unwrap(),
        &value(64 << 10, 8)[..]
    );
    assert!(tx
        .get_bucket(b"data")
        .unwrap()
        .get(b"k2")
        .unwrap()
        .is_none());
}

#[test]
fn reserved_values_are_written_without_the_writer_lock() {
    let db = db_with_data();
    let (a, b) = (value(64 << 10, 11), value(10_000, 12));
    let placed = reserve(&db, &[a.len(), b.len()]);
    assert_two_placed(&db, &placed);
    {
        // Another write transaction is open (the writer lock is held: taking it here would
        // never return) while the bytes go out, the first value in two pieces.
        let tx = db.begin_write().unwrap();
        tx.get_bucket(b"data")
            .unwrap()
            .put(b"other", &value(30_000, 13))
            .unwrap();
        db.write_placed(&placed, &[&[&a[..4096], &a[4096..]], &[&b[..]]])
            .unwrap();
        tx.commit_deferred().unwrap();
    }
    let tx = db.begin_write().unwrap();
    tx.get_bucket(b"data")
        .unwrap()
        .put_placed(&[(b"a", placed[0]), (b"b", placed[1])])
        .unwrap();
    tx.commit().unwrap();
    assert_eq!(placed_pages(&db), 0);
    let other = value(30_000, 13);
    assert_reopened(db, &[(b"a", &a), (b"b", &b), (b"other", &other)]);
}

#[test]
fn a_write_that_does_not_match_its_reservation_writes_nothing() {
    let db = mem_db();
    let placed = reserve(&db, &[64 << 10]);
    let short = value(60_000, 1);
    db.pager().record();
    assert_eq!(
        db.write_placed(&placed, &[&[&short[..]]]),
        Err(Error::IncompatibleValue)
    );
    assert_eq!(
        db.write_placed(&placed, &[&[&short[..]], &[&short[..]]]),
        Err(Error::IncompatibleValue)
    );
    assert!(db.pager().take_log().is_empty());
    // Reserved pages that are never written can be dropped like placed ones.
    let tx = db.begin_write().unwrap();
    tx.drop_placed(&placed).unwrap();
    tx.commit().unwrap();
    assert_eq!(placed_pages(&db), 0);
}

#[test]
fn the_barrier_after_an_unlocked_write_flushes_before_its_meta_page() {
    let db = db_with_data();
    let ps = db.page_size() as u64;
    let is_meta = |e: &PagerEvent| matches!(e, PagerEvent::Write(off, _) if *off < 2 * ps);
    // A small commit alone: its meta page carries a commit record, one flush in all, after it.
    db.pager().record();
    let tx = db.begin_write().unwrap();
    tx.get_bucket(b"data").unwrap().put(b"k", b"v").unwrap();
    tx.commit().unwrap();
    let log = db.pager().take_log();
    let meta = log.iter().position(is_meta).unwrap();
    assert!(!log[..meta].contains(&PagerEvent::Sync), "{log:?}");
    // The same after a value written without the writer lock: the device is flushed before
    // the meta page that references the value is written.
    let v = value(64 << 10, 2);
    let placed = reserve(&db, &[v.len()]);
    db.write_placed(&placed, &[&[&v[..]]]).unwrap();
    db.pager().record();
    let tx = db.begin_write().unwrap();
    tx.get_bucket(b"data")
        .unwrap()
        .put_placed(&[(b"v", placed[0])])
        .unwrap();
    tx.commit().unwrap();
    let log = db.pager().take_log();
    let meta = log.iter().position(is_meta).unwrap();
    assert!(log[..meta].contains(&PagerEvent::Sync), "{log:?}");
    // Once flushed, the next small commit has its single flush again.
    db.pager().record();
    let tx = db.begin_write().unwrap();
    tx.get_bucket(b"data").unwrap().put(b"k", b"w").unwrap();
    tx.commit().unwrap();
    let log = db.pager().take_log();
    let meta = log.iter().position(is_meta).unwrap();
    assert!(!log[..meta].contains(&PagerEvent::Sync), "{log:?}");
}
