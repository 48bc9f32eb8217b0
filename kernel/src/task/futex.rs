//! Futexes: wait, wake and requeue (and the bitset forms), between threads and processes.
//!
//! A futex is named by the kernel (direct-map) address of its word, that is by the physical
//! byte. Threads of one process share the address space, so they meet there; two processes
//! that map one shared page (a `MAP_SHARED` mapping across fork, a System V segment) meet at
//! the same futex too: glibc's process-shared mutexes and condition variables (fio keeps its
//! semaphores in shared memory) work between them. A private page's address is unique to
//! its process, so private futexes need no separate name space.
//!
//! The syscall layer resolves the user address and reads the word. Kernel code is not
//! preempted, so no wake-up can slip in between its comparison with the expected value and
//! [`wait`] going to sleep: the comparison and the sleep are atomic, as futex(2) requires.
//!
//! At a thread's exit ([`clear_child_tid`], [`exit_robust_list`]) this module also does the
//! two futex duties Linux's `mm_release` does: zero-and-wake the `CLONE_CHILD_CLEARTID` word
//! (pthread_join waits on it) and mark the robust mutexes the thread still holds as
//! `FUTEX_OWNER_DIED`, waking one waiter of each.
//!
//! Lock order: the waiter table's lock is a leaf.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering::Relaxed};

use crate::arch::lockcheck::{rank, SpinLock};
use abi::Errno;

use super::process::Thread;
use crate::mm::area::Access;
use crate::mm::uaccess;

struct Waiter {
    key: usize,
    bitset: u32,
    thread: Arc<Thread>,
    /// Set by [`wake`] when it takes the waiter off the table.
    woken: Arc<AtomicBool>,
}

static WAITERS: SpinLock<Vec<Waiter>, { rank::FUTEX }> = SpinLock::new(Vec::new());

/// Sleep on the futex `key` until a [`wake`] whose bitset meets `bitset`, the monotonic
/// `deadline` (`ETIMEDOUT`) or a signal (`ERESTARTSYS`). The caller has checked the word.
/// A [`requeue`] may move the sleeper to another futex meanwhile.
pub fn wait(key: usize, bitset: u32, deadline: Option<u64>) -> Result<(), Errno> {
    let me = super::sched::current_thread();
    let woken = Arc::new(AtomicBool::new(false));
    WAITERS.lock().push(Waiter {
        key,
        bitset,
        thread: me.clone(),
        woken: woken.clone(),
    });
    let tid = me.tid;
    drop(me);
    let result = loop {
        if woken.load(Relaxed) {
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
            None => super::sched::block_current(),
        }
    };
    if result.is_err() {
        WAITERS.lock().retain(|w| !Arc::ptr_eq(&w.woken, &woken));
        // A wake may have come together with the timeout or signal: it counts.
        if woken.load(Relaxed) {
            return Ok(());
        }
    }
    if deadline.is_some() {
        // The thread sleeps in one place at a time: its only timer is this wait's.
        super::wait::drop_timers(tid);
    }
    result
}

/// Wake up to `count` waiters of `key` whose bitset meets `bitset`; returns how many.
pub fn wake(key: usize, bitset: u32, count: usize) -> usize {
    requeue(key, bitset, count, None, 0)
}

/// Wake up to `count` waiters of `key` (bitset meets `bitset`), then move up to
/// `requeue_count` of the rest to the futex `to` (FUTEX_REQUEUE). Returns woken + moved.
pub fn requeue(
    key: usize,
    bitset: u32,
    count: usize,
    to: Option<usize>,
    requeue_count: usize,
) -> usize {
    let mut woken = Vec::new();
    let mut moved = 0;
    {
        let mut w = WAITERS.lock();
        let mut i = 0;
        while i < w.len() {
            if w[i].key != key || w[i].bitset & bitset == 0 {
                i += 1;
                continue;
            }
            if woken.len() < count {
                let waiter = w.remove(i);
                waiter.woken.store(true, Relaxed);
                woken.push(waiter.thread);
                continue;
            }
            match to {
                Some(k) if moved < requeue_count => {
                    w[i].key = k;
                    moved += 1;
                    i += 1;
                }
                _ => break,
            }
        }
    }
    for t in &woken {
        super::sched::wake(t);
    }
    woken.len() + moved
}

/// The futex key of the user word at `uaddr` in the current process, its page resolved for
/// `access` (`AddrSpace::futex_key`: shared pages by their frame, private ones by their
/// address in this process).
pub fn key(uaddr: usize, access: Access) -> Result<usize, Errno> {
    let pid = super::sched::current_pid();
    super::sched::with_current(|p| p.space.futex_key(uaddr, access, pid))
}

/// [`key`], or None for a misaligned or unmapped word.
fn key_of(uaddr: usize, access: Access) -> Option<usize> {
    if !uaddr.is_multiple_of(4) {
        return None;
    }
    key(uaddr, access).ok()
}

/// A thread exits with `CLONE_CHILD_CLEARTID` (or set_tid_address) at `uaddr`: write 0 there
/// and wake one waiter (pthread_join). A bad address is ignored, as Linux does.
pub fn clear_child_tid(uaddr: usize) {
    let ok =
        super::sched::with_current(|p| uaccess::copy_out(&mut p.space, uaddr, &0u32.to_le_bytes()));
    if ok.is_ok() {
        if let Some(key) = key_of(uaddr, Access::Write) {
            wake(key, u32::MAX, 1);
        }
    }
}

/// `robust_list_head`'s futex-word flags (futex(2), "robust futexes").
const FUTEX_WAITERS: u32 = 0x8000_0000;
const FUTEX_OWNER_DIED: u32 = 0x4000_0000;
const FUTEX_TID_MASK: u32 = 0x3fff_ffff;
/// How many entries a list may have before the walk gives up (Linux: ROBUST_LIST_LIMIT).
const ROBUST_LIST_LIMIT: usize = 2048;

/// The thread `tid` exits with its robust list at `head` (`struct robust_list_head`: next,
/// futex_offset, list_op_pending). For each listed lock, and the one being taken or released
/// (`list_op_pending`), whose word names `tid` as owner: set `FUTEX_OWNER_DIED` (keeping
/// `FUTEX_WAITERS`, clearing the owner) and, if there are waiters, wake one, so a waiter's
/// `pthread_mutex_lock` returns EOWNERDEAD. Any fault ends the walk, as on Linux.
pub fn exit_robust_list(head: usize, tid: usize) {
    let read = |va: usize| super::sched::with_current(|p| uaccess::read_u64(&mut p.space, va)).ok();
    let Some(mut entry) = read(head) else { return };
    let Some(offset) = read(head + 8) else { return };
    let Some(pending) = read(head + 16) else {
        return;
    };
    let pending = pending as usize & !1;
    let mut steps = 0;
    // The list is circular through `head`; bit 0 of an entry marks a PI mutex.
    while entry as usize & !1 != head && steps < ROBUST_LIST_LIMIT {
        let e = entry as usize & !1;
        let Some(next) = read(e) else { return };
        if e != pending {
            owner_died(e.wrapping_add(offset as usize), tid);
        }
        entry = next;
        steps += 1;
    }
    if pending != 0 {
        owner_died(pending.wrapping_add(offset as usize), tid);
    }
}

fn owner_died(uaddr: usize, tid: usize) {
    if !uaddr.is_multiple_of(4) {
        return;
    }
    let mut b = [0u8; 4];
    if super::sched::with_current(|p| uaccess::copy_in(&mut p.space, uaddr, &mut b)).is_err() {
        return;
    }
    let word = u32::from_le_bytes(b);
    if word & FUTEX_TID_MASK != tid as u32 & FUTEX_TID_MASK {
        return;
    }
    let new = (word & FUTEX_WAITERS) | FUTEX_OWNER_DIED;
    let wrote =
        super::sched::with_current(|p| uaccess::copy_out(&mut p.space, uaddr, &new.to_le_bytes()));
    if wrote.is_ok() && word & FUTEX_WAITERS != 0 {
        if let Some(key) = key_of(uaddr, Access::Write) {
            wake(key, u32::MAX, 1);
        }
    }
}
