//! Checked access to user memory: the only way syscalls read or write it.
//!
//! Every user range is validated page by page against the process's areas (with lazy
//! population), so a bad pointer, a kernel address, an unmapped page or a range that wraps
//! around yields `EFAULT` and never a kernel fault. Data moves through the frames' direct-map
//! addresses, so no user mapping needs to be active and SUM stays off.

use alloc::string::String;
use alloc::vec::Vec;

use abi::Errno;

use super::addr_space::AddrSpace;
use super::area::Access;
use super::{page_floor, PAGE_SIZE};

/// Linux's `access_ok`: whether [va, va + len) lies below the top of user space without
/// wrapping. Nothing is looked up: a range can pass and still fault page by page. Calls that
/// take a buffer and a length check this first (EFAULT), before clamping the length to what
/// they will really move, as Linux does.
pub fn range_ok(va: usize, len: usize) -> bool {
    va.checked_add(len)
        .is_some_and(|end| end <= super::USER_END)
}

/// The physical pieces backing the user range [va, va + len), in order, coalesced where
/// frames happen to be contiguous.
pub fn segments(
    space: &mut AddrSpace,
    va: usize,
    len: usize,
    access: Access,
) -> Result<Vec<(usize, usize)>, Errno> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    if len == 0 {
        return Ok(out);
    }
    let end = va.checked_add(len).ok_or(Errno::EFAULT)?;
    let push = |out: &mut Vec<(usize, usize)>, pa: usize, n: usize| match out.last_mut() {
        Some((p, l)) if *p + *l == pa => *l += n,
        _ => out.push((pa, n)),
    };
    // Bytes of the range in the page holding `at`.
    let in_page = |at: usize| (page_floor(at) + PAGE_SIZE).min(end) - at;
    let mut at = va;
    while at < end {
        // The pages mapped for `access` already, from one walk of their leaf table; then
        // the next page the slow way (populated, unshared, or EFAULT).
        let pages = (end - page_floor(at)).div_ceil(PAGE_SIZE);
        let mut page_at = at;
        let mapped = space.mapped_run(at, pages, access, |kva| {
            let n = in_page(page_at);
            push(&mut out, kva + page_at % PAGE_SIZE, n);
            page_at += n;
        });
        at = page_at;
        if mapped == 0 && at < end {
            let n = in_page(at);
            push(&mut out, space.resolve(at, access)?, n);
            at += n;
        }
    }
    crate::counters::add_user_copy(crate::arch::hart::index(), len);
    Ok(out)
}

/// The physical start of the user range [va, va + len) if it is one physical run (what
/// [`segments`] would return as a single piece), `None` if it is not; no allocation, for the
/// small reads and writes whose per-call cost matters. Same checks and errors as `segments`,
/// same counter.
#[inline]
pub fn contiguous(
    space: &mut AddrSpace,
    va: usize,
    len: usize,
    access: Access,
) -> Result<Option<usize>, Errno> {
    // Inline, the common case: inside one page that is mapped for this access already. The
    // out-of-line rest saves many registers for its calls.
    if len > 0 && len <= PAGE_SIZE - (va % PAGE_SIZE) {
        if let Some(kva) = space.mapped_for(va, access) {
            crate::counters::add_user_copy(crate::arch::hart::index(), len);
            return Ok(Some(kva));
        }
    }
    contiguous_slow(space, va, len, access)
}

#[inline(never)]
fn contiguous_slow(
    space: &mut AddrSpace,
    va: usize,
    len: usize,
    access: Access,
) -> Result<Option<usize>, Errno> {
    if len == 0 {
        return Ok(None);
    }
    let end = va.checked_add(len).ok_or(Errno::EFAULT)?;
    let start = space.resolve(va, access)?;
    let mut at = page_floor(va) + PAGE_SIZE;
    while at < end {
        if space.resolve(at, access)? != start + (at - va) {
            return Ok(None);
        }
        at += PAGE_SIZE;
    }
    crate::counters::add_user_copy(crate::arch::hart::index(), len);
    Ok(Some(start))
}

/// The user memory of one range, resolved (and populated) for the system call that asked for
/// it: the kernel slices backing the range, in order, as few as the frames allow. The data
/// path hands these to a file system directly (no copy), so the syscall layer builds no slice
/// itself.
///
/// Why the slices stay valid while the guard lives: they are frames of the current process's
/// address space, which only its threads change, and no other thread of it runs until the
/// system call that made the guard drops it: one hart, kernel code with interrupts off, and
/// the guards are handed only to calls that never sleep (regular files and block devices: the
/// disk is polled), except two. A write to a file may give the CPU away inside dbfs (its
/// writer lock, a barrier's flush: `task::relax`): in a process with several threads the
/// write system call runs under `task::keep_cpu` (no thread is away holding a lock, and its
/// own device waits poll), so nothing else runs until it returns (`syscall::io::as_writer`);
/// with one thread it may give the CPU away. A large read into several pieces gives the CPU
/// away while its device requests are in flight (`task::reading_own_pages`); in a process
/// with several threads it counts itself as reading, and a sibling's munmap, mmap, mprotect,
/// brk, madvise, shmat, shmdt or fork waits until no thread is (`task::changing_space`; a
/// read that finds such a change under way polls). The one change to an address space
/// that another process makes, truncating a file it maps, waits until no thread is away
/// (`file_pages::truncated`). Calls that may sleep
/// (pipes, FIFOs, the terminal, timerfd: `syscall::stream`) move bytes through a kernel
/// buffer and copy to the user's memory only after waking, so a sibling's munmap meanwhile
/// gives EFAULT (threadtest checks it). A guard
/// is neither `Send` nor `Sync`, and every caller keeps it local to one call. Pieces are
/// disjoint frames, so the mutable slices never alias.
pub struct UserPages {
    pieces: Pieces,
    _local: core::marker::PhantomData<*mut u8>,
}

/// The pieces of a [`UserPages`]: one run is kept in place, as a heap allocation and its
/// release cost about 150 instructions, a sixth of a small read's own work.
enum Pieces {
    One([(usize, usize); 1]),
    Many(Vec<(usize, usize)>),
}

impl Pieces {
    fn as_slice(&self) -> &[(usize, usize)] {
        match self {
            Pieces::One(p) => p,
            Pieces::Many(v) => v,
        }
    }
}

impl UserPages {
    /// The guard of the range [va, va + len) for `access`: EFAULT as [`segments`].
    pub fn new(
        space: &mut AddrSpace,
        va: usize,
        len: usize,
        access: Access,
    ) -> Result<Self, Errno> {
        Ok(UserPages {
            pieces: Pieces::Many(segments(space, va, len, access)?),
            _local: core::marker::PhantomData,
        })
    }

    /// The guard of the range if it is one physical run ([`contiguous`]), else `None`; no
    /// heap allocation.
    #[inline]
    pub fn contiguous(
        space: &mut AddrSpace,
        va: usize,
        len: usize,
        access: Access,
    ) -> Result<Option<Self>, Errno> {
        Ok(contiguous(space, va, len, access)?.map(|kva| UserPages {
            pieces: Pieces::One([(kva, len)]),
            _local: core::marker::PhantomData,
        }))
    }

    /// How many pieces the range is made of.
    pub fn piece_count(&self) -> usize {
        self.pieces.as_slice().len()
    }

    /// The range as one slice when it is one piece (no allocation: the small-I/O path).
    pub fn single_mut(&mut self) -> Option<&mut [u8]> {
        match *self.pieces.as_slice() {
            // SAFETY: as in `slices_mut`.
            [(kva, n)] => Some(unsafe { core::slice::from_raw_parts_mut(kva as *mut u8, n) }),
            _ => None,
        }
    }

    /// The pieces, readable.
    pub fn slices(&self) -> Vec<&[u8]> {
        self.pieces
            .as_slice()
            .iter()
            // SAFETY: see the type's docs: frames of the calling process, mapped and not
            // changed by anyone else while the guard lives.
            .map(|&(kva, n)| unsafe { core::slice::from_raw_parts(kva as *const u8, n) })
            .collect()
    }

    /// The pieces, writable.
    pub fn slices_mut(&mut self) -> Vec<&mut [u8]> {
        self.pieces
            .as_slice()
            .iter()
            // SAFETY: as in `slices`; the pieces are disjoint frames and `&mut self` makes
            // this the only borrow of them.
            .map(|&(kva, n)| unsafe { core::slice::from_raw_parts_mut(kva as *mut u8, n) })
            .collect()
    }

    /// Copy `src` into the range from its start (at most the range's length): the bytes moved.
    pub fn fill_from(&mut self, src: &[u8]) -> usize {
        let mut done = 0;
        for dst in self.slices_mut() {
            if done >= src.len() {
                break;
            }
            let k = dst.len().min(src.len() - done);
            dst[..k].copy_from_slice(&src[done..done + k]);
            done += k;
        }
        done
    }
}

/// A user range inside one page mapped already: the guard [`UserPages`] is for any range,
/// this one for the small-I/O path (no list of pieces, so nothing to drop). The same rules as
/// for [`UserPages`] keep its slice valid.
pub struct UserRun {
    kva: usize,
    len: usize,
    _local: core::marker::PhantomData<*mut u8>,
}

impl UserRun {
    /// The range if it lies inside one page that is mapped for `access` already, else
    /// `None` (nothing is looked up or mapped beyond the page table): what a caller holding
    /// the process's lock for another reason tries first. Counted as a user copy when
    /// resolved, as by [`contiguous`] (a call that then fails still counts it).
    #[inline]
    pub fn mapped(space: &mut AddrSpace, va: usize, len: usize, access: Access) -> Option<Self> {
        if len == 0 || len > PAGE_SIZE - (va % PAGE_SIZE) {
            return None;
        }
        let kva = space.mapped_for(va, access)?;
        crate::counters::add_user_copy(crate::arch::hart::index(), len);
        Some(UserRun {
            kva,
            len,
            _local: core::marker::PhantomData,
        })
    }

    /// The range, writable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in `UserPages::slices_mut`: a frame of the calling process, mapped and
        // not changed by anyone else while the guard lives; `&mut self` is the only borrow.
        unsafe { core::slice::from_raw_parts_mut(self.kva as *mut u8, self.len) }
    }
}

/// Copy user memory [va, va + buf.len()) into `buf`.
pub fn copy_in(space: &mut AddrSpace, va: usize, buf: &mut [u8]) -> Result<(), Errno> {
    let mut done = 0;
    for (pa, n) in segments(space, va, buf.len(), Access::Read)? {
        // SAFETY: `segments` returned frames owned by `space` covering exactly this range.
        let src = unsafe { core::slice::from_raw_parts(pa as *const u8, n) };
        buf[done..done + n].copy_from_slice(src);
        done += n;
    }
    Ok(())
}

/// Copy `data` to user memory at `va`.
pub fn copy_out(space: &mut AddrSpace, va: usize, data: &[u8]) -> Result<(), Errno> {
    let mut done = 0;
    for (pa, n) in segments(space, va, data.len(), Access::Write)? {
        // SAFETY: `segments` returned writable frames owned by `space` covering this range; no
        // kernel reference to them exists while the syscall runs.
        let dst = unsafe { core::slice::from_raw_parts_mut(pa as *mut u8, n) };
        dst.copy_from_slice(&data[done..done + n]);
        done += n;
    }
    Ok(())
}

/// Read a plain value (little-endian u64) from user memory.
pub fn read_u64(space: &mut AddrSpace, va: usize) -> Result<u64, Errno> {
    let mut b = [0u8; 8];
    copy_in(space, va, &mut b)?;
    Ok(u64::from_le_bytes(b))
}

/// Read a NUL-terminated string of at most `max` bytes (including the NUL): `ENAMETOOLONG`
/// past that, `EFAULT` on a bad pointer, `EINVAL` on invalid UTF-8 (paths here are UTF-8).
pub fn read_cstr(space: &mut AddrSpace, va: usize, max: usize) -> Result<String, Errno> {
    let mut bytes = Vec::new();
    let mut at = va;
    loop {
        let pa = space.resolve(at, Access::Read)?;
        let n = page_floor(at) + PAGE_SIZE - at;
        // SAFETY: `resolve` returned the frame holding `at`; [pa, pa + n) stays in that page.
        let chunk = unsafe { core::slice::from_raw_parts(pa as *const u8, n) };
        if let Some(z) = chunk.iter().position(|&b| b == 0) {
            bytes.extend_from_slice(&chunk[..z]);
            break;
        }
        bytes.extend_from_slice(chunk);
        if bytes.len() >= max {
            return Err(Errno::ENAMETOOLONG);
        }
        at = at.checked_add(n).ok_or(Errno::EFAULT)?;
    }
    if bytes.len() >= max {
        return Err(Errno::ENAMETOOLONG);
    }
    String::from_utf8(bytes).map_err(|_| Errno::EINVAL)
}
