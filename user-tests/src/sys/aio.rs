//! Linux native AIO (`io_setup`, `io_submit`, `io_getevents`, `io_cancel`, `io_destroy`), as
//! raw calls: pointers are addresses, so tests can pass bad ones.

use abi::aio::{IoEvent, IO_EVENT_SIZE};
use abi::syscall::*;

use crate::raw::*;

use super::marshal::{check, SysResult};

/// `io_setup(nr_events, ctxp)`: `ctxp` is the address of an `aio_context_t` (u64).
pub fn io_setup_raw(nr_events: u32, ctxp: usize) -> SysResult<()> {
    // SAFETY: the kernel checks `ctxp` and answers EFAULT if it is bad.
    check(unsafe { syscall2(SYS_IO_SETUP, nr_events as usize, ctxp) }).map(|_| ())
}

/// `io_setup(nr_events)`: the new context.
pub fn io_setup(nr_events: u32) -> SysResult<u64> {
    let mut ctx = 0u64;
    io_setup_raw(nr_events, &mut ctx as *mut u64 as usize)?;
    Ok(ctx)
}

/// `io_destroy(ctx)`.
pub fn io_destroy(ctx: u64) -> SysResult<()> {
    // SAFETY: no pointer argument; the kernel unmaps only the context's own ring.
    check(unsafe { syscall1(SYS_IO_DESTROY, ctx as usize) }).map(|_| ())
}

/// `io_submit(ctx, nr, iocbpp)`: the number of requests submitted.
pub fn io_submit_raw(ctx: u64, nr: isize, iocbpp: usize) -> SysResult<usize> {
    // SAFETY: the kernel checks the array and every iocb (EFAULT); the buffers they name are
    // the caller's business, as with read(2).
    check(unsafe { syscall3(SYS_IO_SUBMIT, ctx as usize, nr as usize, iocbpp) })
}

/// `io_getevents(ctx, min_nr, nr, events, timeout)` with raw pointers (`timeout` 0: none).
pub fn io_getevents_raw(
    ctx: u64,
    min_nr: isize,
    nr: isize,
    events: usize,
    timeout: usize,
) -> SysResult<usize> {
    // SAFETY: the kernel checks both pointers (EFAULT).
    check(unsafe {
        syscall5(
            SYS_IO_GETEVENTS,
            ctx as usize,
            min_nr as usize,
            nr as usize,
            events,
            timeout,
        )
    })
}

/// `io_getevents` into a vector of up to `nr` events, waiting at most `timeout_ns` (None:
/// without limit) for `min_nr` of them.
pub fn io_getevents(
    ctx: u64,
    min_nr: usize,
    nr: usize,
    timeout_ns: Option<u64>,
) -> SysResult<alloc::vec::Vec<IoEvent>> {
    let mut buf = alloc::vec![0u8; nr * IO_EVENT_SIZE];
    let ts = timeout_ns.map(|ns| [(ns / 1_000_000_000) as i64, (ns % 1_000_000_000) as i64]);
    let tp = ts.as_ref().map_or(0, |t| t.as_ptr() as usize);
    let n = io_getevents_raw(
        ctx,
        min_nr as isize,
        nr as isize,
        buf.as_mut_ptr() as usize,
        tp,
    )?;
    Ok(buf[..n * IO_EVENT_SIZE]
        .chunks_exact(IO_EVENT_SIZE)
        .map(|c| IoEvent::from_bytes(c.try_into().unwrap_or(&[0; IO_EVENT_SIZE])))
        .collect())
}

/// `io_cancel(ctx, iocb, result)`.
pub fn io_cancel_raw(ctx: u64, iocb: usize, result: usize) -> SysResult<()> {
    // SAFETY: the kernel checks both pointers (EFAULT).
    check(unsafe { syscall3(SYS_IO_CANCEL, ctx as usize, iocb, result) }).map(|_| ())
}

/// `io_pgetevents(ctx, min_nr, nr, events, timeout, usig)`: `usig` is the address of
/// `{ const sigset_t *sigmask; size_t sigsetsize; }` (0: none).
pub fn io_pgetevents_raw(
    ctx: u64,
    min_nr: isize,
    nr: isize,
    events: usize,
    timeout: usize,
    usig: usize,
) -> SysResult<usize> {
    // SAFETY: the kernel checks every pointer (EFAULT); a mask only blocks signals meanwhile.
    check(unsafe {
        syscall6(
            SYS_IO_PGETEVENTS,
            ctx as usize,
            min_nr as usize,
            nr as usize,
            events,
            timeout,
            usig,
        )
    })
}
