//! Deliberately invalid syscalls, for the tests that check the kernel rejects bad user input.
//!
//! Each function passes one kind of bad argument and returns the kernel's answer. They are safe
//! to call because the bad addresses are ones this process never uses: NULL (page 0 is never
//! mapped: the program is linked at 4 GiB), an address inside the kernel's image (0x8020_0000,
//! below our image and outside any mapping Linux or dbfs-os gives a process), and the unmapped
//! page of a private mapping we unmap ourselves. If a broken kernel did write there, nothing this
//! program relies on would be corrupted.

use abi::fcntl::{AT_FDCWD, PROT_READ};
use abi::syscall::*;
use abi::Errno;

use crate::raw::*;
use crate::sys::{AnonMap, Fd, SysResult};
use crate::PAGE_SIZE;

/// An address a user buffer must never be allowed to name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BadAddr {
    /// Address 0.
    Null,
    /// 0x8020_0000: where OpenSBI loads the kernel on QEMU virt.
    Kernel,
}

impl BadAddr {
    pub fn addr(self) -> usize {
        match self {
            BadAddr::Null => 0,
            BadAddr::Kernel => 0x8020_0000,
        }
    }
}

/// `read(fd, bad, len)`.
pub fn read_to(fd: Fd, bad: BadAddr, len: usize) -> SysResult<usize> {
    // SAFETY: `bad` names memory this process never uses (module docs).
    Errno::from_ret(unsafe { syscall3(SYS_READ, fd as usize, bad.addr(), len) })
}

/// `write(fd, bad, len)`.
pub fn write_from(fd: Fd, bad: BadAddr, len: usize) -> SysResult<usize> {
    // SAFETY: the kernel only reads from the buffer of a write.
    Errno::from_ret(unsafe { syscall3(SYS_WRITE, fd as usize, bad.addr(), len) })
}

/// `fstat(fd, bad)`.
pub fn fstat_to(fd: Fd, bad: BadAddr) -> SysResult<usize> {
    // SAFETY: `bad` names memory this process never uses (module docs).
    Errno::from_ret(unsafe { syscall2(SYS_FSTAT, fd as usize, bad.addr()) })
}

/// `openat(AT_FDCWD, bad, flags, 0)`.
pub fn openat_path(bad: BadAddr, flags: u32) -> SysResult<usize> {
    // SAFETY: the kernel only reads the path.
    Errno::from_ret(unsafe {
        syscall4(SYS_OPENAT, AT_FDCWD as usize, bad.addr(), flags as usize, 0)
    })
}

/// A buffer of `total` bytes whose first `mapped` bytes (at most one page) are the end of a
/// mapped page and whose rest lies in the following, unmapped page. Calls `f(addr, total)`.
fn with_half_mapped(
    mapped: usize,
    total: usize,
    f: impl FnOnce(usize, usize) -> isize,
) -> SysResult<usize> {
    if mapped > PAGE_SIZE || total > PAGE_SIZE + mapped {
        return Err(Errno::EINVAL);
    }
    let mut map = AnonMap::new(2 * PAGE_SIZE)?;
    map.unmap_tail(PAGE_SIZE)?;
    let start = map.addr() + PAGE_SIZE - mapped;
    let ret = f(start, total);
    drop(map);
    Errno::from_ret(ret)
}

/// `read(fd, buf, total)` where only the first `mapped` bytes of `buf` are mapped.
/// Linux answers `EFAULT`, or a short count when it copied some bytes before faulting.
pub fn read_half_mapped(fd: Fd, mapped: usize, total: usize) -> SysResult<usize> {
    with_half_mapped(mapped, total, |addr, len| {
        // SAFETY: [addr, addr+mapped) is our private mapping (alive during the call) and the rest
        // is unmapped; nothing else aliases either.
        unsafe { syscall3(SYS_READ, fd as usize, addr, len) }
    })
}

/// `write(fd, buf, total)` where only the first `mapped` bytes of `buf` are mapped.
pub fn write_half_mapped(fd: Fd, mapped: usize, total: usize) -> SysResult<usize> {
    with_half_mapped(mapped, total, |addr, len| {
        // SAFETY: the kernel only reads the buffer; the mapped part is ours and alive.
        unsafe { syscall3(SYS_WRITE, fd as usize, addr, len) }
    })
}

/// `read(fd, buf, len)` then `write(fd2, buf, len)` through one page of a private mapping
/// whose protection is first set to `prot` (`mprotect`); answers (read, write). The page was
/// written before the change, so a write that may read it sees `fill`.
pub fn rw_through_protected_page(
    fd: Fd,
    fd2: Fd,
    prot: u32,
    len: usize,
    fill: u8,
) -> SysResult<(SysResult<usize>, SysResult<usize>)> {
    let mut map = AnonMap::new(PAGE_SIZE)?;
    map.as_mut_slice().fill(fill);
    let addr = map.addr();
    // SAFETY: the page is our private mapping, alive until `map` drops; no slice of it is
    // live while the kernel reads or writes it.
    Errno::from_ret(unsafe { syscall3(SYS_MPROTECT, addr, PAGE_SIZE, prot as usize) })?;
    let len = len.min(PAGE_SIZE);
    // SAFETY: as above.
    let r = Errno::from_ret(unsafe { syscall3(SYS_READ, fd as usize, addr, len) });
    // SAFETY: as above; the kernel only reads the buffer.
    let w = Errno::from_ret(unsafe { syscall3(SYS_WRITE, fd2 as usize, addr, len) });
    // Make it writable again so dropping (munmap) and any later use are plain.
    // SAFETY: as above.
    unsafe { syscall3(SYS_MPROTECT, addr, PAGE_SIZE, 3) };
    Ok((r, w))
}

/// `pread`s of `len` bytes at offset 0 of `fd` into the start of one anonymous page, the same
/// buffer every time, around changes to its mapping: after a first read, after
/// `mprotect(PROT_READ)`, after `mprotect` back to read-write, after `munmap`. A kernel that
/// remembers a buffer's translation between calls must forget it at each change; Linux
/// answers (Ok(len), EFAULT, Ok(len), EFAULT).
pub fn pread_around_mapping_changes(fd: Fd, len: usize) -> SysResult<[SysResult<usize>; 4]> {
    let map = AnonMap::new(PAGE_SIZE)?;
    let addr = map.addr();
    let len = len.min(PAGE_SIZE);
    let pread = || {
        // SAFETY: the page is our private mapping until it is unmapped below (then the call
        // must fail); no slice of it is live while the kernel writes it.
        Errno::from_ret(unsafe { syscall4(SYS_PREAD64, fd as usize, addr, len, 0) })
    };
    let first = pread();
    let _ = pread();
    // SAFETY: a protection change of our own page; no slice of it is live.
    Errno::from_ret(unsafe { syscall3(SYS_MPROTECT, addr, PAGE_SIZE, PROT_READ as usize) })?;
    let read_only = pread();
    // SAFETY: as above (back to read-write).
    Errno::from_ret(unsafe { syscall3(SYS_MPROTECT, addr, PAGE_SIZE, 3) })?;
    let writable = pread();
    // Unmapped by hand (the guard must not unmap a range that may be reused meanwhile).
    core::mem::forget(map);
    // SAFETY: our own page, which nothing refers to any more.
    Errno::from_ret(unsafe { syscall2(SYS_MUNMAP, addr, PAGE_SIZE) })?;
    let unmapped = pread();
    Ok([first, read_only, writable, unmapped])
}

/// Syscall number `n` with all arguments 0 (for numbers the kernel must not implement).
pub fn unknown_syscall(n: usize) -> SysResult<usize> {
    // SAFETY: all-zero arguments; `n` is a number no kernel we run on implements.
    Errno::from_ret(unsafe { syscall6(n, 0, 0, 0, 0, 0, 0) })
}

/// Grow the program break by `len` bytes (a multiple of the page size), write and read back
/// every page of the new memory, then move the break back. Checks Linux's `brk` contract:
/// `brk(0)` answers the break, growing answers exactly the new break, a request below the heap
/// start answers the unchanged break. Returns the first broken expectation.
///
/// Does not allocate between growing and shrinking, so the heap never hands out the new range.
pub fn brk_grow_and_use(len: usize) -> Result<(), &'static str> {
    use crate::sys::brk;
    if len == 0 || !len.is_multiple_of(PAGE_SIZE) {
        return Err("length must be a non-zero multiple of the page size");
    }
    let cur = brk(0);
    if cur == 0 || brk(0) != cur {
        return Err("brk(0) did not answer a stable break");
    }
    if brk(1) != cur {
        return Err("brk(1) (below the heap start) changed or failed to answer the break");
    }
    let new = brk(cur + len);
    if new != cur + len {
        return Err("brk(cur + len) did not answer the new break");
    }
    if brk(0) != new {
        return Err("brk(0) after growing did not answer the new break");
    }
    let mut ok = true;
    for page in (cur..new).step_by(PAGE_SIZE) {
        let p = page as *mut u64;
        // SAFETY: [cur, new) was just added to the break: mapped read-write and owned by no one
        // (the allocator's memory ends at or below `cur`, and nothing allocates until we shrink).
        unsafe {
            if p.read_volatile() != 0 {
                ok = false;
            }
            p.write_volatile(page as u64 ^ 0x5a5a);
            p.add(PAGE_SIZE / 8 - 1).write_volatile(!(page as u64));
        }
    }
    for page in (cur..new).step_by(PAGE_SIZE) {
        let p = page as *const u64;
        // SAFETY: as above, the range is still ours and mapped.
        let (a, b) = unsafe { (p.read_volatile(), p.add(PAGE_SIZE / 8 - 1).read_volatile()) };
        if a != page as u64 ^ 0x5a5a || b != !(page as u64) {
            ok = false;
        }
    }
    if brk(cur) != cur {
        return Err("shrinking back to the old break did not answer it");
    }
    if ok {
        Ok(())
    } else {
        Err("new heap memory was not zero-filled or did not keep what was written")
    }
}
