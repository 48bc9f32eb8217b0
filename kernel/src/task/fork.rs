//! Making processes and threads (task layer): fork (and vfork's wait for the child's exec
//! or exit), and `clone(CLONE_THREAD)`.

use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::AtomicBool;
use core::sync::atomic::AtomicU64;
use core::sync::atomic::AtomicUsize;

use crate::arch::lockcheck::SpinLock;
use abi::Errno;

use super::lookup::find;
use super::process::{
    kstack_top, new_kstack, ProcInner, Process, State, Thread, ThreadInner, MAX_PROCS,
};
use super::sched::{
    block_current, current, current_ref, current_thread, with_thread, Scheduler, SCHED,
};
use super::siginfo::SigQueue;
use super::signal;
use super::switch::TaskContext;
use super::user_return::first_entry;
use crate::arch::trap::TrapFrame;

/// A new process (pid from `SCHED`) with one thread running `tf` (whose `kernel_sp` is set
/// here) on the harts of `affinity`: its thread, neither in the tables nor runnable until
/// [`start_process`].
pub(super) fn new_process_thread(
    s: &mut Scheduler,
    inner: ProcInner,
    tf: Box<TrapFrame>,
    kstack: Box<[u8]>,
    mask: signal::SigMask,
    affinity: u64,
    root: Option<Arc<str>>,
) -> Arc<Thread> {
    let pid = s.alloc_id();
    let p = new_process(pid, inner, root);
    let t = make_thread(pid, &p, tf, kstack, mask, affinity);
    p.inner.lock().threads.push(t.clone());
    t
}

/// Put the process of [`new_process_thread`] in the tables, its thread in the run queue.
pub(super) fn start_process(s: &mut Scheduler, t: &Arc<Thread>) {
    s.all.insert(t.tid, t.process.clone());
    s.threads.insert(t.tid, t.clone());
    s.push_ready(t.clone());
}

fn new_process(pid: usize, inner: ProcInner, root: Option<Arc<str>>) -> Arc<Process> {
    Arc::new(Process {
        pid,
        satp: AtomicUsize::new(inner.space.satp()),
        cpu_ns: AtomicU64::new(0),
        sys_ns: AtomicU64::new(0),
        switches: [AtomicU64::new(0), AtomicU64::new(0)],
        readers_away: AtomicUsize::new(0),
        space_changing: AtomicUsize::new(0),
        inner: crate::sync::Mutex::new(inner),
        sig_pending: AtomicU64::new(0),
        sig_queue: SpinLock::new(SigQueue::new()),
        stopped: AtomicBool::new(false),
        root: SpinLock::new(root),
    })
}

/// The kernel threads' process (`kthread`): pid 0, in no table, no thread yet. Its `satp`
/// is 0: the scheduler switches no page table for its threads (see `run`).
pub(super) fn make_kernel_process(inner: ProcInner) -> Arc<Process> {
    let p = new_process(0, inner, None);
    p.satp.store(0, core::sync::atomic::Ordering::Relaxed);
    p
}

/// A thread of `p` with id `tid`, not yet registered anywhere.
pub(super) fn make_thread(
    tid: usize,
    p: &Arc<Process>,
    mut tf: Box<TrapFrame>,
    kstack: Box<[u8]>,
    mask: signal::SigMask,
    affinity: u64,
) -> Arc<Thread> {
    let top = kstack_top(&kstack);
    tf.kernel_sp = top;
    Arc::new(Thread {
        tid,
        process: p.clone(),
        inner: SpinLock::new(ThreadInner {
            state: State::Ready,
            tf,
            sig: mask,
            clear_child_tid: 0,
            robust_list: 0,
        }),
        sig_pending: AtomicU64::new(0),
        sig_queue: SpinLock::new(SigQueue::new()),
        must_exit: AtomicBool::new(false),
        keep_cpu: AtomicBool::new(false),
        on_cpu: AtomicBool::new(false),
        affinity: AtomicU64::new(affinity),
        own_pages: AtomicBool::new(false),
        in_syscall: AtomicBool::new(false),
        ctx: SpinLock::new(TaskContext::new(first_entry as *const () as usize, top)),
        cpu_ns: AtomicU64::new(0),
        _kstack: kstack,
    })
}

/// fork: a copy of the current process, with one thread (a copy of the caller running
/// `tf`); returns the child's pid. `before_start` runs once the child's thread exists and
/// before it can run (see [`spawn_thread`]). With `vfork`, the child holds the calling
/// thread as its [`ProcInner::vfork_parent`] from the start, so that [`wait_vfork_done`] sees
/// an exec or exit that happens before it is called (the caller's stores may give the CPU
/// away).
pub fn fork(
    tf: &TrapFrame,
    vfork: bool,
    before_start: impl FnOnce(&Arc<Thread>),
) -> Result<usize, Errno> {
    if SCHED.lock().tasks() >= MAX_PROCS {
        return Err(Errno::EAGAIN);
    }
    let parent = current();
    let mask = with_thread(|t| signal::SigMask {
        blocked: t.sig.blocked,
        saved_mask: None,
        real_blocked: 0,
        alt: t.sig.alt,
    });
    // The stack first: it is the large heap allocation, and fails before the address space
    // is shared copy-on-write.
    let kstack = new_kstack()?;
    let vfork_parent = vfork.then(current_thread);
    let (child_inner, ctf) = {
        let mut p = parent.inner.lock();
        let space = p.space.fork()?;
        let mut ctf = Box::new(tf.clone());
        ctf.regs[10] = 0;
        let inner = ProcInner {
            ppid: parent.pid,
            children: Vec::new(),
            threads: Vec::new(),
            zombie: None,
            group_exit: None,
            space,
            files: p.files.fork(),
            cwd: p.cwd.clone(),
            umask: p.umask,
            sig: p.sig.clone(),
            pgid: p.pgid,
            sid: p.sid,
            cred: p.cred.clone(),
            children_cpu: super::process::CpuTime::default(),
            children_switches: [0; 2],
            old_rss_peak: 0,
            children_rss_peak: 0,
            nice: if p.sched.reset_on_fork {
                p.nice.max(0)
            } else {
                p.nice
            },
            ioprio: p.ioprio,
            comm: p.comm.clone(),
            cmdline: p.cmdline.clone(),
            vfork_parent,
            limits: p.limits,
            sched: p.sched.for_child(),
            personality: p.personality,
            exe: p.exe.clone(),
            dumpable: p.dumpable,
            execed: false,
            pdeath_signal: 0,
            timer_slack_ns: p.timer_slack_ns,
            xcpu_next_sec: 0,
            job_report: None,
        };
        (inner, ctf)
    };
    let affinity = current_ref().affinity();
    let parent_root = current_ref().process.root.lock().clone();
    let root = parent_root;
    let t = new_process_thread(
        &mut SCHED.lock(),
        child_inner,
        ctf,
        kstack,
        mask,
        affinity,
        root,
    );
    before_start(&t);
    parent.inner.lock().children.push(t.process.clone());
    start_process(&mut SCHED.lock(), &t);
    Ok(t.tid)
}

/// The vfork wait (Linux's `wait_for_vfork_done`): sleep until child `pid` has execed or
/// exited ([`release_vfork_parent`]). Killable as Linux's: a signal that will end the caller
/// ([`signal::fatal_pending`]: SIGKILL, or a default-terminating one it does not block or
/// handle) ends the wait; any other signal stays pending until the child lets go, and is
/// delivered when the vfork call returns.
pub fn wait_vfork_done(pid: usize) {
    let Some(child) = find(pid) else { return };
    let me = current_ref();
    loop {
        let waiting = {
            let c = child.inner.lock();
            c.vfork_parent
                .as_ref()
                .is_some_and(|t| core::ptr::eq(Arc::as_ptr(t), me))
        };
        if !waiting || signal::fatal_pending() {
            return;
        }
        // The child wakes this thread by `wake` (it holds it in `vfork_parent`); a signal's
        // wake-up only makes the loop look again.
        block_current();
    }
}

/// clone(CLONE_THREAD): a new thread of the current process running `tf` (with `a0` = 0);
/// it starts with the caller's signal mask and `clear_child_tid` (0: none). Returns its tid.
///
/// `before_start` (clone's stores of the new id) runs once the thread exists and before it
/// can run, as Linux's `kernel_clone` writes the parent's tid word before `wake_up_new_task`.
/// After would be too late with several harts: the caller's stores may wait for its process's
/// state (held a moment by a sibling's call without the big kernel lock), and that wait lets
/// other harts in, one of which may run the new thread to its end; the tid word its exit
/// cleared (pthread_join's futex) would then be written again, and the join sleep for ever.
pub fn spawn_thread(
    tf: &TrapFrame,
    clear_child_tid: usize,
    before_start: impl FnOnce(&Arc<Thread>),
) -> Result<usize, Errno> {
    if SCHED.lock().tasks() >= MAX_PROCS {
        return Err(Errno::EAGAIN);
    }
    let me = current();
    if me.inner.lock().group_exit.is_some() {
        // The group is going away (exit_group in another thread): no new members.
        return Err(Errno::EAGAIN);
    }
    let mask = with_thread(|t| signal::SigMask {
        blocked: t.sig.blocked,
        saved_mask: None,
        real_blocked: 0,
        alt: Default::default(),
    });
    let kstack = new_kstack()?;
    let mut ctf = Box::new(tf.clone());
    ctf.regs[10] = 0;
    let tid = SCHED.lock().alloc_id();
    let t = make_thread(tid, &me, ctf, kstack, mask, current_ref().affinity());
    t.inner.lock().clear_child_tid = clear_child_tid;
    before_start(&t);
    // The process's state first, as in `exit_thread`: never waited for under the run queue's
    // lock. The group may have begun its exit while `before_start` waited: no new member then.
    {
        let mut inner = me.inner.lock();
        if inner.group_exit.is_some() {
            return Err(Errno::EAGAIN);
        }
        inner.threads.push(t.clone());
    }
    let mut s = SCHED.lock();
    s.threads.insert(tid, t.clone());
    s.push_ready(t);
    Ok(tid)
}
