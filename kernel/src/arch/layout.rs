//! The address layout of Sv39 on QEMU `virt` (arch layer): page size, where user space
//! starts and ends, where RAM starts, and the kernel's direct map of physical memory at
//! [`PHYS_OFFSET`]. Facts of the machine and of the paging mode, so they live below `mm`
//! (which re-exports them) and the boot code can use them too. The signal trampoline and
//! the vDSO, the two pages the kernel puts at the top of every user space, are placed in
//! [`super::vdso`].

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
