//! Timer descriptors (timerfd_create): a deadline, an optional interval, and the count of
//! expirations a read returns and resets.
//!
//! Times are kept on the monotonic clock; a CLOCK_REALTIME timer's absolute time is turned
//! into a monotonic deadline when it is set (a later change of the wall clock does not move
//! it). Nothing fires in the background: the count is computed from the clock when read or
//! polled, and a poller or reader sleeps until the deadline (see [`earliest_deadline`]).

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::any::Any;

use abi::Errno;
use vfs::{FileType, Metadata, Node, VfsResult};

use crate::sync::Mutex;

/// One timer's settings (monotonic ns; `deadline` None: disarmed).
#[derive(Clone, Copy, Default)]
struct Timer {
    deadline: Option<u64>,
    interval: u64,
    /// Expirations counted (at `deadline`s already passed) and not yet read.
    expirations: u64,
}

impl Timer {
    /// Count the expirations up to `now` into `expirations`, moving the deadline on.
    fn advance(&mut self, now: u64) {
        let Some(d) = self.deadline else { return };
        if now < d {
            return;
        }
        match (now - d).checked_div(self.interval) {
            None => {
                self.expirations = self.expirations.saturating_add(1);
                self.deadline = None;
            }
            Some(q) => {
                let n = q + 1;
                self.expirations = self.expirations.saturating_add(n);
                self.deadline = Some(d.saturating_add(n.saturating_mul(self.interval)));
            }
        }
    }
}

/// A timer descriptor's node.
pub struct TimerFd {
    timer: Mutex<Timer>,
}

/// Every timer descriptor that is armed, for pollers that sleep until one fires.
static ARMED: Mutex<Vec<(usize, u64)>> = Mutex::new(Vec::new());

impl TimerFd {
    /// A disarmed timer.
    pub fn new() -> Arc<TimerFd> {
        Arc::new(TimerFd {
            timer: Mutex::new(Timer::default()),
        })
    }

    fn id(&self) -> usize {
        self as *const TimerFd as usize
    }

    fn publish(&self, t: &Timer) {
        let mut armed = ARMED.lock();
        armed.retain(|(id, _)| *id != self.id());
        if let Some(d) = t.deadline {
            armed.push((self.id(), d));
        }
    }

    /// Arm (`value` > 0: first expiry at monotonic `value`) or disarm (`value` = 0); returns
    /// the old (time left, interval) in ns.
    pub fn set(&self, value: Option<u64>, interval: u64) -> (u64, u64) {
        let now = crate::arch::time::monotonic_ns();
        let mut t = self.timer.lock();
        let old = Self::get_locked(&mut t, now);
        *t = Timer {
            deadline: value,
            interval,
            expirations: 0,
        };
        self.publish(&t);
        old
    }

    fn get_locked(t: &mut Timer, now: u64) -> (u64, u64) {
        t.advance(now);
        (t.deadline.map_or(0, |d| d.saturating_sub(now)), t.interval)
    }

    /// (time left until the next expiry, interval) in ns (timerfd_gettime).
    pub fn get(&self) -> (u64, u64) {
        let now = crate::arch::time::monotonic_ns();
        let mut t = self.timer.lock();
        let r = Self::get_locked(&mut t, now);
        self.publish(&t);
        r
    }

    /// Whether a read would return now.
    pub fn readable(&self) -> bool {
        let mut t = self.timer.lock();
        t.advance(crate::arch::time::monotonic_ns());
        t.expirations > 0
    }

    /// read(2): the expirations since the last read (8 bytes), sleeping until there is one
    /// unless `nonblock` (EAGAIN); EINTR/restart on a signal.
    pub fn read(&self, nonblock: bool) -> Result<u64, Errno> {
        loop {
            let deadline = {
                let mut t = self.timer.lock();
                t.advance(crate::arch::time::monotonic_ns());
                if t.expirations > 0 {
                    let n = core::mem::take(&mut t.expirations);
                    self.publish(&t);
                    return Ok(n);
                }
                t.deadline
            };
            if nonblock {
                return Err(Errno::EAGAIN);
            }
            if crate::task::signal::pending() {
                return Err(crate::task::signal::ERESTARTSYS);
            }
            match deadline {
                Some(d) => crate::task::wait::sleep_until(d),
                // Disarmed: only a signal (or a settime from another thread, which the
                // next timer tick's re-check sees) ends the wait.
                None => crate::task::wait::sleep_until(
                    crate::arch::time::monotonic_ns().saturating_add(10_000_000),
                ),
            }
            crate::task::wait::drop_timers(crate::task::current_tid());
        }
    }
}

impl Drop for TimerFd {
    fn drop(&mut self) {
        let id = self.id();
        ARMED.lock().retain(|(i, _)| *i != id);
    }
}

/// The earliest deadline of any armed timer descriptor (a poller waiting on one sleeps at
/// most until then).
pub fn earliest_deadline() -> Option<u64> {
    ARMED.lock().iter().map(|(_, d)| *d).min()
}

impl Node for TimerFd {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn getattr(&self) -> VfsResult<Metadata> {
        Ok(crate::fs::devfs::meta(0, FileType::Regular, 0o600, 0, 0))
    }
}
