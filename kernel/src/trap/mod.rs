//! Traps: what happens on a system call, a page fault, a timer interrupt or a fault from user
//! mode (`user_trap_handler`), and on a trap taken in the kernel (`kernel_trap_handler`: a
//! disk-window page fault, else a kernel bug). The frame, the trap vector and the return to
//! user mode are `arch::trap`'s.

use crate::arch::csr;
use crate::arch::trap::TrapFrame;

const INTERRUPT: usize = 1 << 63;
const SUPERVISOR_TIMER: usize = 5;
const SUPERVISOR_SOFTWARE: usize = 1;
const SUPERVISOR_EXTERNAL: usize = 9;
const ILLEGAL_INSTRUCTION: usize = 2;
const BREAKPOINT: usize = 3;
const ENV_CALL_FROM_U: usize = 8;
const INSTRUCTION_PAGE_FAULT: usize = 12;
const LOAD_PAGE_FAULT: usize = 13;
const STORE_PAGE_FAULT: usize = 15;
const INSTRUCTION_ACCESS_FAULT: usize = 1;
const LOAD_ACCESS_FAULT: usize = 5;
const STORE_ACCESS_FAULT: usize = 7;
const INSTRUCTION_MISALIGNED: usize = 0;
const LOAD_MISALIGNED: usize = 4;
const STORE_MISALIGNED: usize = 6;

use crate::task::signal::{self, SIGBUS, SIGILL, SIGSEGV, SIGTRAP};

// The fault signals' `si_code`s (Linux's asm-generic/siginfo.h).
const SEGV_MAPERR: i32 = 1;
const SEGV_ACCERR: i32 = 2;
const BUS_ADRALN: i32 = 1;
const BUS_ADRERR: i32 = 2;
const ILL_ILLOPC: i32 = 1;
const ILL_ILLTRP: i32 = 4;
const TRAP_BRKPT: i32 = 1;

/// A fault of the current program: print it (a student wants to see where) and raise the
/// signal with its `si_code` and `si_addr` as Linux's riscv traps give them (the faulting
/// address for page faults, the instruction's for the others); a program that does not
/// handle it dies of it, and its parent sees that in wait4.
fn fault(sig: usize, code: i32, addr: usize, what: core::fmt::Arguments) {
    crate::println!("[kernel] pid {}: {}", crate::task::current_pid(), what);
    signal::force_fault(sig, code, addr);
}

/// A system call's six arguments (a0-a5).
#[inline(always)]
fn syscall_args(tf: &TrapFrame) -> [usize; 6] {
    [
        tf.regs[10],
        tf.regs[11],
        tf.regs[12],
        tf.regs[13],
        tf.regs[14],
        tf.regs[15],
    ]
}

#[no_mangle]
extern "C" fn user_trap_handler(tf: &mut TrapFrame) -> ! {
    // User time stops here; system time runs until the return to user mode.
    crate::task::entered_kernel();
    let scause = csr::scause();
    // A read of a dbfs file runs without the big kernel lock, on several harts at once
    // (`syscall::unlocked`), if it can; it has done nothing if it cannot.
    // (`/proc/<pid>/syscall` of a thread asleep in the call names it: in_syscall.)
    if scause == ENV_CALL_FROM_U {
        let args = syscall_args(tf);
        crate::task::in_syscall(true);
        // The pc after the ecall while the call runs, as Linux's /proc/<pid>/syscall shows
        // it; put back if the call goes the locked way, which advances it itself.
        tf.sepc += 4;
        if let Some(ret) = crate::syscall::unlocked::dispatch(tf.regs[17], &args) {
            tf.regs[10] = ret as usize;
            crate::task::in_syscall(false);
            crate::task::return_unlocked(tf)
        }
        tf.sepc -= 4;
    }
    // Kernel code runs under the big kernel lock; `enter_user` releases it. The time spent
    // waiting for it (another hart in the kernel) is not the thread's CPU time: were it,
    // a thread on one hart would be charged for a disk wait another hart does under the lock.
    // A call that `unlocked::dispatch` turned down may have taken it already: a lock it found
    // held on the way (the process's state, dbfs's) made it wait as kernel code does
    // (`task::relax`), which takes the big kernel lock.
    if !crate::arch::hart::holds_lock() && !crate::arch::hart::try_lock() {
        let t0 = crate::arch::time::monotonic_ns();
        crate::arch::hart::lock();
        crate::task::not_running_for(crate::arch::time::monotonic_ns().saturating_sub(t0));
    }
    // `stval` is read only by the arms that use it, first thing (nothing can trap before):
    // under QEMU each CSR access costs a return to its main loop, and a system call has no use
    // for it.
    use crate::mm::area::Access;
    let mut restart = None;
    if scause & INTERRUPT != 0 {
        if scause & !INTERRUPT == SUPERVISOR_TIMER {
            crate::arch::hart::note_tick();
            crate::arch::time::set_timer_in_ms(crate::task::TIME_SLICE_MS);
            crate::task::take_owed_tick();
            tick_work();
            crate::task::check_cpu_limit();
            crate::task::yield_now();
        } else if scause & !INTERRUPT == SUPERVISOR_SOFTWARE {
            // An IPI: a signal or an exit request for the thread running here (`wake_or_kick`),
            // which the return to user mode below delivers; or one meant for this hart's idle
            // loop that arrived late.
            csr::clear_ssip();
            crate::arch::hart::note_ipi_received();
        } else if scause & !INTERRUPT == SUPERVISOR_EXTERNAL {
            // A device (a disk's completion) on the hart the PLIC routes to.
            crate::drivers::external_interrupt();
        } else {
            log::warn!("unexpected interrupt {:#x}", scause);
        }
    } else {
        match scause {
            ENV_CALL_FROM_U => {
                tf.sepc += 4;
                let args = syscall_args(tf);
                let ret = crate::syscall::dispatch(tf.regs[17], args, tf);
                crate::task::in_syscall(false);
                if ret == -(signal::ERESTARTSYS.0 as isize) {
                    restart = Some(args[0]);
                }
                tf.regs[10] = ret as usize;
            }
            INSTRUCTION_PAGE_FAULT | LOAD_PAGE_FAULT | STORE_PAGE_FAULT => {
                let stval = csr::stval();
                let access = match scause {
                    INSTRUCTION_PAGE_FAULT => Access::Exec,
                    LOAD_PAGE_FAULT => Access::Read,
                    _ => Access::Write,
                };
                let r = crate::task::with_current(|p| p.space.handle_fault(stval, access));
                if r == Err(abi::Errno::ENOMEM) {
                    // No frame left: an out-of-memory kill (SIGKILL, wait4 shows it), never a
                    // segmentation fault and never a kernel panic.
                    crate::println!(
                        "[kernel] out of memory: killed pid {} (page fault at {:#x})",
                        crate::task::current_pid(),
                        stval
                    );
                    signal::force_current(signal::SIGKILL);
                } else if r == Err(abi::Errno::EIO) {
                    // A file page past the end of its file (or unreadable): SIGBUS, as Linux.
                    fault(
                        SIGBUS,
                        BUS_ADRERR,
                        stval,
                        format_args!(
                            "bus error at {:#x} (pc {:#x}, {:?})",
                            stval, tf.sepc, access
                        ),
                    );
                } else if r.is_err() {
                    // An area there refused this access (SEGV_ACCERR), or none is there.
                    let mapped = crate::task::with_current(|p| p.space.is_mapped(stval));
                    fault(
                        SIGSEGV,
                        if mapped { SEGV_ACCERR } else { SEGV_MAPERR },
                        stval,
                        format_args!(
                            "segmentation fault at {:#x} (pc {:#x}, {:?})",
                            stval, tf.sepc, access
                        ),
                    );
                }
            }
            INSTRUCTION_ACCESS_FAULT | LOAD_ACCESS_FAULT | STORE_ACCESS_FAULT => {
                let stval = csr::stval();
                fault(
                    SIGSEGV,
                    SEGV_ACCERR,
                    tf.sepc,
                    format_args!("access fault at {:#x}", stval),
                );
            }
            INSTRUCTION_MISALIGNED | LOAD_MISALIGNED | STORE_MISALIGNED => {
                let stval = csr::stval();
                fault(
                    SIGBUS,
                    BUS_ADRALN,
                    tf.sepc,
                    format_args!("misaligned access at {:#x}", stval),
                );
            }
            ILLEGAL_INSTRUCTION => {
                fault(
                    SIGILL,
                    ILL_ILLOPC,
                    tf.sepc,
                    format_args!("illegal instruction at {:#x}", tf.sepc),
                );
            }
            BREAKPOINT => fault(
                SIGTRAP,
                TRAP_BRKPT,
                tf.sepc,
                format_args!("breakpoint at {:#x}", tf.sepc),
            ),
            _ => {
                fault(
                    SIGILL,
                    ILL_ILLTRP,
                    tf.sepc,
                    format_args!("unhandled trap {:#x} at {:#x}", scause, tf.sepc),
                );
            }
        }
    }
    // The boot hart's idle loop left the tick's work undone (a thread was away in a device
    // wait): do it now, at the first return to user mode under the big kernel lock. A thread
    // that goes away again and again before its time slice's tick (a dbfs rename waiting for
    // its flush each time) would otherwise starve the interval timers: a stress-ng stressor
    // ran 207 s past its 5 s alarm, and coreutils' timeout past its own.
    if crate::task::take_owed_tick() {
        tick_work();
    }
    crate::task::return_to_user_restarting(restart)
}

/// A timer tick's work: console input, sleepers and interval timers whose time has come, the
/// file systems' periodic work. Under the big kernel lock, no other lock held.
fn tick_work() {
    crate::tty::poll_input();
    let now = crate::arch::time::monotonic_ns();
    crate::task::wait::wake_expired(now, false);
    crate::task::itimer::fire_expired(now);
    crate::fs::tick();
}

#[no_mangle]
extern "C" fn kernel_trap_handler() {
    let scause = csr::scause();
    if scause == LOAD_PAGE_FAULT || scause == STORE_PAGE_FAULT {
        // A window fault may sleep while the disk reads (the thread gives the CPU away, and
        // may go on on another hart): the traps taken meanwhile overwrite `sepc` and the
        // previous-mode bits of `sstatus`, which this trap's `sret` needs, so they are put
        // back (the entry saves only registers).
        let (sepc, sstatus) = (csr::sepc(), csr::sstatus());
        if crate::drivers::window::handle_kernel_fault(csr::stval()) {
            const TRAP_BITS: usize = csr::SSTATUS_SPP | csr::SSTATUS_SPIE;
            csr::set_sepc(sepc);
            csr::set_sstatus((csr::sstatus() & !TRAP_BITS) | (sstatus & TRAP_BITS));
            return; // `sret` retries the access, now mapped
        }
    }
    panic!(
        "trap in kernel: scause {:#x} stval {:#x} sepc {:#x}",
        scause,
        csr::stval(),
        csr::sepc()
    );
}
