//! Linux native AIO: io_setup, io_destroy, io_submit, io_cancel, io_getevents and
//! io_pgetevents (the calls libaio makes, and with it fio's `libaio` engine).
//!
//! A context is a completion ring mapped into the caller (`mm::aio_ring`, kept in the address
//! space: released at io_destroy, exit and execve, not inherited by fork).
//!
//! **Reads complete asynchronously.** io_submit hands a read of a regular file or a disk
//! (`IOCB_CMD_PREAD`, `PREADV`) to the kernel workers of `aio_workers` and returns; they put
//! its event in the ring when it is done ([`complete`]). io_destroy waits until the
//! context's requests have completed, as Linux's does. Writes,
//! fsyncs and reads of streams (pipes, sockets, the terminal) complete at submission through
//! the pwrite/fsync/read paths; the boot parameter `aio_async=0` makes reads do so as well.
//! io_cancel finds nothing it can cancel (EINVAL, Linux's answer for a request of a file that
//! has no cancel method, which is every regular file's).
//!
//! io_getevents reaps from the ring and waits (on [`AIO_WAITERS`], woken by every completion
//! and io_destroy) for `min_nr` events until its timeout or a signal.
//!
//! Errors are Linux's: a bad context or count is EINVAL, a bad pointer EFAULT, a full ring
//! EAGAIN, a bad descriptor EBADF, an opcode not handled here (`IOCB_CMD_POLL`, `NOOP`, any
//! other) EINVAL. A request refused at submission is not counted and gets no event (io_submit
//! returns the error if it was the first, else the number submitted before it); an error
//! of the I/O itself is the event's `res`. With `IOCB_FLAG_RESFD`, `aio_resfd` must be an
//! eventfd (EBADF if it is not open, EINVAL if it is another file, as Linux): each completion
//! adds 1 to it once its event is in the ring, as Linux's `eventfd_signal`.

use alloc::sync::Arc;

use abi::aio::*;
use abi::Errno;
use vfs::FileType;

use super::aio_workers::{asynchronous, complete, each_piece, queue, AIO_WAITERS};
use super::args::iovecs;
use super::args::{copy_in, copy_out, with_space, SysResult};
use super::fd::file;
use super::io::{drop_suid_of, read_into_user, write_from_user};
use super::stream::stream_of;
use crate::fs::file::OpenFile;
use crate::ipc::eventfd::EventFd;
use crate::mm::aio_ring::AioRing;
use crate::mm::uaccess;
use crate::task::signal;

/// `RWF_*` flags a request may carry: high priority (a hint), per-write O_DSYNC / O_SYNC,
/// and append or not. `RWF_NOWAIT`, `RWF_ATOMIC`, `RWF_DONTCACHE` and unknown bits are
/// EOPNOTSUPP, as for a file that does not support them.
const RWF_HIPRI: u32 = 1;
const RWF_DSYNC: u32 = 2;
const RWF_SYNC: u32 = 4;
const RWF_APPEND: u32 = 16;
const RWF_NOAPPEND: u32 = 32;
const RWF_SUPPORTED: u32 = RWF_HIPRI | RWF_DSYNC | RWF_SYNC | RWF_APPEND | RWF_NOAPPEND;

fn context(ctx: usize) -> Result<Arc<AioRing>, Errno> {
    with_space(|s| s.aio.get(ctx)).ok_or(Errno::EINVAL)
}

fn read_u64(va: usize) -> Result<u64, Errno> {
    let mut b = [0u8; 8];
    copy_in(va, &mut b)?;
    Ok(u64::from_le_bytes(b))
}

/// io_setup(nr_events, ctxp): `*ctxp` must be 0; it receives the new context's id.
pub fn sys_io_setup(nr_events: u32, ctxp: usize) -> SysResult {
    if read_u64(ctxp)? != 0 || nr_events == 0 {
        return Err(Errno::EINVAL);
    }
    let ring = with_space(|s| s.aio_setup(nr_events))?;
    if let Err(e) = copy_out(ctxp, &(ring.base as u64).to_le_bytes()) {
        destroy(ring.base)?;
        return Err(e);
    }
    Ok(0)
}

/// Take context `ctx` out of the table and unmap its ring (as Linux's `vm_munmap` of it).
fn destroy(ctx: usize) -> Result<(), Errno> {
    with_space(|s| {
        let ring = s.aio.remove(ctx).ok_or(Errno::EINVAL)?;
        // The program may have unmapped or moved parts of it: whatever is there goes.
        let _ = s.munmap(ring.base, ring.len);
        Ok::<(), Errno>(())
    })?;
    AIO_WAITERS.wake_all();
    Ok(())
}

/// io_destroy(ctx): the context takes no more requests, and once those in flight have
/// completed it goes (the wait comes before `changing_space`, so siblings' reads still go
/// away meanwhile).
pub fn sys_io_destroy(ctx: usize) -> SysResult {
    let ring = context(ctx)?;
    ring.kill();
    loop {
        AIO_WAITERS.prepare_to_wait();
        if ring.in_flight() == 0 {
            AIO_WAITERS.finish_wait();
            break;
        }
        AIO_WAITERS.sleep_prepared(None);
    }
    crate::task::changing_space(|| destroy(ctx)).map(|_| 0)
}

/// io_submit(ctx, nr, iocbpp): the number of requests submitted, or the first one's error.
pub fn sys_io_submit(ctx: usize, nr: isize, iocbpp: usize) -> SysResult {
    if nr < 0 {
        return Err(Errno::EINVAL);
    }
    let ring = context(ctx)?;
    let nr = (nr as usize).min(ring.nr());
    let mut done = 0;
    let mut result = Ok(0);
    for i in 0..nr {
        let r = iocbpp
            .checked_add(i * 8)
            .ok_or(Errno::EFAULT)
            .and_then(read_u64)
            .and_then(|user_iocb| submit_one(&ring, user_iocb as usize));
        if let Err(e) = r {
            if done == 0 {
                result = Err(e);
            }
            break;
        }
        done += 1;
    }
    if done > 0 {
        AIO_WAITERS.wake_all();
        return Ok(done);
    }
    result
}

/// One request: checked, given a slot, done, and its event put in the ring.
fn submit_one(ring: &Arc<AioRing>, user_iocb: usize) -> Result<(), Errno> {
    let mut raw = [0u8; IOCB_SIZE];
    copy_in(user_iocb, &mut raw)?;
    let cb = Iocb::from_bytes(&raw);
    if cb.aio_reserved2 != 0 || (cb.aio_nbytes as i64) < 0 {
        return Err(Errno::EINVAL);
    }
    if !ring.reserve()? {
        return Err(Errno::EAGAIN);
    }
    let (req, resfd) = match prepare(&cb, user_iocb) {
        Ok(r) => r,
        Err(e) => {
            ring.unreserve();
            return Err(e);
        }
    };
    let req = match req {
        Request::Read(f) if asynchronous(&f) => {
            let pieces = alloc::vec![(cb.aio_buf as usize, cb.aio_nbytes as usize)];
            return queue(ring, f, resfd, &cb, user_iocb, pieces);
        }
        Request::ReadV(f, iov) if asynchronous(&f) => {
            return queue(ring, f, resfd, &cb, user_iocb, iov);
        }
        req => req,
    };
    let res = run(&cb, req);
    complete(ring, cb.aio_data, user_iocb, resfd.as_deref(), res)
}

/// A request that passed its submission checks.
enum Request {
    Read(Arc<OpenFile>),
    Write(Arc<OpenFile>),
    ReadV(Arc<OpenFile>, alloc::vec::Vec<(usize, usize)>),
    WriteV(Arc<OpenFile>, alloc::vec::Vec<(usize, usize)>),
    Sync(Arc<OpenFile>, bool),
}

/// The checks Linux makes before a request is queued, in its order: the descriptor, the
/// eventfd, the key, the opcode, then the opcode's own (access mode, flags, buffers, offset).
/// Returns the request and its eventfd, if it names one.
fn prepare(cb: &Iocb, user_iocb: usize) -> Result<(Request, Option<Arc<OpenFile>>), Errno> {
    let f = file(cb.aio_fildes as i32)?;
    let resfd = if cb.aio_flags & IOCB_FLAG_RESFD != 0 {
        let e = file(cb.aio_resfd as i32)?;
        if !e.loc.node.as_any().is::<EventFd>() {
            return Err(Errno::EINVAL);
        }
        Some(e)
    } else {
        None
    };
    Ok((prepare_request(cb, user_iocb, f)?, resfd))
}

/// [`prepare`]'s checks after the eventfd's.
fn prepare_request(cb: &Iocb, user_iocb: usize, f: Arc<OpenFile>) -> Result<Request, Errno> {
    copy_out(user_iocb + IOCB_KEY_OFFSET, &KIOCB_KEY.to_le_bytes())?;
    let cmd = cb.aio_lio_opcode;
    match cmd {
        IOCB_CMD_FSYNC | IOCB_CMD_FDSYNC => {
            if cb.aio_buf != 0 || cb.aio_offset != 0 || cb.aio_nbytes != 0 || cb.aio_rw_flags != 0 {
                return Err(Errno::EINVAL);
            }
            if stream_of(&f).is_some() {
                return Err(Errno::EINVAL);
            }
            return Ok(Request::Sync(f, cmd == IOCB_CMD_FDSYNC));
        }
        IOCB_CMD_PREAD | IOCB_CMD_PWRITE | IOCB_CMD_PREADV | IOCB_CMD_PWRITEV => {}
        _ => return Err(Errno::EINVAL),
    }
    if cb.aio_rw_flags & !RWF_SUPPORTED != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    let read = matches!(cmd, IOCB_CMD_PREAD | IOCB_CMD_PREADV);
    if (read && !f.readable) || (!read && !f.writable) {
        return Err(Errno::EBADF);
    }
    if f.is_dir() {
        return Err(Errno::EINVAL);
    }
    let vectored = matches!(cmd, IOCB_CMD_PREADV | IOCB_CMD_PWRITEV);
    let (va, len) = (cb.aio_buf as usize, cb.aio_nbytes as usize);
    let iov = if vectored {
        Some(iovecs(va, len)?)
    } else if !uaccess::range_ok(va, len) {
        return Err(Errno::EFAULT);
    } else {
        None
    };
    if cb.aio_offset < 0 {
        return Err(Errno::EINVAL);
    }
    Ok(match (read, iov) {
        (true, None) => Request::Read(f),
        (false, None) => Request::Write(f),
        (true, Some(v)) => Request::ReadV(f, v),
        (false, Some(v)) => Request::WriteV(f, v),
    })
}

/// Do the request: the event's result.
fn run(cb: &Iocb, req: Request) -> SysResult {
    let (va, len) = (cb.aio_buf as usize, cb.aio_nbytes as usize);
    let at = cb.aio_offset as u64;
    match req {
        Request::Read(f) => read_at(&f, at, &[(va, len)]),
        Request::ReadV(f, iov) => read_at(&f, at, &iov),
        Request::Write(f) => super::io::as_writer(|| write_at(&f, cb, &[(va, len)])),
        Request::WriteV(f, iov) => super::io::as_writer(|| write_at(&f, cb, &iov)),
        Request::Sync(f, data_only) => super::io::fsync_file(&f, data_only),
    }
}

/// Read the pieces from `at` on (a stream ignores the offset).
fn read_at(f: &OpenFile, at: u64, pieces: &[(usize, usize)]) -> SysResult {
    each_piece(pieces, |off, va, len| match stream_of(f) {
        Some(s) => super::stream::read(f, s, va, len),
        None => read_into_user(f, at + off, va, len),
    })
}

/// Write the pieces at the request's offset (the end of the file for an O_APPEND file or
/// `RWF_APPEND`), then make them durable for `RWF_DSYNC` / `RWF_SYNC`.
fn write_at(f: &OpenFile, cb: &Iocb, pieces: &[(usize, usize)]) -> SysResult {
    let flags = cb.aio_rw_flags;
    let stream = stream_of(f).is_some();
    let mut at = cb.aio_offset as u64;
    if !stream {
        drop_suid_of(f)?;
        let append = (f.append() || flags & RWF_APPEND != 0) && flags & RWF_NOAPPEND == 0;
        if append && f.ftype == FileType::Regular {
            at = f.loc.node.getattr()?.size;
        }
    }
    let done = each_piece(pieces, |off, va, len| match stream_of(f) {
        Some(s) => super::stream::write(f, s, va, len),
        None => write_from_user(f, at + off, va, len),
    })?;
    if !stream && done > 0 && flags & (RWF_DSYNC | RWF_SYNC) != 0 {
        super::io::fsync_file(f, flags & RWF_SYNC == 0)?;
    }
    Ok(done)
}

/// io_cancel(ctx, iocb, result): no request here can be cancelled (reads of files and disks
/// have no cancel method, as in Linux; the rest complete at submission): EINVAL once the key
/// and the context are checked.
pub fn sys_io_cancel(ctx: usize, iocb: usize, _result: usize) -> SysResult {
    let mut key = [0u8; 4];
    copy_in(
        iocb.checked_add(IOCB_KEY_OFFSET).ok_or(Errno::EFAULT)?,
        &mut key,
    )?;
    if u32::from_le_bytes(key) != KIOCB_KEY {
        return Err(Errno::EINVAL);
    }
    context(ctx)?;
    Err(Errno::EINVAL)
}

/// A relative `struct timespec` timeout in ns (Linux does not check its fields: a negative
/// one has passed already).
fn read_timeout(tmo: usize) -> Result<Option<u64>, Errno> {
    if tmo == 0 {
        return Ok(None);
    }
    let mut b = [0u8; 16];
    copy_in(tmo, &mut b)?;
    let sec = i64::from_le_bytes(b[..8].try_into().unwrap_or([0; 8]));
    let nsec = i64::from_le_bytes(b[8..].try_into().unwrap_or([0; 8]));
    let ns = (sec as i128) * 1_000_000_000 + nsec as i128;
    Ok(Some(ns.clamp(0, u64::MAX as i128) as u64))
}

/// io_getevents(ctx, min_nr, nr, events, timeout).
pub fn sys_io_getevents(
    ctx: usize,
    min_nr: isize,
    nr: isize,
    events: usize,
    tmo: usize,
) -> SysResult {
    let timeout = read_timeout(tmo)?;
    getevents(ctx, min_nr, nr, events, timeout)
}

/// io_pgetevents(ctx, min_nr, nr, events, timeout, usig): `usig` points at
/// `{ const sigset_t *sigmask; size_t sigsetsize; }`, the mask during the wait.
pub fn sys_io_pgetevents(
    ctx: usize,
    min_nr: isize,
    nr: isize,
    events: usize,
    tmo: usize,
    usig: usize,
) -> SysResult {
    let timeout = read_timeout(tmo)?;
    let mask = if usig != 0 {
        let ptr = read_u64(usig)? as usize;
        let size = read_u64(usig.checked_add(8).ok_or(Errno::EFAULT)?)? as usize;
        super::poll::read_sigmask(ptr, size)?
    } else {
        None
    };
    super::poll::with_mask(mask, || getevents(ctx, min_nr, nr, events, timeout))
}

/// Reap between `min_nr` and `nr` events into `events`, waiting at most `timeout` ns (None:
/// without limit) for `min_nr` of them; fewer when the time runs out, EINTR when a signal
/// comes before any.
fn getevents(
    ctx: usize,
    min_nr: isize,
    nr: isize,
    events: usize,
    timeout: Option<u64>,
) -> SysResult {
    let ring = context(ctx)?;
    if min_nr < 0 || min_nr > nr {
        return Err(Errno::EINVAL);
    }
    let (min_nr, nr) = (min_nr as usize, nr as usize);
    let deadline = timeout.map(|ns| crate::arch::time::monotonic_ns().saturating_add(ns));
    let mut got = 0;
    loop {
        match ring.reap(nr - got, |k, bytes| {
            let at = (got + k)
                .checked_mul(IO_EVENT_SIZE)
                .and_then(|off| events.checked_add(off))
                .ok_or(Errno::EFAULT)?;
            copy_out(at, bytes)
        }) {
            Ok(n) => got += n,
            Err(e) if got == 0 => return Err(e),
            Err(_) => return Ok(got),
        }
        if ring.is_dead() && got == 0 {
            return Err(Errno::EINVAL);
        }
        if got >= min_nr || timeout == Some(0) || ring.is_dead() {
            return Ok(got);
        }
        if deadline.is_some_and(|d| crate::arch::time::monotonic_ns() >= d) {
            return Ok(got);
        }
        if signal::pending() {
            return if got == 0 { Err(Errno::EINTR) } else { Ok(got) };
        }
        AIO_WAITERS.sleep_until(deadline);
    }
}
