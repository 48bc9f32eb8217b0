//! The platform-level interrupt controller (RISC-V PLIC specification 1.0.0) that brings the
//! devices' interrupt lines to the harts: per source a priority, per context (a hart's
//! privilege mode) an enable bit per source, a threshold, and a claim/complete register.
//!
//! QEMU's `virt` machine gives every hart two contexts, machine mode then supervisor mode, so
//! hart id `h`'s supervisor context is `2h + 1`. A source is routed to ONE hart's supervisor
//! context ([`route`]): a completion then interrupts one hart, not every hart (each would take
//! the big kernel lock only to find the claim taken by another). The routed hart has
//! `sie.SEIE` on; the kernel runs with `sstatus.SIE` off, so the interrupt is taken in user
//! mode, or seen pending (`sip.SEIP`) by the scheduler loop and the idle loop's `wfi`, which
//! claim it through [`claim`] and [`complete`].

use alloc::vec::Vec;
use core::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// The PLIC's registers in the direct map; 0 until [`init`] (no PLIC: nothing is routed and
/// devices are polled).
static BASE: AtomicUsize = AtomicUsize::new(0);
/// The hart slot the sources are routed to (`usize::MAX`: none yet).
static TARGET: AtomicUsize = AtomicUsize::new(usize::MAX);
/// The device tree's hart ids (slot order), each with a supervisor context of its own.
static HARTIDS: spin::Once<Vec<usize>> = spin::Once::new();

/// Sources per PLIC (the specification's limit; QEMU `virt` uses 1..=95).
pub const MAX_SOURCES: u32 = 1024;

const PRIORITY: usize = 0x0;
const ENABLE: usize = 0x2000;
const ENABLE_STRIDE: usize = 0x80;
const CONTEXT: usize = 0x20_0000;
const CONTEXT_STRIDE: usize = 0x1000;
const THRESHOLD: usize = 0;
const CLAIM: usize = 4;

fn reg(offset: usize) -> *mut u32 {
    (BASE.load(Relaxed) + offset) as *mut u32
}

fn write(offset: usize, v: u32) {
    // SAFETY: `offset` is one of the PLIC's 32-bit registers, inside the region the device
    // tree gave [`init`] (mapped in the direct map like every MMIO region).
    unsafe { reg(offset).write_volatile(v) }
}

fn read(offset: usize) -> u32 {
    // SAFETY: as in `write`.
    unsafe { reg(offset).read_volatile() }
}

/// The supervisor context of the hart with SBI id `hartid` on QEMU `virt`.
fn s_context_of(hartid: usize) -> usize {
    2 * hartid + 1
}

/// The supervisor context of hart slot `i`.
fn s_context(i: usize) -> usize {
    s_context_of(super::hart::hartid(i))
}

/// Use the PLIC whose registers are at `base` (a direct-map address from the device tree),
/// on a machine with the harts `hartids` (the device tree's, every one, started or not).
pub fn init(base: usize, hartids: &[usize]) {
    HARTIDS.call_once(|| hartids.to_vec());
    BASE.store(base, Relaxed);
}

/// Whether a PLIC was found.
pub fn present() -> bool {
    BASE.load(Relaxed) != 0
}

/// Route source `irq` (1..[`MAX_SOURCES`]) to hart slot `hart` only: priority 1, enabled in
/// that hart's supervisor context, whose threshold becomes 0 (every source with a priority
/// passes), and disabled in every other hart's (whatever the firmware left there), so a
/// completion interrupts one hart. Every source is routed to the same hart (the first
/// call's); false without a PLIC, for a bad source, or for another hart.
pub fn route(irq: u32, hart: usize) -> bool {
    if !present() || irq == 0 || irq >= MAX_SOURCES {
        return false;
    }
    if TARGET
        .compare_exchange(usize::MAX, hart, Relaxed, Relaxed)
        .is_err_and(|t| t != hart)
    {
        return false;
    }
    let ctx = s_context(hart);
    let word = |ctx: usize| ENABLE + ENABLE_STRIDE * ctx + 4 * (irq as usize / 32);
    for &id in HARTIDS.get().into_iter().flatten() {
        let other = s_context_of(id);
        if other != ctx {
            write(word(other), read(word(other)) & !(1 << (irq % 32)));
        }
    }
    write(PRIORITY + 4 * irq as usize, 1);
    write(word(ctx), read(word(ctx)) | 1 << (irq % 32));
    write(CONTEXT + CONTEXT_STRIDE * ctx + THRESHOLD, 0);
    true
}

/// Whether this hart is the one the sources are routed to.
pub fn is_target() -> bool {
    present() && TARGET.load(Relaxed) == super::hart::index()
}

/// Claim the highest-priority pending source of this hart's supervisor context: 0 if none.
/// Only the routed hart ([`is_target`]) may call it.
pub fn claim() -> u32 {
    read(CONTEXT + CONTEXT_STRIDE * s_context(super::hart::index()) + CLAIM)
}

/// Tell the PLIC that source `irq`, claimed on this hart, has been handled.
pub fn complete(irq: u32) {
    write(
        CONTEXT + CONTEXT_STRIDE * s_context(super::hart::index()) + CLAIM,
        irq,
    );
}
