//! Output: `RESULT` lines, the kernel counters and their deltas, and the comparison table.

use alloc::format;
use alloc::string::String;

use abi::syscall::KernelCounters;

use crate::println;
use crate::sys::{self};

/// A machine-readable `RESULT bench=<name> key=value ...` line, built field by field:
/// `ResultLine::new("seqread").field("fs", "fat32").field("secs", format_args!("{:.6}", s)).print()`.
/// Values must not contain spaces (the line is split on spaces by the host scripts).
#[derive(Clone, Debug)]
pub struct ResultLine(String);

impl ResultLine {
    pub fn new(bench: &str) -> Self {
        ResultLine(format!("RESULT bench={bench}"))
    }
    pub fn field(mut self, key: &str, value: impl core::fmt::Display) -> Self {
        use core::fmt::Write;
        let _ = write!(self.0, " {key}={value}");
        self
    }
    /// Append the kernel counter deltas (nothing when the counters are unavailable).
    pub fn counters(mut self, c: Option<&KernelCounters>) -> Self {
        if let Some(c) = c {
            self.0.push(' ');
            self.0.push_str(&format_counters(c));
        }
        self
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
    pub fn print(&self) {
        println!("{}", self.0);
    }
}

/// The kernel counters now, or None where `SYS_DBFS_COUNTERS` does not exist (Linux).
pub fn counters() -> Option<KernelCounters> {
    sys::counters().ok()
}

/// `after - before`, word by word.
pub fn counter_delta(before: &KernelCounters, after: &KernelCounters) -> KernelCounters {
    let (b, a) = (before.to_words(), after.to_words());
    let mut d = [0u64; KernelCounters::WORDS];
    for i in 0..d.len() {
        d[i] = a[i].wrapping_sub(b[i]);
    }
    KernelCounters::from_words(&d)
}

/// The counters as `key=value` pairs (the five the protocol names first).
pub fn format_counters(c: &KernelCounters) -> String {
    format!(
        "dev_read_bytes={} dev_write_bytes={} cache_hits={} cache_misses={} page_faults={} \
         dev_read_requests={} dev_write_requests={} dev_flushes={} user_copy_bytes={} \
         window_pages_read={} window_pages_written={} transactions={} window_direct_bytes={}",
        c.dev_read_bytes,
        c.dev_write_bytes,
        c.cache_hits,
        c.cache_misses,
        c.page_faults,
        c.dev_read_requests,
        c.dev_write_requests,
        c.dev_flushes,
        c.user_copy_bytes,
        c.window_pages_read,
        c.window_pages_written,
        c.transactions,
        c.window_direct_bytes
    )
}

/// Nanoseconds as microseconds with one decimal, for RESULT fields.
pub(super) fn us(ns: u32) -> String {
    format!("{:.1}", ns as f64 / 1e3)
}

/// The human-readable comparison: each target's figure, its ratio to `raw` and dbfs/fat32.
pub fn print_table(title: &str, unit: &str, rows: &[(String, f64)]) {
    if rows.len() < 2 {
        return;
    }
    let find = |name: &str| rows.iter().find(|(n, _)| n == name).map(|&(_, v)| v);
    let raw = find("raw");
    println!();
    println!("  {title} (median)");
    match raw {
        Some(_) => println!("  {:<10} {:>12}  {:>8}", "fs", unit, "vs raw"),
        None => println!("  {:<10} {:>12}", "fs", unit),
    }
    for (name, v) in rows {
        match raw {
            Some(r) if r > 0.0 => println!("  {:<10} {:>12.2}  {:>7.2}x", name, v, v / r),
            _ => println!("  {:<10} {:>12.2}", name, v),
        }
    }
    if let (Some(d), Some(f)) = (find("dbfs"), find("fat32")) {
        if f > 0.0 {
            println!("  dbfs/fat32 = {:.2}x", d / f);
        }
    }
    println!();
}
