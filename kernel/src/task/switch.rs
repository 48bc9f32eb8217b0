//! Kernel context switch: callee-saved registers, stack pointer and return address.

use core::arch::global_asm;

#[repr(C)]
#[derive(Debug)]
pub struct TaskContext {
    ra: usize,
    sp: usize,
    s: [usize; 12],
}

impl TaskContext {
    pub const fn zero() -> Self {
        TaskContext {
            ra: 0,
            sp: 0,
            s: [0; 12],
        }
    }
    /// A context that starts executing `entry` on the stack `sp`.
    pub fn new(entry: usize, sp: usize) -> Self {
        TaskContext {
            ra: entry,
            sp,
            s: [0; 12],
        }
    }
}

global_asm!(
    r#"
    .section .text
    .globl __switch
__switch:
    sd ra, 0(a0)
    sd sp, 8(a0)
    sd s0, 16(a0)
    sd s1, 24(a0)
    sd s2, 32(a0)
    sd s3, 40(a0)
    sd s4, 48(a0)
    sd s5, 56(a0)
    sd s6, 64(a0)
    sd s7, 72(a0)
    sd s8, 80(a0)
    sd s9, 88(a0)
    sd s10, 96(a0)
    sd s11, 104(a0)
    ld ra, 0(a1)
    ld sp, 8(a1)
    ld s0, 16(a1)
    ld s1, 24(a1)
    ld s2, 32(a1)
    ld s3, 40(a1)
    ld s4, 48(a1)
    ld s5, 56(a1)
    ld s6, 64(a1)
    ld s7, 72(a1)
    ld s8, 80(a1)
    ld s9, 88(a1)
    ld s10, 96(a1)
    ld s11, 104(a1)
    ret
"#
);

extern "C" {
    fn __switch(from: *mut TaskContext, to: *const TaskContext);
}

/// Save the running context into `from` and resume `to`.
///
/// # Safety
/// Both pointers must be valid, `to` must hold a context saved by `switch` or built by
/// `TaskContext::new` with a live stack.
pub unsafe fn switch(from: *mut TaskContext, to: *const TaskContext) {
    // SAFETY: forwarded from the caller.
    unsafe { __switch(from, to) }
}
