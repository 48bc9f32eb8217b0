//! `Bucket::put_direct_gathered`: values given as pieces (the pages of a user buffer) are
//! stored exactly like the joined bytes, and the whole pages of a value go to the pager
//! straight from its pieces unless a piece other than its first and last is not whole pages.

use std::sync::Mutex;

use kvdb::{Db, MemPager, Options, Pager};

/// A MemPager that records, for each `write_direct` call, the addresses of the slices it got.
#[derive(Default)]
struct Recording {
    inner: MemPager,
    direct: Mutex<Vec<(u64, usize, usize)>>,
}

impl Pager for Recording {
    type Page<'a> = <MemPager as Pager>::Page<'a>;

    fn read(&self, offset: u64, len: usize) -> kvdb::Result<Self::Page<'_>> {
        self.inner.read(offset, len)
    }
    fn write(&self, writes: &[(u64, &[u8])]) -> kvdb::Result<()> {
        self.inner.write(writes)
    }
    fn write_direct(&self, writes: &[(u64, &[u8])]) -> kvdb::Result<()> {
        let mut log = self.direct.lock().unwrap();
        assert!(
            kvdb::direct_writes_well_formed(writes, 4096),
            "direct writes of a shape the contract rules out"
        );
        for &(off, bytes) in writes {
            log.push((off, bytes.as_ptr() as usize, bytes.len()));
        }
        self.inner.write(writes)
    }
    fn direct_writes(&self) -> bool {
        true
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
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

#[test]
fn gathered_values_read_back_joined_and_aligned_pages_go_direct() {
    let db = Db::create(Recording::default(), Options::default()).unwrap();
    let a = bytes(4 * 4096, 1); // four page pieces: all direct
    let b = bytes(3 * 4096 + 100, 2); // pieces 4096, 8192, 100: two direct pieces and a tail
    let c = bytes(2 * 4096, 3); // pieces 1000, 7192 (a buffer off a page): direct
    let d = bytes(300, 4); // small: stored in the leaf
    let e = bytes(2 * 4096, 5); // pieces 1000, 1000, 6192: a partial one inside, joined
    let a_pieces: Vec<&[u8]> = a.chunks(4096).collect();
    let b_pieces: Vec<&[u8]> = vec![&b[..4096], &b[4096..3 * 4096], &b[3 * 4096..]];
    let c_pieces: Vec<&[u8]> = vec![&c[..1000], &c[1000..]];
    let d_pieces: Vec<&[u8]> = vec![&d[..7], &d[7..]];
    let e_pieces: Vec<&[u8]> = vec![&e[..1000], &e[1000..2000], &e[2000..]];
    {
        let tx = db.begin_write().unwrap();
        let bucket = tx.create_bucket(b"data").unwrap();
        let old = bucket
            .put_direct_gathered(&[
                (b"a", &a_pieces),
                (b"b", &b_pieces),
                (b"c", &c_pieces),
                (b"d", &d_pieces),
                (b"e", &e_pieces),
            ])
            .unwrap();
        assert_eq!(old, [None, None, None, None, None]);
        tx.commit().unwrap();
    }
    let log = db.pager().direct.lock().unwrap().clone();
    let from = |piece: &[u8]| {
        log.iter()
            .any(|&(_, addr, len)| addr == piece.as_ptr() as usize && len == piece.len())
    };
    for p in &a_pieces {
        assert!(from(p), "a page of `a` was not written from its piece");
    }
    assert!(
        from(b_pieces[0]) && from(b_pieces[1]),
        "the whole pages of `b` went through a copy"
    );
    assert!(
        from(c_pieces[0]) && from(c_pieces[1]),
        "the pieces of `c`, a buffer off a page, went through a copy"
    );
    assert!(
        !log.iter().any(|&(_, addr, _)| addr == e.as_ptr() as usize),
        "`e`'s partial middle piece went direct"
    );
    let direct_bytes: usize = log.iter().map(|e| e.2).sum();
    assert_eq!(
        direct_bytes,
        4 * 4096 + 3 * 4096 + 2 * 4096 + 2 * 4096,
        "joined pages of `e` go direct too"
    );

    let tx = db.begin_read().unwrap();
    let bucket = tx.get_bucket(b"data").unwrap();
    for (key, want) in [
        (&b"a"[..], &a),
        (b"b", &b),
        (b"c", &c),
        (b"d", &d),
        (b"e", &e),
    ] {
        assert_eq!(
            bucket.get(key).unwrap().as_deref(),
            Some(want.as_slice()),
            "{:?}",
            key
        );
    }
    drop(tx);

    // Replacing returns the old lengths, and the reopened store has the new values.
    {
        let tx = db.begin_write().unwrap();
        let bucket = tx.get_bucket(b"data").unwrap();
        let e = bytes(4096, 9);
        let halves: Vec<&[u8]> = vec![&e[..2048], &e[2048..]];
        let whole: Vec<&[u8]> = vec![&e[..]];
        let old = bucket
            .put_direct_gathered(&[(b"b", &halves), (b"z", &whole)])
            .unwrap();
        assert_eq!(old, [Some(b.len() as u64), None]);
        tx.commit().unwrap();
    }
    let image = db.into_pager().inner.image();
    let db = Db::open(MemPager::from_image(image)).unwrap();
    let tx = db.begin_read().unwrap();
    let bucket = tx.get_bucket(b"data").unwrap();
    assert_eq!(
        bucket.get(b"b").unwrap().as_deref(),
        Some(bytes(4096, 9).as_slice())
    );
    assert_eq!(bucket.get(b"a").unwrap().as_deref(), Some(a.as_slice()));
}

#[test]
fn direct_writes_well_formed_follows_the_contract() {
    let page = [0u8; 4096];
    let ok = |w: &[(u64, &[u8])]| kvdb::direct_writes_well_formed(w, 4096);
    // Whole pages; a buffer off a page (partial, whole, partial); two values back to back.
    assert!(ok(&[(0, &page), (8192, &page[..])]));
    assert!(ok(&[
        (0, &page[..1000]),
        (1000, &page),
        (5096, &page[..3096])
    ]));
    assert!(ok(&[
        (0, &page[..1000]),
        (1000, &page[..3096]),
        (4096, &page[..100]),
        (4196, &page[..3996])
    ]));
    assert!(ok(&[]));
    // A run that ends or starts inside a page, a partial page in the middle of a value,
    // pairs out of order or overlapping.
    assert!(!ok(&[(0, &page[..1000])]));
    assert!(!ok(&[(512, &page[..3584])]));
    assert!(!ok(&[
        (0, &page[..100]),
        (100, &page[..100]),
        (200, &page[..3896])
    ]));
    assert!(!ok(&[(4096, &page), (0, &page)]));
    assert!(!ok(&[(0, &page), (2048, &page[..2048]), (4096, &page)]));
}
