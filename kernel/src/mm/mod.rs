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
//! the direct map or in a disk window (the block layer's `drivers::window`, at its
//! `WINDOW_BASE`, built on these frames and page tables).
//!
//! Interface: [`frame::alloc`] returns an owned, zeroed [`frame::Frame`] freed on drop;
//! [`page_table::PageTable`] maps user pages; [`addr_space::AddrSpace`] owns a process's
//! areas and frames and serves its page faults; [`uaccess`] is the only way syscalls touch
//! user memory.

pub mod addr_space;
pub mod advice;
pub mod aio_ring;
pub mod area;
pub mod elf;
pub mod elf_loader;
pub mod file_pages;
pub mod frame;
pub mod heap;
pub mod maps;
pub mod mlock;
pub mod page_table;
mod remap;
pub mod uaccess;

pub use crate::arch::layout::{
    page_ceil, page_floor, phys_to_virt, virt_to_phys, DIRECT_MAP_END, PAGE_SIZE, PHYS_OFFSET,
    RAM_BASE, USER_BASE, USER_END,
};

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
