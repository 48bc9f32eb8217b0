//! What every handler of the system-call layer shares: the result type the dispatcher turns
//! into `-errno`, and the checked copies of user memory (through `mm::uaccess`, in the
//! current process's address space).

use abi::Errno;

/// A handler's result: the return value, or the errno the dispatcher returns negated.
pub type SysResult = Result<usize, Errno>;

/// A handler's result as the value a0 returns to user mode: the count, or `-errno`.
#[inline]
pub fn to_return(r: SysResult) -> isize {
    match r {
        Ok(v) => v as isize,
        Err(e) => -(e.0 as isize),
    }
}

/// Run `f` on the current process's address space.
pub(super) fn with_space<R>(f: impl FnOnce(&mut crate::mm::addr_space::AddrSpace) -> R) -> R {
    crate::task::with_current(|p| f(&mut p.space))
}

pub(super) fn copy_out(va: usize, data: &[u8]) -> Result<(), Errno> {
    with_space(|s| crate::mm::uaccess::copy_out(s, va, data))
}

pub(super) fn copy_in(va: usize, buf: &mut [u8]) -> Result<(), Errno> {
    with_space(|s| crate::mm::uaccess::copy_in(s, va, buf))
}

pub(super) fn read_path(va: usize) -> Result<alloc::string::String, Errno> {
    with_space(|s| crate::mm::uaccess::read_cstr(s, va, abi::fcntl::PATH_MAX))
}

/// The iovec array, checked as Linux's `import_iovec` does before any I/O: at most `IOV_MAX`
/// entries, no negative length (EINVAL), every buffer inside user space (EFAULT); lengths past
/// `MAX_RW` in total are cut.
pub(super) fn iovecs(iov: usize, count: usize) -> Result<alloc::vec::Vec<(usize, usize)>, Errno> {
    if count > 1024 {
        return Err(Errno::EINVAL);
    }
    let mut raw = alloc::vec![0u8; count * 16];
    copy_in(iov, &mut raw)?;
    let mut out = alloc::vec::Vec::with_capacity(count);
    let mut total = 0usize;
    for c in raw.chunks_exact(16) {
        let base = usize::from_le_bytes(c[..8].try_into().unwrap_or_default());
        let len = usize::from_le_bytes(c[8..].try_into().unwrap_or_default());
        if len > isize::MAX as usize {
            return Err(Errno::EINVAL);
        }
        if !crate::mm::uaccess::range_ok(base, len) {
            return Err(Errno::EFAULT);
        }
        let len = len.min(super::fd::MAX_RW - total);
        total += len;
        out.push((base, len));
    }
    Ok(out)
}
