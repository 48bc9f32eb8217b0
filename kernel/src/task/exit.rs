//! Ending threads and processes (task layer): exit, exit_group and fatal signals, the
//! zombie left for the parent, and wait4.

use alloc::sync::Arc;
use core::sync::atomic::Ordering::Relaxed;

use abi::Errno;

use super::futex;
use super::process::{release_vfork_parent, ExitStatus, Process, State, Thread};
use super::run::power_off;
use super::sched::{
    block_current, current, current_ref, current_thread, switch_to_scheduler, wake, wake_process,
    SCHED,
};
use super::siginfo::{CLD_DUMPED, CLD_EXITED, CLD_KILLED};
use super::signal;
use super::wait;

/// Tell every thread of `p` but `except` to exit, and wake them so they see it.
pub(super) fn stop_other_threads(p: &Arc<Process>, except: &Thread) {
    let threads = p.inner.lock().threads.clone();
    for t in &threads {
        if !core::ptr::eq(Arc::as_ptr(t), except) {
            t.must_exit.store(true, Relaxed);
            super::sched::wake_or_kick(t);
        }
    }
}

/// End the current process (exit_group, a fatal signal): every thread exits, and the process
/// ends with `status` (or with that of an exit_group already under way).
pub fn exit_current(status: ExitStatus) -> ! {
    start_group_exit(status);
    exit_thread(status)
}

/// The current process's exit with `status` begins (unless one is under way): every other
/// thread is told to exit.
fn start_group_exit(status: ExitStatus) {
    let me = current_ref();
    let p = me.process.clone();
    {
        let mut inner = p.inner.lock();
        if inner.group_exit.is_none() {
            inner.group_exit = Some(status);
        }
    }
    stop_other_threads(&p, me);
}

/// End the current process for signal `sig`, whose default action it is: as
/// [`exit_current`], and for a signal whose default action dumps core, with a core file
/// (written once the other threads have been told to exit) and the status saying so.
pub fn exit_fatal_signal(sig: usize, tf: &crate::arch::trap::TrapFrame) -> ! {
    let status = ExitStatus::Signaled(sig as i32);
    start_group_exit(status);
    if super::sigstate::dumps_core(sig) && super::run::core_dump(sig, tf) {
        let p = current_ref().process.clone();
        let mut inner = p.inner.lock();
        if inner.group_exit == Some(status) {
            inner.group_exit = Some(ExitStatus::Dumped(sig as i32));
        }
    }
    exit_thread(status)
}

/// End the current thread (exit). If it is the last one, the process ends with `status`
/// (unless an exit_group chose another).
pub fn exit_thread(status: ExitStatus) -> ! {
    let t = current_thread();
    let p = t.process.clone();
    let (clear_tid, robust) = {
        let mut ti = t.inner.lock();
        (
            core::mem::take(&mut ti.clear_child_tid),
            core::mem::take(&mut ti.robust_list),
        )
    };
    // As Linux's mm_release, for the last thread too: a robust mutex or the tid word may be
    // in memory shared with another process.
    if robust != 0 {
        futex::exit_robust_list(robust, t.tid);
    }
    if clear_tid != 0 {
        futex::clear_child_tid(clear_tid);
    }
    let last = p.inner.lock().threads.len() <= 1;
    {
        // The process's state before the run queue's lock, never inside it: a sibling's call
        // without the big kernel lock may hold the state a moment, and waiting for it relaxes,
        // which takes the run queue's lock (`task::relax`).
        let empty = {
            let mut inner = p.inner.lock();
            inner.threads.retain(|x| !Arc::ptr_eq(x, &t));
            inner.threads.is_empty()
        };
        let mut s = SCHED.lock();
        s.threads.remove(&t.tid);
        if empty {
            s.zombies += 1;
        }
        t.inner.lock().state = State::Dead;
    }
    wait::drop_timers(t.tid);
    // Its queued siginfos give their charge back now (the last reference to the thread may
    // go only after the switch away from it).
    t.sig_queue.lock().clear();
    drop(t);
    if last {
        let status = p.inner.lock().group_exit.unwrap_or(status);
        process_exit(p, status);
    } else {
        drop(p);
    }
    switch_to_scheduler();
    unreachable!("a dead thread was scheduled");
}

/// The last thread of `p` (the current one) has exited: free the process's resources, hand
/// its children to init and tell the parent.
pub(super) fn process_exit(p: Arc<Process>, status: ExitStatus) {
    crate::mm::page_table::activate_kernel();
    let (ppid, children, files, vfork_parent) = {
        let mut inner = p.inner.lock();
        inner.zombie = Some(status);
        // A pidfd of it polls readable now.
        super::wait::poll_wake();
        // A parent waiting in vfork goes on, and finds the child's status waiting for it.
        let vfork_parent = release_vfork_parent(&mut inner);
        // Free memory now (allocating nothing), its peak kept for the parent's getrusage.
        inner.old_rss_peak = inner.rss_peak();
        inner.space.clear();
        (
            inner.ppid,
            core::mem::take(&mut inner.children),
            inner.files.take_all(),
            vfork_parent,
        )
    };
    if let Some(parent) = vfork_parent {
        wake(&parent);
    }
    super::itimer::cancel(p.pid);
    super::ptimer::delete_all(p.pid);
    super::run::process_exit(p.pid);
    files.close(p.pid); // closes every descriptor (may write back data)
    if p.pid == 1 {
        let code = match status {
            ExitStatus::Exited(c) => c as u32 & 0xff,
            ExitStatus::Signaled(s) | ExitStatus::Dumped(s) => 128 + s as u32,
        };
        crate::println!("[kernel] init exited with status {}", code);
        power_off(code);
    }
    let (parent, init) = {
        let s = SCHED.lock();
        (s.all.get(&ppid).cloned(), s.all.get(&1).cloned())
    };
    // Children that asked for a signal at their parent's death (PR_SET_PDEATHSIG) get it
    // once they are init's.
    let mut orphaned = alloc::vec::Vec::new();
    if let Some(init) = init {
        if !children.is_empty() {
            for c in &children {
                let mut ci = c.inner.lock();
                ci.ppid = 1;
                if ci.pdeath_signal != 0 && ci.zombie.is_none() {
                    orphaned.push((c.clone(), ci.pdeath_signal as usize));
                }
            }
            init.inner.lock().children.extend(children);
            wake_process(&init);
        }
    }
    for (c, sig) in orphaned {
        super::signal::send(&c, sig);
    }
    p.sig_queue.lock().clear();
    if let Some(parent) = parent {
        // A parent that ignores SIGCHLD (or asked for SA_NOCLDWAIT) gets no zombie: the child
        // is released now, before the parent is woken (a wait4 then finds it gone, ECHILD once
        // no child is left), and its times and peak memory are not added to the parent's
        // children's, as on Linux.
        let released = {
            let mut pi = parent.inner.lock();
            // Only if still its child: a wait4 may have reaped it already.
            match pi.children.iter().position(|c| Arc::ptr_eq(c, &p)) {
                Some(i) if pi.sig.reaps_children_itself() => {
                    pi.children.remove(i);
                    true
                }
                _ => false,
            }
        };
        if released {
            let mut s = SCHED.lock();
            s.all.remove(&p.pid);
            s.zombies -= 1;
        }
        wake_process(&parent);
        let (code, value) = match status {
            ExitStatus::Exited(c) => (CLD_EXITED, c),
            ExitStatus::Signaled(s) => (CLD_KILLED, s),
            ExitStatus::Dumped(s) => (CLD_DUMPED, s),
        };
        let uid = p.inner.lock().cred.uid;
        let _ = signal::send_info(&parent, signal::child_info(&p, uid, code, value));
    }
}

/// Which children a wait4/waitid call is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitFor {
    Any,
    Pid(usize),
    /// The members of one process group.
    Pgid(usize),
}

/// A child that [`wait_child`] found exited.
#[derive(Clone, Copy, Debug)]
pub struct Waited {
    pub pid: usize,
    pub status: ExitStatus,
    /// CPU time the child and its reaped children used (wait4's rusage).
    pub cpu: super::process::CpuTime,
    /// The larger of its peak resident pages and its reaped children's (wait4's
    /// `ru_maxrss`).
    pub rss_peak: usize,
    /// The child's real uid (waitid's `si_uid`).
    pub uid: u32,
    /// Not an exit but a stop or a continue (`status` then means nothing).
    pub report: Option<super::process::JobReport>,
}

/// wait4/waitid: find a child that `which` selects and that exited (if `exited`), stopped
/// (`stopped`: WUNTRACED, WSTOPPED) or continued (`continued`: WCONTINUED) since its last
/// report, and, if `reap` (no WNOWAIT), reap it or take the report. `Ok(None)` with `nohang`
/// and nothing yet; ECHILD when no child matches at all. Children are processes: a thread is
/// never waited for.
pub fn wait_child(
    which: WaitFor,
    (exited, stopped, continued): (bool, bool, bool),
    nohang: bool,
    reap: bool,
) -> Result<Option<Waited>, Errno> {
    use super::process::JobReport;
    loop {
        let me = current();
        let found = {
            let mut inner = me.inner.lock();
            let mut any = false;
            let mut zombie = None;
            let mut job = None;
            for (i, c) in inner.children.iter().enumerate() {
                let mut ci = c.inner.lock();
                let selected = match which {
                    WaitFor::Any => true,
                    WaitFor::Pid(pid) => pid == c.pid,
                    WaitFor::Pgid(pgid) => pgid == ci.pgid,
                };
                if selected {
                    any = true;
                    if let (Some(st), true) = (ci.zombie, exited) {
                        zombie = Some((i, st, ci.cred.uid));
                        break;
                    }
                    let wanted = match ci.job_report {
                        Some(JobReport::Stopped(_)) => stopped,
                        Some(JobReport::Continued) => continued,
                        None => false,
                    };
                    if wanted && ci.zombie.is_none() {
                        let report = ci.job_report;
                        if reap {
                            ci.job_report = None;
                        }
                        job = Some((c.clone(), report, ci.cred.uid));
                        break;
                    }
                }
            }
            if !any {
                return Err(Errno::ECHILD);
            }
            if let Some((child, report, uid)) = job {
                drop(inner);
                let cpu = child.cpu();
                let rss_peak = child.inner.lock().rss_peak();
                return Ok(Some(Waited {
                    pid: child.pid,
                    status: ExitStatus::Exited(0),
                    cpu,
                    rss_peak,
                    uid,
                    report,
                }));
            }
            zombie.map(|(i, st, uid)| {
                let child = if reap {
                    inner.children.remove(i)
                } else {
                    inner.children[i].clone()
                };
                (child, st, uid)
            })
        };
        if let Some((child, st, uid)) = found {
            let (spent, switches, rss_peak) = {
                let c = child.inner.lock();
                let own = child.switch_counts();
                (
                    child.cpu().plus(c.children_cpu),
                    [0, 1].map(|k| own[k] + c.children_switches[k]),
                    c.old_rss_peak.max(c.children_rss_peak),
                )
            };
            if reap {
                {
                    let mut m = me.inner.lock();
                    m.children_cpu = m.children_cpu.plus(spent);
                    m.children_rss_peak = m.children_rss_peak.max(rss_peak);
                    for (total, add) in m.children_switches.iter_mut().zip(switches) {
                        *total += add;
                    }
                }
                let mut s = SCHED.lock();
                s.all.remove(&child.pid);
                s.zombies -= 1;
            }
            return Ok(Some(Waited {
                pid: child.pid,
                status: st,
                cpu: spent,
                rss_peak,
                uid,
                report: None,
            }));
        }
        if nohang {
            return Ok(None);
        }
        drop(me);
        if signal::pending() {
            return Err(signal::ERESTARTSYS);
        }
        block_current();
    }
}
