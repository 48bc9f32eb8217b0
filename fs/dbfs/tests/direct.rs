//! Large reads through `Pager::read_into` (the kernel window's device-to-buffer path) return
//! exactly what the copying path returns: holes, partial chunks, unaligned ends, buffered
//! (uncommitted) chunks and files written in pieces. So do scattered reads
//! (`read_scattered_at`: the kernel passes the pages of a user buffer).
mod common;

use std::sync::atomic::{AtomicUsize, Ordering};

use common::*;
use dbfs::{DbFs, MkfsOptions, DIRECT_READ_MIN};
use kvdb::{MemPager, Pager};
use vfs::{FileSystem, NodeRef, SetAttr};

/// A RAM pager that claims direct reads and counts them (and its scattered reads).
#[derive(Default)]
struct DirectPager {
    inner: MemPager,
    direct_bytes: AtomicUsize,
    pieces_calls: AtomicUsize,
}

impl Pager for DirectPager {
    type Page<'a> = <MemPager as Pager>::Page<'a>;

    fn read(&self, offset: u64, len: usize) -> kvdb::Result<Self::Page<'_>> {
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
    fn read_into(&self, offset: u64, dst: &mut [u8]) -> kvdb::Result<()> {
        self.direct_bytes.fetch_add(dst.len(), Ordering::SeqCst);
        let src = self.inner.read(offset, dst.len())?;
        dst.copy_from_slice(&src);
        Ok(())
    }
    fn direct_reads(&self) -> bool {
        true
    }
    fn read_into_pieces(&self, offset: u64, dst: &mut [&mut [u8]]) -> kvdb::Result<()> {
        self.pieces_calls.fetch_add(1, Ordering::SeqCst);
        let mut at = offset;
        for piece in dst.iter_mut() {
            self.read_into(at, piece)?;
            at += piece.len() as u64;
        }
        Ok(())
    }
}

fn read_range(f: &NodeRef, offset: u64, len: usize) -> Vec<u8> {
    let mut buf = vec![0xAAu8; len];
    let n = f.read_at(offset, &mut buf).unwrap();
    buf.truncate(n);
    buf
}

#[test]
fn direct_reads_match_the_model() {
    let pager = DbFs::mkfs(
        DirectPager::default(),
        MkfsOptions {
            chunk_size: 16 << 10,
            ..MkfsOptions::default()
        },
    )
    .unwrap();
    let fs = DbFs::mount(pager, TestClock::new()).unwrap();
    let root = fs.root().unwrap();
    let f = root.create("f", &reg()).unwrap();
    let size = 3 << 20;
    let mut model = vec![0u8; size];
    // Pieces at odd offsets and lengths, leaving holes; a tail that ends mid-chunk.
    let mut seed = 7u64;
    for k in 0..40 {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let off = (seed >> 20) as usize % (size - 70_000);
        let len = 1 + (seed >> 45) as usize % 65_000;
        if k % 7 == 3 {
            continue; // leave a hole
        }
        let piece = pattern(len, k as u8);
        f.write_at(off as u64, &piece).unwrap();
        model[off..off + len].copy_from_slice(&piece);
    }
    let tail = pattern(5_000, 99);
    f.write_at((size - 5_000) as u64, &tail).unwrap();
    model[size - 5_000..].copy_from_slice(&tail);
    fs.sync().unwrap();

    let check = |what: &str, model: &[u8]| {
        for &(off, len) in &[
            (0usize, size),
            (0, DIRECT_READ_MIN),
            (512, 1 << 20),
            (4096 * 3 + 100, 300_000),
            (size - 200_000, 400_000),
            (1 << 20, 1 << 20),
        ] {
            let got = read_range(&f, off as u64, len);
            let end = (off + len).min(size);
            assert_eq!(got.len(), end - off, "{what}: length at {off}+{len}");
            assert!(
                got == model[off..end],
                "{what}: bytes differ at {off}+{len}"
            );
        }
    };
    check("committed", &model);
    assert!(
        fs.pager().direct_bytes.load(Ordering::SeqCst) > 0,
        "the direct path was not used"
    );

    // Buffered (uncommitted) writes overlay the committed bytes read directly.
    let piece = pattern(40_000, 200);
    f.write_at(700_001, &piece).unwrap();
    model[700_001..740_001].copy_from_slice(&piece);
    check("with buffered chunks", &model);
    fs.sync().unwrap();
    check("after sync", &model);
    assert_clean(&*fs);
}

/// Read `len` bytes at `offset` scattered into pieces of the given sizes (cycled), and check
/// them against `model` and against a plain `read_at`.
fn check_scattered(f: &NodeRef, model: &[u8], offset: usize, len: usize, sizes: &[usize]) -> bool {
    let mut buf = vec![0xAAu8; len];
    let mut pieces: Vec<&mut [u8]> = Vec::new();
    let mut rest: &mut [u8] = &mut buf;
    let mut i = 0;
    while !rest.is_empty() {
        let k = sizes[i % sizes.len()].min(rest.len());
        let (a, b) = rest.split_at_mut(k);
        pieces.push(a);
        rest = b;
        i += 1;
    }
    let Some(r) = f.read_scattered_at(offset as u64, &mut pieces) else {
        assert!(len < DIRECT_READ_MIN, "a large scattered read was refused");
        return false;
    };
    let n = r.unwrap();
    let want = model.len().saturating_sub(offset).min(len);
    assert_eq!(n, want, "length at {offset}");
    assert!(
        n == 0 || buf[..n] == model[offset..offset + n],
        "bytes at {offset}..{}",
        offset + n
    );
    let mut plain = vec![0u8; len];
    assert_eq!(f.read_at(offset as u64, &mut plain).unwrap(), n);
    assert!(plain[..n] == buf[..n]);
    true
}

#[test]
fn scattered_reads_match_the_model() {
    let opts = MkfsOptions {
        chunk_size: 16 << 10,
        ..MkfsOptions::default()
    };
    let pager = DbFs::mkfs(DirectPager::default(), opts).unwrap();
    let fs = DbFs::mount(pager, TestClock::new()).unwrap();
    let f = fs.root().unwrap().create("f", &reg()).unwrap();
    let mut model = pattern(3 << 20, 5);
    f.write_at(0, &model).unwrap();
    // A hole: grown by truncate, then written beyond.
    f.setattr(&SetAttr {
        size: Some(4 << 20),
        ..Default::default()
    })
    .unwrap();
    model.resize(4 << 20, 0);
    let tail = pattern(300_000, 9);
    f.write_at(4 << 20, &tail).unwrap();
    model.extend_from_slice(&tail);

    let page = [4096usize];
    let odd = [4096 - 17, 4096, 100, 8192 + 3];
    let cases = [
        (0, 1 << 20),
        (12_345, 700_000),
        ((3 << 20) - 5000, 300_000),
        ((4 << 20) + 1000, 1 << 20),
    ];
    // Buffered (the cache overlays the store), then committed (straight from the store).
    for stage in ["buffered", "stored"] {
        for &(off, len) in &cases {
            assert!(check_scattered(&f, &model, off, len, &page), "{stage}");
            assert!(check_scattered(&f, &model, off, len, &odd), "{stage}");
        }
        f.fsync(false).unwrap();
    }
    let before = fs.pager().pieces_calls.load(Ordering::SeqCst);
    assert!(check_scattered(&f, &model, 1 << 20, 1 << 20, &page));
    assert!(
        fs.pager().pieces_calls.load(Ordering::SeqCst) > before,
        "page pieces were not read in one call"
    );
    // Small scattered reads are left to the caller.
    assert!(!check_scattered(&f, &model, 0, 8192, &page));
    // Past the end: nothing.
    assert!(check_scattered(&f, &model, 10 << 20, 1 << 20, &page));
    assert_clean(&*fs);
}
