//! `dbfs-fuse`: the kernel's own dbfs crate on the host, through FUSE.
//!
//! Layer: a host tool over `fs/dbfs` + `fs/kvdb` (the same crates the kernel links), so an image
//! written by the guest can be mounted, checked and measured on Linux, and the other way round.
//!
//! ```text
//! dbfs-fuse mkfs IMAGE --size 1G [--chunk-size 4K] [--page-size 4K] [--label NAME]
//! dbfs-fuse mount IMAGE MOUNTPOINT [-o OPT[,OPT...]] [-f] [--threads N] [--log FILE]
//! dbfs-fuse fsck IMAGE [-v]           exit 0 clean, 1 problems found, 2 cannot open
//! dbfs-fuse ls IMAGE [PATH]
//! dbfs-fuse cat IMAGE PATH
//! dbfs-fuse put IMAGE HOSTFILE PATH   (HOSTFILE `-` reads stdin)
//! dbfs-fuse import IMAGE HOSTDIR [--dir PATH]   a host tree with owners, modes, links, devices
//! dbfs-fuse gen-tree IMAGE --seed N [--dir PATH]     cross-check tree + MANIFEST (no mount)
//! dbfs-fuse verify-tree IMAGE [--dir PATH]           check it against MANIFEST (no mount)
//! dbfs-fuse verify-dir DIR                           the same through std::fs (a FUSE mount)
//! dbfs-fuse workload DIR                             tests/crosscheck/workload.txt in DIR
//! ```
//!
//! The last four are the host side of `make test-cross` (see `cross.rs` and tests/crosscheck).
//!
//! `mount` runs in the background unless `-f`: it starts itself again in the foreground in a
//! new process group, waits until the mount is live (or prints why it failed) and returns. The
//! foreground process unmounts cleanly on SIGINT, SIGTERM or SIGHUP (buffered data is committed
//! first); `-o auto_unmount` also makes fusermount3 unmount if the process dies (a small
//! child, `dbfs-fuse hold-until-exit`, keeps fusermount3's socket open until the process has
//! fully exited, so fusermount3 finds the connection gone; see `hold_socket_past_exit`), and
//! on a signal the tool unmounts it itself (fusermount3 leaves a mount whose process still
//! answers). Mount options:
//! `ro`, `allow_other`, `allow_root`, `auto_unmount`, `default_permissions` (dbfs leaves
//! permission checks to the caller: the kernel makes them for every mount other users can
//! reach, or that a user other than root made; for root's own mount, where root passes them,
//! only when asked for, as fuse2fs does, which spares a round trip per change to a
//! directory), `dev`, `suid`, `noatime`, `fsname=`, `sync` and
//! `dirsync` (also make every dbfs commit durable when it returns, one barrier per metadata
//! operation; by default commits are deferred to the next fsync, syncfs, unmount or the 5 s
//! write-back timer, like ext4's journal), `max_read=BYTES` (the kernel's largest read
//! request; default 512 KiB, so that a 1 MiB O_DIRECT read is two requests the worker
//! threads serve at once, `FUSE_ASYNC_DIO`), others passed to the kernel unchanged; and the
//! tool's own:
//! - `nobarrier`: skip the two `fdatasync`s of each kvdb barrier (fsync, syncfs, the timer);
//!   the image is made durable on fsync, syncfs and unmount instead. Safe against the tool
//!   crashing or being killed (every barrier's writes are in the host page cache; commits after
//!   the last barrier are lost, as without `nobarrier`), NOT against a host crash or power loss
//!   between syncs, which may leave a torn commit (fsck finds it). Like ext4's `nobarrier`; off
//!   by default.
//! - `cache_size=SIZE`: the budget of the tool's cache of image pages (tree pages and file
//!   chunks, shared by all readers; `K`/`M`/`G` suffixes, 0 turns it off). Default: 1/8 of
//!   the machine's memory, between 256 MiB and 2 GiB. The cache is dropped whole when full.
//! - `nowriteback_cache`: turn off the kernel's FUSE write-back cache, which is on by default
//!   (read-write mounts): buffered writes collect in the kernel's page cache and reach dbfs
//!   merged (up to 1 MiB a request) at write-back, fsync or close, instead of one request per
//!   write(2). What a writer sees is
//!   the same either way (POSIX); the difference is when data reaches dbfs's own buffers, and
//!   so where a full image's ENOSPC shows: with the cache, at fsync or close (as on NFS)
//!   rather than at write(2).
//! - `nokeep_cache`: drop a file's pages from the kernel's page cache at every open, so every
//!   read after an open reaches dbfs. By default files open with `keep_cache` (as fuse2fs's
//!   `kernel_cache`): the mount is the image's only writer and the kernel updates or drops its
//!   own pages on every change it sends, so they cannot go stale; a file whose write dbfs
//!   refused (ENOSPC at write-back) drops them at its next open.
//! - `nouring`: take every request from `/dev/fuse`. By default, when the kernel offers FUSE
//!   over io_uring (Linux 6.14+, the `fuse` module's `enable_uring` on), requests come from
//!   one queue per CPU, each served by threads pinned to that CPU, so a request and its reply
//!   stay on the caller's core (see `uring/mod.rs`).
//! - `noidle_commits`: answer every request at the ring threads' normal scheduling policy.
//!   By default a caller seen moving between CPUs is answered as `SCHED_IDLE` (all but large
//!   reads), so it wakes on its own CPU instead of moving to an idle one at every request
//!   (see `uring/wake.rs`; needs
//!   `CAP_SYS_NICE` or a permissive `RLIMIT_NICE`, else the option does nothing).
//! - `noclose_errors`: answer FUSE's flush (one request per close(2)) with ENOSYS, so the
//!   kernel sends no more, saving a round trip per close. By default flush is answered, to
//!   report at close a write-back write dbfs refused (ENOSPC when the kernel writes a file's
//!   dirty pages) or a failed background commit of the file's data: the kernel does not always
//!   keep a refused write-back write's error for close(2) by itself (see
//!   `DbFuse::set_close_errors`).
//! - `nodirect_writes`: buffer every write in dbfs's write-back cache. By default a write of
//!   at least 128 KiB of whole chunks (`dbfs::DIRECT_WRITE_MIN`) is written to the image
//!   straight from the FUSE request and inserted into the store by the file's next commit: 1
//!   MiB direct writes ran 1.25-1.6x faster (with a transaction per write),
//!   but random 1 MiB reads of files written that way ran 0.70-0.73x as fast
//!   (docs/BENCHMARKS.md, "Unlink and 1 MiB writes through FUSE").
//!
//! Errors are one line on stderr and a non-zero exit status; a corrupt image is refused with the
//! reason, never a panic.
#![deny(unsafe_op_in_unsafe_fn)]

mod adapter;
mod answer;
mod bench;
mod cli;
mod cross;
mod daemon;
mod dev;
mod fsck;
mod holder;
mod image;
mod import;
mod mount_opts;
mod offline;
mod signals;
mod split_read;
mod uring;

use std::process::ExitCode;

use clap::Parser;

use cli::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let r = match cli.command {
        Command::Mkfs {
            image,
            size,
            chunk_size,
            page_size,
            label,
        } => {
            let chunk = u32::try_from(chunk_size).map_err(|_| "chunk size too large".to_string());
            chunk.and_then(|c| image::mkfs(&image, size, c, page_size as usize, &label))
        }
        Command::Mount {
            image,
            mountpoint,
            options,
            foreground,
            threads,
            log,
        } => {
            if foreground {
                daemon::mount_foreground(&image, &mountpoint, &options, threads)
            } else {
                daemon::mount_background(&mountpoint, log.as_deref())
            }
        }
        Command::Fsck { image, verbose } => return offline::fsck_command(&image, verbose),
        Command::Ls { image, path } => offline::ls(&image, path.as_deref().unwrap_or("/")),
        Command::Cat { image, path } => offline::cat(&image, &path),
        Command::Put {
            image,
            hostfile,
            path,
        } => offline::put(&image, &hostfile, &path),
        Command::Import {
            image,
            hostdir,
            dir,
        } => import::import(&image, &hostdir, &dir).map(|s| {
            println!(
                "imported {} into {}:{dir}: {} directories, {} files ({} bytes), {} symlinks, \
                 {} hard links, {} devices/FIFOs/sockets, {} extended attributes",
                hostdir.display(),
                image.display(),
                s.dirs,
                s.files,
                s.bytes,
                s.symlinks,
                s.hard_links,
                s.special,
                s.xattrs
            )
        }),
        Command::Createdel { dir, n, fs } => bench::createdel(&dir, n, &fs),
        Command::GenTree { image, seed, dir } => cross::gen_tree(&image, seed, &dir),
        Command::VerifyTree { image, dir } => cross::verify_tree(&image, &dir),
        Command::VerifyDir { dir } => cross::verify_dir(&dir),
        Command::Workload { dir } => cross::workload(&dir),
        Command::HoldUntilExit { pid, mnt } => {
            holder::hold_until_exit(pid, mnt.as_deref());
            Ok(())
        }
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("dbfs-fuse: {msg}");
            ExitCode::FAILURE
        }
    }
}
