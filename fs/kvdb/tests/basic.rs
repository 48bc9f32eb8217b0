//! Behaviour a user of the store relies on: contents survive commit and reopen, rollback, snapshot
//! isolation, errors, large values, page reuse, out-of-space and I/O failures.

mod common;

use std::collections::BTreeMap;

use common::{dump, Item, XorShift64};
use kvdb::{Db, Error, MemPager, Options, Pager, SlicePager};

fn mem_db() -> Db<MemPager> {
    Db::create(MemPager::new(), Options::default()).unwrap()
}

fn reopen(db: Db<MemPager>) -> Db<MemPager> {
    Db::open(MemPager::from_image(db.into_pager().image())).unwrap()
}

#[test]
fn put_commit_reopen_get() {
    let db = mem_db();
    let tx = db.begin_write().unwrap();
    let b = tx.create_bucket(b"inodes").unwrap();
    b.put(b"alpha", b"1").unwrap();
    b.put(b"beta", b"22").unwrap();
    tx.commit().unwrap();
    let db = reopen(db);
    let tx = db.begin_read().unwrap();
    let b = tx.get_bucket(b"inodes").unwrap();
    assert_eq!(&*b.get(b"alpha").unwrap().unwrap(), b"1");
    assert_eq!(&*b.get(b"beta").unwrap().unwrap(), b"22");
    assert!(b.get(b"gamma").unwrap().is_none());
}

#[test]
fn drop_rolls_back() {
    let db = mem_db();
    {
        let tx = db.begin_write().unwrap();
        tx.create_bucket(b"b").unwrap().put(b"k", b"v").unwrap();
    }
    let tx = db.begin_read().unwrap();
    assert_eq!(tx.get_bucket(b"b").err(), Some(Error::BucketNotFound));
    drop(tx);
    let before = db.stats();
    let tx = db.begin_write().unwrap();
    let b = tx.create_bucket(b"b").unwrap();
    b.put(b"big", &vec![7u8; 100_000]).unwrap();
    tx.rollback();
    assert_eq!(db.stats(), before);
}

#[test]
fn readers_see_their_snapshot() {
    let db = mem_db();
    let tx = db.begin_write().unwrap();
    tx.create_bucket(b"b").unwrap().put(b"k", b"old").unwrap();
    tx.commit().unwrap();

    let reader = db.begin_read().unwrap();
    let old = reader.get_bucket(b"b").unwrap().get(b"k").unwrap().unwrap();
    // Many commits that free and reuse pages must not disturb the open snapshot.
    for i in 0..50u32 {
        let tx = db.begin_write().unwrap();
        let b = tx.get_bucket(b"b").unwrap();
        b.put(b"k", format!("new{i}").as_bytes()).unwrap();
        for j in 0..50u32 {
            b.put(format!("fill{i:03}{j:03}").as_bytes(), &[i as u8; 100])
                .unwrap();
        }
        tx.commit().unwrap();
    }
    assert_eq!(&*old, b"old");
    assert_eq!(
        &*reader.get_bucket(b"b").unwrap().get(b"k").unwrap().unwrap(),
        b"old"
    );
    let mut c = reader.get_bucket(b"b").unwrap().cursor();
    assert_eq!(c.first().unwrap().unwrap().key(), b"k");
    assert!(c.next().unwrap().is_none());
    drop(reader);
    let tx = db.begin_read().unwrap();
    assert_eq!(
        &*tx.get_bucket(b"b").unwrap().get(b"k").unwrap().unwrap(),
        b"new49"
    );
}

#[test]
fn errors_are_reported() {
    let db = mem_db();
    let tx = db.begin_write().unwrap();
    let b = tx.create_bucket(b"b").unwrap();
    assert_eq!(tx.create_bucket(b"b").err(), Some(Error::BucketExists));
    assert_eq!(b.put(b"", b"v"), Err(Error::KeyTooLarge));
    assert_eq!(
        b.put(&vec![1u8; db.max_key_len() + 1], b"v"),
        Err(Error::KeyTooLarge)
    );
    b.put(&vec![1u8; db.max_key_len()], b"v").unwrap();
    b.put(b"value", b"v").unwrap();
    b.create_bucket(b"nested").unwrap();
    assert_eq!(b.get(b"nested").err(), Some(Error::IncompatibleValue));
    assert_eq!(b.put(b"nested", b"x"), Err(Error::IncompatibleValue));
    assert_eq!(b.delete(b"nested"), Err(Error::IncompatibleValue));
    assert_eq!(b.get_bucket(b"value").err(), Some(Error::IncompatibleValue));
    assert_eq!(b.create_bucket(b"value").err(), Some(Error::BucketExists));
    assert_eq!(b.delete_bucket(b"value"), Err(Error::IncompatibleValue));
    assert_eq!(b.delete_bucket(b"none"), Err(Error::BucketNotFound));
    assert_eq!(b.get_bucket(b"none").err(), Some(Error::BucketNotFound));
    assert_eq!(b.delete(b"none"), Ok(false));
    tx.commit().unwrap();

    let tx = db.begin_read().unwrap();
    let b = tx.get_bucket(b"b").unwrap();
    assert_eq!(b.put(b"k", b"v"), Err(Error::TxReadOnly));
    assert_eq!(b.delete(b"value"), Err(Error::TxReadOnly));
    assert_eq!(tx.create_bucket(b"c").err(), Some(Error::TxReadOnly));
    assert_eq!(b.next_sequence(), Err(Error::TxReadOnly));
    assert_eq!(
        Db::create(MemPager::new(), Options { page_size: 3000 }).err(),
        Some(Error::InvalidOptions)
    );
}

#[test]
fn large_values_are_contiguous_and_pages_are_reused() {
    let db = mem_db();
    let big: Vec<u8> = (0..65536u32).map(|i| (i * 7 % 251) as u8).collect();
    let odd: Vec<u8> = (0..10_001u32).map(|i| (i % 13) as u8).collect();
    let tx = db.begin_write().unwrap();
    let b = tx.create_bucket(b"data").unwrap();
    b.put(b"big", &big).unwrap();
    b.put(b"odd", &odd).unwrap();
    assert_eq!(&*b.get(b"big").unwrap().unwrap(), &big[..]);
    tx.commit().unwrap();
    let db = reopen(db);
    {
        let tx = db.begin_read().unwrap();
        let b = tx.get_bucket(b"data").unwrap();
        assert_eq!(&*b.get(b"big").unwrap().unwrap(), &big[..]);
        assert_eq!(&*b.get(b"odd").unwrap().unwrap(), &odd[..]);
    }
    // Rewriting the same values again and again must not grow the store without bound.
    for round in 0..20u8 {
        let tx = db.begin_write().unwrap();
        let b = tx.get_bucket(b"data").unwrap();
        b.put(b"big", &vec![round; 65536]).unwrap();
        tx.commit().unwrap();
    }
    let grown = db.stats().page_count;
    for round in 0..20u8 {
        let tx = db.begin_write().unwrap();
        tx.get_bucket(b"data")
            .unwrap()
            .put(b"big", &vec![round; 65536])
            .unwrap();
        tx.commit().unwrap();
    }
    assert_eq!(
        db.stats().page_count,
        grown,
        "steady-state rewrites must reuse freed pages"
    );
    let tx = db.begin_write().unwrap();
    assert!(tx.get_bucket(b"data").unwrap().delete(b"big").unwrap());
    tx.commit().unwrap();
    let tx = db.begin_read().unwrap();
    assert!(tx
        .get_bucket(b"data")
        .unwrap()
        .get(b"big")
        .unwrap()
        .is_none());
}

#[test]
fn slice_pager_reads_are_zero_copy() {
    let db = mem_db();
    let tx = db.begin_write().unwrap();
    let b = tx.create_bucket(b"b").unwrap();
    b.put(b"small", b"hello").unwrap();
    b.put(b"large", &vec![9u8; 20_000]).unwrap();
    tx.commit().unwrap();
    let image = db.into_pager().image();
    let db = Db::open(SlicePager(&image)).unwrap();
    let tx = db.begin_read().unwrap();
    let b = tx.get_bucket(b"b").unwrap();
    let range = image.as_ptr_range();
    for key in [&b"small"[..], b"large"] {
        let v = b.get(key).unwrap().unwrap();
        assert!(
            range.contains(&v.as_ptr()),
            "value must point into the image"
        );
    }
    assert_eq!(&*b.get(b"small").unwrap().unwrap(), b"hello");
    assert_eq!(b.get(b"large").unwrap().unwrap().len(), 20_000);
}

#[test]
fn many_keys_split_merge_and_cursor() {
    let db = mem_db();
    let mut model = BTreeMap::new();
    let mut rng = XorShift64::new(42);
    for round in 0..6 {
        let tx = db.begin_write().unwrap();
        let b = tx.get_or_create_bucket(b"b").unwrap();
        for _ in 0..3000 {
            let k = format!("key{:06}", rng.below(20_000)).into_bytes();
            if round % 3 == 2 || rng.below(4) == 0 {
                assert_eq!(b.delete(&k).unwrap(), model.remove(&k).is_some());
            } else {
                let v = vec![(rng.next_u64() & 0xff) as u8; rng.below(300) as usize];
                b.put(&k, &v).unwrap();
                model.insert(k, v);
            }
        }
        tx.commit().unwrap();
    }
    let tx = db.begin_read().unwrap();
    let b = tx.get_bucket(b"b").unwrap();
    let mut c = b.cursor();
    let mut e = c.last().unwrap();
    let mut backwards = Vec::new();
    while let Some(entry) = e {
        backwards.push(entry.key().to_vec());
        e = c.prev().unwrap();
    }
    backwards.reverse();
    assert_eq!(backwards, model.keys().cloned().collect::<Vec<_>>());
    let probe = b"key010000";
    let expect = model.range(probe.to_vec()..).next().map(|(k, _)| k.clone());
    assert_eq!(c.seek(probe).unwrap().map(|e| e.key().to_vec()), expect);
    drop(tx);
    let expected: common::Model = [(
        b"b".to_vec(),
        Item::Bucket(
            model
                .into_iter()
                .map(|(k, v)| (k, Item::Value(v)))
                .collect(),
        ),
    )]
    .into();
    assert_eq!(dump(&db).unwrap(), expected);
    assert_eq!(dump(&reopen(db)).unwrap(), expected);
}

#[test]
fn nested_buckets_and_delete_bucket_free_pages() {
    let db = mem_db();
    let mut high = 0;
    for round in 0..8 {
        let tx = db.begin_write().unwrap();
        let top = tx.create_bucket(b"top").unwrap();
        for i in 0..5u32 {
            let nested = top.create_bucket(format!("n{i}").as_bytes()).unwrap();
            for j in 0..200u32 {
                nested
                    .put(format!("k{j:04}").as_bytes(), &[j as u8; 50])
                    .unwrap();
            }
            let deeper = nested.create_bucket(b"deeper").unwrap();
            deeper.put(b"x", &vec![1u8; 9000]).unwrap();
        }
        assert_eq!(top.next_sequence().unwrap(), 1);
        tx.commit().unwrap();
        {
            let tx = db.begin_read().unwrap();
            let n3 = tx.get_bucket(b"top").unwrap().get_bucket(b"n3").unwrap();
            assert_eq!(&*n3.get(b"k0007").unwrap().unwrap(), &[7u8; 50][..]);
            assert_eq!(
                n3.get_bucket(b"deeper")
                    .unwrap()
                    .get(b"x")
                    .unwrap()
                    .unwrap()
                    .len(),
                9000
            );
            assert_eq!(tx.get_bucket(b"top").unwrap().sequence(), 1);
        }
        let tx = db.begin_write().unwrap();
        tx.delete_bucket(b"top").unwrap();
        tx.commit().unwrap();
        assert!(dump(&db).unwrap().is_empty());
        if round == 2 {
            high = db.stats().page_count;
        } else if round > 2 {
            assert_eq!(
                db.stats().page_count,
                high,
                "deleted buckets' pages must be reused"
            );
        }
    }
}

#[test]
fn delete_open_bucket_in_same_tx() {
    let db = mem_db();
    let tx = db.begin_write().unwrap();
    let a = tx.create_bucket(b"a").unwrap();
    let n = a.create_bucket(b"n").unwrap();
    n.put(b"k", b"v").unwrap();
    a.delete_bucket(b"n").unwrap();
    assert_eq!(n.get(b"k").err(), Some(Error::BucketNotFound));
    let n2 = a.create_bucket(b"n").unwrap();
    assert!(n2.get(b"k").unwrap().is_none());
    n2.put(b"k2", b"v2").unwrap();
    tx.commit().unwrap();
    let tx = db.begin_read().unwrap();
    let n = tx.get_bucket(b"a").unwrap().get_bucket(b"n").unwrap();
    assert!(n.get(b"k").unwrap().is_none());
    assert_eq!(&*n.get(b"k2").unwrap().unwrap(), b"v2");
}

#[test]
fn cursor_survives_changes_in_its_transaction() {
    let db = mem_db();
    let tx = db.begin_write().unwrap();
    let b = tx.create_bucket(b"b").unwrap();
    for i in 0..1000u32 {
        b.put(format!("{i:05}").as_bytes(), b"x").unwrap();
    }
    // Delete every key as we walk: the cursor must still visit each exactly once.
    let mut c = b.cursor();
    let mut seen = 0;
    let mut e = c.first().unwrap();
    while let Some(entry) = e {
        assert_eq!(entry.key(), format!("{seen:05}").as_bytes());
        b.delete(entry.key()).unwrap();
        seen += 1;
        e = c.next().unwrap();
    }
    assert_eq!(seen, 1000);
    assert!(b.cursor().first().unwrap().is_none());
    tx.commit().unwrap();
}

#[test]
fn put_many_batches_in_one_transaction() {
    let db = mem_db();
    let tx = db.begin_write().unwrap();
    let b = tx.create_bucket(b"file").unwrap();
    b.put_many((0u64..5000).map(|i| (i.to_be_bytes(), i.to_le_bytes())))
        .unwrap();
    tx.commit().unwrap();
    let tx = db.begin_read().unwrap();
    let b = tx.get_bucket(b"file").unwrap();
    let mut c = b.cursor();
    let mut i = 0u64;
    let mut e = c.first().unwrap();
    while let Some(entry) = e {
        assert_eq!(entry.key(), i.to_be_bytes());
        assert_eq!(entry.value().unwrap(), i.to_le_bytes());
        i += 1;
        e = c.next().unwrap();
    }
    assert_eq!(i, 5000);
    // Appending sorted keys fills pages: 5000 x (16 + 8 + 8) bytes ~ 160 KiB ~ 40 pages.
    assert!(
        db.stats().page_count < 60,
        "pages: {}",
        db.stats().page_count
    );
}

#[test]
fn out_of_space_leaves_store_unchanged() {
    let pager = MemPager::new().with_capacity_limit(64 * 4096);
    let db = Db::create(pager, Options::default()).unwrap();
    let tx = db.begin_write().unwrap();
    tx.create_bucket(b"b").unwrap().put(b"first", b"1").unwrap();
    tx.commit().unwrap();
    let before = dump(&db).unwrap();
    let mut hit = false;
    for i in 0..100u32 {
        let tx = db.begin_write().unwrap();
        let b = tx.get_bucket(b"b").unwrap();
        let r = b
            .put(format!("k{i}").as_bytes(), &vec![1u8; 20_000])
            .and_then(|_| tx.commit());
        if let Err(e) = r {
            assert_eq!(e, Error::NoSpace);
            hit = true;
            break;
        }
    }
    assert!(hit);
    let committed = dump(&db).unwrap();
    assert_ne!(committed, before);
    // The failed transaction changed nothing, on disk or in memory; small writes still work.
    let reopened = Db::open(MemPager::from_image(db.pager().image())).unwrap();
    assert_eq!(dump(&reopened).unwrap(), committed);
    let tx = db.begin_write().unwrap();
    tx.get_bucket(b"b").unwrap().put(b"small", b"ok").unwrap();
    tx.commit().unwrap();
    let tx = db.begin_read().unwrap();
    assert_eq!(
        &*tx.get_bucket(b"b").unwrap().get(b"small").unwrap().unwrap(),
        b"ok"
    );
}

#[test]
fn io_error_in_commit_leaves_store_unchanged() {
    let db = mem_db();
    let tx = db.begin_write().unwrap();
    let b = tx.create_bucket(b"b").unwrap();
    for i in 0..500u32 {
        b.put(&i.to_be_bytes(), &[1u8; 40]).unwrap();
    }
    tx.commit().unwrap();
    let before = dump(&db).unwrap();
    let stats = db.stats();
    db.pager().fail_writes_after(Some(0));
    let tx = db.begin_write().unwrap();
    let b = tx.get_bucket(b"b").unwrap();
    for i in 0..500u32 {
        b.put(&i.to_be_bytes(), &[2u8; 40]).unwrap();
    }
    assert_eq!(tx.commit(), Err(Error::Io));
    db.pager().fail_writes_after(None);
    assert_eq!(dump(&db).unwrap(), before);
    assert_eq!(db.stats(), stats);
    assert_eq!(
        dump(&Db::open(MemPager::from_image(db.pager().image())).unwrap()).unwrap(),
        before
    );
    let tx = db.begin_write().unwrap();
    tx.get_bucket(b"b").unwrap().put(b"after", b"ok").unwrap();
    tx.commit().unwrap();
}

#[test]
fn file_pager_roundtrip() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.kv");
    {
        let db = Db::create(
            kvdb::FilePager::open(&path).unwrap(),
            Options { page_size: 8192 },
        )
        .unwrap();
        let tx = db.begin_write().unwrap();
        let b = tx.create_bucket(b"b").unwrap();
        for i in 0..2000u32 {
            b.put(&i.to_be_bytes(), &vec![i as u8; (i % 700) as usize])
                .unwrap();
        }
        b.put(b"big", &vec![3u8; 100_000]).unwrap();
        tx.commit().unwrap();
    }
    let db = Db::open(kvdb::FilePager::open(&path).unwrap()).unwrap();
    assert_eq!(db.page_size(), 8192);
    let tx = db.begin_read().unwrap();
    let b = tx.get_bucket(b"b").unwrap();
    assert_eq!(
        &*b.get(&1999u32.to_be_bytes()).unwrap().unwrap(),
        &vec![1999u32 as u8; 1999 % 700][..]
    );
    assert_eq!(b.get(b"big").unwrap().unwrap().len(), 100_000);
}

#[test]
fn concurrent_readers_and_writer() {
    let db = mem_db();
    let tx = db.begin_write().unwrap();
    tx.create_bucket(b"b")
        .unwrap()
        .put(b"counter", &0u64.to_le_bytes())
        .unwrap();
    tx.commit().unwrap();
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                let mut last = 0;
                for _ in 0..200 {
                    let tx = db.begin_read().unwrap();
                    let b = tx.get_bucket(b"b").unwrap();
                    let v = u64::from_le_bytes(
                        b.get(b"counter").unwrap().unwrap()[..8].try_into().unwrap(),
                    );
                    // Every key written with the counter is visible in the same snapshot.
                    if v > 0 {
                        assert_eq!(
                            &*b.get(format!("k{v}").as_bytes()).unwrap().unwrap(),
                            &v.to_le_bytes()
                        );
                    }
                    assert!(v >= last);
                    last = v;
                }
            });
        }
        for i in 1..=200u64 {
            let tx = db.begin_write().unwrap();
            let b = tx.get_bucket(b"b").unwrap();
            b.put(format!("k{i}").as_bytes(), &i.to_le_bytes()).unwrap();
            b.put(b"counter", &i.to_le_bytes()).unwrap();
            tx.commit().unwrap();
        }
    });
}

#[test]
fn small_pages_work() {
    let db = Db::create(MemPager::new(), Options { page_size: 1024 }).unwrap();
    let tx = db.begin_write().unwrap();
    let b = tx.create_bucket(b"b").unwrap();
    let mut rng = XorShift64::new(7);
    let mut model = BTreeMap::new();
    for _ in 0..3000 {
        let k = vec![b'a' + rng.below(26) as u8; 1 + rng.below(128) as usize];
        let v = vec![rng.below(256) as u8; rng.below(400) as usize];
        b.put(&k, &v).unwrap();
        model.insert(k, v);
    }
    tx.commit().unwrap();
    let db = reopen(db);
    let tx = db.begin_read().unwrap();
    let b = tx.get_bucket(b"b").unwrap();
    for (k, v) in &model {
        assert_eq!(&*b.get(k).unwrap().unwrap(), &v[..]);
    }
    let _ = db.pager().len();
}

#[test]
fn one_writer_at_a_time() {
    let db = mem_db();
    let tx = db.begin_write().unwrap();
    assert!(db.try_begin_write().unwrap().is_none());
    assert_eq!(
        db.stats().free_pages,
        None,
        "stats must not wait for the writer"
    );
    let r = db.begin_read().unwrap();
    drop(tx);
    assert!(db.try_begin_write().unwrap().is_some());
    drop(r);
}

/// The file pager's cache must never serve stale bytes: run a mixed workload with many commits
/// (pages freed and reused, overflow values rewritten) and compare with a model after each commit
/// and after reopening the file (cold cache), with a small cache budget that forces clears.
#[test]
fn file_pager_cache_stays_coherent() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.kv");
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut rng = XorShift64::new(99);
    for budget in [1usize << 30, 200_000] {
        let pager = kvdb::FilePager::open(&path)
            .unwrap()
            .without_sync()
            .with_cache_budget(budget);
        let db = if model.is_empty() {
            Db::create(pager, Options { page_size: 1024 }).unwrap()
        } else {
            Db::open(pager).unwrap()
        };
        for _ in 0..40 {
            let tx = db.begin_write().unwrap();
            let b = tx.get_or_create_bucket(b"b").unwrap();
            for _ in 0..60 {
                let k = format!("k{:03}", rng.below(300)).into_bytes();
                if rng.below(4) == 0 {
                    b.delete(&k).unwrap();
                    model.remove(&k);
                } else {
                    let len = [10, 150, 1500, 5000][rng.below(4) as usize];
                    let v = vec![rng.below(256) as u8; len];
                    b.put(&k, &v).unwrap();
                    model.insert(k, v);
                }
            }
            tx.commit().unwrap();
            let tx = db.begin_read().unwrap();
            let b = tx.get_bucket(b"b").unwrap();
            for (k, v) in &model {
                assert_eq!(&*b.get(k).unwrap().unwrap(), &v[..]);
            }
        }
    }
    let db = Db::open(kvdb::FilePager::open(&path).unwrap()).unwrap();
    let expected: common::Model = [(
        b"b".to_vec(),
        Item::Bucket(
            model
                .into_iter()
                .map(|(k, v)| (k, Item::Value(v)))
                .collect(),
        ),
    )]
    .into();
    assert_eq!(dump(&db).unwrap(), expected);
}

#[test]
fn delete_range_removes_a_range_and_frees_its_pages() {
    let db = mem_db();
    let big = vec![7u8; 3 * 4096];
    {
        let tx = db.begin_write().unwrap();
        let b = tx.create_bucket(b"b").unwrap();
        for i in 0u32..500 {
            let v: &[u8] = if i % 50 == 0 { &big } else { b"small" };
            b.put(&i.to_be_bytes(), v).unwrap();
        }
        b.create_bucket(b"\xff-nested").unwrap();
        tx.commit().unwrap();
    }
    let pages_before = db.stats().page_count;
    let db = reopen(db);
    {
        let tx = db.begin_write().unwrap();
        let b = tx.get_bucket(b"b").unwrap();
        // An empty range changes nothing; the removed values' lengths come in key order.
        assert_eq!(
            b.delete_range(&7u32.to_be_bytes(), Some(&7u32.to_be_bytes()))
                .unwrap(),
            Vec::<u64>::new()
        );
        let lens = b
            .delete_range(&40u32.to_be_bytes(), Some(&460u32.to_be_bytes()))
            .unwrap();
        assert_eq!(lens.len(), 420);
        assert_eq!(lens[10], big.len() as u64); // key 50
        assert_eq!(lens[0], 5);
        assert_eq!(
            b.get(&39u32.to_be_bytes()).unwrap().as_deref(),
            Some(&b"small"[..])
        );
        assert!(b.get(&40u32.to_be_bytes()).unwrap().is_none());
        assert!(b.get(&459u32.to_be_bytes()).unwrap().is_none());
        assert_eq!(
            b.get(&460u32.to_be_bytes()).unwrap().as_deref(),
            Some(&b"small"[..])
        );
        tx.commit().unwrap();
    }
    let db = reopen(db);
    let tx = db.begin_write().unwrap();
    let b = tx.get_bucket(b"b").unwrap();
    let mut c = b.cursor();
    let mut keys = Vec::new();
    let mut e = c.first().unwrap();
    while let Some(x) = e {
        keys.push(x.key().to_vec());
        e = c.next().unwrap();
    }
    assert_eq!(keys.len(), 40 + 40 + 1);
    // The freed pages are reused: writing the 8 big values (24 pages) again barely grows
    // the store.
    for i in (50u32..450).step_by(50) {
        b.put(&i.to_be_bytes(), &big).unwrap();
    }
    tx.commit().unwrap();
    assert!(db.stats().page_count <= pages_before + 8);
    // A nested bucket in the range is refused.
    let tx = db.begin_write().unwrap();
    let b = tx.get_bucket(b"b").unwrap();
    assert_eq!(b.delete_range(b"\xff", None), Err(Error::IncompatibleValue));
}

/// A range that covers whole subtrees (here leaves and a branch of a three-level tree, all
/// clean after a reopen) frees them without decoding them into nodes: the values still come
/// back in key order, what is left reads back, and no page of the dropped subtrees leaks (the
/// store then uses about as many pages as one built with the kept keys only).
#[test]
fn delete_range_over_whole_subtrees_frees_every_page() {
    const N: u32 = 120_000;
    let big = vec![9u8; 2 * 4096];
    let value = |i: u32| -> Vec<u8> {
        if i.is_multiple_of(1000) {
            big.clone()
        } else {
            u64::from(i).to_le_bytes().to_vec()
        }
    };
    let kept = |i: u32| !(5_000..115_000).contains(&i);
    let build = |keys: &mut dyn Iterator<Item = u32>| {
        let db = mem_db();
        let tx = db.begin_write().unwrap();
        let b = tx.create_bucket(b"b").unwrap();
        for i in keys {
            b.put(&i.to_be_bytes(), &value(i)).unwrap();
        }
        tx.commit().unwrap();
        reopen(db)
    };
    let used = |db: &Db<MemPager>| {
        let s = db.stats();
        s.page_count - s.free_pages.unwrap()
    };
    let db = build(&mut (0..N));
    let full = used(&db);
    {
        let tx = db.begin_write().unwrap();
        let b = tx.get_bucket(b"b").unwrap();
        let lens = b
            .delete_range(&5_000u32.to_be_bytes(), Some(&115_000u32.to_be_bytes()))
            .unwrap();
        let expected: Vec<u64> = (5_000..115_000).map(|i| value(i).len() as u64).collect();
        assert_eq!(lens, expected);
        tx.commit().unwrap();
    }
    let db = reopen(db);
    {
        let tx = db.begin_read().unwrap();
        let b = tx.get_bucket(b"b").unwrap();
        let mut c = b.cursor();
        let mut e = c.first().unwrap();
        let mut want = (0..N).filter(|&i| kept(i));
        while let Some(x) = e {
            let i = want.next().expect("a key that was deleted");
            assert_eq!(x.key(), &i.to_be_bytes()[..]);
            assert_eq!(b.get(x.key()).unwrap().as_deref(), Some(&value(i)[..]));
            e = c.next().unwrap();
        }
        assert_eq!(want.next(), None, "a kept key is missing");
    }
    let left = used(&db);
    let only_kept = used(&build(&mut (0..N).filter(|&i| kept(i))));
    assert!(
        left <= only_kept * 2 + 8,
        "{left} pages in use after the delete, {only_kept} for the kept keys alone, {full} before"
    );
    // Deleting the rest leaves exactly the pages of an empty bucket: none leaked.
    {
        let tx = db.begin_write().unwrap();
        let b = tx.get_bucket(b"b").unwrap();
        assert_eq!(b.delete_range(&[], None).unwrap().len(), 10_000);
        tx.commit().unwrap();
    }
    let db = reopen(db);
    assert_eq!(
        used(&db),
        used(&build(&mut (0..0))),
        "pages in use once all is deleted"
    );
}

/// Every entry of a scan with `next` and with `next_borrowed`, as (key, value or None).
fn scan_both(b: &kvdb::Bucket<'_, '_, MemPager>) -> (Vec<Pair>, Vec<Pair>) {
    let mut owned = Vec::new();
    let mut c = b.cursor();
    let mut e = c.next().unwrap();
    while let Some(entry) = e {
        owned.push((entry.key().to_vec(), entry.value().map(<[u8]>::to_vec)));
        e = c.next().unwrap();
    }
    let mut lent = Vec::new();
    let mut c = b.cursor();
    while let Some(entry) = c.next_borrowed().unwrap() {
        lent.push((entry.key().to_vec(), entry.value().map(<[u8]>::to_vec)));
    }
    (owned, lent)
}

type Pair = (Vec<u8>, Option<Vec<u8>>);

#[test]
fn next_borrowed_scans_what_next_scans() {
    // Inline values over many leaves, overflow values and a nested bucket among them, read in
    // a read transaction (lent from the leaf) and in a write transaction that changed some.
    let db = mem_db();
    let tx = db.begin_write().unwrap();
    let b = tx.create_bucket(b"b").unwrap();
    let mut model: Vec<Pair> = Vec::new();
    for i in 0u32..3000 {
        let k = i.to_be_bytes().to_vec();
        let v = if i % 500 == 7 {
            vec![(i % 251) as u8; 9000]
        } else {
            vec![(i % 251) as u8; (i % 90) as usize]
        };
        if i == 1234 {
            b.create_bucket(&k).unwrap();
            model.push((k, None));
            continue;
        }
        b.put(&k, &v).unwrap();
        model.push((k, Some(v)));
    }
    tx.commit().unwrap();
    let tx = db.begin_read().unwrap();
    let (owned, lent) = scan_both(&tx.get_bucket(b"b").unwrap());
    assert_eq!(owned, model);
    assert_eq!(lent, model);
    drop(tx);
    let tx = db.begin_write().unwrap();
    let b = tx.get_bucket(b"b").unwrap();
    b.put(&5u32.to_be_bytes(), b"changed").unwrap();
    model[5].1 = Some(b"changed".to_vec());
    let (owned, lent) = scan_both(&b);
    assert_eq!(owned, model);
    assert_eq!(lent, model);
}
