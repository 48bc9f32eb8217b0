//! The mount itself: the foreground daemon (FUSE session, worker threads, a signal thread
//! that unmounts on SIGINT / SIGTERM / SIGHUP) and the background start (`mount` without `-f`:
//! the tool starts itself again with `-f` in a new process group and returns once the mount
//! is live). Unmount helpers for a mount the session could not remove.

use std::os::fd::AsFd;
use std::path::Path;
use std::time::{Duration, Instant};

use fuser::{Config, MountOption};
use vfs::FileSystem;

use crate::holder::{hold_socket_past_exit, socket_fds};
use crate::mount_opts::mount_options;
use crate::{adapter, dev, image, signals, uring};

/// glibc's allocator settings for the daemon, made before any thread starts.
///
/// glibc gives each thread that allocates its own heap (an arena), and grows such a heap only
/// by what one allocation lacks, each growth an `mprotect`. The FUSE worker threads fill the
/// daemon's page cache one 4 KiB page per allocation, so a cold read paid an `mprotect` for
/// every page it cached (`strace -c` of the daemon: 8256-8312 `mprotect`s for 8192 cold 4 KiB
/// reads). With one arena the heap grows by `brk`, 4 MiB at a time (8 `brk`s for the same
/// reads), and is trimmed only when 64 MiB lie free at its top. The worker threads then share
/// the arena's lock, held only inside `malloc` and `free`. Measured in docs/BENCHMARKS.md ("One
/// heap for the daemon", tenth session): 4 KiB reads by 4 jobs cost the daemon about a sixth
/// less CPU; 4 KiB writes and createdel did not move beyond their spread.
fn one_growing_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only sets allocator parameters; it is called before this process
    // starts any thread.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
        libc::mallopt(libc::M_TOP_PAD, 4 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 64 << 20);
    }
}

/// `mount -f`: run the FUSE session on `image` until it is unmounted or a termination
/// signal arrives, then commit and flush the image.
pub(crate) fn mount_foreground(
    image: &Path,
    mountpoint: &Path,
    opts: &[String],
    threads: usize,
) -> Result<(), String> {
    // SAFETY: geteuid has no preconditions.
    let (options, acl, tool) = mount_options(opts, unsafe { libc::geteuid() })?;
    one_growing_heap();
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
    if !tool.direct_writes {
        fs.set_direct_write_min(None);
    }
    let mut adapter = adapter::DbFuse::new(fs.clone(), read_only)
        .map_err(|e| format!("{}: {e}", image.display()))?;
    adapter.set_writeback_cache(tool.writeback_cache);
    adapter.set_keep_cache(tool.keep_cache);
    adapter.set_close_errors(tool.close_errors);
    adapter.set_uring(tool.uring);
    let adapter = std::sync::Arc::new(adapter);
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
    let mut session = fuser::Session::new(dev::DevPath(adapter.clone()), mountpoint, &config)
        .map_err(|e| format!("cannot mount on {}: {e}", mountpoint.display()))?;
    // The handshake is done: if the kernel agreed to FUSE over io_uring, start the rings.
    let rings = if adapter.uring() {
        let per_cpu = threads.div_ceil(uring::cpus()).max(1);
        let dev = session
            .as_fd()
            .try_clone_to_owned()
            .map_err(|e| format!("/dev/fuse: {e}"))?;
        // Twice the largest request: the kernel refuses a buffer smaller than its own idea
        // of the largest (max_write or max_pages pages, whichever is larger).
        let payload = 2 * adapter::MAX_IO as usize;
        match uring::start(
            adapter.clone(),
            dev,
            per_cpu,
            payload,
            acl,
            tool.idle_commits,
        ) {
            Ok(r) => Some(r),
            Err(e) => {
                eprintln!("dbfs-fuse: io_uring threads: {e}; requests go through /dev/fuse");
                None
            }
        }
    } else {
        None
    };
    drop(adapter);
    let holder = if auto_unmount {
        hold_socket_past_exit(&sockets_before, &canonical)
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
    // The kernel ended the rings' entries when the connection closed.
    if let Some(rings) = rings {
        rings.wait(Duration::from_secs(10));
    }
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
pub(crate) fn mount_background(mountpoint: &Path, log: Option<&Path>) -> Result<(), String> {
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
