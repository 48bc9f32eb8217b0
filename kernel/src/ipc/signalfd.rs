//! Signal descriptors (signalfd4): a set of signals that reading the descriptor takes from
//! the reader's pending signals, one 128-byte `signalfd_siginfo` each, instead of their
//! delivery (the program blocks them first, as on Linux).
//!
//! Readable while the reading (or polling) thread has a signal of the set pending. Each
//! record is the signal's siginfo as Linux's `signalfd_copyinfo` lays it out (sender pid and
//! uid, value, a timer's id and overrun, a child's status and times: `task::siginfo`).

use alloc::sync::Arc;
use core::any::Any;

use abi::Errno;
use vfs::{FileType, Metadata, Node, VfsResult};

use crate::sync::Mutex;
use crate::task::signal::{self, bit, SIGKILL, SIGSTOP};

/// The size of Linux's `struct signalfd_siginfo`.
pub const SIGINFO_SIZE: usize = 128;

pub struct SignalFd {
    mask: Mutex<u64>,
}

impl SignalFd {
    pub fn new(mask: u64) -> Arc<SignalFd> {
        let fd = SignalFd {
            mask: Mutex::new(0),
        };
        fd.set_mask(mask);
        Arc::new(fd)
    }

    /// The signals this descriptor reads (SIGKILL and SIGSTOP never: they are not taken).
    pub fn set_mask(&self, mask: u64) {
        *self.mask.lock() = mask & !(bit(SIGKILL) | bit(SIGSTOP));
    }

    pub fn readable(&self) -> bool {
        signal::pending_set() & *self.mask.lock() != 0
    }

    /// read(2) into `buf` (at least one record long): as many records as fit and are
    /// pending, sleeping while there is none unless `nonblock` (EAGAIN); a signal that is
    /// not in the set ends the wait.
    pub fn read(&self, buf: &mut [u8], nonblock: bool) -> Result<usize, Errno> {
        if buf.len() < SIGINFO_SIZE {
            return Err(Errno::EINVAL);
        }
        loop {
            let mask = *self.mask.lock();
            let mut n = 0;
            while n + SIGINFO_SIZE <= buf.len() {
                let Some(info) = signal::take_pending(mask) else {
                    break;
                };
                buf[n..n + SIGINFO_SIZE].copy_from_slice(&info.to_signalfd());
                n += SIGINFO_SIZE;
            }
            if n > 0 {
                return Ok(n);
            }
            if nonblock {
                return Err(Errno::EAGAIN);
            }
            if signal::pending() {
                return Err(signal::ERESTARTSYS);
            }
            // Signal generation wakes the pollers' queue.
            crate::task::wait::POLLERS.sleep();
        }
    }
}

impl Node for SignalFd {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn getattr(&self) -> VfsResult<Metadata> {
        Ok(crate::fs::devfs::meta(0, FileType::Regular, 0o600, 0, 0))
    }
}
