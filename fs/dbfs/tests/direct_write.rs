//! Large writes whose whole chunks go straight to the store (`Pager::write_direct`, the kernel
//! window's buffer-to-device path) instead of the write-back cache: the bytes, sizes and
//! accounting match a model with every mix of direct and buffered writes, the cached chunks a
//! direct write replaces never come back, a failing direct write changes nothing, concurrent
//! buffered writes to the same file are not lost, and a crash at any point of a run of direct
//! writes leaves the file as it was before or after each one.
mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::*;
use dbfs::{DbFs, MkfsOptions, DIRECT_WRITE_MIN};
use kvdb::{MemPager, Pager, PagerEvent};
use vfs::{FileSystem, NodeRef};

const CHUNK: usize = 16 << 10;

/// A RAM pager that claims direct writes and counts the bytes they move, and counts the
/// reads of file data (into a caller's buffer, or of more than a page).
#[derive(Default)]
struct DirectPager {
    inner: MemPager,
    direct_bytes: AtomicUsize,
    reads_into: AtomicUsize,
    /// Bytes of those reads.
    read_into_bytes: AtomicUsize,
}

impl Pager for DirectPager {
    type Page<'a> = <MemPager as Pager>::Page<'a>;

    fn read(&self, offset: u64, len: usize) -> kvdb::Result<Self::Page<'_>> {
        if len > 4096 {
            self.read_into_bytes.fetch_add(len, Ordering::SeqCst);
        }
        self.inner.read(offset, len)
    }
    fn read_into(&self, offset: u64, dst: &mut [u8]) -> kvdb::Result<()> {
        self.reads_into.fetch_add(1, Ordering::SeqCst);
        self.read_into_bytes.fetch_add(dst.len(), Ordering::SeqCst);
        self.inner.read_into(offset, dst)
    }
    fn write(&self, writes: &[(u64, &[u8])]) -> kvdb::Result<()> {
        self.inner.write(writes)
    }
    fn write_direct(&self, writes: &[(u64, &[u8])]) -> kvdb::Result<()> {
        assert!(
            kvdb::direct_writes_well_formed(writes, 4096),
            "direct writes of a shape kvdb's contract rules out"
        );
        self.inner.write(writes)?;
        let n: usize = writes.iter().map(|w| w.1.len()).sum();
        self.direct_bytes.fetch_add(n, Ordering::SeqCst);
        Ok(())
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

fn mount() -> Arc<DbFs<DirectPager>> {
    let opts = MkfsOptions {
        chunk_size: CHUNK as u32,
        ..MkfsOptions::default()
    };
    let pager = DbFs::mkfs(DirectPager::default(), opts).unwrap();
    DbFs::mount(pager, TestClock::new()).unwrap()
}

fn remount(fs: Arc<DbFs<DirectPager>>) -> Arc<DbFs<DirectPager>> {
    let image = fs.pager().inner.image();
    drop(fs);
    let pager = DirectPager {
        inner: MemPager::from_image(image),
        ..DirectPager::default()
    };
    DbFs::mount(pager, TestClock::new()).unwrap()
}

fn direct(fs: &DbFs<DirectPager>) -> usize {
    fs.pager().direct_bytes.load(Ordering::SeqCst)
}

fn write(f: &NodeRef, model: &mut Vec<u8>, off: usize, bytes: &[u8]) {
    assert_eq!(f.write_at(off as u64, bytes).unwrap(), bytes.len());
    if model.len() < off + bytes.len() {
        model.resize(off + bytes.len(), 0);
    }
    model[off..off + bytes.len()].copy_from_slice(bytes);
}

/// Remount `fs` (its nodes dropped) and check file "f" against `model` and the image.
fn check_after_remount(fs: Arc<DbFs<DirectPager>>, model: &[u8]) {
    let fs = remount(fs);
    let f = fs.root().unwrap().lookup("f").unwrap();
    check("after remount", &f, model);
    assert_clean(&*fs);
}

fn check(what: &str, f: &NodeRef, model: &[u8]) {
    assert_eq!(
        f.getattr().unwrap().size,
        model.len() as u64,
        "{what}: size"
    );
    let got = read_all(f);
    assert!(got == model, "{what}: contents differ");
}

#[test]
fn direct_and_buffered_writes_match_the_model() {
    let fs = mount();
    let root = fs.root().unwrap();
    let f = root.create("f", &reg()).unwrap();
    let mut model = Vec::new();

    // A fresh file written in 1 MiB pieces: every chunk goes direct.
    for k in 0..4 {
        write(&f, &mut model, k << 20, &pattern(1 << 20, k as u8));
    }
    assert_eq!(direct(&fs), 4 << 20);
    assert_eq!(fs.dirty_bytes(), 0, "direct chunks were buffered");
    // Written, not inserted yet: the next commit of the file does that.
    assert_eq!(fs.placed_pages(), Some(1024));
    check("fresh", &f, &model);

    // Buffered pieces inside chunks that a direct write then replaces, and one beside them:
    // the replaced ones must not come back (now, at the commit, after a remount).
    write(&f, &mut model, 3 * CHUNK + 100, &pattern(5_000, 40));
    write(&f, &mut model, 20 * CHUNK + 7, &pattern(300, 41));
    write(&f, &mut model, 40 * CHUNK, &pattern(CHUNK, 42));
    assert!(fs.dirty_bytes() > 0);
    let before = direct(&fs);
    // Unaligned at both ends: a head and a tail chunk through the cache, 16 whole ones direct.
    write(&f, &mut model, 2 * CHUNK + 999, &pattern(17 * CHUNK, 43));
    // (The first buffered write went to a placed chunk: the file's placed chunks were
    // inserted first, and these merge with stored ones.) The 16 whole chunks are placed; its
    // own head and tail chunks (2 and 19) stay buffered with chunks 20 and 40 until the
    // file's next commit, which inserts all of them at once; the buffered chunk 3 it replaces
    // is dropped, never stored.
    assert_eq!(direct(&fs) - before, 16 * CHUNK);
    assert_eq!(fs.placed_pages(), Some(16 * 4));
    check("direct over buffered", &f, &model);
    // The head and tail chunks merged with what was stored and buffered.
    write(&f, &mut model, 19 * CHUNK + 5, &pattern(10, 44));
    check("partial after direct", &f, &model);

    // Growing the file with a direct write past a hole, then one below the threshold.
    write(
        &f,
        &mut model,
        (6 << 20) + 3,
        &pattern(DIRECT_WRITE_MIN + CHUNK, 45),
    );
    let before = direct(&fs);
    write(
        &f,
        &mut model,
        5 << 20,
        &pattern(DIRECT_WRITE_MIN - CHUNK, 46),
    );
    assert_eq!(
        direct(&fs),
        before,
        "a write below the threshold went direct"
    );
    check("grown", &f, &model);

    f.fsync(false).unwrap();
    assert_eq!(fs.dirty_bytes(), 0);
    assert_eq!(fs.placed_pages(), Some(0), "fsync left chunks placed");
    check("after fsync", &f, &model);
    assert_clean(&*fs);

    // Overwrite everything once more with the cache off, then compare after a remount.
    fs.set_direct_write_min(None);
    let before = direct(&fs);
    write(&f, &mut model, CHUNK, &pattern(1 << 20, 47));
    assert_eq!(direct(&fs), before);
    fs.set_direct_write_min(Some(DIRECT_WRITE_MIN));
    write(&f, &mut model, 0, &pattern(1 << 20, 48));
    fs.sync().unwrap();
    assert_clean(&*fs);
    drop(f);
    drop(root);
    check_after_remount(fs, &model);
}

#[test]
fn a_failing_direct_write_changes_nothing() {
    let fs = mount();
    let root = fs.root().unwrap();
    let f = root.create("f", &reg()).unwrap();
    let mut model = Vec::new();
    write(&f, &mut model, 0, &pattern(1 << 20, 1));
    // Buffered data in the range of the failing write stays, and stays dirty.
    write(&f, &mut model, CHUNK + 10, &pattern(100, 2));
    let dirty = fs.dirty_bytes();
    let blocks = f.getattr().unwrap().blocks;
    fs.pager().inner.fail_writes_after(Some(0));
    assert!(f.write_at(0, &pattern(512 << 10, 3)).is_err());
    fs.pager().inner.fail_writes_after(None);
    assert_eq!(fs.dirty_bytes(), dirty);
    assert_eq!(f.getattr().unwrap().blocks, blocks);
    check("after the failure", &f, &model);
    f.fsync(false).unwrap();
    assert_clean(&*fs);
    write(&f, &mut model, 0, &pattern(512 << 10, 4));
    f.fsync(false).unwrap();
    check("healed", &f, &model);
    assert_clean(&*fs);
}

#[test]
fn buffered_writes_beside_concurrent_direct_writes_are_kept() {
    let fs = mount();
    let root = fs.root().unwrap();
    let f = root.create("f", &reg()).unwrap();
    // Chunks 1..=16: rewritten directly by one thread; chunk 0 and chunks 17..: small
    // buffered writes by another, into the same file (same cache entry, same inode record).
    let big = 16 * CHUNK;
    f.write_at(0, &vec![0u8; CHUNK + big + 4 * CHUNK]).unwrap();
    f.fsync(false).unwrap();
    let rounds = 40;
    let writer = {
        let f = f.clone();
        std::thread::spawn(move || {
            for k in 0..rounds {
                f.write_at(CHUNK as u64, &pattern(big, k as u8)).unwrap();
            }
        })
    };
    let mut small = vec![0u8; CHUNK + 4 * CHUNK];
    for k in 0..400usize {
        let at = if k % 2 == 0 {
            (k * 37) % (CHUNK - 50)
        } else {
            CHUNK + (k * 911) % (4 * CHUNK - 50)
        };
        let piece = pattern(50, k as u8);
        let file_at = if at < CHUNK { at } else { at + big };
        f.write_at(file_at as u64, &piece).unwrap();
        small[at..at + 50].copy_from_slice(&piece);
    }
    writer.join().unwrap();
    let mut model = small[..CHUNK].to_vec();
    model.extend_from_slice(&pattern(big, (rounds - 1) as u8));
    model.extend_from_slice(&small[CHUNK..]);
    check("concurrent", &f, &model);
    fs.sync().unwrap();
    check("after sync", &f, &model);
    assert!(direct(&fs) >= rounds * big);
    assert_clean(&*fs);
}

#[test]
fn buffered_writes_into_chunks_being_written_directly_are_ordered() {
    let fs = mount();
    let root = fs.root().unwrap();
    let f = root.create("f", &reg()).unwrap();
    let big = 16 * CHUNK;
    f.write_at(0, &vec![0u8; big]).unwrap();
    f.fsync(false).unwrap();
    let rounds = 40;
    let writer = {
        let f = f.clone();
        std::thread::spawn(move || {
            for k in 1..=rounds {
                f.write_at(0, &pattern(big, k as u8)).unwrap();
            }
        })
    };
    // Small pieces into the chunks the other thread rewrites. Whatever the interleaving, each
    // byte is then the last big write's or one of a small piece's: never an older big
    // write's (a piece merged with a chunk being replaced, and committed after it).
    let mut pieces = Vec::new();
    for k in 0..300usize {
        let at = (k * 7919) % (big - 50);
        let piece = vec![0xF0 | (k % 8) as u8; 50];
        f.write_at(at as u64, &piece).unwrap();
        pieces.push((at, piece));
    }
    writer.join().unwrap();
    fs.sync().unwrap();
    let last = pattern(big, rounds as u8);
    let got = read_all(&f);
    for (i, &b) in got.iter().enumerate() {
        let from_piece = pieces
            .iter()
            .any(|(at, p)| (*at..at + 50).contains(&i) && p[i - at] == b);
        assert!(
            b == last[i] || from_piece,
            "byte {i} is {b:#x}: from an older write"
        );
    }
    assert_clean(&*fs);
}

#[test]
fn a_crash_during_direct_writes_leaves_each_write_whole() {
    let fs = mount();
    let root = fs.root().unwrap();
    let f = root.create("f", &reg()).unwrap();
    let size = 1 << 20;
    f.write_at(0, &pattern(size, 0)).unwrap();
    f.fsync(false).unwrap();
    let base = fs.pager().inner.image();
    fs.pager().inner.record();
    // States after each fsync'd write: a rewrite, an unaligned overwrite (its partial end
    // chunks are buffered and committed by the transaction storing its whole chunks), a write
    // that grows the file. A crash shows one of these states, never half of a write.
    let mut model = pattern(size, 0);
    let mut states = vec![model.clone()];
    for (k, (off, len)) in [
        (0usize, size),
        (CHUNK / 2, 9 * CHUNK),
        (size - CHUNK + 100, 10 * CHUNK),
    ]
    .into_iter()
    .enumerate()
    {
        let piece = pattern(len, k as u8 + 1);
        write(&f, &mut model, off, &piece);
        f.fsync(false).unwrap();
        states.push(model.clone());
    }
    assert!(direct(&fs) > 0);
    let log = fs.pager().inner.take_log();
    let mut image = base;
    let mut last = 0;
    let mut seen = 0;
    for (i, ev) in log.iter().enumerate() {
        let PagerEvent::Write(off, bytes) = ev else {
            continue;
        };
        let at = *off as usize;
        // Torn: only the first half of this write reached the disk; then all of it.
        let mut torn = image.clone();
        torn.resize(torn.len().max(at + bytes.len()), 0);
        torn[at..at + bytes.len() / 2].copy_from_slice(&bytes[..bytes.len() / 2]);
        image.resize(image.len().max(at + bytes.len()), 0);
        image[at..at + bytes.len()].copy_from_slice(bytes);
        for candidate in [torn, image.clone()] {
            let crashed = DbFs::mount(MemPager::from_image(candidate), TestClock::new())
                .unwrap_or_else(|e| panic!("event {i}: mount failed: {e:?}"));
            assert_clean(&crashed);
            let got = read_all(&crashed.root().unwrap().lookup("f").unwrap());
            let k = states[last..]
                .iter()
                .position(|s| *s == got)
                .unwrap_or_else(|| {
                    panic!("event {i}: the file is none of the states at or after {last}")
                });
            last += k;
            seen = seen.max(last);
        }
    }
    assert_eq!(
        seen,
        states.len() - 1,
        "the replay never reached the last state"
    );
}

/// A gathered write (`write_gathered_at`, the pages of a user buffer as the kernel passes
/// them) stores the same bytes as `write_at` of the joined buffer, with the cache on and off,
/// whether its pieces fall on page boundaries or not, and whatever chunks its ends cut.
#[test]
fn gathered_writes_match_the_model() {
    let fs = mount();
    let root = fs.root().unwrap();
    let f = root.create("g", &reg()).unwrap();
    let mut model = Vec::new();
    let gathered = |f: &NodeRef, model: &mut Vec<u8>, off: usize, pieces: &[&[u8]]| {
        let joined = pieces.concat();
        assert_eq!(
            f.write_gathered_at(off as u64, pieces).unwrap().unwrap(),
            joined.len()
        );
        if model.len() < off + joined.len() {
            model.resize(off + joined.len(), 0);
        }
        model[off..off + joined.len()].copy_from_slice(&joined);
    };
    for (round, direct_min) in [(0u8, Some(DIRECT_WRITE_MIN)), (1, None)] {
        // What earlier rounds placed is committed first (a buffered write to a placed chunk
        // commits the file, which stores its buffered chunks with direct writes too).
        f.fsync(false).unwrap();
        fs.set_direct_write_min(direct_min);
        let before = direct(&fs);
        // Page pieces at a chunk boundary: the whole chunks go direct (when on).
        let buf = pattern(1 << 20, 60 + round);
        let pages: Vec<&[u8]> = buf.chunks(4096).collect();
        gathered(&f, &mut model, 2 << 20, &pages);
        if direct_min.is_some() {
            assert_eq!(
                direct(&fs) - before,
                1 << 20,
                "a chunk-aligned gathered write of pages"
            );
        } else {
            assert_eq!(direct(&fs), before, "the cache is off for direct writes");
        }
        check("pages", &f, &model);
        // The bytes of the whole chunks of a write of `len` at `off`, when direct writes
        // are on.
        let whole = |off: usize, len: usize| match direct_min {
            Some(_) => ((off + len) / CHUNK).saturating_sub(off.div_ceil(CHUNK)) * CHUNK,
            None => 0,
        };
        // Pieces of odd sizes at an odd offset: the whole chunks still go direct (kvdb joins
        // their pieces first).
        let before = direct(&fs);
        let buf = pattern(600_000, 70 + round);
        let odd: Vec<&[u8]> = buf.chunks(4093).collect();
        gathered(&f, &mut model, (1 << 20) + 333, &odd);
        assert_eq!(
            direct(&fs) - before,
            whole((1 << 20) + 333, 600_000),
            "odd pieces"
        );
        check("odd pieces", &f, &model);
        // A user buffer that does not start on a page: its pages split the chunk's pages,
        // and go direct as they are.
        let before = direct(&fs);
        let buf = pattern(1 << 20, 75 + round);
        let mut shifted: Vec<&[u8]> = vec![&buf[..1000]];
        shifted.extend(buf[1000..].chunks(4096));
        gathered(&f, &mut model, 4 << 20, &shifted);
        assert_eq!(
            direct(&fs) - before,
            whole(4 << 20, 1 << 20),
            "a buffer off a page"
        );
        check("buffer off a page", &f, &model);
        // Small gathered writes, inside one chunk and across two.
        let small = pattern(9000, 80 + round);
        gathered(
            &f,
            &mut model,
            5 * CHUNK + 10,
            &[&small[..10], &small[10..4000], &small[4000..]],
        );
        gathered(&f, &mut model, 7 * CHUNK - 50, &[&small[..100]]);
        check("small", &f, &model);
    }
    f.fsync(false).unwrap();
    assert_clean(&*fs);
    let fs = remount(fs);
    let f = fs.root().unwrap().lookup("g").unwrap();
    check("after remount", &f, &model);
}

#[test]
fn reads_of_placed_chunks_match_the_model() {
    let fs = mount();
    let root = fs.root().unwrap();
    let f = root.create("f", &reg()).unwrap();
    let mut model = Vec::new();
    // Two runs of placed chunks with a hole between them, then a small buffered write past
    // them (below the direct threshold, so nothing is committed).
    write(&f, &mut model, 0, &pattern(1 << 20, 90));
    write(&f, &mut model, (1 << 20) + 3 * CHUNK, &pattern(1 << 20, 91));
    write(
        &f,
        &mut model,
        (2 << 20) + 5 * CHUNK + 9,
        &pattern(3000, 92),
    );
    assert_eq!(fs.placed_pages(), Some(512));
    let reads = |fs: &DbFs<DirectPager>| fs.pager().reads_into.load(Ordering::SeqCst);
    // A 1 MiB read of one run: the chunks lie next to each other on the disk, and are read
    // with a few store reads, not one per chunk (64).
    let before = reads(&fs);
    let mut buf = vec![0u8; 1 << 20];
    assert_eq!(f.read_at(0, &mut buf).unwrap(), 1 << 20);
    assert!(buf == model[..1 << 20], "the first run differs");
    let n = reads(&fs) - before;
    assert!(n <= 4, "a 1 MiB read of placed chunks took {n} store reads");
    // Reads at odd offsets and lengths across the runs, the hole and the file's end.
    let len = model.len();
    for &(off, n) in &[
        (0, 1),
        (CHUNK - 1, 2),
        (5 * CHUNK + 17, 3 * CHUNK),
        ((1 << 20) - 100, 3 * CHUNK + 200),
        ((1 << 20) + 2 * CHUNK + 5, 2 * CHUNK),
        (1000, 1 << 20),
        (len - 5000, 10_000),
        (0, len + 1),
    ] {
        let mut buf = vec![0xeeu8; n];
        let got = f.read_at(off as u64, &mut buf).unwrap();
        let want = &model[off.min(len)..(off + n).min(len)];
        assert_eq!(got, want.len(), "read of {n} at {off}: length");
        assert!(&buf[..got] == want, "read of {n} at {off}: bytes differ");
    }
    // A truncate inside the second run's last chunk: its tail reads as zeros after a regrow.
    f.truncate(((2 << 20) + CHUNK + 100) as u64).unwrap();
    model.truncate((2 << 20) + CHUNK + 100);
    f.truncate((2 << 20) as u64 + 4 * CHUNK as u64).unwrap();
    model.resize((2 << 20) + 4 * CHUNK, 0);
    check("cut and regrown", &f, &model);
    let mut buf = vec![0u8; 1 << 20];
    let got = f.read_at((1 << 20) + 3 * CHUNK as u64, &mut buf).unwrap();
    assert!(buf[..got] == model[(1 << 20) + 3 * CHUNK..][..got]);
    f.fsync(false).unwrap();
    check("after fsync", &f, &model);
    // Stored chunks rewritten by a direct write (placed over them) and one buffered write
    // beside it: a read of the range reads the new bytes only, not the stored ones under them
    // too.
    write(&f, &mut model, 1 << 20, &pattern(1 << 20, 93));
    write(&f, &mut model, (2 << 20) + 100, &pattern(500, 94));
    assert_eq!(fs.placed_pages(), Some(256));
    let bytes = |fs: &DbFs<DirectPager>| fs.pager().read_into_bytes.load(Ordering::SeqCst);
    let before = bytes(&fs);
    let mut buf = vec![0u8; 1 << 20];
    assert_eq!(f.read_at(1 << 20, &mut buf).unwrap(), 1 << 20);
    assert!(buf == model[1 << 20..2 << 20], "the rewritten run differs");
    let moved = bytes(&fs) - before;
    assert!(
        moved <= 1 << 20,
        "a 1 MiB read of rewritten chunks read {moved} bytes of the store"
    );
    for &(off, n) in &[
        (1000, 1 << 20),
        ((1 << 20) - 7, 2 * CHUNK),
        ((2 << 20) - 50, 9000),
    ] {
        let mut buf = vec![0xeeu8; n];
        let got = f.read_at(off as u64, &mut buf).unwrap();
        assert!(
            buf[..got] == model[off..off + got],
            "read of {n} at {off} over stored"
        );
    }
    f.fsync(false).unwrap();
    check("after the second fsync", &f, &model);
    assert_clean(&*fs);
}

#[test]
fn placed_chunks_follow_punches_truncates_and_unlinks() {
    let fs = mount();
    let root = fs.root().unwrap();
    let f = root.create("f", &reg()).unwrap();
    let mut model = Vec::new();
    write(&f, &mut model, 0, &pattern(1 << 20, 50));
    assert_eq!(fs.placed_pages(), Some(256));
    // A hole over part of chunk 3 and all of chunks 5 and 6: the commit stores chunk 3 with
    // zeros there and frees the pages of 5 and 6.
    f.punch_hole((3 * CHUNK + 100) as u64, (3 * CHUNK) as u64)
        .unwrap();
    model[3 * CHUNK + 100..6 * CHUNK + 100].fill(0);
    assert_eq!(
        fs.placed_pages(),
        Some(0),
        "the punch's commit left chunks placed"
    );
    check("punched", &f, &model);
    // A truncate inside a placed chunk keeps its head, to a length stored inline too.
    write(&f, &mut model, 0, &pattern(1 << 20, 51));
    f.truncate((40 * CHUNK + 3000) as u64).unwrap();
    model.truncate(40 * CHUNK + 3000);
    check("cut", &f, &model);
    write(&f, &mut model, 0, &pattern(1 << 20, 52));
    f.truncate((20 * CHUNK + 5) as u64).unwrap();
    model.truncate(20 * CHUNK + 5);
    check("cut short", &f, &model);
    f.fsync(false).unwrap();
    assert_clean(&*fs);
    // Placed chunks of a file unlinked before any commit are freed, not left taken.
    let g = root.create("g", &reg()).unwrap();
    assert_eq!(g.write_at(0, &pattern(1 << 20, 53)).unwrap(), 1 << 20);
    assert_eq!(fs.placed_pages(), Some(256));
    drop(g);
    root.unlink("g").unwrap();
    assert_eq!(
        fs.placed_pages(),
        Some(0),
        "an unlinked file's chunks stayed placed"
    );
    fs.sync().unwrap();
    assert_clean(&*fs);
    drop(f);
    drop(root);
    check_after_remount(fs, &model);
}
