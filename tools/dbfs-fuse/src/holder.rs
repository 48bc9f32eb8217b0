//! `-o auto_unmount`'s holder: a small child process (`dbfs-fuse hold-until-exit`) keeps a
//! copy of fusermount3's socket open until the daemon has fully exited, so fusermount3 always
//! finds the FUSE connection gone and removes the mount (see [`hold_socket_past_exit`]).

/// The descriptors of this process that are sockets.
pub(crate) fn socket_fds() -> Vec<i32> {
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
/// exited and every descriptor is released. With FUSE over io_uring ([`crate::uring`]) that
/// is not yet the end of the connection: the kernel tears a dead process's rings down in a
/// worker afterwards, and their commands hold `/dev/fuse` until then (fusermount3 then opened
/// a live mount and left it, every time in `background_mount_and_auto_unmount`). So the child
/// then also waits until the mount point fails to open or is no longer a mount (at most 10 s),
/// and the socket closes after the connection is gone. `before`: the sockets that existed before the mount; the new one is fusermount3's.
/// `None` if it cannot be found or the child cannot start (auto_unmount then works as fuser
/// does it, with the race). The signal path kills the child before unmounting.
pub(crate) fn hold_socket_past_exit(
    before: &[i32],
    mnt: &std::path::Path,
) -> Option<std::process::Child> {
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
        .arg("--mnt")
        .arg(mnt)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok();
    drop(dup);
    child
}

/// Wait until process `pid` has exited (all its threads gone), then until its FUSE connection
/// on `mnt` is gone (see [`hold_socket_past_exit`]).
pub(crate) fn hold_until_exit(pid: i32, mnt: Option<&std::path::Path>) {
    wait_exit(pid);
    if let Some(mnt) = mnt {
        wait_connection_gone(mnt, std::time::Duration::from_secs(10));
    }
}

/// Wait until opening `mnt` fails with ENOTCONN (the connection is gone: what fusermount3
/// checks for; ECONNABORTED only means it is going) or `mnt` is no longer a mount point
/// (unmounted), at most `limit`.
fn wait_connection_gone(mnt: &std::path::Path, limit: std::time::Duration) {
    use std::os::unix::fs::MetadataExt;
    let parent_dev = mnt
        .parent()
        .and_then(|p| std::fs::metadata(p).ok())
        .map(|m| m.dev());
    let gone = |e: &std::io::Error| e.raw_os_error() == Some(libc::ENOTCONN);
    let start = std::time::Instant::now();
    while start.elapsed() < limit {
        match std::fs::metadata(mnt) {
            Err(e) if gone(&e) => return,
            Ok(m) if Some(m.dev()) == parent_dev => return,
            _ => {}
        }
        if let Err(e) = std::fs::File::open(mnt) {
            if gone(&e) {
                return;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Wait until process `pid` has exited. Returns at once if it is already gone or cannot be
/// watched.
fn wait_exit(pid: i32) {
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
