//! Finding the disks: the virtio MMIO slots the device tree lists are probed, and each
//! block device among them becomes a [`VirtioDisk`] with its completion interrupt routed
//! (`arch::plic`).

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::ptr::NonNull;

use super::virtio_blk::{VirtioDisk, DISKS};
use virtio_drivers::transport::mmio::{MmioTransport, VirtIOHeader};
use virtio_drivers::transport::{DeviceType, Transport};

/// Probe the virtio MMIO slots `(base, size)` and return the block devices found, named
/// vda, vdb, ... in the order QEMU's command line created them.
pub fn probe(mut slots: Vec<(usize, usize, u32)>) -> Vec<Arc<VirtioDisk>> {
    // QEMU `virt` fills the MMIO slots from the highest address down, so the first `-device`
    // on the command line sits at the highest address: walk them downwards.
    slots.sort_unstable_by_key(|s| core::cmp::Reverse(s.0));
    let mut disks = Vec::new();
    for (base, size, irq) in slots {
        let mmio = crate::mm::phys_to_virt(base);
        let Some(header) = NonNull::new(mmio as *mut VirtIOHeader) else {
            continue;
        };
        // SAFETY: `base`/`size` describe a virtio MMIO region from the device tree, in the direct
        // map and used by nothing else for the life of the kernel.
        let transport = match unsafe { MmioTransport::new(header, size) } {
            Ok(t) => t,
            Err(_) => continue, // empty slot
        };
        if transport.device_type() != DeviceType::Block {
            continue;
        }
        let name = alloc::format!("vd{}", (b'a' + disks.len() as u8) as char);
        // Completions interrupt the boot hart alone (`arch::plic`); without a source the
        // disk's waits poll.
        let irq = if crate::arch::plic::route(irq, 0) {
            irq
        } else {
            0
        };
        match VirtioDisk::new(transport, mmio, irq, name) {
            Ok(disk) => {
                log::info!(
                    "{}: virtio-blk at {:#x}, interrupt {}",
                    disk.name,
                    base,
                    irq
                );
                disks.push(Arc::new(disk));
            }
            Err(e) => log::warn!("virtio-blk at {:#x}: {}", base, e),
        }
    }
    DISKS.call_once(|| disks.clone());
    disks
}
