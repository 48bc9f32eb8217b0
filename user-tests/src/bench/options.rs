//! What a benchmark run is: the workload and its defaults ([`Spec`]), the parsed arguments
//! ([`Options`]), the targets and which of them exist, and the seed of its random choices.

use alloc::string::String;
use alloc::vec::Vec;
use alloc::{format, vec};

use abi::stat::*;

use crate::args::{parse_u64, split_kv};
use crate::println;
use crate::sys::{self};

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
pub(super) const SEED: u64 = 0xDBF5_2026_0001_0001;

/// Parsed command line of a benchmark program.
#[derive(Clone, Debug)]
pub struct Options {
    pub targets: Vec<Target>,
    pub reps: usize,
    /// Untimed repetitions of every target before the timed ones (`warmup=N`; default 1, 0
    /// with `quick`). Under QEMU's TCG the first runs of code the guest has not run before
    /// pay for its translation on the host: the first three fsyncs of a boot's first
    /// `rewrite` took 4-12 ms where the later ones took 1-2, with the same number of guest
    /// instructions (`ICOUNT=1`). A warm-up leaves that out for every target alike.
    pub warmup: Option<usize>,
    pub size_mib: Option<u64>,
    pub ops: Option<u64>,
    /// The file counts createdel runs, ascending (`n=START:END:STEP` or `n=A,B,C`).
    pub n_list: Option<Vec<u64>>,
    /// createdel: a file system whose create + delete at some N took longer than this many
    /// seconds is not run at larger N (FAT32 directories are linear, so its time grows as N^2).
    pub max_secs: Option<u64>,
    pub quick: bool,
    /// The device model QEMU backs the disks with (`disk=NAME`, from `make ... DISK=NAME`;
    /// "default" when not given), named in every RESULT line.
    pub disk: String,
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

/// Parse the arguments common to all benchmark programs (`argv[0]` is skipped).
pub fn parse_options(argv: &[&str]) -> Result<Options, String> {
    let mut o = Options {
        targets: Vec::new(),
        reps: 3,
        warmup: None,
        size_mib: None,
        ops: None,
        n_list: None,
        max_secs: None,
        quick: false,
        disk: "default".into(),
    };
    for &arg in argv.iter().skip(1) {
        match split_kv(arg) {
            ("reps", Some(v)) => {
                o.reps = parse_u64(v).map_err(|_| format!("bad reps={v}"))?.max(1) as usize
            }
            ("warmup", Some(v)) => {
                o.warmup = Some(parse_u64(v).map_err(|_| format!("bad warmup={v}"))? as usize)
            }
            ("size", Some(v)) => {
                o.size_mib = Some(parse_u64(v).map_err(|_| format!("bad size={v} (MiB)"))?)
            }
            ("ops", Some(v)) => o.ops = Some(parse_u64(v).map_err(|_| format!("bad ops={v}"))?),
            ("n", Some(v)) => o.n_list = Some(parse_n(v)?),
            ("max_secs", Some(v)) => {
                o.max_secs = Some(parse_u64(v).map_err(|_| format!("bad max_secs={v}"))?)
            }
            ("disk", Some(v)) if !v.is_empty() && !v.contains(char::is_whitespace) => {
                o.disk = v.into()
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
pub(super) fn parse_n(v: &str) -> Result<Vec<u64>, String> {
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

/// Skip targets whose parent directory (mount point) is missing; print a note for each.
pub(super) fn available_targets(bench: &str, targets: &[Target]) -> Vec<Target> {
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
