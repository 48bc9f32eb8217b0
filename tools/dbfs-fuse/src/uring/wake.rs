//! Where the kernel wakes a caller whose read a ring thread answers.
//!
//! A ring thread serves its CPU's queue on that CPU, so when its commit wakes the caller the
//! caller's CPU is busy (the ring thread is still running there). If another CPU is idle, the
//! scheduler's wake-up path (`select_idle_sibling`) moves the caller to it, and the caller's
//! next request goes to that CPU's queue: one migration per request, the caller's cache warmth
//! lost each time. A caller making one small request after another (fio's 4 KiB random reads,
//! one job, buffered or direct) migrated on nearly every read (58000-60000 migrations in 3 s
//! by `perf stat -e cpu-migrations`, against some 120 through `/dev/fuse`) and read at about
//! 0.6x fuse2fs.
//!
//! That path keeps a wakee on the waking CPU when every task runnable there is `SCHED_IDLE`
//! (`sched_idle_cpu`), and a normal task preempts a `SCHED_IDLE` one at once. So a ring thread
//! commits a small read's reply as `SCHED_IDLE` and takes its normal policy back right after
//! the submission: the caller wakes on its own CPU, runs, and the ring thread is back when the
//! caller waits again. Only small reads ([`split_read::SPLIT_MIN`]) do it: they are where a
//! caller makes the next request within microseconds; a large read's halves are read by
//! helper threads that a `SCHED_IDLE` thread would wait behind, and metadata requests, measured
//! the same way, lost more to the two extra system calls than they gained.
//!
//! And only for a caller seen moving: [`Callers`] keeps, per caller pid, the queue (CPU) of its
//! last small read. A caller whose read arrives on another queue than its last one has been
//! moved, and its next [`CREDIT`] small reads are committed idle; then one is committed
//! normally again, to see whether it still moves. A caller that does not move (no idle CPU:
//! several readers, a busy machine) costs no extra system call.
//!
//! A `SCHED_IDLE` thread runs only when no normal task wants its CPU. If one does (a busy
//! machine, two callers on one CPU), the thread can wait milliseconds inside that window
//! before it takes its policy back, and every request of its queue waits with it. A window
//! longer than [`STARVED`] therefore turns the idea off on that thread for [`BACK_OFF`]: at
//! most one such wait a second, where the busy CPU would not have moved the caller anyway.
//!
//! Leaving `SCHED_IDLE` needs `CAP_SYS_NICE` or an `RLIMIT_NICE` that allows the thread's
//! nice value (setpriority(2)); [`allowed`] tries it once on a throwaway thread, and without
//! it ring threads keep their normal policy throughout.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::ring::Ring;
use super::{u32_at, OP_IN, READ};
use crate::split_read;

/// A commit window longer than this means the thread was starved in it.
const STARVED: Duration = Duration::from_micros(300);

/// How long a thread starved in a window commits at its normal policy.
const BACK_OFF: Duration = Duration::from_secs(1);

fn set_idle(idle: bool) -> bool {
    let policy = if idle {
        libc::SCHED_IDLE
    } else {
        libc::SCHED_OTHER
    };
    // SAFETY: a zeroed sched_param (priority 0, as both policies require); applies to the
    // calling thread only.
    unsafe {
        let param: libc::sched_param = std::mem::zeroed();
        libc::sched_setscheduler(0, policy, &param) == 0
    }
}

/// Whether a thread of this process may go `SCHED_IDLE` and come back (tried on a thread that
/// ends right after, so a one-way trip strands nobody).
pub(super) fn allowed() -> bool {
    std::thread::Builder::new()
        .name("dbfs-sched-probe".into())
        .spawn(|| set_idle(true) && set_idle(false))
        .ok()
        .and_then(|h| h.join().ok())
        .unwrap_or(false)
}

/// Small reads committed idle after a caller was seen moving, before it is checked again.
const CREDIT: u64 = 64;

/// Callers' last queues, shared by the ring threads: one word per slot, the caller's pid in
/// the high 32 bits, its last CPU in the next 16 and its remaining credit in the low 16. Two
/// callers hashing to one slot, or two threads updating one at once, only cost a wrong guess.
pub(super) struct Callers {
    slots: Vec<AtomicU64>,
}

impl Callers {
    const SLOTS: usize = 256;

    pub(super) fn new() -> Callers {
        Callers {
            slots: (0..Self::SLOTS).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Note a small read of caller `pid` on `cpu`'s queue; whether to commit it idle.
    pub(super) fn idle_commit(&self, pid: u32, cpu: usize) -> bool {
        let slot = &self.slots[pid as usize % Self::SLOTS];
        let old = slot.load(Ordering::Relaxed);
        let (last_pid, last_cpu, credit) = (old >> 32, (old >> 16) & 0xffff, old & 0xffff);
        let cpu = cpu as u64 & 0xffff;
        let credit = if last_pid != u64::from(pid) {
            0
        } else if last_cpu != cpu {
            CREDIT
        } else {
            credit
        };
        let new = (u64::from(pid) << 32) | (cpu << 16) | credit.saturating_sub(1);
        slot.store(new, Ordering::Relaxed);
        credit > 0
    }
}

/// One ring thread's commits.
pub(super) struct Commits {
    /// Small reads are committed as `SCHED_IDLE` (when [`allowed`] and the mount asks for it).
    idle: bool,
    /// After a starved window: normal commits until then.
    off_until: Option<Instant>,
}

impl Commits {
    pub(super) fn new(idle: bool) -> Commits {
        Commits {
            idle,
            off_until: None,
        }
    }

    /// Whether the request in `head` (a ring entry's header), taken from `cpu`'s queue, is to
    /// be answered idle: a small read of a caller [`Callers`] saw moving.
    pub(super) fn wanted(&self, callers: &Callers, head: &[u8], cpu: usize) -> bool {
        self.idle && Self::small_read(head) && callers.idle_commit(u32_at(head, 32), cpu)
    }

    /// Whether the request in `head` is a read small enough for an idle commit.
    fn small_read(head: &[u8]) -> bool {
        // fuse_in_header.opcode at 4; fuse_read_in.size at 16 of the operation's argument.
        u32_at(head, 4) == READ && (u32_at(head, OP_IN + 16) as usize) < split_read::SPLIT_MIN
    }

    /// Submit the commit pushed on `ring` as `SCHED_IDLE` if `wanted` (see the module doc);
    /// otherwise leave it for the wait that follows.
    pub(super) fn submit(&mut self, ring: &mut Ring, wanted: bool) -> io::Result<()> {
        if !wanted {
            return Ok(());
        }
        if let Some(t) = self.off_until {
            if Instant::now() < t {
                return Ok(());
            }
            self.off_until = None;
        }
        let start = Instant::now();
        if !set_idle(true) {
            self.idle = false;
            return Ok(());
        }
        let submitted = ring.submit();
        if !set_idle(false) {
            // Cannot happen once `allowed` said yes (the limits do not change under a
            // running process); if it does, say so: every request of this queue now waits
            // for idle time.
            eprintln!("dbfs-fuse: a ring thread could not leave SCHED_IDLE");
            self.idle = false;
        }
        let now = Instant::now();
        if now - start > STARVED {
            self.off_until = Some(now + BACK_OFF);
        }
        submitted
    }
}

#[cfg(test)]
mod tests {
    use super::super::{GETATTR, HEADER_LEN, WRITE};
    use super::*;

    fn small(opcode: u32, size: u32) -> bool {
        let mut head = vec![0u8; HEADER_LEN];
        head[4..8].copy_from_slice(&opcode.to_ne_bytes());
        head[OP_IN + 16..OP_IN + 20].copy_from_slice(&size.to_ne_bytes());
        Commits::small_read(&head)
    }

    #[test]
    fn only_reads_below_the_split_size_are_small_reads() {
        let min = split_read::SPLIT_MIN as u32;
        assert!(small(READ, 4096));
        assert!(small(READ, min - 4096));
        assert!(!small(READ, min));
        assert!(!small(WRITE, 4096));
        assert!(!small(GETATTR, 0));
    }

    #[test]
    fn a_caller_seen_moving_gets_idle_commits_for_a_while() {
        let callers = Callers::new();
        // A caller that stays on CPU 0: never.
        for _ in 0..10 {
            assert!(!callers.idle_commit(100, 0));
        }
        // It moves to CPU 1: idle commits for CREDIT reads, then one normal one.
        for _ in 0..CREDIT {
            assert!(callers.idle_commit(100, 1));
        }
        assert!(!callers.idle_commit(100, 1));
        // Another caller in the same slot starts from nothing.
        let other = 100 + Callers::SLOTS as u32;
        assert!(!callers.idle_commit(other, 0));
        assert!(!callers.idle_commit(other, 0));
    }
}
