//! Descriptor calls: openat, close, lseek, getdents64, fsync/sync, dup/dup3, flock (fcntl is
//! `fcntl`), and the helpers every file-system call uses (the descriptor's file, the base
//! directory of a relative path, the stat layout). The data path is `io`, names are `namespace`,
//! attributes `attr`; pipes and the terminal are `stream`.

use alloc::vec::Vec;

use abi::fcntl::*;
use abi::stat::dirent64_reclen;
use abi::Errno;
use vfs::FileType;

use super::args::{copy_out, read_path, SysResult};
use crate::fs::file::OpenFile;
use crate::fs::path;
use crate::fs::perm;
use crate::task::with_current;

use super::fd::{base, file, umask};
use super::io::drop_suid_after_write;
/// Linux's cap on one read or write (`MAX_RW_COUNT`).
pub fn sys_openat(dirfd: i32, path_ptr: usize, flags: u32, mode: u32) -> SysResult {
    open_at(dirfd, &read_path(path_ptr)?, flags, mode)
}

/// openat of `path` (read from the caller already): openat2 shares it.
pub(super) fn open_at(dirfd: i32, path: &str, flags: u32, mode: u32) -> SysResult {
    let path = alloc::string::String::from(path);
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
    // A file this call creates is opened without a permission check (its mode may deny the
    // very access it is opened for, as `open(name, O_CREAT | O_RDWR, 0)` does).
    let mut created = false;
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
                created = true;
                crate::fs::create(
                    &parent,
                    &name,
                    FileType::Regular,
                    mode & 0o7777 & !umask(),
                    0,
                )?
            }
            Err(e) => return Err(e),
        }
    } else {
        path::resolve(&base, &path, follow)?
    };
    let ftype = loc.node.ftype()?;
    // O_NOFOLLOW on a symlink; with O_PATH the descriptor names the link itself.
    if ftype == FileType::Symlink && flags & O_PATH == 0 {
        return Err(Errno::ELOOP);
    }
    if flags & O_DIRECTORY != 0 && ftype != FileType::Directory {
        return Err(Errno::ENOTDIR);
    }
    // O_CREAT naming a directory (or a link to one) is EISDIR, whatever the access mode.
    if flags & O_CREAT != 0 && ftype == FileType::Directory {
        return Err(Errno::EISDIR);
    }
    // O_NOATIME only for the file's owner or a holder of CAP_FOWNER (Linux: EPERM).
    if flags & O_NOATIME != 0 && flags & O_PATH == 0 {
        const CAP_FOWNER: u32 = 3;
        let c = crate::task::current_cred();
        if c.fsuid != loc.node.getattr()?.uid && !c.caps.has(CAP_FOWNER) {
            return Err(Errno::EPERM);
        }
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
    if flags & O_PATH == 0 && !created {
        let mut want = 0;
        if readable {
            want |= perm::MAY_READ;
        }
        if writable || flags & O_TRUNC != 0 {
            want |= perm::MAY_WRITE;
        }
        perm::check(&perm::cred(), &loc, want)?;
        // A lease another description holds on the file is broken first (`fs::lease`).
        if ftype == FileType::Regular {
            let write = writable || flags & O_TRUNC != 0;
            crate::fs::lease::break_for(&loc, write, flags & O_NONBLOCK != 0)?;
        }
    }
    if flags & O_PATH == 0 {
        match ftype {
            // A socket is not opened through its name (Linux: ENXIO).
            FileType::Socket => return Err(Errno::ENXIO),
            FileType::Fifo => {
                let f = super::stream::open_fifo(loc, flags)?;
                return with_current(|p| p.files.fds().install(f, flags & O_CLOEXEC != 0))
                    .map(|fd| fd as usize);
            }
            _ => {}
        }
    }
    // A running program's file may not be opened for writing (Linux: ETXTBSY). A file this
    // open created runs nowhere.
    if writable && !created && ftype == FileType::Regular && !crate::mm::file_pages::none_mapped() {
        let key = crate::fs::lock::FileKey {
            mount: loc.mount.id,
            ino: loc.node.getattr()?.ino,
        };
        if crate::mm::file_pages::is_running(key) {
            return Err(Errno::ETXTBSY);
        }
    }
    // A file this call created is empty already: no truncation, and so (as in Linux, which
    // skips it for a created file) its set-group-id bit stays.
    if flags & O_TRUNC != 0 && writable && ftype == FileType::Regular && !created {
        let m = loc.node.getattr()?;
        if m.size != 0 {
            loc.node.truncate(0)?;
            let key = crate::fs::lock::FileKey {
                mount: loc.mount.id,
                ino: m.ino,
            };
            crate::mm::file_pages::truncated(key, 0);
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
    f.created
        .store(created, core::sync::atomic::Ordering::Relaxed);
    with_current(|p| p.files.fds().install(f, flags & O_CLOEXEC != 0)).map(|fd| fd as usize)
}

pub fn sys_close(fd: i32) -> SysResult {
    let f = with_current(|p| p.files.fds().close(fd))?;
    f.release_locks(crate::task::current_pid());
    // May run `release` (outside the process lock); its error is close's, the descriptor is
    // gone either way (as in Linux).
    OpenFile::close_last(f)?;
    Ok(0)
}

/// close_range(2): close every open descriptor from `first` to `last`, or with
/// CLOSE_RANGE_CLOEXEC mark them close-on-exec. CLOSE_RANGE_UNSHARE asks for a table of the
/// caller's own first, which every process has here. EINVAL for other flags or
/// `first > last`.
pub fn sys_close_range(first: u32, last: u32, flags: u32) -> SysResult {
    use abi::fcntl::{CLOSE_RANGE_CLOEXEC, CLOSE_RANGE_UNSHARE};
    if flags & !(CLOSE_RANGE_UNSHARE | CLOSE_RANGE_CLOEXEC) != 0 || first > last {
        return Err(Errno::EINVAL);
    }
    let closed = with_current(|p| {
        let t = p.files.fds();
        let mut closed = alloc::vec::Vec::new();
        for fd in t.numbers() {
            if (fd as u32) < first || fd as u32 > last {
                continue;
            }
            if flags & CLOSE_RANGE_CLOEXEC != 0 {
                let _ = t.set_cloexec(fd, true);
            } else if let Ok(f) = t.close(fd) {
                closed.push(f);
            }
        }
        closed
    });
    let pid = crate::task::current_pid();
    for f in closed {
        f.release_locks(pid);
        // As close(2): the descriptor is gone whatever the last close says.
        let _ = OpenFile::close_last(f);
    }
    Ok(0)
}

/// sync_file_range(2): the checks of Linux (flags, then offsets: EINVAL; the descriptor:
/// EBADF; a pipe, socket or character device: ESPIPE), then with SYNC_FILE_RANGE_WRITE or
/// SYNC_FILE_RANGE_WAIT_AFTER the whole file's data is written back (a superset of the
/// range; the file systems here write a file back as one).
pub fn sys_sync_file_range(fd: i32, offset: i64, nbytes: i64, flags: u32) -> SysResult {
    const WAIT_BEFORE: u32 = 1;
    const WRITE: u32 = 2;
    const WAIT_AFTER: u32 = 4;
    if flags & !(WAIT_BEFORE | WRITE | WAIT_AFTER) != 0 {
        return Err(Errno::EINVAL);
    }
    let end = offset.wrapping_add(nbytes);
    if offset < 0 || end < 0 || end < offset {
        return Err(Errno::EINVAL);
    }
    let f = file(fd)?;
    if !matches!(
        f.ftype,
        FileType::Regular | FileType::BlockDevice | FileType::Directory | FileType::Symlink
    ) {
        return Err(Errno::ESPIPE);
    }
    if flags & (WRITE | WAIT_AFTER) != 0 && f.ftype != FileType::Directory {
        super::io::fsync_file(&f, true)?;
    }
    Ok(0)
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

pub fn sys_fsync(fd: i32, data_only: bool) -> SysResult {
    super::io::fsync_file(&*file(fd)?, data_only)
}

/// fadvise64: the advice is checked and accepted; the caches here do not act on it (Linux
/// treats it as a hint too).
pub fn sys_fadvise64(fd: i32, _offset: i64, len: i64, advice: u32) -> SysResult {
    const POSIX_FADV_NOREUSE: u32 = 5;
    let f = file(fd)?;
    if f.ftype == FileType::Fifo || f.ftype == FileType::Socket {
        return Err(Errno::ESPIPE);
    }
    if advice > POSIX_FADV_NOREUSE || len < 0 {
        return Err(Errno::EINVAL);
    }
    Ok(0)
}

/// readahead(fd, offset, count): Linux's checks (EBADF for a descriptor not open for reading,
/// EINVAL for anything but a regular file), then the hint is taken as fadvise's WILLNEED is:
/// accepted, with no read ahead of time (the block cache fills on the first read).
pub fn sys_readahead(fd: i32) -> SysResult {
    let f = file(fd)?;
    if !f.readable {
        return Err(Errno::EBADF);
    }
    if f.ftype != FileType::Regular {
        return Err(Errno::EINVAL);
    }
    Ok(0)
}

/// fallocate(2) with Linux's checks in its order (vfs_fallocate): the range (EINVAL), the
/// mode (EOPNOTSUPP for unknown bits, two modes at once, PUNCH_HOLE without KEEP_SIZE,
/// COLLAPSE/INSERT with it), the access mode (EBADF), the type
/// (ESPIPE, EISDIR, ENODEV), the end past the largest offset (EFBIG). Then the two modes the
/// file systems here can give: 0 makes the file at least `offset + len` long (RLIMIT_FSIZE
/// as truncate), FALLOC_FL_KEEP_SIZE leaves it; both first check that the file system has
/// the bytes free (ENOSPC). Neither dbfs (copy on write: a later overwrite needs new blocks
/// anyway) nor FAT32 here reserves blocks ahead, so that check is the promise they keep.
/// Punching holes, zeroing, collapsing and inserting ranges are EOPNOTSUPP, which LTP and
/// programs take as "not supported by this file system".
pub fn sys_fallocate(fd: i32, mode: u32, offset: i64, len: i64) -> SysResult {
    const KEEP_SIZE: u32 = 0x01;
    const PUNCH_HOLE: u32 = 0x02;
    const COLLAPSE_RANGE: u32 = 0x08;
    const ZERO_RANGE: u32 = 0x10;
    const INSERT_RANGE: u32 = 0x20;
    const UNSHARE_RANGE: u32 = 0x40;
    const KNOWN: u32 =
        KEEP_SIZE | PUNCH_HOLE | COLLAPSE_RANGE | ZERO_RANGE | INSERT_RANGE | UNSHARE_RANGE;
    let f = file(fd)?;
    if offset < 0 || len <= 0 {
        return Err(Errno::EINVAL);
    }
    // The modes are exclusive; KEEP_SIZE goes with some of them (Linux 6.11's check).
    let ok = match mode & !KEEP_SIZE {
        0 | UNSHARE_RANGE | ZERO_RANGE => true,
        PUNCH_HOLE => mode & KEEP_SIZE != 0,
        COLLAPSE_RANGE | INSERT_RANGE => mode & KEEP_SIZE == 0,
        _ => false,
    };
    if mode & !KNOWN != 0 || !ok {
        return Err(Errno::EOPNOTSUPP);
    }
    if !f.writable {
        return Err(Errno::EBADF);
    }
    match f.ftype {
        FileType::Fifo | FileType::Socket => return Err(Errno::ESPIPE),
        FileType::Directory => return Err(Errno::EISDIR),
        FileType::Regular => {}
        _ => return Err(Errno::ENODEV),
    }
    let end = offset.checked_add(len).ok_or(Errno::EFBIG)? as u64;
    let offset = offset as u64;
    let size = f.loc.node.getattr()?.size;
    match mode & !KEEP_SIZE {
        0 | ZERO_RANGE => {}
        // A hole inside the size: the file system frees it (FAT has no holes: EOPNOTSUPP,
        // as Linux's vfat answers); past the end there is nothing to punch.
        PUNCH_HOLE => {
            if offset < size {
                let end = end.min(size);
                f.loc.node.punch_hole(offset, end - offset)?;
                zero_shared_pages(&f, offset, end)?;
            }
            return Ok(0);
        }
        _ => return Err(Errno::EOPNOTSUPP),
    }
    if mode & KEEP_SIZE == 0 {
        super::io::fsize_grow_ok(size, end)?;
    }
    let st = f.loc.mount.fs.statfs()?;
    let free = st.blocks_free.saturating_mul(st.block_size);
    if end.saturating_sub(size) > free {
        return Err(Errno::ENOSPC);
    }
    if mode & ZERO_RANGE != 0 && offset < size {
        // The part inside the size reads zeros: a hole where the file system has them, zeros
        // written where it has not (FAT's clusters stay allocated, as ZERO_RANGE promises).
        let zero_to = end.min(size);
        match f.loc.node.punch_hole(offset, zero_to - offset) {
            Err(vfs::VfsError::Unsupported) => write_zeros(&f, offset, zero_to)?,
            r => r?,
        }
        zero_shared_pages(&f, offset, zero_to)?;
    }
    if mode & KEEP_SIZE == 0 && end > size {
        f.loc.node.truncate(end)?;
        crate::mm::file_pages::truncated_open(&*f, end);
    }
    Ok(0)
}

/// `[from, to)` of `f` was zeroed under its shared mappings: their resident pages read zeros
/// there too.
fn zero_shared_pages(f: &OpenFile, from: u64, to: u64) -> Result<(), Errno> {
    let len = usize::try_from(to - from).map_err(|_| Errno::EFBIG)?;
    crate::mm::file_pages::update_after_write(f, from, len, |_, dst| {
        dst.fill(0);
        Ok(())
    })
}

/// Write zeros over `[from, to)` of `f` (a file system without holes), 64 KiB at a time.
fn write_zeros(f: &OpenFile, from: u64, to: u64) -> Result<(), Errno> {
    let zeros = crate::mm::heap::try_zeroed(64 << 10)?;
    let mut at = from;
    while at < to {
        let n = ((to - at) as usize).min(zeros.len());
        let put = f.loc.node.write_at(at, &zeros[..n])?;
        if put == 0 {
            return Err(Errno::EIO);
        }
        at += put as u64;
    }
    Ok(())
}

pub fn sys_sync() -> SysResult {
    crate::drivers::window::barrier_coming(crate::fs::sync_all);
    Ok(0)
}

/// syncfs: write back the file system `fd` is on (EBADF for a bad descriptor). Every mount is
/// written back, a superset of what Linux promises (stress-ng's io stressor calls it).
pub fn sys_syncfs(fd: i32) -> SysResult {
    file(fd)?;
    sys_sync()
}

pub fn sys_dup(fd: i32) -> SysResult {
    with_current(|p| {
        let f = p.files.fds().get(fd)?;
        p.files.fds().install(f, false).map(|fd| fd as usize)
    })
}

pub fn sys_dup3(old: i32, new: i32, flags: u32) -> SysResult {
    if old == new || flags & !O_CLOEXEC != 0 {
        return Err(Errno::EINVAL);
    }
    let new_idx = usize::try_from(new).map_err(|_| Errno::EBADF)?;
    if new_idx >= with_current(|p| p.files.fds().limit()) {
        return Err(Errno::EBADF);
    }
    let replaced = with_current(|p| {
        let f = p.files.fds().get(old)?;
        p.files.fds().make_room(new_idx)?;
        Ok::<_, Errno>(p.files.fds().install_at(new_idx, f, flags & O_CLOEXEC != 0))
    })?;
    if let Some(f) = replaced {
        f.release_locks(crate::task::current_pid());
    }
    Ok(new_idx)
}

/// flock(fd, op): `LOCK_SH`, `LOCK_EX` or `LOCK_UN`, with `LOCK_NB` not to wait
/// (`fs::flock`). EINVAL for any other op, EBADF for an `O_PATH` descriptor.
pub fn sys_flock(fd: i32, op: u32) -> SysResult {
    const LOCK_SH: u32 = 1;
    const LOCK_EX: u32 = 2;
    const LOCK_NB: u32 = 4;
    const LOCK_UN: u32 = 8;
    let f = file(fd)?;
    let want = match op & !LOCK_NB {
        LOCK_SH => Some(false),
        LOCK_EX => Some(true),
        LOCK_UN => None,
        _ => return Err(Errno::EINVAL),
    };
    if *f.status_flags.lock() & O_PATH != 0 {
        return Err(Errno::EBADF);
    }
    f.flock(want, op & LOCK_NB != 0)?;
    Ok(0)
}
