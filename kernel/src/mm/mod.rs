//! Memory management.
//!
//! Physical memory (from the device tree) is split at boot into the kernel image, the kernel
//! heap, and a pool of 4 KiB frames. The kernel maps all RAM and the MMIO it uses with 1 GiB
//! identity pages (VA = PA, not user-accessible) in every page table, so a physical address
//! is also a kernel pointer and switching `satp` never moves the kernel. User space lives
//! above [`USER_BASE`] (4 GiB), out of the way of those gigapages; RAM is therefore capped at
//! `USER_BASE - 0x8000_0000` (2 GiB).
//!
//! Interface: [`frame::alloc`] returns an owned, zeroed [`frame::Frame`] freed on drop;
//! [`page_table::PageTable`] maps user pages; [`addr_space::AddrSpace`] owns a process's
//! areas and frames and serves its page faults; [`uaccess`] is the only way syscalls touch
//! user memory.

pub mod addr_space;
pub mod frame;
pub mod heap;
pub mod page_table;
pub mod uaccess;
pub mod window;

pub const PAGE_SIZE: usize = 4096;
/// Lowest user virtual address.
pub const USER_BASE: usize = 0x1_0000_0000;
/// One past the highest user virtual address (Sv39's lower half).
pub const USER_END: usize = 0x40_0000_0000;
/// Where RAM starts on QEMU `virt`.
pub const RAM_BASE: usize = 0x8000_0000;

pub const fn page_floor(a: usize) -> usize {
    a & !(PAGE_SIZE - 1)
}
pub const fn page_ceil(a: usize) -> usize {
    (a + PAGE_SIZE - 1) & !(PAGE_SIZE - 1)
}

extern "C" {
    fn ekernel();
}

/// Set up the heap and frame pool over RAM [`RAM_BASE`, `ram_end`), then the kernel page
/// table.
pub fn init(ram_end: usize) {
    let ram_end = ram_end.min(USER_BASE);
    let kernel_end = page_ceil(ekernel as *const () as usize);
    let total = ram_end - kernel_end;
    // A quarter of free RAM for the heap (block cache, buffers, kernel stacks), at least 16 MiB.
    let heap_size = (total / 4).clamp(16 << 20, 512 << 20).min(total / 2);
    heap::init(kernel_end, heap_size);
    frame::init(kernel_end + heap_size, ram_end);
    page_table::init_kernel(ram_end);
    log::info!(
        "memory: kernel ends {:#x}, heap {} MiB, {} frames free",
        kernel_end,
        heap_size >> 20,
        frame::free_count()
    );
}
