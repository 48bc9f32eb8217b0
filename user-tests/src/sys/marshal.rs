//! What every wrapper shares: the descriptor and result types, the one conversion from a raw
//! return value to `Result<usize, Errno>`, and the NUL-terminated copy of a path argument.

use alloc::vec::Vec;

use abi::fcntl::PATH_MAX;
use abi::Errno;

/// A file descriptor as the kernel sees it.
pub type Fd = i32;
/// The result of every wrapper.
pub type SysResult<T> = Result<T, Errno>;

pub(super) fn check(ret: isize) -> SysResult<usize> {
    Errno::from_ret(ret)
}

/// Call `f` with a NUL-terminated copy of `path` (on the stack when short, else on the heap).
/// A path with an interior NUL is `EINVAL`; one of `PATH_MAX` bytes or more is `ENAMETOOLONG`
/// (what Linux answers for either).
pub(super) fn with_cstr<T>(path: &str, f: impl FnOnce(*const u8) -> SysResult<T>) -> SysResult<T> {
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
