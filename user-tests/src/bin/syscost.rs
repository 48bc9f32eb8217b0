//! `syscost [DIR...]` (e.g. `make run INIT=/bin/syscost`): what one system call costs, to explain small-block figures. For each
//! directory: a 1 MiB file is written, then timed loops of `getppid` (the bare trap),
//! `pread` of 0 bytes (fd lookup + file-system entry), of 1 byte (the file system's lookup
//! without the copy), and of 4 KiB at one offset and sequentially; then 4 KiB `pwrite`s
//! sequentially over the file (`pwrite4k_over`) and appending to a new one
//! (`pwrite4k_append`, as fio's first write pass); `fstat`, and `stat` by path of the file
//! and of one three directories deeper (`stat_deep`); with `only=pread1m_seq` or
//! `only=pwrite1m_over`, 1 MiB `pread`s or `pwrite`s over the file instead. Prints `SYSCOST dir=... op=... ns_per_call=...` lines. Not part of the tests.
//! Options: `calls=N` (default 5000 per loop; more to profile one loop), `only=OP` (run
//! only that loop, e.g. `only=pread4k_seq`) and `sync=1` (a `sync` before each loop: the
//! reads then find their inode committed, with its atime current, as a file read again
//! after the write-back timer ran; without it the atime update of the first read is still
//! buffered).
#![no_std]
#![no_main]

extern crate alloc;
use alloc::format;
use alloc::vec;
use alloc::vec::Vec;
use user_tests::prelude::*;
use user_tests::time::Stopwatch;

/// A timed loop: its name, bytes per call and the offset of call i.
type Loop = (&'static str, usize, fn(u64) -> u64);

/// What the kernel did besides the calls themselves since `before` (page faults, device
/// reads, commits), as ` faults=.. dev_reads=.. commits=..`; empty without counters.
fn io_note(before: Option<abi::syscall::KernelCounters>) -> alloc::string::String {
    match (before, sys::counters().ok()) {
        (Some(b), Some(a)) => format!(
            " faults={} dev_reads={} commits={}",
            a.page_faults - b.page_faults,
            a.dev_read_requests - b.dev_read_requests,
            a.transactions - b.transactions
        ),
        _ => alloc::string::String::new(),
    }
}

fn per_call(sw: &Stopwatch, calls: u64) -> u64 {
    sw.elapsed_ns() / calls.max(1)
}

/// The value of option `key=` among `argv`.
fn option<'a>(argv: &[&'a str], key: &str) -> Option<&'a str> {
    argv.iter()
        .find_map(|a| a.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
}

/// Create (or empty) `path` for reading and writing; `None` after saying why not.
fn create(path: &str) -> Option<File> {
    File::open(path, O_RDWR | O_CREAT | O_TRUNC, 0o644)
        .map_err(|e| println!("{path}: {}", e.name()))
        .ok()
}

/// `calls` `pwrite`s of `len` bytes to `f`, call i at `at(i)`, timed and printed as `op`.
fn timed_writes(dir: &str, op: &str, f: &File, len: usize, calls: u64, at: fn(u64) -> u64) {
    let buf = vec![0x5au8; len];
    let before = sys::counters().ok();
    let sw = Stopwatch::start();
    for i in 0..calls {
        let _ = f.pwrite(&buf, at(i));
    }
    println!(
        "SYSCOST dir={dir} op={op} ns_per_call={}{}",
        per_call(&sw, calls),
        io_note(before)
    );
}

fn main(argv: &[&str]) -> i32 {
    // Arguments with '=' are the benchmark options `make run` passes to every init: ignored.
    let given: Vec<&str> = argv
        .iter()
        .skip(1)
        .copied()
        .filter(|a| !a.contains('='))
        .collect();
    let dirs: Vec<&str> = if given.is_empty() {
        vec!["/dbfs", "/fat"]
    } else {
        given
    };
    let calls: u64 = option(argv, "calls")
        .and_then(|v| v.parse().ok())
        .unwrap_or(5000);
    let only = option(argv, "only");
    let sync_first = option(argv, "sync") == Some("1");
    // The 1 MiB loops move gigabytes at the default call count: only when asked by name.
    const OPT_IN: [&str; 2] = ["pread1m_seq", "pwrite1m_over"];
    let run = |op: &str| match only {
        Some(o) => o == op,
        None => !OPT_IN.contains(&op),
    };
    if run("getppid") {
        let sw = Stopwatch::start();
        for _ in 0..calls {
            let _ = sys::getppid();
        }
        println!("SYSCOST op=getppid ns_per_call={}", per_call(&sw, calls));
    }
    for dir in &dirs {
        let path = format!("{dir}/syscost.dat");
        let Some(f) = create(&path) else {
            return 1;
        };
        let data: Vec<u8> = (0..8u32 << 20).map(|i| i as u8).collect();
        if f.write_all(&data).and_then(|_| f.sync()).is_err() {
            println!("{path}: write failed");
            return 1;
        }
        let mut buf = vec![0u8; 1 << 20];
        // (name, bytes per call, offset of call i): 0 bytes = fd lookup + file-system entry;
        // 1 byte = the file system's lookup without the 4 KiB copy.
        let loops: [Loop; 7] = [
            ("pread0", 0, |_| 0),
            ("pread1", 1, |_| 8192),
            ("pread4k_same", 4096, |_| 8192),
            ("pread4k_seq", 4096, |i| (i * 4096) % (1 << 20)),
            // Sequential over 64 KiB only: the same pages again and again (TLB-resident).
            ("pread4k_seq64k", 4096, |i| (i * 4096) % (64 << 10)),
            ("pread4k_seq8m", 4096, |i| (i * 4096) % (8 << 20)),
            // 1 MiB reads over the whole file: the large-read path (the disk straight into
            // the caller's pages on dbfs). Opt-in (`OPT_IN`).
            ("pread1m_seq", 1 << 20, |i| (i << 20) % (8 << 20)),
        ];
        for (op, len, at) in loops {
            if !run(op) {
                continue;
            }
            if sync_first {
                let _ = sys::sync();
            }
            let before = sys::counters().ok();
            let sw = Stopwatch::start();
            for i in 0..calls {
                let _ = f.pread(&mut buf[..len], at(i));
            }
            let ns = per_call(&sw, calls);
            println!(
                "SYSCOST dir={dir} op={op} ns_per_call={ns}{}",
                io_note(before)
            );
        }
        // read(2) through the file offset, as the seqread4k benchmark reads (back to the
        // start at the end of the file): the offset lock and update on top of pread.
        if run("read4k_seq") {
            let _ = f.seek(0, SEEK_SET);
            let sw = Stopwatch::start();
            for i in 0..calls {
                if i % 256 == 0 {
                    let _ = f.seek(0, SEEK_SET);
                }
                let _ = f.read_full(&mut buf[..4096]);
            }
            println!(
                "SYSCOST dir={dir} op=read4k_seq ns_per_call={}",
                per_call(&sw, calls)
            );
        }
        // 4 KiB writes: over the file written above (each write replaces stored data), and
        // appending to a new file. Both include whatever the writes cause (commits of the
        // write-back cache at its dirty limit, FAT cluster allocation), as fio's writes do.
        if run("pwrite4k_over") {
            timed_writes(dir, "pwrite4k_over", &f, 4096, calls, |i| {
                (i * 4096) % (8 << 20)
            });
        }
        // 1 MiB writes over the file (the large-write path: each a transaction of its own
        // on dbfs, stored from the caller's pages). Opt-in (`OPT_IN`).
        if run("pwrite1m_over") {
            timed_writes(dir, "pwrite1m_over", &f, 1 << 20, calls, |i| {
                (i << 20) % (8 << 20)
            });
        }
        // Attributes: of the open file, and by path (the path walk: two components below
        // the root for /dbfs/syscost.dat, five for the deep one).
        let deep = format!("{dir}/sc.1/sc.2/sc.3/sc.f");
        let made = sys::mkdir(&format!("{dir}/sc.1"), 0o755)
            .and_then(|_| sys::mkdir(&format!("{dir}/sc.1/sc.2"), 0o755))
            .and_then(|_| sys::mkdir(&format!("{dir}/sc.1/sc.2/sc.3"), 0o755))
            .is_ok()
            && create(&deep).is_some();
        let stats: [(&str, &str); 3] = [("fstat", ""), ("stat", &path), ("stat_deep", &deep)];
        for (op, p) in stats {
            if !run(op) || (op == "stat_deep" && !made) {
                continue;
            }
            let sw = Stopwatch::start();
            for _ in 0..calls {
                let _ = if p.is_empty() { f.stat() } else { sys::stat(p) };
            }
            println!(
                "SYSCOST dir={dir} op={op} ns_per_call={}",
                per_call(&sw, calls)
            );
        }
        let _ = sys::unlink(&deep);
        for d in ["sc.1/sc.2/sc.3", "sc.1/sc.2", "sc.1"] {
            let _ = sys::rmdir(&format!("{dir}/{d}"));
        }
        drop(f);
        let _ = sys::unlink(&path);
        if run("pwrite4k_append") {
            let wpath = format!("{dir}/syscost.app");
            let Some(w) = create(&wpath) else {
                return 1;
            };
            timed_writes(dir, "pwrite4k_append", &w, 4096, calls, |i| i * 4096);
            drop(w);
            let _ = sys::unlink(&wpath);
        }
    }
    0
}

user_tests::entry!(main);
