//! Sleeping and waking: wait queues and timed sleeps.
//!
//! A thread that must wait for something (a pipe's data, a terminal line, a child's exit, a
//! deadline) puts itself on a [`WaitQueue`] (or the timer list) and blocks; whoever makes the
//! condition true wakes the queue. Kernel code runs with interrupts off on one hart, so between
//! the check of a condition and the block nothing else runs: no wake-up is lost. Wake-ups may be
//! spurious (a signal, a stale queue entry): every sleeper re-checks its condition in a loop,
//! and a sleeper that finds a signal pending returns `EINTR` (or asks for a restart).

use alloc::sync::Arc;
use alloc::vec::Vec;

use crate::arch::lockcheck::{rank, SpinLock};

use super::process::Thread;
use super::sched::{block_current, current_thread, wake};

/// Threads waiting for one kind of event.
pub struct WaitQueue {
    waiters: SpinLock<Vec<Arc<Thread>>, { rank::WAIT_QUEUE }>,
}

impl Default for WaitQueue {
    fn default() -> Self {
        Self::new()
    }
}

impl WaitQueue {
    pub const fn new() -> Self {
        WaitQueue {
            waiters: SpinLock::new(Vec::new()),
        }
    }

    /// Block the current thread until this queue is woken (or a signal or the timer wakes it
    /// first). The caller re-checks its condition afterwards.
    pub fn sleep(&self) {
        self.sleep_until(None)
    }

    /// As [`Self::sleep`], but wake at the latest at `deadline` (monotonic ns), if given.
    pub fn sleep_until(&self, deadline: Option<u64>) {
        self.prepare_to_wait();
        self.sleep_prepared(deadline);
    }

    /// The first half of a sleep whose condition a waker may make true from another hart or
    /// an interrupt: queue the current thread here, THEN check the condition, then either
    /// [`Self::sleep_prepared`] or [`Self::finish_wait`]. A wake-up between the check and the
    /// block finds the thread queued. (Under the big kernel lock the waker cannot run between
    /// them at all; the order keeps the wait correct without that.)
    pub fn prepare_to_wait(&self) {
        let me = current_thread();
        let mut w = self.waiters.lock();
        if !w.iter().any(|p| Arc::ptr_eq(p, &me)) {
            w.push(me);
        }
    }

    /// Block the current thread, queued by [`Self::prepare_to_wait`], until this queue is
    /// woken (or a signal, or `deadline` in monotonic ns if given).
    pub fn sleep_prepared(&self, deadline: Option<u64>) {
        let me = current_thread();
        if !self.waiters.lock().iter().any(|p| Arc::ptr_eq(p, &me)) {
            return; // woken since `prepare_to_wait`
        }
        drop(me);
        if let Some(d) = deadline {
            add_timer(d, current_thread());
        }
        block_current();
    }

    /// The condition held after [`Self::prepare_to_wait`]: leave the queue without sleeping.
    pub fn finish_wait(&self) {
        let me = current_thread();
        self.waiters.lock().retain(|p| !Arc::ptr_eq(p, &me));
    }

    /// Make the longest waiting sleeper runnable: false if nobody waits.
    pub fn wake_one(&self) -> bool {
        let first = {
            let mut w = self.waiters.lock();
            if w.is_empty() {
                return false;
            }
            w.remove(0)
        };
        wake(&first);
        true
    }

    /// Make every waiter runnable.
    pub fn wake_all(&self) {
        let waiters = core::mem::take(&mut *self.waiters.lock());
        for p in &waiters {
            wake(p);
        }
    }

    /// Make every waiter runnable, to run on this hart once the caller sleeps (Linux's
    /// `WF_SYNC`): no idle hart is woken for a waiter that may run here.
    pub fn wake_all_sync(&self) {
        let waiters = core::mem::take(&mut *self.waiters.lock());
        for p in &waiters {
            super::sched::wake_sync(p);
        }
    }
}

/// Threads in ppoll/pselect6 with nothing ready yet: one queue for every descriptor, woken on
/// any change a poller may wait for ([`poll_wake`]); each poller then looks again.
pub static POLLERS: WaitQueue = WaitQueue::new();

/// Something a poller may wait for changed (pipe data or room, terminal input, a timerfd).
pub fn poll_wake() {
    POLLERS.wake_all();
}

/// Threads sleeping until a deadline: (deadline in monotonic ns, thread).
static TIMERS: SpinLock<Vec<(u64, Arc<Thread>)>, { rank::SLEEP_TIMERS }> =
    SpinLock::new(Vec::new());

fn add_timer(deadline: u64, p: Arc<Thread>) {
    TIMERS.lock().push((deadline, p));
}

/// Sleep until `deadline` (monotonic ns) or until something else wakes the thread (a signal).
pub fn sleep_until(deadline: u64) {
    add_timer(deadline, current_thread());
    block_current();
}

/// Wake every thread whose deadline has passed (the scheduler's idle loop and the timer
/// interrupt call this). Returns the earliest deadline still pending. `idle`: the caller is
/// this hart's idle loop, which then runs the first woken thread it may run (when nothing
/// else is queued for it), so no other hart is woken for that one: an IPI, and a hart that
/// woke only to find the queue empty, held a sleeper's return up by 0.3-0.4 ms under QEMU
/// with two harts (LTP's nanosleep01: a 1 ms sleep's median 1347 us, 1097 us now).
pub fn wake_expired(now: u64, idle: bool) -> Option<u64> {
    let due: Vec<Arc<Thread>> = {
        let mut t = TIMERS.lock();
        let mut due = Vec::new();
        t.retain(|(d, p)| {
            if *d <= now {
                due.push(p.clone());
                false
            } else {
                true
            }
        });
        due
    };
    let here = crate::arch::hart::index();
    // Only while nothing else queued would run here first.
    let mut mine = idle && !super::sched::SCHED.lock().has_ready_for(here);
    for p in &due {
        if mine && p.allows(here) {
            super::sched::wake_sync(p);
            mine = false;
        } else {
            wake(p);
        }
    }
    TIMERS.lock().iter().map(|(d, _)| *d).min()
}

/// Forget the timers of thread `tid` (gone, or done with its timed sleep), so the list does
/// not keep it alive.
pub fn drop_timers(tid: usize) {
    TIMERS.lock().retain(|(_, t)| t.tid != tid);
}
