//! The command line: one clap subcommand per job (`mkfs`, `mount`, the offline commands, the
//! cross-check and benchmark helpers). `main` dispatches on [`Command`].

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::image::parse_size;

#[derive(Parser)]
#[command(
    name = "dbfs-fuse",
    about = "Format, mount (FUSE), check and edit dbfs images on the host"
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Create (or overwrite) IMAGE as an empty dbfs of the given size (a sparse file).
    Mkfs {
        image: PathBuf,
        /// Image size, e.g. 1G (K, M, G, T suffixes; powers of 1024).
        #[arg(long, value_parser = parse_size)]
        size: u64,
        /// Bytes per data chunk: a power of two in 512..=1M. 4K by default: small random
        /// writes then rewrite no more than they change (docs/BENCHMARKS.md has 4K and 16K
        /// measured against fuse2fs).
        #[arg(long, value_parser = parse_size, default_value = "4K")]
        chunk_size: u64,
        /// kvdb page size: a power of two in 4K..=64K.
        #[arg(long, value_parser = parse_size, default_value = "4K")]
        page_size: u64,
        #[arg(long, default_value = "")]
        label: String,
    },
    /// Mount IMAGE on MOUNTPOINT through FUSE.
    Mount {
        image: PathBuf,
        mountpoint: PathBuf,
        /// Mount options, comma separated (may be repeated): ro, allow_other, allow_root,
        /// auto_unmount, default_permissions (the kernel checks mode bits: the default unless
        /// only root can reach the mount), noatime, fsname=NAME, nobarrier (fdatasync the
        /// image only on fsync, syncfs and unmount: faster, but a host crash may tear the last
        /// commits),
        /// nowriteback_cache (send every write(2) to dbfs as it happens instead of through the
        /// kernel's write-back cache, which is on by default), nokeep_cache (drop a file's
        /// cached pages at every open, so reads reach dbfs), nouring (every request through
        /// /dev/fuse, not the kernel's per-CPU io_uring queues), noidle_commits (ring threads
        /// answer a caller seen moving at their normal scheduling policy, not as SCHED_IDLE,
        /// which keeps the caller on its CPU), noclose_errors (no
        /// flush request per close(2): one round trip less, but close(2) may miss a write-back
        /// write dbfs refused), cache_size=SIZE (the tool's
        /// cache of image pages; default 1/8 of memory, 256M..2G; 0 = none), and any other
        /// option the kernel's FUSE accepts.
        #[arg(short = 'o', value_name = "OPT[,OPT...]")]
        options: Vec<String>,
        /// Stay in the foreground (unmount on SIGINT / SIGTERM / SIGHUP).
        #[arg(short = 'f', long)]
        foreground: bool,
        /// FUSE worker threads.
        #[arg(long, default_value_t = 4)]
        threads: usize,
        /// Where the background process writes its messages (default: nowhere once mounted).
        #[arg(long)]
        log: Option<PathBuf>,
    },
    /// Check IMAGE without changing it: exit 0 clean, 1 problems found, 2 cannot open.
    Fsck {
        image: PathBuf,
        #[arg(short, long)]
        verbose: bool,
    },
    /// List a directory of IMAGE (default: the root).
    Ls {
        image: PathBuf,
        path: Option<String>,
    },
    /// Print a file of IMAGE to stdout.
    Cat { image: PathBuf, path: String },
    /// Copy host file HOSTFILE (`-`: stdin) to PATH in IMAGE (created or replaced).
    Put {
        image: PathBuf,
        hostfile: PathBuf,
        path: String,
    },
    /// Copy host directory HOSTDIR into PATH of IMAGE (created if missing) with every file
    /// type, hard link, owner, mode, device number, time and extended attribute (see
    /// `import.rs`): how a Debian tree becomes the guest's root.
    Import {
        image: PathBuf,
        hostdir: PathBuf,
        #[arg(long, default_value = "/")]
        dir: String,
    },
    /// Cross-check: write the tree generated from SEED and its MANIFEST into IMAGE through
    /// the dbfs library (no mount).
    GenTree {
        image: PathBuf,
        #[arg(long)]
        seed: u64,
        /// Directory of the image to write the tree in (created if missing).
        #[arg(long, default_value = "/")]
        dir: String,
    },
    /// Cross-check: check a tree of IMAGE against its MANIFEST through the dbfs library;
    /// prints `N passed, N failed`, exit 1 on any failure.
    VerifyTree {
        image: PathBuf,
        #[arg(long, default_value = "/")]
        dir: String,
    },
    /// Cross-check: check host directory DIR (e.g. a FUSE mount) against DIR/MANIFEST.
    VerifyDir { dir: PathBuf },
    /// Cross-check: run the workload script in new directory DIR through std::fs and print
    /// the final listing between markers.
    Workload { dir: PathBuf },
    /// Internal (started by `mount -o auto_unmount`): keep the descriptors inherited from
    /// process PID open until PID has exited and its FUSE connection on MNT is gone. See
    /// `hold_socket_past_exit`.
    #[command(hide = true)]
    HoldUntilExit {
        #[arg(long)]
        pid: i32,
        #[arg(long)]
        mnt: Option<PathBuf>,
    },
    /// Benchmark helper (any directory, any file system): the createdel workload of
    /// BENCH-PROTOCOL.md. Creates N one-byte files named x%06d in random order, then unlinks
    /// them in sorted order; prints one RESULT line.
    Createdel {
        dir: PathBuf,
        #[arg(short, default_value_t = 20000)]
        n: u32,
        /// Label for the RESULT line.
        #[arg(long, default_value = "dir")]
        fs: String,
    },
}
