//! A disk's completion interrupt and the waiters' poll ([`interrupt`], [`poll`]), and what
//! `/proc` reports of the disks ([`interrupt_counts`] for `/proc/interrupts`, [`disk_stats`]
//! for `/proc/diskstats`).

use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::Ordering::Relaxed;

use super::{now_ns, DISKS, SLEEPERS};
use crate::arch::hart::MAX_HARTS;
use virtio_blk_req::stats::DiskStats;

/// virtio-mmio registers (virtio 1.1, 4.2.2): what caused the interrupt, and its
/// acknowledgement.
const MMIO_INTERRUPT_STATUS: usize = 0x60;
const MMIO_INTERRUPT_ACK: usize = 0x64;

/// The completion interrupt of source `irq`, claimed by the routed hart (under the big kernel
/// lock): acknowledge it at the device and wake the disk's sleeping waiters, which take the
/// disk's lock and reap their requests themselves. The handler takes no disk lock, so it
/// never waits for one (a lock holder on this hart could not go on until it returned);
/// false if no disk has that source.
pub fn interrupt(irq: u32) -> bool {
    let Some(disk) = DISKS.get().and_then(|d| d.iter().find(|d| d.irq == irq)) else {
        return false;
    };
    // SAFETY: the disk's MMIO region (direct map, used by nothing else); reading the status
    // and writing it back to the acknowledgement register only lowers the interrupt line:
    // the queue's state is the lock holder's.
    unsafe {
        let status = ((disk.mmio + MMIO_INTERRUPT_STATUS) as *const u32).read_volatile();
        ((disk.mmio + MMIO_INTERRUPT_ACK) as *mut u32).write_volatile(status);
    }
    disk.interrupts[crate::arch::hart::index()].fetch_add(1, Relaxed);
    disk.waiters.wake_all();
    true
}

/// The waiters' fallback, called by the scheduler loop and by a thread that spins for a lock
/// (`task::relax`): wake the sleepers of every disk whose used ring has entries, or whose
/// results someone else reaped ([`super::Device::results_for_waiters`]). A hart that never leaves
/// the kernel (threads yielding to each other while the one they wait for sleeps) takes no
/// interrupt, and keeps the routed hart from taking one, so this is what wakes them then.
pub fn poll() {
    if SLEEPERS.load(Relaxed) == 0 {
        return;
    }
    for disk in DISKS.get().into_iter().flatten() {
        let ready = disk.dev.try_lock().is_some_and(|mut dev| {
            dev.queue.can_pop() || core::mem::take(&mut dev.results_for_waiters)
        });
        if ready {
            disk.waiters.wake_all();
        }
    }
}

/// Every disk's name and I/O statistics so far, in probe order (vda first), for
/// `/proc/diskstats`.
pub fn disk_stats() -> Vec<(String, DiskStats)> {
    let now = now_ns();
    DISKS
        .get()
        .into_iter()
        .flatten()
        .map(|d| (d.name.clone(), d.dev.lock().stats.at(now)))
        .collect()
}

/// The disks with a routed interrupt: (source, completion interrupts taken per hart slot,
/// name).
pub fn interrupt_counts() -> Vec<(u32, [u64; MAX_HARTS], String)> {
    DISKS
        .get()
        .into_iter()
        .flatten()
        .filter(|d| d.irq != 0)
        .map(|d| {
            let counts = core::array::from_fn(|i| d.interrupts[i].load(Relaxed));
            (d.irq, counts, d.name.clone())
        })
        .collect()
}
