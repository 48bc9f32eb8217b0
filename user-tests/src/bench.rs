//! The benchmark harness shared by the benchmark programs (see shared/BENCH-PROTOCOL.md).
//!
//! A benchmark program is one line: `bench::main_io(&SPEC, argv)` or `bench::main_createdel(argv)`.
//!
//! Arguments (any order):
//! - `NAME:PATH` targets, e.g. `fat32:/fat/bench.dat raw:/dev/vdc dbfs:/dbfs/bench.dat`.
//!   A target named `raw`, or whose path is a block/character device, is a *device*: opened
//!   `O_RDWR` without `O_CREAT`, offsets from 0, never truncated. Other targets are files,
//!   created/truncated in the untimed setup. A target whose parent directory does not exist is
//!   skipped with a note (an absent mount is not a failure). For `createdel` PATH is a directory.
//! - `reps=N` (default 3): repetitions; the targets alternate within each repetition.
//! - `size=MiB` file size override, `ops=N` operation count override (random benchmarks),
//!   `n=START:END:STEP` or `n=N` (createdel, default 100:500:100: FAT32's linear directories make
//!   larger N take minutes per point under QEMU's emulated CPU), `quick` (small defaults for
//!   a fast smoke run). Keys that do not apply to a benchmark are accepted and ignored, so `init`
//!   can pass the same set to every program.
//!
//! Output: per target, one `RESULT ...` line for the median repetition (by time; the lower
//! middle one for an even count), with the kernel counter deltas of that repetition when
//! `SYS_DBFS_COUNTERS` exists; then, with more than one target, a comparison table.
//!
//! Timing: the timed part of a repetition runs from `open` to `close` inclusive (with the
//! `fsync` of the writing workloads); file creation/truncation for `seqwrite` and the initial
//! fill of the read and random workloads are untimed. The clock is `CLOCK_MONOTONIC`.
//!
//! Latency: read/write calls of the timed part are timed one by one, sampled: every K-th call,
//! K = calls / 500 rounded up (every call up to 500), so about 500 samples per repetition. A
//! clock read is a system call (about 0.75 us under TCG, against about 3 us for a 4 KiB
//! `pread`): timing every call would slow the 4 KiB workloads by tens of percent; sampling
//! (two clock reads every K-th call: K = 20 for 10000 calls) adds about 2% to them, and
//! nothing measurable to 1 MiB calls. The RESULT line carries the median repetition's `p50_us` and `p99_us` per
//! call (the call alone: not the data check, not the final fsync); the samples go to a buffer
//! reserved before the timed part. createdel samples its creates (open + write + close) and
//! unlinks the same way: `create_p50_us` ... `delete_p99_us`.
//!
//! Data check: every 4 KiB block written carries its own file offset in its first and last
//! 8 bytes; reads check both words of every block and fail loudly on a mismatch.

use alloc::string::String;
use alloc::vec::Vec;
use alloc::{format, vec};

use abi::fcntl::*;
use abi::stat::*;
use abi::syscall::KernelCounters;
use abi::Errno;

use crate::args::{parse_u64, split_kv};
use crate::rng::XorShift64;
use crate::sys::{self, File};
use crate::time::Stopwatch;
use crate::{println, MIB};

/// The I/O pattern of one benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// Create the file, write it sequentially, fsync, close (all timed).
    SeqWrite,
    /// Overwrite the existing file sequentially from offset 0, fsync, close.
    Rewrite,
    /// Read the (untimed, pre-written) file sequentially and check it.
    SeqRead,
    /// Write `ops` blocks at random block-aligned offsets, then fsync.
    RandWrite,
    /// Read `ops` blocks at random block-aligned offsets and check them.
    RandRead,
}

/// One benchmark: its name in RESULT lines, workload, block size and default sizes.
#[derive(Clone, Copy, Debug)]
pub struct Spec {
    pub name: &'static str,
    pub workload: Workload,
    /// Bytes per read/write call.
    pub bs: usize,
    /// File size in MiB (sequential: bytes moved; random: the file the offsets fall in).
    pub size_mib: u64,
    /// Operations (random workloads only).
    pub ops: u64,
    /// Write everything back and drop the kernel's caches before each timed repetition, so
    /// every byte comes from the disk (the protocol's `cold` runs; `sys::drop_caches`).
    pub cold: bool,
}

/// The fixed PRNG seed: every run, on every system, uses the same offsets and orders.
const SEED: u64 = 0xDBF5_2026_0001_0001;
/// The block size of the data check.
const CHECK_BLOCK: usize = 4096;
const STAMP_KEY: u64 = 0xD8F5_0FF5_E700_0000;

/// Parsed command line of a benchmark program.
#[derive(Clone, Debug)]
pub struct Options {
    pub targets: Vec<Target>,
    pub reps: usize,
    pub size_mib: Option<u64>,
    pub ops: Option<u64>,
    /// The file counts createdel runs, ascending (`n=START:END:STEP` or `n=A,B,C`).
    pub n_list: Option<Vec<u64>>,
    /// createdel: a file system whose create + delete at some N took longer than this many
    /// seconds is not run at larger N (FAT32 directories are linear, so its time grows as N^2).
    pub max_secs: Option<u64>,
    pub quick: bool,
}

/// One `NAME:PATH` target.
#[derive(Clone, Debug)]
pub struct Target {
    pub name: String,
    pub path: String,
}

impl Target {
    /// `rawq`: the raw device driven at full queue depth. Each pass of a sequential workload
    /// is one call for all its bytes, which the kernel hands to the request layer whole: it
    /// splits it into requests of at most 1 MiB and keeps them all in flight (up to the
    /// queue's 128). Random workloads are not run on it (see [`queued_workload`]).
    pub fn is_queued(&self) -> bool {
        self.name == "rawq"
    }

    /// A device target: never created or truncated, offsets from 0.
    pub fn is_device(&self) -> bool {
        if self.name == "raw" || self.is_queued() {
            return true;
        }
        match sys::stat(&self.path) {
            Ok(st) => matches!(st.st_mode & S_IFMT, S_IFBLK | S_IFCHR),
            Err(_) => false,
        }
    }
}

/// Why a target failed: what was being done and the errno, or a data mismatch.
#[derive(Clone, Debug)]
pub struct Failure {
    pub what: String,
    pub errno: Option<Errno>,
}

impl core::fmt::Display for Failure {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.errno {
            Some(e) => write!(f, "{}: {} ({})", self.what, e.name(), e.description()),
            None => write!(f, "{}", self.what),
        }
    }
}

type BenchResult<T> = Result<T, Failure>;

trait Context<T> {
    fn ctx(self, what: impl FnOnce() -> String) -> BenchResult<T>;
}

impl<T> Context<T> for Result<T, Errno> {
    fn ctx(self, what: impl FnOnce() -> String) -> BenchResult<T> {
        self.map_err(|e| Failure {
            what: what(),
            errno: Some(e),
        })
    }
}

/// Parse the arguments common to all benchmark programs (`argv[0]` is skipped).
pub fn parse_options(argv: &[&str]) -> Result<Options, String> {
    let mut o = Options {
        targets: Vec::new(),
        reps: 3,
        size_mib: None,
        ops: None,
        n_list: None,
        max_secs: None,
        quick: false,
    };
    for &arg in argv.iter().skip(1) {
        match split_kv(arg) {
            ("reps", Some(v)) => {
                o.reps = parse_u64(v).map_err(|_| format!("bad reps={v}"))?.max(1) as usize
            }
            ("size", Some(v)) => {
                o.size_mib = Some(parse_u64(v).map_err(|_| format!("bad size={v} (MiB)"))?)
            }
            ("ops", Some(v)) => o.ops = Some(parse_u64(v).map_err(|_| format!("bad ops={v}"))?),
            ("n", Some(v)) => o.n_list = Some(parse_n(v)?),
            ("max_secs", Some(v)) => {
                o.max_secs = Some(parse_u64(v).map_err(|_| format!("bad max_secs={v}"))?)
            }
            ("quick", None) => o.quick = true,
            (t, None) if t.contains(':') => {
                let (name, path) = t.split_once(':').unwrap_or((t, ""));
                if name.is_empty() || path.is_empty() {
                    return Err(format!("bad target {t:?}: want NAME:PATH"));
                }
                o.targets.push(Target {
                    name: name.into(),
                    path: path.into(),
                });
            }
            _ => return Err(format!("unknown argument {arg:?}")),
        }
    }
    if o.targets.is_empty() {
        return Err("no targets: give NAME:PATH, e.g. fat32:/fat/bench.dat raw:/dev/vdc".into());
    }
    Ok(o)
}

/// `N`, `START:END:STEP` or an ascending list `A,B,C` of file counts.
fn parse_n(v: &str) -> Result<Vec<u64>, String> {
    let bad = || format!("bad n={v}: want N, START:END:STEP or A,B,C (ascending, > 0)");
    let sep = if v.contains(',') { ',' } else { ':' };
    let nums: Vec<u64> = v
        .split(sep)
        .map(parse_u64)
        .collect::<Result<_, _>>()
        .map_err(|_| bad())?;
    if nums.contains(&0) {
        return Err(bad());
    }
    match (sep, nums.as_slice()) {
        (',', list) if list.windows(2).all(|w| w[0] < w[1]) => Ok(nums),
        (':', [n]) => Ok(vec![*n]),
        (':', [s, e, st]) if e >= s => Ok((*s..=*e).step_by(*st as usize).collect()),
        _ => Err(bad()),
    }
}

/// Stamp every 4 KiB block of `buf` (which will land at file offset `off`) with its offset.
pub fn stamp(buf: &mut [u8], off: u64) {
    for (i, block) in buf.chunks_mut(CHECK_BLOCK).enumerate() {
        let tag = (off + (i * CHECK_BLOCK) as u64) ^ STAMP_KEY;
        let n = block.len();
        if n >= 16 {
            block[..8].copy_from_slice(&tag.to_le_bytes());
            block[n - 8..].copy_from_slice(&(!tag).to_le_bytes());
        }
    }
}

/// Check the stamps of `buf`, read from file offset `off`; the first bad offset on mismatch.
pub fn verify(buf: &[u8], off: u64) -> Result<(), u64> {
    for (i, block) in buf.chunks(CHECK_BLOCK).enumerate() {
        let at = off + (i * CHECK_BLOCK) as u64;
        let tag = at ^ STAMP_KEY;
        let n = block.len();
        if n >= 16 && (block[..8] != tag.to_le_bytes() || block[n - 8..] != (!tag).to_le_bytes()) {
            return Err(at);
        }
    }
    Ok(())
}

/// A buffer of `len` bytes with a recognisable fill, stamped for offset 0.
fn pattern_buffer(len: usize) -> Vec<u8> {
    let mut buf: Vec<u8> = (0..len).map(|i| (i / 8) as u8 ^ 0xA5).collect();
    stamp(&mut buf, 0);
    buf
}

fn mismatch(target: &Target, at: u64) -> Failure {
    Failure {
        what: format!("DATA MISMATCH in {} at offset {at}", target.path),
        errno: None,
    }
}

/// A machine-readable `RESULT bench=<name> key=value ...` line, built field by field:
/// `ResultLine::new("seqread").field("fs", "fat32").field("secs", format_args!("{:.6}", s)).print()`.
/// Values must not contain spaces (the line is split on spaces by the host scripts).
#[derive(Clone, Debug)]
pub struct ResultLine(String);

impl ResultLine {
    pub fn new(bench: &str) -> Self {
        ResultLine(format!("RESULT bench={bench}"))
    }
    pub fn field(mut self, key: &str, value: impl core::fmt::Display) -> Self {
        use core::fmt::Write;
        let _ = write!(self.0, " {key}={value}");
        self
    }
    /// Append the kernel counter deltas (nothing when the counters are unavailable).
    pub fn counters(mut self, c: Option<&KernelCounters>) -> Self {
        if let Some(c) = c {
            self.0.push(' ');
            self.0.push_str(&format_counters(c));
        }
        self
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
    pub fn print(&self) {
        println!("{}", self.0);
    }
}

/// The kernel counters now, or None where `SYS_DBFS_COUNTERS` does not exist (Linux).
pub fn counters() -> Option<KernelCounters> {
    sys::counters().ok()
}

/// `after - before`, word by word.
pub fn counter_delta(before: &KernelCounters, after: &KernelCounters) -> KernelCounters {
    let (b, a) = (before.to_words(), after.to_words());
    let mut d = [0u64; KernelCounters::WORDS];
    for i in 0..d.len() {
        d[i] = a[i].wrapping_sub(b[i]);
    }
    KernelCounters::from_words(&d)
}

/// The counters as `key=value` pairs (the five the protocol names first).
pub fn format_counters(c: &KernelCounters) -> String {
    format!(
        "dev_read_bytes={} dev_write_bytes={} cache_hits={} cache_misses={} page_faults={} \
         dev_read_requests={} dev_write_requests={} dev_flushes={} user_copy_bytes={} \
         window_pages_read={} window_pages_written={} transactions={} window_direct_bytes={}",
        c.dev_read_bytes,
        c.dev_write_bytes,
        c.cache_hits,
        c.cache_misses,
        c.page_faults,
        c.dev_read_requests,
        c.dev_write_requests,
        c.dev_flushes,
        c.user_copy_bytes,
        c.window_pages_read,
        c.window_pages_written,
        c.transactions,
        c.window_direct_bytes
    )
}

/// One timed repetition.
#[derive(Clone, Copy, Debug)]
struct Run {
    secs: f64,
    counters: Option<KernelCounters>,
    /// p50 and p99 of the per-call latencies, ns.
    lat: (u32, u32),
}

/// Sampled per-call latencies of one repetition, into a buffer reserved before the timed part.
pub struct CallTimes {
    /// Time every `every`-th call.
    every: u64,
    /// Calls seen since `start`.
    seen: u64,
    t0: u64,
    ns: Vec<u32>,
}

/// About this many samples per repetition.
const LATENCY_SAMPLES: u64 = 500;

impl CallTimes {
    /// For a repetition of about `calls` calls.
    pub fn for_calls(calls: u64) -> Self {
        let every = calls.div_ceil(LATENCY_SAMPLES).max(1);
        CallTimes {
            every,
            seen: 0,
            t0: 0,
            ns: Vec::with_capacity((calls / every + 1) as usize),
        }
    }

    /// A new repetition (forgets earlier samples, keeps the buffer).
    pub fn start(&mut self) {
        self.ns.clear();
        self.seen = 0;
    }

    /// Just before a call.
    pub fn begin(&mut self) {
        if self.seen.is_multiple_of(self.every) {
            self.t0 = crate::time::now_ns();
        }
    }

    /// Just after the call `begin` preceded.
    pub fn end(&mut self) {
        if self.seen.is_multiple_of(self.every) {
            let d = crate::time::now_ns().saturating_sub(self.t0);
            self.ns.push(d.min(u32::MAX as u64) as u32);
        }
        self.seen += 1;
    }

    /// (p50, p99) in ns, nearest rank; (0, 0) when nothing was timed.
    pub fn percentiles(&mut self) -> (u32, u32) {
        if self.ns.is_empty() {
            return (0, 0);
        }
        self.ns.sort_unstable();
        let at = |q: usize| {
            let rank = (self.ns.len() * q).div_ceil(100).max(1);
            self.ns[rank - 1]
        };
        (at(50), at(99))
    }
}

/// Nanoseconds as microseconds with one decimal, for RESULT fields.
fn us(ns: u32) -> String {
    format!("{:.1}", ns as f64 / 1e3)
}

/// The median run (lower middle for an even count).
fn median(runs: &[Run]) -> Run {
    let mut sorted: Vec<Run> = runs.to_vec();
    sorted.sort_by(|a, b| {
        a.secs
            .partial_cmp(&b.secs)
            .unwrap_or(core::cmp::Ordering::Equal)
    });
    sorted[(sorted.len() - 1) / 2]
}

/// Time `f`, with counter deltas around it; `calls` holds the per-call times `f` marked.
fn timed(
    calls: &mut CallTimes,
    f: impl FnOnce(&mut CallTimes) -> BenchResult<()>,
) -> BenchResult<Run> {
    let before = counters();
    let watch = Stopwatch::start();
    calls.start();
    f(calls)?;
    let secs = watch.elapsed_secs();
    let counters = match (before, counters()) {
        (Some(b), Some(a)) => Some(counter_delta(&b, &a)),
        _ => None,
    };
    Ok(Run {
        secs,
        counters,
        lat: calls.percentiles(),
    })
}

/// Skip targets whose parent directory (mount point) is missing; print a note for each.
fn available_targets(bench: &str, targets: &[Target]) -> Vec<Target> {
    let mut out = Vec::new();
    for t in targets {
        let parent = crate::parent_dir(&t.path);
        match sys::stat(parent) {
            Ok(st) if st.st_mode & S_IFMT == S_IFDIR => out.push(t.clone()),
            Ok(_) => println!(
                "SKIP bench={bench} fs={}: {parent} is not a directory",
                t.name
            ),
            Err(e) => println!("SKIP bench={bench} fs={}: {parent}: {}", t.name, e.name()),
        }
    }
    out
}

// ------------------------------------------------------------------ I/O benchmarks

struct IoParams {
    bs: usize,
    size: u64,
    ops: u64,
}

fn open_target(t: &Target, device: bool, flags: u32) -> BenchResult<File> {
    let flags = if device { O_RDWR } else { flags };
    File::open(&t.path, flags, 0o644).ctx(|| format!("open {}", t.path))
}

/// Write `size` bytes of stamped data from offset 0 in 1 MiB calls, then fsync (untimed setup).
fn fill(t: &Target, device: bool, size: u64) -> BenchResult<()> {
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

fn write_sequential(
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
fn before_rep(spec: &Spec, t: &Target, device: bool, p: &IoParams) -> BenchResult<()> {
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
fn prepare(spec: &Spec, t: &Target, device: bool, p: &IoParams) -> BenchResult<()> {
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
fn run_once(
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
    for _rep in 0..opts.reps {
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
            .field("bs", p.bs)
            .field("bytes", bytes)
            .field("secs", format_args!("{:.6}", m.secs))
            .field("MBps", format_args!("{mbps:.2}"))
            .field("MiBps", format_args!("{mibps:.2}"))
            .field("reps", runs[i].len())
            .field("p50_us", us(m.lat.0))
            .field("p99_us", us(m.lat.1))
            .counters(m.counters.as_ref());
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

/// The human-readable comparison: each target's figure, its ratio to `raw` and dbfs/fat32.
pub fn print_table(title: &str, unit: &str, rows: &[(String, f64)]) {
    if rows.len() < 2 {
        return;
    }
    let find = |name: &str| rows.iter().find(|(n, _)| n == name).map(|&(_, v)| v);
    let raw = find("raw");
    println!();
    println!("  {title} (median)");
    match raw {
        Some(_) => println!("  {:<10} {:>12}  {:>8}", "fs", unit, "vs raw"),
        None => println!("  {:<10} {:>12}", "fs", unit),
    }
    for (name, v) in rows {
        match raw {
            Some(r) if r > 0.0 => println!("  {:<10} {:>12.2}  {:>7.2}x", name, v, v / r),
            _ => println!("  {:<10} {:>12.2}", name, v),
        }
    }
    if let (Some(d), Some(f)) = (find("dbfs"), find("fat32")) {
        if f > 0.0 {
            println!("  dbfs/fat32 = {:.2}x", d / f);
        }
    }
    println!();
}

// ------------------------------------------------------------------ createdel

fn file_name(i: u64) -> String {
    format!("x{i:06}")
}

/// One createdel repetition: seconds and per-file (p50, p99) latency of each phase.
#[derive(Clone, Copy, Debug)]
struct CreateDel {
    create: f64,
    delete: f64,
    create_lat: (u32, u32),
    delete_lat: (u32, u32),
}

/// Create (random order) then delete (sorted order) `n` one-byte files in `dir`.
fn createdel_once(dir: &str, n: u64) -> BenchResult<CreateDel> {
    let mut order: Vec<u64> = (0..n).collect();
    XorShift64::new(SEED ^ n).shuffle(&mut order);
    let paths: Vec<String> = order
        .iter()
        .map(|&i| crate::path_join(dir, &file_name(i)))
        .collect();
    let mut calls = CallTimes::for_calls(n);
    let watch = Stopwatch::start();
    calls.start();
    for p in &paths {
        calls.begin();
        let fd = sys::open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
            .ctx(|| format!("create {p}"))?;
        let w = sys::write(fd, b"x").ctx(|| format!("write {p}"));
        sys::close(fd).ctx(|| format!("close {p}"))?;
        calls.end();
        if w? != 1 {
            return Err(Failure {
                what: format!("short write to {p}"),
                errno: None,
            });
        }
    }
    let create = watch.elapsed_secs();
    let create_lat = calls.percentiles();
    let sorted: Vec<String> = (0..n)
        .map(|i| crate::path_join(dir, &file_name(i)))
        .collect();
    let watch = Stopwatch::start();
    calls.start();
    for p in &sorted {
        calls.begin();
        sys::unlink(p).ctx(|| format!("unlink {p}"))?;
        calls.end();
    }
    let delete = watch.elapsed_secs();
    Ok(CreateDel {
        create,
        delete,
        create_lat,
        delete_lat: calls.percentiles(),
    })
}

/// Make `dir` an empty directory (removing what a previous run left).
fn fresh_dir(dir: &str) -> BenchResult<()> {
    sys::remove_tree(dir).ctx(|| format!("remove {dir}"))?;
    sys::mkdir(dir, 0o755).ctx(|| format!("mkdir {dir}"))
}

/// Main of the `createdel` program.
pub fn main_createdel(argv: &[&str]) -> i32 {
    let opts = match parse_options(argv) {
        Ok(o) => o,
        Err(msg) => {
            println!("createdel: {msg}");
            println!(
                "usage: createdel NAME:DIR... [n=START:END:STEP|n=A,B,C] [max_secs=S] [reps=N] [quick]"
            );
            return 2;
        }
    };
    let ns = opts.n_list.clone().unwrap_or(if opts.quick {
        vec![100, 200, 300]
    } else {
        vec![100, 200, 300, 400, 500]
    });
    let mut targets = Vec::new();
    for t in available_targets("createdel", &opts.targets) {
        if t.is_device() {
            println!(
                "SKIP bench=createdel fs={}: a raw device has no directories",
                t.name
            );
        } else {
            targets.push(t);
        }
    }
    let mut failed = false;
    let mut alive = vec![true; targets.len()];
    for (i, t) in targets.iter().enumerate() {
        if let Err(f) = fresh_dir(&t.path) {
            println!("ERROR bench=createdel fs={}: {f}", t.name);
            alive[i] = false;
            failed = true;
        }
    }
    // Stopped growing: (file system index) -> the N whose run went over max_secs.
    let mut capped: Vec<Option<(u64, f64)>> = vec![None; targets.len()];
    for &n in &ns {
        for (i, t) in targets.iter().enumerate() {
            if let (true, Some((at, secs))) = (alive[i], capped[i]) {
                println!(
                    "SKIP bench=createdel fs={} n={n}: n={at} took {secs:.1} s, over max_secs",
                    t.name
                );
            }
        }
        let mut times: Vec<Vec<CreateDel>> = vec![Vec::new(); targets.len()];
        for _rep in 0..opts.reps {
            for (i, t) in targets.iter().enumerate() {
                if !alive[i] || capped[i].is_some() {
                    continue;
                }
                match createdel_once(&t.path, n) {
                    Ok(r) => times[i].push(r),
                    Err(f) => {
                        println!("ERROR bench=createdel fs={} n={n}: {f}", t.name);
                        alive[i] = false;
                        failed = true;
                        let _ = fresh_dir(&t.path);
                    }
                }
            }
        }
        let mut rows = Vec::new();
        let mut drows = Vec::new();
        for (i, t) in targets.iter().enumerate() {
            if times[i].is_empty() || !alive[i] {
                continue;
            }
            // The median repetition of each phase, by time; its latencies go with it.
            let med = |sel: fn(&CreateDel) -> f64| {
                let mut v: Vec<&CreateDel> = times[i].iter().collect();
                v.sort_by(|a, b| {
                    sel(a)
                        .partial_cmp(&sel(b))
                        .unwrap_or(core::cmp::Ordering::Equal)
                });
                *v[(v.len() - 1) / 2]
            };
            let (mc, md) = (med(|r| r.create), med(|r| r.delete));
            let (c, d) = (mc.create, md.delete);
            if opts.max_secs.is_some_and(|m| c + d > m as f64) {
                capped[i] = Some((n, c + d));
            }
            ResultLine::new("createdel")
                .field("fs", &t.name)
                .field("n", n)
                .field("create_secs", format_args!("{c:.6}"))
                .field("delete_secs", format_args!("{d:.6}"))
                .field("creates_per_sec", format_args!("{:.1}", n as f64 / c))
                .field("deletes_per_sec", format_args!("{:.1}", n as f64 / d))
                .field("reps", times[i].len())
                .field("create_p50_us", us(mc.create_lat.0))
                .field("create_p99_us", us(mc.create_lat.1))
                .field("delete_p50_us", us(md.delete_lat.0))
                .field("delete_p99_us", us(md.delete_lat.1))
                .print();
            rows.push((t.name.clone(), n as f64 / c));
            drows.push((t.name.clone(), n as f64 / d));
        }
        print_table(&format!("createdel n={n} create"), "files/s", &rows);
        print_table(&format!("createdel n={n} delete"), "files/s", &drows);
    }
    for (i, t) in targets.iter().enumerate() {
        if alive[i] {
            let _ = sys::rmdir(&t.path);
        }
    }
    i32::from(failed)
}
