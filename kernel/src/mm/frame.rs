//! The frame pool: 4 KiB physical pages for user memory and page tables.
//!
//! Frames are handed out zeroed and owned by a [`Frame`], which returns the page to the pool
//! when dropped, so a page can never be freed twice or leaked by an error path.
//!
//! The last [`KERNEL_RESERVE`] frames are the kernel's: [`alloc`] and [`alloc_for_overwrite`]
//! (user pages, user page tables) stop short of them, and only the disk windows' own paths
//! ([`alloc_kernel_for_overwrite`]: a kvdb page fault, a commit's dirty pages, the window's
//! page tables) may take them. So a program that has taken every frame it can (and is about
//! to be killed for it) cannot leave a file system unable to read its next B+tree page.

use crate::arch::lockcheck::{rank, SpinLock};
use alloc::vec::Vec;

use super::PAGE_SIZE;

struct Pool {
    start: usize,
    next: usize,
    end: usize,
    free: Vec<usize>,
}

static POOL: SpinLock<Pool, { rank::FRAME_POOL }> = SpinLock::new(Pool {
    start: 0,
    next: 0,
    end: 0,
    free: Vec::new(),
});

pub fn init(start: usize, end: usize) {
    let mut p = POOL.lock();
    p.next = super::page_ceil(start);
    p.start = p.next;
    p.end = super::page_floor(end);
}

pub fn free_count() -> usize {
    let p = POOL.lock();
    (p.end - p.next) / PAGE_SIZE + p.free.len()
}

/// Frames handed out and not yet returned.
pub fn used_count() -> usize {
    let p = POOL.lock();
    (p.next - p.start) / PAGE_SIZE - p.free.len()
}

/// An owned physical page; the kernel reaches it through the direct map.
#[derive(Debug)]
pub struct Frame {
    pa: usize,
}

impl Frame {
    /// Its physical address (for page tables and DMA).
    pub fn pa(&self) -> usize {
        self.pa
    }
    /// Its kernel (direct-map) address.
    pub fn va(&self) -> usize {
        super::phys_to_virt(self.pa)
    }
    /// The page's bytes.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: the frame is RAM in the direct map, owned by this `Frame` for its lifetime.
        unsafe { core::slice::from_raw_parts(self.va() as *const u8, PAGE_SIZE) }
    }
    /// The page's bytes, mutably.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `bytes`; `&mut self` makes the access exclusive.
        unsafe { core::slice::from_raw_parts_mut(self.va() as *mut u8, PAGE_SIZE) }
    }
}

impl Frame {
    /// Copy `data` into the page at byte `at` (cut at the page's end) through a frame that
    /// others may hold too (a shared mapping's page, `Arc<Frame>`): the copy is a `memmove`,
    /// so `data` may even be a slice of this very page.
    pub fn write_shared(&self, at: usize, data: &[u8]) {
        let n = data.len().min(PAGE_SIZE.saturating_sub(at));
        // SAFETY: [va + at, va + at + n) lies inside this frame's RAM (checked above). The
        // kernel keeps no slice of a shared page across this call (readers copy out of it
        // under the table's lock, on this one hart), and user mappings do not run while the
        // kernel does; `copy` tolerates overlap with `data`.
        unsafe { core::ptr::copy(data.as_ptr(), (self.va() + at) as *mut u8, n) };
    }
}

impl Drop for Frame {
    fn drop(&mut self) {
        POOL.lock().free.push(self.pa);
    }
}

/// Frames only the kernel's own paths may take (4 MiB: a few of the window's largest fault
/// clusters and a commit's pages).
pub const KERNEL_RESERVE: usize = 1024;

/// A frame whose old contents are left in place, for a caller that overwrites all of it
/// before anyone can read it. `None` when only the kernel's reserve is left.
pub fn alloc_for_overwrite() -> Option<Frame> {
    take(KERNEL_RESERVE)
}

/// As [`alloc_for_overwrite`], for the disk windows: may take the reserve. `None` when
/// memory is exhausted.
pub fn alloc_kernel_for_overwrite() -> Option<Frame> {
    take(0)
}

/// A frame, if more than `keep` would be left free.
fn take(keep: usize) -> Option<Frame> {
    let mut p = POOL.lock();
    if (p.end - p.next) / PAGE_SIZE + p.free.len() <= keep {
        return None;
    }
    let pa = if let Some(pa) = p.free.pop() {
        pa
    } else if p.next < p.end {
        let pa = p.next;
        p.next += PAGE_SIZE;
        pa
    } else {
        return None;
    };
    Some(Frame { pa })
}

/// A zeroed frame, or `None` when only the kernel's reserve is left.
pub fn alloc() -> Option<Frame> {
    let mut f = alloc_for_overwrite()?;
    f.bytes_mut().fill(0);
    Some(f)
}

/// What frees frames when the pool runs dry, tried in order by [`alloc_reclaiming`]:
/// registered at boot by the layers whose caches hold frames (the block layer's disk
/// windows, then mapped files' clean pages), so the pool names none of them.
static RECLAIMERS: spin::Once<&'static [fn()]> = spin::Once::new();

/// Run `f` with the frame pool's lock held: only for the lock checker's planted leaf-order
/// bug (`lockcheck_plant=leaf`), which must panic in a `lockcheck` kernel.
pub fn with_pool_held(f: impl FnOnce()) {
    let _pool = POOL.lock();
    f();
}

/// Register the [`RECLAIMERS`] (once, at boot).
pub fn set_reclaimers(reclaimers: &'static [fn()]) {
    RECLAIMERS.call_once(|| reclaimers);
}

/// As [`alloc_for_overwrite`], but when the pool is empty each registered reclaimer in turn
/// gives frames back before the pool is asked again: for user pages, which may displace
/// cached ones.
pub fn alloc_reclaiming_for_overwrite() -> Option<Frame> {
    if let Some(f) = alloc_for_overwrite() {
        return Some(f);
    }
    for reclaim in RECLAIMERS.get().copied().unwrap_or(&[]) {
        reclaim();
        if let Some(f) = alloc_for_overwrite() {
            return Some(f);
        }
    }
    None
}

/// As [`alloc_reclaiming_for_overwrite`], zeroed.
pub fn alloc_reclaiming() -> Option<Frame> {
    let mut f = alloc_reclaiming_for_overwrite()?;
    f.bytes_mut().fill(0);
    Some(f)
}

/// A zeroed frame for the disk windows' page tables: may take the reserve.
pub fn alloc_kernel() -> Option<Frame> {
    let mut f = alloc_kernel_for_overwrite()?;
    f.bytes_mut().fill(0);
    Some(f)
}
