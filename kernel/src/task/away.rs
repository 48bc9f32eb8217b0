//! Giving the CPU away inside the kernel (task layer): waits for a lock or a device during
//! which a thread may yield while it holds locks ([`relax`], [`away`]), and the rules that
//! keep user pages in hand valid meanwhile ([`reading_own_pages`], [`changing_space`],
//! [`keep_cpu`]). The block layer waits through these, never through scheduler internals.

use core::sync::atomic::AtomicUsize;
use core::sync::atomic::Ordering::{Relaxed, SeqCst};

use super::sched::{current_ptr, current_ref, yield_counted, AWAY, SCHED};
use crate::arch::hart::{Padded, MAX_HARTS};

/// System calls running without the big kernel lock ([`unlocked`]), counted in the slot of
/// the hart each began on (a call that waited may end on another: the sum stays right);
/// [`keep_cpu`] waits until every slot is 0. A slot per hart, not one count: harts reading
/// files side by side would otherwise pass one cache line back and forth twice per call.
static UNLOCKED: [Padded<AtomicUsize>; MAX_HARTS] =
    [const { Padded(AtomicUsize::new(0)) }; MAX_HARTS];
/// Callers of [`keep_cpu`] under way: while one is, no call starts without the lock.
static KEEPING: AtomicUsize = AtomicUsize::new(0);
/// How many times a call without the big kernel lock spins on a held lock before it takes
/// the big kernel lock and waits as any other kernel code ([`relax`]).
const UNLOCKED_SPINS: usize = 4096;
/// Per hart: the spins of the call it runs without the big kernel lock ([`relax`]).
static SPINS: [Padded<AtomicUsize>; MAX_HARTS] = [const { Padded(AtomicUsize::new(0)) }; MAX_HARTS];

/// Wait a moment for a lock another task holds, or a device request: give the CPU to a
/// ready thread that may run on this hart if there is one (the caller stays runnable and
/// tries again when its turn comes); else, with several harts, let the others have the big
/// kernel lock a moment (the holder may be a thread another hart runs, pinned there, or
/// waiting at a trap's entry); else spin once. Under the big kernel lock (one hart in the
/// kernel at a time) a kernel lock is only ever found held when its holder gave the CPU or
/// the big kernel lock away (waiting for a device flush, or here): spinning would never let it
/// finish.
pub fn relax() {
    // It may take the run queue's lock, give the big kernel lock away or switch: a spin lock
    // held here (the run queue's above all) would wait for itself.
    crate::arch::lockcheck::assert_none_held("waits for a relaxing lock");
    let me = crate::arch::hart::index();
    if !crate::arch::hart::holds_lock() {
        // A call without the big kernel lock ([`unlocked`]): the holder is most likely a
        // call running on another hart, done in a moment. One that is not (asleep in a
        // device wait, or waiting for the big kernel lock itself) needs a hart that runs
        // the scheduler: after a while, take the lock and wait as the kernel does.
        if SPINS[me].fetch_add(1, Relaxed) < UNLOCKED_SPINS {
            core::hint::spin_loop();
            return;
        }
        lock_kernel();
    }
    let others = {
        let s = SCHED.lock();
        // The scheduler's own stack (no current thread) cannot give the CPU away: with one
        // hart the lock's holder, a thread away in a device wait, would never run again.
        // `run::idle` leaves the work that takes such locks until nobody is away; reaching
        // here is a kernel bug, better named than hung. (With several harts another hart
        // may run the holder once this one lets it have the big kernel lock, below.)
        assert!(
            s.cur().is_some() || AWAY.load(Relaxed) == 0 || crate::arch::hart::count() > 1,
            "the scheduler waits for a lock held by a thread away in a device wait"
        );
        s.cur().is_some() && s.has_ready_for(me)
    };
    if others {
        away(|| yield_counted(true));
        return;
    }
    // The holder may be asleep until its device request completes: wake it if it has.
    super::run::service_devices();
    if crate::arch::hart::count() > 1 {
        away(crate::arch::hart::let_waiters_in);
    } else {
        core::hint::spin_loop();
    }
}

/// Run `f`, a wait during which the thread may give the CPU away ([`relax`]) while it holds
/// locks, counted in [`AWAY`] (a device flush's whole wait, not only its yields).
pub fn away<R>(f: impl FnOnce() -> R) -> R {
    AWAY.fetch_add(1, Relaxed);
    let r = f();
    AWAY.fetch_sub(1, Relaxed);
    r
}

/// Whether the current thread may give the CPU away while it waits for a device: not while
/// it runs [`keep_cpu`]'s work (it then polls the device instead).
pub fn may_give_cpu_away() -> bool {
    let t = current_ptr();
    // SAFETY: as in `current_ref`: the running thread, alive while it runs.
    !t.is_null() && !unsafe { &*t }.keep_cpu.load(Relaxed) && crate::arch::hart::holds_lock()
}

/// Run `f`, a read that hands the user's pages to a file system, so that its device waits
/// may give the CPU away ([`may_wait_away_reading`]) when nothing can unmap those pages
/// meanwhile. In a process with one thread nothing can (a `vfork` child has its own copy of
/// the space; another process's truncate unmaps only when no thread is [`away`]). With
/// several, the read counts itself in the process's `readers_away`, and a sibling's change
/// to the address space waits until none is away ([`changing_space`]); a read that finds a
/// change under way polls instead. The caller must hold no lock that a task may wait for by
/// spinning.
pub fn reading_own_pages<R>(f: impl FnOnce() -> R) -> R {
    let me = current_ref();
    let p = &me.process;
    let shared = p.inner.lock().threads.len() > 1;
    if shared && !start_reading(p) {
        return f();
    }
    me.own_pages.store(true, Relaxed);
    let r = f();
    me.own_pages.store(false, Relaxed);
    if shared {
        p.readers_away.fetch_sub(1, SeqCst);
    }
    r
}

/// Run `f`, a read into kernel memory the caller owns for the whole call (an asynchronous
/// read's buffer in a kernel worker): as [`reading_own_pages`], its device waits may give the
/// CPU away, and no address space is involved.
pub fn reading_kernel_buffer<R>(f: impl FnOnce() -> R) -> R {
    let me = current_ref();
    me.own_pages.store(true, Relaxed);
    let r = f();
    me.own_pages.store(false, Relaxed);
    r
}

/// Count the caller among `p`'s readers into its own pages ([`reading_own_pages`]), unless a
/// change to the address space is under way ([`changing_space`]): false then, nothing counted.
/// Counted, then looked (the changer the other way round, both sequentially consistent): one
/// of the two sees the other.
fn start_reading(p: &super::Process) -> bool {
    p.readers_away.fetch_add(1, SeqCst);
    if p.space_changing.load(SeqCst) != 0 {
        p.readers_away.fetch_sub(1, SeqCst);
        return false;
    }
    true
}

/// Run `f`, a system call that unmaps, remaps or shares (fork) pages of the current
/// process's address space, once no sibling thread is away inside a read into its pages
/// ([`reading_own_pages`]), and with no new one going away until `f` returns. The caller
/// holds no lock: the readers it waits for may need one.
pub fn changing_space<R>(f: impl FnOnce() -> R) -> R {
    let p = &current_ref().process;
    p.space_changing.fetch_add(1, SeqCst);
    while p.readers_away.load(SeqCst) != 0 {
        yield_counted(true);
    }
    let r = f();
    p.space_changing.fetch_sub(1, SeqCst);
    r
}

/// Whether the current thread's device read may give the CPU away: inside
/// [`reading_own_pages`], and not in [`keep_cpu`]. Also a call without the big kernel lock
/// (the only kernel code a thread runs without it is [`unlocked`]'s): it takes the lock for
/// the wait ([`lock_for_wait`]) once its requests are at the device, and lets it go after
/// ([`end_wait`]).
pub fn may_wait_away_reading() -> bool {
    let t = current_ptr();
    // SAFETY: as in `current_ref`: the running thread, alive while it runs.
    !t.is_null() && {
        let t = unsafe { &*t };
        t.own_pages.load(Relaxed) && !t.keep_cpu.load(Relaxed)
    }
}

/// Run `f` without giving the CPU away: first wait (giving it away) until no thread is away
/// holding locks, then run `f` with the current thread marked so that its device waits poll.
/// Nothing else then runs until `f` returns: no lock `f` takes can be found held, and no
/// other thread of the process can change its address space. For system calls of a
/// multi-threaded process that hand the user's pages to a file system
/// ([`crate::mm::uaccess::UserPages`]). The caller must hold no lock: an away thread may be
/// waiting for it.
pub fn keep_cpu<R>(f: impl FnOnce() -> R) -> R {
    // No call starts without the big kernel lock from here on, and those under way finish
    // (they need nothing this hart holds; one that took the lock to wait gets it when this
    // thread yields): they take locks `f` may need, and may hold pages of this process.
    KEEPING.fetch_add(1, SeqCst);
    // An away thread is ready (it gave the CPU away with `yield`), so this lets it run.
    while AWAY.load(Relaxed) != 0 || UNLOCKED.iter().any(|u| u.load(SeqCst) != 0) {
        yield_counted(true);
    }
    let me = current_ref();
    me.keep_cpu.store(true, Relaxed);
    let r = f();
    me.keep_cpu.store(false, Relaxed);
    KEEPING.fetch_sub(1, SeqCst);
    r
}

/// Run `f`, a system call's work, on this hart without the big kernel lock, which it does not
/// hold: `None` (and `f` not run) while a [`keep_cpu`] caller is under way, or while a change
/// to this process's address space is ([`changing_space`]). `f` counts as reading into the
/// process's pages meanwhile (a sibling's munmap, mprotect or fork waits until it is done), so
/// user pages it found mapped stay so. Its device waits poll ([`may_give_cpu_away`] is false
/// without the lock), except a read's, which takes the lock to sleep and lets it go after
/// ([`lock_for_wait`], [`end_wait`]); a lock it finds held makes it spin a while, then take
/// the big kernel lock and wait as other kernel code ([`relax`]): the caller returns to user
/// mode through the locked path then ([`crate::arch::hart::holds_lock`]). `f` must not sleep
/// otherwise.
pub fn unlocked<R>(f: impl FnOnce() -> R) -> Option<R> {
    let me = crate::arch::hart::index();
    // Counted, then looked (`keep_cpu` the other way round, both sequentially consistent):
    // one of the two sees the other.
    UNLOCKED[me].fetch_add(1, SeqCst);
    if KEEPING.load(SeqCst) != 0 {
        UNLOCKED[me].fetch_sub(1, SeqCst);
        return None;
    }
    let p = &current_ref().process;
    if !start_reading(p) {
        UNLOCKED[me].fetch_sub(1, SeqCst);
        return None;
    }
    SPINS[me].store(0, Relaxed);
    let r = f();
    p.readers_away.fetch_sub(1, SeqCst);
    UNLOCKED[me].fetch_sub(1, SeqCst);
    Some(r)
}

/// Whether another thread is ready to run on this hart: a caller that could poll for a
/// device sleeps instead and lets it run.
pub fn others_ready_here() -> bool {
    SCHED.lock().has_ready_for(crate::arch::hart::index())
}

/// Take the big kernel lock to sleep in a device wait, if this hart does not hold it (a call
/// in [`unlocked`] whose requests are at the device): whether it took it, for [`end_wait`].
#[track_caller]
pub fn lock_for_wait() -> bool {
    if crate::arch::hart::holds_lock() {
        return false;
    }
    lock_kernel();
    true
}

/// After a device wait that [`lock_for_wait`] took the big kernel lock for (`took`): let it go
/// again, so the call goes on without it ([`unlocked`]) on whichever hart now runs it.
pub fn end_wait(took: bool) {
    if took {
        crate::arch::hart::unlock_to_go_on();
    }
}

/// Take the big kernel lock if this hart does not hold it (a call in [`unlocked`] that must
/// now wait, or do work that needs the lock); it then runs as any other kernel code until it
/// returns to user mode. The caller holds no spin lock.
#[track_caller]
pub fn lock_kernel() {
    if !crate::arch::hart::holds_lock() {
        crate::counters::add_unlocked_took_lock();
        crate::arch::hart::lock();
    }
}
