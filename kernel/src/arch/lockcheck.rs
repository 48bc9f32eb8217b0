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
//! Without the feature the checks compile to nothing: `lock` is `spin::Mutex::try_lock`, and
//! `spin::Mutex::lock` after it when the try fails, counted (`arch::lockstat`, `/proc/lockstat`).
//! The big kernel lock (`hart::lock`) is outside the order: it comes before everything, and
//! kvdb's relaxing locks (`crate::sync::Mutex`), which may be held across a switch, are not
//! spin locks in this sense.

use core::ops::{Deref, DerefMut};

/// The ranks of the checked locks, lowest (taken first) to highest.
pub mod rank {
    /// Below everything: only the lock the checker's planted switch bug holds
    /// (`task::plant_lock_bug`), so the switch path's own locks do not trip the order check.
    pub const PLANTED: u8 = 1;
    /// The POSIX timers (`task::ptimer`): a timer's expiry looks at its queued signal under it.
    pub const POSIX_TIMERS: u8 = 5;
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

    // The leaf locks: below the task layer's nothing is taken but the locks after them here.
    /// The mount table (`fs::mount_table`), a read-write lock.
    pub const MOUNT_TABLE: u8 = 50;
    /// The boot disks' claims, windows and caches (`mounts`).
    pub const MOUNT_DISKS: u8 = 51;
    /// A process's root directory path (`Process::root`).
    pub const PROCESS_ROOT: u8 = 52;
    /// The next disk window's address (`drivers::window`), held while a window is set up.
    pub const WINDOW_BASE: u8 = 54;
    /// The list of disk windows (`drivers::window`).
    pub const WINDOW_LIST: u8 = 55;
    /// The asynchronous I/O requests waiting for a worker (`syscall::aio_workers`), held only to
    /// queue or take one.
    pub const AIO_QUEUE: u8 = 56;
    /// The list of block caches (`drivers::block_cache`).
    pub const BLOCK_CACHE_LIST: u8 = 57;
    /// One disk window's state (resident frames, dirty pages, streams): held across the
    /// device request of a fault or a sync, so the disk comes after it.
    pub const WINDOW: u8 = 60;
    /// One block cache's blocks (FAT32's disks): held across its device requests.
    pub const BLOCK_CACHE: u8 = 61;
    /// A virtio-blk disk's transport and queue (`drivers::virtio_blk`).
    pub const DISK: u8 = 70;
    /// The kernel's shared root entries (`mm::page_table`), taken to map a window page.
    pub const KERNEL_PAGE_TABLE: u8 = 75;
    /// The frame pool (`mm::frame`): a frame is freed under any of the locks above.
    pub const FRAME_POOL: u8 = 80;
    /// The terminal's line discipline (`tty`): echo prints under it.
    pub const TTY: u8 = 85;
    /// The kernel's random generator (`arch::random`).
    pub const RANDOM: u8 = 86;
    /// The list of periodic write-back work (`fs::writeback`), held only to copy it.
    pub const PERIODIC: u8 = 87;
    /// The console (`arch::console`): a line is printed under it.
    pub const CONSOLE: u8 = 95;
    /// The kernel heap (`mm::heap`): anything may allocate under any lock.
    pub const HEAP: u8 = 99;

    /// Every rank with its name, as `/proc/lockstat` prints it.
    pub const NAMES: [(u8, &str); 28] = [
        (PLANTED, "PLANTED"),
        (POSIX_TIMERS, "POSIX_TIMERS"),
        (SCHED, "SCHED"),
        (THREAD, "THREAD"),
        (SIGQUEUE, "SIGQUEUE"),
        (SIGQUEUE_USERS, "SIGQUEUE_USERS"),
        (WAIT_QUEUE, "WAIT_QUEUE"),
        (FUTEX, "FUTEX"),
        (SLEEP_TIMERS, "SLEEP_TIMERS"),
        (ITIMERS, "ITIMERS"),
        (CONTEXT, "CONTEXT"),
        (MOUNT_TABLE, "MOUNT_TABLE"),
        (MOUNT_DISKS, "MOUNT_DISKS"),
        (PROCESS_ROOT, "PROCESS_ROOT"),
        (WINDOW_BASE, "WINDOW_BASE"),
        (WINDOW_LIST, "WINDOW_LIST"),
        (AIO_QUEUE, "AIO_QUEUE"),
        (BLOCK_CACHE_LIST, "BLOCK_CACHE_LIST"),
        (WINDOW, "WINDOW"),
        (BLOCK_CACHE, "BLOCK_CACHE"),
        (DISK, "DISK"),
        (KERNEL_PAGE_TABLE, "KERNEL_PAGE_TABLE"),
        (FRAME_POOL, "FRAME_POOL"),
        (TTY, "TTY"),
        (RANDOM, "RANDOM"),
        (PERIODIC, "PERIODIC"),
        (CONSOLE, "CONSOLE"),
        (HEAP, "HEAP"),
    ];
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
        // One try first: a lock found held is waited for, and counted, in `lockstat`.
        let guard = match self.lock.try_lock() {
            Some(g) => g,
            None => super::lockstat::contended(RANK, || self.lock.lock()),
        };
        SpinGuard {
            guard,
            #[cfg(feature = "lockcheck")]
            addr: self.addr(),
        }
    }

    /// Take the lock if it is free. A try never waits, so it is checked neither for order
    /// nor for a lock this hart holds already (the try fails then); a lock it takes is
    /// recorded, so a switch while it is held is caught.
    #[inline]
    pub fn try_lock(&self) -> Option<SpinGuard<'_, T, RANK>> {
        #[cfg(feature = "lockcheck")]
        check::try_acquire(self.addr(), RANK);
        let guard = self.lock.try_lock();
        #[cfg(feature = "lockcheck")]
        if guard.is_none() {
            check::release(self.addr());
        }
        Some(SpinGuard {
            guard: guard?,
            #[cfg(feature = "lockcheck")]
            addr: self.addr(),
        })
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

/// A read-write spin lock of rank `RANK`: readers and the writer are checked alike, as for
/// [`SpinLock`] (a hart that reads twice is reported too: the lock must not rely on the
/// kind a caller took to stay out of a deadlock).
pub struct SpinRwLock<T: ?Sized, const RANK: u8> {
    lock: spin::RwLock<T>,
}

impl<T, const RANK: u8> SpinRwLock<T, RANK> {
    pub const fn new(value: T) -> Self {
        SpinRwLock {
            lock: spin::RwLock::new(value),
        }
    }
}

impl<T: ?Sized, const RANK: u8> SpinRwLock<T, RANK> {
    #[inline]
    pub fn read(&self) -> Held<spin::RwLockReadGuard<'_, T>> {
        #[cfg(feature = "lockcheck")]
        check::acquire(self.addr(), RANK);
        Held {
            guard: self.lock.read(),
            #[cfg(feature = "lockcheck")]
            addr: self.addr(),
        }
    }

    #[inline]
    pub fn write(&self) -> Held<spin::RwLockWriteGuard<'_, T>> {
        #[cfg(feature = "lockcheck")]
        check::acquire(self.addr(), RANK);
        Held {
            guard: self.lock.write(),
            #[cfg(feature = "lockcheck")]
            addr: self.addr(),
        }
    }

    #[cfg(feature = "lockcheck")]
    fn addr(&self) -> usize {
        self as *const Self as *const () as usize
    }
}

/// A guard of a [`SpinRwLock`]; dropping it releases the lock.
pub struct Held<G> {
    guard: G,
    #[cfg(feature = "lockcheck")]
    addr: usize,
}

impl<G: Deref> Deref for Held<G> {
    type Target = G::Target;
    #[inline]
    fn deref(&self) -> &G::Target {
        &self.guard
    }
}

impl<G: DerefMut> DerefMut for Held<G> {
    #[inline]
    fn deref_mut(&mut self) -> &mut G::Target {
        &mut self.guard
    }
}

#[cfg(feature = "lockcheck")]
impl<G> Drop for Held<G> {
    fn drop(&mut self) {
        check::release(self.addr);
    }
}

/// A raw spin lock of rank `RANK` for code that takes a `lock_api` lock type (the heap's
/// allocator, `talc::Talck`): checked like [`SpinLock`].
pub struct RawSpin<const RANK: u8> {
    lock: spin::Mutex<()>,
}

// SAFETY: `lock`, `try_lock` and `unlock` are `spin::Mutex<()>`'s own `lock_api` ones (which
// give mutual exclusion), with the checker's bookkeeping before and after.
unsafe impl<const RANK: u8> lock_api::RawMutex for RawSpin<RANK> {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = RawSpin {
        lock: <spin::Mutex<()> as lock_api::RawMutex>::INIT,
    };
    type GuardMarker = lock_api::GuardSend;

    #[inline]
    fn lock(&self) {
        #[cfg(feature = "lockcheck")]
        check::acquire(self as *const Self as usize, RANK);
        lock_api::RawMutex::lock(&self.lock);
    }

    #[inline]
    fn try_lock(&self) -> bool {
        #[cfg(feature = "lockcheck")]
        check::try_acquire(self as *const Self as usize, RANK);
        let got = lock_api::RawMutex::try_lock(&self.lock);
        #[cfg(feature = "lockcheck")]
        if !got {
            check::release(self as *const Self as usize);
        }
        got
    }

    #[inline]
    unsafe fn unlock(&self) {
        #[cfg(feature = "lockcheck")]
        check::release(self as *const Self as usize);
        // SAFETY: the caller holds the lock (`lock_api`'s contract).
        unsafe { lock_api::RawMutex::unlock(&self.lock) };
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

/// Tell the checker where the hart slots are (`hart::init_boot`, before any other hart
/// starts): a hart is found by its `tp`, which points at its slot. Until then, and for a `tp`
/// outside them, nothing is checked (the console and the heap are used earlier).
pub fn set_hart_slots(base: usize, size: usize, count: usize) {
    #[cfg(feature = "lockcheck")]
    check::set_slots(base, size, count);
    #[cfg(not(feature = "lockcheck"))]
    let _ = (base, size, count);
}

/// Whether this kernel checks its locks (the `lockcheck` feature), for the boot line.
pub const ENABLED: bool = cfg!(feature = "lockcheck");

#[cfg(feature = "lockcheck")]
mod check {
    use core::sync::atomic::AtomicUsize;
    use core::sync::atomic::Ordering::Relaxed;

    /// The most harts the checker keeps a row for (at least `hart::MAX_HARTS`, checked at
    /// [`set_slots`]).
    const MAX_HARTS: usize = 8;

    /// The first hart slot's address, and the size of one (0 until `set_slots`).
    static SLOT_BASE: AtomicUsize = AtomicUsize::new(0);
    static SLOT_SIZE: AtomicUsize = AtomicUsize::new(0);

    pub fn set_slots(base: usize, size: usize, count: usize) {
        assert!(
            count <= MAX_HARTS,
            "lockcheck: rows for {} harts, not {}",
            MAX_HARTS,
            count
        );
        SLOT_SIZE.store(size, Relaxed);
        SLOT_BASE.store(base, Relaxed);
    }

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

    /// This hart's index, or `None` before `tp` holds its slot (the console and the heap
    /// are used before `hart::init_boot`).
    fn me() -> Option<usize> {
        let tp: usize;
        // SAFETY: reading a register.
        unsafe { core::arch::asm!("mv {}, tp", out(reg) tp) };
        let (base, size) = (SLOT_BASE.load(Relaxed), SLOT_SIZE.load(Relaxed));
        (size != 0
            && tp >= base
            && tp < base + MAX_HARTS * size
            && (tp - base).is_multiple_of(size))
        .then(|| (tp - base) / size)
    }

    /// Record a lock taken by a try (no order check: a try never waits).
    pub fn try_acquire(addr: usize, rank: u8) {
        if let Some(me) = me() {
            push(me, addr, rank);
        }
    }

    /// Add `addr` to the locks hart `me` holds.
    fn push(me: usize, addr: usize, rank: u8) {
        let h = &HELD[me];
        let n = h.n.load(Relaxed);
        if n >= DEPTH {
            h.n.store(0, Relaxed);
            panic!("lockcheck: hart {} holds {} spin locks", me, n);
        }
        h.addr[n].store(addr, Relaxed);
        h.rank[n].store(rank as usize, Relaxed);
        h.n.store(n + 1, Relaxed);
    }

    pub fn acquire(addr: usize, rank: u8) {
        let Some(me) = me() else { return };
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
        push(me, addr, rank);
    }

    pub fn release(addr: usize) {
        let Some(me) = me() else { return };
        let h = &HELD[me];
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
        let Some(me) = me() else { return };
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
