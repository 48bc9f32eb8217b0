//! Job control (task layer): a stop signal (SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU) whose
//! action is the default stops the whole process, SIGCONT continues it, and the parent hears
//! of both: SIGCHLD with CLD_STOPPED or CLD_CONTINUED (unless its SIGCHLD action has
//! SA_NOCLDSTOP) and a report that wait4's WUNTRACED and WCONTINUED and waitid's WSTOPPED and
//! WCONTINUED take (`exit::wait_child`).
//!
//! As on Linux, generating SIGCONT continues a stopped process at once (whatever its action
//! for SIGCONT, which is then delivered as any signal) and drops its pending stop signals;
//! generating a stop signal drops a pending SIGCONT (both in `signal`, where signals are
//! generated, with the parent's notification and the queue stopped threads sleep on). A
//! stop takes effect when a thread delivers the signal on its way back to user mode: the
//! process is marked stopped, and each of its threads sleeps there ([`wait_while_stopped`])
//! until SIGCONT or SIGKILL; threads on other harts are interrupted to do the same, threads
//! asleep in a system call stop when it returns. Not built: a stop signal sent to an orphaned process group by the terminal is not
//! discarded, and the parent is told at the first thread's stop, not the last's.

use alloc::sync::Arc;
use core::sync::atomic::Ordering::Relaxed;

use super::process::{JobReport, Process, Thread};
use super::signal::{notify_parent, STOPPED};
use super::sigstate::{bit, SIGKILL};

/// Delivery of stop signal `sig` (its action the default) in a thread of `p`: the process
/// stops (once), its parent is told, and its threads elsewhere are made to stop too.
pub(super) fn stop(p: &Arc<Process>, sig: usize) {
    let (first, threads) = {
        let mut inner = p.inner.lock();
        let first = !p.stopped.swap(true, Relaxed);
        if first {
            inner.job_report = Some(JobReport::Stopped(sig as i32));
        }
        (first, inner.threads.clone())
    };
    if first {
        notify_parent(p, super::siginfo::CLD_STOPPED, sig as i32);
        let me = super::sched::current_thread();
        for t in threads.iter().filter(|t| !Arc::ptr_eq(t, &me)) {
            super::sched::wake_or_kick(t);
        }
    }
}

/// On the way back to user mode: while `p` is stopped (and no SIGKILL is pending, nor an
/// exit), sleep.
pub(super) fn wait_while_stopped(p: &Process, t: &Thread) {
    loop {
        STOPPED.prepare_to_wait();
        let killed =
            (t.sig_pending.load(Relaxed) | p.sig_pending.load(Relaxed)) & bit(SIGKILL) != 0;
        if !p.stopped.load(Relaxed) || killed || t.must_exit() {
            STOPPED.finish_wait();
            return;
        }
        STOPPED.sleep_prepared(None);
    }
}
