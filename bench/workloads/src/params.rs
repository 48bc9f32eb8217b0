//! What the workloads are and how big: the list of workloads in run order, their sizes
//! ([`Params`], full and quick) and the description every run prints.

use alloc::format;
use alloc::string::String;

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

pub(crate) const SEED: u64 = 0x5EED_2026;
pub(crate) const KIB: u64 = 1024;
pub(crate) const MIB: u64 = 1024 * 1024;

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
