//! Kernel-wide I/O counters (monotonic since boot), reported to user space by the
//! `SYS_DBFS_COUNTERS` syscall: the benchmarks print their deltas beside each figure.

use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

use abi::syscall::KernelCounters;

use crate::per_hart::{Padded, MAX_HARTS};

static DEV_READ_REQ: AtomicU64 = AtomicU64::new(0);
static DEV_READ_BYTES: AtomicU64 = AtomicU64::new(0);
static DEV_WRITE_REQ: AtomicU64 = AtomicU64::new(0);
static DEV_WRITE_BYTES: AtomicU64 = AtomicU64::new(0);
static DEV_FLUSHES: AtomicU64 = AtomicU64::new(0);
static CACHE_HITS: AtomicU64 = AtomicU64::new(0);
static CACHE_MISSES: AtomicU64 = AtomicU64::new(0);
static PAGE_FAULTS: AtomicU64 = AtomicU64::new(0);
static WINDOW_READ: AtomicU64 = AtomicU64::new(0);
static WINDOW_WRITTEN: AtomicU64 = AtomicU64::new(0);
static TRANSACTIONS: AtomicU64 = AtomicU64::new(0);
static WINDOW_DIRECT: AtomicU64 = AtomicU64::new(0);
static WINDOW_FAULT_SLEEPS: AtomicU64 = AtomicU64::new(0);
static WINDOW_STALE_LOADS: AtomicU64 = AtomicU64::new(0);
/// Per hart (each hart counts its own calls in its own cache line: every system call adds
/// one, and harts side by side would otherwise pass one line back and forth).
static SYSCALLS: [Padded<AtomicU64>; MAX_HARTS] = [const { Padded(AtomicU64::new(0)) }; MAX_HARTS];
static UNLOCKED_SYSCALLS: [Padded<AtomicU64>; MAX_HARTS] =
    [const { Padded(AtomicU64::new(0)) }; MAX_HARTS];
static USER_COPY: [Padded<AtomicU64>; MAX_HARTS] = [const { Padded(AtomicU64::new(0)) }; MAX_HARTS];
static UNLOCKED_TOOK_LOCK: AtomicU64 = AtomicU64::new(0);
static DEV_READS_OVERLAPPED: AtomicU64 = AtomicU64::new(0);
static WINDOW_CACHED: AtomicU64 = AtomicU64::new(0);
static WINDOW_KEPT: AtomicU64 = AtomicU64::new(0);

pub fn add_dev_read(bytes: usize) {
    DEV_READ_REQ.fetch_add(1, Relaxed);
    DEV_READ_BYTES.fetch_add(bytes as u64, Relaxed);
}
pub fn add_dev_write(bytes: usize) {
    DEV_WRITE_REQ.fetch_add(1, Relaxed);
    DEV_WRITE_BYTES.fetch_add(bytes as u64, Relaxed);
}
pub fn add_dev_flush() {
    DEV_FLUSHES.fetch_add(1, Relaxed);
}
pub fn add_cache(hits: u64, misses: u64) {
    CACHE_HITS.fetch_add(hits, Relaxed);
    CACHE_MISSES.fetch_add(misses, Relaxed);
}
pub fn add_page_fault() {
    PAGE_FAULTS.fetch_add(1, Relaxed);
}
/// Bytes copied between the kernel and a user, on hart `hart` (`arch::hart::index`).
pub fn add_user_copy(hart: usize, bytes: usize) {
    USER_COPY[hart].fetch_add(bytes as u64, Relaxed);
}

pub fn add_window_read(pages: usize) {
    WINDOW_READ.fetch_add(pages as u64, Relaxed);
}
pub fn add_window_written(pages: usize) {
    WINDOW_WRITTEN.fetch_add(pages as u64, Relaxed);
}
pub fn add_window_direct(bytes: usize) {
    WINDOW_DIRECT.fetch_add(bytes as u64, Relaxed);
}
/// Bytes of large reads copied from resident window pages (no device request).
pub fn add_window_cached(bytes: usize) {
    WINDOW_CACHED.fetch_add(bytes as u64, Relaxed);
}
/// Pages a large read of a stretch read before kept in the window.
pub fn add_window_kept(pages: usize) {
    WINDOW_KEPT.fetch_add(pages as u64, Relaxed);
}
pub fn add_window_fault_sleep() {
    WINDOW_FAULT_SLEEPS.fetch_add(1, Relaxed);
}
pub fn add_window_stale_load() {
    WINDOW_STALE_LOADS.fetch_add(1, Relaxed);
}
/// A system call taken without the big kernel lock, on hart `hart` (`arch::hart::index`).
pub fn add_unlocked_syscall(hart: usize) {
    UNLOCKED_SYSCALLS[hart].fetch_add(1, Relaxed);
}
pub fn add_unlocked_took_lock() {
    UNLOCKED_TOOK_LOCK.fetch_add(1, Relaxed);
}
pub fn add_dev_read_overlapped() {
    DEV_READS_OVERLAPPED.fetch_add(1, Relaxed);
}
/// A system call, on hart `hart` (`arch::hart::index`).
pub fn add_syscall(hart: usize) {
    SYSCALLS[hart].fetch_add(1, Relaxed);
}
pub fn add_transaction() {
    TRANSACTIONS.fetch_add(1, Relaxed);
}

fn sum(per_hart: &[Padded<AtomicU64>; MAX_HARTS]) -> u64 {
    per_hart.iter().map(|c| c.load(Relaxed)).sum()
}

pub fn snapshot() -> KernelCounters {
    KernelCounters {
        dev_read_requests: DEV_READ_REQ.load(Relaxed),
        dev_read_bytes: DEV_READ_BYTES.load(Relaxed),
        dev_write_requests: DEV_WRITE_REQ.load(Relaxed),
        dev_write_bytes: DEV_WRITE_BYTES.load(Relaxed),
        dev_flushes: DEV_FLUSHES.load(Relaxed),
        cache_hits: CACHE_HITS.load(Relaxed),
        cache_misses: CACHE_MISSES.load(Relaxed),
        page_faults: PAGE_FAULTS.load(Relaxed),
        user_copy_bytes: sum(&USER_COPY),
        window_pages_read: WINDOW_READ.load(Relaxed),
        window_pages_written: WINDOW_WRITTEN.load(Relaxed),
        transactions: TRANSACTIONS.load(Relaxed),
        window_direct_bytes: WINDOW_DIRECT.load(Relaxed),
        syscalls: sum(&SYSCALLS),
        window_fault_sleeps: WINDOW_FAULT_SLEEPS.load(Relaxed),
        window_stale_loads: WINDOW_STALE_LOADS.load(Relaxed),
        unlocked_syscalls: sum(&UNLOCKED_SYSCALLS),
        unlocked_took_lock: UNLOCKED_TOOK_LOCK.load(Relaxed),
        dev_reads_overlapped: DEV_READS_OVERLAPPED.load(Relaxed),
        window_cached_bytes: WINDOW_CACHED.load(Relaxed),
        window_kept_pages: WINDOW_KEPT.load(Relaxed),
    }
}
