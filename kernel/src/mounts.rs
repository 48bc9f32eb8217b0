//! The mount table: which disk is mounted where, as what. Disks are named in the order QEMU's
//! command line creates them (vda, vdb, ...); [`TABLE`] says what each position holds. To add
//! a disk, add a `-drive`/`-device` pair to the Makefile's `QEMU_BASE` and a row here.
//! The root (the first row) must mount, or the kernel powers off; the others are mounted if
//! their disk exists, and a failure is reported and skipped.
//!
//! At run time, mount(2) opens a file system on any disk that is not mounted (the
//! [`fs::mount_dev::BlockMounter`] registered by [`mount_rest`]): "vfat" (FAT32) or "dbfs",
//! an existing one (a blank disk is formatted only at boot). dbfs reaches its disk through a
//! disk window, which has to exist before the first process (its kernel root entries are
//! copied into every page table), so [`mount_rest`] makes one for every disk that has none.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use abi::Errno;
use spin::Once;

use crate::arch::lockcheck::{rank, SpinLock};

use crate::drivers::block_cache::BlockCache;
use crate::drivers::virtio_blk::VirtioDisk;
use crate::drivers::window::DiskWindow;
use crate::params::Params;
use crate::{arch, drivers, fs, mm, println};
use vfs::{BlockDevice, FileSystem};

/// What a disk holds.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// FAT32 through the `fatfs` crate and a block cache.
    Fat32,
    /// dbfs through a page-fault-driven disk window; a blank disk is formatted first.
    Dbfs,
    /// Not mounted: reached only as `/dev/vdX` (the raw-device baseline of the benchmarks,
    /// and the spare disk LTP's device tests format and mount).
    Raw,
}

/// (disk position, mount point, kind), in mount order after the root. vde is the person's
/// home disk of `make run` (mk/debian.mk): their /root, kept when the system disk is replaced.
pub const TABLE: [(usize, &str, Kind); 5] = [
    (0, "/", Kind::Fat32),
    (1, "/fat", Kind::Fat32),
    (2, "/dev/vdc", Kind::Raw),
    (3, "/dbfs", Kind::Dbfs),
    (4, "/root", Kind::Dbfs),
];

/// The command line's settings a mount uses, kept for the mounts made at run time.
#[derive(Clone, Copy)]
struct Settings {
    bcache_bytes: usize,
    fsck: bool,
    dirsync: bool,
    direct: bool,
    chunk: Option<u32>,
    barrier_mib: Option<u64>,
    flush_behind: usize,
    dirty_mib: Option<usize>,
}

impl Settings {
    fn of(p: &Params) -> Settings {
        Settings {
            bcache_bytes: p.bcache_mib << 20,
            fsck: p.dbfs_fsck,
            dirsync: p.dbfs_dirsync,
            direct: p.dbfs_direct_write,
            chunk: p.dbfs_chunk,
            barrier_mib: p.dbfs_barrier_mib,
            flush_behind: p.dbfs_flush_behind,
            dirty_mib: p.dbfs_dirty_mib,
        }
    }
}

/// A disk's state: whether a file system is mounted from it, its disk window (dbfs), FAT's
/// block cache while FAT32 is mounted.
#[derive(Default)]
struct DiskState {
    mounted: bool,
    window: Option<Arc<DiskWindow>>,
    cache: Option<Arc<BlockCache>>,
}

struct Disks {
    disks: Vec<Arc<VirtioDisk>>,
    state: SpinLock<Vec<DiskState>, { rank::MOUNT_DISKS }>,
    settings: Settings,
}

static DISKS: Once<Disks> = Once::new();

fn disks() -> &'static Disks {
    DISKS
        .get()
        .expect("mounts: the disks are known before anything mounts")
}

/// A mount's failure: the errno mount(2) answers and the sentence boot prints.
type Failure = (Errno, String);

/// Mount the root file system (the table's first row, as dbfs with `rootfs=dbfs`); false if
/// it cannot be mounted.
pub fn mount_root(all: &[Arc<VirtioDisk>], params: &Params) -> bool {
    DISKS.call_once(|| Disks {
        disks: all.to_vec(),
        state: SpinLock::new(all.iter().map(|_| DiskState::default()).collect()),
        settings: Settings::of(params),
    });
    let (i, path, table_kind) = TABLE[0];
    let kind = if params.rootfs_dbfs {
        Kind::Dbfs
    } else {
        table_kind
    };
    i < all.len() && mount(i, path, kind)
}

/// Mount every other row whose disk exists; then give every disk a window (for dbfs mounts at
/// run time) and offer mount(2) the disks.
pub fn mount_rest() {
    let d = disks();
    for &(i, path, kind) in &TABLE[1..] {
        if i < d.disks.len() {
            mount(i, path, kind);
        }
    }
    for (i, disk) in d.disks.iter().enumerate() {
        let has_window = d.state.lock()[i].window.is_some();
        if !has_window {
            match DiskWindow::new(disk.clone(), d.settings.flush_behind) {
                Ok(w) => d.state.lock()[i].window = Some(w),
                Err(e) => println!("[kernel] {}: no window for dbfs: {}", disk.name, e),
            }
        }
    }
    fs::mount_dev::set_block_mounter(fs::mount_dev::BlockMounter {
        mount: mount_block,
        release: |rdev| {
            if let Some(i) = index_of(rdev) {
                release(i);
            }
        },
        types: &["vfat", "dbfs"],
    });
}

fn index_of(rdev: u64) -> Option<usize> {
    (0..disks().disks.len()).find(|&i| fs::devfs::disk_rdev(i) == rdev)
}

fn source(i: usize) -> fs::Source {
    let d = &disks().disks[i];
    fs::Source {
        name: alloc::format!("/dev/{}", d.name),
        rdev: fs::devfs::disk_rdev(i),
    }
}

fn mount(i: usize, path: &str, kind: Kind) -> bool {
    let opened = match kind {
        Kind::Fat32 => open_fat(i),
        Kind::Dbfs => open_dbfs(i, true, path),
        Kind::Raw => return true,
    };
    let name = &disks().disks[i].name;
    match opened {
        Ok(fs) => match fs::mount(path, fs, Some(source(i))) {
            Ok(()) => {
                log::info!("{}: mounted at {}", name, path);
                true
            }
            Err(e) => {
                println!("[kernel] mounting {} at {} failed: {}", name, path, e);
                release(i);
                false
            }
        },
        Err((_, why)) => {
            println!("[kernel] {}: {}; not mounted at {}", name, why, path);
            false
        }
    }
}

/// mount(2)'s way in: open a file system of type `fstype` on disk `rdev`.
fn mount_block(rdev: u64, fstype: &str) -> Result<Arc<dyn FileSystem>, Errno> {
    let i = index_of(rdev).ok_or(Errno::ENXIO)?;
    let opened = match fstype {
        "vfat" => open_fat(i),
        "dbfs" => open_dbfs(i, false, "(mount)"),
        _ => return Err(Errno::ENODEV),
    };
    opened.map_err(|(e, why)| {
        log::info!("mount: {}: {}", disks().disks[i].name, why);
        e
    })
}

/// Claim disk `i` for a mount: EBUSY if a file system is mounted from it.
fn claim(i: usize) -> Result<(), Failure> {
    let mut st = disks().state.lock();
    if st[i].mounted {
        return Err((Errno::EBUSY, String::from("already mounted")));
    }
    st[i].mounted = true;
    Ok(())
}

/// Disk `i` is free again: its block cache forgotten, its window's pages dropped (the disk
/// may be written through /dev before the next mount).
fn release(i: usize) {
    let (cache, window) = {
        let mut st = disks().state.lock();
        st[i].mounted = false;
        (st[i].cache.take(), st[i].window.clone())
    };
    if let Some(c) = cache {
        drivers::block_cache::unregister(&c);
    }
    if let Some(w) = window {
        w.drop_pages();
    }
}

/// Open the FAT32 file system on disk `i` (through a block cache of its own).
fn open_fat(i: usize) -> Result<Arc<dyn FileSystem>, Failure> {
    claim(i)?;
    let d = disks();
    let cache = Arc::new(BlockCache::new(d.disks[i].clone(), d.settings.bcache_bytes));
    drivers::block_cache::register(cache.clone());
    d.state.lock()[i].cache = Some(cache.clone());
    match fat32::Fat32Fs::mount(cache, Arc::new(arch::time::KernelClock)) {
        Ok(fs) => Ok(fs),
        Err(e) => {
            release(i);
            Err((
                Errno::EINVAL,
                alloc::format!("not a FAT32 file system ({})", e),
            ))
        }
    }
}

/// True when the first `bytes` of `disk` are all zero (a disk never formatted).
fn is_blank(disk: &Arc<VirtioDisk>, bytes: usize) -> bool {
    let mut buf = alloc::vec![0u8; bytes];
    disk.read_sectors(0, &mut buf).is_ok() && buf.iter().all(|&b| b == 0)
}

/// Chunk size the kernel formats a blank dbfs disk with. Larger than dbfs's default (16 KiB)
/// and dbfs-fuse's (4 KiB): in the guest a large write's cost follows its number of chunks
/// (one B+tree entry each, decoded and rewritten by every commit that touches its leaf), while
/// the read-modify-write of small random writes, which favours small chunks on the host, costs
/// little here (docs/BENCHMARKS.md has both measured).
const KERNEL_DBFS_CHUNK_SIZE: u32 = 64 << 10;

type DbFs = dbfs::DbFs<fs::window_pager::WindowPager>;

/// Open dbfs on disk `i` (to be mounted at `path`) through its page-fault-driven window. With
/// `format`, a blank disk is formatted first (boot); otherwise, as a disk holding anything else
/// that is not dbfs, it is refused, untouched (EINVAL). With the `dbfs_fsck` setting, the image
/// is checked first and refused if damaged; with `dbfs_dirsync`, every commit is durable when
/// it returns.
fn open_dbfs(i: usize, format: bool, path: &str) -> Result<Arc<dyn FileSystem>, Failure> {
    claim(i)?;
    let r = open_dbfs_claimed(i, format, path);
    if r.is_err() {
        release(i);
    }
    r
}

fn open_dbfs_claimed(i: usize, format: bool, path: &str) -> Result<Arc<dyn FileSystem>, Failure> {
    let d = disks();
    let disk = &d.disks[i];
    let s = d.settings;
    let existing = d.state.lock()[i].window.clone();
    let window = match existing {
        Some(w) => {
            // Pages read before the disk was last written through /dev are stale.
            w.drop_pages();
            w
        }
        None => {
            let w = DiskWindow::new(disk.clone(), s.flush_behind)
                .map_err(|e| (Errno::ENOMEM, alloc::format!("no window for dbfs: {}", e)))?;
            d.state.lock()[i].window = Some(w.clone());
            w
        }
    };
    let mut pager = fs::window_pager::WindowPager::new(window);
    if is_blank(disk, 2 * 65536) {
        if !format {
            return Err((Errno::EINVAL, String::from("a blank disk, not dbfs")));
        }
        let opts = dbfs::MkfsOptions {
            label: String::from("dbfs"),
            time: vfs::Clock::now(&arch::time::KernelClock),
            chunk_size: s.chunk.unwrap_or(KERNEL_DBFS_CHUNK_SIZE),
            ..Default::default()
        };
        pager = DbFs::mkfs(pager, opts)
            .map_err(|e| (Errno::EIO, alloc::format!("formatting dbfs failed: {}", e)))?;
        println!("[kernel] {}: blank disk formatted as dbfs", disk.name);
    }
    let dbfs = DbFs::mount_checked(pager, Arc::new(arch::time::KernelClock))
        .map_err(|e| (Errno::EINVAL, alloc::format!("not dbfs: {}", e)))?;
    if s.fsck && !dbfs_fsck_clean(&dbfs, &disk.name, path) {
        return Err((Errno::EUCLEAN, String::from("dbfs fsck found problems")));
    }
    dbfs.set_sync_metadata(s.dirsync);
    // Data reaches the disk straight from its buffers (`put_direct`), so pages held for the
    // next barrier cost disk space, not memory: let up to a quarter of the disk accumulate
    // (fewer barriers, each two device flushes) before forcing one. A nearly full store forces
    // one anyway (kvdb reclaims held pages).
    let bound = s
        .barrier_mib
        .map_or((disk.size_bytes() / 4).max(16 << 20), |mib| mib << 20);
    dbfs.set_barrier_bound(bound);
    // Buffered writes live in the heap until they commit. dbfs's own default (16 MiB) made 4
    // fio jobs of 4 KiB random writes over 8 MiB files each (every 64 KiB chunk touched)
    // commit all 16 MiB of buffered chunks again after every few hundred writes: 220 MB
    // written for 32 MiB of data. A quarter of the heap (64 MiB with 1 GiB of RAM; Linux
    // starts background write-back at a tenth of memory) holds such a working set; the heap's
    // reserve is apart.
    let dirty = s
        .dirty_mib
        .map_or(mm::heap::total_bytes() / 4, |mib| mib << 20);
    dbfs.set_dirty_limit(dirty);
    if !s.direct {
        dbfs.set_direct_write_min(None);
    }
    // Commit data buffered for longer than dbfs's write-back delay, and make commits older
    // than that durable (a barrier). A failure (e.g. ENOSPC while the disk is full) is logged
    // once, not on every tick, and so is the recovery. The tick holds the file system weakly:
    // once unmounted and dropped, its tick does nothing.
    let failing = core::sync::atomic::AtomicBool::new(false);
    let weak = Arc::downgrade(&dbfs);
    fs::register_periodic(alloc::sync::Arc::new(move || {
        use core::sync::atomic::Ordering::Relaxed;
        let Some(dbfs) = weak.upgrade() else {
            return;
        };
        match dbfs.writeback_tick() {
            Err(e) if !failing.swap(true, Relaxed) => {
                log::error!("dbfs write-back failed: {} (retrying every tick)", e)
            }
            Ok(()) if failing.swap(false, Relaxed) => {
                log::warn!("dbfs write-back succeeded again")
            }
            _ => {}
        }
    }));
    Ok(dbfs)
}

/// Run `DbFs::fsck` on a freshly mounted image and print the verdict (one line the host can
/// grep: `dbfs fsck: clean`, or each problem then `dbfs fsck: N problems`).
fn dbfs_fsck_clean(
    dbfs: &dbfs::DbFs<fs::window_pager::WindowPager>,
    disk: &str,
    path: &str,
) -> bool {
    match dbfs.fsck() {
        Ok(problems) if problems.is_empty() => {
            println!("[kernel] {}: dbfs fsck: clean", disk);
            true
        }
        Ok(problems) => {
            for p in &problems {
                println!("[kernel] {}: dbfs fsck: {}", disk, p);
            }
            println!(
                "[kernel] {}: dbfs fsck: {} problems; not mounted at {}",
                disk,
                problems.len(),
                path
            );
            false
        }
        Err(e) => {
            println!(
                "[kernel] {}: dbfs fsck: cannot check ({}); not mounted at {}",
                disk, e, path
            );
            false
        }
    }
}
