//! Monotonic time from `clock_gettime(CLOCK_MONOTONIC)` (on dbfs-os: the `time` CSR scaled by the
//! device tree's timebase-frequency).

use abi::fcntl::CLOCK_MONOTONIC;

/// Nanoseconds since an arbitrary fixed point. A failing clock is a broken kernel: panic.
pub fn now_ns() -> u64 {
    match crate::sys::clock_gettime(CLOCK_MONOTONIC) {
        Ok(ts) => ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64,
        Err(e) => panic!("clock_gettime(CLOCK_MONOTONIC): {}", e.name()),
    }
}

/// Seconds since an arbitrary fixed point.
pub fn now_secs() -> f64 {
    now_ns() as f64 / 1e9
}

/// A started stopwatch.
#[derive(Clone, Copy, Debug)]
pub struct Stopwatch {
    start: u64,
}

impl Stopwatch {
    pub fn start() -> Self {
        Stopwatch { start: now_ns() }
    }
    pub fn elapsed_ns(&self) -> u64 {
        now_ns().saturating_sub(self.start)
    }
    pub fn elapsed_secs(&self) -> f64 {
        self.elapsed_ns() as f64 / 1e9
    }
}
