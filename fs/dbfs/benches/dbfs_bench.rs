//! Host benchmark of dbfs over a RAM pager, a file pager and a zero-copy slice pager.
//!
//! `cargo bench -p dbfs --bench dbfs_bench [-- --reps N --quick]`
//!
//! Workloads (shared/BENCH-PROTOCOL.md, run through the vfs traits, no kernel):
//! seqwrite / rewrite 10 MiB in 1 MiB and 4 KiB blocks + fsync; seqread 10 MiB in 1 MiB and
//! 4 KiB blocks; randwrite4k / randread4k: 10000 ops on a 16 MiB file (+ fsync for writes);
//! randwrite / randread 1 MiB: 1000 ops on a 16 MiB file; createdel: N = 20000 files named
//! x%06d created in random order (1 byte each), then unlinked in sorted order.
//! Each figure is the median of `--reps` runs (default 3), each on a fresh file system.
//! MB/s = 10^6 bytes/s.

use std::sync::Arc;
use std::time::Instant;

use dbfs::{DbFs, MkfsOptions};
use kvdb::{FilePager, MemPager, Pager, SlicePager};
use vfs::{FileSystem, FileType, NewNode, NodeRef, Timestamp};
use xrand::XorShift64;

struct HostClock(Instant);
impl vfs::Clock for HostClock {
    fn now(&self) -> Timestamp {
        let d = self.0.elapsed();
        Timestamp {
            sec: 1_700_000_000 + d.as_secs() as i64,
            nsec: d.subsec_nanos(),
        }
    }
}

fn clock() -> Arc<dyn vfs::Clock> {
    Arc::new(HostClock(Instant::now()))
}

const MIB: usize = 1 << 20;
const FILE: usize = 10 * MIB;
const RAND_FILE: usize = 16 * MIB;

fn reg() -> NewNode {
    NewNode::new(FileType::Regular, 0o644)
}

fn fill(f: &NodeRef, size: usize, bs: usize) {
    let buf = vec![0x5au8; bs];
    for at in (0..size).step_by(bs) {
        f.write_at(at as u64, &buf).unwrap();
    }
    f.fsync(false).unwrap();
}

/// One measurement: (bytes or ops, seconds).
fn run_one<P: Pager + Send + Sync + 'static>(
    fs: &Arc<DbFs<P>>,
    bench: &str,
    bs: usize,
) -> (u64, f64) {
    let root = fs.root().unwrap();
    match bench {
        "seqwrite" | "rewrite" => {
            let f = root.create("f", &reg()).unwrap();
            if bench == "rewrite" {
                fill(&f, FILE, MIB);
            }
            let buf = vec![0xa5u8; bs];
            let t = Instant::now();
            f.open().unwrap();
            for at in (0..FILE).step_by(bs) {
                f.write_at(at as u64, &buf).unwrap();
            }
            f.fsync(false).unwrap();
            f.release().unwrap();
            (FILE as u64, t.elapsed().as_secs_f64())
        }
        "seqread" => {
            let f = root.create("f", &reg()).unwrap();
            fill(&f, FILE, MIB);
            let mut buf = vec![0u8; bs];
            let t = Instant::now();
            for at in (0..FILE).step_by(bs) {
                assert_eq!(f.read_at(at as u64, &mut buf).unwrap(), bs);
            }
            (FILE as u64, t.elapsed().as_secs_f64())
        }
        "randread" | "randwrite" => {
            let f = root.create("f", &reg()).unwrap();
            fill(&f, RAND_FILE, MIB);
            let ops = if bs == MIB { 1000 } else { 10_000 };
            let slots = (RAND_FILE / bs) as u64;
            let mut rng = XorShift64::new(0x9e37_79b9_7f4a_7c15);
            let mut buf = vec![0x33u8; bs];
            let t = Instant::now();
            for _ in 0..ops {
                let at = rng.below(slots) * bs as u64;
                if bench == "randread" {
                    assert_eq!(f.read_at(at, &mut buf).unwrap(), bs);
                } else {
                    f.write_at(at, &buf).unwrap();
                }
            }
            if bench == "randwrite" {
                f.fsync(false).unwrap();
            }
            ((ops * bs) as u64, t.elapsed().as_secs_f64())
        }
        "createdel" => {
            let n = bs;
            let d = root
                .create("d", &NewNode::new(FileType::Directory, 0o755))
                .unwrap();
            let mut order: Vec<usize> = (0..n).collect();
            XorShift64::new(12345).shuffle(&mut order);
            let t = Instant::now();
            for i in order {
                let f = d.create(&format!("x{i:06}"), &reg()).unwrap();
                f.write_at(0, b"x").unwrap();
                f.release().unwrap();
            }
            for i in 0..n {
                d.unlink(&format!("x{i:06}")).unwrap();
            }
            (n as u64, t.elapsed().as_secs_f64())
        }
        other => panic!("unknown bench {other}"),
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let reps = args
        .iter()
        .position(|a| a == "--reps")
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(3usize);
    let quick = args.iter().any(|a| a == "--quick");
    let chunk: u32 = args
        .iter()
        .position(|a| a == "--chunk")
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(dbfs::DEFAULT_CHUNK_SIZE);
    let n_files = if quick { 2000 } else { 20_000 };
    let work: Vec<(&str, usize)> = vec![
        ("seqwrite", MIB),
        ("seqwrite", 4096),
        ("rewrite", MIB),
        ("seqread", MIB),
        ("seqread", 4096),
        ("randwrite", MIB),
        ("randread", MIB),
        ("randwrite", 4096),
        ("randread", 4096),
        ("createdel", n_files),
    ];
    let opts = MkfsOptions {
        chunk_size: chunk,
        ..Default::default()
    };
    println!("dbfs host bench: chunk {chunk} B, page 4096 B, median of {reps}");
    let mut table = Vec::new();
    let pagers: Vec<String> = args
        .iter()
        .position(|a| a == "--pagers")
        .and_then(|i| args.get(i + 1))
        .map(|s| s.split(',').map(String::from).collect())
        .unwrap_or_else(|| {
            ["mem", "file", "file-nosync", "slice"]
                .map(String::from)
                .to_vec()
        });
    for pager_kind in pagers.iter().map(String::as_str) {
        for &(bench, bs) in &work {
            if pager_kind == "slice" && !bench.starts_with("randread") && bench != "seqread" {
                continue;
            }
            // With a real fdatasync per commit (two per transaction), createdel is bound by the
            // disk's flush latency: run it at the protocol's smallest N.
            let bs = if pager_kind == "file" && bench == "createdel" {
                bs.min(1000)
            } else {
                bs
            };
            let mut secs = Vec::new();
            let mut amount = 0;
            for _ in 0..reps {
                let (a, s) = match pager_kind {
                    "mem" => {
                        let fs = DbFs::mount(
                            DbFs::mkfs(MemPager::new(), opts.clone()).unwrap(),
                            clock(),
                        )
                        .unwrap();
                        run_one(&fs, bench, bs)
                    }
                    "file" | "file-nosync" => {
                        let tmp = tempfile::NamedTempFile::new().unwrap();
                        let mut pager = FilePager::from_file(tmp.reopen().unwrap()).unwrap();
                        if pager_kind == "file-nosync" {
                            pager = pager.without_sync();
                        }
                        let fs =
                            DbFs::mount(DbFs::mkfs(pager, opts.clone()).unwrap(), clock()).unwrap();
                        run_one(&fs, bench, bs)
                    }
                    _ => {
                        // Read-only zero-copy pager over an image prepared in RAM: the shape of
                        // the kernel's memory window (values are borrowed, not copied).
                        let fs = DbFs::mount(
                            DbFs::mkfs(MemPager::new(), opts.clone()).unwrap(),
                            clock(),
                        )
                        .unwrap();
                        let root = fs.root().unwrap();
                        let f = root.create("f", &reg()).unwrap();
                        fill(&f, if bench == "seqread" { FILE } else { RAND_FILE }, MIB);
                        drop((f, root));
                        fs.sync().unwrap();
                        let image: &'static [u8] = Box::leak(fs.pager().image().into_boxed_slice());
                        drop(fs);
                        let ro = DbFs::mount(SlicePager(image), clock()).unwrap();
                        let root = ro.root().unwrap();
                        let f = root.lookup("f").unwrap();
                        let size = f.getattr().unwrap().size as usize;
                        let mut buf = vec![0u8; bs];
                        // Untimed pass: fault in the freshly copied image (host page faults).
                        for at in (0..size).step_by(MIB) {
                            f.read_at(at as u64, &mut vec![0u8; MIB]).unwrap();
                        }
                        let t = Instant::now();
                        let mut done = 0u64;
                        if bench == "seqread" {
                            for at in (0..size).step_by(bs) {
                                f.read_at(at as u64, &mut buf).unwrap();
                            }
                            done = size as u64;
                        } else {
                            let ops = if bs == MIB { 1000 } else { 10_000 };
                            let mut rng = XorShift64::new(0x9e37_79b9_7f4a_7c15);
                            for _ in 0..ops {
                                let at = rng.below((size / bs) as u64) * bs as u64;
                                f.read_at(at, &mut buf).unwrap();
                                done += bs as u64;
                            }
                        }
                        (done, t.elapsed().as_secs_f64())
                    }
                };
                amount = a;
                secs.push(s);
            }
            let s = median(secs);
            let (figure, unit) = if bench == "createdel" {
                (amount as f64 / s, "files/s")
            } else {
                (amount as f64 / s / 1e6, "MB/s")
            };
            let bs_label = if bench == "createdel" {
                format!("N={bs}")
            } else if bs == MIB {
                "1 MiB".into()
            } else {
                "4 KiB".into()
            };
            println!(
                "RESULT bench={bench} fs=dbfs pager={pager_kind} bs={bs} amount={amount} secs={s:.4} {}={figure:.1}",
                unit.replace('/', "p")
            );
            table.push(format!(
                "| {pager_kind} | {bench} | {bs_label} | {figure:.1} {unit} | {s:.3} s |"
            ));
        }
    }
    println!("\n| pager | workload | block | median | time |\n|---|---|---|---:|---:|");
    for row in table {
        println!("{row}");
    }
}
