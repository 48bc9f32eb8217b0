//! Open arbitrary bytes as a kvdb image, walk every bucket (forwards, backwards, get, seek), then
//! run a small write transaction on it. Errors are fine; panics, hangs and overflows are bugs.
#![no_main]

use kvdb::{Bucket, Db, MemPager, Pager, SlicePager};
use libfuzzer_sys::fuzz_target;

fn walk<P: Pager>(b: &Bucket<'_, '_, P>, depth: usize) -> kvdb::Result<()> {
    let mut c = b.cursor();
    let mut e = c.first()?;
    let mut nested = Vec::new();
    let mut n = 0;
    while let Some(entry) = e {
        if entry.is_bucket() {
            nested.push(entry.key().to_vec());
        } else {
            b.get(entry.key())?;
        }
        n += 1;
        if n > 10_000 {
            break;
        }
        e = c.next()?;
    }
    let mut e = c.last()?;
    while e.is_some() && n < 20_000 {
        e = c.prev()?;
        n += 1;
    }
    c.seek(b"k")?;
    if depth < 4 {
        for name in nested {
            walk(&b.get_bucket(&name)?, depth + 1)?;
        }
    }
    Ok(())
}

fn all<P: Pager>(db: &Db<P>) -> kvdb::Result<()> {
    let tx = db.begin_read()?;
    let mut c = tx.buckets();
    let mut e = c.first()?;
    let mut names = Vec::new();
    while let Some(entry) = e {
        names.push(entry.key().to_vec());
        if names.len() > 1000 {
            break;
        }
        e = c.next()?;
    }
    for name in names {
        walk(&tx.get_bucket(&name)?, 0)?;
    }
    Ok(())
}

fn write<P: Pager>(db: &Db<P>) -> kvdb::Result<()> {
    let tx = db.begin_write()?;
    let b = tx.get_or_create_bucket(b"b")?;
    b.put(b"k", b"v")?;
    b.put(b"big", &[7u8; 3000])?;
    b.delete(b"x")?;
    tx.commit()?;
    all(db)
}

fuzz_target!(|data: &[u8]| {
    if let Ok(db) = Db::open(SlicePager(data)) {
        let _ = all(&db);
    }
    if let Ok(db) = Db::open(MemPager::from_image(data.to_vec()).with_capacity_limit(1 << 22)) {
        let _ = write(&db);
    }
});
