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
//! - `warmup=N` (default 1; 0 with `quick`): repetitions run first, exactly as the timed ones,
//!   and left out of the results (see [`Options::warmup`]). Not for `createdel`.
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
//!
//! Modules: `options` (the workloads, arguments and targets), `failure` (a run's error),
//! `check` (the data check), `timing` (repetitions and sampled latencies), `report` (RESULT
//! lines, counters, the table), `io` ([`main_io`]) and `createdel` ([`main_createdel`]).

mod check;
mod createdel;
mod failure;
mod io;
mod options;
mod report;
mod timing;

pub use check::{stamp, verify};
pub use createdel::main_createdel;
pub use failure::Failure;
pub use io::{main_io, queued_workload};
pub use options::{parse_options, Options, Spec, Target, Workload};
pub use report::{counter_delta, counters, format_counters, print_table, ResultLine};
pub use timing::CallTimes;
