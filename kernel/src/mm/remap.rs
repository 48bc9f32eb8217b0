//! `mremap`: resizing and moving a mapping, its pages with it (Linux's semantics; stress-ng's
//! mremap and pagemove stressors, LTP's mremap01-06 and glibc's realloc of large blocks use
//! it).

use alloc::vec::Vec;

use abi::Errno;

use super::addr_space::AddrSpace;
use super::area::{Area, Perm};
use super::{page_ceil, PAGE_SIZE, USER_BASE, USER_END};

impl AddrSpace {
    /// `mremap(old, old_len, new_len, flags, new_addr)` with Linux's semantics: the range
    /// must lie inside one area (EFAULT); shrinking unmaps the tail; growing extends the area
    /// in place when the pages after it are free, else (MREMAP_MAYMOVE) moves it, its pages
    /// with it, to a free range or to `new_addr` (MREMAP_FIXED, which replaces what is
    /// there); MREMAP_DONTUNMAP leaves the old range mapped and empty (private anonymous
    /// areas only, as Linux before 5.13). A moved file mapping keeps its file offsets, a
    /// shared anonymous one its pages. Returns the range's address.
    pub fn mremap(
        &mut self,
        old: usize,
        old_len: usize,
        new_len: usize,
        flags: u32,
        new_addr: usize,
    ) -> Result<usize, Errno> {
        const MAYMOVE: u32 = 1;
        const FIXED: u32 = 2;
        const DONTUNMAP: u32 = 4;
        if flags & !(MAYMOVE | FIXED | DONTUNMAP) != 0
            || !old.is_multiple_of(PAGE_SIZE)
            || (flags & (FIXED | DONTUNMAP) != 0 && flags & MAYMOVE == 0)
            || (flags & DONTUNMAP != 0 && old_len != new_len)
            || new_len == 0
            || old_len == 0
        {
            return Err(Errno::EINVAL);
        }
        if old_len > USER_END || new_len > USER_END - USER_BASE {
            return Err(Errno::ENOMEM);
        }
        let (old_len, new_len) = (page_ceil(old_len), page_ceil(new_len));
        let old_end = old.checked_add(old_len).ok_or(Errno::EFAULT)?;
        let area = self.area_of(old).ok_or(Errno::EFAULT)?;
        if old_end > area.end {
            return Err(Errno::EFAULT);
        }
        if flags & DONTUNMAP != 0 && (area.file.is_some() || area.shared.is_some()) {
            return Err(Errno::EINVAL);
        }
        if flags & FIXED != 0 {
            let fits = new_addr.is_multiple_of(PAGE_SIZE)
                && new_addr >= USER_BASE
                && new_addr.checked_add(new_len).is_some_and(|e| e <= USER_END);
            let apart = new_addr.saturating_add(new_len) <= old || new_addr >= old_end;
            if !fits || !apart {
                return Err(Errno::EINVAL);
            }
            if new_len < old_len {
                self.remove_range(old + new_len, old_end)?;
            }
            self.remove_range(new_addr, new_addr + new_len)?;
            let moved = old_len.min(new_len);
            return self.move_range(&area, old, moved, new_addr, new_len, flags & DONTUNMAP != 0);
        }
        if flags & DONTUNMAP != 0 {
            // Always a move (the lengths are equal), never in place.
            let at = self.free_gap_top_down(new_len)?;
            return self.move_range(&area, old, old_len, at, new_len, true);
        }
        if new_len <= old_len {
            if new_len < old_len {
                self.remove_range(old + new_len, old_end)?;
            }
            return Ok(old);
        }
        let grown_end = old.checked_add(new_len).filter(|&e| e <= USER_END);
        if old_end == area.end {
            if let Some(e) = grown_end.filter(|&e| !self.overlaps(old_end, e)) {
                if let Some(a) = self.areas.get_mut(&area.start) {
                    a.end = e;
                }
                return Ok(old);
            }
        }
        if flags & MAYMOVE == 0 {
            return Err(Errno::ENOMEM);
        }
        let at = self.free_gap_top_down(new_len)?;
        self.move_range(&area, old, old_len, at, new_len, false)
    }

    /// Move `[old, old + len)` of `area`, its pages included, to a new area of `new_len`
    /// bytes at `at` (free), then unmap the old range unless `keep_old` (its pages go
    /// anyway). Returns `at`.
    fn move_range(
        &mut self,
        area: &Area,
        old: usize,
        len: usize,
        at: usize,
        new_len: usize,
        keep_old: bool,
    ) -> Result<usize, Errno> {
        let mut moved = Area {
            start: at,
            end: at + new_len,
            ..area.clone()
        };
        if let Some(fa) = moved.file.as_mut() {
            fa.off0 += (old - fa.va0) as u64;
            fa.va0 = at;
        }
        if let Some((_, base)) = moved.shared.as_mut() {
            // Page k of the object stays page k: its address moves with the range.
            *base = at.wrapping_sub(old.wrapping_sub(*base));
        }
        self.insert_area(moved.clone())?;
        let pages: Vec<usize> = self
            .frames
            .range(old..old + len)
            .map(|(&va, _)| va)
            .collect();
        self.pt.unmap_many(pages.iter().copied());
        for va in pages {
            let Some(m) = self.frames.remove(&va) else {
                continue;
            };
            let to = va - old + at;
            let flags = moved.pte_of(to, Some(&m));
            if self.pt.map(to, m.frame().pa(), flags) {
                self.frames.insert(to, m);
            }
            // A page that found no page-table memory is dropped: an anonymous one reads
            // zeros again, a file one is read again at the next touch.
        }
        if !keep_old {
            self.remove_range(old, old + len)?;
        }
        if moved.perm.contains(Perm::X) {
            crate::arch::hart::fence_i_user(self.pt.satp());
        }
        Ok(at)
    }
}
