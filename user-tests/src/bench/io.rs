//! The I/O benchmarks (`bench::main_io`): untimed setup of each target (create, truncate or
//! fill), the timed sequential and random reads and writes, and the repetition loop.

use alloc::string::String;
use alloc::vec::Vec;
use alloc::{format, vec};

use abi::fcntl::*;
use abi::syscall::KernelCounters;
use abi::Errno;

use crate::rng::XorShift64;
use crate::sys::{self, File};
use crate::{println, MIB};

use super::check::{mismatch, pattern_buffer, stamp, verify};
use super::failure::{BenchResult, Context, Failure};
use super::options::{available_targets, parse_options, Spec, Target, Workload, SEED};
use super::report::{print_table, us, ResultLine};
use super::timing::{median, timed, CallTimes, Run};

pub(super) struct IoParams {
    bs: usize,
    size: u64,
    ops: u64,
}

pub(super) fn open_target(t: &Target, device: bool, flags: u32) -> BenchResult<File> {
    let flags = if device { O_RDWR } else { flags };
    File::open(&t.path, flags, 0o644).ctx(|| format!("open {}", t.path))
}

/// Write `size` bytes of stamped data from offset 0 in 1 MiB calls, then fsync (untimed setup).
pub(super) fn fill(t: &Target, device: bool, size: u64) -> BenchResult<()> {
    let f = open_target(t, device, O_WRONLY | O_CREAT | O_TRUNC)?;
    if device {
        let end = f
            .seek(0, SEEK_END)
            .ctx(|| format!("lseek {} SEEK_END", t.path))?;
        if end != 0 && end < size {
            return Err(Failure {
                what: format!("{} holds {end} bytes, the benchmark needs {size}", t.path),
                errno: None,
            });
        }
    }
    let mut buf = pattern_buffer(MIB);
    let mut off = 0u64;
    while off < size {
        let n = (size - off).min(MIB as u64) as usize;
        stamp(&mut buf[..n], off);
        f.pwrite_all(&buf[..n], off)
            .ctx(|| format!("write {} at {off}", t.path))?;
        off += n as u64;
    }
    f.sync().ctx(|| format!("fsync {}", t.path))?;
    f.close().ctx(|| format!("close {}", t.path))
}

pub(super) fn write_sequential(
    t: &Target,
    f: &File,
    buf: &mut [u8],
    size: u64,
    calls: &mut CallTimes,
) -> BenchResult<()> {
    let mut off = 0u64;
    while off < size {
        let n = (size - off).min(buf.len() as u64) as usize;
        stamp(&mut buf[..n], off);
        calls.begin();
        f.write_all(&buf[..n])
            .ctx(|| format!("write {} at {off}", t.path))?;
        calls.end();
        off += n as u64;
    }
    f.sync().ctx(|| format!("fsync {}", t.path))
}

/// Untimed setup before each repetition.
pub(super) fn before_rep(spec: &Spec, t: &Target, device: bool, p: &IoParams) -> BenchResult<()> {
    if spec.cold {
        match sys::drop_caches() {
            // Linux (under qemu-riscv64) has no such call: the run is simply not cold there.
            Ok(()) | Err(Errno::ENOSYS) => {}
            Err(e) => {
                return Err(Failure {
                    what: "drop caches".into(),
                    errno: Some(e),
                });
            }
        }
    }
    match spec.workload {
        Workload::SeqWrite if !device => match sys::unlink(&t.path) {
            Ok(()) | Err(Errno::ENOENT) => Ok(()),
            Err(e) => Err(Failure {
                what: format!("unlink {}", t.path),
                errno: Some(e),
            }),
        },
        Workload::SeqWrite => Ok(()),
        // The file of the other workloads is written once, in `prepare`.
        _ => {
            let _ = p;
            Ok(())
        }
    }
}

/// Untimed setup, once per target.
pub(super) fn prepare(spec: &Spec, t: &Target, device: bool, p: &IoParams) -> BenchResult<()> {
    match spec.workload {
        Workload::SeqWrite => Ok(()),
        _ => fill(t, device, p.size),
    }
}

/// Whether `rawq` runs `workload`: the sequential ones. A random workload's requests lie at
/// different offsets, and the request layer keeps several in flight only within one call
/// over one contiguous range (reads) or through a kernel caller that gathers many runs
/// (writes, as dbfs's commits do); no system call hands it several offsets at once.
pub fn queued_workload(workload: Workload) -> bool {
    matches!(
        workload,
        Workload::SeqWrite | Workload::Rewrite | Workload::SeqRead
    )
}

/// The timed part of one repetition.
pub(super) fn run_once(
    spec: &Spec,
    t: &Target,
    device: bool,
    p: &IoParams,
    buf: &mut [u8],
    calls: &mut CallTimes,
) -> BenchResult<()> {
    match spec.workload {
        Workload::SeqWrite => {
            let f = open_target(t, device, O_WRONLY | O_CREAT | O_TRUNC)?;
            write_sequential(t, &f, buf, p.size, calls)?;
            f.close().ctx(|| format!("close {}", t.path))
        }
        Workload::Rewrite => {
            let f = open_target(t, device, O_WRONLY)?;
            write_sequential(t, &f, buf, p.size, calls)?;
            f.close().ctx(|| format!("close {}", t.path))
        }
        Workload::SeqRead => {
            let f = open_target(t, device, O_RDONLY)?;
            let mut off = 0u64;
            while off < p.size {
                let want = (p.size - off).min(buf.len() as u64) as usize;
                calls.begin();
                let got = f
                    .read_full(&mut buf[..want])
                    .ctx(|| format!("read {} at {off}", t.path))?;
                calls.end();
                if got != want {
                    return Err(Failure {
                        what: format!("short read of {} at {off}: {got} of {want} bytes", t.path),
                        errno: None,
                    });
                }
                verify(&buf[..want], off).map_err(|at| mismatch(t, at))?;
                off += want as u64;
            }
            f.close().ctx(|| format!("close {}", t.path))
        }
        Workload::RandWrite => {
            let f = open_target(t, device, O_WRONLY)?;
            let mut rng = XorShift64::new(SEED);
            let blocks = p.size / p.bs as u64;
            for _ in 0..p.ops {
                let off = rng.below(blocks) * p.bs as u64;
                stamp(buf, off);
                calls.begin();
                f.pwrite_all(buf, off)
                    .ctx(|| format!("pwrite {} at {off}", t.path))?;
                calls.end();
            }
            f.sync().ctx(|| format!("fsync {}", t.path))?;
            f.close().ctx(|| format!("close {}", t.path))
        }
        Workload::RandRead => {
            let f = open_target(t, device, O_RDONLY)?;
            let mut rng = XorShift64::new(SEED);
            let blocks = p.size / p.bs as u64;
            for _ in 0..p.ops {
                let off = rng.below(blocks) * p.bs as u64;
                calls.begin();
                let got = f
                    .pread_full(buf, off)
                    .ctx(|| format!("pread {} at {off}", t.path))?;
                calls.end();
                if got != buf.len() {
                    return Err(Failure {
                        what: format!("short pread of {} at {off}: {got} bytes", t.path),
                        errno: None,
                    });
                }
                verify(buf, off).map_err(|at| mismatch(t, at))?;
            }
            f.close().ctx(|| format!("close {}", t.path))
        }
    }
}

/// Main of an I/O benchmark program: returns the exit status (0 = every target succeeded).
pub fn main_io(spec: &Spec, argv: &[&str]) -> i32 {
    let opts = match parse_options(argv) {
        Ok(o) => o,
        Err(msg) => {
            println!("{}: {msg}", spec.name);
            println!(
                "usage: {} NAME:PATH... [reps=N] [size=MiB] [ops=N] [quick]",
                spec.name
            );
            return 2;
        }
    };
    let random = matches!(spec.workload, Workload::RandRead | Workload::RandWrite);
    let size_mib = opts.size_mib.unwrap_or(if opts.quick {
        spec.size_mib.min(2)
    } else {
        spec.size_mib
    });
    let ops = opts.ops.unwrap_or(if opts.quick {
        (spec.ops / 10).max(1)
    } else {
        spec.ops
    });
    let p = IoParams {
        bs: spec.bs,
        size: size_mib * MIB as u64,
        ops,
    };
    if p.size < p.bs as u64 {
        println!(
            "{}: size={size_mib} MiB is smaller than one block",
            spec.name
        );
        return 2;
    }
    let bytes = if random { p.ops * p.bs as u64 } else { p.size };

    let mut targets = available_targets(spec.name, &opts.targets);
    if !queued_workload(spec.workload) {
        targets.retain(|t| {
            if t.is_queued() {
                println!(
                    "SKIP bench={} fs={}: random offsets cannot be queued from one call",
                    spec.name, t.name
                );
            }
            !t.is_queued()
        });
    }
    let devices: Vec<bool> = targets.iter().map(|t| t.is_device()).collect();
    let mut failed = targets.len() < opts.targets.len() && targets.is_empty();
    let mut alive: Vec<bool> = vec![true; targets.len()];
    let mut runs: Vec<Vec<Run>> = vec![Vec::new(); targets.len()];
    let report = |t: &Target, f: &Failure| {
        println!("ERROR bench={} fs={}: {f}", spec.name, t.name);
    };

    for (i, t) in targets.iter().enumerate() {
        if let Err(f) = prepare(spec, t, devices[i], &p) {
            report(t, &f);
            alive[i] = false;
            failed = true;
        }
    }
    let mut buf = pattern_buffer(p.bs);
    // rawq: one call per pass over the whole range (see `Target::is_queued`).
    let mut whole = Vec::new();
    let calls_per_rep = if random {
        p.ops
    } else {
        p.size.div_ceil(p.bs as u64)
    };
    let mut calls = CallTimes::for_calls(calls_per_rep);
    // The warm-up repetitions come first and are run exactly as the timed ones, then dropped.
    let warmup = opts.warmup.unwrap_or(if opts.quick { 0 } else { 1 });
    for rep in 0..warmup + opts.reps {
        for (i, t) in targets.iter().enumerate() {
            if !alive[i] {
                continue;
            }
            let queued = t.is_queued() && queued_workload(spec.workload);
            if queued && whole.is_empty() {
                whole = pattern_buffer(p.size as usize);
            }
            let b: &mut [u8] = if queued { &mut whole } else { &mut buf };
            let res = before_rep(spec, t, devices[i], &p)
                .and_then(|()| timed(&mut calls, |c| run_once(spec, t, devices[i], &p, b, c)));
            match res {
                Ok(_) if rep < warmup => {}
                Ok(run) => runs[i].push(run),
                Err(f) => {
                    report(t, &f);
                    alive[i] = false;
                    failed = true;
                }
            }
        }
    }

    let mut rows: Vec<(String, f64)> = Vec::new();
    for (i, t) in targets.iter().enumerate() {
        if !alive[i] || runs[i].is_empty() {
            continue;
        }
        let m = median(&runs[i]);
        let mbps = bytes as f64 / m.secs / 1e6;
        let mibps = bytes as f64 / m.secs / MIB as f64;
        let mut line = ResultLine::new(spec.name)
            .field("fs", &t.name)
            .field("disk", &opts.disk)
            .field("bs", p.bs)
            .field("bytes", bytes)
            .field("secs", format_args!("{:.6}", m.secs))
            .field("MBps", format_args!("{mbps:.2}"))
            .field("MiBps", format_args!("{mibps:.2}"))
            .field("reps", runs[i].len())
            .field("p50_us", us(m.lat.0))
            .field("p99_us", us(m.lat.1))
            .counters(m.counters.as_ref());
        if let Some(c) = m.counters.as_ref() {
            line = device_cost(line, spec.workload, bytes, c);
        }
        if random {
            line = line.field("ops", p.ops).field("file_bytes", p.size);
        }
        line.print();
        rows.push((t.name.clone(), mbps));
    }
    print_table(
        &format!("{} bs={} bytes={}", spec.name, p.bs, bytes),
        "MB/s",
        &rows,
    );
    // Leave the space to the next benchmark: remove the files (never a device).
    for (i, t) in targets.iter().enumerate() {
        if !devices[i] {
            let _ = sys::unlink(&t.path);
        }
    }
    i32::from(failed)
}

/// What the device did per byte the program moved, from one repetition's counter deltas
/// (fsync included): `wamp` = device bytes written / bytes the program wrote (write workloads
/// only; 1.00 is the raw device's), `req_per_mib` = device requests (reads and writes) per MiB
/// the program moved.
fn device_cost(line: ResultLine, workload: Workload, bytes: u64, c: &KernelCounters) -> ResultLine {
    let writes = matches!(
        workload,
        Workload::SeqWrite | Workload::Rewrite | Workload::RandWrite
    );
    let line = if writes && bytes > 0 {
        line.field(
            "wamp",
            format_args!("{:.2}", c.dev_write_bytes as f64 / bytes as f64),
        )
    } else {
        line
    };
    let requests = c.dev_read_requests + c.dev_write_requests;
    line.field(
        "req_per_mib",
        format_args!("{:.2}", requests as f64 * MIB as f64 / bytes.max(1) as f64),
    )
}
