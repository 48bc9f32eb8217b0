//! The seed experiments' other workloads, written once: the guest program
//! (`user-tests/src/bin/workloads.rs`, Linux syscalls) and the host tool (`workloads-host`,
//! std::fs, against any directory: dbfs-fuse, fuse2fs, tmpfs) run this same code.
//!
//! Layer: `no_std` + `alloc` logic with no I/O of its own, like `tests/crosscheck`. Each side
//! supplies the file system through the small [`Fs`] trait (open, write, read, fsync, fsync of
//! a directory, stat, mkdir, unlink, rmdir, a monotonic clock, a console line).
//!
//! The workloads ([`WORKLOADS`]; parameters in [`Params`], printed by every run):
//! - `fileserver`, `webserver`, `varmail`: filebench's personalities, their flowops in their
//!   order, single-threaded (filebench runs 50 / 100 / 16 threads; here one loop after
//!   another), with filesets scaled down so a TCG guest finishes in seconds. Every flowop
//!   (open, close, read, write, append, fsync, create, delete, stat) counts as one operation,
//!   as filebench counts them. Files have a fixed size (filebench draws them from a gamma
//!   distribution around the mean); appends are 1..=16 KiB, uniformly drawn.
//! - `mdtest`: a directory tree of depth 3 and fan-out 6 with 8 files per directory (the seed's
//!   `mdtest -b 6 -I 8 -z 3`), each file written with 4 KiB and read back (`-w 4096 -e 4096`):
//!   phases mkdir, create, stat, read, remove, rmdir.
//! - `create_empty`: create an empty file and fsync its directory, N times.
//! - `delete_2m`: N files of 2 MiB written and fsync'd (untimed), then unlinked (timed, with a
//!   final fsync of the directory).
//! - `createdel_ordered`: createdel with both phases in name order (create x000000, x000001,
//!   ... with one byte each, then unlink in the same order).
//!
//! Output (see shared/BENCH-PROTOCOL.md and tools/bench-report): per phase and target, one
//! `RESULT bench=PHASE fs=NAME ops=N secs=S ops_per_sec=R ...` line for the median repetition
//! (by ops/s; the lower middle for an even count) with `ops_per_sec_min`/`_max` over the
//! repetitions, `MBps` (10^6 bytes/s of file data read and written) where data moves, and the
//! per-operation latency percentiles `p50_us p95_us p99_us max_us` of that repetition. A
//! `REP workload=W fs=NAME rep=K PHASE=ops/s...` line follows every repetition as it ends.
//!
//! Modules: `fs` (the [`Fs`] trait), `params` (the workloads and their sizes), `timing` (timed
//! operations and what a workload returns), one module per workload family (`filebench`,
//! `mdtest`, `smallfile`), `report` (statistics and the RESULT line), `runner` (options and
//! the loop both programs run) and, with `std`, `host` ([`Fs`] over std::fs).
#![cfg_attr(not(any(test, feature = "std")), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

#[cfg(feature = "std")]
pub mod host;

mod filebench;
mod fs;
mod mdtest;
mod params;
mod report;
mod runner;
mod smallfile;
mod timing;

pub use abi::Errno;
pub use fs::{Fs, Open};
pub use params::{tree_dirs, Params, WORKLOADS};
pub use report::{percentile, result_line};
pub use runner::{main, parse_options, rep_order, run_workload, Options, Target, USAGE};
pub use timing::{Failed, Outcome, Phase};
