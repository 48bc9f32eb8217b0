//! Where the kernel wakes a caller whose request a ring thread answers.
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
//! commits a reply as `SCHED_IDLE` and takes its normal policy back right after the
//! submission: the caller wakes on its own CPU, runs, and the ring thread is back when the
//! caller waits again. Every request but a large read ([`split_read::SPLIT_MIN`] and more) may
//! be answered so: a large read's halves are read by helper threads that a `SCHED_IDLE`
//! thread would wait behind.
//!
//! And only for a caller seen moving: [`Callers`] keeps, per caller pid, the queue (CPU) of its
//! last request. A caller whose request arrives on another queue than its last one has been
//! moved, and its next [`CREDIT`] requests are committed idle; then one is committed normally
//! again, to see whether it still moves. A caller that does not move (no idle CPU: several
//! callers, a busy machine) costs no extra system call: answered idle always, unlinks were
//! slower (two more system calls each), and whether a caller moves changes with the machine's
//! load. A metadata caller moved at every request in some runs and stayed in others, on the
//! same mount minutes apart (createdel's ordered phases: about 1100-1400 migrations per 1000
//! operations, at 0.6x the speed of runs with 30-190; docs/BENCHMARKS.md).
//!
//! A release is never answered idle, nor counted: the kernel sends it in the background after
//! a close, so nobody waits for it, and with releases counted a caller creating files was
//! seen moving at nearly every request and paid the two system calls for nothing.
//!
//! Even so, idle replies do not keep every metadata caller: one creating files still moved
//! at about every other request with them (the ring thread serving the background release
//! competes with the running caller, which the scheduler then moves to the idle CPU), and
//! created 0.86x as fast as without them. So a caller that moves [`FAILED`] times within one
//! credit of metadata replies gets none for its next [`COOLDOWN`] metadata requests. Small
//! reads keep the rule they had since idle replies began (a move renews the credit), in a
//! table of their own: a reader kept by them still moves now and then.
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
use super::{u32_at, OP_IN, READ, RELEASE, RELEASEDIR};
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

/// Requests committed idle after a caller was seen moving, before it is checked again.
const CREDIT: u64 = 64;

/// A caller that moves this many times within one credit of metadata replies is not kept by
/// them...
const FAILED: u64 = 8;

/// ...and gets normal replies to this many metadata requests before idle ones are tried again.
const COOLDOWN: u64 = 128;

/// In a slot's low 16 bits: set for a cooldown (its count in the bits below); clear for a
/// credit, with the moves seen in it in bits 8-14 (units of [`MOVES`]) and the requests left in
/// bits 0-7.
const COOLING: u64 = 0x8000;
const MOVES: u64 = 0x100;

/// Which requests of a caller a table follows.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Kind {
    /// Reads below [`split_read::SPLIT_MIN`]: a move renews the credit.
    SmallRead,
    /// Every other request a caller waits for: [`FAILED`] moves in a credit end it.
    Other,
}

/// Callers' last queues, shared by the ring threads, one table per [`Kind`]: one word per
/// slot, the caller's pid in the high 32 bits, its last CPU in the next 16 and its credit or
/// cooldown in the low 16 ([`COOLING`]). Two callers hashing to one slot, or two threads
/// updating one at once, only cost a wrong guess.
pub(super) struct Callers {
    reads: Vec<AtomicU64>,
    others: Vec<AtomicU64>,
}

impl Callers {
    const SLOTS: usize = 256;

    pub(super) fn new() -> Callers {
        let table = || (0..Self::SLOTS).map(|_| AtomicU64::new(0)).collect();
        Callers {
            reads: table(),
            others: table(),
        }
    }

    /// Note a request of `kind` by caller `pid` on `cpu`'s queue; whether to commit it idle.
    pub(super) fn idle_commit(&self, kind: Kind, pid: u32, cpu: usize) -> bool {
        let table = match kind {
            Kind::SmallRead => &self.reads,
            Kind::Other => &self.others,
        };
        let slot = &table[pid as usize % Self::SLOTS];
        let old = slot.load(Ordering::Relaxed);
        let (last_pid, last_cpu, low) = (old >> 32, (old >> 16) & 0xffff, old & 0xffff);
        let cpu = cpu as u64 & 0xffff;
        let (credit, moves) = (low & 0xff, (low & !COOLING) / MOVES);
        let moved = last_cpu != cpu;
        let (idle, low) = if last_pid != u64::from(pid) {
            (false, 0)
        } else if low & COOLING != 0 {
            let left = (low & !COOLING).saturating_sub(1);
            (false, if left > 0 { COOLING | left } else { 0 })
        } else if !moved {
            (credit > 0, if credit > 0 { low - 1 } else { 0 })
        } else if credit == 0 || kind == Kind::SmallRead {
            (true, CREDIT - 1)
        } else if moves + 1 >= FAILED {
            // Moving again and again with idle replies: they do not keep this caller.
            (false, COOLING | COOLDOWN)
        } else {
            (true, (moves + 1) * MOVES + credit - 1)
        };
        slot.store(
            (u64::from(pid) << 32) | (cpu << 16) | low,
            Ordering::Relaxed,
        );
        idle
    }
}

/// One ring thread's commits.
pub(super) struct Commits {
    /// Replies to moving callers are committed as `SCHED_IDLE` (when [`allowed`] and the
    /// mount asks for it).
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
    /// be answered idle: one its caller waits for (not a release, which the kernel sends in
    /// the background after close), not a large read, and of a caller [`Callers`] saw moving.
    pub(super) fn wanted(&self, callers: &Callers, head: &[u8], cpu: usize) -> bool {
        if !self.idle {
            return false;
        }
        let pid = u32_at(head, 32);
        match u32_at(head, 4) {
            RELEASE | RELEASEDIR => false,
            READ if Self::large_read(head) => false,
            READ => callers.idle_commit(Kind::SmallRead, pid, cpu),
            _ => callers.idle_commit(Kind::Other, pid, cpu),
        }
    }

    /// Whether the request in `head` is a read large enough to be split between threads.
    fn large_read(head: &[u8]) -> bool {
        // fuse_in_header.opcode at 4; fuse_read_in.size at 16 of the operation's argument.
        u32_at(head, 4) == READ && (u32_at(head, OP_IN + 16) as usize) >= split_read::SPLIT_MIN
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
    use super::super::{GETATTR, HEADER_LEN, UNLINK, WRITE};
    use super::*;

    fn head(opcode: u32, size: u32, pid: u32) -> Vec<u8> {
        let mut head = vec![0u8; HEADER_LEN];
        head[4..8].copy_from_slice(&opcode.to_ne_bytes());
        head[32..36].copy_from_slice(&pid.to_ne_bytes());
        head[OP_IN + 16..OP_IN + 20].copy_from_slice(&size.to_ne_bytes());
        head
    }

    #[test]
    fn only_reads_of_the_split_size_and_more_are_large_reads() {
        let min = split_read::SPLIT_MIN as u32;
        assert!(!Commits::large_read(&head(READ, 4096, 1)));
        assert!(!Commits::large_read(&head(READ, min - 4096, 1)));
        assert!(Commits::large_read(&head(READ, min, 1)));
        assert!(!Commits::large_read(&head(WRITE, min, 1)));
        assert!(!Commits::large_read(&head(GETATTR, 0, 1)));
    }

    #[test]
    fn a_moving_caller_gets_idle_replies_to_anything_but_large_reads() {
        let callers = Callers::new();
        let commits = Commits::new(true);
        let min = split_read::SPLIT_MIN as u32;
        // Metadata requests of a caller that stays on CPU 0: normal replies.
        for _ in 0..5 {
            assert!(!commits.wanted(&callers, &head(UNLINK, 0, 7), 0));
        }
        // It moves to CPU 1: its unlinks and writes are answered idle; its small reads too
        // once it is seen moving between reads.
        assert!(commits.wanted(&callers, &head(UNLINK, 0, 7), 1));
        assert!(commits.wanted(&callers, &head(WRITE, min, 7), 1));
        assert!(!commits.wanted(&callers, &head(READ, 4096, 7), 1));
        assert!(commits.wanted(&callers, &head(READ, 4096, 7), 0));
        // A large read or a release never is (and does not count as a move either way).
        assert!(!commits.wanted(&callers, &head(READ, min, 7), 0));
        assert!(!commits.wanted(&callers, &head(RELEASE, 0, 7), 0));
        assert!(!commits.wanted(&callers, &head(RELEASEDIR, 0, 7), 0));
        assert!(commits.wanted(&callers, &head(GETATTR, 0, 7), 0));
        // Without idle commits (`-o noidle_commits`, or not allowed): never.
        let off = Commits::new(false);
        assert!(!off.wanted(&callers, &head(UNLINK, 0, 8), 0));
        assert!(!off.wanted(&callers, &head(UNLINK, 0, 8), 1));
    }

    #[test]
    fn a_caller_seen_moving_gets_idle_commits_for_a_while() {
        for kind in [Kind::SmallRead, Kind::Other] {
            let callers = Callers::new();
            let idle = |pid, cpu| callers.idle_commit(kind, pid, cpu);
            // A caller that stays on CPU 0: never.
            for _ in 0..10 {
                assert!(!idle(100, 0));
            }
            // It moves to CPU 1: idle commits for CREDIT requests, then one normal one.
            for _ in 0..CREDIT {
                assert!(idle(100, 1));
            }
            assert!(!idle(100, 1));
            // A few moves within a credit (the scheduler's balancing) leave it running.
            assert!(idle(100, 0));
            for i in 1..CREDIT {
                assert!(idle(100, usize::from(i % 16 == 0)), "{kind:?}");
            }
            // (For reads each move renewed the credit: some is left.)
            assert_eq!(idle(100, 0), kind == Kind::SmallRead);
            // Another caller in the same slot starts from nothing.
            let other = 100 + Callers::SLOTS as u32;
            assert!(!idle(other, 0));
            assert!(!idle(other, 0));
        }
    }

    #[test]
    fn a_metadata_caller_that_idle_replies_do_not_keep_goes_without_them_for_a_while() {
        let callers = Callers::new();
        let idle = |kind, pid, cpu: u64| callers.idle_commit(kind, pid, cpu as usize);
        assert!(!idle(Kind::Other, 7, 0));
        // Moves: idle replies begin...
        assert!(idle(Kind::Other, 7, 1));
        // ...and it keeps moving: FAILED - 1 more idle replies, then none for COOLDOWN
        // requests, wherever they come from.
        for i in 0..FAILED - 1 {
            assert!(idle(Kind::Other, 7, i % 2));
        }
        let mut n = 0;
        for i in 0..COOLDOWN {
            n += u64::from(idle(Kind::Other, 7, (i + 1) % 2));
        }
        assert_eq!(n, 0);
        // Then a move gets idle replies again.
        assert!(!idle(Kind::Other, 7, 0));
        assert!(idle(Kind::Other, 7, 1));
        // A caller moving at every request gets at most FAILED idle replies per cooldown...
        let mut n = 0;
        for i in 0..10 * COOLDOWN {
            n += u64::from(idle(Kind::Other, 9, i % 2));
        }
        assert!(n <= 10 * FAILED, "{n} idle replies");
        // ...but a reader moving as often keeps them.
        let mut n = 0;
        for i in 0..10 * COOLDOWN {
            n += u64::from(idle(Kind::SmallRead, 9, i % 2));
        }
        assert_eq!(n, 10 * COOLDOWN - 1);
    }
}
