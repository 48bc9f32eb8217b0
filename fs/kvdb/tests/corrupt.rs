//! Corrupt and truncated images: opening, reading and writing them returns errors, never panics.
//! A seeded mutation fuzzer that always runs (the cargo-fuzz target in fuzz/ explores further).

mod common;

use common::{walk_all, XorShift64};
use kvdb::page::Meta;
use kvdb::{Db, Error, MemPager, Options, SlicePager};

fn sample_image(page_size: usize) -> Vec<u8> {
    let db = Db::create(MemPager::new(), Options { page_size }).unwrap();
    for t in 0..4u32 {
        let tx = db.begin_write().unwrap();
        let b = tx
            .get_or_create_bucket(format!("bucket{}", t % 2).as_bytes())
            .unwrap();
        for i in 0..300u32 {
            b.put(
                format!("key{:05}", i * 7 + t).as_bytes(),
                &vec![i as u8; (i % 90) as usize],
            )
            .unwrap();
        }
        b.put(b"big", &vec![t as u8; 3 * page_size + 17]).unwrap();
        let n = b.get_or_create_bucket(b"nested").unwrap();
        n.put(b"x", b"y").unwrap();
        for i in 0..(t * 40) {
            b.delete(format!("key{:05}", i * 7).as_bytes()).unwrap();
        }
        tx.commit().unwrap();
    }
    db.into_pager().image()
}

/// Open, walk everything, then try a write transaction. Any `Err` is fine; a panic fails the test.
fn exercise(image: Vec<u8>) -> Result<usize, Error> {
    {
        let db = Db::open(SlicePager(&image))?;
        walk_all(&db)?;
    }
    let db = Db::open(MemPager::from_image(image))?;
    let n = walk_all(&db)?;
    let tx = db.begin_write()?;
    let b = tx.get_or_create_bucket(b"bucket0")?;
    for i in 0..50u32 {
        b.put(format!("key{:05}", i * 3).as_bytes(), b"new")?;
        b.delete(format!("key{:05}", i * 5).as_bytes())?;
    }
    b.put(b"big", &[1u8; 5000])?;
    let _ = tx.delete_bucket(b"bucket1");
    tx.commit()?;
    walk_all(&db)?;
    Ok(n)
}

#[test]
fn truncated_images_are_errors() {
    let image = sample_image(4096);
    assert!(exercise(image.clone()).is_ok());
    for len in [
        0,
        1,
        79,
        80,
        4095,
        4096,
        4176,
        8191,
        8192,
        12288,
        image.len() / 2,
        image.len() - 1,
    ] {
        // Either an error, or (when the newest meta carries a commit record whose pages the
        // cut removed, as a disk that lost the last writes would) the previous barrier's state,
        // whole.
        let r = Db::open(MemPager::from_image(image[..len].to_vec())).map(|_| ());
        match r {
            Err(Error::Corrupted(_)) => {}
            Ok(()) => {
                assert!(len >= image.len() / 2, "len {len}: opened");
                assert!(
                    exercise(image[..len].to_vec()).is_ok(),
                    "len {len}: inconsistent"
                );
            }
            r => panic!("len {len}: {r:?}"),
        }
    }
    assert!(matches!(
        Db::open(MemPager::new()).err(),
        Some(Error::Corrupted(_))
    ));
    assert!(matches!(
        Db::open(MemPager::from_image(vec![0xff; 65536])).err(),
        Some(Error::Corrupted(_))
    ));
}

#[test]
fn one_bad_meta_falls_back_to_the_other() {
    let mut image = sample_image(4096);
    let newest = Db::open(MemPager::from_image(image.clone()))
        .unwrap()
        .stats()
        .txid;
    let slot = (newest % 2) as usize * 4096;
    image[slot + 20] ^= 0x40;
    let db = Db::open(MemPager::from_image(image.clone())).unwrap();
    assert_eq!(db.stats().txid, newest - 1);
    image[(1 - newest % 2) as usize * 4096 + 3] ^= 1;
    assert_eq!(
        Db::open(MemPager::from_image(image)).err(),
        Some(Error::Corrupted("no valid meta page"))
    );
}

fn mutate(rng: &mut XorShift64, image: &mut Vec<u8>, page_size: usize) {
    match rng.below(6) {
        // Scattered byte flips anywhere.
        0 | 1 => {
            for _ in 0..1 + rng.below(16) {
                let at = rng.below(image.len() as u64) as usize;
                image[at] ^= 1 << rng.below(8);
            }
        }
        // Small integers / boundary values written into a node page's header or slots.
        2 => {
            let page = 2 + rng.below((image.len() / page_size - 2) as u64) as usize;
            let at = page * page_size + rng.below(256) as usize;
            let v: u32 = [
                0,
                1,
                2,
                0xffff,
                0xffff_ffff,
                page_size as u32,
                rng.next_u64() as u32,
            ][rng.below(7) as usize];
            image[at..at + 4].copy_from_slice(&v.to_le_bytes());
        }
        // A whole page of garbage.
        3 => {
            let page = rng.below((image.len() / page_size) as u64) as usize;
            for b in &mut image[page * page_size..(page + 1) * page_size] {
                *b = rng.next_u64() as u8;
            }
        }
        // Meta fields changed with a fixed-up checksum, so the damage gets past the checksum.
        4 => {
            for slot in 0..2 {
                let at = slot * page_size;
                let Ok(mut m) = Meta::decode(&image[at..at + 80]) else {
                    continue;
                };
                match rng.below(5) {
                    0 => m.root = rng.below(image.len() as u64 / page_size as u64 + 2),
                    1 => m.freelist = rng.below(image.len() as u64 / page_size as u64 + 2),
                    2 => m.freelist_pages = rng.below(4),
                    3 => m.page_count = rng.below(image.len() as u64 / page_size as u64 + 3),
                    _ => m.root_seq = rng.next_u64(),
                }
                m.encode(&mut image[at..at + page_size]);
            }
        }
        // Truncation.
        _ => {
            let len = rng.below(image.len() as u64) as usize;
            image.truncate(len);
        }
    }
}

#[test]
fn mutated_images_never_panic() {
    for (page_size, seed, rounds) in [(4096usize, 0xC0FFEEu64, 2500), (1024, 0xBADC0DE, 1500)] {
        let clean = sample_image(page_size);
        let mut rng = XorShift64::new(seed);
        let (mut opened, mut errors) = (0, 0);
        for _ in 0..rounds {
            let mut image = clean.clone();
            for _ in 0..1 + rng.below(3) {
                if image.len() > 2 * page_size {
                    mutate(&mut rng, &mut image, page_size);
                }
            }
            match exercise(image) {
                Ok(_) => opened += 1,
                Err(_) => errors += 1,
            }
        }
        // Both outcomes must occur, or the mutations are not reaching anything.
        assert!(
            opened > 50 && errors > 50,
            "page {page_size}: {opened} clean, {errors} errors"
        );
    }
}

/// With KVDB_FUZZ_SEEDS=<dir>, write small valid images there as a seed corpus for cargo fuzz.
#[test]
fn write_fuzz_seeds() {
    let Some(dir) = std::env::var_os("KVDB_FUZZ_SEEDS") else {
        return;
    };
    std::fs::create_dir_all(&dir).unwrap();
    let db = Db::create(MemPager::new(), Options { page_size: 1024 }).unwrap();
    std::fs::write(std::path::Path::new(&dir).join("empty"), db.pager().image()).unwrap();
    for t in 0..3u32 {
        let tx = db.begin_write().unwrap();
        let b = tx.get_or_create_bucket(format!("b{t}").as_bytes()).unwrap();
        for i in 0..(20 * (t + 1)) {
            b.put(
                format!("k{i:03}").as_bytes(),
                &vec![i as u8; (i * 5 % 300) as usize],
            )
            .unwrap();
        }
        b.get_or_create_bucket(b"n")
            .unwrap()
            .put(b"x", &[1u8; 1500])
            .unwrap();
        tx.commit().unwrap();
        std::fs::write(
            std::path::Path::new(&dir).join(format!("seed{t}")),
            db.pager().image(),
        )
        .unwrap();
    }
}
