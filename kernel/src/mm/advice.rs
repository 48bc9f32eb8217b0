//! What a process says about its memory (madvise) and asks of it (mincore).
//!
//! madvise checks its advice against each area of the range as Linux does, then acts on the
//! advice that changes what a program sees: MADV_DONTNEED and MADV_FREE drop pages (a
//! private page reads back as zeros or from its file, a shared one keeps its data),
//! MADV_DONTFORK and MADV_WIPEONFORK change what a forked child gets (`OnFork`), and their
//! opposites undo them. The rest are hints this kernel has no use for (read-ahead, huge pages,
//! core-dump filtering, page-out), accepted where Linux accepts them.

use alloc::vec::Vec;

use abi::Errno;

use super::addr_space::AddrSpace;
use super::area::{Lock, OnFork};
use super::PAGE_SIZE;

/// Whether madvise knows `advice`. KSM's MADV_MERGEABLE and MADV_UNMERGEABLE and the
/// memory-failure tests MADV_HWPOISON and MADV_SOFT_OFFLINE are not built: EINVAL, as from a
/// Linux built without them.
pub fn known(advice: u32) -> bool {
    use abi::fcntl::*;
    matches!(
        advice,
        MADV_NORMAL
            | MADV_RANDOM
            | MADV_SEQUENTIAL
            | MADV_WILLNEED
            | MADV_DONTNEED
            | MADV_FREE
            | MADV_REMOVE
            | MADV_DONTFORK
            | MADV_DOFORK
            | MADV_HUGEPAGE
            | MADV_NOHUGEPAGE
            | MADV_DONTDUMP
            | MADV_DODUMP
            | MADV_WIPEONFORK
            | MADV_KEEPONFORK
            | MADV_COLD
            | MADV_PAGEOUT
            | MADV_POPULATE_READ
            | MADV_POPULATE_WRITE
            | MADV_DONTNEED_LOCKED
            | MADV_COLLAPSE
    )
}

impl AddrSpace {
    /// madvise of [start, end) (page-aligned, not empty; `advice` is [`known`]). Every area
    /// of the range must take the advice (EINVAL: dropping the pages of a locked area, MADV_FREE
    /// or MADV_WIPEONFORK outside private anonymous memory, MADV_REMOVE outside a shared
    /// mapping; EACCES: MADV_REMOVE of a mapping that may not write its file), then it applies
    /// to the mapped parts, and a part of the range that is not mapped makes the answer ENOMEM
    /// (as Linux's). MADV_REMOVE of a shared mapping (punching a hole in what backs it) is not
    /// built: EOPNOTSUPP.
    pub fn advise(&mut self, start: usize, end: usize, advice: u32) -> Result<(), Errno> {
        use abi::fcntl::*;
        let mut hole = false;
        let mut at = start;
        for a in self.areas_in(start, end) {
            hole |= a.start > at;
            at = a.end;
            let locked = a.lock != Lock::None;
            let private_anon = a.file.is_none() && a.shared.is_none();
            let shared = a.shared.is_some() || a.file.as_ref().is_some_and(|f| !f.private);
            match advice {
                MADV_DONTNEED if locked => return Err(Errno::EINVAL),
                MADV_FREE if locked || !private_anon => return Err(Errno::EINVAL),
                MADV_WIPEONFORK | MADV_KEEPONFORK if !private_anon => return Err(Errno::EINVAL),
                MADV_REMOVE if locked || !shared => return Err(Errno::EINVAL),
                MADV_REMOVE if a.file.as_ref().is_some_and(|f| !f.may_write) => {
                    return Err(Errno::EACCES)
                }
                MADV_REMOVE => return Err(Errno::EOPNOTSUPP),
                _ => {}
            }
        }
        hole |= at < end;
        let (from, to) = (start, end);
        match advice {
            MADV_DONTNEED | MADV_FREE | MADV_DONTNEED_LOCKED => {
                self.forget_pages(from, to, |_| true)
            }
            MADV_DONTFORK => self.mark_fork(from, to, OnFork::Drop)?,
            MADV_WIPEONFORK => self.mark_fork(from, to, OnFork::Wipe)?,
            MADV_DOFORK | MADV_KEEPONFORK => {
                let undo = if advice == MADV_DOFORK {
                    OnFork::Drop
                } else {
                    OnFork::Wipe
                };
                self.mark_fork_if(from, to, undo)?
            }
            _ => {}
        }
        if hole {
            Err(Errno::ENOMEM)
        } else {
            Ok(())
        }
    }

    /// Give the mapped parts of [start, end) the fork behaviour `how`.
    fn mark_fork(&mut self, start: usize, end: usize, how: OnFork) -> Result<(), Errno> {
        for (s, e) in self.mapped_parts(start, end) {
            self.change_areas(s, e, |a| a.on_fork = how)?;
        }
        Ok(())
    }

    /// MADV_DOFORK and MADV_KEEPONFORK: the parts marked `undo` are copied at fork again.
    fn mark_fork_if(&mut self, start: usize, end: usize, undo: OnFork) -> Result<(), Errno> {
        for (s, e) in self.mapped_parts(start, end) {
            self.change_areas(s, e, |a| {
                if a.on_fork == undo {
                    a.on_fork = OnFork::Copy;
                }
            })?;
        }
        Ok(())
    }

    /// The stretches of [start, end) that areas cover.
    fn mapped_parts(&self, start: usize, end: usize) -> Vec<(usize, usize)> {
        self.areas_in(start, end)
            .map(|a| (a.start.max(start), a.end.min(end)))
            .collect()
    }

    /// Whether any page of [start, end) is in a locked area (msync's MS_INVALIDATE: EBUSY).
    pub fn locked_in(&self, start: usize, end: usize) -> bool {
        self.areas_in(start, end).any(|a| a.lock != Lock::None)
    }

    /// mincore: one byte per page of [start, end) (page-aligned), 1 when the page is in
    /// memory: mapped here, or a page its file's table holds (Linux looks at the page cache
    /// for file mappings). ENOMEM if a page lies outside every area.
    pub fn mincore(&self, start: usize, end: usize) -> Result<Vec<u8>, Errno> {
        let mut out = Vec::with_capacity((end - start) / PAGE_SIZE);
        let mut va = start;
        while va < end {
            let a = self.area_of(va).ok_or(Errno::ENOMEM)?;
            while va < a.end.min(end) {
                let in_file = a
                    .file
                    .as_ref()
                    .is_some_and(|fa| fa.table.holds(fa.index(va)));
                out.push(u8::from(self.frames.contains_key(&va) || in_file));
                va += PAGE_SIZE;
            }
        }
        Ok(out)
    }
}
