//! The handful of supervisor CSRs the kernel touches, as named functions.

use core::arch::asm;

pub const SSTATUS_SIE: usize = 1 << 1;
pub const SSTATUS_SPIE: usize = 1 << 5;
pub const SSTATUS_SPP: usize = 1 << 8;
/// Floating-point unit state "Initial": FP instructions allowed.
pub const SSTATUS_FS_INITIAL: usize = 1 << 13;
pub const SSTATUS_FS_MASK: usize = 3 << 13;

pub const SIE_STIE: usize = 1 << 5;
/// `sie.SSIE`: supervisor software interrupts (another hart's IPI, see `hart::kick_idle`).
pub const SIE_SSIE: usize = 1 << 1;
/// `sie.SEIE` / `sip.SEIP`: supervisor external interrupts (the PLIC, see `plic`).
pub const SIE_SEIE: usize = 1 << 9;

macro_rules! csr_read {
    ($read:ident, $name:literal) => {
        #[inline]
        pub fn $read() -> usize {
            let v: usize;
            // SAFETY: reading a CSR has no side effect on memory.
            unsafe { asm!(concat!("csrr {}, ", $name), out(reg) v) };
            v
        }
    };
}

macro_rules! csr_rw {
    ($read:ident, $write:ident, $name:literal) => {
        #[inline]
        pub fn $read() -> usize {
            let v: usize;
            // SAFETY: reading a CSR has no side effect on memory.
            unsafe { asm!(concat!("csrr {}, ", $name), out(reg) v) };
            v
        }
        #[inline]
        pub fn $write(v: usize) {
            // SAFETY: the callers (boot, trap, scheduler) write values that keep the kernel's
            // invariants (valid trap vector, valid page table root, kernel mapped).
            unsafe { asm!(concat!("csrw ", $name, ", {}"), in(reg) v) };
        }
    };
}

csr_rw!(sstatus, set_sstatus, "sstatus");
csr_rw!(sie, set_sie, "sie");
csr_read!(scause, "scause");
csr_read!(sip, "sip");
csr_read!(stval, "stval");
csr_rw!(sepc, set_sepc, "sepc");
csr_rw!(scounteren, set_scounteren, "scounteren");

/// `scounteren.TM`: user mode may read the `time` CSR (the vDSO's clock).
pub const SCOUNTEREN_TM: usize = 1 << 1;

/// Set `sscratch` (the trap entry's user/kernel marker, see `trap`).
#[inline]
pub fn set_sscratch(v: usize) {
    // SAFETY: `sscratch` is only read by the trap entry, which expects 0 while the kernel runs.
    unsafe { asm!("csrw sscratch, {}", in(reg) v) };
}

/// Point traps at `handler`.
#[inline]
pub fn set_stvec(handler: usize) {
    // SAFETY: callers pass the address of one of the trap entry points in `trap`.
    unsafe { asm!("csrw stvec, {}", in(reg) handler) };
}

/// Read the `time` CSR (ticks at the device tree's `timebase-frequency`).
#[inline]
pub fn time() -> u64 {
    let v: u64;
    // SAFETY: reading the time CSR has no side effects.
    unsafe { asm!("csrr {}, time", out(reg) v) };
    v
}

/// Switch to the page table whose `satp` value is `satp` and flush the TLB.
#[inline]
pub fn set_satp(satp: usize) {
    // SAFETY: every page table the kernel installs has the same upper half (the direct map,
    // which holds the kernel image, its heap, stacks and MMIO), so execution continues unchanged.
    unsafe { asm!("csrw satp, {}", "sfence.vma", in(reg) satp) };
}

/// Flush the whole TLB.
#[inline]
pub fn sfence_vma_all() {
    // SAFETY: a TLB flush only drops cached translations.
    unsafe { asm!("sfence.vma") };
}

/// Flush the TLB entries of one virtual address.
#[inline]
pub fn sfence_vma(va: usize) {
    // SAFETY: a TLB flush only drops cached translations.
    unsafe { asm!("sfence.vma {}, zero", in(reg) va) };
}

/// Wait until an interrupt enabled in `sie` is pending (even with `sstatus.SIE` off, as in
/// the kernel: the interrupt then stays pending and is taken in user mode).
#[inline]
pub fn wait_for_interrupt() {
    // SAFETY: `wfi` only pauses the hart; it has no effect on memory.
    unsafe { asm!("wfi") };
}

/// Clear a pending supervisor software interrupt (`sip.SSIP`: an IPI was seen).
#[inline]
pub fn clear_ssip() {
    // SAFETY: clearing a pending-interrupt bit has no effect on memory.
    unsafe { asm!("csrc sip, {}", in(reg) SIE_SSIE) };
}
