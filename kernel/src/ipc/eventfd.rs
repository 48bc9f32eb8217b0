//! Event descriptors (eventfd2): a 64-bit counter that write adds to and read takes.
//!
//! As Linux: read returns the whole count and zeroes it (in semaphore mode, 1 and
//! decrements), sleeping while it is 0; write adds an 8-byte value, sleeping while the sum
//! would pass 0xffff_ffff_ffff_fffe; a value of all ones is EINVAL; buffers shorter than 8
//! bytes are EINVAL. Readable (POLLIN) while the count is above 0, writable (POLLOUT) while
//! 1 more would fit, POLLERR at all ones (only an AIO completion, `signal`, gets there).
//! Every change wakes the other side and the pollers.

use alloc::sync::Arc;
use core::any::Any;

use abi::Errno;
use vfs::{FileType, Metadata, Node, VfsResult};

use crate::sync::Mutex;
use crate::task::signal;
use crate::task::wait::WaitQueue;

/// The largest count an eventfd holds.
pub const EVENTFD_MAX: u64 = u64::MAX - 1;

pub struct EventFd {
    count: Mutex<u64>,
    semaphore: bool,
    readable: WaitQueue,
    writable: WaitQueue,
}

impl EventFd {
    pub fn new(initial: u64, semaphore: bool) -> Arc<EventFd> {
        Arc::new(EventFd {
            count: Mutex::new(initial),
            semaphore,
            readable: WaitQueue::new(),
            writable: WaitQueue::new(),
        })
    }

    fn changed(&self) {
        self.readable.wake_all();
        self.writable.wake_all();
        crate::task::wait::poll_wake();
    }

    /// (readable, writable, overflowed) now: an AIO completion ([`Self::signal`]) may push the
    /// count to all ones, which poll reports as POLLERR, as Linux does.
    pub fn poll(&self) -> (bool, bool, bool) {
        let c = *self.count.lock();
        (c > 0, c < EVENTFD_MAX, c == u64::MAX)
    }

    /// read(2): the count (or 1 in semaphore mode), sleeping while it is 0 unless
    /// `nonblock` (EAGAIN); a signal ends the wait.
    pub fn read(&self, nonblock: bool) -> Result<u64, Errno> {
        loop {
            {
                let mut c = self.count.lock();
                if *c > 0 {
                    let v = if self.semaphore { 1 } else { *c };
                    *c -= v;
                    drop(c);
                    self.changed();
                    return Ok(v);
                }
            }
            if nonblock {
                return Err(Errno::EAGAIN);
            }
            if signal::pending() {
                return Err(signal::ERESTARTSYS);
            }
            self.readable.sleep();
        }
    }

    /// Add `n` without waiting, as Linux's `eventfd_signal` for a completed AIO request
    /// (`IOCB_FLAG_RESFD`): the count stops at all ones (the overflow state, POLLERR; a read
    /// returns it and empties the counter) rather than wait for room.
    pub fn signal(&self, n: u64) {
        {
            let mut c = self.count.lock();
            *c = c.saturating_add(n);
        }
        self.changed();
    }

    /// write(2): add `v`, sleeping while it does not fit unless `nonblock` (EAGAIN).
    pub fn write(&self, v: u64, nonblock: bool) -> Result<(), Errno> {
        if v == u64::MAX {
            return Err(Errno::EINVAL);
        }
        loop {
            {
                let mut c = self.count.lock();
                if EVENTFD_MAX.checked_sub(*c).is_some_and(|room| room >= v) {
                    *c += v;
                    drop(c);
                    if v > 0 {
                        self.changed();
                    }
                    return Ok(());
                }
            }
            if nonblock {
                return Err(Errno::EAGAIN);
            }
            if signal::pending() {
                return Err(signal::ERESTARTSYS);
            }
            self.writable.sleep();
        }
    }
}

impl Node for EventFd {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn getattr(&self) -> VfsResult<Metadata> {
        Ok(crate::fs::devfs::meta(0, FileType::Regular, 0o600, 0, 0))
    }
}
