//! File-system calls.

use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;

use abi::fcntl::*;
use abi::stat::{dirent64_reclen, Stat, Statfs, Timespec};
use abi::Errno;
use spin::Mutex;
use vfs::{FileType, Metadata, RenameFlags, SetAttr, TimeSet, Timestamp};

pub use super::stream::{stream_of, Stream};
use super::{copy_in, copy_out, read_path, with_space, SysResult};
use crate::fs::file::OpenFile;
use crate::fs::path::{self, Loc};
use crate::fs::perm;
use crate::mm::addr_space::Access;
use crate::mm::uaccess;
use crate::task::with_current;

/// Linux's cap on one read or write (`MAX_RW_COUNT`).
const MAX_RW: usize = 0x7fff_f000;

fn file(fd: i32) -> Result<Arc<OpenFile>, Errno> {
    with_current(|p| p.files.get(fd))
}

/// The directory relative paths start from: the cwd, or the directory open at `dirfd`.
fn base(dirfd: i32, path: &str) -> Result<Loc, Errno> {
    if path.starts_with('/') {
        return Loc::root();
    }
    if dirfd == AT_FDCWD {
        let cwd = with_current(|p| p.cwd.clone());
        return Loc::from_path(&cwd);
    }
    let f = file(dirfd)?;
    if !f.is_dir() {
        return Err(Errno::ENOTDIR);
    }
    Ok(f.loc.clone())
}

fn umask() -> u32 {
    with_current(|p| p.umask)
}

fn stat_of(m: &Metadata, dev: usize) -> Stat {
    let ts = |t: Timestamp| (t.sec, t.nsec as u64);
    Stat {
        st_dev: dev as u64,
        st_ino: m.ino,
        st_mode: m.mode(),
        st_nlink: m.nlink,
        st_uid: m.uid,
        st_gid: m.gid,
        st_rdev: m.rdev,
        st_size: m.size as i64,
        st_blksize: m.blksize as i32,
        st_blocks: m.blocks as i64,
        st_atime: ts(m.atime).0,
        st_atime_nsec: ts(m.atime).1,
        st_mtime: ts(m.mtime).0,
        st_mtime_nsec: ts(m.mtime).1,
        st_ctime: ts(m.ctime).0,
        st_ctime_nsec: ts(m.ctime).1,
        ..Default::default()
    }
}

pub fn sys_openat(dirfd: i32, path_ptr: usize, flags: u32, mode: u32) -> SysResult {
    let path = read_path(path_ptr)?;
    if flags & O_CREAT != 0 && flags & O_DIRECTORY != 0 {
        return Err(Errno::EINVAL);
    }
    if flags & O_TMPFILE == O_TMPFILE {
        // Linux checks the access mode first.
        return Err(if flags & O_ACCMODE == O_RDONLY {
            Errno::EINVAL
        } else {
            Errno::EOPNOTSUPP
        });
    }
    let base = base(dirfd, &path)?;
    let follow = flags & O_NOFOLLOW == 0;
    let loc = if flags & O_CREAT != 0 {
        if path.ends_with('/') {
            return Err(Errno::EISDIR);
        }
        let (parent, name) = path::resolve_parent_as(&base, &path, Errno::EISDIR)?;
        match path::resolve(&parent, &name, follow) {
            Ok(loc) => {
                if flags & O_EXCL != 0 {
                    return Err(Errno::EEXIST);
                }
                loc
            }
            Err(Errno::ENOENT) => {
                // A dangling symlink named `name` still counts as existing for O_EXCL.
                if flags & O_EXCL != 0 && parent.node.lookup(&name).is_ok() {
                    return Err(Errno::EEXIST);
                }
                let perm = mode & 0o7777 & !umask();
                let c = perm::cred();
                perm::may_modify_dir(&c, &parent)?;
                let new = perm::new_node(&c, &parent, FileType::Regular, perm)?;
                let node = parent.node.create(&name, &new)?;
                let path = if parent.path == "/" {
                    alloc::format!("/{}", name)
                } else {
                    alloc::format!("{}/{}", parent.path, name)
                };
                Loc {
                    node,
                    path,
                    mount: parent.mount.clone(),
                }
            }
            Err(e) => return Err(e),
        }
    } else {
        path::resolve(&base, &path, follow)?
    };
    let ftype = loc.node.ftype()?;
    if ftype == FileType::Symlink {
        return Err(Errno::ELOOP); // O_NOFOLLOW on a symlink
    }
    if ftype == FileType::Fifo && flags & O_PATH == 0 {
        let f = super::stream::open_fifo(loc, flags)?;
        return with_current(|p| p.files.install(f, flags & O_CLOEXEC != 0)).map(|fd| fd as usize);
    }
    if flags & O_DIRECTORY != 0 && ftype != FileType::Directory {
        return Err(Errno::ENOTDIR);
    }
    let (readable, writable) = if flags & O_PATH != 0 {
        (false, false)
    } else {
        match flags & O_ACCMODE {
            O_RDONLY => (true, false),
            O_WRONLY => (false, true),
            O_RDWR => (true, true),
            _ => return Err(Errno::EINVAL),
        }
    };
    if ftype == FileType::Directory && writable {
        return Err(Errno::EISDIR);
    }
    if flags & O_PATH == 0 {
        let mut want = 0;
        if readable {
            want |= perm::MAY_READ;
        }
        if writable || flags & O_TRUNC != 0 {
            want |= perm::MAY_WRITE;
        }
        perm::check(&perm::cred(), &loc, want)?;
    }
    if flags & O_TRUNC != 0 && writable && ftype == FileType::Regular {
        let m = loc.node.getattr()?;
        if m.size != 0 {
            loc.node.truncate(0)?;
        }
        drop_suid_after_write(&loc, &m)?;
    }
    let status = flags
        & (O_APPEND
            | O_NONBLOCK
            | O_DIRECT
            | O_SYNC
            | O_NOATIME
            | O_LARGEFILE
            | O_PATH
            | O_ACCMODE);
    let f = OpenFile::new(loc, readable, writable, status)?;
    with_current(|p| p.files.install(f, flags & O_CLOEXEC != 0)).map(|fd| fd as usize)
}

pub fn sys_close(fd: i32) -> SysResult {
    let f = with_current(|p| p.files.close(fd))?;
    // May run `release` (outside the process lock); its error is close's, the descriptor is
    // gone either way (as in Linux).
    OpenFile::close_last(f)?;
    Ok(0)
}

/// The reusable kernel buffer for I/O whose user pages are not physically contiguous.
static BOUNCE: Mutex<Vec<u8>> = Mutex::new(Vec::new());

/// Most bytes moved by one file-system call: larger requests are split, so the kernel's
/// bounce buffer stays small whatever length a program passes.
const IO_CHUNK: usize = 1 << 20;

/// Read from `f` at `offset` into user memory, one file-system call per chunk of at most
/// [`IO_CHUNK`] bytes. Stops at a short read (end of file).
fn read_into_user(f: &OpenFile, offset: u64, va: usize, len: usize) -> SysResult {
    if !f.readable {
        return Err(Errno::EBADF);
    }
    check_rw(offset, va, len)?;
    let mut len = len.min(MAX_RW);
    let sized = matches!(f.ftype, FileType::Regular | FileType::BlockDevice);
    // Linux copies only what the file holds: a huge count, or a buffer that is bad past the
    // end of the file, is not an error. Large reads are clamped up front (one getattr);
    // a chunk-sized read is clamped only if its buffer turns out bad.
    if sized && len > IO_CHUNK {
        len = len.min(f.loc.node.getattr()?.size.saturating_sub(offset) as usize);
    }
    let mut done = 0;
    while done < len {
        let n = (len - done).min(IO_CHUNK);
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
        if let Some(pa) = with_space(|s| uaccess::contiguous(s, va, len, Access::Write))? {
            // SAFETY: `contiguous` returned one run of frames owned by the current process,
            // covering exactly this range; only this process can change its address space and
            // it is inside this syscall, so they stay mapped and unaliased until it returns.
            let dst = unsafe { core::slice::from_raw_parts_mut(pa as *mut u8, len) };
            return Ok(f.loc.node.read_at(offset, dst)?);
        }
    }
    let segs = with_space(|s| uaccess::segments(s, va, len, Access::Write))?;
    if segs.len() <= 1 {
        let (pa, n) = segs.first().copied().unwrap_or((0, 0));
        if n == 0 {
            return Ok(0);
        }
        // SAFETY: `segments` returned frames owned by the current process; only this process
        // can change its own address space and it is inside this syscall, so the frames stay
        // mapped and unaliased until it returns.
        let dst = unsafe { core::slice::from_raw_parts_mut(pa as *mut u8, n) };
        return Ok(f.loc.node.read_at(offset, dst)?);
    }
    {
        // SAFETY: as above; the pieces are disjoint frames, borrowed only for this call.
        let mut pieces: Vec<&mut [u8]> = segs
            .iter()
            .map(|&(pa, n)| unsafe { core::slice::from_raw_parts_mut(pa as *mut u8, n) })
            .collect();
        if let Some(r) = f.loc.node.read_scattered_at(offset, &mut pieces) {
            return Ok(r?);
        }
    }
    let mut bounce = core::mem::take(&mut *BOUNCE.lock());
    bounce.resize(len, 0);
    let r = f.loc.node.read_at(offset, &mut bounce[..len]);
    let out = r.map_err(Errno::from).inspect(|&got| {
        let mut done = 0;
        for (pa, n) in segs {
            if done >= got {
                break;
            }
            let k = n.min(got - done);
            // SAFETY: as above.
            let dst = unsafe { core::slice::from_raw_parts_mut(pa as *mut u8, k) };
            dst.copy_from_slice(&bounce[done..done + k]);
            done += k;
        }
    });
    *BOUNCE.lock() = bounce;
    out
}

/// Write user memory to `f` at `offset`, one file-system call per chunk of at most
/// [`IO_CHUNK`] bytes. Stops at a short write.
fn write_from_user(f: &OpenFile, offset: u64, va: usize, len: usize) -> SysResult {
    if !f.writable {
        return Err(Errno::EBADF);
    }
    check_rw(offset, va, len)?;
    let len = len.min(MAX_RW);
    if len == 0 {
        return Ok(f.loc.node.write_at(offset, &[])?);
    }
    let mut done = 0;
    while done < len {
        let n = (len - done).min(IO_CHUNK);
        let put = match write_chunk(f, offset + done as u64, va + done, n) {
            Ok(put) => put,
            Err(e) if done > 0 => {
                log::debug!("write stopped after {} bytes: {:?}", done, e);
                break;
            }
            Err(e) => return Err(e),
        };
        done += put;
        if put < n {
            break;
        }
    }
    Ok(done)
}

fn write_chunk(f: &OpenFile, offset: u64, va: usize, len: usize) -> SysResult {
    let segs = with_space(|s| uaccess::segments(s, va, len, Access::Read))?;
    if segs.len() == 1 {
        let (pa, n) = segs[0];
        // SAFETY: as in `read_chunk`.
        let src = unsafe { core::slice::from_raw_parts(pa as *const u8, n) };
        return Ok(f.loc.node.write_at(offset, src)?);
    }
    // SAFETY: as in `read_chunk`; the slices live only for this call.
    let pieces: Vec<&[u8]> = segs
        .iter()
        .map(|&(pa, n)| unsafe { core::slice::from_raw_parts(pa as *const u8, n) })
        .collect();
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
fn drop_suid_after_write(loc: &Loc, m: &Metadata) -> Result<(), Errno> {
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
fn drop_suid_of(f: &OpenFile) -> Result<(), Errno> {
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
    let f = file(fd)?;
    if offset < 0 {
        return Err(Errno::EINVAL);
    }
    if f.is_dir() {
        return Err(Errno::EISDIR);
    }
    if !f.seekable() {
        return Err(Errno::ESPIPE);
    }
    read_into_user(&f, offset as u64, va, len)
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
    write_from_user(&f, offset as u64, va, len)
}

/// The iovec array, checked as Linux's `import_iovec` does before any I/O: at most `IOV_MAX`
/// entries, no negative length (EINVAL), every buffer inside user space (EFAULT); lengths past
/// `MAX_RW` in total are cut.
fn iovecs(iov: usize, count: usize) -> Result<Vec<(usize, usize)>, Errno> {
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

pub fn sys_lseek(fd: i32, offset: i64, whence: u32) -> SysResult {
    let f = file(fd)?;
    if !f.seekable() {
        return Err(Errno::ESPIPE);
    }
    let meta = f.loc.node.getattr()?;
    let mut off = f.offset.lock();
    let size = meta.size as i64;
    let new = match whence {
        SEEK_SET => Some(offset),
        SEEK_CUR => (*off as i64).checked_add(offset),
        SEEK_END => size.checked_add(offset),
        SEEK_DATA => {
            if offset < 0 || offset >= size {
                return Err(Errno::ENXIO);
            }
            Some(offset)
        }
        SEEK_HOLE => {
            if offset < 0 || offset >= size {
                return Err(Errno::ENXIO);
            }
            Some(size)
        }
        _ => return Err(Errno::EINVAL),
    };
    match new {
        Some(n) if n >= 0 => {
            *off = n as u64;
            Ok(n as usize)
        }
        _ => Err(Errno::EINVAL),
    }
}

pub fn sys_fstat(fd: i32, buf: usize) -> SysResult {
    let f = file(fd)?;
    let m = f.loc.node.getattr()?;
    copy_out(buf, &stat_of(&m, f.loc.mount.id).as_bytes())?;
    Ok(0)
}

pub fn sys_newfstatat(dirfd: i32, path_ptr: usize, buf: usize, flags: u32) -> SysResult {
    if flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH | 0x800/* AT_NO_AUTOMOUNT */) != 0 {
        return Err(Errno::EINVAL);
    }
    let path = read_path(path_ptr)?;
    let loc = if path.is_empty() && flags & AT_EMPTY_PATH != 0 {
        if dirfd == AT_FDCWD {
            base(dirfd, "")?
        } else {
            file(dirfd)?.loc.clone()
        }
    } else {
        path::resolve(
            &base(dirfd, &path)?,
            &path,
            flags & AT_SYMLINK_NOFOLLOW == 0,
        )?
    };
    let m = loc.node.getattr()?;
    copy_out(buf, &stat_of(&m, loc.mount.id).as_bytes())?;
    Ok(0)
}

pub fn sys_getdents64(fd: i32, buf: usize, count: usize) -> SysResult {
    let f = file(fd)?;
    if !f.is_dir() {
        return Err(Errno::ENOTDIR);
    }
    let count = count.min(1 << 20);
    let mut cookie_guard = f.offset.lock();
    let mut cookie = *cookie_guard;
    let mut out: Vec<u8> = Vec::new();
    let mut truncated = false;
    f.loc.node.readdir(cookie, &mut |e| {
        let reclen = dirent64_reclen(e.name.len());
        if out.len() + reclen > count {
            truncated = true;
            return false;
        }
        let start = out.len();
        out.extend_from_slice(&e.ino.to_le_bytes());
        out.extend_from_slice(&(e.next_cookie as i64).to_le_bytes());
        out.extend_from_slice(&(reclen as u16).to_le_bytes());
        out.push(e.ftype.dirent_type());
        out.extend_from_slice(e.name.as_bytes());
        out.resize(start + reclen, 0);
        cookie = e.next_cookie;
        true
    })?;
    if out.is_empty() && truncated {
        return Err(Errno::EINVAL);
    }
    copy_out(buf, &out)?;
    *cookie_guard = cookie;
    Ok(out.len())
}

pub fn sys_mkdirat(dirfd: i32, path_ptr: usize, mode: u32) -> SysResult {
    let path = read_path(path_ptr)?;
    let (parent, name) = path::resolve_parent(&base(dirfd, &path)?, &path)?;
    let c = perm::cred();
    perm::may_modify_dir(&c, &parent)?;
    let new = perm::new_node(&c, &parent, FileType::Directory, mode & 0o7777 & !umask())?;
    parent.node.create(&name, &new)?;
    Ok(0)
}

pub fn sys_unlinkat(dirfd: i32, path_ptr: usize, flags: u32) -> SysResult {
    if flags & !AT_REMOVEDIR != 0 {
        return Err(Errno::EINVAL);
    }
    let path = read_path(path_ptr)?;
    let base = base(dirfd, &path)?;
    let (parent, name) = match path::resolve_parent_or_special(&base, &path) {
        Ok(r) => r,
        Err(Err(e)) => return Err(e),
        // Linux: rmdir "/" is EBUSY, rmdir "." EINVAL, rmdir ".." ENOTEMPTY; unlink of any EISDIR.
        Err(Ok(_)) if flags & AT_REMOVEDIR == 0 => return Err(Errno::EISDIR),
        Err(Ok(path::Special::Root)) => return Err(Errno::EBUSY),
        Err(Ok(path::Special::Dot)) => return Err(Errno::EINVAL),
        Err(Ok(path::Special::DotDot)) => return Err(Errno::ENOTEMPTY),
    };
    let full = if parent.path == "/" {
        alloc::format!("/{}", name)
    } else {
        alloc::format!("{}/{}", parent.path, name)
    };
    if crate::fs::mount_at(&full).is_some() {
        return Err(Errno::EBUSY);
    }
    let c = perm::cred();
    if !c.is_root() {
        let victim = path::resolve(&parent, &name, false)?.node.getattr()?;
        perm::may_delete(&c, &parent, &victim)?;
    }
    if flags & AT_REMOVEDIR != 0 {
        parent.node.rmdir(&name)?;
    } else {
        if path.ends_with('/') {
            // "unlink dir/" names a directory: EISDIR if it is one, else ENOTDIR.
            let l = path::resolve(&parent, &name, false)?;
            return Err(if l.is_dir()? {
                Errno::EISDIR
            } else {
                Errno::ENOTDIR
            });
        }
        parent.node.unlink(&name)?;
    }
    Ok(0)
}

pub fn sys_renameat2(
    olddirfd: i32,
    old_ptr: usize,
    newdirfd: i32,
    new_ptr: usize,
    flags: u32,
) -> SysResult {
    if flags & !(RENAME_NOREPLACE | RENAME_EXCHANGE) != 0
        || (flags & RENAME_NOREPLACE != 0 && flags & RENAME_EXCHANGE != 0)
    {
        return Err(Errno::EINVAL);
    }
    let old = read_path(old_ptr)?;
    let new = read_path(new_ptr)?;
    let (op, on) = path::resolve_parent_as(&base(olddirfd, &old)?, &old, Errno::EBUSY)?;
    let (np, nn) = path::resolve_parent_as(&base(newdirfd, &new)?, &new, Errno::EBUSY)?;
    if !Arc::ptr_eq(&op.mount, &np.mount) {
        return Err(Errno::EXDEV);
    }
    let full = |p: &Loc, n: &str| {
        if p.path == "/" {
            alloc::format!("/{}", n)
        } else {
            alloc::format!("{}/{}", p.path, n)
        }
    };
    let (old_full, new_full) = (full(&op, &on), full(&np, &nn));
    if crate::fs::mount_at(&old_full).is_some() || crate::fs::mount_at(&new_full).is_some() {
        return Err(Errno::EBUSY);
    }
    let src = path::resolve(&op, &on, false)?;
    if src.is_dir()? && new_full.starts_with(&alloc::format!("{}/", old_full)) {
        return Err(Errno::EINVAL);
    }
    let c = perm::cred();
    if !c.is_root() {
        let sm = src.node.getattr()?;
        perm::may_delete(&c, &op, &sm)?;
        match path::resolve(&np, &nn, false) {
            Ok(t) => perm::may_delete(&c, &np, &t.node.getattr()?)?,
            Err(Errno::ENOENT) => perm::may_modify_dir(&c, &np)?,
            Err(e) => return Err(e),
        }
        // A directory that changes parent gets a new `..`: it must be writable.
        if sm.ftype == FileType::Directory && op.path != np.path {
            perm::check_meta(&c, &sm, perm::MAY_WRITE)?;
        }
    }
    let flags = RenameFlags {
        noreplace: flags & RENAME_NOREPLACE != 0,
        exchange: flags & RENAME_EXCHANGE != 0,
    };
    op.node.rename(&on, &*np.node, &nn, flags)?;
    Ok(0)
}

pub fn sys_linkat(
    olddirfd: i32,
    old_ptr: usize,
    newdirfd: i32,
    new_ptr: usize,
    flags: u32,
) -> SysResult {
    if flags & !(AT_SYMLINK_FOLLOW | AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    let old = read_path(old_ptr)?;
    let new = read_path(new_ptr)?;
    let src = path::resolve(&base(olddirfd, &old)?, &old, flags & AT_SYMLINK_FOLLOW != 0)?;
    if src.is_dir()? {
        return Err(Errno::EPERM);
    }
    let (np, nn) = path::resolve_parent(&base(newdirfd, &new)?, &new)?;
    // Linux looks the new name up before asking the file system (which may not support
    // links at all: EPERM on FAT), so an existing name is EEXIST everywhere.
    if np.node.lookup(&nn).is_ok() {
        return Err(Errno::EEXIST);
    }
    if !Arc::ptr_eq(&src.mount, &np.mount) {
        return Err(Errno::EXDEV);
    }
    perm::may_modify_dir(&perm::cred(), &np)?;
    np.node.link(&nn, &*src.node)?;
    Ok(0)
}

pub fn sys_symlinkat(target_ptr: usize, newdirfd: i32, link_ptr: usize) -> SysResult {
    let target = read_path(target_ptr)?;
    let link = read_path(link_ptr)?;
    if target.is_empty() {
        return Err(Errno::ENOENT);
    }
    let (parent, name) = path::resolve_parent(&base(newdirfd, &link)?, &link)?;
    if parent.node.lookup(&name).is_ok() {
        return Err(Errno::EEXIST); // as in `sys_linkat`
    }
    let c = perm::cred();
    perm::may_modify_dir(&c, &parent)?;
    let new = perm::new_node(&c, &parent, FileType::Symlink, 0o777)?;
    parent.node.symlink(&name, &target, &new)?;
    Ok(0)
}

pub fn sys_readlinkat(dirfd: i32, path_ptr: usize, buf: usize, size: isize) -> SysResult {
    if size <= 0 {
        return Err(Errno::EINVAL);
    }
    let path = read_path(path_ptr)?;
    let loc = path::resolve(&base(dirfd, &path)?, &path, false)?;
    if loc.node.ftype()? != FileType::Symlink {
        return Err(Errno::EINVAL);
    }
    let target = loc.node.readlink()?;
    let n = target.len().min(size as usize);
    copy_out(buf, &target.as_bytes()[..n])?;
    Ok(n)
}

pub fn sys_ftruncate(fd: i32, len: i64) -> SysResult {
    if len < 0 {
        return Err(Errno::EINVAL);
    }
    let f = file(fd)?;
    if !f.writable || f.ftype != FileType::Regular {
        return Err(Errno::EINVAL);
    }
    f.loc.node.truncate(len as u64)?;
    drop_suid_of(&f)?;
    Ok(0)
}

pub fn sys_truncate(path_ptr: usize, len: i64) -> SysResult {
    if len < 0 {
        return Err(Errno::EINVAL);
    }
    let path = read_path(path_ptr)?;
    let loc = path::resolve(&base(AT_FDCWD, &path)?, &path, true)?;
    match loc.node.ftype()? {
        FileType::Regular => {}
        FileType::Directory => return Err(Errno::EISDIR),
        _ => return Err(Errno::EINVAL),
    }
    perm::check(&perm::cred(), &loc, perm::MAY_WRITE)?;
    loc.node.truncate(len as u64)?;
    drop_suid_after_write(&loc, &loc.node.getattr()?)?;
    Ok(0)
}

pub fn sys_fsync(fd: i32, data_only: bool) -> SysResult {
    let f = file(fd)?;
    f.loc.node.fsync(data_only)?;
    Ok(0)
}

pub fn sys_sync() -> SysResult {
    crate::fs::sync_all();
    Ok(0)
}

fn statfs_of(loc: &Loc) -> Result<Statfs, Errno> {
    let s = loc.mount.fs.statfs()?;
    Ok(Statfs {
        f_type: s.fs_type as i64,
        f_bsize: s.block_size as i64,
        f_blocks: s.blocks,
        f_bfree: s.blocks_free,
        f_bavail: s.blocks_available,
        f_files: s.files,
        f_ffree: s.files_free,
        f_fsid: [loc.mount.id as i32, 0],
        f_namelen: s.name_max as i64,
        f_frsize: s.block_size as i64,
        ..Default::default()
    })
}

pub fn sys_statfs(path_ptr: usize, buf: usize) -> SysResult {
    let path = read_path(path_ptr)?;
    let loc = path::resolve(&base(AT_FDCWD, &path)?, &path, true)?;
    copy_out(buf, &statfs_of(&loc)?.as_bytes())?;
    Ok(0)
}

pub fn sys_fstatfs(fd: i32, buf: usize) -> SysResult {
    let f = file(fd)?;
    copy_out(buf, &statfs_of(&f.loc)?.as_bytes())?;
    Ok(0)
}

/// faccessat / faccessat2: checked with the real ids (the effective ones with AT_EACCESS),
/// as Linux does; root may read and write anything, executing needs some x bit.
pub fn sys_faccessat(dirfd: i32, path_ptr: usize, mode: u32, flags: u32) -> SysResult {
    const AT_EACCESS: u32 = 0x200;
    if mode & !7 != 0 || flags & !(AT_EACCESS | AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    let path = read_path(path_ptr)?;
    let loc = if path.is_empty() && flags & AT_EMPTY_PATH != 0 && dirfd != AT_FDCWD {
        file(dirfd)?.loc.clone()
    } else {
        path::resolve(
            &base(dirfd, &path)?,
            &path,
            flags & AT_SYMLINK_NOFOLLOW == 0,
        )?
    };
    let m = loc.node.getattr()?;
    let mut c = perm::cred();
    if flags & AT_EACCESS == 0 {
        c.fsuid = c.uid;
        c.fsgid = c.gid;
    }
    if mode != 0 {
        perm::check_meta(&c, &m, mode)?;
    }
    Ok(0)
}

pub fn sys_getcwd(buf: usize, size: usize) -> SysResult {
    let cwd = with_current(|p| p.cwd.clone());
    if cwd.len() + 1 > size {
        return Err(Errno::ERANGE);
    }
    let mut bytes = cwd.into_bytes();
    bytes.push(0);
    copy_out(buf, &bytes)?;
    Ok(bytes.len())
}

fn set_cwd(loc: Loc) -> SysResult {
    if !loc.is_dir()? {
        return Err(Errno::ENOTDIR);
    }
    with_current(|p| p.cwd = loc.path);
    Ok(0)
}

pub fn sys_chdir(path_ptr: usize) -> SysResult {
    let path = read_path(path_ptr)?;
    let loc = path::resolve(&base(AT_FDCWD, &path)?, &path, true)?;
    if loc.is_dir()? {
        perm::check(&perm::cred(), &loc, perm::MAY_EXEC)?;
    }
    set_cwd(loc)
}

pub fn sys_fchdir(fd: i32) -> SysResult {
    set_cwd(file(fd)?.loc.clone())
}

fn chmod(loc: &Loc, mode: u32) -> SysResult {
    let c = perm::cred();
    let mode = if c.is_root() {
        mode & 0o7777
    } else {
        let m = loc.node.getattr()?;
        if !perm::owns(&c, &m) {
            return Err(Errno::EPERM);
        }
        perm::chmod_mode(&c, &m, mode)
    };
    loc.node.setattr(&SetAttr {
        perm: Some(mode),
        ..Default::default()
    })?;
    Ok(0)
}

/// chown with Linux's rules (`chown_ok`, `chgrp_ok`): root may set any owner and group; the
/// owner may keep its uid and set a group it belongs to; -1 leaves an id alone. Changing
/// either id of a non-directory takes set-user-id off (and set-group-id with group-execute).
fn chown(loc: &Loc, uid: u32, gid: u32) -> SysResult {
    let c = perm::cred();
    let m = loc.node.getattr()?;
    let owner = c.fsuid == m.uid;
    if uid != u32::MAX && !c.is_root() && !(owner && uid == m.uid) {
        return Err(Errno::EPERM);
    }
    if gid != u32::MAX && !c.is_root() && !(owner && (gid == m.gid || c.in_group(gid))) {
        return Err(Errno::EPERM);
    }
    let new_mode = if m.ftype != FileType::Directory && (uid != u32::MAX || gid != u32::MAX) {
        perm::mode_without_suid(&m)
    } else {
        None
    };
    loc.node.setattr(&SetAttr {
        uid: (uid != u32::MAX).then_some(uid),
        gid: (gid != u32::MAX).then_some(gid),
        perm: new_mode,
        ..Default::default()
    })?;
    Ok(0)
}

pub fn sys_fchown(fd: i32, uid: usize, gid: usize) -> SysResult {
    chown(&file(fd)?.loc, uid as u32, gid as u32)
}

pub fn sys_fchownat(dirfd: i32, path_ptr: usize, uid: usize, gid: usize, flags: u32) -> SysResult {
    if flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    let path = read_path(path_ptr)?;
    let loc = if path.is_empty() && flags & AT_EMPTY_PATH != 0 {
        if dirfd == AT_FDCWD {
            base(dirfd, "")?
        } else {
            file(dirfd)?.loc.clone()
        }
    } else {
        path::resolve(
            &base(dirfd, &path)?,
            &path,
            flags & AT_SYMLINK_NOFOLLOW == 0,
        )?
    };
    chown(&loc, uid as u32, gid as u32)
}

/// mknodat: regular files, FIFOs, sockets, and (root only) character and block devices.
pub fn sys_mknodat(dirfd: i32, path_ptr: usize, mode: u32, dev: usize) -> SysResult {
    let path = read_path(path_ptr)?;
    let ftype = match mode & 0o170000 {
        0 | 0o100000 => FileType::Regular,
        0o010000 => FileType::Fifo,
        0o140000 => FileType::Socket,
        0o020000 => FileType::CharDevice,
        0o060000 => FileType::BlockDevice,
        0o040000 => return Err(Errno::EPERM),
        _ => return Err(Errno::EINVAL),
    };
    let (parent, name) = path::resolve_parent(&base(dirfd, &path)?, &path)?;
    let c = perm::cred();
    if matches!(ftype, FileType::CharDevice | FileType::BlockDevice) && !c.is_root() {
        return Err(Errno::EPERM);
    }
    perm::may_modify_dir(&c, &parent)?;
    let mut new = perm::new_node(&c, &parent, ftype, mode & 0o7777 & !umask())?;
    if matches!(ftype, FileType::CharDevice | FileType::BlockDevice) {
        new.rdev = dev as u32 as u64;
    }
    parent.node.create(&name, &new)?;
    Ok(0)
}

pub fn sys_fchmod(fd: i32, mode: u32) -> SysResult {
    chmod(&file(fd)?.loc, mode)
}

pub fn sys_fchmodat(dirfd: i32, path_ptr: usize, mode: u32) -> SysResult {
    let path = read_path(path_ptr)?;
    chmod(&path::resolve(&base(dirfd, &path)?, &path, true)?, mode)
}

pub fn sys_utimensat(dirfd: i32, path_ptr: usize, times_ptr: usize, flags: u32) -> SysResult {
    const UTIME_NOW: i64 = (1 << 30) - 1;
    const UTIME_OMIT: i64 = (1 << 30) - 2;
    if flags & !AT_SYMLINK_NOFOLLOW != 0 {
        return Err(Errno::EINVAL);
    }
    let loc = if path_ptr == 0 {
        // Linux: a NULL path names the descriptor itself, except with AT_FDCWD (a bad path).
        if dirfd == AT_FDCWD {
            return Err(Errno::EFAULT);
        }
        file(dirfd)?.loc.clone()
    } else {
        let path = read_path(path_ptr)?;
        path::resolve(
            &base(dirfd, &path)?,
            &path,
            flags & AT_SYMLINK_NOFOLLOW == 0,
        )?
    };
    let (atime, mtime) = if times_ptr == 0 {
        (Some(TimeSet::Now), Some(TimeSet::Now))
    } else {
        let mut raw = [0u8; 32];
        copy_in(times_ptr, &mut raw)?;
        let conv = |b: &[u8]| -> Result<Option<TimeSet>, Errno> {
            let t = Timespec::from_bytes(b.try_into().map_err(|_| Errno::EFAULT)?);
            match t.tv_nsec {
                UTIME_NOW => Ok(Some(TimeSet::Now)),
                UTIME_OMIT => Ok(None),
                n if (0..1_000_000_000).contains(&n) => Ok(Some(TimeSet::At(Timestamp {
                    sec: t.tv_sec,
                    nsec: n as u32,
                }))),
                _ => Err(Errno::EINVAL),
            }
        };
        (conv(&raw[..16])?, conv(&raw[16..])?)
    };
    let c = perm::cred();
    if !c.is_root() {
        let m = loc.node.getattr()?;
        if !perm::owns(&c, &m) {
            // Setting times to "now" needs write permission; any other time, ownership.
            let explicit =
                matches!(atime, Some(TimeSet::At(_))) || matches!(mtime, Some(TimeSet::At(_)));
            if explicit {
                return Err(Errno::EPERM);
            }
            perm::check_meta(&c, &m, perm::MAY_WRITE)?;
        }
    }
    loc.node.setattr(&SetAttr {
        atime,
        mtime,
        ..Default::default()
    })?;
    Ok(0)
}

pub fn sys_dup(fd: i32) -> SysResult {
    with_current(|p| {
        let f = p.files.get(fd)?;
        p.files.install(f, false).map(|fd| fd as usize)
    })
}

pub fn sys_dup3(old: i32, new: i32, flags: u32) -> SysResult {
    if old == new || flags & !O_CLOEXEC != 0 {
        return Err(Errno::EINVAL);
    }
    let new_idx = usize::try_from(new).map_err(|_| Errno::EBADF)?;
    if new_idx >= crate::fs::file::MAX_FDS {
        return Err(Errno::EBADF);
    }
    let replaced = with_current(|p| {
        let f = p.files.get(old)?;
        Ok::<_, Errno>(p.files.install_at(new_idx, f, flags & O_CLOEXEC != 0))
    })?;
    drop(replaced);
    Ok(new_idx)
}

pub fn sys_fcntl(fd: i32, cmd: u32, arg: usize) -> SysResult {
    const F_DUPFD: u32 = 0;
    const F_GETFD: u32 = 1;
    const F_SETFD: u32 = 2;
    const F_GETFL: u32 = 3;
    const F_SETFL: u32 = 4;
    const F_DUPFD_CLOEXEC: u32 = 1030;
    const FD_CLOEXEC: usize = 1;
    with_current(|p| {
        let f = p.files.get(fd)?;
        match cmd {
            F_DUPFD | F_DUPFD_CLOEXEC => {
                if arg >= crate::fs::file::MAX_FDS {
                    return Err(Errno::EINVAL);
                }
                p.files
                    .install_from(arg, f, cmd == F_DUPFD_CLOEXEC)
                    .map(|fd| fd as usize)
            }
            F_GETFD => Ok(if p.files.cloexec(fd)? { FD_CLOEXEC } else { 0 }),
            F_SETFD => p.files.set_cloexec(fd, arg & FD_CLOEXEC != 0).map(|_| 0),
            F_GETFL => Ok(*f.status_flags.lock() as usize),
            F_SETFL => {
                let mut s = f.status_flags.lock();
                let settable = O_APPEND | O_NONBLOCK | O_DIRECT | O_NOATIME;
                *s = (*s & !settable) | (arg as u32 & settable);
                Ok(0)
            }
            _ => Err(Errno::EINVAL),
        }
    })
}
