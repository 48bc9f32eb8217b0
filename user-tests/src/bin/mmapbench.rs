//! `mmapbench DIR [size=MiB] [reps=N] [ops=N]`: reading a file through a mapping against
//! read(2), cold (caches dropped before each timed run), alternated in one boot.
//!
//! - `seq`: the whole file, in order: read(2) with a 1 MiB buffer, or a `MAP_SHARED` mapping
//!   whose every word is loaded (both sum the words, so both touch every byte once);
//! - `rand`: `ops` random 4 KiB pages: pread(2) of 4 KiB, or the page's words loaded through the
//!   mapping (same offsets for both).
//!
//! Prints one `RESULT` line per run and a table of medians (MiB/s; pages per second for rand).
#![no_std]
#![no_main]

use user_tests::prelude::*;
use user_tests::rng::XorShift64;
use user_tests::time::now_ns;

const MIB: usize = 1 << 20;
const PAGE: usize = 4096;

fn drop_caches() {
    if let Err(e) = sys::drop_caches() {
        println!("drop_caches: {}", e.name());
    }
}

fn sum_buf(buf: &[u8]) -> u64 {
    buf.chunks_exact(8)
        .map(|w| u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]))
        .fold(0u64, |a, b| a.wrapping_add(b))
}

fn seq_read(f: &File, size: usize) -> SysResult<u64> {
    let mut buf = vec![0u8; MIB];
    let mut sum = 0u64;
    let mut off = 0;
    while off < size {
        let n = f.pread_full(&mut buf, off as u64)?;
        sum = sum.wrapping_add(sum_buf(&buf[..n]));
        off += MIB;
    }
    Ok(sum)
}

fn seq_map(f: &File, size: usize) -> SysResult<u64> {
    let m = sys::mmap(0, size, PROT_READ, MAP_SHARED, f.fd(), 0)?;
    Ok(m.sum_words(0, size))
}

fn offsets(size: usize, ops: usize) -> Vec<usize> {
    let mut rng = XorShift64::new(42);
    (0..ops)
        .map(|_| rng.below((size / PAGE) as u64) as usize * PAGE)
        .collect()
}

fn rand_read(f: &File, offs: &[usize]) -> SysResult<u64> {
    let mut buf = [0u8; PAGE];
    let mut sum = 0u64;
    for &o in offs {
        f.pread_full(&mut buf, o as u64)?;
        sum = sum.wrapping_add(sum_buf(&buf));
    }
    Ok(sum)
}

fn rand_map(f: &File, size: usize, offs: &[usize]) -> SysResult<u64> {
    let m = sys::mmap(0, size, PROT_READ, MAP_SHARED, f.fd(), 0)?;
    Ok(offs
        .iter()
        .fold(0u64, |a, &o| a.wrapping_add(m.sum_words(o, PAGE))))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(core::cmp::Ordering::Equal));
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

fn main(argv: &[&str]) -> i32 {
    let Some(dir) = argv.get(1) else {
        println!("usage: mmapbench DIR [size=MiB] [reps=N] [ops=N]");
        return 2;
    };
    let (mut size_mib, mut reps, mut ops) = (64usize, 3usize, 4096usize);
    for a in &argv[2..] {
        match user_tests::args::split_kv(a) {
            ("size", Some(v)) => size_mib = v.parse().unwrap_or(size_mib),
            ("reps", Some(v)) => reps = v.parse().unwrap_or(reps),
            ("ops", Some(v)) => ops = v.parse().unwrap_or(ops),
            _ => {}
        }
    }
    let size = size_mib * MIB;
    let path = format!("{dir}/mmapbench.dat");
    let setup = (|| -> SysResult<File> {
        let f = File::open(&path, O_RDWR | O_CREAT | O_TRUNC, 0o644)?;
        let mut chunk = vec![0u8; MIB];
        let mut rng = XorShift64::new(7);
        for i in 0..size_mib {
            rng.fill_bytes(&mut chunk);
            f.pwrite_all(&chunk, (i * MIB) as u64)?;
        }
        f.sync()?;
        Ok(f)
    })();
    let f = match setup {
        Ok(f) => f,
        Err(e) => {
            println!("mmapbench: setup of {path}: {}", e.name());
            return 1;
        }
    };
    let offs = offsets(size, ops);
    let fs = dir.trim_start_matches('/');
    let mut rows: [(&str, Vec<f64>); 4] = [
        ("seq-read1m", Vec::new()),
        ("seq-mmap", Vec::new()),
        ("rand-pread4k", Vec::new()),
        ("rand-mmap4k", Vec::new()),
    ];
    let mut sums = [0u64; 4];
    for rep in 1..=reps {
        for (k, row) in rows.iter_mut().enumerate() {
            drop_caches();
            let before = sys::counters().ok();
            let t = now_ns();
            let r = match k {
                0 => seq_read(&f, size),
                1 => seq_map(&f, size),
                2 => rand_read(&f, &offs),
                _ => rand_map(&f, size, &offs),
            };
            let secs = (now_ns() - t) as f64 / 1e9;
            if let (Some(b), Ok(a)) = (before, sys::counters()) {
                println!(
                    "IO bench=mmapbench-{} fs={fs} rep={rep} dev_reads={} dev_read_kib={} faults={}",
                    row.0,
                    a.dev_read_requests - b.dev_read_requests,
                    (a.dev_read_bytes - b.dev_read_bytes) / 1024,
                    a.page_faults - b.page_faults
                );
            }
            let sum = match r {
                Ok(s) => s,
                Err(e) => {
                    println!("mmapbench: {}: {}", row.0, e.name());
                    return 1;
                }
            };
            if rep > 1 && sum != sums[k] {
                println!("mmapbench: {}: checksum changed between runs", row.0);
                return 1;
            }
            sums[k] = sum;
            let value = if k < 2 {
                size as f64 / MIB as f64 / secs
            } else {
                ops as f64 / secs
            };
            println!(
                "RESULT bench=mmapbench-{} fs={fs} rep={rep} value={value:.1} secs={secs:.3}",
                row.0
            );
            row.1.push(value);
        }
    }
    if sums[0] != sums[1] || sums[2] != sums[3] {
        println!("mmapbench: the mapping and read(2) disagree");
        return 1;
    }
    println!();
    println!("  mmapbench {fs}, {size_mib} MiB file, cold, median of {reps}");
    for (name, v) in rows {
        let unit = if name.starts_with("seq") {
            "MiB/s"
        } else {
            "pages/s"
        };
        println!("  {name:<14} {:>10.1} {unit}", median(v));
    }
    let _ = sys::unlink(&path);
    0
}

user_tests::entry!(main);
