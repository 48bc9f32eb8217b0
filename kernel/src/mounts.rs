//! The mount table: which disk is mounted where, as what. Disks are named in the order QEMU's
//! command line creates them (vda, vdb, ...); [`TABLE`] says what each position holds. To add
//! a disk, add a `-drive`/`-device` pair to the Makefile's `QEMU_BASE` and a row here.
//! The root (the first row) must mount, or the kernel powers off; the others are mounted if
//! their disk exists, and a failure is reported and skipped.

use alloc::string::String;
use alloc::sync::Arc;

use crate::drivers::virtio_blk::VirtioDisk;
use crate::params::Params;
use crate::{arch, drivers, fs, mm, println};
use vfs::BlockDevice;

/// What a disk holds.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// FAT32 through the `fatfs` crate and a block cache.
    Fat32,
    /// dbfs through a page-fault-driven disk window; a blank disk is formatted first.
    Dbfs,
    /// Not mounted: reached only as `/dev/vdX` (the raw-device baseline of the benchmarks).
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

/// Mount the root file system (the table's first row, as dbfs with `rootfs=dbfs`); false if
/// it cannot be mounted.
pub fn mount_root(disks: &[Arc<VirtioDisk>], params: &Params) -> bool {
    let (i, path, table_kind) = TABLE[0];
    let kind = if params.rootfs_dbfs {
        Kind::Dbfs
    } else {
        table_kind
    };
    disks.get(i).is_some_and(|d| mount(d, path, kind, params))
}

/// Mount every other row whose disk exists.
pub fn mount_rest(disks: &[Arc<VirtioDisk>], params: &Params) {
    for &(i, path, kind) in &TABLE[1..] {
        if let Some(d) = disks.get(i) {
            mount(d, path, kind, params);
        }
    }
}

fn mount(disk: &Arc<VirtioDisk>, path: &str, kind: Kind, params: &Params) -> bool {
    match kind {
        Kind::Fat32 => mount_fat(disk, path, params.bcache_mib << 20),
        Kind::Dbfs => mount_dbfs(disk, path, params),
        Kind::Raw => true,
    }
}

/// Mount a FAT32 file system on `disk` (through its own block cache) at `path`.
fn mount_fat(disk: &Arc<drivers::virtio_blk::VirtioDisk>, path: &str, cache_bytes: usize) -> bool {
    let cache = Arc::new(drivers::block_cache::BlockCache::new(
        disk.clone(),
        cache_bytes,
    ));
    drivers::block_cache::register(cache.clone());
    match fat32::Fat32Fs::mount(cache, Arc::new(arch::time::KernelClock)) {
        Ok(fs) => match fs::mount(path, fs) {
            Ok(()) => {
                log::info!("{}: FAT32 mounted at {}", disk.name, path);
                true
            }
            Err(e) => {
                println!("[kernel] mounting {} at {} failed: {}", disk.name, path, e);
                false
            }
        },
        Err(e) => {
            println!(
                "[kernel] {}: not a FAT32 file system ({}); not mounted at {}",
                disk.name, e, path
            );
            false
        }
    }
}

/// True when the first `bytes` of `disk` are all zero (a disk never formatted).
fn is_blank(disk: &Arc<drivers::virtio_blk::VirtioDisk>, bytes: usize) -> bool {
    let mut buf = alloc::vec![0u8; bytes];
    disk.read_sectors(0, &mut buf).is_ok() && buf.iter().all(|&b| b == 0)
}

/// Chunk size the kernel formats a blank dbfs disk with. Larger than dbfs's default (16 KiB)
/// and dbfs-fuse's (4 KiB): in the guest a large write's cost follows its number of chunks
/// (one B+tree entry each, decoded and rewritten by every commit that touches its leaf), while
/// the read-modify-write of small random writes, which favours small chunks on the host, costs
/// little here (docs/BENCHMARKS.md has both measured).
const KERNEL_DBFS_CHUNK_SIZE: u32 = 64 << 10;

/// Mount dbfs on `disk` at `path` through a page-fault-driven window. A blank disk is
/// formatted first; a disk holding anything else that is not dbfs is refused, untouched.
/// With `fsck`, the mounted image is checked first and not mounted if damaged; with `dirsync`,
/// every commit is durable when it returns.
fn mount_dbfs(disk: &Arc<drivers::virtio_blk::VirtioDisk>, path: &str, params: &Params) -> bool {
    let (fsck, dirsync, direct) = (
        params.dbfs_fsck,
        params.dbfs_dirsync,
        params.dbfs_direct_write,
    );
    type DbFs = dbfs::DbFs<fs::window_pager::WindowPager>;
    let window = match drivers::window::DiskWindow::new(disk.clone(), params.dbfs_flush_behind) {
        Ok(w) => w,
        Err(e) => {
            println!("[kernel] {}: no window for dbfs: {}", disk.name, e);
            return false;
        }
    };
    let mut pager = fs::window_pager::WindowPager::new(window);
    if is_blank(disk, 2 * 65536) {
        let opts = dbfs::MkfsOptions {
            label: String::from("dbfs"),
            time: vfs::Clock::now(&arch::time::KernelClock),
            chunk_size: params.dbfs_chunk.unwrap_or(KERNEL_DBFS_CHUNK_SIZE),
            ..Default::default()
        };
        pager = match DbFs::mkfs(pager, opts) {
            Ok(p) => p,
            Err(e) => {
                println!("[kernel] {}: formatting dbfs failed: {}", disk.name, e);
                return false;
            }
        };
        println!("[kernel] {}: blank disk formatted as dbfs", disk.name);
    }
    match DbFs::mount_checked(pager, Arc::new(arch::time::KernelClock)) {
        Ok(dbfs) if fsck && !dbfs_fsck_clean(&dbfs, &disk.name, path) => false,
        Ok(dbfs) => match fs::mount(path, dbfs.clone()) {
            Ok(()) => {
                log::info!("{}: dbfs mounted at {}", disk.name, path);
                dbfs.set_sync_metadata(dirsync);
                // Data reaches the disk straight from its buffers (`put_direct`), so pages
                // held for the next barrier cost disk space, not memory: let up to a quarter of
                // the disk accumulate (fewer barriers, each two device flushes) before forcing
                // one. A nearly full store forces one anyway (kvdb reclaims held pages).
                let bound = params
                    .dbfs_barrier_mib
                    .map_or((disk.size_bytes() / 4).max(16 << 20), |mib| mib << 20);
                dbfs.set_barrier_bound(bound);
                // Buffered writes live in the heap until they commit. dbfs's own default (16
                // MiB) made 4 fio jobs of 4 KiB random writes over 8 MiB files each (every
                // 64 KiB chunk touched) commit all 16 MiB of buffered chunks again after
                // every few hundred writes: 220 MB written for 32 MiB of data. A quarter of
                // the heap (64 MiB with 1 GiB of RAM; Linux starts background write-back at
                // a tenth of memory) holds such a working set; the heap's reserve is apart.
                let dirty = params
                    .dbfs_dirty_mib
                    .map_or(mm::heap::total_bytes() / 4, |mib| mib << 20);
                dbfs.set_dirty_limit(dirty);
                if !direct {
                    dbfs.set_direct_write_min(None);
                }
                // Commit data buffered for longer than dbfs's write-back delay, and make
                // commits older than that durable (a barrier). A failure
                // (e.g. ENOSPC while the disk is full) is logged once, not on every tick, and
                // so is the recovery.
                let failing = core::sync::atomic::AtomicBool::new(false);
                fs::register_periodic(alloc::boxed::Box::new(move || {
                    use core::sync::atomic::Ordering::Relaxed;
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
                true
            }
            Err(e) => {
                println!("[kernel] mounting {} at {} failed: {}", disk.name, path, e);
                false
            }
        },
        Err(e) => {
            println!("[kernel] {}: not mounted at {}: {}", disk.name, path, e);
            false
        }
    }
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
