//! Sv39 page tables.
//!
//! Every table shares the kernel's root entries: 1 GiB identity leaves for the low 1 GiB
//! (MMIO: test device, RTC, PLIC, UART, virtio) and for RAM. User pages are 4 KiB leaves with
//! the U bit, below them in the tree. Only user subtrees are owned (and freed) by a table.

use alloc::vec::Vec;
use spin::Once;

use super::frame::{self, Frame};
use super::{PAGE_SIZE, RAM_BASE};

bitflags::bitflags! {
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct PteFlags: usize {
        const V = 1 << 0;
        const R = 1 << 1;
        const W = 1 << 2;
        const X = 1 << 3;
        const U = 1 << 4;
        const G = 1 << 5;
        const A = 1 << 6;
        const D = 1 << 7;
    }
}

const GIB: usize = 1 << 30;

/// The kernel's root entries, copied into every table: (index, entry).
static KERNEL_ROOT_ENTRIES: Once<Vec<(usize, usize)>> = Once::new();
/// The kernel-only table, used while no process runs.
static KERNEL_TABLE: Once<PageTable> = Once::new();

fn leaf(pa: usize, flags: PteFlags) -> usize {
    ((pa >> 12) << 10) | (flags | PteFlags::V).bits()
}

pub fn init_kernel(ram_end: usize) {
    let kflags = PteFlags::R | PteFlags::W | PteFlags::X | PteFlags::G | PteFlags::A | PteFlags::D;
    KERNEL_ROOT_ENTRIES.call_once(|| {
        let mut v = alloc::vec![(0, leaf(0, kflags))];
        let mut gib = RAM_BASE;
        while gib < ram_end {
            v.push((gib / GIB, leaf(gib, kflags)));
            gib += GIB;
        }
        v
    });
    let t = KERNEL_TABLE.call_once(|| PageTable::new().expect("no memory for the kernel page table"));
    t.activate();
}

/// Switch to the kernel-only table.
pub fn activate_kernel() {
    if let Some(t) = KERNEL_TABLE.get() {
        t.activate();
    }
}

/// A page table: a root frame with the kernel entries, plus the frames of user subtrees.
pub struct PageTable {
    root: Frame,
    tables: Vec<Frame>,
}

impl PageTable {
    pub fn new() -> Option<Self> {
        let mut root = frame::alloc()?;
        if let Some(entries) = KERNEL_ROOT_ENTRIES.get() {
            let words = Self::words(&mut root);
            for &(i, e) in entries {
                words[i] = e;
            }
        }
        Some(PageTable { root, tables: Vec::new() })
    }

    fn words(f: &mut Frame) -> &mut [usize] {
        // SAFETY: a frame is 4096 bytes, page-aligned, owned; viewed as 512 page-table entries.
        unsafe { core::slice::from_raw_parts_mut(f.pa() as *mut usize, 512) }
    }

    fn words_at(pa: usize) -> &'static mut [usize] {
        // SAFETY: `pa` is a page-table frame owned by some `PageTable` (reached through a valid
        // non-leaf entry), identity-mapped; the kernel is single-threaded while it edits tables.
        unsafe { core::slice::from_raw_parts_mut(pa as *mut usize, 512) }
    }

    pub fn satp(&self) -> usize {
        (8 << 60) | (self.root.pa() >> 12)
    }

    pub fn activate(&self) {
        crate::arch::csr::set_satp(self.satp());
    }

    /// The leaf entry slot for `va`, creating intermediate tables if `create`.
    fn slot(&mut self, va: usize, create: bool) -> Option<&'static mut usize> {
        let idx = [(va >> 30) & 0x1ff, (va >> 21) & 0x1ff, (va >> 12) & 0x1ff];
        let mut table = self.root.pa();
        for &i in &idx[..2] {
            let words = Self::words_at(table);
            let e = words[i];
            if e & PteFlags::V.bits() == 0 {
                if !create {
                    return None;
                }
                let f = frame::alloc()?;
                words[i] = ((f.pa() >> 12) << 10) | PteFlags::V.bits();
                table = f.pa();
                self.tables.push(f);
            } else if e & (PteFlags::R | PteFlags::W | PteFlags::X).bits() != 0 {
                return None; // a kernel gigapage: never user memory
            } else {
                table = (e >> 10) << 12;
            }
        }
        Some(&mut Self::words_at(table)[idx[2]])
    }

    /// Map the user page `va` to frame `pa`. Returns false when out of memory.
    pub fn map(&mut self, va: usize, pa: usize, flags: PteFlags) -> bool {
        match self.slot(va, true) {
            Some(s) => {
                *s = leaf(pa, flags | PteFlags::A | PteFlags::D);
                true
            }
            None => false,
        }
    }

    pub fn unmap(&mut self, va: usize) {
        if let Some(s) = self.slot(va, false) {
            *s = 0;
            crate::arch::csr::sfence_vma(va);
        }
    }

    /// Change the permission bits of a mapped page.
    pub fn set_flags(&mut self, va: usize, flags: PteFlags) {
        if let Some(s) = self.slot(va, false) {
            if *s & PteFlags::V.bits() != 0 {
                *s = leaf((*s >> 10) << 12, flags | PteFlags::A | PteFlags::D);
                crate::arch::csr::sfence_vma(va);
            }
        }
    }

    /// The frame address and flags of the page holding `va`, if mapped.
    pub fn translate(&mut self, va: usize) -> Option<(usize, PteFlags)> {
        let s = self.slot(va, false)?;
        let e = *s;
        if e & PteFlags::V.bits() == 0 {
            return None;
        }
        Some(((e >> 10) << 12, PteFlags::from_bits_truncate(e)))
    }
}

const _: () = assert!(PAGE_SIZE == 4096);
