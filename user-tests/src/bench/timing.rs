//! Timing a repetition: its figures ([`Run`]), the sampled per-call latencies
//! ([`CallTimes`]), the median repetition, and the timed run with counter deltas around it.

use alloc::vec::Vec;

use abi::syscall::KernelCounters;

use crate::time::Stopwatch;

use super::failure::BenchResult;
use super::report::{counter_delta, counters};

/// One timed repetition.
#[derive(Clone, Copy, Debug)]
pub(super) struct Run {
    pub(super) secs: f64,
    pub(super) counters: Option<KernelCounters>,
    /// p50 and p99 of the per-call latencies, ns.
    pub(super) lat: (u32, u32),
}

/// Sampled per-call latencies of one repetition, into a buffer reserved before the timed part.
pub struct CallTimes {
    /// Time every `every`-th call.
    every: u64,
    /// Calls seen since `start`.
    seen: u64,
    t0: u64,
    ns: Vec<u32>,
}

impl CallTimes {
    /// For a repetition of about `calls` calls.
    pub fn for_calls(calls: u64) -> Self {
        let every = calls.div_ceil(LATENCY_SAMPLES).max(1);
        CallTimes {
            every,
            seen: 0,
            t0: 0,
            ns: Vec::with_capacity((calls / every + 1) as usize),
        }
    }

    /// A new repetition (forgets earlier samples, keeps the buffer).
    pub fn start(&mut self) {
        self.ns.clear();
        self.seen = 0;
    }

    /// Just before a call.
    pub fn begin(&mut self) {
        if self.seen.is_multiple_of(self.every) {
            self.t0 = crate::time::now_ns();
        }
    }

    /// Just after the call `begin` preceded.
    pub fn end(&mut self) {
        if self.seen.is_multiple_of(self.every) {
            let d = crate::time::now_ns().saturating_sub(self.t0);
            self.ns.push(d.min(u32::MAX as u64) as u32);
        }
        self.seen += 1;
    }

    /// (p50, p99) in ns, nearest rank; (0, 0) when nothing was timed.
    pub fn percentiles(&mut self) -> (u32, u32) {
        if self.ns.is_empty() {
            return (0, 0);
        }
        self.ns.sort_unstable();
        let at = |q: usize| {
            let rank = (self.ns.len() * q).div_ceil(100).max(1);
            self.ns[rank - 1]
        };
        (at(50), at(99))
    }
}

/// About this many samples per repetition.
pub(super) const LATENCY_SAMPLES: u64 = 500;

/// The median run (lower middle for an even count).
pub(super) fn median(runs: &[Run]) -> Run {
    let mut sorted: Vec<Run> = runs.to_vec();
    sorted.sort_by(|a, b| {
        a.secs
            .partial_cmp(&b.secs)
            .unwrap_or(core::cmp::Ordering::Equal)
    });
    sorted[(sorted.len() - 1) / 2]
}

/// Time `f`, with counter deltas around it; `calls` holds the per-call times `f` marked.
pub(super) fn timed(
    calls: &mut CallTimes,
    f: impl FnOnce(&mut CallTimes) -> BenchResult<()>,
) -> BenchResult<Run> {
    let before = counters();
    let watch = Stopwatch::start();
    calls.start();
    f(calls)?;
    let secs = watch.elapsed_secs();
    let counters = match (before, counters()) {
        (Some(b), Some(a)) => Some(counter_delta(&b, &a)),
        _ => None,
    };
    Ok(Run {
        secs,
        counters,
        lat: calls.percentiles(),
    })
}
