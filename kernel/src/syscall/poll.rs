//! Waiting for descriptors: ppoll and pselect6.
//!
//! Readiness: a pipe end asks its pipe, a socket its queues and its peer's, the terminal asks
//! the line discipline, an eventfd its counter, a signalfd the caller's pending signals, a pidfd its process's exit, every other
//! file is always ready (as on Linux for regular files). A caller with nothing ready sleeps on
//! one queue, `task::wait::POLLERS`, that pipes and the terminal wake on every change
//! (`task::wait::poll_wake`: the queue is the task layer's, so the file layer wakes it without
//! naming the system-call layer);
//! it then looks again. Timeouts use the timer list; a signal ends the wait with EINTR.

use alloc::vec;
use alloc::vec::Vec;

use abi::Errno;

use super::args::{copy_in, copy_out, SysResult};
use super::stream::{stream_of, Stream};
use crate::task::signal;
use crate::task::wait::POLLERS;
use crate::task::with_current;

const POLLIN: u16 = 0x1;
const POLLOUT: u16 = 0x4;
const POLLERR: u16 = 0x8;
const POLLHUP: u16 = 0x10;
const POLLNVAL: u16 = 0x20;
const POLLRDNORM: u16 = 0x40;
const POLLWRNORM: u16 = 0x100;

/// The events of `fd` among `events` (plus POLLERR/POLLHUP/POLLNVAL, always reported).
fn poll_one(fd: i32, events: u16) -> u16 {
    match with_current(|p| p.files.fds().get(fd)) {
        Ok(f) => poll_file(&f, events),
        Err(_) => POLLNVAL,
    }
}

/// The events of the open file `f` among `events` (plus POLLERR/POLLHUP, always reported).
pub(super) fn poll_file(f: &crate::fs::file::OpenFile, events: u16) -> u16 {
    if let Some(ep) = crate::ipc::epoll::epoll_of(f) {
        return if ep.any_ready(poll_file) {
            events & (POLLIN | POLLRDNORM)
        } else {
            0
        };
    }
    let want_in = events & (POLLIN | POLLRDNORM) != 0;
    let want_out = events & (POLLOUT | POLLWRNORM) != 0;
    let mut rev = 0;
    if let Some(pf) = f
        .loc
        .node
        .as_any()
        .downcast_ref::<crate::ipc::pidfd::PidFd>()
    {
        // A process descriptor: readable once the process has exited.
        return if pf.exited() {
            events & (POLLIN | POLLRDNORM)
        } else {
            0
        };
    }
    match stream_of(f) {
        Some(Stream::Pipe(end)) => {
            let (r, w, hup) = end.pipe.poll(end.read, end.write);
            if r && want_in {
                rev |= events & (POLLIN | POLLRDNORM);
            }
            if w && want_out {
                rev |= events & (POLLOUT | POLLWRNORM);
            }
            if hup {
                rev |= if end.read { POLLHUP } else { POLLERR };
            }
        }
        Some(Stream::Event(e)) => {
            let (r, w, overflow) = e.poll();
            if r && want_in {
                rev |= events & (POLLIN | POLLRDNORM);
            }
            if w && want_out {
                rev |= events & (POLLOUT | POLLWRNORM);
            }
            if overflow {
                rev |= POLLERR;
            }
        }
        Some(Stream::Signal(s)) => {
            if want_in && s.readable() {
                rev |= events & (POLLIN | POLLRDNORM);
            }
        }
        Some(Stream::Timer(t)) => {
            if want_in && t.readable() {
                rev |= events & (POLLIN | POLLRDNORM);
            }
        }
        Some(Stream::Socket(s)) => {
            let (r, w, hup, err) = s.poll();
            if r && want_in {
                rev |= events & (POLLIN | POLLRDNORM);
            }
            if w && want_out {
                rev |= events & (POLLOUT | POLLWRNORM);
            }
            if hup {
                rev |= POLLHUP;
            }
            if err {
                rev |= POLLERR;
            }
        }
        Some(Stream::Tty) => {
            if want_in && crate::tty::readable() {
                rev |= events & (POLLIN | POLLRDNORM);
            }
            rev |= events & (POLLOUT | POLLWRNORM);
        }
        None => rev |= events & (POLLIN | POLLRDNORM | POLLOUT | POLLWRNORM),
    }
    rev
}

/// A relative timeout from user memory, as a deadline on the monotonic clock (None: wait
/// forever).
pub(super) fn deadline(tmo: usize) -> Result<Option<u64>, Errno> {
    if tmo == 0 {
        return Ok(None);
    }
    let ns = super::misc::read_timespec_ns(tmo)?;
    Ok(Some(crate::arch::time::monotonic_ns().saturating_add(ns)))
}

/// Install a temporary signal mask for the wait; the old one comes back on return (or after
/// the handler of the signal that ended the wait).
pub(super) fn with_mask<R>(mask: Option<u64>, f: impl FnOnce() -> R) -> R {
    let Some(m) = mask else { return f() };
    let old = crate::task::with_thread(|t| {
        let old = t.sig.blocked;
        t.sig.set_blocked(m);
        old
    });
    let r = f();
    if signal::pending() {
        crate::task::with_thread(|t| t.sig.saved_mask = Some(old));
    } else {
        crate::task::with_thread(|t| t.sig.blocked = old);
    }
    r
}

pub(super) fn read_sigmask(ptr: usize, size: usize) -> Result<Option<u64>, Errno> {
    if ptr == 0 {
        return Ok(None);
    }
    if size != 8 {
        return Err(Errno::EINVAL);
    }
    let mut b = [0u8; 8];
    copy_in(ptr, &mut b)?;
    Ok(Some(u64::from_le_bytes(b)))
}

/// Sleep until `ready` returns Some, the deadline passes (Some(0)... returned as `timeout`),
/// or a signal arrives (EINTR).
pub(super) fn wait_loop(
    deadline: Option<u64>,
    mut ready: impl FnMut() -> Option<usize>,
) -> Result<usize, Errno> {
    loop {
        if let Some(n) = ready() {
            return Ok(n);
        }
        if deadline.is_some_and(|d| crate::arch::time::monotonic_ns() >= d) {
            return Ok(0);
        }
        if signal::pending() {
            return Err(Errno::EINTR);
        }
        // A timer descriptor becomes readable at its deadline, with no one to wake us then.
        let wake_at = match (deadline, crate::ipc::timerfd::earliest_deadline()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        POLLERS.sleep_until(wake_at);
    }
}

pub fn sys_ppoll(fds: usize, nfds: usize, tmo: usize, sigmask: usize, size: usize) -> SysResult {
    if nfds > crate::task::with_current(|p| p.files.fds().limit()) {
        return Err(Errno::EINVAL);
    }
    let mut raw = vec![0u8; nfds * 8];
    copy_in(fds, &mut raw)?;
    let entries: Vec<(i32, u16)> = raw
        .chunks_exact(8)
        .map(|c| {
            (
                i32::from_le_bytes([c[0], c[1], c[2], c[3]]),
                u16::from_le_bytes([c[4], c[5]]),
            )
        })
        .collect();
    let dl = deadline(tmo)?;
    let mask = read_sigmask(sigmask, size)?;
    let mut revents = vec![0u16; nfds];
    let n = with_mask(mask, || {
        wait_loop(dl, || {
            let mut n = 0;
            for (i, &(fd, ev)) in entries.iter().enumerate() {
                revents[i] = if fd < 0 { 0 } else { poll_one(fd, ev) };
                if revents[i] != 0 {
                    n += 1;
                }
            }
            (n > 0).then_some(n)
        })
    })?;
    for (i, r) in revents.iter().enumerate() {
        raw[i * 8 + 6..i * 8 + 8].copy_from_slice(&r.to_le_bytes());
    }
    copy_out(fds, &raw)?;
    Ok(n)
}

pub fn sys_pselect6(
    nfds: usize,
    rfds: usize,
    wfds: usize,
    efds: usize,
    tmo: usize,
    sig: usize,
) -> SysResult {
    if nfds > crate::task::with_current(|p| p.files.fds().limit()) {
        return Err(Errno::EINVAL);
    }
    let bytes = nfds.div_ceil(64) * 8;
    let load = |ptr: usize| -> Result<Vec<u8>, Errno> {
        let mut v = vec![0u8; bytes];
        if ptr != 0 {
            copy_in(ptr, &mut v)?;
        }
        Ok(v)
    };
    let (rin, win, ein) = (load(rfds)?, load(wfds)?, load(efds)?);
    let isset = |v: &[u8], fd: usize| v[fd / 8] & (1 << (fd % 8)) != 0;
    for fd in 0..nfds {
        if (isset(&rin, fd) || isset(&win, fd) || isset(&ein, fd))
            && with_current(|p| p.files.fds().get(fd as i32)).is_err()
        {
            return Err(Errno::EBADF);
        }
    }
    let dl = deadline(tmo)?;
    // The sixth argument points at { const sigset_t *ss; size_t ss_len; }.
    let mask = if sig != 0 {
        let mut b = [0u8; 16];
        copy_in(sig, &mut b)?;
        let ptr = usize::from_le_bytes(b[..8].try_into().unwrap_or([0; 8]));
        let len = usize::from_le_bytes(b[8..].try_into().unwrap_or([0; 8]));
        read_sigmask(ptr, len)?
    } else {
        None
    };
    let (mut rout, mut wout, mut eout) = (vec![0u8; bytes], vec![0u8; bytes], vec![0u8; bytes]);
    let n = with_mask(mask, || {
        wait_loop(dl, || {
            let mut n = 0;
            rout.fill(0);
            wout.fill(0);
            eout.fill(0);
            for fd in 0..nfds {
                let mut ev = 0;
                if isset(&rin, fd) {
                    ev |= POLLIN;
                }
                if isset(&win, fd) {
                    ev |= POLLOUT;
                }
                if ev == 0 && !isset(&ein, fd) {
                    continue;
                }
                let r = poll_one(fd as i32, ev);
                if isset(&rin, fd) && r & (POLLIN | POLLHUP | POLLERR) != 0 {
                    rout[fd / 8] |= 1 << (fd % 8);
                    n += 1;
                }
                if isset(&win, fd) && r & (POLLOUT | POLLERR) != 0 {
                    wout[fd / 8] |= 1 << (fd % 8);
                    n += 1;
                }
            }
            (n > 0).then_some(n)
        })
    })?;
    if rfds != 0 {
        copy_out(rfds, &rout)?;
    }
    if wfds != 0 {
        copy_out(wfds, &wout)?;
    }
    if efds != 0 {
        copy_out(efds, &eout)?;
    }
    Ok(n)
}
