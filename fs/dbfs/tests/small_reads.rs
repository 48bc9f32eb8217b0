//! Small reads (inside one chunk) take a fast path that copies from a chunk location remembered
//! for the newest commit (`ChunkLocs`, no read transaction). These tests check that such reads
//! always return what a model of the file says, across buffered writes, commits, truncates,
//! holes and other files' commits, and that concurrent readers never see a torn or stale chunk.
mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;

use common::*;
use dbfs::MkfsOptions;
use vfs::{FileSystem, NodeRef, SetAttr};

/// Read `len` bytes at `offset` in 4 KiB calls (the last one may be shorter) and compare them
/// with `model`, including the end of file.
fn check_small_reads(f: &NodeRef, model: &[u8], offset: usize, len: usize, step: usize) {
    let mut at = offset;
    let mut buf = vec![0xAAu8; step];
    while at < offset + len {
        let n = f.read_at(at as u64, &mut buf).unwrap();
        let want = model.len().saturating_sub(at).min(step);
        assert_eq!(n, want, "read length at {at}");
        assert!(
            n == 0 || buf[..n] == model[at..at + n],
            "bytes at {at}..{}",
            at + n
        );
        at += step;
    }
}

fn rewrite(model: &mut Vec<u8>, f: &NodeRef, at: usize, data: &[u8]) {
    f.write_at(at as u64, data).unwrap();
    if model.len() < at + data.len() {
        model.resize(at + data.len(), 0);
    }
    model[at..at + data.len()].copy_from_slice(data);
}

fn small_reads_follow_every_change(opts: MkfsOptions) {
    let cs = opts.chunk_size as usize;
    let fs = fresh_with(opts);
    let root = fs.root().unwrap();
    let f = root.create("f", &reg()).unwrap();
    let other = root.create("other", &reg()).unwrap();
    let mut model = pattern(40 * cs + 1000, 1);
    f.write_at(0, &model).unwrap();
    fs.sync().unwrap();
    // Twice, so the second pass runs on remembered locations; then unaligned and odd sizes.
    for _ in 0..2 {
        check_small_reads(&f, &model, 0, model.len() + 4096, 4096);
    }
    check_small_reads(&f, &model, 100, model.len(), 1000);
    check_small_reads(&f, &model, cs - 7, 3 * cs, 13);

    // Buffered (not committed) chunks are seen at once, then the commit.
    rewrite(&mut model, &f, 3 * cs + 10, &pattern(5000, 2));
    check_small_reads(&f, &model, 0, 8 * cs, 4096);
    f.fsync(false).unwrap();
    check_small_reads(&f, &model, 0, 8 * cs, 4096);
    check_small_reads(&f, &model, 0, 8 * cs, 4096);

    // Another file's commit makes a new snapshot: nothing of `f` changes.
    other.write_at(0, &pattern(3 * cs, 3)).unwrap();
    other.fsync(false).unwrap();
    check_small_reads(&f, &model, 0, model.len(), 4096);

    // Shrink into a chunk, then grow again: the cut part reads as zeros.
    let cut = 5 * cs + 123;
    f.setattr(&SetAttr {
        size: Some(cut as u64),
        ..Default::default()
    })
    .unwrap();
    model.truncate(cut);
    check_small_reads(&f, &model, 0, 7 * cs, 4096);
    f.setattr(&SetAttr {
        size: Some((9 * cs) as u64),
        ..Default::default()
    })
    .unwrap();
    model.resize(9 * cs, 0);
    check_small_reads(&f, &model, 0, 10 * cs, 4096);
    check_small_reads(&f, &model, 0, 10 * cs, 4096);

    // A sparse file: holes between stored chunks read as zeros.
    let s = root.create("sparse", &reg()).unwrap();
    let mut smodel = Vec::new();
    rewrite(&mut smodel, &s, 0, &pattern(cs, 4));
    rewrite(&mut smodel, &s, 3 * cs + 5, &pattern(cs, 5));
    rewrite(&mut smodel, &s, 9 * cs, &pattern(2 * cs, 6));
    fs.sync().unwrap();
    for _ in 0..2 {
        check_small_reads(&s, &smodel, 0, smodel.len() + 10, 4096);
    }

    // Written over after being read (remembered locations are of an older snapshot now).
    rewrite(&mut smodel, &s, cs / 2, &pattern(4 * cs, 7));
    fs.sync().unwrap();
    check_small_reads(&s, &smodel, 0, smodel.len(), 4096);
    check_small_reads(&s, &smodel, 0, smodel.len(), 4096);

    // And after a remount.
    let fs = remount(fs);
    let root = fs.root().unwrap();
    check_small_reads(&root.lookup("f").unwrap(), &model, 0, model.len(), 4096);
    check_small_reads(
        &root.lookup("sparse").unwrap(),
        &smodel,
        0,
        smodel.len(),
        4096,
    );
    assert_clean(&*fs);
}

#[test]
fn small_reads_follow_every_change_default_chunks() {
    small_reads_follow_every_change(MkfsOptions::default());
}

#[test]
fn small_reads_follow_every_change_small_chunks() {
    // 1 KiB chunks are still overflow values; 512-byte ones are stored inline (no location).
    for cs in [1024, 512] {
        small_reads_follow_every_change(MkfsOptions {
            chunk_size: cs,
            ..Default::default()
        });
    }
}

/// A writer rewrites the whole file with one byte value per generation and commits; readers
/// read 4 KiB blocks in order: every block must hold one generation (a flush is atomic, a
/// block lies in one chunk), and at one offset generations never go backwards.
#[test]
fn concurrent_small_reads_see_whole_newest_chunks() {
    const SIZE: usize = 256 << 10;
    const GENERATIONS: u8 = 60;
    let fs = fresh();
    let root = fs.root().unwrap();
    let f = root.create("f", &reg()).unwrap();
    f.write_at(0, &vec![1u8; SIZE]).unwrap();
    fs.sync().unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..3)
        .map(|r| {
            let f = f.clone();
            let done = done.clone();
            thread::spawn(move || {
                let mut last = [0u8; SIZE / 4096];
                let mut buf = vec![0u8; 4096];
                let mut passes = 0;
                while !done.load(Ordering::SeqCst) || passes < 2 {
                    for k in 0..SIZE / 4096 {
                        // Readers start at different blocks, so they interleave differently.
                        let slot = (k + r * 7) % (SIZE / 4096);
                        let at = slot * 4096;
                        assert_eq!(f.read_at(at as u64, &mut buf).unwrap(), 4096);
                        let g = buf[0];
                        assert!(
                            buf.iter().all(|&b| b == g),
                            "torn block at {at}: {g} and others"
                        );
                        assert!(
                            g >= last[slot],
                            "block at {at} went back from {} to {g}",
                            last[slot]
                        );
                        last[slot] = g;
                    }
                    passes += 1;
                }
            })
        })
        .collect();
    for g in 2..=GENERATIONS {
        f.write_at(0, &vec![g; SIZE]).unwrap();
        if g % 3 == 0 {
            // Sometimes left buffered while readers read (the next write replaces it).
            continue;
        }
        f.fsync(false).unwrap();
    }
    f.fsync(false).unwrap();
    done.store(true, Ordering::SeqCst);
    for r in readers {
        r.join().unwrap();
    }
    let mut buf = vec![0u8; 4096];
    for at in (0..SIZE).step_by(4096) {
        f.read_at(at as u64, &mut buf).unwrap();
        assert!(buf.iter().all(|&b| b == GENERATIONS));
    }
    assert_clean(&*fs);
}
