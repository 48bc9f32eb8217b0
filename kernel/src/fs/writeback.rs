//! Write-back of every mount (fs layer): the periodic work mounted file systems ask for
//! (dbfs's write-back timer, run from the scheduler's idle loop), sync(2) and power-off.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use core::sync::atomic::{AtomicBool, AtomicU64};

use crate::arch::lockcheck::{rank, SpinLock};

use super::mount_table::mounts;

/// Work a mounted file system wants done periodically (dbfs's write-back timer).
type Periodic = Arc<dyn Fn() + Send + Sync>;
/// The registered work, held only to copy the list: the work itself may give the CPU away (a
/// device flush), which no spin lock may be held across.
static PERIODIC: SpinLock<Vec<Periodic>, { rank::PERIODIC }> = SpinLock::new(Vec::new());
/// A task is running the periodic work (possibly given the CPU away in a device flush).
static RUNNING: AtomicBool = AtomicBool::new(false);
static LAST_TICK_NS: AtomicU64 = AtomicU64::new(0);

/// Run `f` about once a second from now on.
pub fn register_periodic(f: Periodic) {
    PERIODIC.lock().push(f);
}

/// Called on timer interrupts (which only arrive in user mode, so no kernel lock is held):
/// runs the periodic work if a second has passed since the last run.
pub fn tick() {
    let now = crate::arch::time::monotonic_ns();
    if now.saturating_sub(LAST_TICK_NS.load(Relaxed)) < 1_000_000_000 {
        return;
    }
    LAST_TICK_NS.store(now, Relaxed);
    // Another task may be inside the periodic work, given the CPU away in a device flush:
    // it does this round's work, and this task does not wait for it.
    if RUNNING.swap(true, Acquire) {
        return;
    }
    let list: Vec<Periodic> = PERIODIC.lock().clone();
    for f in list.iter() {
        f();
    }
    RUNNING.store(false, Release);
}

/// Write back every mounted file system (sync, shutdown).
pub fn sync_all() {
    crate::mm::file_pages::write_back_all();
    for m in mounts() {
        if let Err(e) = m.fs.sync() {
            log::error!("sync of {} failed: {}", m.path, e);
        }
    }
}

/// Write back every file system, then forget every clean cached block and window page (the
/// `cold` benchmarks, `/proc/sys/vm/drop_caches`): the next read of each goes to the disk.
pub fn drop_caches() -> vfs::VfsResult<()> {
    sync_all();
    crate::drivers::block_cache::drop_all_caches()?;
    crate::drivers::window::drop_all();
    Ok(())
}

/// Write back every file system, unmount each as a clean unmount leaves its disk (what
/// Linux's shutdown does before it powers off: a FAT volume's dirty flag cleared) and power off
/// with `code` as QEMU's exit status.
pub fn sync_and_power_off(code: u32) -> ! {
    crate::mm::file_pages::write_back_all();
    for m in mounts() {
        if let Err(e) = m.fs.unmount() {
            log::error!("unmount of {} at power-off failed: {}", m.path, e);
        }
    }
    crate::arch::power::shutdown(code)
}
