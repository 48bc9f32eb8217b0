//! Spin locks with a place in the kernel's lock order, and the lock checker.
//!
//! [`SpinLock<T, RANK>`] is `spin::Mutex<T>` with a rank: a hart may take a lock only while
//! every lock it holds has a lower rank (the order is the table in docs/ARCHITECTURE.md,
//! "Locks", and the [`rank`] constants). Built with the `lockcheck` cargo feature
//! (`make test-lockcheck`), every acquisition is checked against the locks this hart holds,
//! and the kernel panics, naming both locks, when
//! - the hart already holds this very lock (it would spin for ever),
//! - it holds a lock of the same or a higher rank (an order violation: two harts taking two
//!   locks in opposite orders deadlock),
//! - it switches to another context (gives the CPU away, sleeps) while holding one
//!   ([`assert_none_held`], called by the scheduler's two switches).
//!
//! Without the feature the checks compile to nothing: `lock` is `spin::Mutex::lock`.
//! The big kernel lock (`hart::lock`) is outside the order: it comes before everything, and
//! kvdb's relaxing locks (`crate::sync::Mutex`), which may be held across a switch, are not
//! spin locks in this sense.

use core::ops::{Deref, DerefMut};

/// The ranks of the checked locks, lowest (taken first) to highest.
pub mod rank {
    /// Below everything: only the lock the checker's planted switch bug holds
    /// (`task::plant_lock_bug`), so the switch path's own locks do not trip the order check.
    pub const PLANTED: u8 = 1;
    /// `task::sched::SCHED`: the run queue and the tables of processes and threads.
    pub const SCHED: u8 = 10;
    /// A thread's own state (`Thread::inner`), taken under `SCHED` by a wake-up.
    pub const THREAD: u8 = 20;
    /// A process's or a thread's queued siginfos (`Process::sig_queue`, `Thread::sig_queue`),
    /// taken under the thread's `inner` by a delivery.
    pub const SIGQUEUE: u8 = 25;
    /// The count of queued siginfos per user (`task::siginfo`), taken under a queue.
    pub const SIGQUEUE_USERS: u8 = 26;
    /// A wait queue's list of sleepers (`task::wait::WaitQueue`).
    pub const WAIT_QUEUE: u8 = 30;
    /// The futex waiters (`task::futex`).
    pub const FUTEX: u8 = 31;
    /// The timed sleepers (`task::wait`'s timer list).
    pub const SLEEP_TIMERS: u8 = 32;
    /// The interval timers (`task::itimer`).
    pub const ITIMERS: u8 = 33;
    /// A saved register context (`Thread::ctx`, a hart's idle context): taken alone, only to
    /// find its address for a switch.
    pub const CONTEXT: u8 = 40;
}

/// A spin lock of rank `RANK` (see the module documentation).
pub struct SpinLock<T: ?Sized, const RANK: u8> {
    lock: spin::Mutex<T>,
}

impl<T, const RANK: u8> SpinLock<T, RANK> {
    pub const fn new(value: T) -> Self {
        SpinLock {
            lock: spin::Mutex::new(value),
        }
    }
}

impl<T: Default, const RANK: u8> Default for SpinLock<T, RANK> {
    fn default() -> Self {
        Self::new(T::default())
    }
}

impl<T: ?Sized, const RANK: u8> SpinLock<T, RANK> {
    /// Take the lock (checked first, in `lockcheck` builds).
    #[inline]
    pub fn lock(&self) -> SpinGuard<'_, T, RANK> {
        #[cfg(feature = "lockcheck")]
        check::acquire(self.addr(), RANK);
        SpinGuard {
            guard: self.lock.lock(),
            #[cfg(feature = "lockcheck")]
            addr: self.addr(),
        }
    }

    #[cfg(feature = "lockcheck")]
    fn addr(&self) -> usize {
        self as *const Self as *const () as usize
    }
}

/// A held [`SpinLock`]; dropping it releases the lock.
pub struct SpinGuard<'a, T: ?Sized, const RANK: u8> {
    guard: spin::MutexGuard<'a, T>,
    #[cfg(feature = "lockcheck")]
    addr: usize,
}

impl<T: ?Sized, const RANK: u8> Deref for SpinGuard<'_, T, RANK> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        &self.guard
    }
}

impl<T: ?Sized, const RANK: u8> DerefMut for SpinGuard<'_, T, RANK> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        &mut self.guard
    }
}

#[cfg(feature = "lockcheck")]
impl<T: ?Sized, const RANK: u8> Drop for SpinGuard<'_, T, RANK> {
    fn drop(&mut self) {
        check::release(self.addr);
    }
}

/// Panic if this hart holds a checked spin lock (`what`: the switch about to happen). A no-op
/// without the `lockcheck` feature.
#[inline]
pub fn assert_none_held(what: &str) {
    #[cfg(feature = "lockcheck")]
    check::none_held(what);
    #[cfg(not(feature = "lockcheck"))]
    let _ = what;
}

/// Whether this kernel checks its locks (the `lockcheck` feature), for the boot line.
pub const ENABLED: bool = cfg!(feature = "lockcheck");

#[cfg(feature = "lockcheck")]
mod check {
    use core::sync::atomic::AtomicUsize;
    use core::sync::atomic::Ordering::Relaxed;

    use crate::arch::hart::{self, MAX_HARTS};

    /// The most checked locks one hart holds at once.
    const DEPTH: usize = 16;

    /// Per hart, the checked locks it holds (address and rank, in the order taken) and how
    /// many. Only the hart itself touches its row (interrupts are off in the kernel; a kernel
    /// trap nested in a critical section runs on the same hart and pops what it pushes).
    struct Held {
        addr: [AtomicUsize; DEPTH],
        rank: [AtomicUsize; DEPTH],
        n: AtomicUsize,
    }

    #[allow(clippy::declare_interior_mutable_const)]
    const EMPTY: Held = Held {
        addr: [const { AtomicUsize::new(0) }; DEPTH],
        rank: [const { AtomicUsize::new(0) }; DEPTH],
        n: AtomicUsize::new(0),
    };
    static HELD: [Held; MAX_HARTS] = [EMPTY; MAX_HARTS];

    pub fn acquire(addr: usize, rank: u8) {
        let me = hart::index();
        let h = &HELD[me];
        let n = h.n.load(Relaxed);
        for i in 0..n {
            let (a, r) = (h.addr[i].load(Relaxed), h.rank[i].load(Relaxed));
            if a == addr {
                // Forget it first: the panic's own printing must not trip the checker.
                h.n.store(0, Relaxed);
                panic!(
                    "lockcheck: hart {} takes spin lock {:#x} (rank {}) it already holds",
                    me, addr, rank
                );
            }
            if r >= rank as usize {
                h.n.store(0, Relaxed);
                panic!(
                    "lockcheck: hart {} takes spin lock {:#x} of rank {} while holding {:#x} of rank {} (lock order: docs/ARCHITECTURE.md, Locks)",
                    me, addr, rank, a, r
                );
            }
        }
        assert!(n < DEPTH, "lockcheck: hart {} holds {} spin locks", me, n);
        h.addr[n].store(addr, Relaxed);
        h.rank[n].store(rank as usize, Relaxed);
        h.n.store(n + 1, Relaxed);
    }

    pub fn release(addr: usize) {
        let h = &HELD[hart::index()];
        let n = h.n.load(Relaxed);
        // Usually the last one taken; guards may also be dropped out of order.
        if let Some(i) = (0..n).rev().find(|&i| h.addr[i].load(Relaxed) == addr) {
            for j in i..n - 1 {
                h.addr[j].store(h.addr[j + 1].load(Relaxed), Relaxed);
                h.rank[j].store(h.rank[j + 1].load(Relaxed), Relaxed);
            }
            h.n.store(n - 1, Relaxed);
        }
    }

    pub fn none_held(what: &str) {
        let me = hart::index();
        let h = &HELD[me];
        let n = h.n.load(Relaxed);
        if n != 0 {
            let (a, r) = (h.addr[n - 1].load(Relaxed), h.rank[n - 1].load(Relaxed));
            h.n.store(0, Relaxed);
            panic!(
                "lockcheck: hart {} {} while holding spin lock {:#x} of rank {} ({} held)",
                me, what, a, r, n
            );
        }
    }
}
