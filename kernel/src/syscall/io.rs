//! The data path: read, write, pread, pwrite, readv, writev on files (streams go to
//! `stream`). User pages are handed to the file system directly where they can be (one
//! physical run, or scattered/gathered pieces), else through one reusable bounce buffer.

use alloc::vec::Vec;

use abi::fcntl::{RWF_APPEND, RWF_DSYNC, RWF_NOAPPEND, RWF_NOWAIT, RWF_SUPPORTED, RWF_SYNC};
use abi::Errno;
use vfs::{FileType, Metadata, SetAttr};

use super::args::{copy_in, iovecs, with_space, SysResult};
use crate::fs::file::OpenFile;
use crate::fs::path::Loc;
use crate::fs::perm;
use crate::mm::area::Access;
use crate::mm::uaccess::{self, UserPages, UserRun};
use crate::sync::Mutex;

use super::fd::{file, MAX_RW};
use super::stream::stream_of;

/// The reusable kernel buffer for I/O whose user pages are not physically contiguous.
static BOUNCE: Mutex<Vec<u8>> = Mutex::new(Vec::new());

/// Most bytes moved by one file-system call: larger requests are split, so the kernel's
/// bounce buffer stays small whatever length a program passes.
pub(super) const IO_CHUNK: usize = 1 << 20;
/// The chunk of a call on a disk node: as much as the request layer keeps in flight at once,
/// so one large call drives the device at full queue depth (the `rawq` benchmark).
const DEVICE_IO_CHUNK: usize =
    crate::drivers::virtio_blk::QUEUE_SIZE * crate::drivers::virtio_blk::MAX_REQUEST;

/// The most bytes one file-system call of a read or write of `f` moves.
fn io_chunk(f: &OpenFile) -> usize {
    if f.ftype == FileType::BlockDevice {
        DEVICE_IO_CHUNK
    } else {
        IO_CHUNK
    }
}

/// Read from `f` at `offset` into user memory, one file-system call per chunk of at most
/// [`IO_CHUNK`] bytes. Stops at a short read (end of file). Inline: the general path is out
/// of line, and the call itself cost a dozen registers saved and restored.
#[inline]
pub(super) fn read_into_user(f: &OpenFile, offset: u64, va: usize, len: usize) -> SysResult {
    if !f.readable {
        return Err(Errno::EBADF);
    }
    check_rw(offset, va, len)?;
    if len == 0 {
        return Ok(0);
    }
    // A small read into one physical run: one file-system call, without the chunk loop.
    // Anything else (a bad buffer included: EFAULT past the end of the file is not an error)
    // takes the general path, kept out of line so that this one saves few registers.
    if len <= SMALL_IO {
        if let Ok(Some(mut run)) = with_space(|s| UserPages::contiguous(s, va, len, Access::Write))
        {
            let dst = run.single_mut().ok_or(Errno::EFAULT)?;
            return read_run(f, offset, va, dst);
        }
    }
    read_chunks_into_user(f, offset, va, len)
}

/// [`read_into_user`] when the caller resolved a small buffer already (`run`: one piece).
#[inline(always)]
pub(super) fn read_into_run(
    f: &OpenFile,
    offset: u64,
    va: usize,
    len: usize,
    mut run: UserRun,
) -> SysResult {
    if !f.readable {
        return Err(Errno::EBADF);
    }
    // `check_rw` without its range check: `run` lies in a user page mapped already.
    check_end(offset, len)?;
    read_run(f, offset, va, run.as_mut_slice())
}

/// The small read of [`read_into_user`] into `dst`, the user's buffer at `va` (one run).
#[inline(always)]
fn read_run(f: &OpenFile, offset: u64, va: usize, dst: &mut [u8]) -> SysResult {
    let got = f.loc.node.read_at(offset, dst)?;
    see_mapped_writes(f, offset, va, got)?;
    Ok(got)
}

/// [`read_into_user`] of any length and buffer, after its checks.
#[inline(never)]
fn read_chunks_into_user(f: &OpenFile, offset: u64, va: usize, len: usize) -> SysResult {
    let mut len = len.min(MAX_RW);
    let sized = matches!(f.ftype, FileType::Regular | FileType::BlockDevice);
    // Linux copies only what the file holds: a huge count, or a buffer that is bad past the
    // end of the file, is not an error. Large reads are clamped up front (one getattr);
    // a chunk-sized read is clamped only if its buffer turns out bad.
    let chunk = io_chunk(f);
    if sized && len > chunk {
        len = len.min(f.loc.node.getattr()?.size.saturating_sub(offset) as usize);
    }
    let mut done = 0;
    while done < len {
        let n = (len - done).min(chunk);
        let got = match read_chunk(f, offset + done as u64, va + done, n) {
            Ok(got) => got,
            Err(Errno::EFAULT) if sized && done == 0 => {
                let left = f.loc.node.getattr()?.size.saturating_sub(offset) as usize;
                if left >= n {
                    return Err(Errno::EFAULT);
                }
                len = left;
                continue;
            }
            // Some bytes moved: report them, as Linux does.
            Err(_) if done > 0 => break,
            Err(e) => return Err(e),
        };
        see_mapped_writes(f, offset + done as u64, va + done, got)?;
        done += got;
        if got < n {
            break;
        }
    }
    Ok(done)
}

/// Linux's checks before any byte moves (`access_ok`, then `rw_verify_area`): the whole user
/// range must lie in user space (EFAULT), and the end offset must fit in a signed 64-bit
/// offset (EINVAL), both judged on the length as given, before it is clamped.
fn check_rw(offset: u64, va: usize, len: usize) -> Result<(), Errno> {
    if !uaccess::range_ok(va, len) {
        return Err(Errno::EFAULT);
    }
    check_end(offset, len)
}

/// The end offset check of [`check_rw`] (EINVAL).
#[inline(always)]
pub(super) fn check_end(offset: u64, len: usize) -> Result<(), Errno> {
    if offset
        .checked_add(len as u64)
        .is_none_or(|end| end > i64::MAX as u64)
    {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

/// Read from `f` at `offset` into the kernel buffer `buf` (sendfile, splice,
/// copy_file_range): one file-system call, the stores of shared mappings not written back
/// yet laid over what it returned.
pub(super) fn read_file_at(f: &OpenFile, offset: u64, buf: &mut [u8]) -> SysResult {
    check_end(offset, buf.len())?;
    let got = f.loc.node.read_at(offset, buf)?;
    if !crate::mm::file_pages::none_shared() {
        crate::mm::file_pages::overlay_read(f, offset, got, |at, bytes| {
            let i = (at - offset) as usize;
            buf[i..i + bytes.len()].copy_from_slice(bytes);
            Ok(())
        })?;
    }
    Ok(got)
}

/// Write the kernel buffer `buf` into `f` at `offset` (sendfile, splice, copy_file_range),
/// with write(2)'s RLIMIT_FSIZE cut, and the bytes shown to the file's shared mappings.
pub(super) fn write_file_at(f: &OpenFile, offset: u64, buf: &[u8]) -> SysResult {
    check_end(offset, buf.len())?;
    let len = fsize_cut(f, offset, buf.len())?;
    let put = f.loc.node.write_at(offset, &buf[..len])?;
    crate::mm::file_pages::update_after_write(f, offset, put, |at, dst| {
        let i = (at - offset) as usize;
        dst.copy_from_slice(&buf[i..i + dst.len()]);
        Ok(())
    })?;
    Ok(put)
}

/// User ranges up to this long are first tried as one physical run without building a list
/// of pieces (no heap allocation on the small-read path).
const SMALL_IO: usize = 2 * crate::mm::PAGE_SIZE;

fn read_chunk(f: &OpenFile, offset: u64, va: usize, len: usize) -> SysResult {
    if len <= SMALL_IO {
        if let Some(mut run) = with_space(|s| UserPages::contiguous(s, va, len, Access::Write))? {
            if let Some(dst) = run.single_mut() {
                return Ok(f.loc.node.read_at(offset, dst)?);
            }
        }
    }
    let mut pages = with_space(|s| UserPages::new(s, va, len, Access::Write))?;
    if pages.piece_count() == 0 {
        return Ok(0);
    }
    // Both ways below may give the CPU away while the disk fills the user's pages.
    if let Some(dst) = pages.single_mut() {
        return Ok(crate::task::reading_own_pages(|| {
            f.loc.node.read_at(offset, dst)
        })?);
    }
    let scattered = crate::task::reading_own_pages(|| {
        f.loc
            .node
            .read_scattered_at(offset, &mut pages.slices_mut())
    });
    if let Some(r) = scattered {
        return Ok(r?);
    }
    let mut bounce = core::mem::take(&mut *BOUNCE.lock());
    bounce.resize(len, 0);
    let r = f.loc.node.read_at(offset, &mut bounce[..len]);
    let out = r.map_err(Errno::from).inspect(|&got| {
        pages.fill_from(&bounce[..got]);
    });
    *BOUNCE.lock() = bounce;
    out
}

/// Write user memory to `f` at `offset`, one file-system call per chunk of at most
/// [`IO_CHUNK`] bytes. Stops at a short write.
/// RLIMIT_FSIZE for a write of `len` bytes at `offset` of a regular file (Linux's
/// `generic_write_check_limits`): at or past the limit, SIGXFSZ and EFBIG; a write that
/// would cross it is cut short at it.
pub(super) fn fsize_cut(f: &OpenFile, offset: u64, len: usize) -> Result<usize, Errno> {
    if f.ftype != FileType::Regular || len == 0 {
        return Ok(len);
    }
    let limit = crate::task::with_current(|p| p.limits.fsize.0);
    if limit == u64::MAX {
        return Ok(len);
    }
    if offset >= limit {
        crate::task::signal::send_from_current(&crate::task::current_process(), SIGXFSZ);
        return Err(Errno::EFBIG);
    }
    Ok(len.min((limit - offset).min(usize::MAX as u64) as usize))
}

/// RLIMIT_FSIZE for growing a regular file to `size` (Linux's `inode_newsize_ok`): past the
/// limit, SIGXFSZ and EFBIG. Shrinking is always allowed.
pub(super) fn fsize_grow_ok(old_size: u64, size: u64) -> Result<(), Errno> {
    if size <= old_size {
        return Ok(());
    }
    let limit = crate::task::with_current(|p| p.limits.fsize.0);
    if size > limit {
        crate::task::signal::send_from_current(&crate::task::current_process(), SIGXFSZ);
        return Err(Errno::EFBIG);
    }
    Ok(())
}

const SIGXFSZ: usize = 25;

pub(super) fn write_from_user(f: &OpenFile, offset: u64, va: usize, len: usize) -> SysResult {
    if !f.writable {
        return Err(Errno::EBADF);
    }
    check_rw(offset, va, len)?;
    let len = fsize_cut(f, offset, len.min(MAX_RW))?;
    if len == 0 {
        return Ok(f.loc.node.write_at(offset, &[])?);
    }
    let chunk = io_chunk(f);
    let mut done = 0;
    while done < len {
        let n = (len - done).min(chunk);
        let put = match write_chunk(f, offset + done as u64, va + done, n) {
            Ok(put) => put,
            Err(e) if done > 0 => {
                log::debug!("write stopped after {} bytes: {:?}", done, e);
                break;
            }
            Err(e) => return Err(e),
        };
        show_to_mappings(f, offset + done as u64, va + done, put)?;
        done += put;
        if put < n {
            break;
        }
    }
    Ok(done)
}

/// One copy of each file page: bytes read at `offset` into `va` are replaced by those of the
/// file's shared mapped pages, which may hold stores not yet written back.
#[inline(always)]
fn see_mapped_writes(f: &OpenFile, offset: u64, va: usize, len: usize) -> Result<(), Errno> {
    if crate::mm::file_pages::none_shared() {
        return Ok(());
    }
    overlay_mapped_writes(f, offset, va, len)
}

#[inline(never)]
fn overlay_mapped_writes(f: &OpenFile, offset: u64, va: usize, len: usize) -> Result<(), Errno> {
    // A read without the big kernel lock (`syscall::unlocked`) checked that nothing was
    // mapped shared when it began; a mapping made since is overlaid under the lock.
    crate::task::lock_kernel();
    crate::mm::file_pages::overlay_read(f, offset, len, |at, bytes| {
        super::args::copy_out(va + (at - offset) as usize, bytes)
    })
}

/// Bytes written at `offset` from `va` also go into the file's shared mapped pages.
fn show_to_mappings(f: &OpenFile, offset: u64, va: usize, len: usize) -> Result<(), Errno> {
    // A write without the big kernel lock (`syscall::unlocked`) checked that the file had no
    // pages in a table when it began; pages read in since are refreshed under the lock.
    if !crate::arch::hart::holds_lock() && crate::mm::file_pages::has_table(f) {
        crate::task::lock_kernel();
    }
    crate::mm::file_pages::update_after_write(f, offset, len, |at, buf| {
        copy_in(va + (at - offset) as usize, buf)
    })
}

/// Run `call`, a write system call (write, writev, pwrite64). A write may give the CPU away
/// inside the file system (dbfs waits for its writer lock, or for the flush of a barrier it
/// makes) while it holds the user's pages ([`UserPages`]), and another thread of the process
/// could then unmap them: in a process with several threads the call runs under
/// `task::keep_cpu`, entered here, before it takes any lock (an open file's offset).
pub fn as_writer(call: impl FnOnce() -> SysResult) -> SysResult {
    if crate::task::with_current(|p| p.threads.len()) > 1 {
        crate::task::keep_cpu(call)
    } else {
        call()
    }
}

/// Run `write`, a write of `len` bytes from the user's pages, so that its device wait may
/// give the CPU away ([`crate::task::reading_own_pages`]) when it is large enough to go to the
/// disk straight from them (a dbfs direct write); a small one never does.
fn from_own_pages<R>(len: usize, write: impl FnOnce() -> R) -> R {
    if len <= SMALL_IO {
        write()
    } else {
        crate::task::reading_own_pages(write)
    }
}

fn write_chunk(f: &OpenFile, offset: u64, va: usize, len: usize) -> SysResult {
    let pages = with_space(|s| UserPages::new(s, va, len, Access::Read))?;
    let pieces = pages.slices();
    if pieces.len() == 1 {
        return Ok(from_own_pages(len, || {
            f.loc.node.write_at(offset, pieces[0])
        })?);
    }
    if let Some(r) = from_own_pages(len, || f.loc.node.write_gathered_at(offset, &pieces)) {
        return Ok(r?);
    }
    let mut bounce = core::mem::take(&mut *BOUNCE.lock());
    bounce.clear();
    for piece in pieces {
        bounce.extend_from_slice(piece);
    }
    let r = f.loc.node.write_at(offset, &bounce);
    *BOUNCE.lock() = bounce;
    Ok(r?)
}

pub fn sys_read(fd: i32, va: usize, len: usize) -> SysResult {
    let f = file(fd)?;
    if f.is_dir() {
        return Err(Errno::EISDIR);
    }
    if let Some(s) = stream_of(&f) {
        return super::stream::read(&f, s, va, len);
    }
    if !f.seekable() {
        return read_into_user(&f, 0, va, len);
    }
    read_advancing(&f, va, len, None)
}

/// read(2) of a seekable file at its description's offset, which moves past the bytes read;
/// `run`: the buffer, when the caller resolved it already (one page, mapped).
pub(super) fn read_advancing(
    f: &OpenFile,
    va: usize,
    len: usize,
    run: Option<UserRun>,
) -> SysResult {
    let mut off = f.offset.lock();
    let n = match run {
        Some(run) => read_into_run(f, *off, va, len, run),
        None => read_into_user(f, *off, va, len),
    }?;
    *off += n as u64;
    Ok(n)
}

/// A write or truncate by a caller other than root takes set-user-id (and set-group-id with
/// group-execute) off a regular file, as Linux does (only root has CAP_FSETID here).
pub(super) fn drop_suid_after_write(loc: &Loc, m: &Metadata) -> Result<(), Errno> {
    if perm::cred().is_root() {
        return Ok(());
    }
    if let Some(mode) = perm::mode_without_suid(m) {
        loc.node.setattr(&SetAttr {
            perm: Some(mode),
            ..Default::default()
        })?;
    }
    Ok(())
}

/// [`drop_suid_after_write`] for an open file, reading its attributes only for non-root.
pub(super) fn drop_suid_of(f: &OpenFile) -> Result<(), Errno> {
    if f.ftype != FileType::Regular || perm::cred().is_root() {
        return Ok(());
    }
    drop_suid_after_write(&f.loc, &f.loc.node.getattr()?)
}

pub fn sys_write(fd: i32, va: usize, len: usize) -> SysResult {
    let f = file(fd)?;
    if let Some(s) = stream_of(&f) {
        return super::stream::write(&f, s, va, len);
    }
    drop_suid_of(&f)?;
    if !f.seekable() {
        return write_from_user(&f, 0, va, len);
    }
    let mut off = f.offset.lock();
    if f.append() {
        *off = f.loc.node.getattr()?.size;
    }
    let n = write_from_user(&f, *off, va, len)?;
    *off += n as u64;
    Ok(n)
}

pub fn sys_pread(fd: i32, va: usize, len: usize, offset: i64) -> SysResult {
    // The descriptor and, for a buffer inside one page mapped already, the buffer: one lock
    // of the process for both.
    let (f, run) = crate::task::with_current(|p| {
        let f = p.files.fds().get(fd)?;
        Ok::<_, Errno>((f, UserRun::mapped(&mut p.space, va, len, Access::Write)))
    })?;
    if offset < 0 {
        return Err(Errno::EINVAL);
    }
    if f.is_dir() {
        return Err(Errno::EISDIR);
    }
    if !f.seekable() {
        return Err(Errno::ESPIPE);
    }
    match run {
        Some(run) => read_into_run(&f, offset as u64, va, len, run),
        None => read_into_user(&f, offset as u64, va, len),
    }
}

pub fn sys_pwrite(fd: i32, va: usize, len: usize, offset: i64) -> SysResult {
    let f = file(fd)?;
    if offset < 0 {
        return Err(Errno::EINVAL);
    }
    if !f.seekable() {
        return Err(Errno::ESPIPE);
    }
    drop_suid_of(&f)?;
    // On Linux a file opened O_APPEND takes pwrite's data at its end too, whatever the
    // offset (a documented deviation from POSIX); the file offset does not move.
    let at = if f.append() {
        f.loc.node.getattr()?.size
    } else {
        offset as u64
    };
    write_from_user(&f, at, va, len)
}

/// Run `one(base, len)` on each iovec buffer in turn and add up what it moved; stop at the
/// first short count. An error after some bytes moved ends the call with those bytes, as on
/// Linux; an error before any is the call's.
pub(super) fn each_iovec(
    vecs: &[(usize, usize)],
    mut one: impl FnMut(u64, usize, usize) -> SysResult,
) -> SysResult {
    let mut total = 0;
    for &(base, len) in vecs {
        let n = match one(total as u64, base, len) {
            Ok(n) => n,
            Err(_) if total > 0 => break,
            Err(e) => return Err(e),
        };
        total += n;
        if n < len {
            break;
        }
    }
    Ok(total)
}

pub fn sys_readv(fd: i32, iov: usize, count: usize) -> SysResult {
    file(fd)?;
    each_iovec(&iovecs(iov, count)?, |_, base, len| sys_read(fd, base, len))
}

pub fn sys_writev(fd: i32, iov: usize, count: usize) -> SysResult {
    file(fd)?;
    each_iovec(&iovecs(iov, count)?, |_, base, len| {
        sys_write(fd, base, len)
    })
}

/// The `RWF_*` flags of a preadv2/pwritev2 on `f` (Linux's `kiocb_set_rw_flags`): unknown
/// flags are EOPNOTSUPP, and so is RWF_NOWAIT on a file whose reads and writes may wait for
/// the disk (only pipes take it here, as a non-blocking call); RWF_APPEND and RWF_NOAPPEND
/// together are EINVAL.
fn rw_flags(f: &OpenFile, flags: u32, write: bool) -> Result<(), Errno> {
    if flags & !RWF_SUPPORTED != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    if flags & RWF_NOWAIT != 0 && stream_of(f).is_none() {
        return Err(Errno::EOPNOTSUPP);
    }
    if write && flags & RWF_APPEND != 0 && flags & RWF_NOAPPEND != 0 {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

/// What preadv(2) and pwritev(2) check first, in Linux's order: the offset (EINVAL; pos -1
/// of a v2 call means the descriptor's offset), the descriptor (EBADF), a pipe or socket at an
/// offset (ESPIPE), the access mode (EBADF), the iovecs (EINVAL, EFAULT), and, unless there is
/// nothing to move (None: the call returns 0, as Linux's vfs_readv), the RWF_ flags. Gives the
/// file, the iovecs, the flags and whether the descriptor's offset is used.
#[allow(clippy::type_complexity)]
fn vectored_checks(
    fd: i32,
    iov: usize,
    count: usize,
    pos: i64,
    v2: Option<u32>,
    write: bool,
) -> Result<Option<(alloc::sync::Arc<OpenFile>, Vec<(usize, usize)>, u32, bool)>, Errno> {
    let flags = v2.unwrap_or(0);
    let at_offset = v2.is_some() && pos == -1;
    if !at_offset && pos < 0 {
        return Err(Errno::EINVAL);
    }
    let f = file(fd)?;
    if !at_offset && !f.seekable() {
        return Err(Errno::ESPIPE);
    }
    if !(if write { f.writable } else { f.readable }) {
        return Err(Errno::EBADF);
    }
    let vecs = iovecs(iov, count)?;
    if vecs.iter().all(|&(_, len)| len == 0) {
        return Ok(None);
    }
    rw_flags(&f, flags, write)?;
    Ok(Some((f, vecs, flags, at_offset)))
}

/// preadv, and preadv2 with `flags` (`v2`: None for preadv): the iovec buffers filled in
/// turn from `pos` (the descriptor's offset stays), or for preadv2's `pos` -1 from the
/// descriptor's offset, as readv. Linux's order of checks: the offset (EINVAL), the
/// descriptor (EBADF), a pipe or socket (ESPIPE), the access mode (EBADF), the iovecs
/// (EINVAL, EFAULT), the flags.
pub fn sys_preadv(fd: i32, iov: usize, count: usize, pos: i64, v2: Option<u32>) -> SysResult {
    let Some((f, vecs, flags, at_offset)) = vectored_checks(fd, iov, count, pos, v2, false)? else {
        return Ok(0);
    };
    if stream_of(&f).is_some() {
        let nonblock = flags & RWF_NOWAIT != 0;
        return each_iovec(&vecs, |_, base, len| match stream_of(&f) {
            Some(s) => super::stream::read_with(&f, s, base, len, nonblock),
            None => Err(Errno::EBADF),
        });
    }
    if f.is_dir() {
        return Err(Errno::EISDIR);
    }
    if !f.seekable() {
        return each_iovec(&vecs, |_, base, len| read_into_user(&f, 0, base, len));
    }
    if at_offset {
        let mut off = f.offset.lock();
        let start = *off;
        let n = each_iovec(&vecs, |done, base, len| {
            read_into_user(&f, start + done, base, len)
        })?;
        *off = start + n as u64;
        return Ok(n);
    }
    each_iovec(&vecs, |done, base, len| {
        read_into_user(&f, pos as u64 + done, base, len)
    })
}

/// pwritev, and pwritev2 with `flags` (`v2`: None for pwritev): the iovec buffers written
/// in turn at `pos` (at the end for an O_APPEND descriptor or RWF_APPEND, unless
/// RWF_NOAPPEND), or for pwritev2's `pos` -1 at the descriptor's offset, which moves, as
/// writev. RWF_DSYNC and RWF_SYNC make the data (and metadata) durable before the call
/// returns.
pub fn sys_pwritev(fd: i32, iov: usize, count: usize, pos: i64, v2: Option<u32>) -> SysResult {
    let Some((f, vecs, flags, at_offset)) = vectored_checks(fd, iov, count, pos, v2, true)? else {
        return Ok(0);
    };
    if stream_of(&f).is_some() {
        let nonblock = flags & RWF_NOWAIT != 0;
        return each_iovec(&vecs, |_, base, len| match stream_of(&f) {
            Some(s) => super::stream::write_with(&f, s, base, len, nonblock),
            None => Err(Errno::EBADF),
        });
    }
    drop_suid_of(&f)?;
    if !f.seekable() {
        return each_iovec(&vecs, |_, base, len| write_from_user(&f, 0, base, len));
    }
    let append = flags & RWF_NOAPPEND == 0 && (f.append() || flags & RWF_APPEND != 0);
    let end = || f.loc.node.getattr().map(|m| m.size).map_err(Errno::from);
    let written = if at_offset {
        let mut off = f.offset.lock();
        let start = if append { end()? } else { *off };
        let n = each_iovec(&vecs, |done, base, len| {
            write_from_user(&f, start + done, base, len)
        })?;
        *off = start + n as u64;
        n
    } else {
        let start = if append { end()? } else { pos as u64 };
        each_iovec(&vecs, |done, base, len| {
            write_from_user(&f, start + done, base, len)
        })?
    };
    if written > 0 && flags & (RWF_DSYNC | RWF_SYNC) != 0 {
        fsync_file(&f, flags & RWF_SYNC == 0)?;
    }
    Ok(written)
}

/// fsync (or fdatasync) of an open file: its mapped pages, then the file system's.
pub(super) fn fsync_file(f: &OpenFile, data_only: bool) -> SysResult {
    // Pipes, FIFOs, sockets and character devices (the terminal, /dev/null) cannot be
    // synchronized: Linux's have no fsync operation, EINVAL. Block devices can.
    if matches!(
        f.ftype,
        FileType::Fifo | FileType::Socket | FileType::CharDevice
    ) {
        return Err(Errno::EINVAL);
    }
    crate::drivers::window::barrier_coming(|| {
        crate::mm::file_pages::write_back_open(f)?;
        f.loc.node.fsync(data_only).map_err(Errno::from)
    })?;
    Ok(0)
}
