//! Wrappers for time and processes: the clock, pids, yield, fork/execve/wait/exit, brk, umask,
//! and this kernel's own counters, cache drop and power-off calls.

use alloc::vec::Vec;

use abi::fcntl::*;
use abi::stat::Timespec;
use abi::syscall::*;
use abi::Errno;

use crate::raw::*;

use super::marshal::{check, with_cstr, SysResult};

/// `clock_gettime(clock)`.
pub fn clock_gettime(clock: u32) -> SysResult<Timespec> {
    let mut ts = Timespec::default();
    // SAFETY: `ts` is a writable 16-byte `repr(C)` timespec.
    check(unsafe {
        syscall2(
            SYS_CLOCK_GETTIME,
            clock as usize,
            &mut ts as *mut Timespec as usize,
        )
    })?;
    Ok(ts)
}

/// `getpid()`.
pub fn getpid() -> i32 {
    // SAFETY: no arguments.
    unsafe { syscall0(SYS_GETPID) as i32 }
}

/// `getppid()`.
pub fn getppid() -> i32 {
    // SAFETY: no arguments.
    unsafe { syscall0(SYS_GETPPID) as i32 }
}

/// `sched_yield()`.
pub fn sched_yield() {
    // SAFETY: no arguments.
    unsafe { syscall0(SYS_SCHED_YIELD) };
}

/// `getrusage(who)` (0 `RUSAGE_SELF`, -1 `RUSAGE_CHILDREN`, 1 `RUSAGE_THREAD`) as the 18 longs
/// of a riscv64 struct rusage: ru_utime (seconds, microseconds), ru_stime (the same),
/// ru_maxrss (KiB), ..., ru_nvcsw and ru_nivcsw the last two.
pub fn getrusage(who: i32) -> SysResult<[i64; 18]> {
    let mut ru = [0i64; 18];
    // SAFETY: `ru` is valid for writes of the 144 bytes of a struct rusage.
    check(unsafe { syscall2(SYS_GETRUSAGE, who as usize, ru.as_mut_ptr() as usize) })?;
    Ok(ru)
}

/// getrusage's context switches of the caller (`RUSAGE_SELF`): (voluntary, involuntary), i.e.
/// `ru_nvcsw` and `ru_nivcsw`.
pub fn context_switches_self() -> SysResult<(u64, u64)> {
    let ru = getrusage(0)?;
    Ok((ru[16] as u64, ru[17] as u64))
}

/// `fork()` as Linux riscv64 spells it: `clone(SIGCHLD, 0, 0, 0, 0)`.
/// Returns 0 in the child and the child's pid in the parent.
pub fn fork() -> SysResult<i32> {
    // SAFETY: no new stack, no tid pointers: the child continues on a copy of our address space.
    check(unsafe { syscall5(SYS_CLONE, SIGCHLD as usize, 0, 0, 0, 0) }).map(|p| p as i32)
}

/// `execve(path, argv, envp = [])`. Returns only on failure.
pub fn execve(path: &str, argv: &[&str]) -> Errno {
    // Every string gets its own NUL-terminated heap copy; the pointer arrays end with NULL.
    let mut strings: Vec<Vec<u8>> = Vec::with_capacity(argv.len());
    for a in argv {
        if a.as_bytes().contains(&0) {
            return Errno::EINVAL;
        }
        let mut s = Vec::with_capacity(a.len() + 1);
        s.extend_from_slice(a.as_bytes());
        s.push(0);
        strings.push(s);
    }
    let mut ptrs: Vec<usize> = strings.iter().map(|s| s.as_ptr() as usize).collect();
    ptrs.push(0);
    let envp: [usize; 1] = [0];
    let res = with_cstr(path, |p| {
        // SAFETY: path, argv strings and both NULL-terminated arrays are alive for the call.
        check(unsafe {
            syscall3(
                SYS_EXECVE,
                p as usize,
                ptrs.as_ptr() as usize,
                envp.as_ptr() as usize,
            )
        })
    });
    match res {
        Err(e) => e,
        Ok(_) => Errno::EIO, // execve never returns success
    }
}

/// A `wait4` status word, decoded like the W* macros of libc.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitStatus(pub i32);

impl WaitStatus {
    /// `WIFEXITED`.
    pub fn exited(self) -> bool {
        self.0 & 0x7f == 0
    }
    /// `WEXITSTATUS`: meaningful when `exited()`.
    pub fn exit_code(self) -> i32 {
        (self.0 >> 8) & 0xff
    }
    /// `WTERMSIG` when killed by a signal.
    pub fn signal(self) -> Option<i32> {
        let sig = self.0 & 0x7f;
        (sig != 0 && sig != 0x7f).then_some(sig)
    }
}

/// `wait4(pid, &status, options, NULL)`: the pid reaped and its status.
pub fn wait4(pid: i32, options: u32) -> SysResult<(i32, WaitStatus)> {
    let mut status: i32 = 0;
    // SAFETY: `status` is a writable i32; rusage is NULL.
    let r = check(unsafe {
        syscall4(
            SYS_WAIT4,
            pid as usize,
            &mut status as *mut i32 as usize,
            options as usize,
            0,
        )
    })?;
    Ok((r as i32, WaitStatus(status)))
}

/// `waitpid(pid)`: wait for one child (or any with -1).
pub fn waitpid(pid: i32) -> SysResult<(i32, WaitStatus)> {
    wait4(pid, 0)
}

/// `exit_group(code)`: ends the process.
pub fn exit(code: i32) -> ! {
    // SAFETY: no pointer arguments; exit_group does not return.
    unsafe { syscall1(SYS_EXIT_GROUP, code as usize) };
    // SAFETY: only reached if the kernel returned from exit_group; fall back to exit.
    unsafe { syscall1(SYS_EXIT, code as usize) };
    loop {
        core::hint::spin_loop();
    }
}

/// `brk(addr)`: Linux semantics: returns the new program break, or the unchanged current one
/// when the request cannot be satisfied (there is no errno); `brk(0)` queries it.
pub fn brk(addr: usize) -> usize {
    // SAFETY: moving the break only maps or unmaps heap pages above the ones the allocator
    // handed out; `heap` never gives memory above its own recorded top.
    unsafe { syscall1(SYS_BRK, addr) as usize }
}

/// The dbfs-os kernel counters (`SYS_DBFS_COUNTERS`); `ENOSYS` on Linux.
pub fn counters() -> SysResult<KernelCounters> {
    let mut words = [0u64; KernelCounters::WORDS];
    // SAFETY: `words` is a writable array of 9 u64, the size the kernel fills.
    check(unsafe { syscall1(SYS_DBFS_COUNTERS, words.as_mut_ptr() as usize) })?;
    Ok(KernelCounters::from_words(&words))
}

/// Write back every file system and empty the kernel's caches (`SYS_DBFS_DROP_CACHES`, a
/// dbfs-os extension; `ENOSYS` on Linux).
pub fn drop_caches() -> SysResult<()> {
    // SAFETY: no pointer arguments.
    check(unsafe { syscall0(SYS_DBFS_DROP_CACHES) }).map(|_| ())
}

/// Power the machine off (`reboot(MAGIC1, MAGIC2, POWER_OFF)`); needs privilege on Linux.
pub fn power_off() -> SysResult<()> {
    // SAFETY: no pointer arguments.
    check(unsafe {
        syscall4(
            SYS_REBOOT,
            LINUX_REBOOT_MAGIC1,
            LINUX_REBOOT_MAGIC2,
            LINUX_REBOOT_CMD_POWER_OFF,
            0,
        )
    })
    .map(|_| ())
}

/// `umask(mask)`: sets the file-creation mask, returns the previous one (cannot fail).
pub fn umask(mask: u32) -> u32 {
    // SAFETY: no pointer arguments.
    unsafe { syscall1(SYS_UMASK, mask as usize) as u32 }
}

/// `clone3(args, size)` with the raw bytes of a `struct clone_args` (only forms that continue
/// on the caller's stack are safe: no `stack`, no `CLONE_VM`). Returns 0 in the child.
pub fn clone3_raw(args: &[u8]) -> SysResult<i32> {
    // SAFETY: the kernel reads `args` (checking it) and, for the forms callers use, the child
    // continues on a copy of this address space like fork's.
    check(unsafe { syscall2(SYS_CLONE3, args.as_ptr() as usize, args.len()) }).map(|p| p as i32)
}

/// `rt_sigaction(sig, act, old)` with raw 24-byte `struct sigaction`s (handler, flags,
/// restorer... as the kernel lays them out; None: not given).
pub fn rt_sigaction_raw(
    sig: i32,
    act: Option<&[u64; 3]>,
    old: Option<&mut [u64; 3]>,
) -> SysResult<()> {
    let a = act.map_or(0, |a| a.as_ptr() as usize);
    let o = old.map_or(0, |o| o.as_mut_ptr() as usize);
    // SAFETY: both pointers are NULL or 24-byte structures; a handler given here is SIG_DFL or
    // SIG_IGN only (callers), never code.
    check(unsafe { syscall4(SYS_RT_SIGACTION, sig as usize, a, o, 8) }).map(|_| ())
}

/// `riscv_hwprobe(pairs, count, cpusetsize, cpus, flags)` over `(key, value)` pairs.
pub fn riscv_hwprobe(pairs: &mut [[u64; 2]], cpus: Option<&mut [u8]>, flags: u32) -> SysResult<()> {
    let (size, ptr) = cpus.map_or((0, 0), |c| (c.len(), c.as_mut_ptr() as usize));
    // SAFETY: `pairs` is readable and writable (16 bytes each), as is the CPU set.
    check(unsafe {
        syscall5(
            SYS_RISCV_HWPROBE,
            pairs.as_mut_ptr() as usize,
            pairs.len(),
            size,
            ptr,
            flags as usize,
        )
    })
    .map(|_| ())
}
