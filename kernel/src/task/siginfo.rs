//! What a pending signal carries (task layer): Linux's `siginfo_t` as a typed value
//! ([`SigInfo`]), its 128-byte user layouts (the `siginfo_t` a handler, sigtimedwait and
//! rt_sigqueueinfo see, and signalfd's `signalfd_siginfo`), and the queue a process or a
//! thread keeps of them ([`SigQueue`]).
//!
//! Queueing follows Linux's `__send_signal`: a standard signal (1..=31) is pending once at
//! most, a second one while it is pending is dropped; a real-time signal (32..=64) is queued
//! each time it is sent, in order. Every queued siginfo is charged to the receiving
//! process's real user, up to its RLIMIT_SIGPENDING: past it a real-time signal sent with
//! its own siginfo (sigqueue, a timer, tgkill) fails with EAGAIN, while kill(2) and the
//! kernel's own signals still make it pending, without their siginfo (it then reads as
//! SI_USER from pid 0). Data only: `signal` decides and wakes, `sigframe` delivers.

use alloc::vec::Vec;

use crate::arch::lockcheck::{rank, SpinLock};

/// The first real-time signal (the kernel's SIGRTMIN; glibc keeps 32..34 for itself).
pub const SIGRTMIN: usize = 32;

/// `si_code` values (asm-generic/siginfo.h; those a sender gives, SI_QUEUE, SI_MESGQ and
/// SI_ASYNCIO, arrive from user space and are kept as given).
pub const SI_USER: i32 = 0;
pub const SI_KERNEL: i32 = 0x80;
pub const SI_TIMER: i32 = -2;
pub const SI_SIGIO: i32 = -5;
pub const SI_TKILL: i32 = -6;
pub const CLD_EXITED: i32 = 1;
pub const CLD_KILLED: i32 = 2;
pub const CLD_DUMPED: i32 = 3;
pub const CLD_STOPPED: i32 = 5;
pub const CLD_CONTINUED: i32 = 6;
/// SIGPOLL's (and signal-driven I/O's) codes: data to read, room to write, a message (a
/// lease broken), the other end gone.
pub const POLL_IN: i32 = 1;
pub const POLL_OUT: i32 = 2;
pub const POLL_MSG: i32 = 3;
pub const POLL_HUP: i32 = 6;

/// The size of `siginfo_t` and of `struct signalfd_siginfo`.
pub const SIGINFO_BYTES: usize = 128;

/// One signal's siginfo. Which fields mean something depends on the layout its signal and
/// code select (Linux's `siginfo_layout`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SigInfo {
    pub signo: i32,
    pub errno: i32,
    pub code: i32,
    /// The sender (kill, rt, child layouts); the timer's id (timer layout).
    pub pid: u32,
    /// The sender's real uid (kill, rt, child); the overrun (timer).
    pub uid: u32,
    /// `si_value` (rt, timer); `si_status` (child); `si_fd` (poll).
    pub value: u64,
    /// `si_utime`, `si_stime` (child, clock ticks); `si_addr` is `utime` (fault), `si_band`
    /// (poll).
    pub utime: u64,
    pub stime: u64,
}

/// The union member of `siginfo_t` a siginfo uses.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Layout {
    Kill,
    Timer,
    Poll,
    Fault,
    Child,
    Rt,
}

const SIGILL: i32 = 4;
const SIGTRAP: i32 = 5;
const SIGBUS: i32 = 7;
const SIGFPE: i32 = 8;
const SIGSEGV: i32 = 11;
const SIGCHLD: i32 = 17;
const SIGPOLL: i32 = 29;

impl SigInfo {
    /// A signal sent by kill(2), or by the kernel with `code` SI_USER/SI_KERNEL.
    pub fn kill(sig: usize, code: i32, pid: usize, uid: u32) -> SigInfo {
        SigInfo {
            signo: sig as i32,
            code,
            pid: pid as u32,
            uid,
            ..SigInfo::default()
        }
    }

    /// A fault's signal (`code` one of the fault codes, between SI_USER and SI_KERNEL) at
    /// `addr` (`si_addr`).
    pub fn fault(sig: usize, code: i32, addr: usize) -> SigInfo {
        SigInfo {
            signo: sig as i32,
            code,
            utime: addr as u64,
            ..SigInfo::default()
        }
    }

    /// A POSIX timer's signal: timer `id`, its `overrun` so far, the sigevent's value.
    pub fn timer(sig: usize, id: i32, overrun: i32, value: u64) -> SigInfo {
        SigInfo {
            signo: sig as i32,
            code: SI_TIMER,
            pid: id as u32,
            uid: overrun as u32,
            value,
            ..SigInfo::default()
        }
    }

    /// SIGCHLD for child `pid` of user `uid` that ended with `code` (CLD_EXITED: `status`
    /// is its exit code; CLD_KILLED: the signal), having used `utime`/`stime` ticks.
    pub fn child(code: i32, pid: usize, uid: u32, status: i32, utime: u64, stime: u64) -> SigInfo {
        SigInfo {
            signo: SIGCHLD,
            code,
            pid: pid as u32,
            uid,
            value: status as u32 as u64,
            utime,
            stime,
            ..SigInfo::default()
        }
    }

    /// Signal-driven I/O's signal `sig` (F_SETSIG's, or SIGIO) for descriptor `fd`: `code`
    /// is POLL_IN, POLL_OUT, POLL_MSG or POLL_HUP, `band` the poll events. A signal with
    /// codes of its own (SIGCHLD, the fault signals) says SI_SIGIO instead, as Linux's.
    pub fn poll(sig: usize, code: i32, fd: i32, band: i64) -> SigInfo {
        let own_codes = matches!(
            sig as i32,
            SIGCHLD | SIGILL | SIGFPE | SIGSEGV | SIGBUS | SIGTRAP
        );
        SigInfo {
            signo: sig as i32,
            code: if own_codes { SI_SIGIO } else { code },
            value: fd as u32 as u64,
            utime: band as u64,
            ..SigInfo::default()
        }
    }

    fn layout(&self) -> Layout {
        if self.code > SI_USER && self.code < SI_KERNEL {
            match self.signo {
                SIGCHLD => Layout::Child,
                SIGPOLL => Layout::Poll,
                SIGILL | SIGFPE | SIGSEGV | SIGBUS | SIGTRAP => Layout::Fault,
                // Linux extends SIGPOLL's codes to the signal F_SETSIG picks.
                _ if self.code <= POLL_HUP => Layout::Poll,
                _ => Layout::Kill,
            }
        } else if self.code == SI_TIMER {
            Layout::Timer
        } else if self.code == SI_SIGIO {
            Layout::Poll
        } else if self.code < 0 {
            Layout::Rt
        } else {
            Layout::Kill
        }
    }

    /// The user's `siginfo_t` (riscv64: the union at offset 16).
    pub fn to_user(self) -> [u8; SIGINFO_BYTES] {
        let mut b = [0u8; SIGINFO_BYTES];
        put32(&mut b, 0, self.signo as u32);
        put32(&mut b, 4, self.errno as u32);
        put32(&mut b, 8, self.code as u32);
        match self.layout() {
            Layout::Kill => {
                put32(&mut b, 16, self.pid);
                put32(&mut b, 20, self.uid);
            }
            Layout::Timer | Layout::Rt => {
                put32(&mut b, 16, self.pid);
                put32(&mut b, 20, self.uid);
                put64(&mut b, 24, self.value);
            }
            Layout::Child => {
                put32(&mut b, 16, self.pid);
                put32(&mut b, 20, self.uid);
                put32(&mut b, 24, self.value as u32);
                put64(&mut b, 32, self.utime);
                put64(&mut b, 40, self.stime);
            }
            Layout::Fault => put64(&mut b, 16, self.utime),
            Layout::Poll => {
                put64(&mut b, 16, self.utime);
                put32(&mut b, 24, self.value as u32);
            }
        }
        b
    }

    /// A `siginfo_t` from user memory (rt_sigqueueinfo, pidfd_send_signal), read as the
    /// layout its code selects.
    pub fn from_user(b: &[u8; SIGINFO_BYTES]) -> SigInfo {
        let mut i = SigInfo {
            signo: get32(b, 0) as i32,
            errno: get32(b, 4) as i32,
            code: get32(b, 8) as i32,
            ..SigInfo::default()
        };
        match i.layout() {
            Layout::Kill => {
                i.pid = get32(b, 16);
                i.uid = get32(b, 20);
            }
            Layout::Timer | Layout::Rt => {
                i.pid = get32(b, 16);
                i.uid = get32(b, 20);
                i.value = get64(b, 24);
            }
            Layout::Child => {
                i.pid = get32(b, 16);
                i.uid = get32(b, 20);
                i.value = get32(b, 24) as u64;
                i.utime = get64(b, 32);
                i.stime = get64(b, 40);
            }
            Layout::Fault => i.utime = get64(b, 16),
            Layout::Poll => {
                i.utime = get64(b, 16);
                i.value = get32(b, 24) as u64;
            }
        }
        i
    }

    /// The `struct signalfd_siginfo` a signalfd read gives (Linux's `signalfd_copyinfo`).
    pub fn to_signalfd(self) -> [u8; SIGINFO_BYTES] {
        let mut b = [0u8; SIGINFO_BYTES];
        put32(&mut b, 0, self.signo as u32); // ssi_signo
        put32(&mut b, 4, self.errno as u32); // ssi_errno
        put32(&mut b, 8, self.code as u32); // ssi_code
        match self.layout() {
            Layout::Kill => {
                put32(&mut b, 12, self.pid); // ssi_pid
                put32(&mut b, 16, self.uid); // ssi_uid
            }
            Layout::Timer => {
                put32(&mut b, 24, self.pid); // ssi_tid
                put32(&mut b, 32, self.uid); // ssi_overrun
                put32(&mut b, 44, self.value as u32); // ssi_int
                put64(&mut b, 48, self.value); // ssi_ptr
            }
            Layout::Poll => {
                put32(&mut b, 28, self.utime as u32); // ssi_band
                put32(&mut b, 20, self.value as u32); // ssi_fd
            }
            Layout::Fault => put64(&mut b, 72, self.utime), // ssi_addr
            Layout::Child => {
                put32(&mut b, 12, self.pid);
                put32(&mut b, 16, self.uid);
                put32(&mut b, 40, self.value as u32); // ssi_status
                put64(&mut b, 56, self.utime); // ssi_utime
                put64(&mut b, 64, self.stime); // ssi_stime
            }
            Layout::Rt => {
                put32(&mut b, 12, self.pid);
                put32(&mut b, 16, self.uid);
                put32(&mut b, 44, self.value as u32);
                put64(&mut b, 48, self.value);
            }
        }
        b
    }
}

fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

fn put64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

fn get32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn get64(b: &[u8], at: usize) -> u64 {
    u64::from(get32(b, at)) | u64::from(get32(b, at + 4)) << 32
}

/// Queued siginfos per real user (Linux's `ucounts` sigpending count): (uid, count).
static QUEUED_BY_USER: SpinLock<Vec<(u32, usize)>, { rank::SIGQUEUE_USERS }> =
    SpinLock::new(Vec::new());

/// Charge one siginfo to `uid` unless that would pass `limit` (and `force` is false).
fn charge(uid: u32, limit: u64, force: bool) -> bool {
    let mut users = QUEUED_BY_USER.lock();
    let i = match users.iter().position(|u| u.0 == uid) {
        Some(i) => i,
        None => {
            users.push((uid, 0));
            users.len() - 1
        }
    };
    if !force && users[i].1 as u64 >= limit {
        return false;
    }
    users[i].1 += 1;
    true
}

fn uncharge(uid: u32) {
    let mut users = QUEUED_BY_USER.lock();
    if let Some(i) = users.iter().position(|u| u.0 == uid) {
        users[i].1 -= 1;
        if users[i].1 == 0 {
            users.swap_remove(i);
        }
    }
}

/// The siginfos queued for `uid` (/proc/PID/status SigQ).
pub fn queued_by(uid: u32) -> usize {
    QUEUED_BY_USER
        .lock()
        .iter()
        .find(|u| u.0 == uid)
        .map_or(0, |u| u.1)
}

/// The siginfos pending for one process or one thread, oldest first, each with the user it
/// is charged to. The pending bit of a signal is set while it has one here or its siginfo
/// was lost to the limit (`signal` keeps the two together under this queue's lock).
pub struct SigQueue {
    items: Vec<(SigInfo, u32)>,
}

/// Whether queueing a siginfo failed for the limit (the caller decides between EAGAIN and
/// a pending signal without its siginfo).
pub struct OverLimit;

impl SigQueue {
    pub const fn new() -> SigQueue {
        SigQueue { items: Vec::new() }
    }

    /// Queue `info`, charged to `uid` whose limit is `limit`; `force` ignores the limit.
    pub fn push(
        &mut self,
        info: SigInfo,
        uid: u32,
        limit: u64,
        force: bool,
    ) -> Result<(), OverLimit> {
        if self.items.try_reserve(1).is_err() || !charge(uid, limit, force) {
            return Err(OverLimit);
        }
        self.items.push((info, uid));
        Ok(())
    }

    /// Take the oldest siginfo of `sig`; whether another one of it stays queued.
    pub fn take(&mut self, sig: usize) -> (Option<SigInfo>, bool) {
        let Some(i) = self.items.iter().position(|q| q.0.signo == sig as i32) else {
            return (None, false);
        };
        let (info, uid) = self.items.remove(i);
        uncharge(uid);
        let more = self.items.iter().any(|q| q.0.signo == sig as i32);
        (Some(info), more)
    }

    /// Drop every siginfo of `sig` (the signal is now ignored).
    pub fn discard(&mut self, sig: usize) {
        while self.take(sig).0.is_some() {}
    }

    /// The oldest queued siginfo `pick` selects, to update (a timer's overrun).
    pub fn find_mut(&mut self, pick: impl Fn(&SigInfo) -> bool) -> Option<&mut SigInfo> {
        self.items.iter_mut().map(|q| &mut q.0).find(|i| pick(i))
    }

    /// Drop every queued siginfo (the thread or process is gone).
    pub fn clear(&mut self) {
        for (_, uid) in self.items.drain(..) {
            uncharge(uid);
        }
    }
}

impl Default for SigQueue {
    fn default() -> Self {
        SigQueue::new()
    }
}

impl Drop for SigQueue {
    fn drop(&mut self) {
        self.clear();
    }
}
