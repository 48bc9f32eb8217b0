//! A minimal io_uring for one thread, by raw system calls: push 128-byte SQEs, submit them and
//! wait for one completion. All [`super`] needs; no crate wraps the 128-byte `URING_CMD` SQEs
//! the FUSE commands require.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, Ordering};

// io_uring ABI (include/uapi/linux/io_uring.h).
const IORING_SETUP_SQE128: u32 = 1 << 10;
const IORING_FEAT_SINGLE_MMAP: u32 = 1 << 0;
const IORING_OFF_SQ_RING: i64 = 0;
const IORING_OFF_CQ_RING: i64 = 0x800_0000;
const IORING_OFF_SQES: i64 = 0x1000_0000;
const IORING_ENTER_GETEVENTS: u32 = 1;
pub(super) const IORING_OP_URING_CMD: u8 = 46;
pub(super) const SQE_SIZE: usize = 128;

/// A minimal io_uring of one thread: push SQEs, submit and wait for one completion.
pub(super) struct Ring {
    fd: OwnedFd,
    sq_map: *mut u8,
    sq_map_len: usize,
    cq_map: *mut u8,
    cq_map_len: usize,
    sqes: *mut u8,
    sqes_len: usize,
    sq_tail: *const AtomicU32,
    sq_mask: u32,
    sq_array: *mut u32,
    cq_head: *const AtomicU32,
    cq_tail: *const AtomicU32,
    cq_mask: u32,
    cqes: *const u8,
    local_tail: u32,
    to_submit: u32,
}

impl Ring {
    pub(super) fn new(entries: u32) -> io::Result<Ring> {
        // io_uring_params: 10 u32s, then sq_off (40 bytes) and cq_off (40 bytes).
        let mut p = [0u32; 30];
        p[2] = IORING_SETUP_SQE128;
        // SAFETY: the kernel fills `p` (120 bytes).
        let fd = unsafe { libc::syscall(libc::SYS_io_uring_setup, entries, p.as_mut_ptr()) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a new descriptor we own.
        let fd: OwnedFd = unsafe { std::os::fd::FromRawFd::from_raw_fd(fd as i32) };
        let (sq_entries, cq_entries, features) = (p[0], p[1], p[5]);
        let sq_off = &p[10..20];
        let cq_off = &p[20..30];
        let sq_len = sq_off[6] as usize + sq_entries as usize * 4;
        let cq_len = cq_off[5] as usize + cq_entries as usize * 16;
        let single = features & IORING_FEAT_SINGLE_MMAP != 0;
        let map = |len: usize, off: i64| -> io::Result<*mut u8> {
            // SAFETY: mapping the ring the kernel made for `fd`.
            let m = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED | libc::MAP_POPULATE,
                    fd.as_raw_fd(),
                    off,
                )
            };
            if m == libc::MAP_FAILED {
                Err(io::Error::last_os_error())
            } else {
                Ok(m.cast())
            }
        };
        let (sq_map_len, cq_map_len) = if single {
            (sq_len.max(cq_len), 0)
        } else {
            (sq_len, cq_len)
        };
        let sq_map = map(sq_map_len, IORING_OFF_SQ_RING)?;
        let cq_map = if single {
            sq_map
        } else {
            map(cq_map_len, IORING_OFF_CQ_RING)?
        };
        let sqes_len = sq_entries as usize * SQE_SIZE;
        let sqes = map(sqes_len, IORING_OFF_SQES)?;
        // SAFETY: offsets the kernel gave, inside the maps.
        unsafe {
            Ok(Ring {
                sq_tail: sq_map.add(sq_off[1] as usize).cast(),
                sq_mask: *sq_map.add(sq_off[2] as usize).cast::<u32>(),
                sq_array: sq_map.add(sq_off[6] as usize).cast(),
                cq_head: cq_map.add(cq_off[0] as usize).cast(),
                cq_tail: cq_map.add(cq_off[1] as usize).cast(),
                cq_mask: *cq_map.add(cq_off[2] as usize).cast::<u32>(),
                cqes: cq_map.add(cq_off[5] as usize),
                local_tail: (*sq_map.add(sq_off[1] as usize).cast::<AtomicU32>())
                    .load(Ordering::Acquire),
                fd,
                sq_map,
                sq_map_len,
                cq_map,
                cq_map_len,
                sqes,
                sqes_len,
                to_submit: 0,
            })
        }
    }

    /// Queue one SQE (the ring has room: a thread has at most one in flight).
    pub(super) fn push(&mut self, sqe: &[u8; SQE_SIZE]) {
        let idx = self.local_tail & self.sq_mask;
        // SAFETY: `idx` is inside the SQE array and the array of indexes.
        unsafe {
            std::ptr::copy_nonoverlapping(
                sqe.as_ptr(),
                self.sqes.add(idx as usize * SQE_SIZE),
                SQE_SIZE,
            );
            *self.sq_array.add(idx as usize) = idx;
            self.local_tail = self.local_tail.wrapping_add(1);
            (*self.sq_tail).store(self.local_tail, Ordering::Release);
        }
        self.to_submit += 1;
    }

    /// One `io_uring_enter`: submit what was pushed, and wait for `min_complete` completions
    /// when `flags` has `IORING_ENTER_GETEVENTS`. An interrupted call counts as done (the
    /// callers loop).
    fn enter(&mut self, min_complete: u32, flags: u32) -> io::Result<()> {
        // SAFETY: io_uring_enter on our ring.
        let r = unsafe {
            libc::syscall(
                libc::SYS_io_uring_enter,
                self.fd.as_raw_fd(),
                self.to_submit,
                min_complete,
                flags,
                std::ptr::null::<libc::sigset_t>(),
                0usize,
            )
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            return if e.raw_os_error() == Some(libc::EINTR) {
                Ok(())
            } else {
                Err(e)
            };
        }
        self.to_submit -= (r as u32).min(self.to_submit);
        Ok(())
    }

    /// Submit what was pushed without waiting for anything.
    pub(super) fn submit(&mut self) -> io::Result<()> {
        while self.to_submit > 0 {
            self.enter(0, 0)?;
        }
        Ok(())
    }

    /// Submit what was pushed and wait for a completion; its result.
    pub(super) fn submit_and_wait(&mut self) -> io::Result<i32> {
        loop {
            // SAFETY: the completion ring's head and tail, shared with the kernel.
            let (head, tail) = unsafe {
                (
                    (*self.cq_head).load(Ordering::Relaxed),
                    (*self.cq_tail).load(Ordering::Acquire),
                )
            };
            if head != tail && self.to_submit == 0 {
                let off = (head & self.cq_mask) as usize * 16;
                // SAFETY: a completion the kernel published (res at offset 8).
                let res = unsafe { std::ptr::read_volatile(self.cqes.add(off + 8).cast::<i32>()) };
                unsafe { (*self.cq_head).store(head.wrapping_add(1), Ordering::Release) };
                return Ok(res);
            }
            self.enter(1, IORING_ENTER_GETEVENTS)?;
        }
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: unmapping what `new` mapped.
        unsafe {
            libc::munmap(self.sqes.cast(), self.sqes_len);
            if self.cq_map != self.sq_map {
                libc::munmap(self.cq_map.cast(), self.cq_map_len);
            }
            libc::munmap(self.sq_map.cast(), self.sq_map_len);
        }
    }
}
