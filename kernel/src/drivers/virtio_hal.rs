//! The kernel's side of the `virtio-drivers` crate (its `Hal`): DMA memory from the kernel
//! heap and the physical addresses of kernel buffers, all in the direct map. Used by the
//! virtio-blk driver (`virtio_blk`) for its queue and its requests' buffers.

use core::alloc::Layout;
use core::ptr::NonNull;

use virtio_drivers::{BufferDirection, Hal, PhysAddr, PAGE_SIZE};

/// The `Hal` the virtio queues and transports of this kernel use.
pub struct KernelHal;

/// The physical address of a kernel buffer. Every buffer the kernel hands a device is in the
/// direct map; anything else is a kernel bug that would make the device write elsewhere.
fn direct_map_phys(va: usize) -> PhysAddr {
    match crate::mm::virt_to_phys(va) {
        Some(pa) => pa as PhysAddr,
        None => panic!("virtio buffer {:#x} is not in the direct map", va),
    }
}

// SAFETY: `dma_alloc` returns zeroed, page-aligned, exclusively owned heap memory and its
// physical address (heap memory is in the direct map); `share` returns the physical address
// of a kernel buffer, which is in the direct map too (never a disk window: those are read and
// written through their frames).
unsafe impl Hal for KernelHal {
    fn dma_alloc(pages: usize, _direction: BufferDirection) -> (PhysAddr, NonNull<u8>) {
        let layout = Layout::from_size_align(pages * PAGE_SIZE, PAGE_SIZE).expect("DMA layout");
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { alloc::alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(ptr).expect("out of memory for virtio DMA");
        (direct_map_phys(ptr.as_ptr() as usize), ptr)
    }

    unsafe fn dma_dealloc(_paddr: PhysAddr, vaddr: NonNull<u8>, pages: usize) -> i32 {
        let layout = Layout::from_size_align(pages * PAGE_SIZE, PAGE_SIZE).expect("DMA layout");
        // SAFETY: the caller passes back exactly what `dma_alloc` returned.
        unsafe { alloc::alloc::dealloc(vaddr.as_ptr(), layout) };
        0
    }

    unsafe fn mmio_phys_to_virt(paddr: PhysAddr, _size: usize) -> NonNull<u8> {
        NonNull::new(crate::mm::phys_to_virt(paddr as usize) as *mut u8).expect("null MMIO address")
    }

    unsafe fn share(buffer: NonNull<[u8]>, _direction: BufferDirection) -> PhysAddr {
        direct_map_phys(buffer.as_ptr() as *mut u8 as usize)
    }

    unsafe fn unshare(_paddr: PhysAddr, _buffer: NonNull<[u8]>, _direction: BufferDirection) {}
}
