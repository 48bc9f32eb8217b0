//! The platform-level interrupt controller (RISC-V PLIC specification 1.0.0) that brings the
//! devices' interrupt lines to the harts: per source a priority, per context (a hart's
//! privilege mode) an enable bit per source, a threshold, and a claim/complete register.
//!
//! QEMU's `virt` machine gives every hart two contexts, machine mode then supervisor mode, so
//! hart id `h`'s supervisor context is `2h + 1`. A source is routed to ONE hart's supervisor
//! context ([`route`]): a completion then interrupts one hart, not every hart (each would take
//! the big kernel lock only to find the claim taken by another). A disk moves its source to
//! the hart of the thread that goes to sleep for its requests ([`route_here`]): the completion
//! then wakes that hart, which runs the thread, instead of another hart that would take the
//! big kernel lock to wake it and send it an IPI. Every hart has `sie.SEIE` on; the kernel
//! runs with `sstatus.SIE` off, so the interrupt is taken in user mode, or seen pending
//! (`sip.SEIP`) by the scheduler loop and the idle loop's `wfi`, which claim it through
//! [`claim`] and [`complete`].

use alloc::vec::Vec;
use core::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// The PLIC's registers in the direct map; 0 until [`init`] (no PLIC: nothing is routed and
/// devices are polled).
static BASE: AtomicUsize = AtomicUsize::new(0);
/// The hart slot the sources are first routed to (`usize::MAX`: none yet).
static TARGET: AtomicUsize = AtomicUsize::new(usize::MAX);
/// Sources [`route_here`] may move (the first ones; QEMU `virt`'s virtio slots are 1..=8).
const MOVABLE: usize = 64;
/// The hart slot each of those is routed to now.
static ROUTED_TO: [AtomicUsize; MOVABLE] = [const { AtomicUsize::new(usize::MAX) }; MOVABLE];
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
    for &id in HARTIDS.get().into_iter().flatten() {
        let other = s_context_of(id);
        if other != ctx {
            set_enabled(other, irq, false);
        }
    }
    write(PRIORITY + 4 * irq as usize, 1);
    set_enabled(ctx, irq, true);
    open_context(ctx);
    if let Some(r) = ROUTED_TO.get(irq as usize) {
        r.store(hart, Relaxed);
    }
    true
}

/// Let every source with a priority through context `ctx` (threshold 0).
fn open_context(ctx: usize) {
    write(CONTEXT + CONTEXT_STRIDE * ctx + THRESHOLD, 0);
}

/// This hart has started: let sources through its supervisor context, so that
/// [`route_here`] may move one to it. (OpenSBI starts a hart with its contexts' thresholds
/// at 7, every source masked, after boot routed the disks.)
pub fn open_this_hart() {
    if present() {
        open_context(s_context(super::hart::index()));
    }
}

/// Enable (or disable) source `irq` in context `ctx`.
fn set_enabled(ctx: usize, irq: u32, on: bool) {
    let word = ENABLE + ENABLE_STRIDE * ctx + 4 * (irq as usize / 32);
    let bit = 1 << (irq % 32);
    let old = read(word);
    write(word, if on { old | bit } else { old & !bit });
}

/// Route source `irq` (routed by [`route`]) to this hart, if it goes elsewhere. The caller
/// holds the big kernel lock, under which every claim and its completion run
/// (`drivers::external_interrupt`): no hart is between the two, which a move would break (a
/// completion written to a context the source is no longer enabled in is ignored, and the
/// source would never interrupt again). The new context is enabled before the old one is
/// disabled: a completion pending meanwhile is claimed by one of the two.
pub fn route_here(irq: u32) {
    let Some(r) = ROUTED_TO.get(irq as usize) else {
        return;
    };
    let me = super::hart::index();
    let was = r.load(Relaxed);
    if was == me || was == usize::MAX {
        return;
    }
    debug_assert!(super::hart::holds_lock());
    set_enabled(s_context(me), irq, true);
    set_enabled(s_context(was), irq, false);
    r.store(me, Relaxed);
}

/// Claim the highest-priority pending source of this hart's supervisor context: 0 if none.
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
