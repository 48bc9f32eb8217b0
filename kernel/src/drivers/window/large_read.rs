//! Large reads of a disk window ([`DiskWindow::read_into_pieces`]): straight from the disk
//! into the caller's pages, or, for a stretch read again, out of pages the window keeps.
//!
//! The window remembers the page ranges large reads took from the disk ([`State::read_once`]).
//! A large read inside one of them is a read again: if its pages are resident it copies them
//! out, with no device request; if not, and another large read of the window is under way on
//! another hart, it reads them into fresh frames, keeps them in the window, and copies them
//! out. Several readers of cached files then copy side by side on their harts, where their
//! device requests would queue at the one emulated disk (QEMU serves a disk on one thread). A
//! lone reader keeps nothing: under QEMU's TCG a copy of 1 MiB by the CPU costs about what the
//! device's read does, so keeping pages would make its second read slower and its later ones
//! no faster (docs/BENCHMARKS.md, "Large reads read again"). With one hart nothing is kept.

use alloc::vec::Vec;
use core::sync::atomic::Ordering::Relaxed;
use core::sync::atomic::{AtomicBool, AtomicUsize};

use vfs::{VfsError, VfsResult, SECTOR_SIZE};

use super::{DiskWindow, Load, LoadFor, State};
use crate::mm::frame::{self, Frame};
use crate::mm::PAGE_SIZE;

/// Large reads remembered ([`State::read_once`]): page ranges a large read took from the disk
/// without keeping them. A sequential reader's ranges join into one, so this bounds the
/// separate stretches (random 1 MiB reads) a second pass still finds.
pub(super) const READ_ONCE_RANGES: usize = 256;

/// A read again keeps its pages only while this fraction of the frame pool (1/N) stays free
/// after it: the rest is left to processes and to the B+tree's own pages.
const KEEP_FREE_DIVISOR: usize = 4;

/// Whether a large read of a stretch read before keeps its pages (boot parameter
/// `dbfs_keep_rereads`, `/proc/sys/vm/dbfs_keep_rereads`; [`DiskWindow::read_into_pieces`]).
static KEEP_REREADS: AtomicBool = AtomicBool::new(true);

/// Let large reads read again keep their pages in the window (the default), or send every
/// large read of pages not all resident to the disk.
pub fn set_keep_rereads(on: bool) {
    KEEP_REREADS.store(on, Relaxed);
}

/// See [`set_keep_rereads`].
pub fn keep_rereads() -> bool {
    KEEP_REREADS.load(Relaxed)
}

/// A large read counted in [`DiskWindow::large_reads`] while it lives.
struct LargeReads<'a> {
    count: &'a AtomicUsize,
    others: bool,
}

impl<'a> LargeReads<'a> {
    fn enter(count: &'a AtomicUsize) -> Self {
        let before = count.fetch_add(1, Relaxed);
        LargeReads {
            count,
            others: before > 0 && crate::arch::hart::count() > 1,
        }
    }

    /// Whether another large read of the window was under way when this one began, with
    /// several harts.
    fn others(&self) -> bool {
        self.others
    }
}

impl Drop for LargeReads<'_> {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Relaxed);
    }
}

/// How a large read goes ([`DiskWindow::read_into_pieces`]).
enum LargeRead {
    /// Every page is resident: copy them.
    Resident,
    /// Read again: read the pages into these frames, keep them, copy them.
    Keep {
        id: u64,
        first: usize,
        frames: Vec<Frame>,
    },
    /// From the disk: straight into the caller's buffer, or, with `dirty` (a page of the
    /// range is newer in the window than on the disk), piece by piece.
    Disk { dirty: bool },
}

impl State {
    /// Whether pages `[first, end)` lie inside one range a large read took from the disk.
    fn read_before(&self, first: usize, end: usize) -> bool {
        self.read_once.iter().any(|&(f, e)| f <= first && end <= e)
    }

    /// Remember that a large read took pages `[first, end)` from the disk: joined to the
    /// newest range it touches or continues, else a range of its own (the oldest forgotten
    /// past [`READ_ONCE_RANGES`]).
    fn remember_read(&mut self, first: usize, end: usize) {
        if let Some(r) = self
            .read_once
            .iter_mut()
            .rev()
            .find(|r| r.0 <= end && first <= r.1)
        {
            *r = (r.0.min(first), r.1.max(end));
            return;
        }
        if self.read_once.len() == READ_ONCE_RANGES {
            self.read_once.pop_front();
        }
        self.read_once.push_back((first, end));
    }

    /// Forget pages `[first, end)` in the ranges large reads took from the disk: a write
    /// put new bytes there (a file's new chunks land in pages freed by its old ones), and a
    /// first read of them is not a read again.
    pub(super) fn forget_read(&mut self, first: usize, end: usize) {
        if !self.read_once.iter().any(|r| r.0 < end && first < r.1) {
            return;
        }
        let old = core::mem::take(&mut self.read_once);
        for (f, e) in old {
            if e <= first || end <= f {
                self.read_once.push_back((f, e));
                continue;
            }
            for (a, b) in [(f, first), (end, e)] {
                if a < b && self.read_once.len() < READ_ONCE_RANGES {
                    self.read_once.push_back((a, b));
                }
            }
        }
    }
}

impl DiskWindow {
    /// [`Self::read_into`] into the concatenation of `pieces` (the pages of a user buffer): a
    /// large read of a dbfs file. Three ways, chosen under the state lock:
    /// - a read again ([`State::read_once`]: inside a range a large read took from the disk
    ///   before) whose pages are all resident: a copy out of the window, no device request;
    /// - a read again while another large read of the window is under way, with several
    ///   harts, and the frame pool can spare the frames: the pages are read into fresh
    ///   frames, kept in the window, and copied out ([`Self::read_load`]), so the next read
    ///   of them is the copy above. Harts copy side by side, where their requests would
    ///   queue at the one emulated disk (QEMU serves a disk on one thread);
    /// - else one scattered device read straight into the pieces when the range is clean and
    ///   sector-aligned (its wait may give the CPU away:
    ///   [`vfs::BlockDevice::read_scatter_shared`]), else piece by piece, and the range is remembered. A buffer that does not start on a
    ///   page (malloc'ed, as fio's are) has a head and a tail inside sectors; the request
    ///   layer still fills it in place (only a request's total must be whole sectors), so no
    ///   copy is made.
    ///
    /// A lone reader keeps nothing, nor does any reader with one hart (the module's docs).
    /// `dbfs_keep_rereads=0` (boot parameter, `/proc/sys/vm/dbfs_keep_rereads`) turns the
    /// first two ways off.
    ///
    /// The caller's read transaction keeps the range's pages from being reused while this
    /// runs, so bytes read into kept frames are the current ones; a write that reaches one of
    /// the pages meanwhile (a [`Load`]) marks them stale, and they are dropped and the read
    /// goes to the disk. A direct write forgets the pages it writes from the remembered
    /// ranges (new bytes there are not a read again), and drops their resident copies.
    pub fn read_into_pieces(&self, offset: usize, pieces: &mut [&mut [u8]]) -> VfsResult<()> {
        let total: usize = pieces.iter().map(|p| p.len()).sum();
        if total == 0 {
            return Ok(());
        }
        let end = offset
            .checked_add(total)
            .filter(|&e| e <= self.len)
            .ok_or(VfsError::InvalidInput)?;
        let shared = LargeReads::enter(&self.large_reads);
        let plan =
            self.large_read_plan(offset / PAGE_SIZE, end.div_ceil(PAGE_SIZE), shared.others());
        let (copied, dirty) = match plan {
            LargeRead::Resident => (true, false),
            LargeRead::Keep { id, first, frames } => {
                if self.read_load(id, first, frames, LoadFor::Keep)? {
                    (true, false)
                } else {
                    // A write reached the pages meanwhile: the disk, with its dirty pages
                    // looked for again.
                    (false, self.any_dirty(offset, total)?)
                }
            }
            LargeRead::Disk { dirty } => (false, dirty),
        };
        if copied {
            let mut at = offset;
            for piece in pieces.iter_mut() {
                // A page evicted since it was found resident faults in again.
                let src = self.slice(at, piece.len()).ok_or(VfsError::InvalidInput)?;
                piece.copy_from_slice(src);
                at += piece.len();
            }
            crate::counters::add_window_cached(total);
            return Ok(());
        }
        let clean =
            !dirty && offset.is_multiple_of(SECTOR_SIZE) && total.is_multiple_of(SECTOR_SIZE);
        if clean {
            // `InvalidInput`: pieces the device cannot take as they are (it allows too few
            // per request); the range itself was checked above.
            match self
                .dev
                .read_scatter_shared((offset / SECTOR_SIZE) as u64, pieces)
            {
                Err(VfsError::InvalidInput) => {}
                r => {
                    crate::counters::add_window_direct(total);
                    return r;
                }
            }
        }
        let mut at = offset;
        for piece in pieces.iter_mut() {
            self.read_into(at, piece)?;
            at += piece.len();
        }
        Ok(())
    }

    /// How [`Self::read_into_pieces`] reads pages `[first, end)` (see there), decided under
    /// one hold of the state lock (whether a page is dirty included). A read that goes to
    /// the disk is remembered; a read again that will keep its pages has its frames and is
    /// listed as a [`Load`] (faults on its pages wait for it, writes mark it stale).
    fn large_read_plan(&self, first: usize, end: usize, others: bool) -> LargeRead {
        let pages = end - first;
        let mut st = self.state.lock();
        let disk = LargeRead::Disk {
            dirty: st.any_dirty(first, end),
        };
        if !keep_rereads() {
            return disk;
        }
        if !st.read_before(first, end) {
            st.remember_read(first, end);
            return disk;
        }
        if st.frames.range(first..end).count() == pages {
            return LargeRead::Resident;
        }
        if !others {
            return disk;
        }
        let (free, used) = (frame::free_count(), frame::used_count());
        let busy = (first..end).any(|p| st.loading(p) || st.being_written(p));
        if busy || free < pages + (free + used) / KEEP_FREE_DIVISOR {
            return disk;
        }
        let mut frames = Vec::with_capacity(pages);
        for _ in 0..pages {
            match frame::alloc_kernel_for_overwrite() {
                Some(f) => frames.push(f),
                None => return disk,
            }
        }
        let id = st.next_load;
        st.next_load += 1;
        st.loads.push(Load {
            id,
            first,
            pages,
            stale: false,
        });
        LargeRead::Keep { id, first, frames }
    }
}
