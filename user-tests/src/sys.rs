//! Layer 1: safe syscall wrappers returning `Result<T, Errno>`.
//!
//! One function per Linux syscall, named after the libc function, with Rust types: paths are
//! `&str` (copied into a NUL-terminated buffer here), buffers are slices, structures are the
//! [`abi::stat`] layouts. Errors are the kernel's errno, never erased. [`File`] closes its
//! descriptor on drop; the free functions take raw descriptors so tests can misuse them.

use alloc::string::String;
use alloc::vec::Vec;
use core::mem::MaybeUninit;

use abi::fcntl::*;
use abi::stat::{Stat, Statfs, Timespec};
use abi::syscall::*;
use abi::Errno;

use crate::raw::*;

/// A file descriptor as the kernel sees it.
pub type Fd = i32;
/// The result of every wrapper.
pub type SysResult<T> = Result<T, Errno>;

fn check(ret: isize) -> SysResult<usize> {
    Errno::from_ret(ret)
}

/// Call `f` with a NUL-terminated copy of `path` (on the stack when short, else on the heap).
/// A path with an interior NUL is `EINVAL`; one of `PATH_MAX` bytes or more is `ENAMETOOLONG`
/// (what Linux answers for either).
fn with_cstr<T>(path: &str, f: impl FnOnce(*const u8) -> SysResult<T>) -> SysResult<T> {
    let bytes = path.as_bytes();
    if bytes.contains(&0) {
        return Err(Errno::EINVAL);
    }
    if bytes.len() >= PATH_MAX {
        return Err(Errno::ENAMETOOLONG);
    }
    let mut small = [0u8; 256];
    if bytes.len() < small.len() {
        small[..bytes.len()].copy_from_slice(bytes);
        f(small.as_ptr())
    } else {
        let mut heap = Vec::with_capacity(bytes.len() + 1);
        heap.extend_from_slice(bytes);
        heap.push(0);
        f(heap.as_ptr())
    }
}

// ---------------------------------------------------------------- files

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

// ---------------------------------------------------------------- names

/// `mkdirat(dirfd, path, mode)`.
pub fn mkdirat(dirfd: Fd, path: &str, mode: u32) -> SysResult<()> {
    with_cstr(path, |p| {
        // SAFETY: `p` is NUL-terminated.
        check(unsafe { syscall3(SYS_MKDIRAT, dirfd as usize, p as usize, mode as usize) })
            .map(|_| ())
    })
}

/// `mkdir(path, mode)`.
pub fn mkdir(path: &str, mode: u32) -> SysResult<()> {
    mkdirat(AT_FDCWD, path, mode)
}

/// `unlinkat(dirfd, path, flags)` (flags: `AT_REMOVEDIR`).
pub fn unlinkat(dirfd: Fd, path: &str, flags: u32) -> SysResult<()> {
    with_cstr(path, |p| {
        // SAFETY: `p` is NUL-terminated.
        check(unsafe { syscall3(SYS_UNLINKAT, dirfd as usize, p as usize, flags as usize) })
            .map(|_| ())
    })
}

/// `unlink(path)`: removes a non-directory.
pub fn unlink(path: &str) -> SysResult<()> {
    unlinkat(AT_FDCWD, path, 0)
}

/// `rmdir(path)`: `unlinkat(AT_FDCWD, path, AT_REMOVEDIR)`.
pub fn rmdir(path: &str) -> SysResult<()> {
    unlinkat(AT_FDCWD, path, AT_REMOVEDIR)
}

/// `renameat2(olddirfd, old, newdirfd, new, flags)` (flags: `RENAME_NOREPLACE`, ...).
pub fn renameat2(olddirfd: Fd, old: &str, newdirfd: Fd, new: &str, flags: u32) -> SysResult<()> {
    with_cstr(old, |o| {
        with_cstr(new, |n| {
            // SAFETY: both strings are NUL-terminated and alive for the call.
            check(unsafe {
                syscall5(
                    SYS_RENAMEAT2,
                    olddirfd as usize,
                    o as usize,
                    newdirfd as usize,
                    n as usize,
                    flags as usize,
                )
            })
            .map(|_| ())
        })
    })
}

/// `rename(old, new)`: replaces `new` if it exists.
pub fn rename(old: &str, new: &str) -> SysResult<()> {
    renameat2(AT_FDCWD, old, AT_FDCWD, new, 0)
}

/// `link(old, new)`: a hard link.
pub fn link(old: &str, new: &str) -> SysResult<()> {
    with_cstr(old, |o| {
        with_cstr(new, |n| {
            // SAFETY: both strings are NUL-terminated and alive for the call.
            check(unsafe {
                syscall5(
                    SYS_LINKAT,
                    AT_FDCWD as usize,
                    o as usize,
                    AT_FDCWD as usize,
                    n as usize,
                    0,
                )
            })
            .map(|_| ())
        })
    })
}

/// `symlink(target, linkpath)`.
pub fn symlink(target: &str, linkpath: &str) -> SysResult<()> {
    with_cstr(target, |t| {
        with_cstr(linkpath, |l| {
            // SAFETY: both strings are NUL-terminated and alive for the call.
            check(unsafe { syscall3(SYS_SYMLINKAT, t as usize, AT_FDCWD as usize, l as usize) })
                .map(|_| ())
        })
    })
}

/// `readlink(path)`: the link's target (Linux does not NUL-terminate it; neither do we).
pub fn readlink(path: &str) -> SysResult<String> {
    with_cstr(path, |p| {
        let mut buf = alloc::vec![0u8; PATH_MAX];
        // SAFETY: `p` is NUL-terminated; `buf` is writable for its length.
        let n = check(unsafe {
            syscall4(
                SYS_READLINKAT,
                AT_FDCWD as usize,
                p as usize,
                buf.as_mut_ptr() as usize,
                buf.len(),
            )
        })?;
        buf.truncate(n);
        String::from_utf8(buf).map_err(|_| Errno::EINVAL)
    })
}

/// `fchmodat(dirfd, path, mode)` (the Linux syscall has no flags argument).
pub fn fchmodat(dirfd: Fd, path: &str, mode: u32) -> SysResult<()> {
    with_cstr(path, |p| {
        // SAFETY: `p` is NUL-terminated.
        check(unsafe { syscall3(SYS_FCHMODAT, dirfd as usize, p as usize, mode as usize) })
            .map(|_| ())
    })
}

/// `chmod(path, mode)`.
pub fn chmod(path: &str, mode: u32) -> SysResult<()> {
    fchmodat(AT_FDCWD, path, mode)
}

// ---------------------------------------------------------------- time and processes

/// `clock_gettime(clock)`.
pub fn clock_gettime(clock: u32) -> SysResult<Timespec> {
    let mut ts = Timespec::default();
    // SAFETY: `ts` is a writable 16-byte `repr(C)` timespec.
    check(unsafe {
        syscall2(
            SYS_CLOCK_GETTIME,
            clock as usize,
            &mut ts as *mut Timespec as usize,
        )
    })?;
    Ok(ts)
}

/// `getpid()`.
pub fn getpid() -> i32 {
    // SAFETY: no arguments.
    unsafe { syscall0(SYS_GETPID) as i32 }
}

/// `getppid()`.
pub fn getppid() -> i32 {
    // SAFETY: no arguments.
    unsafe { syscall0(SYS_GETPPID) as i32 }
}

/// `sched_yield()`.
pub fn sched_yield() {
    // SAFETY: no arguments.
    unsafe { syscall0(SYS_SCHED_YIELD) };
}

/// getrusage's context switches of the caller (`RUSAGE_SELF`): (voluntary, involuntary), i.e.
/// `ru_nvcsw` and `ru_nivcsw`.
pub fn context_switches_self() -> SysResult<(u64, u64)> {
    // struct rusage on riscv64: two timevals, then 14 longs; the switches are the last two.
    let mut b = [0u8; 144];
    // SAFETY: `b` is valid for writes of the 144 bytes of a struct rusage.
    check(unsafe { syscall2(SYS_GETRUSAGE, 0, b.as_mut_ptr() as usize) })?;
    let long = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or([0; 8]));
    Ok((long(128), long(136)))
}

/// `fork()` as Linux riscv64 spells it: `clone(SIGCHLD, 0, 0, 0, 0)`.
/// Returns 0 in the child and the child's pid in the parent.
pub fn fork() -> SysResult<i32> {
    // SAFETY: no new stack, no tid pointers: the child continues on a copy of our address space.
    check(unsafe { syscall5(SYS_CLONE, SIGCHLD as usize, 0, 0, 0, 0) }).map(|p| p as i32)
}

/// `execve(path, argv, envp = [])`. Returns only on failure.
pub fn execve(path: &str, argv: &[&str]) -> Errno {
    // Every string gets its own NUL-terminated heap copy; the pointer arrays end with NULL.
    let mut strings: Vec<Vec<u8>> = Vec::with_capacity(argv.len());
    for a in argv {
        if a.as_bytes().contains(&0) {
            return Errno::EINVAL;
        }
        let mut s = Vec::with_capacity(a.len() + 1);
        s.extend_from_slice(a.as_bytes());
        s.push(0);
        strings.push(s);
    }
    let mut ptrs: Vec<usize> = strings.iter().map(|s| s.as_ptr() as usize).collect();
    ptrs.push(0);
    let envp: [usize; 1] = [0];
    let res = with_cstr(path, |p| {
        // SAFETY: path, argv strings and both NULL-terminated arrays are alive for the call.
        check(unsafe {
            syscall3(
                SYS_EXECVE,
                p as usize,
                ptrs.as_ptr() as usize,
                envp.as_ptr() as usize,
            )
        })
    });
    match res {
        Err(e) => e,
        Ok(_) => Errno::EIO, // execve never returns success
    }
}

/// A `wait4` status word, decoded like the W* macros of libc.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitStatus(pub i32);

impl WaitStatus {
    /// `WIFEXITED`.
    pub fn exited(self) -> bool {
        self.0 & 0x7f == 0
    }
    /// `WEXITSTATUS`: meaningful when `exited()`.
    pub fn exit_code(self) -> i32 {
        (self.0 >> 8) & 0xff
    }
    /// `WTERMSIG` when killed by a signal.
    pub fn signal(self) -> Option<i32> {
        let sig = self.0 & 0x7f;
        (sig != 0 && sig != 0x7f).then_some(sig)
    }
}

/// `wait4(pid, &status, options, NULL)`: the pid reaped and its status.
pub fn wait4(pid: i32, options: u32) -> SysResult<(i32, WaitStatus)> {
    let mut status: i32 = 0;
    // SAFETY: `status` is a writable i32; rusage is NULL.
    let r = check(unsafe {
        syscall4(
            SYS_WAIT4,
            pid as usize,
            &mut status as *mut i32 as usize,
            options as usize,
            0,
        )
    })?;
    Ok((r as i32, WaitStatus(status)))
}

/// `waitpid(pid)`: wait for one child (or any with -1).
pub fn waitpid(pid: i32) -> SysResult<(i32, WaitStatus)> {
    wait4(pid, 0)
}

/// `exit_group(code)`: ends the process.
pub fn exit(code: i32) -> ! {
    // SAFETY: no pointer arguments; exit_group does not return.
    unsafe { syscall1(SYS_EXIT_GROUP, code as usize) };
    // SAFETY: only reached if the kernel returned from exit_group; fall back to exit.
    unsafe { syscall1(SYS_EXIT, code as usize) };
    loop {
        core::hint::spin_loop();
    }
}

/// `brk(addr)`: Linux semantics: returns the new program break, or the unchanged current one
/// when the request cannot be satisfied (there is no errno); `brk(0)` queries it.
pub fn brk(addr: usize) -> usize {
    // SAFETY: moving the break only maps or unmaps heap pages above the ones the allocator
    // handed out; `heap` never gives memory above its own recorded top.
    unsafe { syscall1(SYS_BRK, addr) as usize }
}

/// The dbfs-os kernel counters (`SYS_DBFS_COUNTERS`); `ENOSYS` on Linux.
pub fn counters() -> SysResult<KernelCounters> {
    let mut words = [0u64; KernelCounters::WORDS];
    // SAFETY: `words` is a writable array of 9 u64, the size the kernel fills.
    check(unsafe { syscall1(SYS_DBFS_COUNTERS, words.as_mut_ptr() as usize) })?;
    Ok(KernelCounters::from_words(&words))
}

/// Write back every file system and empty the kernel's caches (`SYS_DBFS_DROP_CACHES`, a
/// dbfs-os extension; `ENOSYS` on Linux).
pub fn drop_caches() -> SysResult<()> {
    // SAFETY: no pointer arguments.
    check(unsafe { syscall0(SYS_DBFS_DROP_CACHES) }).map(|_| ())
}

/// Power the machine off (`reboot(MAGIC1, MAGIC2, POWER_OFF)`); needs privilege on Linux.
pub fn power_off() -> SysResult<()> {
    // SAFETY: no pointer arguments.
    check(unsafe {
        syscall4(
            SYS_REBOOT,
            LINUX_REBOOT_MAGIC1,
            LINUX_REBOOT_MAGIC2,
            LINUX_REBOOT_CMD_POWER_OFF,
            0,
        )
    })
    .map(|_| ())
}

// ---------------------------------------------------------------- memory

/// An anonymous private mapping (`mmap(NULL, len, RW, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0)`),
/// unmapped on drop. The memory starts zero-filled.
pub struct AnonMap {
    addr: usize,
    len: usize,
}

impl AnonMap {
    /// Map `len` bytes (rounded up to pages by the kernel).
    pub fn new(len: usize) -> SysResult<AnonMap> {
        Self::with_flags(len, MAP_PRIVATE | MAP_ANONYMOUS)
    }

    /// Map `len` bytes shared with the children this process forks afterwards
    /// (`MAP_SHARED | MAP_ANONYMOUS`).
    pub fn new_shared(len: usize) -> SysResult<AnonMap> {
        Self::with_flags(len, MAP_SHARED | MAP_ANONYMOUS)
    }

    fn with_flags(len: usize, flags: u32) -> SysResult<AnonMap> {
        // SAFETY: a fresh anonymous mapping chosen by the kernel aliases no memory of ours.
        let addr = check(unsafe {
            syscall6(
                SYS_MMAP,
                0,
                len,
                (PROT_READ | PROT_WRITE) as usize,
                flags as usize,
                usize::MAX, /* fd -1 */
                0,
            )
        })?;
        Ok(AnonMap { addr, len })
    }

    /// The mapping's address.
    pub fn addr(&self) -> usize {
        self.addr
    }

    /// The mapping as a byte slice.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: [addr, addr+len) is mapped read-write for the life of `self`, is not aliased
        // (only reachable through `self`), and the borrow ties the slice to `self`.
        unsafe { core::slice::from_raw_parts_mut(self.addr as *mut u8, self.len) }
    }

    /// Unmap the trailing pages from `keep` bytes on (`keep` page-aligned), shrinking the map.
    pub fn unmap_tail(&mut self, keep: usize) -> SysResult<()> {
        if !keep.is_multiple_of(crate::PAGE_SIZE) || keep > self.len {
            return Err(Errno::EINVAL);
        }
        // SAFETY: the unmapped range belongs to this mapping, and `len` shrinks so no slice
        // can reach it afterwards.
        check(unsafe { syscall2(SYS_MUNMAP, self.addr + keep, self.len - keep) })?;
        self.len = keep;
        Ok(())
    }
}

impl Drop for AnonMap {
    fn drop(&mut self) {
        if self.len > 0 {
            // SAFETY: the mapping is ours and no borrow of it outlives `self`.
            unsafe { syscall2(SYS_MUNMAP, self.addr, self.len) };
        }
    }
}

// ---------------------------------------------------------------- File

/// An open file descriptor, closed on drop.
#[derive(Debug)]
pub struct File {
    fd: Fd,
}

impl File {
    /// `open(path, flags, mode)`.
    pub fn open(path: &str, flags: u32, mode: u32) -> SysResult<File> {
        open(path, flags | O_CLOEXEC, mode).map(|fd| File { fd })
    }
    /// Open read-only.
    pub fn open_read(path: &str) -> SysResult<File> {
        File::open(path, O_RDONLY, 0)
    }
    /// Create or truncate for writing (`O_WRONLY|O_CREAT|O_TRUNC`, mode 0644).
    pub fn create(path: &str) -> SysResult<File> {
        File::open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    }
    /// The raw descriptor (still owned by `self`).
    pub fn fd(&self) -> Fd {
        self.fd
    }
    /// Give up ownership: the descriptor is not closed on drop.
    pub fn into_raw(self) -> Fd {
        let fd = self.fd;
        core::mem::forget(self);
        fd
    }
    /// Close now, reporting the error that drop would hide.
    pub fn close(self) -> SysResult<()> {
        close(self.into_raw())
    }
    pub fn read(&self, buf: &mut [u8]) -> SysResult<usize> {
        read(self.fd, buf)
    }
    pub fn write(&self, buf: &[u8]) -> SysResult<usize> {
        write(self.fd, buf)
    }
    pub fn write_all(&self, buf: &[u8]) -> SysResult<()> {
        write_all(self.fd, buf)
    }
    pub fn read_full(&self, buf: &mut [u8]) -> SysResult<usize> {
        read_full(self.fd, buf)
    }
    pub fn pread(&self, buf: &mut [u8], offset: u64) -> SysResult<usize> {
        pread(self.fd, buf, offset)
    }
    pub fn pwrite(&self, buf: &[u8], offset: u64) -> SysResult<usize> {
        pwrite(self.fd, buf, offset)
    }
    pub fn pread_full(&self, buf: &mut [u8], offset: u64) -> SysResult<usize> {
        pread_full(self.fd, buf, offset)
    }
    pub fn pwrite_all(&self, buf: &[u8], offset: u64) -> SysResult<()> {
        pwrite_all(self.fd, buf, offset)
    }
    pub fn seek(&self, offset: i64, whence: u32) -> SysResult<u64> {
        lseek(self.fd, offset, whence)
    }
    pub fn stat(&self) -> SysResult<Stat> {
        fstat(self.fd)
    }
    pub fn sync(&self) -> SysResult<()> {
        fsync(self.fd)
    }
    pub fn set_len(&self, len: u64) -> SysResult<()> {
        ftruncate(self.fd, len)
    }
    /// Read everything from the current offset to EOF.
    pub fn read_to_end(&self) -> SysResult<Vec<u8>> {
        let mut out = Vec::new();
        let mut chunk = [0u8; 512];
        loop {
            match self.read(&mut chunk)? {
                0 => return Ok(out),
                n => out.extend_from_slice(&chunk[..n]),
            }
        }
    }
}

impl Drop for File {
    fn drop(&mut self) {
        let _ = close(self.fd);
    }
}

// ---------------------------------------------------------------- directories

/// One `linux_dirent64` record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirEntry {
    pub ino: u64,
    /// `d_off`: the cookie to resume after this entry (opaque; only its use through the file
    /// offset is defined).
    pub off: i64,
    pub reclen: u16,
    /// `DT_REG`, `DT_DIR`, ... or `DT_UNKNOWN`.
    pub kind: u8,
    pub name: String,
}

/// Iterator over a directory's entries via `getdents64` (including `.` and `..`).
pub struct ReadDir {
    file: File,
    buf: Vec<u8>,
    pos: usize,
    len: usize,
    done: bool,
}

/// Open `path` as a directory and iterate its entries with a `buf_size`-byte getdents buffer.
pub fn read_dir_with(path: &str, buf_size: usize) -> SysResult<ReadDir> {
    let file = File::open(path, O_RDONLY | O_DIRECTORY, 0)?;
    Ok(ReadDir {
        file,
        buf: alloc::vec![0u8; buf_size],
        pos: 0,
        len: 0,
        done: false,
    })
}

/// Open `path` as a directory and iterate its entries.
pub fn read_dir(path: &str) -> SysResult<ReadDir> {
    read_dir_with(path, 4096)
}

impl Iterator for ReadDir {
    type Item = SysResult<DirEntry>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.pos >= self.len {
            if self.done {
                return None;
            }
            match getdents64(self.file.fd(), &mut self.buf) {
                Ok(0) => {
                    self.done = true;
                    return None;
                }
                Ok(n) => {
                    self.len = n;
                    self.pos = 0;
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
        let entry = parse_dirent(&self.buf[self.pos..self.len]);
        match &entry {
            Ok(e) => self.pos += e.reclen as usize,
            Err(_) => {
                self.done = true;
                self.pos = self.len;
            }
        }
        Some(entry)
    }
}

/// Decode the first `linux_dirent64` record of `b`; a malformed record is `EIO`.
pub fn parse_dirent(b: &[u8]) -> SysResult<DirEntry> {
    let hdr = abi::stat::DIRENT64_HEADER;
    if b.len() < hdr {
        return Err(Errno::EIO);
    }
    let ino = u64::from_le_bytes(b[0..8].try_into().map_err(|_| Errno::EIO)?);
    let off = i64::from_le_bytes(b[8..16].try_into().map_err(|_| Errno::EIO)?);
    let reclen = u16::from_le_bytes([b[16], b[17]]);
    let kind = b[18];
    if (reclen as usize) < hdr + 1 || reclen as usize > b.len() {
        return Err(Errno::EIO);
    }
    let name_bytes = &b[hdr..reclen as usize];
    let end = name_bytes.iter().position(|&c| c == 0).ok_or(Errno::EIO)?;
    let name = String::from_utf8(name_bytes[..end].to_vec()).map_err(|_| Errno::EIO)?;
    Ok(DirEntry {
        ino,
        off,
        reclen,
        kind,
        name,
    })
}

/// Remove `path` and everything below it (best effort on races; errors other than ENOENT
/// are returned).
pub fn remove_tree(path: &str) -> SysResult<()> {
    let st = match lstat(path) {
        Ok(st) => st,
        Err(Errno::ENOENT) => return Ok(()),
        Err(e) => return Err(e),
    };
    if st.st_mode & abi::stat::S_IFMT != abi::stat::S_IFDIR {
        return unlink(path);
    }
    // Collect first: removing while iterating is allowed on Linux but needlessly subtle.
    let mut names = Vec::new();
    for e in read_dir(path)? {
        let e = e?;
        if e.name != "." && e.name != ".." {
            names.push(e.name);
        }
    }
    for n in names {
        remove_tree(&crate::path_join(path, &n))?;
    }
    rmdir(path)
}

// ---------------------------------------------------------------- extended attributes

/// `getxattr` / `lgetxattr` (by `nr`) into `buf`; an empty `buf` asks for the size.
fn path_getxattr(nr: usize, path: &str, name: &str, buf: &mut [u8]) -> SysResult<usize> {
    with_cstr(path, |p| {
        with_cstr(name, |n| {
            // SAFETY: both strings are NUL-terminated and alive; `buf` is writable for its length.
            check(unsafe {
                syscall4(
                    nr,
                    p as usize,
                    n as usize,
                    buf.as_mut_ptr() as usize,
                    buf.len(),
                )
            })
        })
    })
}

/// `getxattr(path, name, buf, buf.len())`, following a final symlink: the value's length.
/// An empty `buf` returns the size needed; a short one is `ERANGE`.
pub fn getxattr_into(path: &str, name: &str, buf: &mut [u8]) -> SysResult<usize> {
    path_getxattr(SYS_GETXATTR, path, name, buf)
}

/// `lgetxattr(path, name, buf, buf.len())`: as [`getxattr_into`] on the link itself.
pub fn lgetxattr_into(path: &str, name: &str, buf: &mut [u8]) -> SysResult<usize> {
    path_getxattr(SYS_LGETXATTR, path, name, buf)
}

/// `fgetxattr(fd, name, buf, buf.len())`.
pub fn fgetxattr_into(fd: Fd, name: &str, buf: &mut [u8]) -> SysResult<usize> {
    with_cstr(name, |n| {
        // SAFETY: `n` is NUL-terminated; `buf` is writable for its length.
        check(unsafe {
            syscall4(
                SYS_FGETXATTR,
                fd as usize,
                n as usize,
                buf.as_mut_ptr() as usize,
                buf.len(),
            )
        })
    })
}

/// Ask for the size, then read; retried (a few times) if the value grew in between.
fn read_sized(mut get: impl FnMut(&mut [u8]) -> SysResult<usize>) -> SysResult<Vec<u8>> {
    for _ in 0..8 {
        let n = get(&mut [])?;
        let mut v = alloc::vec![0u8; n];
        match get(&mut v) {
            Ok(got) => {
                v.truncate(got);
                return Ok(v);
            }
            Err(Errno::ERANGE) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(Errno::ERANGE)
}

/// The value of attribute `name` of `path` (following a final symlink).
pub fn getxattr(path: &str, name: &str) -> SysResult<Vec<u8>> {
    read_sized(|b| getxattr_into(path, name, b))
}

/// The value of attribute `name` of `path` itself (not following a final symlink).
pub fn lgetxattr(path: &str, name: &str) -> SysResult<Vec<u8>> {
    read_sized(|b| lgetxattr_into(path, name, b))
}

/// `setxattr` / `lsetxattr` by `nr`.
fn path_setxattr(nr: usize, path: &str, name: &str, value: &[u8], flags: u32) -> SysResult<()> {
    with_cstr(path, |p| {
        with_cstr(name, |n| {
            // SAFETY: both strings are NUL-terminated and alive; `value` is readable.
            check(unsafe {
                syscall5(
                    nr,
                    p as usize,
                    n as usize,
                    value.as_ptr() as usize,
                    value.len(),
                    flags as usize,
                )
            })
            .map(|_| ())
        })
    })
}

/// `setxattr(path, name, value, flags)` (`XATTR_CREATE`, `XATTR_REPLACE` or 0), following a
/// final symlink.
pub fn setxattr(path: &str, name: &str, value: &[u8], flags: u32) -> SysResult<()> {
    path_setxattr(SYS_SETXATTR, path, name, value, flags)
}

/// `lsetxattr(path, name, value, flags)`: on the link itself.
pub fn lsetxattr(path: &str, name: &str, value: &[u8], flags: u32) -> SysResult<()> {
    path_setxattr(SYS_LSETXATTR, path, name, value, flags)
}

/// `fsetxattr(fd, name, value, flags)`.
pub fn fsetxattr(fd: Fd, name: &str, value: &[u8], flags: u32) -> SysResult<()> {
    with_cstr(name, |n| {
        // SAFETY: `n` is NUL-terminated; `value` is readable for its length.
        check(unsafe {
            syscall5(
                SYS_FSETXATTR,
                fd as usize,
                n as usize,
                value.as_ptr() as usize,
                value.len(),
                flags as usize,
            )
        })
        .map(|_| ())
    })
}

/// `listxattr` / `llistxattr` by `nr` into `buf` (NUL-separated names; empty: the size).
fn path_listxattr(nr: usize, path: &str, buf: &mut [u8]) -> SysResult<usize> {
    with_cstr(path, |p| {
        // SAFETY: `p` is NUL-terminated; `buf` is writable for its length.
        check(unsafe { syscall3(nr, p as usize, buf.as_mut_ptr() as usize, buf.len()) })
    })
}

/// `listxattr(path, buf, buf.len())`: raw NUL-terminated names, following a final symlink.
pub fn listxattr_into(path: &str, buf: &mut [u8]) -> SysResult<usize> {
    path_listxattr(SYS_LISTXATTR, path, buf)
}

/// `llistxattr(path, buf, buf.len())`: as [`listxattr_into`] on the link itself.
pub fn llistxattr_into(path: &str, buf: &mut [u8]) -> SysResult<usize> {
    path_listxattr(SYS_LLISTXATTR, path, buf)
}

/// `flistxattr(fd, buf, buf.len())`.
pub fn flistxattr_into(fd: Fd, buf: &mut [u8]) -> SysResult<usize> {
    // SAFETY: `buf` is writable for its length.
    check(unsafe {
        syscall3(
            SYS_FLISTXATTR,
            fd as usize,
            buf.as_mut_ptr() as usize,
            buf.len(),
        )
    })
}

fn split_names(raw: Vec<u8>) -> SysResult<Vec<String>> {
    if raw.last().is_some_and(|&b| b != 0) {
        return Err(Errno::EIO);
    }
    raw.split(|&b| b == 0)
        .filter(|n| !n.is_empty())
        .map(|n| String::from_utf8(n.to_vec()).map_err(|_| Errno::EIO))
        .collect()
}

/// The attribute names of `path` (following a final symlink).
pub fn listxattr(path: &str) -> SysResult<Vec<String>> {
    split_names(read_sized(|b| listxattr_into(path, b))?)
}

/// The attribute names of `path` itself (not following a final symlink).
pub fn llistxattr(path: &str) -> SysResult<Vec<String>> {
    split_names(read_sized(|b| llistxattr_into(path, b))?)
}

/// `removexattr` / `lremovexattr` by `nr`.
fn path_removexattr(nr: usize, path: &str, name: &str) -> SysResult<()> {
    with_cstr(path, |p| {
        with_cstr(name, |n| {
            // SAFETY: both strings are NUL-terminated and alive for the call.
            check(unsafe { syscall2(nr, p as usize, n as usize) }).map(|_| ())
        })
    })
}

/// `removexattr(path, name)`, following a final symlink.
pub fn removexattr(path: &str, name: &str) -> SysResult<()> {
    path_removexattr(SYS_REMOVEXATTR, path, name)
}

/// `lremovexattr(path, name)`: on the link itself.
pub fn lremovexattr(path: &str, name: &str) -> SysResult<()> {
    path_removexattr(SYS_LREMOVEXATTR, path, name)
}

/// `fremovexattr(fd, name)`.
pub fn fremovexattr(fd: Fd, name: &str) -> SysResult<()> {
    with_cstr(name, |n| {
        // SAFETY: `n` is NUL-terminated.
        check(unsafe { syscall2(SYS_FREMOVEXATTR, fd as usize, n as usize) }).map(|_| ())
    })
}

/// `umask(mask)`: sets the file-creation mask, returns the previous one (cannot fail).
pub fn umask(mask: u32) -> u32 {
    // SAFETY: no pointer arguments.
    unsafe { syscall1(SYS_UMASK, mask as usize) as u32 }
}

/// `sync()`: write back every file system (Linux's returns nothing; ours cannot fail either).
pub fn sync() -> SysResult<()> {
    // SAFETY: no arguments.
    check(unsafe { syscall0(SYS_SYNC) }).map(|_| ())
}

// ---------------------------------------------------------------- file mappings

/// A mapping made by [`mmap`] (file or anonymous), unmapped on drop. Its bytes are reached
/// one at a time with volatile accesses: another process, or read(2)/write(2) of the mapped
/// file, may change them behind the compiler's back, and a touch past the end of the file
/// must really happen (SIGBUS).
pub struct Mapping {
    addr: usize,
    len: usize,
}

/// `mmap(addr, len, prot, flags, fd, offset)`: the new mapping.
pub fn mmap(
    addr: usize,
    len: usize,
    prot: u32,
    flags: u32,
    fd: Fd,
    offset: u64,
) -> SysResult<Mapping> {
    // SAFETY: a mapping placed by the kernel aliases nothing of ours; with MAP_FIXED the
    // caller names a range it owns (the tests only remap their own mappings).
    let addr = check(unsafe {
        syscall6(
            SYS_MMAP,
            addr,
            len,
            prot as usize,
            flags as usize,
            fd as usize,
            offset as usize,
        )
    })?;
    Ok(Mapping { addr, len })
}

/// `munmap(addr, len)` of a range no Rust reference points into.
pub fn munmap(addr: usize, len: usize) -> SysResult<()> {
    // SAFETY: the callers unmap ranges they reach only through `Mapping`'s volatile accesses.
    check(unsafe { syscall2(SYS_MUNMAP, addr, len) }).map(|_| ())
}

/// `msync(addr, len, flags)`.
pub fn msync(addr: usize, len: usize, flags: u32) -> SysResult<()> {
    // SAFETY: msync changes no memory of ours.
    check(unsafe { syscall3(SYS_MSYNC, addr, len, flags as usize) }).map(|_| ())
}

/// `madvise(addr, len, advice)`.
pub fn madvise(addr: usize, len: usize, advice: u32) -> SysResult<()> {
    // SAFETY: the advice that drops pages is used only on `Mapping`s (volatile accesses).
    check(unsafe { syscall3(SYS_MADVISE, addr, len, advice as usize) }).map(|_| ())
}

impl Mapping {
    /// The mapping's address.
    pub fn addr(&self) -> usize {
        self.addr
    }
    /// Its length as asked for.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether it is empty (never: mmap refuses length 0).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Byte `i` (panics past `len`; faults as the kernel decides inside it).
    pub fn get(&self, i: usize) -> u8 {
        assert!(i < self.len);
        // SAFETY: inside the mapping, which lives as long as `self`; volatile because the
        // kernel or another process may change it.
        unsafe { core::ptr::read_volatile((self.addr + i) as *const u8) }
    }
    /// Store `v` at byte `i`.
    pub fn set(&self, i: usize, v: u8) {
        assert!(i < self.len);
        // SAFETY: as in `get`; no Rust reference points into the mapping.
        unsafe { core::ptr::write_volatile((self.addr + i) as *mut u8, v) }
    }
    /// Bytes [from, from + n) copied out.
    pub fn read(&self, from: usize, n: usize) -> Vec<u8> {
        (from..from + n).map(|i| self.get(i)).collect()
    }
    /// Store `data` from byte `from` on.
    pub fn write(&self, from: usize, data: &[u8]) {
        for (k, &b) in data.iter().enumerate() {
            self.set(from + k, b);
        }
    }
    /// The whole mapping as a buffer for a system call to write into (read(2) into it).
    pub fn read_into(&self, fd: Fd, offset: u64) -> SysResult<usize> {
        // SAFETY: [addr, addr + len) is this mapping; the kernel writes it, no Rust
        // reference exists.
        check(unsafe {
            syscall4(
                SYS_PREAD64,
                fd as usize,
                self.addr,
                self.len,
                offset as usize,
            )
        })
    }
    /// Give the range up without unmapping it (the test unmaps it itself).
    pub fn forget(self) {
        core::mem::forget(self);
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        let _ = munmap(self.addr, self.len);
    }
}

impl Mapping {
    /// The wrapping sum of the little-endian u64 words of bytes [from, from + n) (`from` and
    /// `n` multiples of 8): touches every word once, for the benchmarks.
    pub fn sum_words(&self, from: usize, n: usize) -> u64 {
        assert!(from.is_multiple_of(8) && n.is_multiple_of(8) && from + n <= self.len);
        let mut sum = 0u64;
        let mut at = self.addr + from;
        while at < self.addr + from + n {
            // SAFETY: an aligned word inside the mapping, which lives as long as `self`.
            sum = sum.wrapping_add(unsafe { core::ptr::read_volatile(at as *const u64) });
            at += 8;
        }
        sum
    }
}

/// `pipe2(fds, flags)`: (read end, write end).
pub fn pipe2(flags: u32) -> SysResult<(Fd, Fd)> {
    let mut fds = [0i32; 2];
    // SAFETY: `fds` is a writable array of two ints, what pipe2 fills.
    check(unsafe { syscall2(SYS_PIPE2, fds.as_mut_ptr() as usize, flags as usize) })?;
    Ok((fds[0], fds[1]))
}
