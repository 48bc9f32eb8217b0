//! Sv39 page tables.
//!
//! Every table shares the kernel's root entries, all in the upper half: the direct map (1 GiB
//! leaves at `PHYS_OFFSET` for the low 1 GiB of MMIO (test device, RTC, PLIC, UART, virtio)
//! and for RAM, which hold the kernel image too) and the disk windows' subtrees. User pages
//! are 4 KiB leaves with the U bit in the lower half (root entries 0..256). Only user subtrees
//! are owned (and freed) by a table. Tables are edited through the direct map.

use alloc::vec::Vec;
use spin::Once;

use crate::arch::lockcheck::{rank, SpinLock};

use super::frame::{self, Frame};
use super::{phys_to_virt, PAGE_SIZE, PHYS_OFFSET, RAM_BASE};

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

/// The kernel's root entries, copied into every table: (index, entry). Entries added after
/// boot (disk windows) must be added before any process exists.
static KERNEL_ROOT_ENTRIES: SpinLock<Vec<(usize, usize)>, { rank::KERNEL_PAGE_TABLE }> =
    SpinLock::new(Vec::new());
/// The kernel-only table, used while no process runs.
static KERNEL_TABLE: Once<PageTable> = Once::new();

fn leaf(pa: usize, flags: PteFlags) -> usize {
    ((pa >> 12) << 10) | (flags | PteFlags::V).bits()
}

pub fn init_kernel(ram_end: usize) {
    let kflags = PteFlags::R | PteFlags::W | PteFlags::X | PteFlags::G | PteFlags::A | PteFlags::D;
    {
        let mut v = KERNEL_ROOT_ENTRIES.lock();
        let root_index = |pa: usize| ((PHYS_OFFSET + pa) >> 30) & 0x1ff;
        v.push((root_index(0), leaf(0, kflags)));
        let mut gib = RAM_BASE;
        while gib < ram_end {
            v.push((root_index(gib), leaf(gib, kflags)));
            gib += GIB;
        }
    }
    let t =
        KERNEL_TABLE.call_once(|| PageTable::new().expect("no memory for the kernel page table"));
    crate::arch::hart::set_kernel_satp(t.satp());
    t.activate();
}

/// Add a kernel root entry pointing at the level-1 table in frame `table_pa` for the 1 GiB of
/// virtual space at root index `index` (a disk window), shared by every page table made from
/// now on and by the kernel table.
pub fn add_kernel_subtree(index: usize, table_pa: usize) {
    let pte = ((table_pa >> 12) << 10) | PteFlags::V.bits();
    KERNEL_ROOT_ENTRIES.lock().push((index, pte));
    if let Some(t) = KERNEL_TABLE.get() {
        // SAFETY: the kernel table's root frame is owned by the static table, in the direct map.
        let words = unsafe { core::slice::from_raw_parts_mut(t.root.va() as *mut usize, 512) };
        words[index] = pte;
    }
    crate::arch::hart::flush_tlb_all();
}

/// Map the kernel page `va` (in a subtree added by [`add_kernel_subtree`]) to frame `pa`,
/// read-write, not user-accessible. Allocates the level-0 table if needed; false when out of
/// memory. The caller flushes the TLB entry.
pub fn map_kernel_page(va: usize, pa: usize, level0_tables: &mut Vec<Frame>) -> bool {
    let root = KERNEL_ROOT_ENTRIES
        .lock()
        .iter()
        .find(|(i, _)| *i == (va >> 30) & 0x1ff)
        .map(|&(_, e)| e);
    let Some(root_pte) = root else { return false };
    let l1 = PageTable::words_at((root_pte >> 10) << 12);
    let i1 = (va >> 21) & 0x1ff;
    if l1[i1] & PteFlags::V.bits() == 0 {
        let Some(f) = frame::alloc_kernel() else {
            return false;
        };
        l1[i1] = ((f.pa() >> 12) << 10) | PteFlags::V.bits();
        level0_tables.push(f);
    }
    let l0 = PageTable::words_at((l1[i1] >> 10) << 12);
    l0[(va >> 12) & 0x1ff] = leaf(
        pa,
        PteFlags::R | PteFlags::W | PteFlags::G | PteFlags::A | PteFlags::D,
    );
    true
}

/// Remove the mappings of kernel pages `vas` (in window subtrees, ascending) and flush their
/// TLB entries on every hart: one remote fence for the whole batch, since each costs an
/// interrupt of every other hart (per page, the commit that reused 32 MiB of pages a reader
/// had left resident sent 8192 of them, 0.3 s; issue 44's two writers). The caller frees the
/// frames only after this returned.
pub fn unmap_kernel_pages(vas: &[usize]) {
    let (Some(&first), Some(&last)) = (vas.first(), vas.last()) else {
        return;
    };
    {
        let roots = KERNEL_ROOT_ENTRIES.lock();
        for &va in vas {
            let Some(&(_, root_pte)) = roots.iter().find(|(i, _)| *i == (va >> 30) & 0x1ff) else {
                continue;
            };
            let l1 = PageTable::words_at((root_pte >> 10) << 12);
            let e1 = l1[(va >> 21) & 0x1ff];
            if e1 & PteFlags::V.bits() == 0 {
                continue;
            }
            let l0 = PageTable::words_at((e1 >> 10) << 12);
            l0[(va >> 12) & 0x1ff] = 0;
        }
    }
    // The remote fence waits for the other harts: not under the root entries' lock.
    crate::arch::hart::flush_tlb_range(first, last + PAGE_SIZE);
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
    /// The last user page [`PageTable::translate`] found and its leaf entry: a system call
    /// that reuses a buffer (a read loop) finds it again without the three-level walk, about
    /// 40 instructions of every small read or write. Every method that changes an entry
    /// forgets it ([`NO_PAGE`]), so it never disagrees with the table; nothing else writes
    /// user entries (they are private to this file).
    last: (usize, usize),
}

/// [`PageTable::last`] when it holds no page (no user page starts there).
const NO_PAGE: usize = usize::MAX;

impl PageTable {
    pub fn new() -> Option<Self> {
        let mut root = frame::alloc()?;
        let words = Self::words(&mut root);
        for &(i, e) in KERNEL_ROOT_ENTRIES.lock().iter() {
            words[i] = e;
        }
        Some(PageTable {
            root,
            tables: Vec::new(),
            last: (NO_PAGE, 0),
        })
    }

    fn words(f: &mut Frame) -> &mut [usize] {
        // SAFETY: a frame is 4096 bytes, page-aligned, owned; viewed as 512 page-table entries.
        unsafe { core::slice::from_raw_parts_mut(f.va() as *mut usize, 512) }
    }

    fn words_at(pa: usize) -> &'static mut [usize] {
        // SAFETY: `pa` is a page-table frame owned by some `PageTable` (reached through a valid
        // non-leaf entry), in the direct map; the kernel is single-threaded while it edits tables.
        unsafe { core::slice::from_raw_parts_mut(phys_to_virt(pa) as *mut usize, 512) }
    }

    /// Remove every user mapping and free the user subtrees (exit): allocates nothing.
    pub fn clear_user(&mut self) {
        self.last.0 = NO_PAGE;
        let words = Self::words(&mut self.root);
        words[..256].fill(0);
        self.tables.clear();
        crate::arch::hart::flush_user(self.satp(), None);
    }

    pub fn satp(&self) -> usize {
        (8 << 60) | (self.root.pa() >> 12)
    }

    pub fn activate(&self) {
        crate::arch::hart::switch_satp(self.satp());
    }

    /// The leaf entry slot for the user address `va`, creating intermediate tables if
    /// `create`. `None` for an upper-half (kernel) address.
    fn slot(&mut self, va: usize, create: bool) -> Option<&'static mut usize> {
        if va >= super::USER_END {
            return None;
        }
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
        self.last.0 = NO_PAGE;
        match self.slot(va, true) {
            Some(s) => {
                let was_valid = *s & PteFlags::V.bits() != 0;
                *s = leaf(pa, flags | PteFlags::A | PteFlags::D);
                if was_valid {
                    // A remap (a copy-on-write break, a page made writable): another hart
                    // running a thread of this space may cache the old entry.
                    crate::arch::hart::flush_user(self.satp(), Some(va));
                }
                true
            }
            None => false,
        }
    }

    pub fn unmap(&mut self, va: usize) {
        self.unmap_many(core::iter::once(va));
    }

    /// Unmap many user pages with one TLB flush at the end. Under QEMU every `sfence.vma`
    /// empties the whole software TLB and ends the translation block, so a flush per page
    /// made unmapping 64 MiB (16384 pages) take about 0.1 s of a TCG guest's time.
    pub fn unmap_many(&mut self, vas: impl IntoIterator<Item = usize>) {
        self.last.0 = NO_PAGE;
        let mut cleared = 0usize;
        let mut last = 0;
        for va in vas {
            if let Some(s) = self.slot(va, false) {
                *s = 0;
                cleared += 1;
                last = va;
            }
        }
        self.flush(cleared, last);
    }

    /// Change the permission bits of a mapped page.
    pub fn set_flags(&mut self, va: usize, flags: PteFlags) {
        self.set_flags_many(core::iter::once((va, flags)));
    }

    /// Change the permission bits of many mapped pages, with one TLB flush at the end.
    pub fn set_flags_many(&mut self, pages: impl IntoIterator<Item = (usize, PteFlags)>) {
        self.last.0 = NO_PAGE;
        let mut changed = 0usize;
        let mut last = 0;
        for (va, flags) in pages {
            if let Some(s) = self.slot(va, false) {
                if *s & PteFlags::V.bits() != 0 {
                    *s = leaf((*s >> 10) << 12, flags | PteFlags::A | PteFlags::D);
                    changed += 1;
                    last = va;
                }
            }
        }
        self.flush(changed, last);
    }

    /// After `n` entries changed (the last at `va`): flush that page, or everything.
    fn flush(&self, n: usize, va: usize) {
        match n {
            0 => {}
            1 => crate::arch::hart::flush_user(self.satp(), Some(va)),
            _ => crate::arch::hart::flush_user(self.satp(), None),
        }
    }

    /// The frame address and flags of the page holding `va`, if mapped.
    #[inline]
    pub fn translate(&mut self, va: usize) -> Option<(usize, PteFlags)> {
        let page = va & !(PAGE_SIZE - 1);
        let e = if self.last.0 == page {
            self.last.1
        } else {
            let e = self.walk(va)?;
            self.last = (page, e);
            e
        };
        Some(((e >> 10) << 12, PteFlags::from_bits_truncate(e)))
    }

    /// The leaf entries of user address `va`'s page and the pages after it in the same leaf
    /// table (up to 512, the rest of `va`'s 2 MiB), from one walk; `None` if that table does
    /// not exist. Entries may be invalid: the caller checks each.
    pub fn leaf_entries(&self, va: usize) -> Option<&[usize]> {
        if va >= super::USER_END {
            return None;
        }
        let mut table = self.root.pa();
        for shift in [30, 21] {
            let e = Self::words_at(table)[(va >> shift) & 0x1ff];
            // Not valid, or a kernel gigapage (never user memory).
            if e & PteFlags::V.bits() == 0
                || e & (PteFlags::R | PteFlags::W | PteFlags::X).bits() != 0
            {
                return None;
            }
            table = (e >> 10) << 12;
        }
        Some(&Self::words_at(table)[(va >> 12) & 0x1ff..])
    }

    /// The valid leaf entry of user address `va`: the walk of `slot` without its creation
    /// path (every user copy of a page not seen last walks once).
    fn walk(&self, va: usize) -> Option<usize> {
        let e = *self.leaf_entries(va)?.first()?;
        (e & PteFlags::V.bits() != 0).then_some(e)
    }
}

const _: () = assert!(PAGE_SIZE == 4096);
