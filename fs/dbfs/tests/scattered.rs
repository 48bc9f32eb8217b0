//! Scattered reads (`read_scattered_at`: the kernel passes the pages of a user buffer) return
//! the same bytes as `read_at` into one buffer: through the cache, from the store (with the
//! pager's direct reads on, as in the kernel), across holes and at the end of the file.
mod common;

use std::sync::atomic::{AtomicUsize, Ordering};

use common::*;
use dbfs::{DbFs, MkfsOptions, DIRECT_READ_MIN};
use kvdb::{MemPager, Pager};
use vfs::{FileSystem, NodeRef, SetAttr};

/// A MemPager whose `read_into` is "direct" (as the kernel window's) and counted.
#[derive(Default)]
struct DirectReads {
    inner: MemPager,
    pieces_calls: AtomicUsize,
}

impl Pager for DirectReads {
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
    assert!(n == 0 || buf[..n] == model[offset..offset + n], "bytes at {offset}..{}", offset + n);
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
    let pager = DbFs::mkfs(DirectReads::default(), opts).unwrap();
    let fs = DbFs::mount(pager, TestClock::new()).unwrap();
    let f = fs.root().unwrap().create("f", &reg()).unwrap();
    let mut model = pattern(3 << 20, 5);
    f.write_at(0, &model).unwrap();
    // A hole: grown by truncate, then written beyond.
    f.setattr(&SetAttr { size: Some(4 << 20), ..Default::default() }).unwrap();
    model.resize(4 << 20, 0);
    let tail = pattern(300_000, 9);
    f.write_at(4 << 20, &tail).unwrap();
    model.extend_from_slice(&tail);

    let page = [4096usize];
    let odd = [4096 - 17, 4096, 100, 8192 + 3];
    let cases = [(0, 1 << 20), (12_345, 700_000), ((3 << 20) - 5000, 300_000), ((4 << 20) + 1000, 1 << 20)];
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
    assert!(fs.pager().pieces_calls.load(Ordering::SeqCst) > before, "page pieces were not read in one call");
    // Small scattered reads are left to the caller.
    assert!(!check_scattered(&f, &model, 0, 8192, &page));
    // Past the end: nothing.
    assert!(check_scattered(&f, &model, 10 << 20, 1 << 20, &page));
    assert_clean(&*fs);
}
