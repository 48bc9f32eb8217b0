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
use std::time::{Duration, Instant};

use super::ring::Ring;
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

    /// Whether the request in `head` (a `fuse_in_header`, then the operation's argument at
    /// `op_in`) is a read small enough for an idle commit.
    pub(super) fn small_read(head: &[u8], op_in: usize) -> bool {
        let word = |at: usize| u32::from_ne_bytes(head[at..at + 4].try_into().unwrap());
        // fuse_in_header.opcode at 4; fuse_read_in.size at 16.
        word(4) == super::READ && (word(op_in + 16) as usize) < split_read::SPLIT_MIN
    }

    /// Submit the commit pushed on `ring`; a small read's as `SCHED_IDLE` (see the module
    /// doc). The caller then waits for the next request as usual.
    pub(super) fn submit(&mut self, ring: &mut Ring, small_read: bool) -> io::Result<()> {
        if !self.idle || !small_read {
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
    use super::super::{GETATTR, HEADER_LEN, OP_IN, READ, WRITE};
    use super::*;

    fn small(opcode: u32, size: u32) -> bool {
        let mut head = vec![0u8; HEADER_LEN];
        head[4..8].copy_from_slice(&opcode.to_ne_bytes());
        head[OP_IN + 16..OP_IN + 20].copy_from_slice(&size.to_ne_bytes());
        Commits::small_read(&head, OP_IN)
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
}
