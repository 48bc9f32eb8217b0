//! Kernel threads (task layer): threads that run only kernel code, such as the workers that
//! carry out asynchronous I/O requests (`syscall::aio_workers`).
//!
//! They belong to one kernel process (pid 0, as Linux's idle task), made on first use, that
//! is in no table: no pid or tid lookup finds it or its threads, so no signal, wait4,
//! /proc listing or `kill(-1)` reaches them, and the scheduler's "no process left" test
//! ignores them. It has no descriptors, and its address space is never switched to: a
//! kernel thread runs on whatever page table its hart has (every table maps the kernel the
//! same way), so its turns cost no TLB flush.
//! A kernel thread starts at its `entry` with the big kernel lock held, as any thread
//! entering the kernel, sleeps and wakes through the ordinary wait queues, and never
//! returns to user mode or exits. Its tid lies above `PID_MAX`, so the timer list (keyed by
//! tid) never confuses it with a user thread.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use abi::Errno;

use super::files::{ClosingFiles, FileTable};
use super::fork::{make_kernel_process, make_thread};
use super::process::{kstack_top, new_kstack, ProcInner, Process};
use super::sched::{PID_MAX, SCHED};
use super::switch::TaskContext;
use crate::arch::trap::TrapFrame;
use crate::mm::addr_space::AddrSpace;

/// The kernel process, made with its first thread.
static KERNEL_PROCESS: spin::Once<Arc<Process>> = spin::Once::new();

/// Kernel threads made so far (their tids are `PID_MAX + 1 + n`).
static KERNEL_THREADS: AtomicUsize = AtomicUsize::new(0);

/// A kernel process has no descriptors.
struct NoFiles;

struct NothingToClose;

impl ClosingFiles for NothingToClose {
    fn close(self: Box<Self>, _pid: usize) {}
}

impl FileTable for NoFiles {
    fn fork(&self) -> Box<dyn FileTable> {
        Box::new(NoFiles)
    }
    fn take_close_on_exec(&mut self) -> Box<dyn ClosingFiles> {
        Box::new(NothingToClose)
    }
    fn take_all(&mut self) -> Box<dyn ClosingFiles> {
        Box::new(NothingToClose)
    }
}

fn kernel_process() -> Result<Arc<Process>, Errno> {
    if let Some(p) = KERNEL_PROCESS.get() {
        return Ok(p.clone());
    }
    let inner = ProcInner::first(
        AddrSpace::new()?,
        Box::new(NoFiles),
        0,
        String::from("kworker"),
        Vec::new(),
        None,
    );
    Ok(KERNEL_PROCESS
        .call_once(|| make_kernel_process(inner))
        .clone())
}

/// Start a kernel thread running `entry` (which never returns), on the harts of `affinity`
/// (bit i: hart slot i; `u64::MAX` for any). ENOMEM or EAGAIN when no stack or no thread can
/// be had.
pub fn spawn_kernel_thread(entry: extern "C" fn() -> !, affinity: u64) -> Result<(), Errno> {
    if SCHED.lock().tasks() >= super::process::MAX_PROCS {
        return Err(Errno::EAGAIN);
    }
    let p = kernel_process()?;
    let kstack = new_kstack()?;
    let top = kstack_top(&kstack);
    let tid = PID_MAX + 1 + KERNEL_THREADS.fetch_add(1, Relaxed);
    let tf = Box::new(TrapFrame::new_user(0, 0, top));
    let t = make_thread(tid, &p, tf, kstack, Default::default(), affinity);
    // Not the way to user mode that `make_thread` starts a thread at: `entry`.
    *t.ctx.lock() = TaskContext::new(entry as usize, top);
    p.inner.lock().threads.push(t.clone());
    SCHED.lock().push_ready(t);
    Ok(())
}
