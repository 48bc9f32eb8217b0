//! Statistics and output lines: latency percentiles, the `RESULT` line of a phase and the
//! median repetition it reports.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use crate::timing::Phase;

// ------------------------------------------------------------------ statistics and output

/// The `q`-quantile (0..=1) of sorted `v`, nearest rank.
pub fn percentile(sorted: &[u32], q: f64) -> u32 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = libm_ceil(q * sorted.len() as f64) as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// `f64::ceil` without std.
pub(crate) fn libm_ceil(x: f64) -> f64 {
    let t = x as i64 as f64;
    if t < x {
        t + 1.0
    } else {
        t
    }
}

/// The RESULT line of `phase` (the median repetition), with the spread of ops/s over `all`.
pub fn result_line(fs_name: &str, phase: &Phase, all: &[f64]) -> String {
    let mut lat = phase.lat.clone();
    lat.sort_unstable();
    let us = |ns: u32| format!("{:.1}", ns as f64 / 1e3);
    let min = all.iter().cloned().fold(f64::INFINITY, f64::min);
    let max = all.iter().cloned().fold(0.0, f64::max);
    let secs = phase.ns as f64 / 1e9;
    let mut s = format!(
        "RESULT bench={} fs={} ops={} secs={:.6} ops_per_sec={:.1} ops_per_sec_min={:.1} ops_per_sec_max={:.1}",
        phase.bench,
        fs_name,
        phase.ops,
        secs,
        phase.ops_per_sec(),
        min,
        max
    );
    if phase.bytes > 0 {
        s.push_str(&format!(
            " bytes={} MBps={:.2}",
            phase.bytes,
            phase.bytes as f64 / secs.max(1e-9) / 1e6
        ));
    }
    s.push_str(&format!(
        " p50_us={} p95_us={} p99_us={} max_us={} reps={}",
        us(percentile(&lat, 0.50)),
        us(percentile(&lat, 0.95)),
        us(percentile(&lat, 0.99)),
        us(lat.last().copied().unwrap_or(0)),
        all.len()
    ));
    s
}

/// The lower middle of `v` by ops/s: its index.
pub(crate) fn median_index(v: &[Phase]) -> usize {
    let mut idx: Vec<usize> = (0..v.len()).collect();
    idx.sort_by(|&a, &b| {
        v[a].ops_per_sec()
            .partial_cmp(&v[b].ops_per_sec())
            .unwrap_or(core::cmp::Ordering::Equal)
    });
    idx[(idx.len() - 1) / 2]
}
