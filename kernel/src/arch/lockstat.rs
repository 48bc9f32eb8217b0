//! How often each rank of spin lock was found held, and how long its waiters spun
//! (`/proc/lockstat`): the measurement behind "one shared run queue" (docs/ARCHITECTURE.md,
//! "Harts"). Every [`super::lockcheck::SpinLock`] takes its lock with one try first; only a try
//! that fails comes here, reads the clock around the wait and adds to its rank's two counters,
//! so an uncontended lock costs what it did. Read-write spin locks are not counted.

use core::sync::atomic::AtomicU64;
use core::sync::atomic::Ordering::Relaxed;

/// Ranks run from 0 to 99 (`lockcheck::rank::HEAP`).
const RANKS: usize = 100;

/// Per rank: acquisitions that found the lock held.
static CONTENDED: [AtomicU64; RANKS] = [const { AtomicU64::new(0) }; RANKS];
/// Per rank: timebase ticks spent waiting in those acquisitions.
static WAIT_T: [AtomicU64; RANKS] = [const { AtomicU64::new(0) }; RANKS];

/// Wait for a lock of rank `rank` that a try found held: `take` waits and returns the guard;
/// the wait is counted.
#[cold]
#[inline(never)]
pub fn contended<G>(rank: u8, take: impl FnOnce() -> G) -> G {
    let t0 = super::csr::time();
    let g = take();
    let waited = super::csr::time().wrapping_sub(t0);
    let i = usize::from(rank).min(RANKS - 1);
    CONTENDED[i].fetch_add(1, Relaxed);
    WAIT_T[i].fetch_add(waited, Relaxed);
    g
}

/// The acquisitions of locks of rank `rank` that found it held, and the timebase ticks they
/// waited (`hart::ticks_to_ns`).
pub fn counts(rank: u8) -> (u64, u64) {
    let i = usize::from(rank).min(RANKS - 1);
    (CONTENDED[i].load(Relaxed), WAIT_T[i].load(Relaxed))
}
