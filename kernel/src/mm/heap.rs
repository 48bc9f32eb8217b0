//! The kernel heap: a buddy allocator over a region of RAM handed over at boot.

use buddy_system_allocator::LockedHeap;

#[global_allocator]
static HEAP: LockedHeap<32> = LockedHeap::empty();

pub fn init(start: usize, size: usize) {
    // SAFETY: [start, start + size) is RAM past the kernel image that nothing else uses (the
    // frame pool starts after it), given by its direct-map address, and this runs once at boot.
    unsafe { HEAP.lock().init(start, size) };
}
