//! The image file as a kvdb pager, the host clock, and opening/formatting an image.
//!
//! [`ImagePager`] is kvdb's own [`FilePager`] with two additions the tool needs: a capacity (the
//! image file's length when it was opened, so `statfs` and `ENOSPC` follow `mkfs --size`) and a
//! read-only mode (every write is refused), which `fsck`, `ls` and `cat` use so that looking at
//! an image never changes it (mount frees crash orphans only when it can write). An open image
//! is locked against other processes (see `lock_image`).

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use dbfs::{DbFs, MkfsOptions, MountError};
use kvdb::{FilePager, Pager};
use vfs::{Clock, Timestamp};

/// Bytes of tree pages the image's pager keeps in memory between barriers before it writes
/// them out anyway (`FilePager::with_deferred_writes`). dbfs commits an unlink, a create or a
/// small write without a barrier; their pages then reach the image in a few large `pwrite`s
/// at the next barrier instead of one or more per commit.
pub const DEFER_BYTES: usize = 16 << 20;

/// A dbfs image file.
pub struct ImagePager {
    file: FilePager,
    capacity: u64,
    read_only: bool,
    /// When false (`-o nobarrier`), kvdb's commit barriers are skipped and the file is made
    /// durable only by [`ImagePager::sync_file`] (fsync, syncfs, unmount).
    barriers: bool,
    /// Writes that returned, counted after each one: a `fdatasync` begun after reading this
    /// count covers at least that many writes.
    written: AtomicU64,
    /// `written` as read just before the last `fdatasync` that succeeded: while the two are
    /// equal the file holds nothing a flush would make durable, and [`ImagePager::sync_file`]
    /// skips it.
    synced: AtomicU64,
    /// See [`ImagePager::flushes`].
    flushes: AtomicU64,
}

/// How long opening an image waits for another process to let go of it.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Two processes writing one image would corrupt it (each commits from its own idea of the
/// free pages): a writer takes an exclusive `flock` on the image, a reader (fsck, ls, cat,
/// a read-only mount) a shared one, both held until the file is closed. A busy image is
/// waited for up to [`LOCK_WAIT`] (a process just killed may still be leaving the kernel),
/// then refused. File systems without `flock` are used unlocked.
fn lock_image(file: &std::fs::File, shared: bool) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let op = if shared { libc::LOCK_SH } else { libc::LOCK_EX } | libc::LOCK_NB;
    let start = std::time::Instant::now();
    let mut said = false;
    loop {
        // SAFETY: flock on a descriptor this function borrows; no memory is passed.
        if unsafe { libc::flock(file.as_raw_fd(), op) } == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EWOULDBLOCK) => {}
            Some(libc::ENOLCK) | Some(libc::EOPNOTSUPP) | Some(libc::EINVAL) => return Ok(()),
            _ => return Err(e),
        }
        if start.elapsed() >= LOCK_WAIT {
            return Err(std::io::Error::new(
                std::io::ErrorKind::WouldBlock,
                "in use by another process (mounted, or being checked or written)",
            ));
        }
        if !said && start.elapsed() >= std::time::Duration::from_secs(1) {
            eprintln!("dbfs-fuse: waiting for another process to release the image");
            said = true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

impl ImagePager {
    /// `Io` on a read-only image; `NoSpace` if a write would go past the image's capacity.
    fn may_write(&self, writes: &[(u64, &[u8])]) -> kvdb::Result<()> {
        if self.read_only {
            return Err(kvdb::Error::Io);
        }
        if writes
            .iter()
            .any(|(off, b)| off.saturating_add(b.len() as u64) > self.capacity)
        {
            return Err(kvdb::Error::NoSpace);
        }
        Ok(())
    }

    /// Open `path`. A writable image may grow up to its current length (or without limit if
    /// the file is empty).
    pub fn open(path: &Path, read_only: bool) -> std::io::Result<ImagePager> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(!read_only)
            .open(path)?;
        lock_image(&file, read_only)?;
        let len = file.metadata()?.len();
        Ok(ImagePager {
            file: FilePager::from_file(file)?.with_deferred_writes(DEFER_BYTES),
            capacity: if len == 0 { u64::MAX } else { len },
            read_only,
            barriers: true,
            written: AtomicU64::new(0),
            synced: AtomicU64::new(0),
            flushes: AtomicU64::new(0),
        })
    }

    /// Skip kvdb's per-commit durability barriers (see `-o nobarrier` in main.rs).
    pub fn without_barriers(mut self) -> Self {
        self.barriers = false;
        self
    }

    /// Set the byte budget of the page cache (`kvdb::FilePager`'s; 0: no cache).
    pub fn with_cache_budget(mut self, bytes: usize) -> Self {
        self.file = self.file.with_cache_budget(bytes);
        self
    }

    /// Make every write so far durable, whatever the barrier mode. No flush when nothing was
    /// written since the last one (a kvdb barrier ends with one).
    pub fn sync_file(&self) -> kvdb::Result<()> {
        if self.read_only {
            return Ok(());
        }
        let written = self.written.load(Ordering::SeqCst);
        if written == self.synced.load(Ordering::SeqCst) {
            return Ok(());
        }
        self.fdatasync(written)
    }

    /// What FUSE's `fsync` and `fsyncdir` add to dbfs's own fsync. With barriers, nothing:
    /// dbfs's fsync ended with a kvdb barrier (whose last step is an `fdatasync` after the
    /// meta page) or found every commit durable already, and writes made since belong to
    /// later operations. Without barriers, the `fdatasync` that fsync promises.
    pub fn sync_after_fsync(&self) -> kvdb::Result<()> {
        if self.barriers {
            return Ok(());
        }
        self.sync_file()
    }

    /// `FilePager::sync` (deferred writes out, then `fdatasync`), recording that the first
    /// `written` writes are durable.
    fn fdatasync(&self, written: u64) -> kvdb::Result<()> {
        self.file.sync()?;
        self.flushes.fetch_add(1, Ordering::SeqCst);
        self.synced.fetch_max(written, Ordering::SeqCst);
        Ok(())
    }

    /// `fdatasync` calls this pager made that succeeded (a flush per fsync that comes back
    /// shows here).
    #[cfg(test)]
    pub fn flushes(&self) -> u64 {
        self.flushes.load(Ordering::SeqCst)
    }
}

impl Pager for ImagePager {
    type Page<'a> = <FilePager as Pager>::Page<'a>;

    fn read(&self, offset: u64, len: usize) -> kvdb::Result<Self::Page<'_>> {
        self.file.read(offset, len)
    }

    fn read_into(&self, offset: u64, dst: &mut [u8]) -> kvdb::Result<()> {
        self.file.read_into(offset, dst)
    }

    fn direct_reads(&self) -> bool {
        self.file.direct_reads()
    }

    fn write(&self, writes: &[(u64, &[u8])]) -> kvdb::Result<()> {
        self.may_write(writes)?;
        // Counted even when it fails: part of it may have reached the file.
        let r = self.file.write(writes);
        self.written.fetch_add(1, Ordering::SeqCst);
        r
    }

    fn write_direct(&self, writes: &[(u64, &[u8])]) -> kvdb::Result<()> {
        self.may_write(writes)?;
        let r = self.file.write_direct(writes);
        self.written.fetch_add(1, Ordering::SeqCst);
        r
    }

    /// Yes: dbfs then writes a write's whole chunks (at least `dbfs::DIRECT_WRITE_MIN` bytes)
    /// to the image straight from the FUSE request's buffer (placed, inserted by the file's
    /// next commit), instead of copying them into the write-back cache and later into a tree
    /// page. Measured on 1 MiB
    /// `--direct=1` fio writes (docs/BENCHMARKS.md, "Unlink and 1 MiB writes through FUSE"):
    /// about half the daemon's CPU per byte on random rewrites.
    fn direct_writes(&self) -> bool {
        true
    }

    fn sync(&self) -> kvdb::Result<()> {
        if self.read_only {
            return Ok(());
        }
        if !self.barriers {
            // No fdatasync, but the deferred pages reach the file here: the file keeps
            // kvdb's order (pages before the meta page that points at them), so a killed
            // daemon leaves a consistent image, as it did before writes were deferred.
            return self.file.flush();
        }
        self.fdatasync(self.written.load(Ordering::SeqCst))
    }

    fn len(&self) -> u64 {
        self.file.len()
    }

    fn capacity(&self) -> u64 {
        self.capacity
    }
}

/// The host's real-time clock.
pub struct HostClock;

impl Clock for HostClock {
    fn now(&self) -> Timestamp {
        system_to_timestamp(SystemTime::now())
    }
}

pub fn system_to_timestamp(t: SystemTime) -> Timestamp {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => Timestamp {
            sec: d.as_secs() as i64,
            nsec: d.subsec_nanos(),
        },
        Err(e) => {
            let d = e.duration();
            if d.subsec_nanos() == 0 {
                Timestamp {
                    sec: -(d.as_secs() as i64),
                    nsec: 0,
                }
            } else {
                Timestamp {
                    sec: -(d.as_secs() as i64) - 1,
                    nsec: 1_000_000_000 - d.subsec_nanos(),
                }
            }
        }
    }
}

/// A timestamp as `SystemTime`; one a corrupt image puts out of `SystemTime`'s range reads as
/// the epoch instead of panicking.
pub fn timestamp_to_system(t: Timestamp) -> SystemTime {
    let nsec = std::time::Duration::from_nanos(u64::from(t.nsec.min(999_999_999)));
    let base = if t.sec >= 0 {
        UNIX_EPOCH.checked_add(std::time::Duration::from_secs(t.sec as u64))
    } else {
        UNIX_EPOCH.checked_sub(std::time::Duration::from_secs(t.sec.unsigned_abs()))
    };
    base.and_then(|b| b.checked_add(nsec)).unwrap_or(UNIX_EPOCH)
}

/// A mounted image.
pub type Fs = DbFs<ImagePager>;

/// Why an image could not be opened: the message a user sees.
pub fn open_image(path: &Path, read_only: bool) -> Result<Arc<Fs>, String> {
    open_image_with(path, read_only, true, None)
}

/// [`open_image`], choosing whether commits are durability barriers and the page cache's
/// budget in bytes (`None`: kvdb's default, 256 MiB).
pub fn open_image_with(
    path: &Path,
    read_only: bool,
    barriers: bool,
    cache_bytes: Option<usize>,
) -> Result<Arc<Fs>, String> {
    let pager =
        ImagePager::open(path, read_only).map_err(|e| format!("{}: {e}", path.display()))?;
    let pager = match cache_bytes {
        Some(b) => pager.with_cache_budget(b),
        None => pager,
    };
    let pager = if barriers {
        pager
    } else {
        pager.without_barriers()
    };
    let capacity = pager.capacity();
    let fs = DbFs::mount_checked(pager, Arc::new(HostClock))
        .map_err(|e: MountError| format!("{}: {e}", path.display()))?;
    // Written pages sit in the host page cache, so a barrier need not come every 16 MiB (the
    // kernel's bound, where they are dirty frames); 4 KiB random rewrites paid two fdatasyncs
    // per 16 MiB. The image may grow by the bound before a barrier frees what it holds.
    fs.set_barrier_bound(
        HOST_BARRIER_BOUND
            .min(capacity / 8)
            .max(kvdb::DEFAULT_BARRIER_BOUND_BYTES),
    );
    Ok(fs)
}

/// The page cache budget of a mount unless `-o cache_size=` says otherwise: 1/8 of the
/// machine's memory, at least kvdb's default (256 MiB) and at most 2 GiB. kvdb drops its
/// whole cache when the budget is reached, so a budget below the set of pages a workload
/// keeps reading (e.g. four 256 MiB files read at random) turns most reads into `pread`s
/// of the image again.
pub fn default_mount_cache_bytes() -> usize {
    const MIN: u64 = 256 << 20; // kvdb's default budget (`FilePager`)
    const MAX: u64 = 2 << 30;
    // SAFETY: sysconf has no memory-safety preconditions.
    let (pages, page) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    let ram = u64::try_from(pages)
        .ok()
        .zip(u64::try_from(page).ok())
        .map_or(0, |(n, p)| n.saturating_mul(p));
    usize::try_from((ram / 8).clamp(MIN, MAX)).unwrap_or(MIN as usize)
}

/// Bound on store pages written or held between two barriers (see `DbFs::set_barrier_bound`),
/// at most 1/8 of the image.
pub const HOST_BARRIER_BOUND: u64 = 256 << 20;

/// Create (or overwrite) `path` as an empty dbfs of `size` bytes (a sparse file).
pub fn mkfs(
    path: &Path,
    size: u64,
    chunk_size: u32,
    page_size: usize,
    label: &str,
) -> Result<(), String> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    file.set_len(size)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    drop(file);
    let pager = ImagePager::open(path, false).map_err(|e| format!("{}: {e}", path.display()))?;
    let now = HostClock.now();
    let opts = MkfsOptions {
        page_size,
        chunk_size,
        label: label.to_string(),
        uuid: pseudo_uuid(),
        time: now,
        ..MkfsOptions::default()
    };
    let pager = DbFs::mkfs(pager, opts).map_err(|e| format!("{}: mkfs: {e}", path.display()))?;
    pager
        .sync()
        .map_err(|e| format!("{}: sync: {e}", path.display()))?;
    Ok(())
}

/// A version-4-style uuid from the clock and the process id (no randomness crate needed; a
/// uuid only has to tell images apart).
fn pseudo_uuid() -> [u8; 16] {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let seed = now.as_nanos() as u64 ^ (u64::from(std::process::id()) << 32);
    let mut out = [0u8; 16];
    xrand::XorShift64::new(seed).fill_bytes(&mut out);
    out[6] = (out[6] & 0x0f) | 0x40;
    out[8] = (out[8] & 0x3f) | 0x80;
    out
}

/// Parse `1G`, `512M`, `64K` or plain bytes (powers of 1024).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let (num, mult) = match s.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let m = match c.to_ascii_uppercase() {
                'K' => 1u64 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                'T' => 1 << 40,
                _ => return Err(format!("bad size suffix in {s:?} (K, M, G, T)")),
            };
            (&s[..i], m)
        }
        _ => (s, 1),
    };
    let n: u64 = num.parse().map_err(|_| format!("bad size {s:?}"))?;
    n.checked_mul(mult)
        .ok_or_else(|| format!("size {s:?} too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("16k"), Ok(16 << 10));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("1X").is_err());
        assert!(parse_size("").is_err());
        assert!(parse_size("99999999999T").is_err());
    }

    /// What FUSE's fsync/fsyncdir do (dbfs's fsync, then `sync_after_fsync`), counted in
    /// `fdatasync`s of the image: one barrier for a changed directory (one flush: a small
    /// change's meta page carries a commit record), none when everything is durable; without
    /// barriers one, then none.
    #[test]
    fn fsync_flushes_the_image_once_per_barrier_step() {
        use vfs::{FileSystem, NewNode};
        let dir = tempfile::tempdir().unwrap();
        for barriers in [true, false] {
            let path = dir.path().join(format!("img-{barriers}"));
            mkfs(&path, 64 << 20, 16 << 10, 4096, "t").unwrap();
            let fs = open_image_with(&path, false, barriers, None).unwrap();
            let root = fs.root().unwrap();
            let fsync = |n: &vfs::NodeRef| {
                let before = fs.pager().flushes();
                n.fsync(false).unwrap();
                fs.pager().sync_after_fsync().unwrap();
                fs.pager().flushes() - before
            };
            let file = NewNode {
                ftype: vfs::FileType::Regular,
                perm: 0o644,
                uid: 0,
                gid: 0,
                rdev: 0,
            };
            root.create("a", &file).unwrap();
            let (changed, again) = (1, 0);
            assert_eq!(
                fsync(&root),
                changed,
                "barriers {barriers}: changed directory"
            );
            assert_eq!(
                fsync(&root),
                again,
                "barriers {barriers}: durable directory"
            );
            let a = root.lookup("a").unwrap();
            assert_eq!(fsync(&a), 0, "barriers {barriers}: durable file");
            // Nothing written since the last flush: an explicit flush of the image (unmount's
            // last step) has nothing to do.
            let before = fs.pager().flushes();
            fs.pager().sync_file().unwrap();
            assert_eq!(
                fs.pager().flushes(),
                before,
                "barriers {barriers}: image flush"
            );
            // A deferred commit, then an explicit flush: one.
            root.create("b", &file).unwrap();
            fs.pager().sync_file().unwrap();
            assert_eq!(
                fs.pager().flushes(),
                before + 1,
                "barriers {barriers}: after a commit"
            );
        }
    }

    #[test]
    fn times_round_trip() {
        for t in [
            Timestamp {
                sec: 1_700_000_000,
                nsec: 5,
            },
            Timestamp { sec: -3, nsec: 250 },
        ] {
            assert_eq!(system_to_timestamp(timestamp_to_system(t)), t);
        }
        // Out of range (a corrupt inode): no panic.
        let _ = timestamp_to_system(Timestamp {
            sec: i64::MAX,
            nsec: u32::MAX,
        });
        let _ = timestamp_to_system(Timestamp {
            sec: i64::MIN,
            nsec: 0,
        });
    }
}
