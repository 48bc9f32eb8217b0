//! Memory management.
//!
//! Physical memory (from the device tree) is split at boot into the kernel image, the kernel
//! heap, and a pool of 4 KiB frames. As on Linux, the kernel lives in the upper half of the
//! Sv39 address space and user space in the lower half: every page table maps physical memory
//! (the low 1 GiB of MMIO and all of RAM) with 1 GiB pages at [`PHYS_OFFSET`] (the *direct
//! map*, not user-accessible), and the kernel image is linked inside it, at
//! `PHYS_OFFSET + 0x8020_0000`. So switching `satp` never moves the kernel, and a physical
//! address becomes a kernel pointer by [`phys_to_virt`]. User programs get the whole lower
//! half from [`USER_BASE`] (0x10000, where Linux's static executables are linked) to
//! [`USER_END`] (256 GiB).
//!
//! Address kinds: a frame's `pa()` and a page-table entry hold physical addresses (what the
//! MMU and the disk's DMA see); everything the kernel dereferences is a virtual address, in
//! the direct map or in a disk window (`window`, at `window::WINDOW_BASE`).
//!
//! Interface: [`frame::alloc`] returns an owned, zeroed [`frame::Frame`] freed on drop;
//! [`page_table::PageTable`] maps user pages; [`addr_space::AddrSpace`] owns a process's
//! areas and frames and serves its page faults; [`uaccess`] is the only way syscalls touch
//! user memory.

pub mod addr_space;
pub mod file_pages;
pub mod frame;
pub mod heap;
pub mod page_table;
pub mod uaccess;
pub mod window;

pub const PAGE_SIZE: usize = 4096;
/// Lowest user virtual address (Linux's default `mmap_min_addr`; static riscv64 executables
/// are linked at 0x10000).
pub const USER_BASE: usize = 0x1_0000;
/// One past the highest user virtual address (Sv39's lower half).
pub const USER_END: usize = 0x40_0000_0000;
/// Where RAM starts on QEMU `virt`.
pub const RAM_BASE: usize = 0x8000_0000;
/// Where physical address 0 appears in the kernel's direct map (the first address of Sv39's
/// upper half). The boot code in `arch` and `linker.ld` use the same number.
pub const PHYS_OFFSET: usize = 0xffff_ffc0_0000_0000;
/// The direct map covers physical addresses below this (the kernel's root entries, one per
/// GiB; RAM past it is not used).
pub const DIRECT_MAP_END: usize = 0x10_0000_0000;

/// The kernel address of physical address `pa` (in the direct map).
#[inline]
pub const fn phys_to_virt(pa: usize) -> usize {
    pa + PHYS_OFFSET
}

/// The physical address of a kernel address in the direct map (the kernel image, its heap and
/// stacks, frames); `None` for any other address (user space, a disk window).
#[inline]
pub const fn virt_to_phys(va: usize) -> Option<usize> {
    if va >= PHYS_OFFSET && va < PHYS_OFFSET + DIRECT_MAP_END {
        Some(va - PHYS_OFFSET)
    } else {
        None
    }
}

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
    let ram_end = ram_end.min(DIRECT_MAP_END);
    // `ekernel` is a link-time (virtual) address inside the direct map.
    let kernel_end = page_ceil(ekernel as *const () as usize - PHYS_OFFSET);
    let total = ram_end - kernel_end;
    // A quarter of free RAM for the heap (block cache, buffers, kernel stacks), at least 16 MiB.
    let heap_size = (total / 4).clamp(16 << 20, 512 << 20).min(total / 2);
    heap::init(phys_to_virt(kernel_end), heap_size);
    frame::init(kernel_end + heap_size, ram_end);
    page_table::init_kernel(ram_end);
    log::info!(
        "memory: kernel ends {:#x}, heap {} MiB, {} frames free",
        kernel_end,
        heap_size >> 20,
        frame::free_count()
    );
}
