//! The block layer (above task, below fs): virtio-blk over the MMIO transport, and the two
//! block caches file systems read and write through, FAT32's per-device `block_cache` and
//! dbfs's disk `window` (disk blocks mapped as kernel pages, built on mm's frames and page
//! tables). A device wait gives the CPU away through the task layer (`task::relax`,
//! `task::away`); the heap and the frame pool reach the caches only through the shrinker
//! and reclaimers boot registers with them.

pub mod blk_selftest;
pub mod block_cache;
pub mod virtio_blk;
pub mod virtio_hal;
pub mod virtio_probe;
pub mod window;

use crate::arch::{csr, plic};

/// Most sources one [`external_interrupt`] claims: a source that keeps firing cannot hold
/// the hart (and the big kernel lock) for ever; what is left stays pending and is taken at
/// the next chance.
const MAX_CLAIMS: usize = 16;

/// A supervisor external interrupt on the routed hart (`arch::plic`): claim each pending
/// source, hand it to its driver, complete it.
pub fn external_interrupt() {
    for _ in 0..MAX_CLAIMS {
        let irq = plic::claim();
        if irq == 0 {
            break;
        }
        if !virtio_blk::interrupts::interrupt(irq) {
            log::warn!("interrupt from source {} that no driver owns", irq);
        }
        plic::complete(irq);
    }
}

/// The device work of a scheduler pass and of a spinning wait (`task::Services::devices`):
/// the routed hart takes a pending external interrupt (the kernel runs with interrupts off,
/// so one that came while it was in the kernel waits here), and every hart wakes disk
/// waiters whose requests completed without one ([`virtio_blk::interrupts::poll`]).
pub fn service() {
    if plic::is_target() && csr::sip() & csr::SIE_SEIE != 0 {
        external_interrupt();
    }
    virtio_blk::interrupts::poll();
}
