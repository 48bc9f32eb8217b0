//! The locks kvdb (and dbfs above it) use: blocking OS locks on the host, spin locks in the kernel.
//!
//! With the `std` feature (the host: FUSE tool, tests, benchmarks) these wrap `std::sync`, so a
//! thread that waits for a lock sleeps instead of spinning. That matters on the host: a FUSE
//! daemon runs several threads on few cores, and a spinning waiter can burn the time slice the
//! lock holder needs (while the holder waits for an `fdatasync`, for instance). Without `std`
//! (the kernel: one hart, no preemption inside the kernel) they are `spin` locks whose waiters
//! call a hook the kernel sets ([`set_relax`]) between attempts.
//!
//! The API is the `spin` one (no poisoning): `lock()`, `try_lock() -> Option`, `read()`,
//! `write()`. A panic while a std lock is held does not poison it for the others: kvdb keeps
//! its own `poisoned` flag where a half-done operation matters.

#[cfg(feature = "std")]
mod imp {
    use std::sync::{PoisonError, TryLockError};

    /// Holds a [`Mutex`] locked; unlocks when dropped.
    pub type MutexGuard<'a, T> = std::sync::MutexGuard<'a, T>;
    /// Holds an [`RwLock`] shared (one of possibly many readers); released when dropped.
    pub type RwLockReadGuard<'a, T> = std::sync::RwLockReadGuard<'a, T>;
    /// Holds an [`RwLock`] exclusively; released when dropped.
    pub type RwLockWriteGuard<'a, T> = std::sync::RwLockWriteGuard<'a, T>;

    /// A mutual-exclusion lock (blocking, never poisoned).
    #[derive(Debug, Default)]
    pub struct Mutex<T: ?Sized>(std::sync::Mutex<T>);

    impl<T> Mutex<T> {
        /// An unlocked mutex guarding `value`.
        pub const fn new(value: T) -> Self {
            Mutex(std::sync::Mutex::new(value))
        }
        /// The guarded value, consuming the mutex.
        pub fn into_inner(self) -> T {
            self.0.into_inner().unwrap_or_else(PoisonError::into_inner)
        }
    }

    impl<T: ?Sized> Mutex<T> {
        /// Wait (sleeping) until the mutex is free, then hold it.
        pub fn lock(&self) -> MutexGuard<'_, T> {
            self.0.lock().unwrap_or_else(PoisonError::into_inner)
        }
        /// Hold the mutex if it is free now; `None` if another thread holds it.
        pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
            match self.0.try_lock() {
                Ok(g) => Some(g),
                Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
                Err(TryLockError::WouldBlock) => None,
            }
        }
        /// The guarded value through an exclusive borrow: no locking needed.
        pub fn get_mut(&mut self) -> &mut T {
            self.0.get_mut().unwrap_or_else(PoisonError::into_inner)
        }
    }

    /// A readers-writer lock (blocking, never poisoned).
    #[derive(Debug, Default)]
    pub struct RwLock<T: ?Sized>(std::sync::RwLock<T>);

    impl<T> RwLock<T> {
        /// An unlocked readers-writer lock guarding `value`.
        pub const fn new(value: T) -> Self {
            RwLock(std::sync::RwLock::new(value))
        }
    }

    impl<T: ?Sized> RwLock<T> {
        /// Wait until no writer holds the lock, then hold it shared.
        pub fn read(&self) -> RwLockReadGuard<'_, T> {
            self.0.read().unwrap_or_else(PoisonError::into_inner)
        }
        /// Wait until nobody holds the lock, then hold it exclusively.
        pub fn write(&self) -> RwLockWriteGuard<'_, T> {
            self.0.write().unwrap_or_else(PoisonError::into_inner)
        }
    }

    /// What a thread waiting for another's work (not a lock) does between two looks: yield.
    pub fn relax() {
        std::thread::yield_now();
    }
}

#[cfg(not(feature = "std"))]
mod imp {
    pub use spin::mutex::TicketMutexGuard as MutexGuard;
    pub use spin::{RwLock, RwLockReadGuard, RwLockWriteGuard};

    /// What a waiter for a held [`Mutex`] does between attempts (see [`set_relax`]).
    static RELAX: spin::Once<fn()> = spin::Once::new();

    /// Set what a thread waiting for a held [`Mutex`] does between two attempts: the kernel
    /// gives the CPU to another task, since on its one hart a held lock means the holder
    /// is a task that gave up the CPU while holding it (waiting for a device flush), and
    /// spinning would never let it finish. Unset, a waiter spins. Set once; later calls are
    /// ignored.
    pub fn set_relax(f: fn()) {
        RELAX.call_once(|| f);
    }

    /// What a thread waiting for another's work (not a lock: e.g. a write that sleeps while
    /// the device reads its pages) does between two looks: what a lock's waiter does
    /// ([`set_relax`]).
    pub fn relax() {
        match RELAX.get() {
            Some(relax) => relax(),
            None => core::hint::spin_loop(),
        }
    }

    /// A mutual-exclusion lock. Over a ticket lock: word-sized atomics, where `spin::Mutex`
    /// is a `bool` set by `compare_exchange` and RISC-V has no byte-sized atomics, so every
    /// lock of it shifts and masks around the atomic. A waiter does not queue for a ticket:
    /// it tries again after each [`set_relax`] call, so a waiter that gave up the CPU holds
    /// no place the holder's successors wait behind.
    #[derive(Debug, Default)]
    pub struct Mutex<T: ?Sized>(spin::mutex::TicketMutex<T>);

    impl<T> Mutex<T> {
        /// An unlocked mutex guarding `value`.
        pub const fn new(value: T) -> Self {
            Mutex(spin::mutex::TicketMutex::new(value))
        }
        /// The guarded value, consuming the mutex.
        pub fn into_inner(self) -> T {
            self.0.into_inner()
        }
    }

    impl<T: ?Sized> Mutex<T> {
        /// Wait until the mutex is free (relaxing as [`set_relax`] says), then hold it.
        ///
        /// Taken with `try_lock` (one compare-and-swap), never by taking a ticket after
        /// seeing the lock free: another hart may take it between the look and the ticket,
        /// and whoever holds a ticket waits for its turn by spinning, without relaxing. In the
        /// kernel that waiter may hold the big kernel lock, which the mutex's holder may need
        /// before it can let go (a read that holds dbfs's `state` while it waits for the disk
        /// takes it to sleep): both harts would then spin for ever.
        #[inline]
        pub fn lock(&self) -> MutexGuard<'_, T> {
            match self.0.try_lock() {
                Some(guard) => guard,
                None => self.lock_held(),
            }
        }

        /// [`Mutex::lock`] of a mutex found held, out of line (the common path stays a leaf).
        #[cold]
        #[inline(never)]
        fn lock_held(&self) -> MutexGuard<'_, T> {
            loop {
                relax();
                if let Some(guard) = self.0.try_lock() {
                    return guard;
                }
            }
        }

        /// Hold the mutex if it is free now; `None` if it is held.
        #[inline]
        pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
            self.0.try_lock()
        }
        /// The guarded value through an exclusive borrow: no locking needed.
        pub fn get_mut(&mut self) -> &mut T {
            self.0.get_mut()
        }
    }
}

#[cfg(not(feature = "std"))]
pub use imp::set_relax;
pub use imp::{relax, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};
