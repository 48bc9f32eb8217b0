//! MmapPager under kvdb: what a store written through it holds, snapshots, growth, and the
//! errors of reads past the end.

use kvdb::{Db, FilePager, Options, Pager};
use kvdb_mmap::MmapPager;

fn value(i: u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|j| (j as u64 ^ i.wrapping_mul(31)) as u8)
        .collect()
}

#[test]
fn a_store_written_through_the_mapping_reads_back_after_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    {
        let db = Db::create(MmapPager::open(&path).unwrap(), Options::default()).unwrap();
        let tx = db.begin_write().unwrap();
        let b = tx.create_bucket(b"t").unwrap();
        for i in 0..5000u64 {
            // Small values, and every 100th one larger than a page (an overflow value).
            let len = if i % 100 == 0 { 70_000 } else { 100 };
            b.put(&i.to_be_bytes(), &value(i, len)).unwrap();
        }
        tx.commit().unwrap();
    }
    let db = Db::open(MmapPager::open(&path).unwrap()).unwrap();
    let tx = db.begin_read().unwrap();
    let b = tx.get_bucket(b"t").unwrap();
    for i in 0..5000u64 {
        let len = if i % 100 == 0 { 70_000 } else { 100 };
        let v = b.get(&i.to_be_bytes()).unwrap().unwrap();
        assert_eq!(&v[..], &value(i, len)[..], "key {i}");
    }
    assert!(b.get(&5000u64.to_be_bytes()).unwrap().is_none());
}

#[test]
fn a_read_transaction_keeps_its_snapshot_while_later_commits_grow_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::create(
        MmapPager::open(dir.path().join("db")).unwrap(),
        Options::default(),
    )
    .unwrap();
    let tx = db.begin_write().unwrap();
    let b = tx.create_bucket(b"t").unwrap();
    b.put(b"k", &value(1, 50_000)).unwrap();
    tx.commit().unwrap();
    let len_before = db.pager().len();

    let snapshot = db.begin_read().unwrap();
    let old = snapshot
        .get_bucket(b"t")
        .unwrap()
        .get(b"k")
        .unwrap()
        .unwrap();
    for round in 0..20u64 {
        let tx = db.begin_write().unwrap();
        let b = tx.get_bucket(b"t").unwrap();
        b.put(b"k", &value(100 + round, 50_000)).unwrap();
        for i in 0..200u64 {
            b.put(&(round * 1000 + i).to_be_bytes(), &value(i, 300))
                .unwrap();
        }
        tx.commit().unwrap();
    }
    assert!(db.pager().len() > len_before, "the commits grew the file");
    // The snapshot's value, a slice of the mapping, still shows what it showed.
    assert_eq!(&old[..], &value(1, 50_000)[..]);
    let again = snapshot
        .get_bucket(b"t")
        .unwrap()
        .get(b"k")
        .unwrap()
        .unwrap();
    assert_eq!(&again[..], &value(1, 50_000)[..]);
    drop(snapshot);
    let now = db.begin_read().unwrap();
    let newest = now.get_bucket(b"t").unwrap().get(b"k").unwrap().unwrap();
    assert_eq!(&newest[..], &value(119, 50_000)[..]);
}

#[test]
fn reads_past_the_end_are_errors_and_writes_grow_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("raw");
    let pager = MmapPager::open(&path).unwrap();
    assert!(pager.is_empty());
    assert!(pager.read(0, 4096).is_err(), "nothing written yet");
    let page: Vec<u8> = (0..4096u32).map(|i| i as u8).collect();
    pager.write(&[(8192, &page)]).unwrap();
    assert_eq!(pager.len(), 12288);
    assert_eq!(pager.read(8192, 4096).unwrap(), &page[..]);
    // The hole before it reads as zeros, as the file does.
    assert!(pager.read(0, 8192).unwrap().iter().all(|&b| b == 0));
    assert!(pager.read(8192, 4097).is_err(), "one byte past the end");
    assert!(
        pager.read(u64::MAX - 10, 4096).is_err(),
        "a range that wraps"
    );
    pager.sync().unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 12288);
}

#[test]
fn a_store_written_by_the_file_pager_opens_through_the_mapping_and_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    {
        let db = Db::create(FilePager::open(&path).unwrap(), Options::default()).unwrap();
        let tx = db.begin_write().unwrap();
        tx.create_bucket(b"t")
            .unwrap()
            .put(b"a", b"from the file pager")
            .unwrap();
        tx.commit().unwrap();
    }
    {
        let db = Db::open(MmapPager::open(&path).unwrap()).unwrap();
        let tx = db.begin_write().unwrap();
        let b = tx.get_bucket(b"t").unwrap();
        assert_eq!(&b.get(b"a").unwrap().unwrap()[..], b"from the file pager");
        b.put(b"b", b"from the mapping").unwrap();
        tx.commit().unwrap();
    }
    let db = Db::open(FilePager::open(&path).unwrap()).unwrap();
    let tx = db.begin_read().unwrap();
    let b = tx.get_bucket(b"t").unwrap();
    assert_eq!(&b.get(b"b").unwrap().unwrap()[..], b"from the mapping");
}

#[test]
fn large_values_over_several_commits_read_back_after_reopening() {
    // 64 KiB values (whose write-back the pager starts early), some replaced in later
    // commits so that freed pages are written again, then read back through the same
    // pager and through a fresh one.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let check = |db: &Db<MmapPager>| {
        let tx = db.begin_read().unwrap();
        let b = tx.get_bucket(b"t").unwrap();
        for i in 0..64u64 {
            let round = if i.is_multiple_of(3) { 3 } else { 0 };
            let v = b.get(&i.to_be_bytes()).unwrap().unwrap();
            assert_eq!(&v[..], &value(i * 1000 + round, 65536)[..], "key {i}");
        }
    };
    {
        let db = Db::create(MmapPager::open(&path).unwrap(), Options::default()).unwrap();
        for round in 0..4u64 {
            let tx = db.begin_write().unwrap();
            let b = tx.get_or_create_bucket(b"t").unwrap();
            for i in 0..64u64 {
                if round == 0 || i.is_multiple_of(3) {
                    b.put(&i.to_be_bytes(), &value(i * 1000 + round, 65536))
                        .unwrap();
                }
            }
            tx.commit().unwrap();
        }
        check(&db);
    }
    check(&Db::open(MmapPager::open(&path).unwrap()).unwrap());
}
