//! The data path: read, write, pread, pwrite, readv, writev on files (streams go to
//! `stream`). User pages are handed to the file system directly where they can be (one
//! physical run, or scattered/gathered pieces), else through one reusable bounce buffer.

use alloc::vec;
use alloc::vec::Vec;

use abi::Errno;
use vfs::{FileType, Metadata, SetAttr};

use super::args::{copy_in, with_space, SysResult};
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
const IO_CHUNK: usize = 1 << 20;
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
fn read_into_run(f: &OpenFile, offset: u64, va: usize, len: usize, mut run: UserRun) -> SysResult {
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
fn check_end(offset: u64, len: usize) -> Result<(), Errno> {
    if offset
        .checked_add(len as u64)
        .is_none_or(|end| end > i64::MAX as u64)
    {
        return Err(Errno::EINVAL);
    }
    Ok(())
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
    let limit = crate::task::with_current(|p| p.fsize_limit.0);
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
    let limit = crate::task::with_current(|p| p.fsize_limit.0);
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
    crate::mm::file_pages::overlay_read(f, offset, len, |at, bytes| {
        super::args::copy_out(va + (at - offset) as usize, bytes)
    })
}

/// Bytes written at `offset` from `va` also go into the file's shared mapped pages.
fn show_to_mappings(f: &OpenFile, offset: u64, va: usize, len: usize) -> Result<(), Errno> {
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

fn write_chunk(f: &OpenFile, offset: u64, va: usize, len: usize) -> SysResult {
    let pages = with_space(|s| UserPages::new(s, va, len, Access::Read))?;
    let pieces = pages.slices();
    if pieces.len() == 1 {
        return Ok(f.loc.node.write_at(offset, pieces[0])?);
    }
    if let Some(r) = f.loc.node.write_gathered_at(offset, &pieces) {
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
    let mut off = f.offset.lock();
    let n = read_into_user(&f, *off, va, len)?;
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

/// The iovec array, checked as Linux's `import_iovec` does before any I/O: at most `IOV_MAX`
/// entries, no negative length (EINVAL), every buffer inside user space (EFAULT); lengths past
/// `MAX_RW` in total are cut.
pub(super) fn iovecs(iov: usize, count: usize) -> Result<Vec<(usize, usize)>, Errno> {
    if count > 1024 {
        return Err(Errno::EINVAL);
    }
    let mut raw = vec![0u8; count * 16];
    copy_in(iov, &mut raw)?;
    let mut out = Vec::with_capacity(count);
    let mut total = 0usize;
    for c in raw.chunks_exact(16) {
        let base = usize::from_le_bytes(c[..8].try_into().unwrap_or_default());
        let len = usize::from_le_bytes(c[8..].try_into().unwrap_or_default());
        if len > isize::MAX as usize {
            return Err(Errno::EINVAL);
        }
        if !uaccess::range_ok(base, len) {
            return Err(Errno::EFAULT);
        }
        let len = len.min(MAX_RW - total);
        total += len;
        out.push((base, len));
    }
    Ok(out)
}

pub fn sys_readv(fd: i32, iov: usize, count: usize) -> SysResult {
    file(fd)?;
    let mut total = 0;
    for (base, len) in iovecs(iov, count)? {
        let n = sys_read(fd, base, len)?;
        total += n;
        if n < len {
            break;
        }
    }
    Ok(total)
}

pub fn sys_writev(fd: i32, iov: usize, count: usize) -> SysResult {
    file(fd)?;
    let mut total = 0;
    for (base, len) in iovecs(iov, count)? {
        let n = sys_write(fd, base, len)?;
        total += n;
        if n < len {
            break;
        }
    }
    Ok(total)
}
