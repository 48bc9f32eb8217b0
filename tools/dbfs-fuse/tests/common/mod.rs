//! A dbfs image mounted through the real `dbfs-fuse` binary, for the integration tests.
//!
//! [`Mounted`] unmounts on drop (also while a failing test unwinds): `fusermount3 -u`, then a
//! lazy detach and a kill if the mount process does not exit. A watchdog detaches the mount and
//! kills the process when a test exceeds its time limit, so a hung request turns into failing
//! system calls (ENOTCONN) instead of a hung CI job.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_dbfs-fuse");

/// True if this machine can mount FUSE file systems; prints why not otherwise.
pub fn fuse_available() -> bool {
    let ok = Path::new("/dev/fuse").exists()
        && Command::new("fusermount3")
            .arg("-V")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok();
    if !ok {
        eprintln!("note: /dev/fuse or fusermount3 missing: FUSE mount test skipped");
    }
    ok
}

pub fn mkfs(image: &Path, size: &str) {
    let out = Command::new(BIN)
        .arg("mkfs")
        .arg(image)
        .args(["--size", size])
        .output()
        .expect("run mkfs");
    assert!(
        out.status.success(),
        "mkfs: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A temporary directory holding a fresh image of `size` (`dbfs.img`) and the path of a mount
/// point in it (`mnt`, not created); the directory goes when the first value is dropped.
pub fn fresh_image(name: &str, size: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::Builder::new()
        .prefix(&format!("dbfs-fuse-{name}-"))
        .tempdir()
        .unwrap();
    let image = tmp.path().join("dbfs.img");
    mkfs(&image, size);
    let mnt = tmp.path().join("mnt");
    (tmp, image, mnt)
}

/// close(2) the file and return its answer (dropping a `File` ignores it).
pub fn close_checked(f: std::fs::File) -> std::io::Result<()> {
    use std::os::fd::IntoRawFd;
    let fd = f.into_raw_fd();
    // SAFETY: `fd` is ours (taken from the File) and closed once.
    if unsafe { libc::close(fd) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

pub fn run(cmd: &mut Command) -> std::process::Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"))
}

/// Run a shell command with a time limit; panics with its output if it fails.
pub fn sh(dir: &Path, script: &str, limit_secs: u32) -> String {
    let out = run(Command::new("timeout")
        .args([
            "-k",
            "5",
            &limit_secs.to_string(),
            "bash",
            "-euo",
            "pipefail",
            "-c",
            script,
        ])
        .current_dir(dir));
    assert!(
        out.status.success(),
        "`{script}` failed ({}):\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn mount_count(mnt: &Path) -> usize {
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return 0;
    };
    let want = mnt.to_string_lossy().into_owned();
    info.lines()
        .filter(|l| l.split(' ').nth(4) == Some(want.as_str()))
        .count()
}

fn detach(mnt: &Path) {
    let ok = Command::new("fusermount3")
        .arg("-uz")
        .arg(mnt)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(mnt)
            .stderr(Stdio::null())
            .status();
    }
}

pub struct Mounted {
    pub mnt: PathBuf,
    pub image: PathBuf,
    child: Arc<Mutex<Option<Child>>>,
    done: Arc<AtomicBool>,
}

impl Mounted {
    /// Mount `image` on `mnt` in the foreground process; the whole test must finish within
    /// `limit`.
    pub fn new(image: &Path, mnt: &Path, opts: &str, limit: Duration) -> Mounted {
        std::fs::create_dir_all(mnt).expect("mountpoint");
        let mnt = std::fs::canonicalize(mnt).expect("canonical mountpoint");
        let mut cmd = Command::new(BIN);
        cmd.arg("mount")
            .arg(image)
            .arg(&mnt)
            .arg("-f")
            .stdin(Stdio::null());
        // `DBFS_FUSE_TEST_OPTS` adds options to every mount of the tests (e.g. `uring`, to run
        // the suite over FUSE's io_uring transport); a test's own options come after them, so
        // they win where the two disagree.
        let extra = std::env::var("DBFS_FUSE_TEST_OPTS").unwrap_or_default();
        let opts = [extra.as_str(), opts]
            .iter()
            .filter(|o| !o.is_empty())
            .copied()
            .collect::<Vec<_>>()
            .join(",");
        if !opts.is_empty() {
            cmd.args(["-o", &opts]);
        }
        let mut child = cmd.spawn().expect("start dbfs-fuse mount");
        let start = Instant::now();
        while mount_count(&mnt) == 0 {
            if let Ok(Some(status)) = child.try_wait() {
                panic!("dbfs-fuse mount exited early: {status}");
            }
            if start.elapsed() > Duration::from_secs(15) {
                let _ = child.kill();
                let _ = child.wait();
                panic!("mount did not appear on {}", mnt.display());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let child = Arc::new(Mutex::new(Some(child)));
        let done = Arc::new(AtomicBool::new(false));
        {
            let (child, done, mnt) = (child.clone(), done.clone(), mnt.clone());
            std::thread::spawn(move || {
                let deadline = Instant::now() + limit;
                while Instant::now() < deadline {
                    if done.load(Ordering::Relaxed) {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
                eprintln!(
                    "watchdog: {} still mounted after {limit:?}: detaching and killing",
                    mnt.display()
                );
                detach(&mnt);
                if let Some(c) = child.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
                    let _ = c.kill();
                }
            });
        }
        Mounted {
            mnt,
            image: image.to_path_buf(),
            child,
            done,
        }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.mnt.join(rel)
    }

    pub fn pid(&self) -> u32 {
        self.child
            .lock()
            .unwrap()
            .as_ref()
            .map(|c| c.id())
            .unwrap_or(0)
    }

    /// Unmount with `fusermount3 -u` and wait for the process; returns its exit success.
    pub fn unmount(mut self) -> bool {
        self.finish(false)
    }

    /// Unmount by sending SIGTERM to the mount process (the tool's own clean-unmount path).
    pub fn terminate(mut self) -> bool {
        self.finish(true)
    }

    fn finish(&mut self, by_signal: bool) -> bool {
        let Some(mut child) = self.child.lock().unwrap_or_else(|p| p.into_inner()).take() else {
            return false;
        };
        if by_signal {
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
        } else {
            let mut tries = 0;
            while !Command::new("fusermount3")
                .arg("-u")
                .arg(&self.mnt)
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
            {
                tries += 1;
                if tries > 50 || mount_count(&self.mnt) == 0 {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        let start = Instant::now();
        let status = loop {
            match child.try_wait() {
                Ok(Some(s)) => break Some(s),
                Ok(None) if start.elapsed() < Duration::from_secs(20) => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                _ => break None,
            }
        };
        if mount_count(&self.mnt) > 0 {
            detach(&self.mnt);
        }
        let ok = match status {
            Some(s) => s.success(),
            None => {
                let _ = child.kill();
                let _ = child.wait();
                false
            }
        };
        self.done.store(true, Ordering::Relaxed);
        ok && mount_count(&self.mnt) == 0
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        self.finish(false);
        self.done.store(true, Ordering::Relaxed);
    }
}

/// Deterministic pseudo-random bytes (`fs/xrand`), so a failure reproduces.
pub fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut out = vec![0u8; len];
    xrand::XorShift64::new(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1).fill_bytes(&mut out);
    out
}

/// FNV-1a, enough to compare file contents across a remount.
pub fn checksum(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}
