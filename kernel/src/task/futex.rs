//! Futexes: `FUTEX_WAIT` / `FUTEX_WAKE` (and their bitset forms), between processes too.
//!
//! A futex is named by the kernel (direct-map) address of its word, that is by the physical
//! byte. Two processes that map one shared page (a `MAP_SHARED` mapping across fork, a
//! System V segment) meet at the same futex: glibc's process-shared mutexes and condition
//! variables (fio keeps its semaphores in shared memory) work between them. A private page's
//! address is unique to its process, so private futexes need no separate name space.
//!
//! The syscall layer resolves the user address and reads the word. Kernel code is not
//! preempted, so no wake-up can slip in between its comparison with the expected value and
//! [`wait`] going to sleep: the comparison and the sleep are atomic, as futex(2) requires.
//!
//! Lock order: the waiter table's lock is a leaf.

use alloc::sync::Arc;
use alloc::vec::Vec;

use abi::Errno;
use spin::Mutex;

use super::Process;

struct Waiter {
    key: usize,
    bitset: u32,
    proc: Arc<Process>,
    /// Set by [`wake`] when it takes the waiter off the table.
    woken: Arc<core::sync::atomic::AtomicBool>,
}

static WAITERS: Mutex<Vec<Waiter>> = Mutex::new(Vec::new());

/// Sleep on the futex `key` until a [`wake`] whose bitset meets `bitset`, the monotonic
/// `deadline` (`ETIMEDOUT`) or a signal (`ERESTARTSYS`). The caller has checked the word.
pub fn wait(key: usize, bitset: u32, deadline: Option<u64>) -> Result<(), Errno> {
    let me = super::current_process();
    let woken = Arc::new(core::sync::atomic::AtomicBool::new(false));
    WAITERS.lock().push(Waiter {
        key,
        bitset,
        proc: me.clone(),
        woken: woken.clone(),
    });
    let pid = me.pid;
    drop(me);
    let result = loop {
        if woken.load(core::sync::atomic::Ordering::Relaxed) {
            break Ok(());
        }
        if deadline.is_some_and(|d| crate::arch::time::monotonic_ns() >= d) {
            break Err(Errno::ETIMEDOUT);
        }
        if super::signal::pending() {
            break Err(super::signal::ERESTARTSYS);
        }
        match deadline {
            Some(d) => super::wait::sleep_until(d),
            None => super::block_current(),
        }
    };
    if result.is_err() {
        WAITERS
            .lock()
            .retain(|w| !(w.proc.pid == pid && Arc::ptr_eq(&w.woken, &woken)));
        // A wake may have come together with the timeout or signal: it counts.
        if woken.load(core::sync::atomic::Ordering::Relaxed) {
            return Ok(());
        }
    }
    if deadline.is_some() {
        // The process sleeps in one place at a time: its only timer is this wait's.
        super::wait::drop_timers(pid);
    }
    result
}

/// Wake up to `count` waiters of `key` whose bitset meets `bitset`; returns how many.
pub fn wake(key: usize, bitset: u32, count: usize) -> usize {
    let mut woken = Vec::new();
    {
        let mut w = WAITERS.lock();
        let mut i = 0;
        while i < w.len() && woken.len() < count {
            if w[i].key == key && w[i].bitset & bitset != 0 {
                let waiter = w.remove(i);
                waiter
                    .woken
                    .store(true, core::sync::atomic::Ordering::Relaxed);
                woken.push(waiter.proc);
            } else {
                i += 1;
            }
        }
    }
    for p in &woken {
        super::wake(p);
    }
    woken.len()
}
