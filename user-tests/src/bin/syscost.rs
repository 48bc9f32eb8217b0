//! `syscost [DIR...]` (e.g. `make run INIT=/bin/syscost`): what one system call costs, to explain small-block figures. For each
//! directory: a 1 MiB file is written, then timed loops of `getppid` (the bare trap),
//! `pread` of 0 bytes (fd lookup + file-system entry), of 1 byte (the file system's lookup
//! without the copy), and of 4 KiB at one offset and sequentially. Prints `SYSCOST dir=... op=... ns_per_call=...` lines. Not part of the tests.
#![no_std]
#![no_main]

extern crate alloc;
use alloc::format;
use alloc::vec;
use alloc::vec::Vec;
use user_tests::prelude::*;
use user_tests::time::Stopwatch;

const CALLS: u64 = 5000;

fn per_call(sw: &Stopwatch) -> u64 {
    sw.elapsed_ns() / CALLS
}

fn main(argv: &[&str]) -> i32 {
    // Arguments with '=' are the benchmark options `make run` passes to every init: ignored.
    let given: Vec<&str> = argv.iter().skip(1).copied().filter(|a| !a.contains('=')).collect();
    let dirs: Vec<&str> = if given.is_empty() { vec!["/dbfs", "/fat"] } else { given };
    let sw = Stopwatch::start();
    for _ in 0..CALLS {
        let _ = sys::getppid();
    }
    println!("SYSCOST op=getppid ns_per_call={}", per_call(&sw));
    for dir in &dirs {
        let path = format!("{dir}/syscost.dat");
        let f = match File::open(&path, O_RDWR | O_CREAT | O_TRUNC, 0o644) {
            Ok(f) => f,
            Err(e) => {
                println!("{path}: {}", e.name());
                return 1;
            }
        };
        let data: Vec<u8> = (0..1u32 << 20).map(|i| i as u8).collect();
        if f.write_all(&data).and_then(|_| f.sync()).is_err() {
            println!("{path}: write failed");
            return 1;
        }
        let mut buf = vec![0u8; 4096];
        let sw = Stopwatch::start();
        for _ in 0..CALLS {
            let _ = f.pread(&mut buf[..0], 0);
        }
        println!("SYSCOST dir={dir} op=pread0 ns_per_call={}", per_call(&sw));
        // One byte: the file-system entry and lookup without the 4 KiB copy.
        let sw = Stopwatch::start();
        for _ in 0..CALLS {
            let _ = f.pread(&mut buf[..1], 8192);
        }
        println!("SYSCOST dir={dir} op=pread1 ns_per_call={}", per_call(&sw));
        let sw = Stopwatch::start();
        for _ in 0..CALLS {
            let _ = f.pread(&mut buf, 8192);
        }
        println!("SYSCOST dir={dir} op=pread4k_same ns_per_call={}", per_call(&sw));
        let sw = Stopwatch::start();
        for i in 0..CALLS {
            let _ = f.pread(&mut buf, (i * 4096) % (1 << 20));
        }
        println!("SYSCOST dir={dir} op=pread4k_seq ns_per_call={}", per_call(&sw));
        drop(f);
        let _ = sys::unlink(&path);
    }
    0
}

user_tests::entry!(main);
