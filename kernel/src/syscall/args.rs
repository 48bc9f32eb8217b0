//! What every handler of the system-call layer shares: the result type the dispatcher turns
//! into `-errno`, and the checked copies of user memory (through `mm::uaccess`, in the
//! current process's address space).

use abi::Errno;

/// A handler's result: the return value, or the errno the dispatcher returns negated.
pub type SysResult = Result<usize, Errno>;

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
