//! Time: the `time` CSR at the device tree's `timebase-frequency` (never a constant), and the
//! wall clock read once at boot from the Goldfish RTC when the device tree has one.

use core::sync::atomic::{AtomicU64, Ordering};

use super::csr;

static TIMEBASE_HZ: AtomicU64 = AtomicU64::new(0);
/// Nanoseconds since the Unix epoch at `time` = 0.
static EPOCH_OFFSET_NS: AtomicU64 = AtomicU64::new(0);
/// `EPOCH_OFFSET_NS` in `time` ticks (rounded down), for [`realtime_sec`].
static EPOCH_OFFSET_TICKS: AtomicU64 = AtomicU64::new(0);

/// Clock ticks per second that user space counts CPU time in (`times`, /proc's jiffies,
/// AT_CLKTCK: Linux's USER_HZ).
pub const CLK_TCK: u64 = 100;

pub fn init(timebase_hz: u64, rtc_base: Option<usize>) {
    TIMEBASE_HZ.store(timebase_hz.max(1), Ordering::Relaxed);
    // The vDSO (`super::vdso`) reads the clock in user mode.
    csr::set_scounteren(csr::scounteren() | csr::SCOUNTEREN_TM);
    if let Some(base) = rtc_base {
        // SAFETY: `base` is the Goldfish RTC's MMIO address from the device tree, in the
        // direct map; reading TIME_LOW (offset 0) latches TIME_HIGH (offset 4).
        let wall_ns = unsafe {
            let lo = (base as *const u32).read_volatile() as u64;
            let hi = ((base + 4) as *const u32).read_volatile() as u64;
            (hi << 32) | lo
        };
        let offset_ns = wall_ns.saturating_sub(monotonic_ns());
        EPOCH_OFFSET_NS.store(offset_ns, Ordering::Relaxed);
        let ticks = offset_ns as u128 * self::timebase_hz() as u128 / 1_000_000_000;
        EPOCH_OFFSET_TICKS.store(ticks as u64, Ordering::Relaxed);
    }
}

pub fn timebase_hz() -> u64 {
    TIMEBASE_HZ.load(Ordering::Relaxed)
}

/// Nanoseconds since boot.
pub fn monotonic_ns() -> u64 {
    ticks_to_ns(csr::time())
}

/// The timer's ticks since boot (`time`): a clock read without the conversion to ns, for
/// the trap path's system-time accounting ([`ticks_to_ns`] converts later).
#[inline(always)]
pub fn ticks() -> u64 {
    csr::time()
}

/// `t` ticks of the timer in nanoseconds.
pub fn ticks_to_ns(t: u64) -> u64 {
    let hz = timebase_hz();
    // Split to avoid overflow: whole seconds, then the remainder.
    (t / hz) * 1_000_000_000 + (t % hz) * 1_000_000_000 / hz
}

/// `ns` nanoseconds in ticks of the timer (rounded down).
pub fn ns_to_ticks(ns: u64) -> u64 {
    (ns as u128 * timebase_hz() as u128 / 1_000_000_000) as u64
}

/// Nanoseconds since the Unix epoch (since boot if there is no RTC).
pub fn realtime_ns() -> u64 {
    monotonic_ns() + epoch_offset_ns()
}

/// The wall clock at boot (`time` = 0), in nanoseconds since the Unix epoch (0 without an RTC).
pub fn epoch_offset_ns() -> u64 {
    EPOCH_OFFSET_NS.load(Ordering::Relaxed)
}

/// Whole seconds since the Unix epoch: `realtime_ns() / 10^9` with one division (the
/// offset counted in ticks, so it may read one tick, 100 ns at 10 MHz, early).
pub fn realtime_sec() -> u64 {
    (csr::time() + EPOCH_OFFSET_TICKS.load(Ordering::Relaxed)) / timebase_hz()
}

/// Arm the timer interrupt `ms` milliseconds from now.
pub fn set_timer_in_ms(ms: u64) {
    let _ = sbi_rt::set_timer(csr::time() + timebase_hz() * ms / 1000);
}

/// Arm the timer interrupt `ns` nanoseconds from now.
pub fn set_timer_in_ns(ns: u64) {
    let ticks = (timebase_hz() as u128 * ns as u128 / 1_000_000_000) as u64;
    let _ = sbi_rt::set_timer(csr::time() + ticks.max(1));
}

/// The file systems' clock.
pub struct KernelClock;
impl vfs::Clock for KernelClock {
    fn now(&self) -> vfs::Timestamp {
        let ns = realtime_ns();
        vfs::Timestamp {
            sec: (ns / 1_000_000_000) as i64,
            nsec: (ns % 1_000_000_000) as u32,
        }
    }

    fn now_sec(&self) -> i64 {
        realtime_sec() as i64
    }
}
