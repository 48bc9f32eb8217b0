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
#![cfg_attr(not(any(test, feature = "std")), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

#[cfg(feature = "std")]
pub mod host;

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

pub use abi::Errno;
use xrand::XorShift64;

/// How a file is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Open {
    /// `O_RDONLY`.
    Read,
    /// `O_WRONLY | O_CREAT | O_EXCL`, mode 0644.
    CreateNew,
    /// `O_WRONLY | O_APPEND` of an existing file.
    Append,
}

/// The file system under test, as the workloads see it. Paths are absolute (the target's
/// directory joined with names the workload makes).
pub trait Fs {
    type File;
    fn open(&mut self, path: &str, how: Open) -> Result<Self::File, Errno>;
    /// Write all of `data` at the file's position.
    fn write(&mut self, f: &mut Self::File, data: &[u8]) -> Result<(), Errno>;
    /// Read up to `buf.len()` bytes at the file's position (0 = end of file).
    fn read(&mut self, f: &mut Self::File, buf: &mut [u8]) -> Result<usize, Errno>;
    fn fsync(&mut self, f: &mut Self::File) -> Result<(), Errno>;
    fn close(&mut self, f: Self::File) -> Result<(), Errno>;
    /// Open directory `path` and fsync it (makes creates and unlinks in it durable).
    fn fsync_dir(&mut self, path: &str) -> Result<(), Errno>;
    /// `st_size` of `path` (stat, following symlinks).
    fn stat_size(&mut self, path: &str) -> Result<u64, Errno>;
    fn mkdir(&mut self, path: &str) -> Result<(), Errno>;
    fn unlink(&mut self, path: &str) -> Result<(), Errno>;
    fn rmdir(&mut self, path: &str) -> Result<(), Errno>;
    /// Remove `path` and everything under it; absent is fine (untimed clean-up).
    fn remove_tree(&mut self, path: &str) -> Result<(), Errno>;
    /// Whether `path` is an existing directory.
    fn is_dir(&mut self, path: &str) -> bool;
    /// Monotonic nanoseconds.
    fn now_ns(&mut self) -> u64;
    /// One console line.
    fn print(&mut self, line: &str);
    /// Whether `dir` is on the file system the label `name` says (shared/BENCH-PROTOCOL.md:
    /// a disk that failed to mount must not yield figures under its name). Labels a side
    /// does not know are accepted.
    fn check_label(&mut self, _name: &str, _dir: &str) -> Result<(), String> {
        Ok(())
    }
}

/// Every workload, in the order `workloads=all` runs them.
pub const WORKLOADS: [&str; 7] = [
    "fileserver",
    "webserver",
    "varmail",
    "mdtest",
    "create_empty",
    "delete_2m",
    "createdel_ordered",
];

const SEED: u64 = 0x5EED_2026;
const KIB: u64 = 1024;
const MIB: u64 = 1024 * 1024;

/// The sizes of every workload. [`Params::full`] is what the benchmark runs; [`Params::quick`]
/// is a smoke-test size (`quick`), the same code on a few files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Params {
    pub fileserver_files: u64,
    pub fileserver_dirs: u64,
    pub fileserver_size: u64,
    pub fileserver_loops: u64,
    pub webserver_files: u64,
    pub webserver_dirs: u64,
    pub webserver_size: u64,
    pub webserver_loops: u64,
    pub varmail_files: u64,
    pub varmail_size: u64,
    pub varmail_loops: u64,
    pub append_max: u64,
    pub mdtest_depth: u32,
    pub mdtest_fanout: u32,
    pub mdtest_items: u32,
    pub mdtest_bytes: u64,
    pub create_empty_n: u64,
    pub delete_2m_n: u64,
    pub createdel_n: u64,
}

impl Params {
    /// filebench's defaults scaled down (files, loops; sizes and directory width kept):
    /// fileserver 10000 files of 128 KiB in directories of 20, webserver 1000 files of 16 KiB
    /// in directories of 20, varmail 1000 files of 16 KiB in one directory. Sized so a TCG
    /// guest spends roughly 2-20 s per workload and file system (FAT32 the longer).
    pub fn full() -> Self {
        Params {
            fileserver_files: 500,
            fileserver_dirs: 25,
            fileserver_size: 128 * KIB,
            fileserver_loops: 2000,
            webserver_files: 500,
            webserver_dirs: 25,
            webserver_size: 16 * KIB,
            webserver_loops: 1000,
            varmail_files: 500,
            varmail_size: 16 * KIB,
            varmail_loops: 1000,
            append_max: 16 * KIB,
            mdtest_depth: 3,
            mdtest_fanout: 6,
            mdtest_items: 8,
            mdtest_bytes: 4096,
            create_empty_n: 1000,
            delete_2m_n: 40,
            createdel_n: 500,
        }
    }

    pub fn quick() -> Self {
        Params {
            fileserver_files: 12,
            fileserver_dirs: 3,
            fileserver_loops: 15,
            webserver_files: 10,
            webserver_dirs: 2,
            webserver_loops: 5,
            varmail_files: 10,
            varmail_loops: 10,
            mdtest_depth: 2,
            mdtest_fanout: 2,
            mdtest_items: 3,
            create_empty_n: 10,
            delete_2m_n: 2,
            createdel_n: 10,
            ..Params::full()
        }
    }

    /// The parameters of workload `w`, as one `PARAMS` console line.
    pub fn describe(&self, w: &str) -> String {
        let p = self;
        match w {
            "fileserver" => format!(
                "PARAMS fileserver files={} dirs={} file_bytes={} append_max={} loops={} prealloc=80% ops_per_loop=11",
                p.fileserver_files, p.fileserver_dirs, p.fileserver_size, p.append_max, p.fileserver_loops
            ),
            "webserver" => format!(
                "PARAMS webserver files={} dirs={} file_bytes={} log_append_max={} loops={} reads_per_loop=10 ops_per_loop=31",
                p.webserver_files, p.webserver_dirs, p.webserver_size, p.append_max, p.webserver_loops
            ),
            "varmail" => format!(
                "PARAMS varmail files={} dirs=1 file_bytes={} append_max={} loops={} prealloc=80% ops_per_loop=13",
                p.varmail_files, p.varmail_size, p.append_max, p.varmail_loops
            ),
            "mdtest" => format!(
                "PARAMS mdtest depth={} fanout={} items_per_dir={} dirs={} files={} file_bytes={}",
                p.mdtest_depth,
                p.mdtest_fanout,
                p.mdtest_items,
                tree_dirs(p.mdtest_depth, p.mdtest_fanout),
                tree_dirs(p.mdtest_depth, p.mdtest_fanout) * p.mdtest_items as u64,
                p.mdtest_bytes
            ),
            "create_empty" => format!("PARAMS create_empty n={} (create + close + fsync of the directory)", p.create_empty_n),
            "delete_2m" => format!("PARAMS delete_2m n={} file_bytes={}", p.delete_2m_n, 2 * MIB),
            "createdel_ordered" => format!("PARAMS createdel_ordered n={} file_bytes=1", p.createdel_n),
            _ => format!("PARAMS {w}: unknown"),
        }
    }
}

/// Directories of a tree of `depth` levels below the root with `fanout` children each,
/// the root included: 1 + f + f^2 + ... + f^depth.
pub fn tree_dirs(depth: u32, fanout: u32) -> u64 {
    (0..=depth).map(|d| (fanout as u64).pow(d)).sum()
}

/// One timed phase of one repetition.
#[derive(Clone, Debug)]
pub struct Phase {
    /// The RESULT line's `bench=` name, e.g. `mdtest_create`.
    pub bench: &'static str,
    pub ops: u64,
    /// File data read and written (0: a metadata phase, no MBps).
    pub bytes: u64,
    pub ns: u64,
    /// Per-operation latency, ns (saturating at u32::MAX, 4.3 s).
    pub lat: Vec<u32>,
}

impl Phase {
    pub fn ops_per_sec(&self) -> f64 {
        self.ops as f64 * 1e9 / self.ns.max(1) as f64
    }
}

/// What a workload run returns: its phases, and the regular files it left in its directory
/// by its own bookkeeping (the host test counts them on disk).
#[derive(Clone, Debug)]
pub struct Outcome {
    pub phases: Vec<Phase>,
    pub files_left: u64,
}

/// A failure with the operation and path it happened on.
pub type Failed = String;

fn err(what: &str, path: &str, e: Errno) -> Failed {
    format!("{what} {path}: {}", e.name())
}

/// Per-operation timing into a preallocated buffer, so recording does not allocate.
struct Timer {
    start: u64,
    lat: Vec<u32>,
    ops: u64,
    bytes: u64,
}

impl Timer {
    fn new<F: Fs>(fs: &mut F, expected_ops: u64) -> Timer {
        let lat = Vec::with_capacity(expected_ops as usize);
        Timer {
            start: fs.now_ns(),
            lat,
            ops: 0,
            bytes: 0,
        }
    }

    /// Run one operation, timed.
    fn op<F: Fs, T>(
        &mut self,
        fs: &mut F,
        f: impl FnOnce(&mut F) -> Result<T, Failed>,
    ) -> Result<T, Failed> {
        let t0 = fs.now_ns();
        let r = f(fs)?;
        let d = fs.now_ns().saturating_sub(t0);
        self.lat.push(d.min(u32::MAX as u64) as u32);
        self.ops += 1;
        Ok(r)
    }

    /// Open `path`, read it whole (it must hold `want` bytes) and close it: three timed
    /// operations; the bytes read are counted.
    fn read_file<F: Fs>(
        &mut self,
        fs: &mut F,
        path: &str,
        want: u64,
        buf: &mut [u8],
    ) -> Result<(), Failed> {
        let mut f = self.op(fs, |fs| {
            fs.open(path, Open::Read).map_err(|e| err("open", path, e))
        })?;
        self.bytes += self.op(fs, |fs| read_whole(fs, &mut f, path, want, buf))?;
        self.op(fs, |fs| fs.close(f).map_err(|e| err("close", path, e)))
    }

    /// Write `data` to the open file `f` of `path`, fsync it if `fsync`, and close it: each
    /// a timed operation; the bytes written are counted.
    fn append_and_close<F: Fs>(
        &mut self,
        fs: &mut F,
        mut f: F::File,
        path: &str,
        data: &[u8],
        fsync: bool,
    ) -> Result<(), Failed> {
        self.op(fs, |fs| {
            fs.write(&mut f, data).map_err(|e| err("append", path, e))
        })?;
        if fsync {
            self.op(fs, |fs| fs.fsync(&mut f).map_err(|e| err("fsync", path, e)))?;
        }
        self.op(fs, |fs| fs.close(f).map_err(|e| err("close", path, e)))?;
        self.bytes += data.len() as u64;
        Ok(())
    }

    fn finish<F: Fs>(self, fs: &mut F, bench: &'static str) -> Phase {
        Phase {
            bench,
            ops: self.ops,
            bytes: self.bytes,
            ns: fs.now_ns().saturating_sub(self.start),
            lat: self.lat,
        }
    }
}

/// Deterministic file content: byte i of a file is a function of its index and i, so a read
/// can be checked without keeping the data.
fn fill(buf: &mut [u8], tag: u64) {
    for (i, b) in buf.iter_mut().enumerate() {
        *b = (tag as u8).wrapping_mul(31).wrapping_add(i as u8);
    }
}

fn write_file<F: Fs>(
    fs: &mut F,
    f: &mut F::File,
    path: &str,
    len: u64,
    buf: &[u8],
) -> Result<(), Failed> {
    let mut left = len;
    while left > 0 {
        let n = left.min(buf.len() as u64) as usize;
        fs.write(f, &buf[..n]).map_err(|e| err("write", path, e))?;
        left -= n as u64;
    }
    Ok(())
}

/// Read the whole file; fail unless it holds exactly `expect` bytes.
fn read_whole<F: Fs>(
    fs: &mut F,
    f: &mut F::File,
    path: &str,
    expect: u64,
    buf: &mut [u8],
) -> Result<u64, Failed> {
    let mut got = 0u64;
    loop {
        let n = fs.read(f, buf).map_err(|e| err("read", path, e))?;
        if n == 0 {
            break;
        }
        got += n as u64;
    }
    if got != expect {
        return Err(format!("read {path}: {got} bytes, expected {expect}"));
    }
    Ok(got)
}

// ------------------------------------------------------------------ filebench personalities

/// A filebench fileset: which files exist and their sizes, so reads can be checked.
struct Fileset {
    paths: Vec<String>,
    size: Vec<Option<u64>>,
    rng: XorShift64,
}

impl Fileset {
    /// `n` files spread over `dirs` subdirectories of `root` (`dirs == 0`: flat in `root`).
    fn new<F: Fs>(fs: &mut F, root: &str, n: u64, dirs: u64, seed: u64) -> Result<Fileset, Failed> {
        let mut paths = Vec::with_capacity(n as usize);
        for d in 0..dirs {
            let p = format!("{root}/d{d:02}");
            fs.mkdir(&p).map_err(|e| err("mkdir", &p, e))?;
        }
        for i in 0..n {
            paths.push(if dirs == 0 {
                format!("{root}/f{i:05}")
            } else {
                format!("{root}/d{:02}/f{i:05}", i % dirs)
            });
        }
        Ok(Fileset {
            size: vec![None; n as usize],
            paths,
            rng: XorShift64::new(seed),
        })
    }

    /// Untimed: create `percent`% of the files (filebench's `prealloc`), each `len` bytes.
    fn prealloc<F: Fs>(
        &mut self,
        fs: &mut F,
        percent: u64,
        len: u64,
        buf: &[u8],
    ) -> Result<(), Failed> {
        let n = self.paths.len() as u64 * percent / 100;
        for i in 0..n as usize {
            let path = &self.paths[i];
            let mut f = fs
                .open(path, Open::CreateNew)
                .map_err(|e| err("create", path, e))?;
            write_file(fs, &mut f, path, len, buf)?;
            fs.close(f).map_err(|e| err("close", path, e))?;
            self.size[i] = Some(len);
        }
        Ok(())
    }

    /// A random file that exists (`want == true`) or not; None if there is none.
    fn pick(&mut self, want: bool) -> Option<usize> {
        let n = self.paths.len();
        let start = self.rng.below(n as u64) as usize;
        (0..n)
            .map(|k| (start + k) % n)
            .find(|&i| self.size[i].is_some() == want)
    }

    /// Delete a random existing file (one timed operation); nothing if none exists.
    fn delete_one<F: Fs>(&mut self, fs: &mut F, t: &mut Timer) -> Result<(), Failed> {
        if let Some(i) = self.pick(true) {
            let path = &self.paths[i];
            t.op(fs, |fs| fs.unlink(path).map_err(|e| err("unlink", path, e)))?;
            self.size[i] = None;
        }
        Ok(())
    }

    fn existing(&self) -> u64 {
        self.size.iter().filter(|s| s.is_some()).count() as u64
    }
}

fn append_len(rng: &mut XorShift64, max: u64) -> u64 {
    1 + rng.below(max)
}

/// filebench fileserver.f: createfile, writewholefile, closefile, openfile, appendfilerand,
/// closefile, openfile, readwholefile, closefile, deletefile, statfile.
fn fileserver<F: Fs>(fs: &mut F, root: &str, p: &Params) -> Result<Outcome, Failed> {
    let mut buf = vec![0u8; MIB as usize];
    fill(&mut buf, 7);
    let mut rbuf = vec![0u8; MIB as usize];
    let mut set = Fileset::new(fs, root, p.fileserver_files, p.fileserver_dirs, SEED)?;
    set.prealloc(fs, 80, p.fileserver_size, &buf)?;
    let mut rng = XorShift64::new(SEED ^ 1);
    let mut t = Timer::new(fs, p.fileserver_loops * 11);
    for _ in 0..p.fileserver_loops {
        if let Some(i) = set.pick(false) {
            let path = set.paths[i].clone();
            let mut f = t.op(fs, |fs| {
                fs.open(&path, Open::CreateNew)
                    .map_err(|e| err("create", &path, e))
            })?;
            t.op(fs, |fs| {
                write_file(fs, &mut f, &path, p.fileserver_size, &buf)
            })?;
            t.op(fs, |fs| fs.close(f).map_err(|e| err("close", &path, e)))?;
            t.bytes += p.fileserver_size;
            set.size[i] = Some(p.fileserver_size);
        }
        if let Some(i) = set.pick(true) {
            let path = set.paths[i].clone();
            let n = append_len(&mut rng, p.append_max);
            let f = t.op(fs, |fs| {
                fs.open(&path, Open::Append)
                    .map_err(|e| err("open", &path, e))
            })?;
            t.append_and_close(fs, f, &path, &buf[..n as usize], false)?;
            set.size[i] = set.size[i].map(|s| s + n);
        }
        if let Some(i) = set.pick(true) {
            let path = set.paths[i].clone();
            let want = set.size[i].unwrap_or(0);
            t.read_file(fs, &path, want, &mut rbuf)?;
        }
        set.delete_one(fs, &mut t)?;
        if let Some(i) = set.pick(true) {
            let path = set.paths[i].clone();
            let want = set.size[i].unwrap_or(0);
            let got = t.op(fs, |fs| {
                fs.stat_size(&path).map_err(|e| err("stat", &path, e))
            })?;
            if got != want {
                return Err(format!("stat {path}: size {got}, expected {want}"));
            }
        }
    }
    let phase = t.finish(fs, "fileserver");
    Ok(Outcome {
        phases: vec![phase],
        files_left: set.existing(),
    })
}

/// filebench webserver.f: ten times openfile, readwholefile, closefile; then appendfilerand
/// of up to 16 KiB to the log (kept open, as filebench's `fd=1`).
fn webserver<F: Fs>(fs: &mut F, root: &str, p: &Params) -> Result<Outcome, Failed> {
    let mut buf = vec![0u8; MIB as usize];
    fill(&mut buf, 3);
    let mut rbuf = vec![0u8; MIB as usize];
    let mut set = Fileset::new(fs, root, p.webserver_files, p.webserver_dirs, SEED ^ 2)?;
    set.prealloc(fs, 100, p.webserver_size, &buf)?;
    let log = format!("{root}/log");
    let f = fs
        .open(&log, Open::CreateNew)
        .map_err(|e| err("create", &log, e))?;
    fs.close(f).map_err(|e| err("close", &log, e))?;
    let mut logf = fs
        .open(&log, Open::Append)
        .map_err(|e| err("open", &log, e))?;
    let mut rng = XorShift64::new(SEED ^ 3);
    let mut t = Timer::new(fs, p.webserver_loops * 31);
    for _ in 0..p.webserver_loops {
        for _ in 0..10 {
            let Some(i) = set.pick(true) else { break };
            let path = set.paths[i].clone();
            let want = set.size[i].unwrap_or(0);
            t.read_file(fs, &path, want, &mut rbuf)?;
        }
        let n = append_len(&mut rng, p.append_max);
        t.op(fs, |fs| {
            fs.write(&mut logf, &buf[..n as usize])
                .map_err(|e| err("append", &log, e))
        })?;
        t.bytes += n;
    }
    let phase = t.finish(fs, "webserver");
    fs.close(logf).map_err(|e| err("close", &log, e))?;
    Ok(Outcome {
        phases: vec![phase],
        files_left: set.existing() + 1,
    })
}

/// filebench varmail.f: deletefile; createfile, appendfilerand, fsyncfile, closefile;
/// openfile, readwholefile, appendfilerand, fsyncfile, closefile; openfile, readwholefile,
/// closefile. One flat directory.
fn varmail<F: Fs>(fs: &mut F, root: &str, p: &Params) -> Result<Outcome, Failed> {
    let mut buf = vec![0u8; MIB as usize];
    fill(&mut buf, 5);
    let mut rbuf = vec![0u8; MIB as usize];
    let mut set = Fileset::new(fs, root, p.varmail_files, 0, SEED ^ 4)?;
    set.prealloc(fs, 80, p.varmail_size, &buf)?;
    let mut rng = XorShift64::new(SEED ^ 5);
    let mut t = Timer::new(fs, p.varmail_loops * 13);
    for _ in 0..p.varmail_loops {
        set.delete_one(fs, &mut t)?;
        if let Some(i) = set.pick(false) {
            let path = set.paths[i].clone();
            let n = append_len(&mut rng, p.append_max);
            let f = t.op(fs, |fs| {
                fs.open(&path, Open::CreateNew)
                    .map_err(|e| err("create", &path, e))
            })?;
            t.append_and_close(fs, f, &path, &buf[..n as usize], true)?;
            set.size[i] = Some(n);
        }
        if let Some(i) = set.pick(true) {
            let path = set.paths[i].clone();
            let want = set.size[i].unwrap_or(0);
            let n = append_len(&mut rng, p.append_max);
            let mut f = t.op(fs, |fs| {
                fs.open(&path, Open::Read)
                    .map_err(|e| err("open", &path, e))
            })?;
            t.bytes += t.op(fs, |fs| read_whole(fs, &mut f, &path, want, &mut rbuf))?;
            fs.close(f).map_err(|e| err("close", &path, e))?;
            // filebench appends through the descriptor it read with (opened read-write);
            // here the append goes through a second, O_APPEND descriptor, opened untimed.
            let f = fs
                .open(&path, Open::Append)
                .map_err(|e| err("open", &path, e))?;
            t.append_and_close(fs, f, &path, &buf[..n as usize], true)?;
            set.size[i] = Some(want + n);
        }
        if let Some(i) = set.pick(true) {
            let path = set.paths[i].clone();
            let want = set.size[i].unwrap_or(0);
            t.read_file(fs, &path, want, &mut rbuf)?;
        }
    }
    let phase = t.finish(fs, "varmail");
    Ok(Outcome {
        phases: vec![phase],
        files_left: set.existing(),
    })
}

// ------------------------------------------------------------------ mdtest tree

/// The tree's directories, parents before children: `root/tree`, `root/tree/d0`, ...
fn tree(root: &str, depth: u32, fanout: u32) -> Vec<String> {
    let mut out = vec![format!("{root}/tree")];
    let mut level = out.clone();
    for _ in 0..depth {
        let mut next = Vec::new();
        for d in &level {
            for c in 0..fanout {
                next.push(format!("{d}/d{c}"));
            }
        }
        out.extend(next.iter().cloned());
        level = next;
    }
    out
}

/// mdtest -z DEPTH -b FANOUT -I ITEMS -w BYTES -e BYTES: phases mkdir (the tree), create
/// (create + write + close each file), stat, read (open + read + close), remove (unlink),
/// rmdir (the tree, deepest first).
fn mdtest<F: Fs>(fs: &mut F, root: &str, p: &Params) -> Result<Outcome, Failed> {
    let dirs = tree(root, p.mdtest_depth, p.mdtest_fanout);
    let mut files = Vec::with_capacity(dirs.len() * p.mdtest_items as usize);
    for d in &dirs {
        for i in 0..p.mdtest_items {
            files.push(format!("{d}/file.mdtest.{i}"));
        }
    }
    let mut buf = vec![0u8; p.mdtest_bytes as usize];
    fill(&mut buf, 11);
    let mut rbuf = vec![0u8; 64 * KIB as usize];
    let mut phases = Vec::new();

    let mut t = Timer::new(fs, dirs.len() as u64);
    for d in &dirs {
        t.op(fs, |fs| fs.mkdir(d).map_err(|e| err("mkdir", d, e)))?;
    }
    phases.push(t.finish(fs, "mdtest_mkdir"));

    let mut t = Timer::new(fs, files.len() as u64);
    for path in &files {
        t.op(fs, |fs| {
            let mut f = fs
                .open(path, Open::CreateNew)
                .map_err(|e| err("create", path, e))?;
            write_file(fs, &mut f, path, p.mdtest_bytes, &buf)?;
            fs.close(f).map_err(|e| err("close", path, e))
        })?;
        t.bytes += p.mdtest_bytes;
    }
    phases.push(t.finish(fs, "mdtest_create"));

    let mut t = Timer::new(fs, files.len() as u64);
    for path in &files {
        let got = t.op(fs, |fs| {
            fs.stat_size(path).map_err(|e| err("stat", path, e))
        })?;
        if got != p.mdtest_bytes {
            return Err(format!(
                "stat {path}: size {got}, expected {}",
                p.mdtest_bytes
            ));
        }
    }
    phases.push(t.finish(fs, "mdtest_stat"));

    let mut t = Timer::new(fs, files.len() as u64);
    for path in &files {
        t.bytes += t.op(fs, |fs| {
            let mut f = fs
                .open(path, Open::Read)
                .map_err(|e| err("open", path, e))?;
            let n = read_whole(fs, &mut f, path, p.mdtest_bytes, &mut rbuf)?;
            fs.close(f).map_err(|e| err("close", path, e))?;
            Ok(n)
        })?;
    }
    phases.push(t.finish(fs, "mdtest_read"));

    let mut t = Timer::new(fs, files.len() as u64);
    for path in &files {
        t.op(fs, |fs| fs.unlink(path).map_err(|e| err("unlink", path, e)))?;
    }
    phases.push(t.finish(fs, "mdtest_remove"));

    let mut t = Timer::new(fs, dirs.len() as u64);
    for d in dirs.iter().rev() {
        t.op(fs, |fs| fs.rmdir(d).map_err(|e| err("rmdir", d, e)))?;
    }
    phases.push(t.finish(fs, "mdtest_rmdir"));
    Ok(Outcome {
        phases,
        files_left: 0,
    })
}

// ------------------------------------------------------------------ small-file metadata

/// Create an empty file, close it, fsync the directory: N times.
fn create_empty<F: Fs>(fs: &mut F, root: &str, p: &Params) -> Result<Outcome, Failed> {
    let mut t = Timer::new(fs, p.create_empty_n);
    for i in 0..p.create_empty_n {
        let path = format!("{root}/e{i:06}");
        t.op(fs, |fs| {
            let f = fs
                .open(&path, Open::CreateNew)
                .map_err(|e| err("create", &path, e))?;
            fs.close(f).map_err(|e| err("close", &path, e))?;
            fs.fsync_dir(root).map_err(|e| err("fsync dir", root, e))
        })?;
    }
    Ok(Outcome {
        phases: vec![t.finish(fs, "create_empty")],
        files_left: p.create_empty_n,
    })
}

/// N files of 2 MiB written and fsync'd (untimed), then each unlinked (timed per file), with
/// a final fsync of the directory inside the timed part.
fn delete_2m<F: Fs>(fs: &mut F, root: &str, p: &Params) -> Result<Outcome, Failed> {
    let mut buf = vec![0u8; MIB as usize];
    fill(&mut buf, 13);
    let paths: Vec<String> = (0..p.delete_2m_n)
        .map(|i| format!("{root}/big{i:04}"))
        .collect();
    for path in &paths {
        let mut f = fs
            .open(path, Open::CreateNew)
            .map_err(|e| err("create", path, e))?;
        write_file(fs, &mut f, path, 2 * MIB, &buf)?;
        fs.fsync(&mut f).map_err(|e| err("fsync", path, e))?;
        fs.close(f).map_err(|e| err("close", path, e))?;
    }
    fs.fsync_dir(root).map_err(|e| err("fsync dir", root, e))?;
    let mut t = Timer::new(fs, p.delete_2m_n);
    for path in &paths {
        t.op(fs, |fs| fs.unlink(path).map_err(|e| err("unlink", path, e)))?;
    }
    fs.fsync_dir(root).map_err(|e| err("fsync dir", root, e))?;
    Ok(Outcome {
        phases: vec![t.finish(fs, "delete_2m")],
        files_left: 0,
    })
}

/// createdel with both phases in name order: create x000000.. (one byte each), then unlink
/// in the same order.
fn createdel_ordered<F: Fs>(fs: &mut F, root: &str, p: &Params) -> Result<Outcome, Failed> {
    let paths: Vec<String> = (0..p.createdel_n)
        .map(|i| format!("{root}/x{i:06}"))
        .collect();
    let mut t = Timer::new(fs, p.createdel_n);
    for path in &paths {
        t.op(fs, |fs| {
            let mut f = fs
                .open(path, Open::CreateNew)
                .map_err(|e| err("create", path, e))?;
            fs.write(&mut f, b"x").map_err(|e| err("write", path, e))?;
            fs.close(f).map_err(|e| err("close", path, e))
        })?;
    }
    let create = t.finish(fs, "createdel_ordered_create");
    let mut t = Timer::new(fs, p.createdel_n);
    for path in &paths {
        t.op(fs, |fs| fs.unlink(path).map_err(|e| err("unlink", path, e)))?;
    }
    Ok(Outcome {
        phases: vec![create, t.finish(fs, "createdel_ordered_delete")],
        files_left: 0,
    })
}

/// Run workload `name` in `root`, an existing empty directory.
pub fn run_workload<F: Fs>(
    fs: &mut F,
    name: &str,
    root: &str,
    p: &Params,
) -> Result<Outcome, Failed> {
    match name {
        "fileserver" => fileserver(fs, root, p),
        "webserver" => webserver(fs, root, p),
        "varmail" => varmail(fs, root, p),
        "mdtest" => mdtest(fs, root, p),
        "create_empty" => create_empty(fs, root, p),
        "delete_2m" => delete_2m(fs, root, p),
        "createdel_ordered" => createdel_ordered(fs, root, p),
        _ => Err(format!("unknown workload {name:?}")),
    }
}

// ------------------------------------------------------------------ statistics and output

/// The `q`-quantile (0..=1) of sorted `v`, nearest rank.
pub fn percentile(sorted: &[u32], q: f64) -> u32 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = libm_ceil(q * sorted.len() as f64) as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// `f64::ceil` without std.
fn libm_ceil(x: f64) -> f64 {
    let t = x as i64 as f64;
    if t < x {
        t + 1.0
    } else {
        t
    }
}

/// The RESULT line of `phase` (the median repetition), with the spread of ops/s over `all`.
pub fn result_line(fs_name: &str, phase: &Phase, all: &[f64]) -> String {
    let mut lat = phase.lat.clone();
    lat.sort_unstable();
    let us = |ns: u32| format!("{:.1}", ns as f64 / 1e3);
    let min = all.iter().cloned().fold(f64::INFINITY, f64::min);
    let max = all.iter().cloned().fold(0.0, f64::max);
    let secs = phase.ns as f64 / 1e9;
    let mut s = format!(
        "RESULT bench={} fs={} ops={} secs={:.6} ops_per_sec={:.1} ops_per_sec_min={:.1} ops_per_sec_max={:.1}",
        phase.bench,
        fs_name,
        phase.ops,
        secs,
        phase.ops_per_sec(),
        min,
        max
    );
    if phase.bytes > 0 {
        s.push_str(&format!(
            " bytes={} MBps={:.2}",
            phase.bytes,
            phase.bytes as f64 / secs.max(1e-9) / 1e6
        ));
    }
    s.push_str(&format!(
        " p50_us={} p95_us={} p99_us={} max_us={} reps={}",
        us(percentile(&lat, 0.50)),
        us(percentile(&lat, 0.95)),
        us(percentile(&lat, 0.99)),
        us(lat.last().copied().unwrap_or(0)),
        all.len()
    ));
    s
}

/// The lower middle of `v` by ops/s: its index.
fn median_index(v: &[Phase]) -> usize {
    let mut idx: Vec<usize> = (0..v.len()).collect();
    idx.sort_by(|&a, &b| {
        v[a].ops_per_sec()
            .partial_cmp(&v[b].ops_per_sec())
            .unwrap_or(core::cmp::Ordering::Equal)
    });
    idx[(idx.len() - 1) / 2]
}

/// A `NAME:DIR` target: results are labelled NAME, work happens in DIR/wl-WORKLOAD.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub name: String,
    pub dir: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    pub targets: Vec<Target>,
    pub reps: usize,
    pub workloads: Vec<String>,
    pub quick: bool,
}

pub const USAGE: &str = "NAME:DIR... [reps=N] [workloads=all|NAME,NAME...] [quick]";

/// Parse `argv` (argv[0] skipped).
pub fn parse_options(argv: &[&str]) -> Result<Options, String> {
    let mut o = Options {
        targets: Vec::new(),
        reps: 3,
        workloads: WORKLOADS.iter().map(|s| s.to_string()).collect(),
        quick: false,
    };
    for &arg in argv.iter().skip(1) {
        if let Some(v) = arg.strip_prefix("reps=") {
            o.reps = v
                .parse::<usize>()
                .map_err(|_| format!("bad reps={v}"))?
                .max(1);
        } else if let Some(v) = arg.strip_prefix("workloads=") {
            if v != "all" {
                o.workloads = Vec::new();
                for w in v.split(',') {
                    if !WORKLOADS.contains(&w) {
                        return Err(format!(
                            "unknown workload {w:?} (known: {})",
                            WORKLOADS.join(" ")
                        ));
                    }
                    o.workloads.push(w.to_string());
                }
            }
        } else if arg == "quick" {
            o.quick = true;
        } else if let Some((name, dir)) = arg.split_once(':') {
            if name.is_empty() || dir.is_empty() || name.contains('=') {
                return Err(format!("bad target {arg:?}: want NAME:DIR"));
            }
            o.targets.push(Target {
                name: name.to_string(),
                dir: dir.trim_end_matches('/').to_string(),
            });
        } else {
            return Err(format!("unknown argument {arg:?}"));
        }
    }
    if o.targets.is_empty() {
        return Err("no targets: give NAME:DIR, e.g. dbfs:/dbfs fat32:/fat".into());
    }
    Ok(o)
}

/// The order of `n` systems in repetition `rep` (from 1). A system run right after another
/// pays for what that one left behind (its image's dirty pages reaching the host's disk, its
/// timer's barrier), so with a fixed order the same system always paid (2-5x on some phases of
/// dbfs-fuse against itself). Rotating the order by one each repetition moves who goes first
/// but keeps who follows whom (B after A in A B C, B C A and C A B alike: a dbfs-fuse build
/// came out 0.57x or 1.66x another on mdtest_mkdir by its place). So the orders are the rows
/// of a Williams design: `0, 1, n-1, 2, n-2, ...` plus `k` (mod `n`) for row `k`, the first `n`
/// repetitions taking the rows and the next `n` the rows reversed, and so on. Over `2n`
/// repetitions every system goes first twice and runs right after every other one twice.
pub fn rep_order(n: usize, rep: usize) -> Vec<usize> {
    if n == 0 {
        return Vec::new();
    }
    let r = rep.saturating_sub(1);
    // Position i of row 0: 0, 1, n-1, 2, n-2, ...
    let base = |i: usize| {
        if i % 2 == 1 {
            i.div_ceil(2)
        } else {
            (n - i / 2) % n
        }
    };
    let mut order: Vec<usize> = (0..n).map(|i| (base(i) + r) % n).collect();
    if (r / n) % 2 == 1 {
        order.reverse();
    }
    order
}

/// The whole program: every chosen workload, repetitions outermost within a workload and the
/// targets alternating within a repetition (in [`rep_order`]);
/// RESULT lines and a table per phase. Returns the
/// exit status (0 = no failure).
pub fn main<F: Fs>(fs: &mut F, argv: &[&str]) -> i32 {
    let prog = argv.first().copied().unwrap_or("workloads");
    let o = match parse_options(argv) {
        Ok(o) => o,
        Err(e) => {
            fs.print(&format!("{prog}: {e}"));
            fs.print(&format!("usage: {prog} {USAGE}"));
            return 2;
        }
    };
    let p = if o.quick {
        Params::quick()
    } else {
        Params::full()
    };
    let mut targets = Vec::new();
    let mut failures = 0u32;
    for t in &o.targets {
        if fs.is_dir(&t.dir) {
            match fs.check_label(&t.name, &t.dir) {
                Ok(()) => targets.push(t.clone()),
                Err(msg) => {
                    fs.print(&format!("ERROR workloads fs={}: {msg}", t.name));
                    failures += 1;
                }
            }
        } else {
            fs.print(&format!(
                "SKIP workloads fs={}: {} is not a directory",
                t.name, t.dir
            ));
        }
    }
    let mut results = 0u32;
    for w in &o.workloads {
        fs.print(&p.describe(w));
        // [target][rep] -> phases
        let mut runs: Vec<Vec<Vec<Phase>>> = vec![Vec::new(); targets.len()];
        let mut alive = vec![true; targets.len()];
        for rep in 1..=o.reps {
            for ti in rep_order(targets.len(), rep) {
                let t = &targets[ti];
                if !alive[ti] {
                    continue;
                }
                let root = format!("{}/wl-{w}", t.dir);
                let r = fs
                    .remove_tree(&root)
                    .and_then(|()| fs.mkdir(&root))
                    .map_err(|e| err("prepare", &root, e))
                    .and_then(|()| run_workload(fs, w, &root, &p));
                match r {
                    Ok(out) => {
                        // Each repetition as it ends, so a slow one can be placed in time.
                        let mut line = format!("REP workload={w} fs={} rep={rep}", t.name);
                        for ph in &out.phases {
                            line.push_str(&format!(" {}={:.1}", ph.bench, ph.ops_per_sec()));
                        }
                        fs.print(&line);
                        runs[ti].push(out.phases)
                    }
                    Err(msg) => {
                        fs.print(&format!("ERROR bench={w} fs={}: {msg}", t.name));
                        alive[ti] = false;
                        failures += 1;
                    }
                }
                if let Err(e) = fs.remove_tree(&root) {
                    fs.print(&format!(
                        "ERROR bench={w} fs={}: remove {root}: {}",
                        t.name,
                        e.name()
                    ));
                    alive[ti] = false;
                    failures += 1;
                }
            }
        }
        // Phases of one workload, in their order (taken from the first completed run).
        let Some(names) = runs
            .iter()
            .find_map(|r| r.first())
            .map(|ph| ph.iter().map(|x| x.bench).collect::<Vec<_>>())
        else {
            continue;
        };
        for (k, bench) in names.iter().enumerate() {
            let mut rows: Vec<(String, f64)> = Vec::new();
            for (ti, t) in targets.iter().enumerate() {
                if !alive[ti] || runs[ti].is_empty() {
                    continue;
                }
                let reps: Vec<Phase> = runs[ti].iter().map(|r| r[k].clone()).collect();
                let all: Vec<f64> = reps.iter().map(Phase::ops_per_sec).collect();
                let m = &reps[median_index(&reps)];
                fs.print(&result_line(&t.name, m, &all));
                results += 1;
                rows.push((t.name.clone(), m.ops_per_sec()));
            }
            if rows.len() > 1 {
                fs.print(&format!("  {bench} (median ops/s)"));
                let base = rows[0].1;
                for (name, v) in &rows {
                    let ratio = if base > 0.0 { v / base } else { 0.0 };
                    fs.print(&format!(
                        "  {name:<14} {v:>12.1}  {ratio:>6.2}x of {}",
                        rows[0].0
                    ));
                }
            }
        }
    }
    fs.print(&format!("workloads: {results} results, {failures} errors"));
    i32::from(failures > 0)
}
