//! Harts: the per-hart data, starting the secondary harts through SBI HSM, the big kernel lock,
//! and the remote TLB and instruction-cache fences.
//!
//! Per-hart data ([`Hart`]) is reached through `tp` while the kernel runs. The user's `tp` is
//! glibc's thread pointer, so it is never trusted: trap entry saves it in the trap frame and
//! loads the kernel's from the frame's `kernel_tp` word, which `user_return` wrote on the way
//! out (the frame's thread re-enters the kernel on the hart it left it from, since a thread in
//! user mode never migrates). Traps taken in the kernel keep the kernel's `tp`.
//!
//! The big kernel lock ([`lock`], [`unlock`]) is this milestone's whole kernel concurrency
//! story, as in Linux 2.0: a hart holds it whenever it runs kernel code (from a user trap's
//! entry until `user_return`, and in the scheduler), and releases it only while user code
//! runs and while it idles in `wfi`. The lock belongs to the hart, not to a thread: a context
//! switch happens with it held, so a thread that gave the CPU away is resumed (on any hart)
//! only after its registers are saved and the switching hart has released the lock. Every
//! "nothing else runs" argument of the kernel (one-hart code) stays true inside it.

use core::sync::atomic::Ordering::{Acquire, Relaxed, Release, SeqCst};
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};

pub use crate::per_hart::{Padded, MAX_HARTS};

/// A hart's own data, in cache lines of its own (see [`Padded`]). `fp_owner` must stay the
/// first word: `user_return` reads it at `0(tp)`.
#[repr(C, align(64))]
pub struct Hart {
    /// The trap frame whose FP registers this hart's FP registers hold (0: none known).
    pub fp_owner: AtomicUsize,
    /// The top of the stack the hart starts on (read by `_start_secondary` at `8(tp)`).
    stack_top: AtomicUsize,
    /// The SBI hart id.
    hartid: AtomicUsize,
    /// Started and running kernel code (the boot hart from the first instruction on).
    started: AtomicBool,
    /// Waiting in the scheduler's `wfi` for something to run ([`kick_idle`] wakes it).
    idle: AtomicBool,
    /// The user page table (`satp`) this hart last switched to ([`switch_satp`]): the only
    /// one whose entries its TLB may hold (every switch flushes the TLB).
    user_satp: AtomicUsize,
    /// Whether that table is only borrowed: the thread that ran on it switched away, and the
    /// scheduler or a kernel thread runs on it ([`borrow_table`]). It is left for the kernel's
    /// table before this hart lets go of the big kernel lock ([`leave_borrowed_table`]).
    borrowed: AtomicBool,
    /// When this hart took the big kernel lock (the `time` CSR), for [`Stats::held_t`].
    held_since: AtomicU64,
    /// When this hart began its current wait for the big kernel lock, in order of arrival
    /// ([`wait_turn`]; [`unlock`] offers the lock to the waiter with the lowest).
    wait_seq: AtomicU64,
    /// Where this hart last took the big kernel lock (a `&'static Location`, 0: never), for
    /// the message of [`misuse`].
    taken_at: AtomicUsize,
    /// What this hart did with the big kernel lock, IPIs and idling (`/proc/bkl`).
    stats: Stats,
}

/// Per-hart counters of the big kernel lock, IPIs and idling, read by `/proc/bkl`. Each is
/// written by its own hart only (relaxed atomics: a reader sees a recent value).
#[derive(Default)]
pub struct Stats {
    /// Times this hart took the big kernel lock.
    pub acquires: AtomicU64,
    /// Of those, the times another hart held it or waited for it first.
    pub contended: AtomicU64,
    /// Time spent waiting for it (contended acquisitions only), in timebase ticks ([`ticks_to_ns`]).
    pub wait_t: AtomicU64,
    /// The longest of those waits, in timebase ticks.
    pub wait_max_t: AtomicU64,
    /// Time this hart held it, in timebase ticks.
    pub held_t: AtomicU64,
    /// Times a waiter slept in `wfi` for its turn ([`LOCK_SPINS`] spins did not get it).
    pub lock_sleeps: AtomicU64,
    /// IPIs this hart sent (lock hand-offs, idle kicks, signal kicks).
    pub ipi_sent: AtomicU64,
    /// Of those, the ones that handed the lock to a sleeping waiter.
    pub ipi_handoff: AtomicU64,
    /// Supervisor software interrupts this hart took or found pending.
    pub ipi_recv: AtomicU64,
    /// Times this hart idled in `wfi` with nothing to run ([`idle_wait`]).
    pub idle_sleeps: AtomicU64,
    /// Time idling there (lock released), in timebase ticks.
    pub idle_t: AtomicU64,
    /// Timer interrupts taken from user mode.
    pub ticks: AtomicU64,
}

impl Stats {
    const fn new() -> Self {
        Stats {
            acquires: AtomicU64::new(0),
            contended: AtomicU64::new(0),
            wait_t: AtomicU64::new(0),
            wait_max_t: AtomicU64::new(0),
            held_t: AtomicU64::new(0),
            lock_sleeps: AtomicU64::new(0),
            ipi_sent: AtomicU64::new(0),
            ipi_handoff: AtomicU64::new(0),
            ipi_recv: AtomicU64::new(0),
            idle_sleeps: AtomicU64::new(0),
            idle_t: AtomicU64::new(0),
            ticks: AtomicU64::new(0),
        }
    }
}

/// Add `n` to a per-hart counter.
#[inline]
fn bump(c: &AtomicU64, n: u64) {
    c.store(c.load(Relaxed).wrapping_add(n), Relaxed);
}

impl Hart {
    const fn new() -> Self {
        Hart {
            fp_owner: AtomicUsize::new(0),
            stack_top: AtomicUsize::new(0),
            hartid: AtomicUsize::new(0),
            started: AtomicBool::new(false),
            borrowed: AtomicBool::new(false),
            idle: AtomicBool::new(false),
            user_satp: AtomicUsize::new(0),
            held_since: AtomicU64::new(0),
            wait_seq: AtomicU64::new(0),
            taken_at: AtomicUsize::new(0),
            stats: Stats::new(),
        }
    }
}

/// Hart slot `i`'s counters (`/proc/bkl`).
pub fn stats(i: usize) -> &'static Stats {
    &HARTS[i].stats
}

/// Timebase ticks (the `time` CSR, what [`Stats`] counts time in) as nanoseconds.
pub fn ticks_to_ns(t: u64) -> u64 {
    let hz = super::time::timebase_hz().max(1);
    (t / hz) * 1_000_000_000 + (t % hz) * 1_000_000_000 / hz
}

/// Count a supervisor software interrupt taken by this hart (the trap handler's).
pub fn note_ipi_received() {
    bump(&this().stats.ipi_recv, 1);
}

/// Count a timer interrupt taken by this hart.
pub fn note_tick() {
    bump(&this().stats.ticks, 1);
}

const _: () = assert!(core::mem::offset_of!(Hart, fp_owner) == 0);
const _: () = assert!(core::mem::offset_of!(Hart, stack_top) == 8);
const _: () = assert!(core::mem::offset_of!(Hart, hartid) == 16);

#[allow(clippy::declare_interior_mutable_const)]
const HART_INIT: Hart = Hart::new();
static HARTS: [Hart; MAX_HARTS] = [HART_INIT; MAX_HARTS];

/// How many harts the device tree lists (at most [`MAX_HARTS`]); 1 until boot sets it.
static COUNT: AtomicUsize = AtomicUsize::new(1);

/// This hart's index in [`HARTS`] (0 = the boot hart).
#[inline]
pub fn index() -> usize {
    let tp: usize;
    // SAFETY: reading `tp`, which holds `&HARTS[i]` whenever kernel code runs.
    unsafe { core::arch::asm!("mv {}, tp", out(reg) tp) };
    (tp - HARTS.as_ptr() as usize) / core::mem::size_of::<Hart>()
}

/// This hart's data.
#[inline]
pub fn this() -> &'static Hart {
    &HARTS[index()]
}

/// Every hart slot; a slot is used when [`is_started`].
pub fn count() -> usize {
    COUNT.load(Relaxed)
}

/// Whether hart `i` runs kernel code (started through HSM, or the boot hart).
pub fn is_started(i: usize) -> bool {
    HARTS.get(i).is_some_and(|h| h.started.load(Acquire))
}

/// The running harts as a CPU mask (bit i: slot i).
pub fn online_mask() -> usize {
    (0..count())
        .filter(|&i| is_started(i))
        .fold(0, |m, i| m | 1 << i)
}

/// The SBI hart id of slot `i`.
pub fn hartid(i: usize) -> usize {
    HARTS[i].hartid.load(Relaxed)
}

/// The boot hart, first thing in `rust_main`: slot 0, `tp` set, and the big kernel lock
/// taken (boot runs under it like every other kernel code).
pub fn init_boot(hartid: usize) {
    let h = &HARTS[0];
    // SAFETY: `tp` is free in the kernel (no thread-local storage); from now on it holds
    // this hart's data.
    unsafe { core::arch::asm!("mv tp, {}", in(reg) h as *const Hart) };
    super::lockcheck::set_hart_slots(
        HARTS.as_ptr() as usize,
        core::mem::size_of::<Hart>(),
        MAX_HARTS,
    );
    h.hartid.store(hartid, Relaxed);
    h.started.store(true, Release);
    lock();
}

/// Hand every FP-owner mark of `tf` on the other harts back (a thread about to run on this
/// hart may have run elsewhere since: the registers there are stale).
pub fn fp_forget_elsewhere(tf: usize) {
    let me = index();
    for (i, h) in HARTS.iter().enumerate() {
        if i != me {
            let _ = h.fp_owner.compare_exchange(tf, 0, Relaxed, Relaxed);
        }
    }
}

/// Forget `tf` as the FP owner on every hart (the frame is freed, or the kernel changed it).
pub fn fp_forget_everywhere(tf: usize) {
    for h in HARTS.iter() {
        let _ = h.fp_owner.compare_exchange(tf, 0, Relaxed, Relaxed);
    }
}

extern "C" {
    fn _start_secondary();
}

/// Start the secondary harts the device tree lists (`hartids`, the boot hart among them),
/// each on its own stack (`stacks`: one top per hart, allocated by the caller), entering
/// `secondary` with the big kernel lock held. Returns how many harts run.
pub fn start_secondaries(hartids: &[usize], mut stack_for: impl FnMut() -> usize) -> usize {
    let boot = hartid(0);
    let mut next = 1;
    for &id in hartids {
        if id == boot || next >= MAX_HARTS {
            continue;
        }
        let h = &HARTS[next];
        h.hartid.store(id, Relaxed);
        h.stack_top.store(stack_for(), Relaxed);
        let entry = _start_secondary as *const () as usize - super::layout::PHYS_OFFSET;
        let r = sbi_rt::hart_start(id, entry, h as *const Hart as usize);
        if r.is_err() {
            crate::println!("[kernel] hart {}: SBI hart_start failed ({:?})", id, r);
            continue;
        }
        next += 1;
    }
    COUNT.store(next, Release);
    next
}

/// A secondary hart's first Rust code: mark it started. The caller then takes the lock.
pub fn secondary_started() {
    this().started.store(true, Release);
}

/// Secondary harts that arrived at `_start` instead of `_start_secondary` (`_start_late`).
static LATE_STARTS: AtomicUsize = AtomicUsize::new(0);

/// How many secondary harts came in through `_start` (the firmware's boot address) and were
/// sent on to `_start_secondary`, since the last call (for a boot line).
pub fn take_late_starts() -> usize {
    LATE_STARTS.swap(0, Relaxed)
}

// The big kernel lock. `OWNER` is NOBODY (free), `i` (offered to waiting hart slot `i`, not
// yet taken) or `i | HELD` (held by slot `i`). A release offers the lock to the waiter that
// came first (`wait_seq`), as a ticket lock would; the waiter takes an offer by turning it
// into `i | HELD`. An offer not taken within `STEAL_T` may be taken by any other waiting
// hart, which is running (it executes the waiting loop) where the offered one may not be.
//
// With more harts than host cores (4 harts on this 2-core host), the hart a strict ticket
// lock hands the lock to may be a QEMU thread waiting for a host core (the lock-waiter
// preemption problem): the lock then sat unused while every other hart waited too. Linux's
// qspinlock falls back to a test-and-set lock in a guest without paravirtual spinlocks for
// that reason (`virt_spin_lock`); a test-and-set lock here made futex ping-pong between two
// harts 2-3x slower than the ticket lock on a quiet host, where the order of arrival wins.
static OWNER: AtomicUsize = AtomicUsize::new(NOBODY);
const HELD: usize = 1 << 32;
/// When `OWNER` last became an offer (the `time` CSR).
static OFFERED_AT: AtomicU64 = AtomicU64::new(0);
/// The harts in [`wait_turn`] (bit i: slot i) and, of them, those asleep in `wfi`.
static WAITING: AtomicU64 = AtomicU64::new(0);
static SLEEPING: AtomicU64 = AtomicU64::new(0);
/// The order of arrival of waiters (`Hart::wait_seq`).
static ARRIVALS: AtomicU64 = AtomicU64::new(0);
const NOBODY: usize = usize::MAX;

/// Spins of a hart waiting for the big kernel lock before it sleeps in `wfi`.
const LOCK_SPINS: usize = 1000;
/// [`LOCK_SPINS`], or the boot parameter `bkl_spins` ([`set_lock_spins`]).
static LOCK_SPIN_LIMIT: AtomicUsize = AtomicUsize::new(LOCK_SPINS);
/// How long (µs) an offer of the big kernel lock is kept for the hart it was made to.
const STEAL_US: u64 = 100;
/// [`STEAL_US`] in timebase ticks, or the boot parameter `bkl_steal_us` ([`set_steal_us`]);
/// `u64::MAX` (never) until boot sets it from the timebase.
static STEAL_T: AtomicU64 = AtomicU64::new(u64::MAX);

/// How many times a hart waiting for the big kernel lock spins before it sleeps in `wfi`.
pub fn set_lock_spins(n: usize) {
    LOCK_SPIN_LIMIT.store(n.max(1), Relaxed);
}

/// How long (µs) an offer of the big kernel lock waits for the hart it was made to before
/// another waiting hart may take it (`bkl_steal_us`; [`STEAL_US`] if `None`). A large value
/// makes the lock a strict queue, as the ticket lock was.
pub fn set_steal_us(us: Option<u64>) {
    let us = us.unwrap_or(STEAL_US);
    let hz = super::time::timebase_hz().max(1);
    STEAL_T.store(us.saturating_mul(hz) / 1_000_000, Relaxed);
}

/// Take the big kernel lock (interrupts off, as always in the kernel): at once if it is free
/// and no hart waits for it, else in [`wait_turn`].
#[inline]
#[track_caller]
pub fn lock() {
    let me = index();
    if WAITING.load(Relaxed) != 0
        || OWNER
            .compare_exchange(NOBODY, me | HELD, Acquire, Relaxed)
            .is_err()
    {
        wait_turn(me);
    }
    took_lock(me);
}

/// Wait for the big kernel lock, counted as contended: until it is offered to this hart, or
/// found free, or an offer to another hart has waited [`STEAL_T`]. The hart spins
/// [`LOCK_SPINS`] times, then sleeps in `wfi` until an offer's IPI (or its timer): QEMU then
/// gives the host CPU to the hart that holds the lock instead of to one spinning for it. No
/// wake-up is lost: a sleeper publishes itself in `SLEEPING` and then reads `OWNER`; a release
/// writes `OWNER` and then reads `SLEEPING` (all sequentially consistent), so one of them
/// sees the other.
#[inline(never)]
fn wait_turn(me: usize) {
    let h = &HARTS[me];
    let owner = OWNER.load(Relaxed);
    if owner == me | HELD {
        misuse("takes", me, owner);
    }
    let bit = 1u64 << me;
    let t0 = super::csr::time();
    let mut spins = 0;
    // A device interrupt pending on this hart (the PLIC's target) would end every `wfi` at
    // once: it waits for the lock's holder to finish, as the hart does (it is taken once the
    // hart has the lock: in user mode or the scheduler loop).
    let seie = super::csr::sie() & super::csr::SIE_SEIE;
    if seie != 0 {
        super::csr::set_sie(super::csr::sie() & !seie);
    }
    h.wait_seq.store(ARRIVALS.fetch_add(1, Relaxed), Relaxed);
    WAITING.fetch_or(bit, SeqCst);
    loop {
        let owner = OWNER.load(Acquire);
        let take = owner == me
            || owner == NOBODY
            || (owner & HELD == 0
                && spins % 64 == 0
                && super::csr::time().wrapping_sub(OFFERED_AT.load(Relaxed))
                    >= STEAL_T.load(Relaxed));
        if take
            && OWNER
                .compare_exchange(owner, me | HELD, Acquire, Relaxed)
                .is_ok()
        {
            break;
        }
        spins += 1;
        if spins < LOCK_SPIN_LIMIT.load(Relaxed) {
            core::hint::spin_loop();
            continue;
        }
        spins = 0;
        // Only with software interrupts enabled (every hart once it runs the scheduler).
        if super::csr::sie() & super::csr::SIE_SSIE == 0 {
            continue;
        }
        SLEEPING.fetch_or(bit, SeqCst);
        let owner = OWNER.load(SeqCst);
        if owner != me && owner != NOBODY {
            bump(&h.stats.lock_sleeps, 1);
            super::csr::wait_for_interrupt();
            // The IPI was for the lock (a signal's kick for the thread running here finds its
            // signal pending on the way back to user mode anyway).
            super::csr::clear_ssip();
            bump(&h.stats.ipi_recv, 1);
        }
        SLEEPING.fetch_and(!bit, SeqCst);
    }
    // No longer waiting: before this hart's release, whose store orders it.
    WAITING.fetch_and(!bit, Relaxed);
    if seie != 0 {
        super::csr::set_sie(super::csr::sie() | seie);
    }
    let waited = super::csr::time().wrapping_sub(t0);
    bump(&h.stats.contended, 1);
    bump(&h.stats.wait_t, waited);
    if waited > h.stats.wait_max_t.load(Relaxed) {
        h.stats.wait_max_t.store(waited, Relaxed);
    }
}

/// A hart took the big kernel lock it holds, or released one it does not hold: a kernel bug
/// that would otherwise hang every hart (each waiting for a lock nobody will release) or let
/// two harts into the kernel. Checked in every build: one load on the release path, and on the
/// take path only once the lock was found held.
#[cold]
#[inline(never)]
fn misuse(what: &str, me: usize, owner: usize) -> ! {
    let taken_at = |slot: usize| -> &dyn core::fmt::Display {
        let at = HARTS[slot].taken_at.load(Relaxed) as *const core::panic::Location<'static>;
        // SAFETY: 0 or a `&'static Location` stored by `took_lock`.
        match unsafe { at.as_ref() } {
            Some(at) => at,
            None => &"an unknown place",
        }
    };
    match owner {
        NOBODY => panic!("hart slot {me} {what} the big kernel lock, which nobody holds"),
        o if o & HELD != 0 => panic!(
            "hart slot {me} {what} the big kernel lock, which hart slot {} holds (it took it at {}; \
             a switch hands it to the next thread)",
            o & !HELD,
            taken_at(o & !HELD)
        ),
        o => panic!("hart slot {me} {what} the big kernel lock, offered to hart slot {o}"),
    }
}

/// The big kernel lock is hart `i`'s now: note it.
#[inline]
#[track_caller]
fn took_lock(i: usize) {
    let h = &HARTS[i];
    h.taken_at.store(
        core::panic::Location::caller() as *const _ as usize,
        Relaxed,
    );
    bump(&h.stats.acquires, 1);
    h.held_since.store(super::csr::time(), Relaxed);
}

/// Take the big kernel lock if no hart holds it or waits for it; false (and nothing taken)
/// otherwise.
#[inline]
#[track_caller]
pub fn try_lock() -> bool {
    let me = index();
    if WAITING.load(Relaxed) != 0
        || OWNER
            .compare_exchange(NOBODY, me | HELD, Acquire, Relaxed)
            .is_err()
    {
        return false;
    }
    took_lock(me);
    true
}

/// Whether a hart other than this one waits for the big kernel lock.
#[inline]
pub fn others_wait_for_lock() -> bool {
    WAITING.load(Relaxed) & !(1u64 << index()) != 0
}

/// If other harts wait for the big kernel lock, which this hart holds, let them have it first
/// (this hart then waits behind them). A hart's scheduler keeps the lock from one thread to
/// the next; without this, a thread that waits by yielding (for a lock a thread on another
/// hart holds) would switch back and forth with its scheduler and never let that hart in,
/// and with the threads pinned to different harts nothing else would run.
pub fn let_waiters_in() {
    if WAITING.load(SeqCst) & !(1u64 << index()) != 0 {
        unlock_to_go_on();
        lock();
    }
}

/// Release the big kernel lock, which this hart holds: offer it to the waiting hart that came
/// first (waking it if it sleeps), or leave it free if none waits.
#[inline]
pub fn unlock() {
    let me = index();
    let owner = OWNER.load(Relaxed);
    if owner != me | HELD {
        misuse("releases", me, owner);
    }
    let h = &HARTS[me];
    bump(
        &h.stats.held_t,
        super::csr::time().wrapping_sub(h.held_since.load(Relaxed)),
    );
    let waiting = WAITING.load(SeqCst);
    let first = (0..count())
        .filter(|&i| waiting & (1u64 << i) != 0)
        .min_by_key(|&i| HARTS[i].wait_seq.load(Relaxed));
    let Some(next) = first else {
        OWNER.store(NOBODY, SeqCst);
        // A hart that published itself as waiting after the load above reads `OWNER` next.
        return;
    };
    OFFERED_AT.store(super::csr::time(), Relaxed);
    OWNER.store(next, SeqCst);
    if SLEEPING.load(SeqCst) & (1u64 << next) != 0 {
        bump(&h.stats.ipi_handoff, 1);
        send_ipi(next);
    }
}

/// Let go of the big kernel lock, which this hart holds, to go on without it (idling, letting
/// waiters in, a system call that took it only to sleep, `task::end_wait`): a borrowed page
/// table is left first, as another hart may free it meanwhile. [`lock`] takes the lock again.
pub fn unlock_to_go_on() {
    leave_borrowed_table();
    unlock();
}

/// Whether this hart holds the big kernel lock.
pub fn holds_lock() -> bool {
    OWNER.load(Relaxed) == index() | HELD
}

/// Sleep in `wfi` without the big kernel lock until an interrupt (the timer, or [`kick_idle`]'s
/// IPI) is pending, then take the lock again. The caller has set the timer.
pub fn idle_wait() {
    let h = this();
    h.idle.store(true, Relaxed);
    unlock_to_go_on();
    let t0 = super::csr::time();
    super::csr::wait_for_interrupt();
    bump(&h.stats.idle_t, super::csr::time().wrapping_sub(t0));
    bump(&h.stats.idle_sleeps, 1);
    if super::csr::sip() & super::csr::SIE_SSIE != 0 {
        bump(&h.stats.ipi_recv, 1);
    }
    super::csr::clear_ssip();
    lock();
    h.idle.store(false, Relaxed);
}

/// Something became runnable on the harts of `harts` (bit i: slot i): wake one of them that
/// idles (other than this one) with an IPI.
pub fn kick_idle(harts: u64) {
    let n = count();
    if n == 1 {
        return;
    }
    let me = index();
    for (i, h) in HARTS.iter().enumerate().take(n) {
        if i != me && harts & (1 << i) != 0 && h.started.load(Relaxed) && h.idle.load(Relaxed) {
            send_ipi(i);
            return;
        }
    }
}

/// Interrupt hart slot `i` (a supervisor software interrupt through SBI): its trap handler
/// takes it on the next instruction it runs with interrupts on (user code, or `wfi` idling).
pub fn send_ipi(i: usize) {
    bump(&this().stats.ipi_sent, 1);
    let mask = sbi_rt::HartMask::from_mask_base(1, hartid(i));
    let _ = sbi_rt::send_ipi(mask);
}

/// Switch this hart to page table `satp` (flushing its TLB), noted for [`flush_user_page`].
pub fn switch_satp(satp: usize) {
    let h = this();
    h.borrowed.store(false, Relaxed);
    h.user_satp.store(satp, Relaxed);
    super::csr::set_satp(satp);
}

/// Run on page table `satp` (a thread's, which owns it): [`switch_satp`], unless this hart has
/// it already (then its TLB entries stay, and are right: every change to the table's entries
/// flushes them on the harts whose last table it is, `flush_user`).
pub fn use_satp(satp: usize) {
    let h = this();
    if h.user_satp.load(Relaxed) == satp {
        h.borrowed.store(false, Relaxed);
    } else {
        switch_satp(satp);
    }
}

/// The kernel's own page table (`satp`), which [`leave_borrowed_table`] switches to.
static KERNEL_SATP: AtomicUsize = AtomicUsize::new(0);

/// Note the kernel's own page table (set once, at boot).
pub fn set_kernel_satp(satp: usize) {
    KERNEL_SATP.store(satp, Relaxed);
}

/// The thread that owned this hart's page table has switched away: the scheduler, and kernel
/// threads after it, run on that table while this hart holds the big kernel lock (no other
/// hart can then free it: a process's last exit and exec run under the lock). With one hart
/// nothing else runs, and the table is kept across idling too.
pub fn borrow_table() {
    if count() > 1 {
        this().borrowed.store(true, Relaxed);
    }
}

/// Before the big kernel lock is let go: leave a borrowed table for the kernel's, as another
/// hart may free it meanwhile.
fn leave_borrowed_table() {
    if this().borrowed.load(Relaxed) {
        let k = KERNEL_SATP.load(Relaxed);
        if k != 0 {
            switch_satp(k);
        }
    }
}

/// The other started harts that may cache entries of page table `satp` (any: `None`), as an
/// SBI hart mask (hart ids below 64), or None if there is none.
fn others_mask(satp: Option<usize>) -> Option<sbi_rt::HartMask> {
    let n = count();
    if n == 1 {
        return None;
    }
    let me = index();
    let mut mask = 0usize;
    for (i, h) in HARTS.iter().enumerate().take(n) {
        if i != me && h.started.load(Acquire) && satp.is_none_or(|s| h.user_satp.load(Relaxed) == s)
        {
            mask |= 1 << hartid(i);
        }
    }
    (mask != 0).then(|| sbi_rt::HartMask::from_mask_base(mask, 0))
}

/// Flush the TLB entries of `[start, end)` (kernel pages) on this hart and on every other
/// started hart, with one SBI RFENCE for them all (OpenSBI flushes a range of more than a page
/// whole on the remote harts). Locally page by page when the range spans at most
/// [`LOCAL_FLUSH_PAGES`], the whole TLB past that.
pub fn flush_tlb_range(start: usize, end: usize) {
    let start = start & !0xfff;
    let span = end.saturating_sub(start);
    if span.div_ceil(0x1000) <= LOCAL_FLUSH_PAGES {
        for va in (start..end).step_by(0x1000) {
            super::csr::sfence_vma(va);
        }
    } else {
        super::csr::sfence_vma_all();
    }
    if let Some(mask) = others_mask(None) {
        let _ = sbi_rt::remote_sfence_vma(mask, start, span);
    }
}

/// Pages [`flush_tlb_range`] flushes one by one on this hart before it flushes everything.
const LOCAL_FLUSH_PAGES: usize = 32;

/// Flush the whole TLB on this hart and on every other started hart.
pub fn flush_tlb_all() {
    super::csr::sfence_vma_all();
    if let Some(mask) = others_mask(None) {
        // start 0 and size usize::MAX: the whole address space (SBI's convention).
        let _ = sbi_rt::remote_sfence_vma(mask, 0, usize::MAX);
    }
}

/// Flush `va` (None: everything) of user page table `satp`, here and on every other hart that
/// runs it (a thread of the same process: under the big kernel lock no hart switches page
/// tables meanwhile, and a hart that switches later flushes its whole TLB then).
pub fn flush_user(satp: usize, va: Option<usize>) {
    match va {
        Some(va) => super::csr::sfence_vma(va),
        None => super::csr::sfence_vma_all(),
    }
    if let Some(mask) = others_mask(Some(satp)) {
        let (start, size) = va.map_or((0, usize::MAX), |va| (va & !0xfff, 0x1000));
        let _ = sbi_rt::remote_sfence_vma(mask, start, size);
    }
}

/// Code pages of user page table `satp` changed (a page fault in an executable area, an
/// mprotect to executable): `fence.i` here and on every other hart that runs it. Harts that
/// switch to it later run `fence.i` then ([`fence_i_local`] in the scheduler).
pub fn fence_i_user(satp: usize) {
    fence_i_local();
    if let Some(mask) = others_mask(Some(satp)) {
        let _ = sbi_rt::remote_fence_i(mask);
    }
}

/// `fence.i` on this hart only.
pub fn fence_i_local() {
    // SAFETY: `fence.i` only synchronises this hart's instruction fetches with memory.
    unsafe { core::arch::asm!("fence.i") };
}

// `_start_late`: a hart that finds `_start` already claimed by the boot hart. OpenSBI v1.1's
// `sbi_hsm_hart_start` marks the target START_PENDING before it stores the start address in the
// target's scratch space, and the target, polling in its HSM wait loop, may see the state first
// and jump to the address still there: the cold boot's `_start`, with the device tree in a1.
// Such a hart is one the kernel started: find its slot by hart id (slots with a stack, i.e.
// handed to `hart_start`), and continue as `_start_secondary` would with that slot in a1.
// Paging is off here. A hart with no slot parks in `wfi` for good.
core::arch::global_asm!(
    r#"
    .section .text
    .globl _start_late
_start_late:
    lla t1, {late}
    li t2, 1
    amoadd.d t2, t2, (t1)
    lla t0, {harts}
    li t2, {max}
1:
    ld t3, 8(t0)
    beqz t3, 2f
    ld t3, 16(t0)
    beq t3, a0, 3f
2:
    addi t0, t0, {size}
    addi t2, t2, -1
    bnez t2, 1b
4:
    wfi
    j 4b
3:
    li t1, {phys_offset}
    add a1, t0, t1
    lla t0, _start_secondary
    jr t0
"#,
    late = sym LATE_STARTS,
    harts = sym HARTS,
    max = const MAX_HARTS,
    size = const core::mem::size_of::<Hart>(),
    phys_offset = const super::layout::PHYS_OFFSET,
);

core::arch::global_asm!(
    r#"
    .section .text
    .globl _start_secondary
    .align 2
_start_secondary:
    # a0 = hart id, a1 = the opaque word: the (direct-map) address of this hart's `Hart`.
    # Paging is off: the boot page table maps the kernel where it runs and in the direct map.
    lla t0, {boot_pt}
    srli t0, t0, 12
    li t1, 8 << 60
    or t0, t0, t1
    csrw satp, t0
    sfence.vma
    mv tp, a1
    ld sp, 8(tp)
    li t1, {phys_offset}
    lla t0, secondary_main
    add t0, t0, t1
    jr t0
"#,
    boot_pt = sym super::BOOT_PAGE_TABLE,
    phys_offset = const super::layout::PHYS_OFFSET,
);
