//! Damaged FAT volumes through the adapter: mount, walk, read, write, rename and unlink give
//! errors, never a panic or a hang. A deterministic version of the `mount_walk` fuzz target
//! (`fs/fat32/fuzz`), bounded by a count of cases, plus the loops fatfs itself would not stop.
mod mutate;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use fat32::Fat32Fs;
use mutate::{Layout, Overlay};
use vfs::{FileSystem, VfsError};
use xrand::XorShift64;

fn seed() -> &'static (Arc<Vec<u8>>, Layout) {
    static SEED: OnceLock<(Arc<Vec<u8>>, Layout)> = OnceLock::new();
    SEED.get_or_init(|| {
        let image = mutate::seed_image();
        let layout = Layout::of(&image);
        (Arc::new(image), layout)
    })
}

/// Run `cases` on a worker thread; fail if one case makes no progress for `stall` (a loop).
fn with_watchdog(cases: usize, stall: Duration, case: impl Fn(usize) + Send + 'static) {
    let done = Arc::new(AtomicUsize::new(0));
    let worker = {
        let done = done.clone();
        std::thread::spawn(move || {
            for i in 0..cases {
                case(i);
                done.store(i + 1, Ordering::SeqCst);
            }
        })
    };
    let mut last = (0, Instant::now());
    while !worker.is_finished() {
        std::thread::sleep(Duration::from_millis(50));
        let now = done.load(Ordering::SeqCst);
        if now != last.0 {
            last = (now, Instant::now());
        } else if last.1.elapsed() > stall {
            panic!("case {now} made no progress for {stall:?}: a loop");
        }
    }
    if let Err(e) = worker.join() {
        std::panic::resume_unwind(e);
    }
}

/// Cases of the random test; `FAT32_CORRUPT_CASES=N` runs more (each is 1..8 mutations).
fn cases() -> usize {
    std::env::var("FAT32_CORRUPT_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000)
}

#[test]
fn random_mutations_give_errors_not_panics_or_hangs() {
    let cases = cases();
    let mounted = Arc::new(AtomicUsize::new(0));
    let m = mounted.clone();
    with_watchdog(cases, Duration::from_secs(60), move |i| {
        let (image, layout) = seed();
        let mut rng = XorShift64::new(0x9E37_79B9_7F4A_7C15 ^ (i as u64 + 1));
        let records = 1 + (rng.next_u64() % 8) as usize;
        let input: Vec<u8> = (0..records * mutate::RECORD)
            .map(|_| rng.next_u64() as u8)
            .collect();
        if mutate::run_case(image, layout, &input) {
            m.fetch_add(1, Ordering::Relaxed);
        }
    });
    // Most single mutations leave a mountable volume: the walk and writes did run.
    let mounted = mounted.load(Ordering::Relaxed);
    assert!(
        mounted > cases / 2,
        "only {mounted} of {cases} cases mounted"
    );
}

/// Every cluster the seed uses, pointed at itself in the FAT: each directory's and file's chain
/// in turn becomes a loop. fatfs alone would list such a directory forever.
#[test]
fn every_chain_made_a_loop_gives_errors_not_hangs() {
    with_watchdog(700, Duration::from_secs(60), |i| {
        let (image, layout) = seed();
        let cluster = 2 + i as u64;
        let dev = Arc::new(Overlay::new(image.clone()));
        dev.poke(
            layout.fat_start + 4 * cluster,
            &(cluster as u32).to_le_bytes(),
        );
        mutate::exercise(dev);
    });
}

#[test]
fn looping_root_directory_is_corrupt_at_mount() {
    let (image, layout) = seed();
    // Root is cluster 2: FAT[2] = 2.
    let dev = Arc::new(Overlay::new(image.clone()));
    dev.poke(layout.fat_start + 8, &2u32.to_le_bytes());
    assert_eq!(
        Fat32Fs::mount(dev, Arc::new(mutate::FixedClock)).err(),
        Some(VfsError::Corrupted)
    );
    // A longer loop through a second cluster (the root's next cluster links back).
    let dev = Arc::new(Overlay::new(image.clone()));
    dev.poke(layout.fat_start + 8, &600u32.to_le_bytes());
    dev.poke(layout.fat_start + 4 * 600, &2u32.to_le_bytes());
    assert_eq!(
        Fat32Fs::mount(dev, Arc::new(mutate::FixedClock)).err(),
        Some(VfsError::Corrupted)
    );
}

#[test]
fn looping_subdirectory_is_corrupt_and_the_rest_still_works() {
    let (image, layout) = seed();
    let dev = Arc::new(Overlay::new(image.clone()));
    // The first subdirectory in the data area (its `.` entry names its own cluster); link the
    // last cluster of its chain back to the first.
    let mut found = None;
    let cluster_size = 512u64;
    for c in 3u64..200 {
        let mut dot = [0u8; 32];
        dev.peek(layout.data_start + (c - 2) * cluster_size, &mut dot);
        let mut dotdot = [0u8; 32];
        dev.peek(layout.data_start + (c - 2) * cluster_size + 32, &mut dotdot);
        if &dot[..11] == b".          " && &dotdot[..11] == b"..         " && found.is_none() {
            let own = u32::from_le_bytes([dot[26], dot[27], dot[20], dot[21]]) as u64;
            if own == c {
                found = Some(c);
            }
        }
    }
    let first = found.expect("a subdirectory in the seed");
    // Follow the chain to its end and link the end back to the start.
    let mut c = first;
    loop {
        let mut e = [0u8; 4];
        dev.peek(layout.fat_start + 4 * c, &mut e);
        let next = u64::from(u32::from_le_bytes(e) & 0x0FFF_FFFF);
        if next >= 0x0FFF_FFF8 {
            break;
        }
        c = next;
    }
    dev.poke(layout.fat_start + 4 * c, &(first as u32).to_le_bytes());
    let fs = Fat32Fs::mount(dev, Arc::new(mutate::FixedClock)).unwrap();
    let root = fs.root().unwrap();
    let mut bad = 0;
    let mut names = Vec::new();
    root.readdir(0, &mut |e| {
        names.push(e.name.to_string());
        true
    })
    .unwrap();
    for name in names.iter().filter(|n| *n != "." && *n != "..") {
        let node = root.lookup(name).unwrap();
        if node.readdir(0, &mut |_| true) == Err(VfsError::Corrupted) {
            bad += 1;
            assert_eq!(node.lookup("x").err(), Some(VfsError::Corrupted));
            assert_eq!(
                node.create("x", &vfs::NewNode::new(vfs::FileType::Regular, 0o644))
                    .err(),
                Some(VfsError::Corrupted)
            );
            assert_eq!(root.rmdir(name), Err(VfsError::Corrupted));
        }
    }
    assert_eq!(bad, 1, "exactly the damaged directory fails");
    // The rest of the volume still works.
    assert!(root.lookup("hello.txt").is_ok());
    fs.sync().unwrap();
}

#[test]
fn file_larger_than_the_volume_is_corrupt_at_open() {
    let (image, _) = seed();
    let dev = Arc::new(Overlay::new(image.clone()));
    let fs = Fat32Fs::mount(dev.clone(), Arc::new(mutate::FixedClock)).unwrap();
    let root = fs.root().unwrap();
    let f = root.lookup("big.bin").unwrap();
    assert_eq!(f.getattr().unwrap().size, 70_000);
    drop((f, root, fs));
    // Patch the size field of big.bin's short entry in the root directory (cluster 2).
    let layout = Layout::of(image);
    let mut sector = [0u8; 512];
    dev.peek(layout.data_start, &mut sector);
    let at = sector
        .chunks(32)
        .position(|e| &e[..11] == b"BIG     BIN")
        .expect("BIG.BIN entry");
    dev.poke(
        layout.data_start + at as u64 * 32 + 28,
        &0xFFFF_FF00u32.to_le_bytes(),
    );
    let fs = Fat32Fs::mount(dev, Arc::new(mutate::FixedClock)).unwrap();
    let f = fs.root().unwrap().lookup("big.bin").unwrap();
    let mut buf = [0u8; 16];
    assert_eq!(f.read_at(0, &mut buf), Err(VfsError::Corrupted));
    assert_eq!(f.write_at(0xFFFF_0000, &buf), Err(VfsError::Corrupted));
}
