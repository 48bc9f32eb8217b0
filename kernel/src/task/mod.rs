//! Processes, threads and the scheduler (one hart).
//!
//! A [`Process`] is a thread group (its pid is the tgid): it owns what its threads share, the
//! address space, the fd table, cwd and umask, signal actions, credentials, process group and
//! session, children, and the process-directed pending signals ([`ProcInner`]). A [`Thread`]
//! is what the scheduler runs: tid, trap frame, kernel stack, signal mask, thread-directed
//! pending signals, `clear_child_tid` and the robust-futex list head ([`ThreadInner`]). A
//! process made by fork has one thread whose tid is the pid; `clone(CLONE_THREAD)` adds
//! threads. Since one `ProcInner` serves every thread of a group, the threads share its
//! address space and descriptors by construction; fork copies them into a new process.
//!
//! The scheduler runs on the boot stack and switches to a thread's kernel context; the
//! thread returns to it by `yield_now` (timer preemption from user mode, `sched_yield`),
//! `block_current` (a sleep) or by exiting. Kernel code runs with interrupts off, so nothing
//! else runs between a check and the matching block: no lost wake-ups.
//!
//! Exit: `exit` ends one thread (its `clear_child_tid` word is zeroed and woken, its robust
//! futexes are marked `FUTEX_OWNER_DIED`); `exit_group`, a fatal signal or execve's
//! [`de_thread`] tell the other threads to go (`Thread::must_exit`, seen when they next
//! return to user mode or test for a signal while asleep). The last thread out makes the
//! process a zombie for its parent; wait4 reaps processes, never threads.
//!
//! Lock order: `SCHED`, then a process's `inner`, then (parent before child) another's, then
//! a thread's `inner` (a leaf). No lock is held across a context switch.
//!
//! Files, lowest first (each imports only files above it in this list): `sigstate` (signal
//! numbers, actions, masks), `siginfo` (what a pending signal carries, and its queue), `caps` (capability sets), `cred`, `files` (the descriptor-table
//! trait), `switch`,
//! `process` (the data), `sched` (run queue, current thread, block and wake), `away`
//! (giving the CPU away inside the kernel), `lookup`, `wait` (wait queues, timers, the
//! pollers' queue), `signal` (generation), `ptimer` (POSIX timers), `itimer` (setitimer's SIGALRM), `futex`, `ps`, `run` (the scheduler loop),
//! `exit`, `sigframe` (delivery), `user_return`, `fork`, `kthread` (kernel threads), `exec`. This file only declares
//! them and re-exports what the other layers use.

mod away;
pub mod caps;
mod cputime;
pub mod cred;
mod exec;
mod exit;
pub mod files;
mod fork;
pub mod futex;
pub mod itimer;
mod jobctl;
mod kthread;
mod lookup;
pub mod policy;
mod process;
pub mod ps;
pub mod ptimer;
mod run;
mod sched;
pub mod sigframe;
pub mod siginfo;
pub mod signal;
mod sigstate;
mod switch;
mod user_return;
pub mod uts;
pub mod wait;

pub use away::{
    away, changing_space, end_wait, keep_cpu, lock_for_wait, lock_kernel, may_give_cpu_away,
    may_wait_away_reading, others_ready_here, reading_kernel_buffer, reading_own_pages, relax,
    unlocked,
};
pub use cputime::cpu_time_of;
pub use exec::{exec, spawn_init};
pub use exit::{exit_current, exit_thread, wait_child, WaitFor};
pub use fork::{fork, spawn_thread, wait_vfork_done};
pub use kthread::spawn_kernel_thread;
pub use lookup::{
    all_processes, find, find_thread, processes_in_group, unmap_file_pages_everywhere,
    write_protect_file_pages_everywhere,
};
pub use process::JobReport;
pub use process::{CpuTime, ExitStatus, ProcInner, Process, Thread, DEFAULT_TIMER_SLACK_NS};
pub use run::{
    check_cpu_limit, cpu_times, entered_kernel, in_syscall, not_running_for, process_cpu, run,
    set_services, take_owed_tick, Services, TIME_SLICE_MS,
};
pub use sched::{
    block_current, context_switches, current_cred, current_pid, current_process, current_root,
    current_thread, current_tid, hart_busy_ns, plant_lock_bug, set_affinity, with_current,
    with_thread, yield_now, PID_MAX,
};
pub use user_return::{return_to_user_restarting, return_unlocked};
