//! The user/kernel boundary in assembly: the saved user state ([`TrapFrame`]), the one trap
//! vector (`user_trap_entry`) and the return to user mode (`user_return`). What to do with a
//! trap is `crate::trap`'s business; this module only saves and restores.
//!
//! Convention: `stvec` always points at `user_trap_entry`, which tells the two cases apart by
//! `sscratch`: while a process runs in user mode it holds the address of its [`TrapFrame`],
//! while the kernel runs it is 0 (as in Linux). The first instruction swaps it with `sp`; a 0
//! means the trap came from the kernel, so it swaps back and goes to `kernel_trap_entry`.
//! From user mode the entry code saves every integer register into the frame (reading the
//! user's `sp` back from `sscratch` and leaving 0 there in one instruction), the
//! floating-point ones only if the program changed them since it last entered (`sstatus.FS`
//! = Dirty), loads the kernel stack pointer from the frame and calls `crate::trap`'s `user_trap_handler`.
//! `user_return` puts the frame's address back into `sscratch`. So no trap writes `stvec`:
//! under QEMU every CSR access returns to its main loop, and a system call used to pay two
//! for that. Kernel code runs with interrupts disabled and must not use FP registers (the
//! kernel binary has no FP instruction
//! outside this file; turning FS off in the kernel would catch one, but that extra `sstatus`
//! write cost more than it saved under QEMU). `user_return` reloads the FP registers only if another
//! frame's were loaded since (the hart's `fp_owner`, see `hart`): a syscall from a program that does not use FP moves
//! 64 fewer words.

use core::arch::global_asm;

use super::csr;

/// Saved user state. Field offsets are used by the assembly below.
#[repr(C)]
#[derive(Clone, Debug)]
pub struct TrapFrame {
    /// x0..x31 (x0 unused).
    pub regs: [usize; 32],
    /// f0..f31.
    pub fregs: [u64; 32],
    pub fcsr: usize,
    pub sepc: usize,
    pub sstatus: usize,
    /// Top of this process's kernel stack.
    pub kernel_sp: usize,
    /// The kernel's `tp` (its hart's data, `hart::Hart`) when the thread last left the kernel:
    /// trap entry loads it, never trusting the user's `tp`.
    pub kernel_tp: usize,
}

const _: () = assert!(core::mem::offset_of!(TrapFrame, fcsr) == 512);
const _: () = assert!(core::mem::offset_of!(TrapFrame, sepc) == 520);
const _: () = assert!(core::mem::offset_of!(TrapFrame, sstatus) == 528);
const _: () = assert!(core::mem::offset_of!(TrapFrame, kernel_sp) == 536);
const _: () = assert!(core::mem::offset_of!(TrapFrame, kernel_tp) == 544);

// The frame whose FP registers the hart's FP registers hold is the hart's
// `hart::Hart::fp_owner` (0: none known). Only trap entry and `user_return` touch FP registers,
// so nothing else can change them behind it.

impl Drop for TrapFrame {
    /// A new frame allocated where this one was must not be taken for it.
    fn drop(&mut self) {
        super::hart::fp_forget_everywhere(self as *mut TrapFrame as usize);
    }
}

/// The kernel changed `tf`'s FP registers (rt_sigreturn): make `user_return` load them.
pub fn fp_state_changed(tf: &TrapFrame) {
    super::hart::fp_forget_everywhere(tf as *const TrapFrame as usize);
}

impl TrapFrame {
    /// A frame that enters user mode at `entry` with stack `sp`.
    pub fn new_user(entry: usize, sp: usize, kernel_sp: usize) -> Self {
        let mut regs = [0; 32];
        regs[2] = sp;
        // Return to U-mode (SPP = 0) with interrupts enabled there, FP usable.
        let sstatus = (csr::sstatus()
            & !(csr::SSTATUS_SPP | csr::SSTATUS_FS_MASK | csr::SSTATUS_SIE))
            | csr::SSTATUS_SPIE
            | csr::SSTATUS_FS_INITIAL;
        TrapFrame {
            regs,
            fregs: [0; 32],
            fcsr: 0,
            sepc: entry,
            sstatus,
            kernel_sp,
            kernel_tp: 0,
        }
    }
}

global_asm!(
    r#"
    .section .text
    .option push
    .option arch, +d
    .align 4
    .globl user_trap_entry
user_trap_entry:
    csrrw sp, sscratch, sp
    # sscratch was 0: a trap taken in the kernel.
    beqz sp, 9f
    sd x1, 1*8(sp)
    sd x3, 3*8(sp)
    sd x4, 4*8(sp)
    sd x5, 5*8(sp)
    sd x6, 6*8(sp)
    sd x7, 7*8(sp)
    sd x8, 8*8(sp)
    sd x9, 9*8(sp)
    sd x10, 10*8(sp)
    sd x11, 11*8(sp)
    sd x12, 12*8(sp)
    sd x13, 13*8(sp)
    sd x14, 14*8(sp)
    sd x15, 15*8(sp)
    sd x16, 16*8(sp)
    sd x17, 17*8(sp)
    sd x18, 18*8(sp)
    sd x19, 19*8(sp)
    sd x20, 20*8(sp)
    sd x21, 21*8(sp)
    sd x22, 22*8(sp)
    sd x23, 23*8(sp)
    sd x24, 24*8(sp)
    sd x25, 25*8(sp)
    sd x26, 26*8(sp)
    sd x27, 27*8(sp)
    sd x28, 28*8(sp)
    sd x29, 29*8(sp)
    sd x30, 30*8(sp)
    sd x31, 31*8(sp)
    # The user's sp, and sscratch = 0 for as long as the kernel runs.
    csrrw t0, sscratch, zero
    sd t0, 2*8(sp)
    csrr t0, sepc
    sd t0, 520(sp)
    csrr t0, sstatus
    # Lazy floating point: only a program that wrote an FP register since it last entered
    # the kernel (sstatus.FS = Dirty) has FP state the frame does not hold yet.
    srli t1, t0, 13
    andi t1, t1, 3
    li t2, 3
    bne t1, t2, 2f
    .irp n, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
    fsd f\n, (256 + \n * 8)(sp)
    .endr
    frcsr t1
    sd t1, 512(sp)
    # Saved: the program returns with FS = Clean (Dirty 0b11 -> Clean 0b10).
    li t1, 1 << 13
    xor t0, t0, t1
2:
    sd t0, 528(sp)
    # The kernel's tp (this hart's data), as user_return left it: the user's is saved above.
    ld tp, 544(sp)
    mv a0, sp
    ld sp, 536(sp)
    call user_trap_handler
    # user_trap_handler never returns: it ends in user_return.
1:  j 1b
9:
    # From the kernel: sp back to the kernel stack, sscratch back to 0.
    csrrw sp, sscratch, sp
    j kernel_trap_entry

    .globl user_return
user_return:
    # a0 = &TrapFrame of the process about to run
    csrw sscratch, a0
    sd tp, 544(a0)
    ld t0, 520(a0)
    csrw sepc, t0
    # The FP registers still hold this frame's values unless another frame's were loaded
    # since: reload them only then.
    # (this hart's `Hart::fp_owner`, at 0(tp))
    ld t2, 0(tp)
    beq t2, a0, 3f
    sd a0, 0(tp)
    li t0, 1 << 13
    csrs sstatus, t0
    ld t0, 512(a0)
    fscsr t0
    .irp n, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
    fld f\n, (256 + \n * 8)(a0)
    .endr
3:
    # After the loads (which would mark the state Dirty): the frame's FS, Clean or Initial.
    ld t0, 528(a0)
    csrw sstatus, t0
    ld x1, 1*8(a0)
    ld x2, 2*8(a0)
    ld x3, 3*8(a0)
    ld x4, 4*8(a0)
    ld x5, 5*8(a0)
    ld x6, 6*8(a0)
    ld x7, 7*8(a0)
    ld x8, 8*8(a0)
    ld x9, 9*8(a0)
    ld x11, 11*8(a0)
    ld x12, 12*8(a0)
    ld x13, 13*8(a0)
    ld x14, 14*8(a0)
    ld x15, 15*8(a0)
    ld x16, 16*8(a0)
    ld x17, 17*8(a0)
    ld x18, 18*8(a0)
    ld x19, 19*8(a0)
    ld x20, 20*8(a0)
    ld x21, 21*8(a0)
    ld x22, 22*8(a0)
    ld x23, 23*8(a0)
    ld x24, 24*8(a0)
    ld x25, 25*8(a0)
    ld x26, 26*8(a0)
    ld x27, 27*8(a0)
    ld x28, 28*8(a0)
    ld x29, 29*8(a0)
    ld x30, 30*8(a0)
    ld x31, 31*8(a0)
    ld a0, 10*8(a0)
    sret

    .align 4
    .globl kernel_trap_entry
kernel_trap_entry:
    addi sp, sp, -256
    sd ra, 0(sp)
    sd t0, 8(sp)
    sd t1, 16(sp)
    sd t2, 24(sp)
    sd a0, 32(sp)
    sd a1, 40(sp)
    sd a2, 48(sp)
    sd a3, 56(sp)
    sd a4, 64(sp)
    sd a5, 72(sp)
    sd a6, 80(sp)
    sd a7, 88(sp)
    sd t3, 96(sp)
    sd t4, 104(sp)
    sd t5, 112(sp)
    sd t6, 120(sp)
    call kernel_trap_handler
    ld ra, 0(sp)
    ld t0, 8(sp)
    ld t1, 16(sp)
    ld t2, 24(sp)
    ld a0, 32(sp)
    ld a1, 40(sp)
    ld a2, 48(sp)
    ld a3, 56(sp)
    ld a4, 64(sp)
    ld a5, 72(sp)
    ld a6, 80(sp)
    ld a7, 88(sp)
    ld t3, 96(sp)
    ld t4, 104(sp)
    ld t5, 112(sp)
    ld t6, 120(sp)
    addi sp, sp, 256
    sret
    .option pop
"#
);

extern "C" {
    fn user_trap_entry();
    fn user_return(tf: *mut TrapFrame) -> !;
}

/// Point every trap at `user_trap_entry`, with `sscratch` = 0 (the kernel is running): once,
/// at boot, before anything can trap.
pub fn init() {
    csr::set_sscratch(0);
    csr::set_stvec(user_trap_entry as *const () as usize);
}

/// Enter user mode with the state in `tf`, from a system call that ran without the big
/// kernel lock (this hart does not hold it).
///
/// # Safety
/// `tf` must point at the running process's trap frame, which stays allocated while the
/// process exists, and the process's page table must be active.
pub unsafe fn resume_user(tf: *mut TrapFrame) -> ! {
    // SAFETY: guaranteed by the caller; `user_return` restores the frame and executes `sret`.
    unsafe { user_return(tf) }
}

/// Enter user mode with the frame `tf`, releasing the big kernel lock, which this hart holds.
///
/// # Safety
/// As for [`resume_user`].
pub unsafe fn enter_user(tf: *mut TrapFrame) -> ! {
    // User code runs without the big kernel lock.
    super::hart::unlock();
    // SAFETY: guaranteed by the caller.
    unsafe { resume_user(tf) }
}
