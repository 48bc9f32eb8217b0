//! Large reads through `Pager::read_into` (the kernel window's device-to-buffer path) return
//! exactly what the copying path returns: holes, partial chunks, unaligned ends, buffered
//! (uncommitted) chunks and files written in pieces.
mod common;

use std::sync::atomic::{AtomicUsize, Ordering};

use common::*;
use dbfs::{DbFs, MkfsOptions, DIRECT_READ_MIN};
use kvdb::{MemPager, Pager};
use vfs::{FileSystem, NodeRef};

/// A RAM pager that claims direct reads and counts them.
#[derive(Default)]
struct DirectPager {
    inner: MemPager,
    direct_bytes: AtomicUsize,
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
}

fn read_range(f: &NodeRef, offset: u64, len: usize) -> Vec<u8> {
    let mut buf = vec![0xAAu8; len];
    let n = f.read_at(offset, &mut buf).unwrap();
    buf.truncate(n);
    buf
}

#[test]
fn direct_reads_match_the_model() {
    let pager = DbFs::mkfs(DirectPager::default(), MkfsOptions { chunk_size: 16 << 10, ..MkfsOptions::default() })
        .unwrap();
    let fs = DbFs::mount(pager, TestClock::new()).unwrap();
    let root = fs.root().unwrap();
    let f = root.create("f", &reg()).unwrap();
    let size = 3 << 20;
    let mut model = vec![0u8; size];
    // Pieces at odd offsets and lengths, leaving holes; a tail that ends mid-chunk.
    let mut seed = 7u64;
    for k in 0..40 {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
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
            assert!(got == model[off..end], "{what}: bytes differ at {off}+{len}");
        }
    };
    check("committed", &model);
    assert!(fs.pager().direct_bytes.load(Ordering::SeqCst) > 0, "the direct path was not used");

    // Buffered (uncommitted) writes overlay the committed bytes read directly.
    let piece = pattern(40_000, 200);
    f.write_at(700_001, &piece).unwrap();
    model[700_001..740_001].copy_from_slice(&piece);
    check("with buffered chunks", &model);
    fs.sync().unwrap();
    check("after sync", &model);
    assert_clean(&*fs);
}
