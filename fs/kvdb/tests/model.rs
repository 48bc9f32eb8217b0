//! Property tests: random operation sequences (puts, deletes, nested buckets, cursors, commits,
//! rollbacks, reopen) compared step by step with a `BTreeMap` model.

mod common;

use std::collections::BTreeMap;

use common::{dump, Item, Model};
use kvdb::{Bucket, Db, Error, MemPager, Options};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Put {
        bucket: u8,
        nested: bool,
        key: u16,
        len: u16,
    },
    Delete {
        bucket: u8,
        nested: bool,
        key: u16,
    },
    DeleteRange {
        bucket: u8,
        from: u16,
        count: u16,
    },
    /// `Bucket::delete_range(key(from), key(from + span))`.
    DeleteRangeBulk {
        bucket: u8,
        from: u16,
        span: u16,
    },
    CreateNested {
        bucket: u8,
    },
    DeleteNested {
        bucket: u8,
    },
    DeleteBucket {
        bucket: u8,
    },
    Seek {
        bucket: u8,
        key: u16,
        back: u8,
    },
    Commit,
    Rollback,
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        30 => (0u8..3, any::<bool>(), 0u16..600, prop_oneof![0u16..40, 0u16..700, 600u16..9000])
            .prop_map(|(bucket, nested, key, len)| Op::Put { bucket, nested, key, len }),
        10 => (0u8..3, any::<bool>(), 0u16..600).prop_map(|(bucket, nested, key)| Op::Delete { bucket, nested, key }),
        3 => (0u8..3, 0u16..600, 0u16..300).prop_map(|(bucket, from, count)| Op::DeleteRange { bucket, from, count }),
        3 => (0u8..3, 0u16..600, 0u16..300).prop_map(|(bucket, from, span)| Op::DeleteRangeBulk { bucket, from, span }),
        2 => (0u8..3).prop_map(|bucket| Op::CreateNested { bucket }),
        1 => (0u8..3).prop_map(|bucket| Op::DeleteNested { bucket }),
        1 => (0u8..3).prop_map(|bucket| Op::DeleteBucket { bucket }),
        4 => (0u8..3, 0u16..650, 0u8..5).prop_map(|(bucket, key, back)| Op::Seek { bucket, key, back }),
        4 => Just(Op::Commit),
        1 => Just(Op::Rollback),
        1 => Just(Op::Reopen),
    ]
}

fn key(k: u16) -> Vec<u8> {
    // Long-ish keys so nodes split and merge with few entries.
    let mut v = format!("key-{k:05}-").into_bytes();
    v.resize(20 + (k as usize % 40), b'.');
    v
}

fn value(k: u16, len: u16, salt: u32) -> Vec<u8> {
    (0..len as u32)
        .map(|i| (i.wrapping_mul(31).wrapping_add(k as u32).wrapping_add(salt)) as u8)
        .collect()
}

fn bucket_name(b: u8) -> Vec<u8> {
    vec![b'B', b'0' + b]
}

const NESTED: &[u8] = b"nested";

/// Model map for a top-level bucket (or its nested bucket), creating the top-level one on demand.
fn model_map(m: &mut Model, b: u8, nested: bool) -> Option<&mut BTreeMap<Vec<u8>, Item>> {
    let Item::Bucket(top) = m
        .entry(bucket_name(b))
        .or_insert_with(|| Item::Bucket(BTreeMap::new()))
    else {
        unreachable!()
    };
    if !nested {
        return Some(top);
    }
    match top.get_mut(NESTED) {
        Some(Item::Bucket(n)) => Some(n),
        _ => None,
    }
}

fn open<'tx, 'db>(
    tx: &'tx kvdb::Tx<'db, MemPager>,
    b: u8,
    nested: bool,
) -> Option<Bucket<'tx, 'db, MemPager>> {
    let top = tx.get_or_create_bucket(&bucket_name(b)).unwrap();
    if !nested {
        return Some(top);
    }
    match top.get_bucket(NESTED) {
        Ok(n) => Some(n),
        Err(Error::BucketNotFound) => None,
        Err(e) => panic!("{e:?}"),
    }
}

fn run(ops: Vec<Op>, page_size: usize) {
    let mut db = Db::create(MemPager::new(), Options { page_size }).unwrap();
    let mut committed: Model = BTreeMap::new();
    let mut salt = 0u32;
    let mut i = 0;
    while i < ops.len() {
        // One write transaction runs until a Commit / Rollback / Reopen op.
        let mut working = committed.clone();
        let tx = db.begin_write().unwrap();
        let mut end = None;
        while i < ops.len() {
            let o = ops[i].clone();
            i += 1;
            salt += 1;
            match o {
                Op::Put {
                    bucket,
                    nested,
                    key: k,
                    len,
                } => {
                    let v = value(k, len, salt);
                    let Some(b) = open(&tx, bucket, nested) else {
                        model_map(&mut working, bucket, false);
                        continue;
                    };
                    b.put(&key(k), &v).unwrap();
                    model_map(&mut working, bucket, nested)
                        .unwrap()
                        .insert(key(k), Item::Value(v));
                }
                Op::Delete {
                    bucket,
                    nested,
                    key: k,
                } => {
                    let Some(b) = open(&tx, bucket, nested) else {
                        model_map(&mut working, bucket, false);
                        continue;
                    };
                    let existed = model_map(&mut working, bucket, nested)
                        .unwrap()
                        .remove(&key(k))
                        .is_some();
                    assert_eq!(b.delete(&key(k)).unwrap(), existed);
                }
                Op::DeleteRange {
                    bucket,
                    from,
                    count,
                } => {
                    let b = open(&tx, bucket, false).unwrap();
                    let m = model_map(&mut working, bucket, false).unwrap();
                    let doomed: Vec<Vec<u8>> = m
                        .range(key(from)..)
                        .filter(|(_, v)| matches!(v, Item::Value(_)))
                        .take(count as usize)
                        .map(|(k, _)| k.clone())
                        .collect();
                    for k in doomed {
                        m.remove(&k);
                        assert!(b.delete(&k).unwrap());
                    }
                }
                Op::DeleteRangeBulk { bucket, from, span } => {
                    let b = open(&tx, bucket, false).unwrap();
                    let m = model_map(&mut working, bucket, false).unwrap();
                    let (start, end) = (key(from), key(from.saturating_add(span)));
                    // Keys sort before the nested bucket's name: no bucket is in the range.
                    let doomed: Vec<(Vec<u8>, u64)> = m
                        .range(start.clone()..end.clone())
                        .map(|(k, v)| match v {
                            Item::Value(v) => (k.clone(), v.len() as u64),
                            Item::Bucket(_) => panic!("a bucket in the range"),
                        })
                        .collect();
                    for (k, _) in &doomed {
                        m.remove(k);
                    }
                    let lens: Vec<u64> = doomed.iter().map(|(_, n)| *n).collect();
                    assert_eq!(b.delete_range(&start, Some(&end)).unwrap(), lens);
                }
                Op::CreateNested { bucket } => {
                    let b = open(&tx, bucket, false).unwrap();
                    let m = model_map(&mut working, bucket, false).unwrap();
                    let r = b.create_bucket(NESTED);
                    if m.contains_key(NESTED) {
                        assert_eq!(r.err(), Some(Error::BucketExists));
                    } else {
                        r.unwrap();
                        m.insert(NESTED.to_vec(), Item::Bucket(BTreeMap::new()));
                    }
                }
                Op::DeleteNested { bucket } => {
                    let b = open(&tx, bucket, false).unwrap();
                    let m = model_map(&mut working, bucket, false).unwrap();
                    let r = b.delete_bucket(NESTED);
                    if m.remove(NESTED).is_some() {
                        r.unwrap();
                    } else {
                        assert_eq!(r, Err(Error::BucketNotFound));
                    }
                }
                Op::DeleteBucket { bucket } => {
                    let r = tx.delete_bucket(&bucket_name(bucket));
                    if working.remove(&bucket_name(bucket)).is_some() {
                        r.unwrap();
                    } else {
                        assert_eq!(r, Err(Error::BucketNotFound));
                    }
                }
                Op::Seek {
                    bucket,
                    key: k,
                    back,
                } => {
                    let b = open(&tx, bucket, false).unwrap();
                    let m = model_map(&mut working, bucket, false).unwrap();
                    let mut c = b.cursor();
                    let got = c
                        .seek(&key(k))
                        .unwrap()
                        .map(|e| (e.key().to_vec(), e.value().map(<[u8]>::to_vec)));
                    let want = m
                        .range(key(k)..)
                        .next()
                        .map(|(k, v)| (k.clone(), item_value(v)));
                    assert_eq!(got, want);
                    // Walk a few steps back from there (from the end if the seek ran off it).
                    let mut expect = m.range(..key(k)).rev();
                    for _ in 0..back {
                        let got = c.prev().unwrap().map(|e| e.key().to_vec());
                        let want = if got.is_some() || want.is_some() {
                            expect.next().map(|(k, _)| k.clone())
                        } else {
                            None
                        };
                        if want.is_none() && got.is_none() {
                            break;
                        }
                        assert_eq!(got, want);
                    }
                }
                Op::Commit | Op::Rollback | Op::Reopen => {
                    end = Some(o);
                    break;
                }
            }
        }
        match end {
            Some(Op::Rollback) => drop(tx),
            _ => {
                tx.commit().unwrap();
                committed = working;
            }
        }
        assert_eq!(dump(&db).unwrap(), committed);
        if let Some(Op::Reopen) = end {
            db = Db::open(MemPager::from_image(db.into_pager().image())).unwrap();
            assert_eq!(dump(&db).unwrap(), committed);
        }
    }
}

fn item_value(v: &Item) -> Option<Vec<u8>> {
    match v {
        Item::Value(v) => Some(v.clone()),
        Item::Bucket(_) => None,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn matches_btreemap_4k(ops in proptest::collection::vec(op(), 1..400)) {
        run(ops, 4096);
    }

    #[test]
    fn matches_btreemap_1k(ops in proptest::collection::vec(op(), 1..400)) {
        run(ops, 1024);
    }
}
