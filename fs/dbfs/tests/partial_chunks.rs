//! Partly loaded chunks in the write-back cache: a write covering whole 4 KiB pieces of a
//! stored chunk that is not cached is buffered without reading the stored chunk; the missing
//! pieces come from the store when a write touches part of one, and at commit.
//!
//! `model_random_ops` runs seeded random writes (aligned 4 KiB runs, small unaligned writes,
//! writes across chunk boundaries), reads, truncates, fsyncs, write-back timer ticks, small
//! dirty limits, direct writes and remounts against a `Vec<u8>` model of the file, for chunks
//! of 4, 16 and 64 KiB. `aligned_overwrite_reads_nothing` counts the pager's reads.
mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use common::*;
use dbfs::{DbFs, MkfsOptions};
use kvdb::{MemPager, Pager};
use vfs::{FileSystem, NodeRef, SetAttr};
use xrand::XorShift64;

/// A [`MemPager`] shared between mounts, counting the bytes and calls of its reads.
#[derive(Clone)]
struct Counting {
    inner: Arc<MemPager>,
    read_bytes: Arc<AtomicU64>,
    read_calls: Arc<AtomicU64>,
}

impl Counting {
    fn new() -> Counting {
        Counting {
            inner: Arc::new(MemPager::new()),
            read_bytes: Arc::new(AtomicU64::new(0)),
            read_calls: Arc::new(AtomicU64::new(0)),
        }
    }
    /// (bytes, calls) read since the last call.
    fn take_reads(&self) -> (u64, u64) {
        (
            self.read_bytes.swap(0, Ordering::SeqCst),
            self.read_calls.swap(0, Ordering::SeqCst),
        )
    }
}

impl Pager for Counting {
    type Page<'a> = Arc<[u8]>;

    fn read(&self, offset: u64, len: usize) -> kvdb::Result<Arc<[u8]>> {
        self.read_bytes.fetch_add(len as u64, Ordering::SeqCst);
        self.read_calls.fetch_add(1, Ordering::SeqCst);
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

fn opts(chunk_size: u32) -> MkfsOptions {
    MkfsOptions {
        chunk_size,
        ..MkfsOptions::default()
    }
}

struct World {
    pager: Counting,
    clock: Arc<TestClock>,
    fs: Option<Arc<DbFs<Counting>>>,
    file: Option<NodeRef>,
}

impl World {
    fn new(chunk_size: u32) -> World {
        let pager = DbFs::mkfs(Counting::new(), opts(chunk_size)).expect("mkfs");
        let clock = TestClock::new();
        let fs = DbFs::mount(pager.clone(), clock.clone()).expect("mount");
        let file = fs.root().unwrap().create("f", &reg()).unwrap();
        World {
            pager,
            clock,
            fs: Some(fs),
            file: Some(file),
        }
    }
    fn fs(&self) -> &Arc<DbFs<Counting>> {
        self.fs.as_ref().unwrap()
    }
    fn file(&self) -> &NodeRef {
        self.file.as_ref().unwrap()
    }
    /// Drop the file system (unmount: buffered data commits) and mount the same pager again.
    fn remount(&mut self) {
        self.file = None;
        let fs = self.fs.take().unwrap();
        assert_eq!(
            Arc::strong_count(&fs),
            1,
            "a node still holds the old mount"
        );
        drop(fs);
        let fs = DbFs::mount(self.pager.clone(), self.clock.clone()).expect("remount");
        self.file = Some(fs.root().unwrap().lookup("f").unwrap());
        self.fs = Some(fs);
        let problems = self.fs().fsck().expect("fsck");
        assert!(problems.is_empty(), "fsck after remount: {problems:?}");
    }
}

fn check_read(f: &NodeRef, model: &[u8], off: usize, len: usize, what: &str) {
    let mut buf = vec![0xA5u8; len];
    let n = f.read_at(off as u64, &mut buf).unwrap();
    let want = model.len().saturating_sub(off).min(len);
    assert_eq!(n, want, "{what}: read length at {off}+{len}");
    if n > 0 && buf[..n] != model[off..off + n] {
        let at = (0..n).find(|&i| buf[i] != model[off + i]).unwrap();
        panic!(
            "{what}: byte {} differs (got {:#x}, model {:#x}); read {off}+{len}",
            off + at,
            buf[at],
            model[off + at]
        );
    }
}

fn check_all(f: &NodeRef, model: &[u8], what: &str) {
    assert_eq!(
        f.getattr().unwrap().size as usize,
        model.len(),
        "{what}: size"
    );
    check_read(f, model, 0, model.len() + 100, what);
}

fn model_write(model: &mut Vec<u8>, off: usize, data: &[u8]) {
    if model.len() < off + data.len() {
        model.resize(off + data.len(), 0);
    }
    model[off..off + data.len()].copy_from_slice(data);
}

fn run_model(chunk_size: u32, seed: u64, ops: usize) {
    let cs = chunk_size as usize;
    let max = 8 * cs.max(16 << 10);
    let mut rng = XorShift64::new(seed);
    let mut w = World::new(chunk_size);
    let mut model: Vec<u8> = Vec::new();
    // A stored file to overwrite: most of the interesting cases start from stored chunks.
    let mut init = vec![0u8; 5 * cs + 1234];
    rng.fill_bytes(&mut init);
    w.file().write_at(0, &init).unwrap();
    model_write(&mut model, 0, &init);
    w.remount();
    for step in 0..ops {
        let what = format!("chunk {chunk_size} seed {seed:#x} step {step}");
        let size = model.len();
        match rng.below(100) {
            // Aligned 4 KiB runs, mostly over what is there.
            0..=29 => {
                let off = 4096 * rng.below((size.max(4096) / 4096 + 2) as u64) as usize;
                let len = 4096 * (1 + rng.below(6) as usize);
                if off + len <= max {
                    let mut data = vec![0u8; len];
                    rng.fill_bytes(&mut data);
                    w.file().write_at(off as u64, &data).unwrap();
                    model_write(&mut model, off, &data);
                }
            }
            // Small unaligned writes.
            30..=44 => {
                let off = rng.below(size as u64 + 5000) as usize;
                let len = 1 + rng.below(6000) as usize;
                if off + len <= max {
                    let mut data = vec![0u8; len];
                    rng.fill_bytes(&mut data);
                    w.file().write_at(off as u64, &data).unwrap();
                    model_write(&mut model, off, &data);
                }
            }
            // Across a chunk boundary (aligned to 4 KiB or not).
            45..=54 => {
                let b = cs * (1 + rng.below((size / cs + 1) as u64) as usize);
                let back = if rng.below(2) == 0 {
                    4096 * (1 + rng.below(3) as usize)
                } else {
                    1 + rng.below(5000) as usize
                }
                .min(b);
                let len = back + rng.below(2 * cs as u64) as usize + 1;
                let off = b - back;
                if off + len <= max {
                    let mut data = vec![0u8; len];
                    rng.fill_bytes(&mut data);
                    w.file().write_at(off as u64, &data).unwrap();
                    model_write(&mut model, off, &data);
                }
            }
            55..=74 => {
                let off = rng.below(size as u64 + 100) as usize;
                let len = 1 + rng.below(3 * cs as u64) as usize;
                check_read(w.file(), &model, off, len, &what);
            }
            // A hole punched (fallocate PUNCH_HOLE): whole chunks, chunk ends, buffered bytes.
            75..=79 => {
                let off = if rng.below(2) == 0 {
                    cs * rng.below((size / cs + 1) as u64) as usize
                } else {
                    rng.below(size as u64 + 100) as usize
                };
                let len = 1 + rng.below(3 * cs as u64) as usize;
                w.file().punch_hole(off as u64, len as u64).unwrap();
                let end = (off + len).min(size);
                if off < end {
                    model[off..end].fill(0);
                }
            }
            80..=85 => {
                let new = if rng.below(2) == 0 {
                    rng.below(size as u64 + 1) as usize
                } else {
                    (size + rng.below(2 * cs as u64) as usize).min(max)
                };
                w.file()
                    .setattr(&SetAttr {
                        size: Some(new as u64),
                        ..Default::default()
                    })
                    .unwrap();
                model.resize(new, 0);
            }
            86..=89 => w.file().fsync(false).unwrap(),
            90..=91 => {
                w.clock.advance_secs(6);
                w.fs().writeback_tick().unwrap();
            }
            92..=93 => {
                // A dirty limit a few writes reach (commits from the write path), or the
                // default again.
                let limit = if rng.below(2) == 0 {
                    3 * cs
                } else {
                    dbfs::DEFAULT_DIRTY_LIMIT
                };
                w.fs().set_dirty_limit(limit);
            }
            94..=95 => {
                // Direct writes of whole chunks (they replace cached chunks at commit).
                let min = if rng.below(2) == 0 { Some(cs) } else { None };
                w.fs().set_direct_write_min(min);
            }
            96..=97 => w.remount(),
            _ => check_all(w.file(), &model, &what),
        }
    }
    check_all(w.file(), &model, "end, before remount");
    w.remount();
    check_all(w.file(), &model, "end, after remount");
}

#[test]
fn model_random_ops() {
    for (i, cs) in [4096u32, 16 << 10, 64 << 10].into_iter().enumerate() {
        run_model(cs, 0x5EED_0000_0000_0001 + i as u64, 4000);
    }
}

/// A punched hole reads zeros and keeps the size, whether the bytes were stored, buffered or
/// both; the chunks wholly inside it are freed (st_blocks drops), the ends are zeroed in place;
/// the result survives a remount, fsck is clean, and a punch past the end changes nothing.
#[test]
fn punch_hole_frees_whole_chunks() {
    let cs = 16usize << 10;
    let mut w = World::new(cs as u32);
    let mut model = pattern(10 * cs + 300, 3);
    w.file().write_at(0, &model).unwrap();
    w.remount();
    let before = w.file().getattr().unwrap().blocks;
    // Buffered bytes over part of the range to be punched, and some beside it.
    let fresh = pattern(3 * cs, 9);
    w.file().write_at(cs as u64 + 10, &fresh).unwrap();
    model_write(&mut model, cs + 10, &fresh);
    // Chunk 1 from byte 100 to chunk 6 byte 50: chunks 2..=5 whole.
    let (off, end) = (cs + 100, 6 * cs + 50);
    w.file().punch_hole(off as u64, (end - off) as u64).unwrap();
    model[off..end].fill(0);
    check_all(w.file(), &model, "after punch");
    w.file().fsync(false).unwrap();
    let after = w.file().getattr().unwrap().blocks;
    assert!(
        after + 4 * (cs as u64 / 512) <= before,
        "four whole chunks punched, st_blocks {before} -> {after}"
    );
    w.remount();
    check_all(w.file(), &model, "after remount");
    // Past the end: nothing changes, the size stays.
    let size = model.len() as u64;
    w.file().punch_hole(size + 10, 4096).unwrap();
    // Up to and past the end: the tail is zero, the size stays.
    w.file().punch_hole(size - 200, 4096).unwrap();
    let n = model.len();
    model[n - 200..].fill(0);
    check_all(w.file(), &model, "tail punched");
    w.remount();
    check_all(w.file(), &model, "tail punched, after remount");
}

/// Overwriting a stored file with aligned 4 KiB writes reads no stored chunk; the bytes are
/// right before the commit, after it and after a remount; a small unaligned write into a
/// piece not loaded does read it.
#[test]
fn aligned_overwrite_reads_nothing() {
    let cs = 64usize << 10;
    let mut w = World::new(cs as u32);
    let old = pattern(8 * cs, 1);
    w.file().write_at(0, &old).unwrap();
    w.remount();
    let mut model = old.clone();
    let new = pattern(8 * cs, 7);
    // Warm up: the first write reads the inode record and tree pages.
    w.file().write_at(0, &new[..4096]).unwrap();
    model_write(&mut model, 0, &new[..4096]);
    w.pager.take_reads();
    // The rest of chunk 0, all of chunk 1, and 5 pieces of chunk 2.
    for at in (4096..2 * cs + 5 * 4096).step_by(4096) {
        w.file().write_at(at as u64, &new[at..at + 4096]).unwrap();
        model_write(&mut model, at, &new[at..at + 4096]);
    }
    let (bytes, calls) = w.pager.take_reads();
    assert_eq!((bytes, calls), (0, 0), "aligned overwrites read the store");
    check_all(w.file(), &model, "before commit");
    w.file().fsync(false).unwrap();
    check_all(w.file(), &model, "after fsync");
    w.remount();
    check_all(w.file(), &model, "after remount");

    // Unaligned: a write into part of a piece must merge with the stored bytes.
    w.file().write_at(3 * cs as u64 + 100, b"xyz").unwrap();
    model_write(&mut model, 3 * cs + 100, b"xyz");
    let (bytes, _) = w.pager.take_reads();
    assert!(
        bytes >= cs as u64,
        "a partial piece was not loaded ({bytes} bytes read)"
    );
    check_all(w.file(), &model, "unaligned");
}

/// A partly loaded chunk then cut by a truncate inside a piece not loaded, grown again, and
/// committed: the kept stored bytes survive, the cut ones read zeros.
#[test]
fn partial_chunk_then_truncate() {
    let cs = 16usize << 10;
    let mut w = World::new(cs as u32);
    let old = pattern(3 * cs, 3);
    w.file().write_at(0, &old).unwrap();
    w.remount();
    let mut model = old.clone();
    // Piece 1 of chunk 1 only.
    w.file().write_at((cs + 4096) as u64, &[9u8; 4096]).unwrap();
    model_write(&mut model, cs + 4096, &[9u8; 4096]);
    for size in [cs + 3 * 4096 - 10, 3 * cs + 5] {
        w.file()
            .setattr(&SetAttr {
                size: Some(size as u64),
                ..Default::default()
            })
            .unwrap();
        model.resize(size, 0);
        check_all(w.file(), &model, "after truncate");
        w.file().write_at((cs + 4096) as u64, &[8u8; 4096]).unwrap();
        model_write(&mut model, cs + 4096, &[8u8; 4096]);
        check_all(w.file(), &model, "written again");
    }
    FileSystem::sync(&**w.fs()).unwrap();
    w.remount();
    check_all(w.file(), &model, "after remount");
}

/// Deleting a stored file, or truncating it, frees its chunks without reading them: the
/// transaction needs their keys and lengths only (an unlink of a 2 MiB file read all 2 MiB).
#[test]
fn deleting_stored_chunks_reads_none_of_them() {
    let cs = 64usize << 10;
    let mut w = World::new(cs as u32);
    let root = w.fs().root().unwrap();
    for name in ["a", "b"] {
        root.create(name, &reg())
            .unwrap()
            .write_at(0, &pattern(32 * cs, 3))
            .unwrap();
    }
    drop(root);
    w.remount();
    let root = w.fs().root().unwrap();
    let b = root.lookup("b").unwrap();
    w.pager.take_reads();
    root.unlink("a").unwrap();
    b.truncate(1).unwrap();
    let (bytes, _) = w.pager.take_reads();
    // Tree pages, and the one chunk the truncate cuts (read to keep its first byte).
    assert!(
        bytes < 4 * cs as u64,
        "deleting 4 MiB of stored chunks read {bytes} bytes"
    );
    let mut one = [0u8; 2];
    assert_eq!(b.read_at(0, &mut one).unwrap(), 1);
    assert_eq!(one[0], pattern(1, 3)[0]);
    drop((b, root));
    w.remount();
    assert!(w.fs().root().unwrap().lookup("a").is_err());
}
