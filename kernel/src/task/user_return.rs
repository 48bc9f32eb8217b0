//! Entering user mode (task layer): a new thread's first entry and every return from the
//! kernel, which delivers pending signals first.

use core::sync::atomic::Ordering::Relaxed;

use super::sched::{current_ref, with_thread};
use crate::arch::trap::TrapFrame;

pub(super) extern "C" fn first_entry() -> ! {
    return_to_user()
}

/// Return to user mode in the current thread, delivering its pending signals first.
pub fn return_to_user() -> ! {
    return_to_user_restarting(None)
}

/// As [`return_to_user`], after a system call that asked to be restarted
/// ([`signal::ERESTARTSYS`]) with `restart` = its original first argument.
pub fn return_to_user_restarting(restart: Option<usize>) -> ! {
    let tf: *mut TrapFrame = with_thread(|t| &mut *t.tf as *mut TrapFrame);
    let me = current_ref();
    if restart.is_some()
        || me.must_exit()
        || me.sig_pending.load(Relaxed) | me.process.sig_pending.load(Relaxed) != 0
        || me.process.stopped.load(Relaxed)
    {
        // SAFETY: the frame belongs to the current thread, which only this code touches now.
        super::sigframe::deliver(unsafe { &mut *tf }, restart);
    }
    super::run::leaving_kernel();
    // SAFETY: the trap frame is boxed inside the current thread, which stays alive while it
    // runs; its page table was activated by the scheduler.
    unsafe { crate::arch::trap::enter_user(tf) }
}

/// Return to user mode after a system call that ran without the big kernel lock
/// ([`super::unlocked`]) and left its result in `tf`, the current thread's trap frame:
/// straight back if the call never took the lock and nothing is to be delivered, else as
/// [`return_to_user`], under the lock. A signal or an exit request sent after the look kicks
/// this hart (`sched::wake_or_kick`), and user mode takes that interrupt at once.
pub fn return_unlocked(tf: *mut TrapFrame) -> ! {
    let me = current_ref();
    if crate::arch::hart::holds_lock()
        || me.must_exit()
        || me.sig_pending.load(Relaxed) | me.process.sig_pending.load(Relaxed) != 0
        || me.process.stopped.load(Relaxed)
    {
        super::lock_kernel();
        return_to_user_restarting(None)
    }
    super::run::leaving_kernel();
    // SAFETY: the caller's frame, of the running thread, whose page table is active.
    unsafe { crate::arch::trap::resume_user(tf) }
}
