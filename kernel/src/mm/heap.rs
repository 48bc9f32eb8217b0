//! The kernel heap: the `talc` allocator over a region of RAM handed over at boot, and the rule
//! that keeps it from running dry under a user program.
//!
//! Rust's `alloc` aborts (here: panics) when the heap cannot serve a request, so no
//! allocation that a user program can repeat without bound may simply happen. The rule:
//! - every allocation a user can drive in unbounded numbers (kernel stacks, pipe and stream
//!   buffers, descriptor slots, address-space areas, record locks) first asks [`admit`] for
//!   its size; `admit` answers ENOMEM unless the heap keeps more than [`reserve`] bytes free
//!   after it. Under pressure it first shrinks the block caches ([`shrink_caches`]) and asks
//!   again;
//! - everything else the kernel allocates on a user's behalf is small and bounded by a limit
//!   that is checked first (one `Process` and `TrapFrame` per process, MAX_PROCS processes;
//!   one `OpenFile` per open file, ENFILE past `file::MAX_OPEN_FILES`; the path and argument
//!   strings of one system call, bounded by PATH_MAX and E2BIG), and the reserve is sized to
//!   hold them all (see ARCHITECTURE.md, "Where memory comes from").

use core::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use abi::Errno;
use talc::{ErrOnOom, Span, Talc, Talck};

use crate::arch::lockcheck::{rank, RawSpin};

/// The allocator: talc (free blocks binned by size, neighbours merged through boundary tags),
/// so a free costs the same however many blocks are free. The buddy allocator used before
/// searched a linear list of free blocks of the freed block's size for its buddy: with
/// thousands of small blocks free (a 64 MiB file mapping's page records after munmap) each
/// free took tens of microseconds, and unmapping that file about a second of a TCG guest.
#[global_allocator]
static HEAP: Talck<RawSpin<{ rank::HEAP }>, ErrOnOom> = Talc::new(ErrOnOom).lock();

/// Bytes [`admit`] never hands out: the allocations that are not checked one by one live here.
static RESERVE: AtomicUsize = AtomicUsize::new(0);

/// Part of the heap kept as the reserve (1/8), and its floor.
const RESERVE_SHARE: usize = 8;
const RESERVE_MIN: usize = 4 << 20;

pub fn init(start: usize, size: usize) {
    // SAFETY: [start, start + size) is RAM past the kernel image that nothing else uses (the
    // frame pool starts after it), given by its direct-map address, and this runs once at boot.
    let claimed = unsafe {
        HEAP.lock()
            .claim(Span::from_base_size(start as *mut u8, size))
    };
    if claimed.is_err() {
        panic!("heap: cannot use {size} bytes at {start:#x}");
    }
    RESERVE.store(
        (size / RESERVE_SHARE).max(RESERVE_MIN).min(size / 2),
        Relaxed,
    );
}

/// The heap's size in bytes.
pub fn total_bytes() -> usize {
    HEAP.lock().get_counters().claimed_bytes
}

/// Bytes the heap has not handed out (some of them may be too fragmented for a large block).
pub fn free_bytes() -> usize {
    HEAP.lock().get_counters().available_bytes
}

/// Bytes kept back from user-driven allocations.
pub fn reserve() -> usize {
    RESERVE.load(Relaxed)
}

fn fits(bytes: usize) -> bool {
    free_bytes() >= reserve().saturating_add(bytes)
}

/// May a user-driven allocation of about `bytes` go ahead? ENOMEM unless the heap keeps its
/// reserve afterwards, after shrinking the block caches if that was needed. Call it with no
/// block-cache lock held (it may take them).
pub fn admit(bytes: usize) -> Result<(), Errno> {
    if fits(bytes) {
        return Ok(());
    }
    shrink_caches();
    if fits(bytes) {
        Ok(())
    } else {
        Err(Errno::ENOMEM)
    }
}

/// What gives memory back under pressure, registered at boot by the layer that owns the
/// caches (the block layer: every block cache forgets its clean blocks).
static SHRINKER: spin::Once<fn()> = spin::Once::new();

/// Register the function [`shrink_caches`] calls (once, at boot).
pub fn set_shrinker(shrink: fn()) {
    SHRINKER.call_once(|| shrink);
}

/// Give memory back under pressure (the registered shrinker; nothing before it is set).
pub fn shrink_caches() {
    if let Some(shrink) = SHRINKER.get() {
        shrink();
    }
}

/// A zeroed buffer of `n` bytes for a user-driven purpose, or ENOMEM ([`admit`], then a
/// fallible reservation, so a fragmented heap is ENOMEM too, never an abort).
pub fn try_zeroed(n: usize) -> Result<alloc::vec::Vec<u8>, Errno> {
    admit(n)?;
    let mut v = alloc::vec::Vec::new();
    v.try_reserve_exact(n).map_err(|_| Errno::ENOMEM)?;
    v.resize(n, 0);
    Ok(v)
}
