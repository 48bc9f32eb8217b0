//! Memory locking (mlock, mlock2, munlock, mlockall, munlockall): which areas of an address
//! space are locked, and faulting their pages in. The system-call layer checks
//! RLIMIT_MEMLOCK and CAP_IPC_LOCK; this kernel has no swap and never takes a mapped page
//! away from a process, so a locked page stays where it is by construction: what locking
//! changes is that its pages are mapped now (not at first touch) and that they count in
//! `VmLck` and against the limit.

use alloc::vec::Vec;

use abi::Errno;

use super::addr_space::AddrSpace;
use super::area::{Access, Lock, Perm};
use super::PAGE_SIZE;

impl AddrSpace {
    /// Bytes of the locked areas (`VmLck`).
    pub fn locked_bytes(&self) -> usize {
        self.areas
            .values()
            .filter(|a| a.lock != Lock::None)
            .map(|a| a.end - a.start)
            .sum()
    }

    /// Bytes of [start, end) that are locked already (they do not count again against
    /// RLIMIT_MEMLOCK when the range is locked).
    pub fn locked_bytes_in(&self, start: usize, end: usize) -> usize {
        self.areas_in(start, end)
            .filter(|a| a.lock != Lock::None)
            .map(|a| a.end.min(end) - a.start.max(start))
            .sum()
    }

    /// Lock (`how`: Populated or OnFault) or unlock (`Lock::None`) the pages of [start, end)
    /// (page-aligned). ENOMEM if part of the range is not mapped; EAGAIN if a page could not
    /// be faulted in for want of memory.
    pub fn set_lock(&mut self, start: usize, end: usize, how: Lock) -> Result<(), Errno> {
        self.covered(start, end)?;
        if start == end {
            return Ok(());
        }
        self.change_areas(start, end, |a| a.lock = how)?;
        if how == Lock::Populated {
            self.populate_range(start, end)?;
        }
        Ok(())
    }

    /// Lock or unlock every area (mlockall MCL_CURRENT, munlockall).
    pub fn set_lock_all(&mut self, how: Lock) -> Result<(), Errno> {
        let ranges: Vec<(usize, usize)> = self.areas.values().map(|a| (a.start, a.end)).collect();
        for a in self.areas.values_mut() {
            a.lock = how;
        }
        if how == Lock::Populated {
            for (start, end) in ranges {
                self.populate_range(start, end)?;
            }
        }
        Ok(())
    }

    /// Fault in the pages of [start, end) as Linux's `populate_vma_page_range`: for writing
    /// in a writable private mapping (a copy-on-write page becomes the process's own), for
    /// reading elsewhere; an inaccessible area (PROT_NONE) is left alone. EAGAIN when memory
    /// runs out (Linux's answer for mlock), ENOMEM for a page that cannot be mapped (a file
    /// page past the end of its file).
    pub(super) fn populate_range(&mut self, start: usize, end: usize) -> Result<(), Errno> {
        let mut va = start;
        while va < end {
            let Some(a) = self.area_of(va) else {
                va += PAGE_SIZE;
                continue;
            };
            let stop = a.end.min(end);
            if a.perm.is_empty() {
                va = stop;
                continue;
            }
            let shared = a.shared.is_some() || a.file.as_ref().is_some_and(|f| !f.private);
            let access = if a.perm.contains(Perm::W) && !shared {
                Access::Write
            } else {
                Access::Read
            };
            while va < stop {
                self.resolve_page(va, access).map_err(|e| match e {
                    Errno::ENOMEM => Errno::EAGAIN,
                    _ => Errno::ENOMEM,
                })?;
                va += PAGE_SIZE;
            }
        }
        Ok(())
    }
}
