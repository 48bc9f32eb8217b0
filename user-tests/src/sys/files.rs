//! Wrappers for calls on open files and paths to them: open/close, read/write (and their
//! positioned and loop-until-done forms), seek, stat and statfs, truncate, locks, fsync,
//! getdents64, sync and pipe2.

use core::mem::MaybeUninit;

use abi::fcntl::*;
use abi::stat::{Stat, Statfs, Statx};
use abi::syscall::*;
use abi::Errno;

use crate::raw::*;

use super::marshal::{check, with_cstr, Fd, SysResult};

/// `openat(dirfd, path, flags, mode)`.
pub fn openat(dirfd: Fd, path: &str, flags: u32, mode: u32) -> SysResult<Fd> {
    with_cstr(path, |p| {
        // SAFETY: `p` is a NUL-terminated string alive for the call; no other pointer passed.
        let r = unsafe {
            syscall4(
                SYS_OPENAT,
                dirfd as usize,
                p as usize,
                flags as usize,
                mode as usize,
            )
        };
        check(r).map(|fd| fd as Fd)
    })
}

/// `open(path, flags, mode)` relative to the current directory.
pub fn open(path: &str, flags: u32, mode: u32) -> SysResult<Fd> {
    openat(AT_FDCWD, path, flags, mode)
}

/// `close(fd)`.
pub fn close(fd: Fd) -> SysResult<()> {
    // SAFETY: no pointer arguments.
    check(unsafe { syscall1(SYS_CLOSE, fd as usize) }).map(|_| ())
}

/// `read(fd, buf)`: the number of bytes read, 0 at end of file.
pub fn read(fd: Fd, buf: &mut [u8]) -> SysResult<usize> {
    // SAFETY: `buf` is valid for writes of `buf.len()` bytes.
    check(unsafe { syscall3(SYS_READ, fd as usize, buf.as_mut_ptr() as usize, buf.len()) })
}

/// `write(fd, buf)`: the number of bytes written.
pub fn write(fd: Fd, buf: &[u8]) -> SysResult<usize> {
    // SAFETY: `buf` is valid for reads of `buf.len()` bytes.
    check(unsafe { syscall3(SYS_WRITE, fd as usize, buf.as_ptr() as usize, buf.len()) })
}

/// `write(fd, addr, len)` from a raw address (the kernel checks it: EFAULT).
pub fn write_raw(fd: Fd, addr: usize, len: usize) -> SysResult<usize> {
    // SAFETY: write only reads user memory, and the kernel checks the range.
    check(unsafe { syscall3(SYS_WRITE, fd as usize, addr, len) })
}

/// `pread64(fd, buf, offset)`: does not move the file offset.
pub fn pread(fd: Fd, buf: &mut [u8], offset: u64) -> SysResult<usize> {
    // SAFETY: `buf` is valid for writes of `buf.len()` bytes.
    check(unsafe {
        syscall4(
            SYS_PREAD64,
            fd as usize,
            buf.as_mut_ptr() as usize,
            buf.len(),
            offset as usize,
        )
    })
}

/// `pwrite64(fd, buf, offset)`: does not move the file offset.
pub fn pwrite(fd: Fd, buf: &[u8], offset: u64) -> SysResult<usize> {
    // SAFETY: `buf` is valid for reads of `buf.len()` bytes.
    check(unsafe {
        syscall4(
            SYS_PWRITE64,
            fd as usize,
            buf.as_ptr() as usize,
            buf.len(),
            offset as usize,
        )
    })
}

/// Write all of `buf` (looping over short writes); a write returning 0 is `EIO`.
pub fn write_all(fd: Fd, mut buf: &[u8]) -> SysResult<()> {
    while !buf.is_empty() {
        match write(fd, buf)? {
            0 => return Err(Errno::EIO),
            n => buf = &buf[n..],
        }
    }
    Ok(())
}

/// Write all of `buf` at `offset` (looping over short writes).
pub fn pwrite_all(fd: Fd, mut buf: &[u8], mut offset: u64) -> SysResult<()> {
    while !buf.is_empty() {
        match pwrite(fd, buf, offset)? {
            0 => return Err(Errno::EIO),
            n => {
                buf = &buf[n..];
                offset += n as u64;
            }
        }
    }
    Ok(())
}

/// `pwritev(fd, iov, offset)` of the buffers `bufs`, in order; returns the bytes written.
pub fn pwritev(fd: Fd, bufs: &[&[u8]], offset: u64) -> SysResult<usize> {
    let iov: alloc::vec::Vec<[usize; 2]> = bufs
        .iter()
        .map(|b| [b.as_ptr() as usize, b.len()])
        .collect();
    // SAFETY: `iov` is an array of `bufs.len()` iovecs (base, length), each naming a readable
    // buffer borrowed for the call.
    let r = unsafe {
        syscall5(
            SYS_PWRITEV,
            fd as usize,
            iov.as_ptr() as usize,
            iov.len(),
            offset as usize,
            0,
        )
    };
    check(r)
}

/// Fill `buf` from the current offset; returns the bytes read (less than `buf.len()` only at EOF).
pub fn read_full(fd: Fd, buf: &mut [u8]) -> SysResult<usize> {
    let mut done = 0;
    while done < buf.len() {
        match read(fd, &mut buf[done..])? {
            0 => break,
            n => done += n,
        }
    }
    Ok(done)
}

/// Fill `buf` from `offset`; returns the bytes read (less than `buf.len()` only at EOF).
pub fn pread_full(fd: Fd, buf: &mut [u8], offset: u64) -> SysResult<usize> {
    let mut done = 0;
    while done < buf.len() {
        match pread(fd, &mut buf[done..], offset + done as u64)? {
            0 => break,
            n => done += n,
        }
    }
    Ok(done)
}

/// `lseek(fd, offset, whence)`: the new offset.
pub fn lseek(fd: Fd, offset: i64, whence: u32) -> SysResult<u64> {
    // SAFETY: no pointer arguments.
    check(unsafe { syscall3(SYS_LSEEK, fd as usize, offset as usize, whence as usize) })
        .map(|o| o as u64)
}

/// `fstat(fd)`.
pub fn fstat(fd: Fd) -> SysResult<Stat> {
    let mut st = MaybeUninit::<Stat>::zeroed();
    // SAFETY: `st` is a writable `repr(C)` Stat of the kernel's 128-byte layout.
    check(unsafe { syscall2(SYS_FSTAT, fd as usize, st.as_mut_ptr() as usize) })?;
    // SAFETY: zero-initialised and every bit pattern is a valid Stat (plain integers).
    Ok(unsafe { st.assume_init() })
}

/// `newfstatat(dirfd, path, flags)` (flags: `AT_SYMLINK_NOFOLLOW`, `AT_EMPTY_PATH`).
pub fn fstatat(dirfd: Fd, path: &str, flags: u32) -> SysResult<Stat> {
    with_cstr(path, |p| {
        let mut st = MaybeUninit::<Stat>::zeroed();
        // SAFETY: `p` is NUL-terminated; `st` is a writable 128-byte Stat.
        check(unsafe {
            syscall4(
                SYS_NEWFSTATAT,
                dirfd as usize,
                p as usize,
                st.as_mut_ptr() as usize,
                flags as usize,
            )
        })?;
        // SAFETY: zero-initialised plain integers.
        Ok(unsafe { st.assume_init() })
    })
}

/// `statx(dirfd, path, flags, mask, buf)` with `buf` an address of the caller's choosing
/// (a bad one tests EFAULT); [`statx`] is the ordinary call.
pub fn statx_raw(dirfd: Fd, path: &str, flags: u32, mask: u32, buf: usize) -> SysResult<()> {
    with_cstr(path, |p| {
        // SAFETY: `p` is NUL-terminated; the kernel checks `buf` and answers EFAULT if bad.
        check(unsafe {
            syscall5(
                SYS_STATX,
                dirfd as usize,
                p as usize,
                flags as usize,
                mask as usize,
                buf,
            )
        })?;
        Ok(())
    })
}

/// `statx(dirfd, path, flags, mask)`.
pub fn statx(dirfd: Fd, path: &str, flags: u32, mask: u32) -> SysResult<Statx> {
    let mut buf = [0u8; core::mem::size_of::<Statx>()];
    statx_raw(dirfd, path, flags, mask, buf.as_mut_ptr() as usize)?;
    Ok(Statx::from_bytes(&buf))
}

/// `stat(path)`: follows symbolic links.
pub fn stat(path: &str) -> SysResult<Stat> {
    fstatat(AT_FDCWD, path, 0)
}

/// `lstat(path)`: does not follow a final symbolic link.
pub fn lstat(path: &str) -> SysResult<Stat> {
    fstatat(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW)
}

/// `statfs(path)`.
pub fn statfs(path: &str) -> SysResult<Statfs> {
    with_cstr(path, |p| {
        let mut st = MaybeUninit::<Statfs>::zeroed();
        // SAFETY: `p` is NUL-terminated; `st` is a writable 120-byte Statfs.
        check(unsafe { syscall2(SYS_STATFS, p as usize, st.as_mut_ptr() as usize) })?;
        // SAFETY: zero-initialised plain integers.
        Ok(unsafe { st.assume_init() })
    })
}

/// `ftruncate(fd, length)`.
pub fn ftruncate(fd: Fd, length: u64) -> SysResult<()> {
    // SAFETY: no pointer arguments.
    check(unsafe { syscall2(SYS_FTRUNCATE, fd as usize, length as usize) }).map(|_| ())
}

/// `fcntl(fd, cmd, &lock)` for the record-lock commands (`F_GETLK`, `F_SETLK`, `F_SETLKW`);
/// `F_GETLK` writes its answer back into `lock`.
pub fn fcntl_lock(fd: Fd, cmd: u32, lock: &mut Flock) -> SysResult<()> {
    let mut raw = lock.as_bytes();
    // SAFETY: `raw` is valid for reads and writes of `Flock::SIZE` bytes.
    check(unsafe {
        syscall3(
            SYS_FCNTL,
            fd as usize,
            cmd as usize,
            raw.as_mut_ptr() as usize,
        )
    })?;
    *lock = Flock::from_bytes(&raw);
    Ok(())
}

/// `fsync(fd)`.
pub fn fsync(fd: Fd) -> SysResult<()> {
    // SAFETY: no pointer arguments.
    check(unsafe { syscall1(SYS_FSYNC, fd as usize) }).map(|_| ())
}

/// `getdents64(fd, buf)`: the number of bytes of `linux_dirent64` records filled, 0 at the end.
pub fn getdents64(fd: Fd, buf: &mut [u8]) -> SysResult<usize> {
    // SAFETY: `buf` is valid for writes of `buf.len()` bytes.
    check(unsafe {
        syscall3(
            SYS_GETDENTS64,
            fd as usize,
            buf.as_mut_ptr() as usize,
            buf.len(),
        )
    })
}

/// `sync()`: write back every file system (Linux's returns nothing; ours cannot fail either).
pub fn sync() -> SysResult<()> {
    // SAFETY: no arguments.
    check(unsafe { syscall0(SYS_SYNC) }).map(|_| ())
}

/// `pipe2(fds, flags)`: (read end, write end).
pub fn pipe2(flags: u32) -> SysResult<(Fd, Fd)> {
    let mut fds = [0i32; 2];
    // SAFETY: `fds` is a writable array of two ints, what pipe2 fills.
    check(unsafe { syscall2(SYS_PIPE2, fds.as_mut_ptr() as usize, flags as usize) })?;
    Ok((fds[0], fds[1]))
}
