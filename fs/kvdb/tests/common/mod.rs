//! Helpers shared by the integration tests: a model of a store's full contents.
#![allow(dead_code)]

use std::collections::BTreeMap;

use kvdb::{Bucket, Db, Pager, Result};

/// A store's contents: top-level buckets, each a map of keys to values or nested buckets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Item {
    Value(Vec<u8>),
    Bucket(BTreeMap<Vec<u8>, Item>),
}

pub type Model = BTreeMap<Vec<u8>, Item>;

fn dump_bucket<P: Pager>(b: &Bucket<'_, '_, P>) -> Result<Model> {
    let mut out = BTreeMap::new();
    let mut c = b.cursor();
    let mut e = c.first()?;
    while let Some(entry) = e {
        let key = entry.key().to_vec();
        let item = match entry.value() {
            Some(v) => Item::Value(v.to_vec()),
            None => Item::Bucket(dump_bucket(&b.get_bucket(&key)?)?),
        };
        assert!(
            out.insert(key, item).is_none(),
            "cursor returned a key twice"
        );
        e = c.next()?;
    }
    Ok(out)
}

/// Everything in the store, read through cursors in a fresh read transaction; also checks that
/// walking backwards yields the same keys and that `get` agrees with the cursor.
pub fn dump<P: Pager>(db: &Db<P>) -> Result<Model> {
    let tx = db.begin_read()?;
    let mut out = BTreeMap::new();
    let mut c = tx.buckets();
    let mut e = c.first()?;
    while let Some(entry) = e {
        let key = entry.key().to_vec();
        let b = tx.get_bucket(&key)?;
        out.insert(key, Item::Bucket(dump_bucket(&b)?));
        e = c.next()?;
    }
    Ok(out)
}

/// Walk every bucket in both directions and with `get`, returning any error (for corrupt images).
pub fn walk_all<P: Pager>(db: &Db<P>) -> Result<usize> {
    let tx = db.begin_read()?;
    let mut n = 0;
    let mut names = Vec::new();
    let mut c = tx.buckets();
    let mut e = c.first()?;
    while let Some(entry) = e {
        names.push(entry.key().to_vec());
        e = c.next()?;
        n += 1;
        if n > 1_000_000 {
            break;
        }
    }
    let mut c = tx.buckets();
    let mut e = c.last()?;
    while e.is_some() && n < 2_000_000 {
        e = c.prev()?;
        n += 1;
    }
    for name in names {
        let b = tx.get_bucket(&name)?;
        n += walk_bucket(&b, 0)?;
    }
    Ok(n)
}

fn walk_bucket<P: Pager>(b: &Bucket<'_, '_, P>, depth: usize) -> Result<usize> {
    if depth > 8 {
        return Ok(0);
    }
    let mut n = 0;
    let mut c = b.cursor();
    let mut e = c.first()?;
    let mut nested = Vec::new();
    while let Some(entry) = e {
        if entry.is_bucket() {
            nested.push(entry.key().to_vec());
        } else {
            let _ = b.get(entry.key())?;
        }
        n += 1;
        if n > 100_000 {
            break;
        }
        e = c.next()?;
    }
    let _ = c.seek(b"m")?;
    let _ = c.prev()?;
    for name in nested {
        n += walk_bucket(&b.get_bucket(&name)?, depth + 1)?;
    }
    Ok(n)
}

/// The tests' seeded PRNG (the tree's one: `fs/xrand`).
pub use xrand::XorShift64;

/// One random batch of edits to `b`, valued `t`: `ops` deletes and puts of keys `k0000` up to
/// `keys`, 3 in 10 deletes, 1 in 10 a large value (`big_min` plus up to `big_extra` bytes,
/// stored in overflow pages), the rest small ones (up to `small` bytes).
pub fn random_edits<P: Pager>(
    b: &Bucket<'_, '_, P>,
    rng: &mut XorShift64,
    t: u32,
    ops: u64,
    keys: u64,
    (big_min, big_extra): (usize, u64),
    small: u64,
) {
    for _ in 0..ops {
        let k = format!("k{:04}", rng.below(keys)).into_bytes();
        match rng.below(10) {
            0..=2 => {
                b.delete(&k).unwrap();
            }
            3 => b
                .put(&k, &vec![t as u8; big_min + rng.below(big_extra) as usize])
                .unwrap(),
            _ => b
                .put(&k, &vec![t as u8; rng.below(small) as usize])
                .unwrap(),
        }
    }
}
