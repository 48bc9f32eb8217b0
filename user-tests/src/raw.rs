//! Layer 0: the raw `ecall` interface.
//!
//! Linux riscv64 convention: the syscall number goes in `a7`, up to six arguments in `a0..a5`,
//! the result comes back in `a0`; a value in `-4095..=-1` is `-errno`
//! ([`abi::Errno::from_ret`] decodes it). Nothing else is clobbered.
//!
//! These functions are `unsafe`: a syscall may read or write any memory its pointer arguments
//! name, so the caller must guarantee those pointers are valid for the call. Everything above
//! this module ([`crate::sys`]) is safe.

use core::arch::asm;

/// # Safety
/// `n` must be a syscall that takes no pointer arguments, or the caller upholds its contract.
#[inline(always)]
pub unsafe fn syscall0(n: usize) -> isize {
    let ret: isize;
    // SAFETY: `ecall` transfers control to the kernel, which preserves every register except a0;
    // memory effects are the caller's responsibility (see the function's contract).
    unsafe { asm!("ecall", lateout("a0") ret, in("a7") n, options(nostack)) };
    ret
}

/// # Safety
/// Every pointer argument must be valid for what syscall `n` does with it.
#[inline(always)]
pub unsafe fn syscall1(n: usize, a0: usize) -> isize {
    let ret: isize;
    // SAFETY: as in `syscall0`; pointer validity is the caller's contract.
    unsafe { asm!("ecall", inlateout("a0") a0 as isize => ret, in("a7") n, options(nostack)) };
    ret
}

/// # Safety
/// Every pointer argument must be valid for what syscall `n` does with it.
#[inline(always)]
pub unsafe fn syscall2(n: usize, a0: usize, a1: usize) -> isize {
    let ret: isize;
    // SAFETY: as in `syscall0`; pointer validity is the caller's contract.
    unsafe {
        asm!("ecall", inlateout("a0") a0 as isize => ret, in("a1") a1, in("a7") n, options(nostack))
    };
    ret
}

/// # Safety
/// Every pointer argument must be valid for what syscall `n` does with it.
#[inline(always)]
pub unsafe fn syscall3(n: usize, a0: usize, a1: usize, a2: usize) -> isize {
    let ret: isize;
    // SAFETY: as in `syscall0`; pointer validity is the caller's contract.
    unsafe {
        asm!("ecall", inlateout("a0") a0 as isize => ret, in("a1") a1, in("a2") a2,
             in("a7") n, options(nostack))
    };
    ret
}

/// # Safety
/// Every pointer argument must be valid for what syscall `n` does with it.
#[inline(always)]
pub unsafe fn syscall4(n: usize, a0: usize, a1: usize, a2: usize, a3: usize) -> isize {
    let ret: isize;
    // SAFETY: as in `syscall0`; pointer validity is the caller's contract.
    unsafe {
        asm!("ecall", inlateout("a0") a0 as isize => ret, in("a1") a1, in("a2") a2,
             in("a3") a3, in("a7") n, options(nostack))
    };
    ret
}

/// # Safety
/// Every pointer argument must be valid for what syscall `n` does with it.
#[inline(always)]
pub unsafe fn syscall5(n: usize, a0: usize, a1: usize, a2: usize, a3: usize, a4: usize) -> isize {
    let ret: isize;
    // SAFETY: as in `syscall0`; pointer validity is the caller's contract.
    unsafe {
        asm!("ecall", inlateout("a0") a0 as isize => ret, in("a1") a1, in("a2") a2,
             in("a3") a3, in("a4") a4, in("a7") n, options(nostack))
    };
    ret
}

/// # Safety
/// Every pointer argument must be valid for what syscall `n` does with it.
#[inline(always)]
pub unsafe fn syscall6(
    n: usize,
    a0: usize,
    a1: usize,
    a2: usize,
    a3: usize,
    a4: usize,
    a5: usize,
) -> isize {
    let ret: isize;
    // SAFETY: as in `syscall0`; pointer validity is the caller's contract.
    unsafe {
        asm!("ecall", inlateout("a0") a0 as isize => ret, in("a1") a1, in("a2") a2,
             in("a3") a3, in("a4") a4, in("a5") a5, in("a7") n, options(nostack))
    };
    ret
}
