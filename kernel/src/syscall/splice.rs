//! Copies inside the kernel: sendfile, splice, tee, vmsplice and copy_file_range.
//!
//! Data moves through a kernel buffer of at most [`CHUNK`] bytes per step (no page of the page
//! cache is lent to a pipe, as Linux's zero-copy splice does: the semantics are Linux's, the
//! copy is one more). A pipe side goes through the pipe's own calls (`ipc::pipe`), so its
//! waiting, O_NONBLOCK/SPLICE_F_NONBLOCK, SIGPIPE and wake-ups are those of read and write;
//! a file side through `io::read_file_at`/`io::write_file_at`, so RLIMIT_FSIZE and shared
//! mappings are seen as by read and write. Bytes taken from a pipe that the other side does
//! not accept are put back at the pipe's front (`Pipe::unread`).
//!
//! Each call moves at most what one step can: a short count, as Linux allows (callers loop).

use abi::fcntl::{O_NONBLOCK, SPLICE_F_ALL, SPLICE_F_NONBLOCK};
use abi::Errno;
use vfs::FileType;

use super::args::iovecs;
use super::args::{copy_in, copy_out, SysResult};
use super::fd::{file, MAX_RW};
use super::io::{check_end, each_iovec, read_file_at, write_file_at};
use super::stream::{stream_of, Stream};
use crate::fs::file::OpenFile;
use crate::ipc::pipe::{Pipe, PipeEnd};

/// Most bytes one step moves (a pipe's default size).
const CHUNK: usize = 64 * 1024;

/// The pipe behind a descriptor (pipe2 or a FIFO), if it is one.
fn pipe_of(f: &OpenFile) -> Option<&Pipe> {
    f.loc
        .node
        .as_any()
        .downcast_ref::<PipeEnd>()
        .map(|e| &*e.pipe)
}

fn nonblock(f: &OpenFile) -> bool {
    *f.status_flags.lock() & O_NONBLOCK != 0
}

fn buffer(n: usize) -> Result<alloc::vec::Vec<u8>, Errno> {
    crate::mm::heap::try_zeroed(n)
}

/// A `loff_t` the caller passed by pointer (EFAULT).
fn read_offset(ptr: usize) -> Result<i64, Errno> {
    let mut b = [0u8; 8];
    copy_in(ptr, &mut b)?;
    Ok(i64::from_le_bytes(b))
}

fn write_offset(ptr: usize, at: u64) -> Result<(), Errno> {
    copy_out(ptr, &(at as i64).to_le_bytes())
}

/// The offset a call starts from (`ptr`: the caller's `loff_t`, else the descriptor's), as
/// Linux's `rw_verify_area` judges it: negative, or its end past 2^63, is EINVAL.
fn start_offset(f: &OpenFile, ptr: usize, len: usize) -> Result<u64, Errno> {
    let at = if ptr != 0 {
        read_offset(ptr)?
    } else {
        *f.offset.lock() as i64
    };
    if at < 0 {
        return Err(Errno::EINVAL);
    }
    check_end(at as u64, len)?;
    Ok(at as u64)
}

/// After a call moved `n` bytes from `at`: the caller's offset, or the descriptor's.
fn advance(f: &OpenFile, ptr: usize, at: u64, n: usize) -> Result<(), Errno> {
    if ptr != 0 {
        write_offset(ptr, at + n as u64)
    } else {
        if f.seekable() {
            *f.offset.lock() = at + n as u64;
        }
        Ok(())
    }
}

/// Whether the kernel can read `f` into a buffer (Linux: it has `splice_read`): a regular
/// file, a block device, a character device that is no stream (/dev/zero) or a socket (read
/// as recv does); not a directory, pipe or event descriptor (EINVAL).
fn check_source(f: &OpenFile) -> Result<(), Errno> {
    match stream_of(f) {
        Some(Stream::Socket(_)) => Ok(()),
        Some(_) => Err(Errno::EINVAL),
        None if matches!(f.ftype, FileType::Directory | FileType::Socket) => Err(Errno::EINVAL),
        None => Ok(()),
    }
}

/// Whether the kernel can write a buffer into `f` (Linux: it has `splice_write`): a file, a
/// device, the terminal or a socket; not a pipe here (the caller's pipe path) or an event
/// descriptor (EINVAL).
fn check_sink(f: &OpenFile) -> Result<(), Errno> {
    match stream_of(f) {
        Some(Stream::Tty) | Some(Stream::Socket(_)) => Ok(()),
        None if f.ftype != FileType::Socket => Ok(()),
        _ => Err(Errno::EINVAL),
    }
}

/// Read from `f` (checked by [`check_source`]) at `at` into `buf`.
fn read_source(f: &OpenFile, at: u64, buf: &mut [u8]) -> SysResult {
    if let Some(Stream::Socket(_)) = stream_of(f) {
        return super::socket::read_buf(f, buf);
    }
    read_file_at(f, if f.seekable() { at } else { 0 }, buf)
}

/// Write `buf` into `f` (checked by [`check_sink`]) at `at`.
fn write_sink(f: &OpenFile, at: u64, buf: &[u8]) -> SysResult {
    match stream_of(f) {
        Some(Stream::Tty) => {
            crate::tty::write(buf);
            return Ok(buf.len());
        }
        Some(Stream::Socket(_)) => return super::socket::write_buf(f, buf),
        _ => {}
    }
    super::io::drop_suid_of(f)?;
    write_file_at(f, if f.seekable() { at } else { 0 }, buf)
}

/// One step from a file into a pipe: wait for room, then read at most `len` bytes (and the
/// room) at `at` into it. 0 at the end of the file.
fn file_to_pipe(f: &OpenFile, at: u64, pipe: &Pipe, len: usize, nonblock: bool) -> SysResult {
    let room = pipe.wait_room(nonblock)?;
    let mut buf = buffer(len.min(room).min(CHUNK))?;
    let got = read_source(f, at, &mut buf)?;
    if got == 0 {
        return Ok(0);
    }
    pipe.write(&buf[..got], nonblock, false)
}

/// One step from a pipe into a file at `at`: what the pipe holds, at most `len` bytes,
/// waiting for data as read(2) does (0: empty with no writer left).
fn pipe_to_file(pipe: &Pipe, f: &OpenFile, at: u64, len: usize, nonblock: bool) -> SysResult {
    let mut buf = buffer(len.min(CHUNK))?;
    let got = pipe.read(&mut buf, nonblock)?;
    if got == 0 {
        return Ok(0);
    }
    let put = match write_sink(f, at, &buf[..got]) {
        Ok(put) => put,
        Err(e) => {
            pipe.unread(&buf[..got]);
            return Err(e);
        }
    };
    pipe.unread(&buf[put..got]);
    Ok(put)
}

/// One step between two pipes: wait for data in `from`, then for room in `to`, and move (or
/// with `keep`, copy: tee) at most `len` bytes.
fn pipe_to_pipe(from: &Pipe, to: &Pipe, len: usize, nonblock: bool, keep: bool) -> SysResult {
    let mut probe = [0u8; 1];
    if from.peek(&mut probe, nonblock)? == 0 {
        return Ok(0);
    }
    let room = to.wait_room(nonblock)?;
    let mut buf = buffer(len.min(room).min(CHUNK))?;
    let got = if keep {
        from.peek(&mut buf, true)?
    } else {
        from.read(&mut buf, true)?
    };
    let put = match to.write(&buf[..got], nonblock, false) {
        Ok(put) => put,
        Err(e) => {
            if !keep {
                from.unread(&buf[..got]);
            }
            return Err(e);
        }
    };
    if !keep {
        from.unread(&buf[put..got]);
    }
    Ok(put)
}

/// splice(2): move up to `len` bytes between a pipe and another descriptor, or two pipes.
/// Linux's checks in its order: flags (EINVAL), descriptors (EBADF), an offset given for a
/// pipe (ESPIPE), the offsets' memory (EFAULT), the access modes (EBADF), the same pipe on
/// both sides or no pipe at all (EINVAL), an O_APPEND output (EINVAL), an offset given for a
/// file without positions (EINVAL), a negative offset (EINVAL).
pub fn sys_splice(
    fd_in: i32,
    off_in: usize,
    fd_out: i32,
    off_out: usize,
    len: usize,
    flags: u32,
) -> SysResult {
    if len == 0 {
        return Ok(0);
    }
    if flags & !SPLICE_F_ALL != 0 {
        return Err(Errno::EINVAL);
    }
    let (fin, fout) = (file(fd_in)?, file(fd_out)?);
    let (ipipe, opipe) = (pipe_of(&fin), pipe_of(&fout));
    if (ipipe.is_some() && off_in != 0) || (opipe.is_some() && off_out != 0) {
        return Err(Errno::ESPIPE);
    }
    if off_out != 0 {
        read_offset(off_out)?;
    }
    if off_in != 0 {
        read_offset(off_in)?;
    }
    if !fin.readable || !fout.writable {
        return Err(Errno::EBADF);
    }
    let len = len.min(MAX_RW);
    let nonblock_flag = flags & SPLICE_F_NONBLOCK != 0;
    match (ipipe, opipe) {
        (Some(a), Some(b)) => {
            if core::ptr::eq(a, b) {
                return Err(Errno::EINVAL);
            }
            let nonblock = nonblock_flag || nonblock(&fin) || nonblock(&fout);
            pipe_to_pipe(a, b, len, nonblock, false)
        }
        (Some(a), None) => {
            check_sink(&fout)?;
            if off_out != 0 && !fout.seekable() {
                return Err(Errno::EINVAL);
            }
            if fout.append() {
                return Err(Errno::EINVAL);
            }
            let at = start_offset(&fout, off_out, len)?;
            let n = pipe_to_file(a, &fout, at, len, nonblock_flag || nonblock(&fin))?;
            advance(&fout, off_out, at, n)?;
            Ok(n)
        }
        (None, Some(b)) => {
            if off_in != 0 && !fin.seekable() {
                return Err(Errno::EINVAL);
            }
            check_source(&fin)?;
            let at = start_offset(&fin, off_in, len)?;
            let n = file_to_pipe(&fin, at, b, len, nonblock_flag || nonblock(&fout))?;
            advance(&fin, off_in, at, n)?;
            Ok(n)
        }
        (None, None) => Err(Errno::EINVAL),
    }
}

/// tee(2): copy up to `len` bytes of what pipe `fd_in` holds into pipe `fd_out` without
/// consuming them. EINVAL unless both are pipes and different ones.
pub fn sys_tee(fd_in: i32, fd_out: i32, len: usize, flags: u32) -> SysResult {
    if flags & !SPLICE_F_ALL != 0 {
        return Err(Errno::EINVAL);
    }
    if len == 0 {
        return Ok(0);
    }
    let (fin, fout) = (file(fd_in)?, file(fd_out)?);
    if !fin.readable || !fout.writable {
        return Err(Errno::EBADF);
    }
    match (pipe_of(&fin), pipe_of(&fout)) {
        (Some(a), Some(b)) if !core::ptr::eq(a, b) => {
            let nonblock = flags & SPLICE_F_NONBLOCK != 0 || nonblock(&fin) || nonblock(&fout);
            pipe_to_pipe(a, b, len.min(MAX_RW), nonblock, true)
        }
        _ => Err(Errno::EINVAL),
    }
}

/// vmsplice(2): the iovec buffers into the pipe `fd` (a write end), or out of it into them
/// (a read end), as writev/readv on the pipe with SPLICE_F_NONBLOCK as O_NONBLOCK. EBADF for
/// a descriptor that is no pipe.
pub fn sys_vmsplice(fd: i32, iov: usize, count: usize, flags: u32) -> SysResult {
    if flags & !SPLICE_F_ALL != 0 {
        return Err(Errno::EINVAL);
    }
    let f = file(fd)?;
    if !f.writable && !f.readable {
        return Err(Errno::EBADF);
    }
    let vecs = iovecs(iov, count)?;
    let Some(Stream::Pipe(_)) = stream_of(&f) else {
        return Err(Errno::EBADF);
    };
    let nowait = flags & SPLICE_F_NONBLOCK != 0;
    each_iovec(&vecs, |_, base, len| {
        let Some(s) = stream_of(&f) else {
            return Err(Errno::EBADF);
        };
        if f.writable {
            super::stream::write_with(&f, s, base, len, nowait)
        } else {
            super::stream::read_with(&f, s, base, len, nowait)
        }
    })
}

/// sendfile(2): copy up to `count` bytes of `in_fd` (from `*offset`, which moves, or from
/// the descriptor's offset) into `out_fd`. The input must be a file the kernel can read
/// (EINVAL); the output a pipe, a file, a device or the terminal, not O_APPEND (EINVAL).
pub fn sys_sendfile(out_fd: i32, in_fd: i32, offset: usize, count: usize) -> SysResult {
    let fin = file(in_fd)?;
    if !fin.readable {
        return Err(Errno::EBADF);
    }
    if offset != 0 && !fin.seekable() {
        return Err(Errno::ESPIPE);
    }
    let count = count.min(MAX_RW);
    let at = start_offset(&fin, offset, count)?;
    let fout = file(out_fd)?;
    if !fout.writable {
        return Err(Errno::EBADF);
    }
    if count == 0 {
        return Ok(0);
    }
    check_source(&fin)?;
    let n = if let Some(pipe) = pipe_of(&fout) {
        file_to_pipe(&fin, at, pipe, count, nonblock(&fin))?
    } else {
        check_sink(&fout)?;
        if fout.append() {
            return Err(Errno::EINVAL);
        }
        copy_between(&fin, at, &fout, None, count)?
    };
    advance(&fin, offset, at, n)?;
    Ok(n)
}

/// Copy up to `len` bytes of `fin` from `at` into `fout` at `out_at` (None: the descriptor's
/// offset, which moves), in steps of [`CHUNK`]; stops at the end of the input or a short
/// write. An error after some bytes moved ends the copy with those.
fn copy_between(
    fin: &OpenFile,
    at: u64,
    fout: &OpenFile,
    out_at: Option<u64>,
    len: usize,
) -> SysResult {
    let mut buf = buffer(len.min(CHUNK))?;
    let mut out_off = if out_at.is_none() && fout.seekable() {
        Some(fout.offset.lock())
    } else {
        None
    };
    let start_out = out_at.or(out_off.as_deref().copied()).unwrap_or(0);
    let mut done = 0;
    while done < len {
        let n = (len - done).min(CHUNK);
        let step = read_source(fin, at + done as u64, &mut buf[..n]).and_then(|got| {
            let put = write_sink(fout, start_out + done as u64, &buf[..got])?;
            Ok((got, put))
        });
        let (got, put) = match step {
            Ok(r) => r,
            Err(_) if done > 0 => break,
            Err(e) => return Err(e),
        };
        done += put;
        if got < n || put < got {
            break;
        }
    }
    if let Some(off) = out_off.as_deref_mut() {
        *off = start_out + done as u64;
    }
    Ok(done)
}

/// copy_file_range(2): copy up to `len` bytes between two regular files, from and to the
/// given offsets (which move) or the descriptors' (which move). Linux's checks: flags
/// (EINVAL), directories (EISDIR), other types (EINVAL), access modes and an O_APPEND output
/// (EBADF), an offset that wraps (EOVERFLOW), RLIMIT_FSIZE (EFBIG), overlapping ranges of
/// one file (EINVAL), negative offsets (EINVAL), two file systems (EXDEV: none here copies
/// across).
pub fn sys_copy_file_range(
    fd_in: i32,
    off_in: usize,
    fd_out: i32,
    off_out: usize,
    len: usize,
    flags: u32,
) -> SysResult {
    let (fin, fout) = (file(fd_in)?, file(fd_out)?);
    let pos = |f: &OpenFile, ptr: usize| -> Result<i64, Errno> {
        if ptr != 0 {
            read_offset(ptr)
        } else {
            Ok(*f.offset.lock() as i64)
        }
    };
    let (pos_in, pos_out) = (pos(&fin, off_in)?, pos(&fout, off_out)?);
    if flags != 0 {
        return Err(Errno::EINVAL);
    }
    if fin.is_dir() || fout.is_dir() {
        return Err(Errno::EISDIR);
    }
    if fin.ftype != FileType::Regular || fout.ftype != FileType::Regular {
        return Err(Errno::EINVAL);
    }
    if !fin.readable || !fout.writable || fout.append() {
        return Err(Errno::EBADF);
    }
    if (pos_in as u64).checked_add(len as u64).is_none()
        || (pos_out as u64).checked_add(len as u64).is_none()
    {
        return Err(Errno::EOVERFLOW);
    }
    if pos_in < 0 || pos_out < 0 {
        return Err(Errno::EINVAL);
    }
    let (pos_in, pos_out) = (pos_in as u64, pos_out as u64);
    let size_in = fin.loc.node.getattr()?.size;
    let mut count = size_in.saturating_sub(pos_in).min(len as u64) as usize;
    // Linux's generic_write_check_limits: RLIMIT_FSIZE, and the largest offset.
    if count > 0 {
        count = super::io::fsize_cut(&fout, pos_out, count)?;
    }
    if pos_out >= i64::MAX as u64 {
        return Err(Errno::EFBIG);
    }
    count = count.min((i64::MAX as u64 - pos_out) as usize);
    let same = fin
        .lock_key()
        .ok()
        .is_some_and(|k| fout.lock_key().ok() == Some(k));
    if same && pos_out + (count as u64) > pos_in && pos_out < pos_in + count as u64 {
        return Err(Errno::EINVAL);
    }
    if !alloc::sync::Arc::ptr_eq(&fin.loc.mount, &fout.loc.mount) {
        return Err(Errno::EXDEV);
    }
    let count = count.min(MAX_RW);
    if count == 0 {
        return Ok(0);
    }
    let n = copy_between(&fin, pos_in, &fout, Some(pos_out), count)?;
    advance(&fin, off_in, pos_in, n)?;
    advance(&fout, off_out, pos_out, n)?;
    Ok(n)
}
