//! Memory mappings: [`AnonMap`] (anonymous, unmapped on drop) and [`Mapping`] (what [`mmap`]
//! returns, reached with volatile accesses), with munmap, msync and madvise.

use alloc::vec::Vec;

use abi::fcntl::*;
use abi::syscall::*;
use abi::Errno;

use crate::raw::*;

use super::marshal::{check, Fd, SysResult};

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

/// A mapping made by [`mmap`] (file or anonymous), unmapped on drop. Its bytes are reached
/// one at a time with volatile accesses: another process, or read(2)/write(2) of the mapped
/// file, may change them behind the compiler's back, and a touch past the end of the file
/// must really happen (SIGBUS).
#[derive(Debug)]
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

/// `mincore(addr, len, vec)`: `vec` gets one byte per page (raw address: the kernel checks it).
pub fn mincore(addr: usize, len: usize, vec: usize) -> SysResult<()> {
    // SAFETY: mincore only writes `vec`, which the kernel checks (EFAULT).
    check(unsafe { syscall3(SYS_MINCORE, addr, len, vec) }).map(|_| ())
}
