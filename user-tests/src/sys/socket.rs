//! Unix-domain socket calls: socket, bind, getsockname, getpeername.

use alloc::vec::Vec;

use abi::syscall::*;

use crate::raw::*;

use super::marshal::{check, Fd, SysResult};

/// `AF_UNIX`.
pub const AF_UNIX: u16 = 1;

/// `socket(domain, type, protocol)`.
pub fn socket(domain: u16, ty: u32, protocol: u32) -> SysResult<Fd> {
    // SAFETY: no pointer arguments.
    check(unsafe { syscall3(SYS_SOCKET, domain as usize, ty as usize, protocol as usize) })
        .map(|fd| fd as Fd)
}

/// `bind(fd, sockaddr_un{AF_UNIX, path})`.
pub fn bind_unix(fd: Fd, path: &str) -> SysResult<()> {
    let mut sa = Vec::from(AF_UNIX.to_le_bytes());
    sa.extend_from_slice(path.as_bytes());
    sa.push(0);
    // SAFETY: `sa` is a readable sockaddr_un of `sa.len()` bytes.
    check(unsafe { syscall3(SYS_BIND, fd as usize, sa.as_ptr() as usize, sa.len()) }).map(|_| ())
}

/// `getsockname(fd, buf, &len)` (`getpeername` when `peer`): the bytes written (at most
/// `room`) and the length the kernel reports.
pub fn sockname(fd: Fd, room: usize, peer: bool) -> SysResult<(Vec<u8>, u32)> {
    let mut buf = alloc::vec![0u8; room];
    let mut len = room as u32;
    let n = if peer {
        SYS_GETPEERNAME
    } else {
        SYS_GETSOCKNAME
    };
    // SAFETY: `buf` is writable for `len` bytes, `len` is a writable u32.
    check(unsafe {
        syscall3(
            n,
            fd as usize,
            buf.as_mut_ptr() as usize,
            &mut len as *mut u32 as usize,
        )
    })?;
    buf.truncate((len as usize).min(room));
    Ok((buf, len))
}
