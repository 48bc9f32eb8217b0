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
//! `ro`, `allow_other`, `allow_root`, `auto_unmount`, `default_permissions` (always on: dbfs
//! leaves permission checks to the caller), `dev`, `suid`, `noatime`, `fsname=`, `sync` and
//! `dirsync` (also make every dbfs commit durable when it returns, one barrier per metadata
//! operation; by default commits are deferred to the next fsync, syncfs, unmount or the 5 s
//! write-back timer, like ext4's journal), others passed to the kernel unchanged; and the
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
//!   write(2). Reads still reach dbfs (files open without keep_cache). What a writer sees is
//!   the same either way (POSIX); the difference is when data reaches dbfs's own buffers, and
//!   so where a full image's ENOSPC shows: with the cache, at fsync or close (as on NFS)
//!   rather than at write(2).
//!
//! Errors are one line on stderr and a non-zero exit status; a corrupt image is refused with the
//! reason, never a panic.
#![deny(unsafe_op_in_unsafe_fn)]

mod adapter;
mod cross;
mod fsck;
mod image;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};
use fuser::{Config, MountOption, SessionACL};
use vfs::{FileSystem, FileType, NewNode, NodeRef, VfsError};

use image::{open_image, parse_size, Fs};

#[derive(Parser)]
#[command(
    name = "dbfs-fuse",
    about = "Format, mount (FUSE), check and edit dbfs images on the host"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
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
        /// auto_unmount, noatime, fsname=NAME, nobarrier (fdatasync the image only on fsync,
        /// syncfs and unmount: faster, but a host crash may tear the last commits),
        /// nowriteback_cache (send every write(2) to dbfs as it happens instead of through the
        /// kernel's write-back cache, which is on by default), cache_size=SIZE (the tool's
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
    /// process PID open until PID has exited. See `hold_socket_past_exit`.
    #[command(hide = true)]
    HoldUntilExit {
        #[arg(long)]
        pid: i32,
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
                mount_foreground(&image, &mountpoint, &options, threads)
            } else {
                mount_background(&mountpoint, log.as_deref())
            }
        }
        Command::Fsck { image, verbose } => return fsck_command(&image, verbose),
        Command::Ls { image, path } => ls(&image, path.as_deref().unwrap_or("/")),
        Command::Cat { image, path } => cat(&image, &path),
        Command::Put {
            image,
            hostfile,
            path,
        } => put(&image, &hostfile, &path),
        Command::Createdel { dir, n, fs } => createdel(&dir, n, &fs),
        Command::GenTree { image, seed, dir } => cross::gen_tree(&image, seed, &dir),
        Command::VerifyTree { image, dir } => cross::verify_tree(&image, &dir),
        Command::VerifyDir { dir } => cross::verify_dir(&dir),
        Command::Workload { dir } => cross::workload(&dir),
        Command::HoldUntilExit { pid } => {
            hold_until_exit(pid);
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

// ---- mount ----

/// The tool's own mount options (not passed to the kernel).
struct ToolOptions {
    /// kvdb barriers `fdatasync` the image (`nobarrier` turns them off).
    barriers: bool,
    /// The kernel's write-back cache (`nowriteback_cache` turns it off).
    writeback_cache: bool,
    /// The image page cache's budget in bytes (`cache_size=`).
    cache_bytes: usize,
}

/// Mount options as fuser understands them; `default_permissions` is always added. The tool's
/// own options (`nobarrier`, `nowriteback_cache`, `cache_size=`) are taken out and returned.
fn mount_options(opts: &[String]) -> Result<(Vec<MountOption>, SessionACL, ToolOptions), String> {
    let mut tool = ToolOptions {
        barriers: true,
        writeback_cache: true,
        cache_bytes: image::default_mount_cache_bytes(),
    };
    let mut out = vec![
        MountOption::FSName("dbfs".into()),
        MountOption::Subtype("dbfs".into()),
        MountOption::DefaultPermissions,
    ];
    let mut acl = SessionACL::Owner;
    for o in opts
        .iter()
        .flat_map(|s| s.split(','))
        .filter(|s| !s.is_empty())
    {
        let m = match o {
            "allow_other" => {
                acl = SessionACL::All;
                continue;
            }
            "allow_root" => {
                acl = SessionACL::RootAndOwner;
                continue;
            }
            "auto_unmount" => MountOption::AutoUnmount,
            "default_permissions" => continue,
            "nobarrier" => {
                tool.barriers = false;
                continue;
            }
            "barrier" => {
                tool.barriers = true;
                continue;
            }
            "nowriteback_cache" => {
                tool.writeback_cache = false;
                continue;
            }
            "writeback_cache" => {
                tool.writeback_cache = true;
                continue;
            }
            x if x.starts_with("cache_size=") => {
                let v = &x["cache_size=".len()..];
                tool.cache_bytes = parse_size(v)
                    .ok()
                    .and_then(|b| usize::try_from(b).ok())
                    .ok_or_else(|| format!("-o cache_size={v}: not a size (e.g. 512M, 2G, 0)"))?;
                continue;
            }
            "ro" => MountOption::RO,
            "rw" => MountOption::RW,
            "dev" => MountOption::Dev,
            "nodev" => MountOption::NoDev,
            "suid" => MountOption::Suid,
            "nosuid" => MountOption::NoSuid,
            "exec" => MountOption::Exec,
            "noexec" => MountOption::NoExec,
            "atime" => MountOption::Atime,
            "noatime" => MountOption::NoAtime,
            "sync" => MountOption::Sync,
            "async" => MountOption::Async,
            "dirsync" => MountOption::DirSync,
            x if x.starts_with("fsname=") => MountOption::FSName(x["fsname=".len()..].into()),
            x if x.starts_with("subtype=") => MountOption::Subtype(x["subtype=".len()..].into()),
            x => MountOption::CUSTOM(x.into()),
        };
        if let MountOption::FSName(_) | MountOption::Subtype(_) = m {
            out.retain(|o| std::mem::discriminant(o) != std::mem::discriminant(&m));
        }
        out.push(m);
    }
    if out.contains(&MountOption::AutoUnmount) && acl == SessionACL::Owner {
        // fusermount3 implements auto_unmount only for mounts other users may see.
        acl = SessionACL::RootAndOwner;
    }
    Ok((out, acl, tool))
}

fn mount_foreground(
    image: &Path,
    mountpoint: &Path,
    opts: &[String],
    threads: usize,
) -> Result<(), String> {
    let (options, acl, tool) = mount_options(opts)?;
    let read_only = options.contains(&MountOption::RO);
    // Block the termination signals before any thread exists, so every thread inherits the mask
    // and only the waiter below receives them.
    let signals = signals::block_termination().map_err(|e| format!("signal mask: {e}"))?;
    let fs = image::open_image_with(image, read_only, tool.barriers, Some(tool.cache_bytes))?;
    // `sync` / `dirsync`: every dbfs commit durable when it returns (else deferred to fsync,
    // syncfs, the 5 s write-back timer and unmount).
    if options.contains(&MountOption::Sync) || options.contains(&MountOption::DirSync) {
        fs.set_sync_metadata(true);
    }
    let mut adapter = adapter::DbFuse::new(fs.clone(), read_only)
        .map_err(|e| format!("{}: {e}", image.display()))?;
    adapter.set_writeback_cache(tool.writeback_cache);
    let mut config = Config::default();
    config.mount_options = options;
    config.acl = acl;
    config.n_threads = Some(threads.max(1));
    config.clone_fd = threads > 1;
    let auto_unmount = config.mount_options.contains(&MountOption::AutoUnmount);
    let sockets_before = if auto_unmount {
        socket_fds()
    } else {
        Vec::new()
    };
    // mountinfo names mount points by absolute path.
    let canonical = std::fs::canonicalize(mountpoint).unwrap_or_else(|_| mountpoint.to_path_buf());
    let mounts_before = mounted_at(&canonical);
    let mut session = fuser::Session::new(adapter, mountpoint, &config)
        .map_err(|e| format!("cannot mount on {}: {e}", mountpoint.display()))?;
    let holder = if auto_unmount {
        hold_socket_past_exit(&sockets_before)
    } else {
        None
    };
    let mut unmounter = session.unmount_callable();
    let mnt = canonical;
    std::thread::Builder::new()
        .name("dbfs-signals".into())
        .spawn(move || {
            if let Some(sig) = signals::wait(&signals) {
                eprintln!("dbfs-fuse: signal {sig}: unmounting {}", mnt.display());
                // fuser unmounts an auto_unmount mount by closing its end of fusermount3's
                // socket: the holder's copy must go first.
                if let Some(mut h) = holder {
                    let _ = h.kill();
                    let _ = h.wait();
                }
                if let Err(e) = unmounter.unmount() {
                    eprintln!("dbfs-fuse: unmount failed ({e}); detaching lazily");
                    lazy_unmount(&mnt);
                } else if auto_unmount && mounted_at(&mnt) > mounts_before {
                    // fusermount3 (3.14) does not unmount on that close while this process
                    // still answers: it checks the mount point, finds it alive and leaves it.
                    // Unmount it here, so the session ends.
                    unmount_path(&mnt);
                }
            }
        })
        .map_err(|e| format!("thread: {e}"))?;
    let r = session.run().map_err(|e| format!("session: {e}"));
    // The session dropped the adapter (its `destroy` committed buffered data); sync once more
    // to see any error, then the last reference drops and the image is closed.
    if !read_only {
        fs.sync().map_err(|e| format!("final sync: {e}"))?;
        fs.pager()
            .sync_file()
            .map_err(|e| format!("final image flush: {e}"))?;
    }
    drop(fs);
    r
}

/// The descriptors of this process that are sockets.
fn socket_fds() -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else {
        return Vec::new();
    };
    dir.filter_map(|e| {
        let e = e.ok()?;
        let fd: i32 = e.file_name().to_str()?.parse().ok()?;
        let target = std::fs::read_link(e.path()).ok()?;
        target
            .to_str()
            .is_some_and(|t| t.starts_with("socket:"))
            .then_some(fd)
    })
    .collect()
}

/// With `-o auto_unmount`, fusermount3 stays behind and unmounts when this process's end of
/// its socket closes, after checking the mount point: only if opening it fails with ENOTCONN
/// (the FUSE connection is gone). When this process is killed, its threads drop their
/// descriptors as each leaves the kernel, and the socket can close while a worker thread still
/// holds `/dev/fuse`: fusermount3's open then reaches a live connection, fails with
/// ECONNABORTED as the connection goes down, and the dead mount stays (fuse3 3.14: `strace`
/// of fusermount3 shows it, for about one mount in four killed with writes in flight).
///
/// So a copy of the socket is held by a small child process (`dbfs-fuse hold-until-exit`),
/// which waits on a pidfd of this process: that becomes readable only once every thread has
/// exited and every descriptor is released, so the socket closes after the connection is
/// gone. `before`: the sockets that existed before the mount; the new one is fusermount3's.
/// `None` if it cannot be found or the child cannot start (auto_unmount then works as fuser
/// does it, with the race). The signal path kills the child before unmounting.
fn hold_socket_past_exit(before: &[i32]) -> Option<std::process::Child> {
    use std::os::fd::{FromRawFd, OwnedFd};
    let new: Vec<i32> = socket_fds()
        .into_iter()
        .filter(|fd| !before.contains(fd))
        .collect();
    let [fd] = new[..] else {
        return None;
    };
    // An inheritable copy (every other descriptor of ours is close-on-exec), for the child only.
    // SAFETY: F_DUPFD creates a new descriptor for the open socket `fd`.
    let dup = unsafe { libc::fcntl(fd, libc::F_DUPFD, 3) };
    if dup < 0 {
        return None;
    }
    // SAFETY: `dup` is a fresh descriptor nothing else owns; it is closed when this drops,
    // after the child has inherited it.
    let dup = unsafe { OwnedFd::from_raw_fd(dup) };
    let exe = std::env::current_exe().ok()?;
    let child = std::process::Command::new(exe)
        .args(["hold-until-exit", "--pid"])
        .arg(std::process::id().to_string())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok();
    drop(dup);
    child
}

/// Wait until process `pid` has exited (all its threads gone). Returns at once if it is
/// already gone or cannot be watched.
fn hold_until_exit(pid: i32) {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as i32;
    if pidfd < 0 {
        return;
    }
    let mut p = libc::pollfd {
        fd: pidfd,
        events: libc::POLLIN,
        revents: 0,
    };
    loop {
        // SAFETY: `p` is one valid pollfd.
        let r = unsafe { libc::poll(&mut p, 1, -1) };
        if r > 0 || (r < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR)) {
            return;
        }
    }
}

/// Unmount `mnt` (ours, found still mounted), lazily if it is busy.
fn unmount_path(mnt: &Path) {
    let ok = std::process::Command::new("fusermount3")
        .arg("-u")
        .arg(mnt)
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("dbfs-fuse: {} is busy; detaching lazily", mnt.display());
        lazy_unmount(mnt);
    }
}

/// Detach a mount that a plain unmount could not remove (busy).
fn lazy_unmount(mnt: &Path) {
    let ok = std::process::Command::new("fusermount3")
        .arg("-uz")
        .arg(mnt)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(mnt)
            .status();
    }
}

/// Start `dbfs-fuse mount ... -f` as a detached child and wait until its mount is live.
fn mount_background(mountpoint: &Path, log: Option<&Path>) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| format!("current executable: {e}"))?;
    let mnt =
        std::fs::canonicalize(mountpoint).map_err(|e| format!("{}: {e}", mountpoint.display()))?;
    let (log_path, temporary) = match log {
        Some(p) => (p.to_path_buf(), false),
        None => (
            std::env::temp_dir().join(format!("dbfs-fuse-{}.log", std::process::id())),
            true,
        ),
    };
    let log_file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .map_err(|e| format!("{}: {e}", log_path.display()))?;
    let log_err = log_file
        .try_clone()
        .map_err(|e| format!("{}: {e}", log_path.display()))?;
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    args.push("-f".into());
    let before = mounted_at(&mnt);
    let mut child = {
        use std::os::unix::process::CommandExt;
        std::process::Command::new(exe)
            .args(&args)
            .stdin(std::process::Stdio::null())
            .stdout(log_file)
            .stderr(log_err)
            .process_group(0)
            .spawn()
            .map_err(|e| format!("cannot start the mount process: {e}"))?
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if mounted_at(&mnt) > before {
            if temporary {
                let _ = std::fs::remove_file(&log_path);
            }
            println!("{}", child.id());
            return Ok(());
        }
        if let Ok(Some(status)) = child.try_wait() {
            let msg = std::fs::read_to_string(&log_path).unwrap_or_default();
            if temporary {
                let _ = std::fs::remove_file(&log_path);
            }
            let msg = msg.trim().trim_start_matches("dbfs-fuse: ");
            return Err(if msg.is_empty() {
                format!("mount process exited with {status}")
            } else {
                msg.to_string()
            });
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            return Err(format!("{} did not appear within 20 s", mnt.display()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// How many mounts sit on `mnt` (from /proc/self/mountinfo).
fn mounted_at(mnt: &Path) -> usize {
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return 0;
    };
    let want = mnt
        .to_string_lossy()
        .replace('\\', "\\134")
        .replace(' ', "\\040")
        .replace('\t', "\\011")
        .replace('\n', "\\012");
    info.lines()
        .filter(|l| l.split(' ').nth(4) == Some(want.as_str()))
        .count()
}

mod signals {
    //! Termination signals for the foreground mount: blocked everywhere, taken by one thread
    //! with `sigwait`.

    pub struct Set(libc::sigset_t);

    pub fn block_termination() -> std::io::Result<Set> {
        // SAFETY: sigemptyset/sigaddset write only into the local set; pthread_sigmask reads it
        // and changes this thread's mask (inherited by threads created after this call).
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                libc::sigaddset(&mut set, s);
            }
            let r = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            if r != 0 {
                return Err(std::io::Error::from_raw_os_error(r));
            }
            Ok(Set(set))
        }
    }

    /// Wait for one of the blocked signals; `None` if waiting failed.
    pub fn wait(set: &Set) -> Option<i32> {
        let mut sig: libc::c_int = 0;
        // SAFETY: `set` is an initialised sigset_t and `sig` a valid out-pointer.
        let r = unsafe { libc::sigwait(&set.0, &mut sig) };
        (r == 0).then_some(sig)
    }
}

// ---- fsck ----

fn fsck_command(image: &Path, verbose: bool) -> ExitCode {
    match fsck::check(image, verbose) {
        Err(msg) => {
            eprintln!("dbfs-fuse fsck: {msg}");
            ExitCode::from(2)
        }
        Ok(r) => {
            for p in &r.problems {
                println!("problem: {p}");
            }
            println!(
                "{}: {} directories, {} files ({} bytes), {} other nodes, {} store records: {}",
                image.display(),
                r.dirs,
                r.files,
                r.bytes,
                r.others,
                r.records,
                if r.problems.is_empty() {
                    "clean".to_string()
                } else {
                    format!("{} problems", r.problems.len())
                }
            );
            if r.problems.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
    }
}

// ---- ls / cat / put ----

/// The node at `path` (absolute or relative to the root; symlinks are not followed).
fn resolve(fs: &Fs, path: &str) -> Result<NodeRef, String> {
    let mut node = fs.root().map_err(|e| format!("root: {e}"))?;
    let mut stack: Vec<NodeRef> = Vec::new();
    for comp in path.split('/').filter(|c| !c.is_empty() && *c != ".") {
        if comp == ".." {
            if let Some(up) = stack.pop() {
                node = up;
            }
            continue;
        }
        let next = node.lookup(comp).map_err(|e| format!("{path}: {e}"))?;
        stack.push(std::mem::replace(&mut node, next));
    }
    Ok(node)
}

fn type_char(t: FileType) -> char {
    match t {
        FileType::Regular => '-',
        FileType::Directory => 'd',
        FileType::Symlink => 'l',
        FileType::CharDevice => 'c',
        FileType::BlockDevice => 'b',
        FileType::Fifo => 'p',
        FileType::Socket => 's',
    }
}

fn ls(image: &Path, path: &str) -> Result<(), String> {
    let fs = open_image(image, true)?;
    let dir = resolve(&fs, path)?;
    let mut names = Vec::new();
    dir.readdir(0, &mut |e| {
        names.push(e.name.to_string());
        true
    })
    .map_err(|e| format!("{path}: {e}"))?;
    let mut out = std::io::stdout().lock();
    for name in names.into_iter().filter(|n| n != "." && n != "..") {
        let node = dir.lookup(&name).map_err(|e| format!("{name}: {e}"))?;
        let m = node.getattr().map_err(|e| format!("{name}: {e}"))?;
        let target = if m.ftype == FileType::Symlink {
            node.readlink()
                .map(|t| format!(" -> {t}"))
                .unwrap_or_default()
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "{}{:04o} {:>3} {:>5} {:>5} {:>12} {}{}",
            type_char(m.ftype),
            m.perm,
            m.nlink,
            m.uid,
            m.gid,
            m.size,
            name,
            target
        );
    }
    Ok(())
}

fn cat(image: &Path, path: &str) -> Result<(), String> {
    let fs = open_image(image, true)?;
    let node = resolve(&fs, path)?;
    let mut buf = vec![0u8; 1 << 20];
    let mut off = 0u64;
    let mut out = std::io::stdout().lock();
    loop {
        let n = node
            .read_at(off, &mut buf)
            .map_err(|e| format!("{path}: {e}"))?;
        if n == 0 {
            break;
        }
        out.write_all(&buf[..n])
            .map_err(|e| format!("stdout: {e}"))?;
        off += n as u64;
    }
    out.flush().map_err(|e| format!("stdout: {e}"))
}

fn put(image: &Path, hostfile: &Path, path: &str) -> Result<(), String> {
    let fs = open_image(image, false)?;
    let (parent, name) = match path.trim_end_matches('/').rsplit_once('/') {
        Some((p, n)) => (p, n),
        None => ("", path),
    };
    let dir = resolve(&fs, parent)?;
    let mut input: Box<dyn Read> = if hostfile == Path::new("-") {
        Box::new(std::io::stdin().lock())
    } else {
        Box::new(std::fs::File::open(hostfile).map_err(|e| format!("{}: {e}", hostfile.display()))?)
    };
    let node = match dir.lookup(name) {
        Ok(n) => {
            n.truncate(0).map_err(|e| format!("{path}: {e}"))?;
            n
        }
        Err(VfsError::NotFound) => dir
            .create(
                name,
                &NewNode {
                    uid: current_uid(),
                    gid: current_gid(),
                    ..NewNode::new(FileType::Regular, 0o644)
                },
            )
            .map_err(|e| format!("{path}: {e}"))?,
        Err(e) => return Err(format!("{path}: {e}")),
    };
    node.open().map_err(|e| format!("{path}: {e}"))?;
    let mut buf = vec![0u8; 1 << 20];
    let mut off = 0u64;
    let r = loop {
        let n = match input.read(&mut buf) {
            Ok(0) => break Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => break Err(format!("{}: {e}", hostfile.display())),
        };
        if let Err(e) = node.write_at(off, &buf[..n]) {
            break Err(format!("{path}: {e}"));
        }
        off += n as u64;
    };
    let released = node.release().map_err(|e| format!("{path}: {e}"));
    let synced = fs.sync().map_err(|e| format!("sync: {e}"));
    r.and(released).and(synced)
}

fn current_uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}

fn current_gid() -> u32 {
    // SAFETY: getgid has no preconditions and cannot fail.
    unsafe { libc::getgid() }
}

// ---- benchmark helper ----

fn createdel(dir: &Path, n: u32, label: &str) -> Result<(), String> {
    let mut order: Vec<u32> = (0..n).collect();
    // Fisher-Yates with a fixed xorshift seed: every run and every file system sees one order.
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    for i in (1..order.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        order.swap(i, (x % (i as u64 + 1)) as usize);
    }
    let name = |i: u32| dir.join(format!("x{i:06}"));
    let start = Instant::now();
    for &i in &order {
        std::fs::write(name(i), b"x").map_err(|e| format!("create x{i:06}: {e}"))?;
    }
    let created = start.elapsed();
    for i in 0..n {
        std::fs::remove_file(name(i)).map_err(|e| format!("unlink x{i:06}: {e}"))?;
    }
    let total = start.elapsed();
    println!(
        "RESULT bench=createdel fs={label} n={n} create_secs={:.3} delete_secs={:.3} secs={:.3} ops_per_sec={:.0}",
        created.as_secs_f64(),
        (total - created).as_secs_f64(),
        total.as_secs_f64(),
        f64::from(2 * n) / total.as_secs_f64()
    );
    Ok(())
}
