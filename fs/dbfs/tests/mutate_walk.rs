//! Damaged images, deterministic version of the `mount_walk` fuzz target (`fs/dbfs/fuzz`):
//! mount, fsck, a full walk, writes and a remount give errors, never a panic or a hang. Unlike
//! `corrupt.rs` (random bit flips), mutations are structured (page ids, lengths, copied slots)
//! and the meta checksums are re-sealed in half the cases, so damaged meta fields are reached.
mod mutate;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use xrand::XorShift64;

fn seed() -> &'static [u8] {
    static SEED: OnceLock<Vec<u8>> = OnceLock::new();
    SEED.get_or_init(mutate::seed_image)
}

/// Cases run; `DBFS_MUTATE_CASES=N` runs more.
fn cases() -> usize {
    std::env::var("DBFS_MUTATE_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1500)
}

#[test]
fn structured_mutations_give_errors_not_panics_or_hangs() {
    let cases = cases();
    let done = Arc::new(AtomicUsize::new(0));
    let mounted = Arc::new(AtomicUsize::new(0));
    let worker = {
        let (done, mounted) = (done.clone(), mounted.clone());
        std::thread::spawn(move || {
            for i in 0..cases {
                let mut rng = XorShift64::new(0xD1B5_4A32_D192_ED03 ^ (i as u64 + 1));
                let records = 1 + (rng.next_u64() % 6) as usize;
                let input: Vec<u8> = (0..1 + records * mutate::RECORD)
                    .map(|_| rng.next_u64() as u8)
                    .collect();
                if mutate::run_case(seed(), &input) {
                    mounted.fetch_add(1, Ordering::Relaxed);
                }
                done.store(i + 1, Ordering::SeqCst);
            }
        })
    };
    // A case that makes no progress for a minute is a loop.
    let mut last = (0, Instant::now());
    while !worker.is_finished() {
        std::thread::sleep(Duration::from_millis(50));
        let now = done.load(Ordering::SeqCst);
        if now != last.0 {
            last = (now, Instant::now());
        } else if last.1.elapsed() > Duration::from_secs(60) {
            panic!("case {now} made no progress for 60 s: a loop");
        }
    }
    if let Err(e) = worker.join() {
        std::panic::resume_unwind(e);
    }
    let mounted = mounted.load(Ordering::Relaxed);
    assert!(
        mounted > cases / 3,
        "only {mounted} of {cases} cases mounted"
    );
}

/// Found by the fuzzer: a one-chunk read starting past the bytes a chunk stores (a chunk value
/// shorter than the file size implies, e.g. a damaged length) panicked on a slice range
/// instead of reading zeros.
#[test]
fn read_past_a_short_chunk_reads_zeros() {
    use vfs::{FileSystem, FileType, NewNode};
    let opts = dbfs::MkfsOptions {
        chunk_size: 1024,
        ..dbfs::MkfsOptions::default()
    };
    let pager = dbfs::DbFs::mkfs(kvdb::MemPager::new(), opts).unwrap();
    let fs = dbfs::DbFs::mount(pager, Arc::new(vfs::ZeroClock)).unwrap();
    let f = fs
        .root()
        .unwrap()
        .create("f", &NewNode::new(FileType::Regular, 0o644))
        .unwrap();
    f.write_at(0, b"0123456789").unwrap();
    f.truncate(1000).unwrap();
    let mut buf = [9u8; 10];
    assert_eq!(f.read_at(500, &mut buf), Ok(10));
    assert_eq!(buf, [0; 10]);
}

/// Fuzzer inputs that panicked, replayed as they were found (see the comment on each).
#[test]
fn fuzzer_findings_replay_without_panics() {
    let found: &[(&str, &[u8])] = &[
        // An overflow value's page id near u64::MAX: its byte offset (page * page size)
        // overflowed in kvdb's cursor before the bounds check (fixed: checked_mul).
        (
            "overflow page id * page size",
            &[
                0x05, 0x02, 0x3a, 0xc8, 0xc8, 0xd1, 0xc8, 0xc8, 0xd1, 0xc8, 0xd1, 0x38, 0xd8, 0x00,
                0x2e,
            ],
        ),
        // Both meta pages re-sealed with txid u64::MAX: the next write transaction's txid + 1
        // overflowed in kvdb (fixed: such a meta is corrupt at open).
        // A meta txid just below u64::MAX, then commits (fixed: txids from 2^63 up are corrupt).
        (
            "meta txid near u64::MAX, then commits",
            &[
                0x03, 0x0c, 0x10, 0x10, 0x00, 0x10, 0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                0xff, 0x10, 0x01, 0x00, 0x00, 0xfa, 0x3a, 0x03, 0x0c, 0x10, 0x10, 0x00, 0x10, 0x10,
                0x00, 0x00, 0x10, 0x10, 0x00, 0x86, 0x01, 0x00, 0x00, 0x1a,
            ],
        ),
        (
            "meta txid u64::MAX",
            &[
                0x01, 0x05, 0x38, 0x69, 0x6e, 0x6f, 0x63, 0xff, 0xfd, 0x15, 0x01, 0x00, 0x10, 0x2f,
                0x10, 0x00, 0x00, 0x00, 0x00, 0x05, 0x10, 0x00,
            ],
        ),
    ];
    for (what, input) in found {
        eprintln!("{what}");
        mutate::run_case(seed(), input);
    }
}
