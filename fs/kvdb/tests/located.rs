//! `Cursor::locate_overflow_values`: a cursor told only to locate overflow values does not
//! read their pages; the locations it gives hold the values' bytes; inline values, nested
//! buckets and values of the open write transaction come as before.

use std::sync::Mutex;

use kvdb::{Db, MemPager, Options, Pager};

/// A MemPager that records every range `read` was asked for.
#[derive(Default)]
struct Recording {
    inner: MemPager,
    reads: Mutex<Vec<(u64, usize)>>,
}

impl Pager for Recording {
    type Page<'a> = <MemPager as Pager>::Page<'a>;

    fn read(&self, offset: u64, len: usize) -> kvdb::Result<Self::Page<'_>> {
        self.reads.lock().unwrap().push((offset, len));
        self.inner.read(offset, len)
    }
    fn write(&self, writes: &[(u64, &[u8])]) -> kvdb::Result<()> {
        self.inner.write(writes)
    }
    fn sync(&self) -> kvdb::Result<()> {
        self.inner.sync()
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
}

fn bytes(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(29).wrapping_add(seed))
        .collect()
}

#[test]
fn located_values_are_not_read_and_their_locations_hold_them() {
    let db = Db::create(Recording::default(), Options::default()).unwrap();
    let values: Vec<(Vec<u8>, Vec<u8>)> = (0..40u32)
        .map(|k| {
            // Every third value is small (stored in the leaf), the others one to three pages.
            let len = if k % 3 == 0 {
                50
            } else {
                4096 * (1 + k as usize % 3) - 7 * (k as usize % 2)
            };
            (format!("k{k:03}").into_bytes(), bytes(len, k as u8))
        })
        .collect();
    let tx = db.begin_write().unwrap();
    let b = tx.create_bucket(b"data").unwrap();
    for (k, v) in &values {
        b.put(k, v).unwrap();
    }
    b.create_bucket(b"nested").unwrap();
    tx.commit().unwrap();

    let tx = db.begin_read().unwrap();
    let b = tx.get_bucket(b"data").unwrap();
    let mut cursor = b.cursor();
    cursor.locate_overflow_values(true);
    db.pager().reads.lock().unwrap().clear();
    let mut seen = 0;
    let mut located = Vec::new();
    let mut entry = cursor.first().unwrap();
    while let Some(e) = entry {
        if e.key() == b"nested" {
            assert!(e.is_bucket());
            assert_eq!(e.value_len(), None);
        } else {
            let (k, v) = &values[seen];
            assert_eq!(e.key(), k.as_slice());
            assert!(!e.is_bucket());
            assert_eq!(e.value_len(), Some(v.len() as u64));
            match e.value() {
                Some(got) => {
                    assert!(v.len() < 4096, "a large value was read");
                    assert_eq!(got, v.as_slice());
                }
                None => {
                    let (at, len) = e.overflow_location().expect("located without a location");
                    assert_eq!(len, v.len() as u64);
                    located.push((at, seen));
                }
            }
            seen += 1;
        }
        entry = cursor.next().unwrap();
    }
    assert_eq!(seen, values.len());
    assert_eq!(
        located.len(),
        values.iter().filter(|(_, v)| v.len() >= 4096).count()
    );
    // The walk read tree pages only: no range it read starts at a located value.
    for (off, _) in db.pager().reads.lock().unwrap().iter() {
        assert!(
            located.iter().all(|(at, _)| at != off),
            "value at {off} was read"
        );
    }
    for (at, i) in located {
        let v = &values[i].1;
        let mut buf = vec![0u8; v.len()];
        db.pager().read_into(at, &mut buf).unwrap();
        assert_eq!(&buf, v);
    }
    // A seek lands on a located value too, and turning the mode off reads values again.
    let e = cursor.seek(b"k001").unwrap().unwrap();
    assert_eq!(e.value(), None);
    cursor.locate_overflow_values(false);
    let e = cursor.seek(b"k001").unwrap().unwrap();
    assert_eq!(e.value(), Some(values[1].1.as_slice()));
    drop(cursor);
    drop(tx);

    // In a write transaction, values it wrote come with their bytes (they have no location).
    let tx = db.begin_write().unwrap();
    let b = tx.get_bucket(b"data").unwrap();
    let fresh = bytes(3 * 4096, 99);
    b.put(b"k001", &fresh).unwrap();
    let mut cursor = b.cursor();
    cursor.locate_overflow_values(true);
    let e = cursor.seek(b"k001").unwrap().unwrap();
    assert_eq!(e.value(), Some(fresh.as_slice()));
    assert_eq!(e.overflow_location(), None);
    assert_eq!(e.value_len(), Some(fresh.len() as u64));
}
