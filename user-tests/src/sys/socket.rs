//! Unix-domain socket calls: socket, socketpair, bind, listen, connect, accept4, send/recv
//! (sendto, recvfrom, sendmsg, recvmsg with control messages), shutdown, getsockname,
//! getpeername, getsockopt/setsockopt.

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

/// A `sockaddr_un` for `name`: a path (NUL added) or, starting with NUL, an abstract name.
pub fn sockaddr_un(name: &[u8]) -> Vec<u8> {
    let mut sa = Vec::from(AF_UNIX.to_le_bytes());
    sa.extend_from_slice(name);
    if name.first() != Some(&0) {
        sa.push(0);
    }
    sa
}

/// `socketpair(AF_UNIX, ty, 0)`.
pub fn socketpair(ty: u32) -> SysResult<(Fd, Fd)> {
    let mut sv = [0i32; 2];
    // SAFETY: `sv` is two writable ints.
    check(unsafe {
        syscall4(
            SYS_SOCKETPAIR,
            AF_UNIX as usize,
            ty as usize,
            0,
            sv.as_mut_ptr() as usize,
        )
    })?;
    Ok((sv[0], sv[1]))
}

/// `bind(fd, sockaddr_un{name})` (see [`sockaddr_un`]).
pub fn bind_name(fd: Fd, name: &[u8]) -> SysResult<()> {
    let sa = sockaddr_un(name);
    // SAFETY: `sa` is a readable sockaddr_un of `sa.len()` bytes.
    check(unsafe { syscall3(SYS_BIND, fd as usize, sa.as_ptr() as usize, sa.len()) }).map(|_| ())
}

/// `connect(fd, sockaddr_un{name})`.
pub fn connect_name(fd: Fd, name: &[u8]) -> SysResult<()> {
    let sa = sockaddr_un(name);
    // SAFETY: as in `bind_name`.
    check(unsafe { syscall3(SYS_CONNECT, fd as usize, sa.as_ptr() as usize, sa.len()) }).map(|_| ())
}

/// `listen(fd, backlog)`.
pub fn listen(fd: Fd, backlog: i32) -> SysResult<()> {
    // SAFETY: no pointer arguments.
    check(unsafe { syscall2(SYS_LISTEN, fd as usize, backlog as usize) }).map(|_| ())
}

/// `accept4(fd, NULL, NULL, flags)`.
pub fn accept4(fd: Fd, flags: u32) -> SysResult<Fd> {
    // SAFETY: no address is asked for.
    check(unsafe { syscall4(SYS_ACCEPT4, fd as usize, 0, 0, flags as usize) }).map(|v| v as Fd)
}

/// `shutdown(fd, how)`.
pub fn shutdown(fd: Fd, how: u32) -> SysResult<()> {
    // SAFETY: no pointer arguments.
    check(unsafe { syscall2(SYS_SHUTDOWN, fd as usize, how as usize) }).map(|_| ())
}

/// `sendto(fd, buf, flags, NULL, 0)`.
pub fn send(fd: Fd, buf: &[u8], flags: u32) -> SysResult<usize> {
    // SAFETY: `buf` is readable for its length; no address.
    check(unsafe {
        syscall6(
            SYS_SENDTO,
            fd as usize,
            buf.as_ptr() as usize,
            buf.len(),
            flags as usize,
            0,
            0,
        )
    })
}

/// `recvfrom(fd, buf, flags, NULL, NULL)`.
pub fn recv(fd: Fd, buf: &mut [u8], flags: u32) -> SysResult<usize> {
    // SAFETY: `buf` is writable for its length; no address.
    check(unsafe {
        syscall6(
            SYS_RECVFROM,
            fd as usize,
            buf.as_mut_ptr() as usize,
            buf.len(),
            flags as usize,
            0,
            0,
        )
    })
}

/// `sendto(fd, buf, flags, sockaddr_un{name})`.
pub fn send_to(fd: Fd, buf: &[u8], name: &[u8]) -> SysResult<usize> {
    let sa = sockaddr_un(name);
    // SAFETY: `buf` and `sa` are readable for their lengths.
    check(unsafe {
        syscall6(
            SYS_SENDTO,
            fd as usize,
            buf.as_ptr() as usize,
            buf.len(),
            0,
            sa.as_ptr() as usize,
            sa.len(),
        )
    })
}

/// `recvfrom(fd, buf, flags, &addr, &len)`: (count, the sender's sockaddr bytes).
pub fn recv_from(fd: Fd, buf: &mut [u8], flags: u32) -> SysResult<(usize, Vec<u8>)> {
    let mut sa = [0u8; 110];
    let mut len = 110u32;
    // SAFETY: `buf`, `sa` and `len` are writable for their sizes.
    let n = check(unsafe {
        syscall6(
            SYS_RECVFROM,
            fd as usize,
            buf.as_mut_ptr() as usize,
            buf.len(),
            flags as usize,
            sa.as_mut_ptr() as usize,
            &mut len as *mut u32 as usize,
        )
    })?;
    Ok((n, sa[..(len as usize).min(110)].to_vec()))
}

/// `SOL_SOCKET` control message types.
pub const SCM_RIGHTS: u32 = 1;
pub const SCM_CREDENTIALS: u32 = 2;

/// One control message: (type, data); level SOL_SOCKET.
pub type Cmsg = (u32, Vec<u8>);

/// riscv64's `struct msghdr` around one buffer and a control area.
fn msghdr(iov: &[usize; 2], control: &mut [u8]) -> [usize; 7] {
    [
        0,
        0,
        iov.as_ptr() as usize,
        1,
        control.as_mut_ptr() as usize,
        control.len(),
        0,
    ]
}

/// `sendmsg(fd, {buf, control messages}, flags)`.
pub fn sendmsg(fd: Fd, buf: &[u8], cmsgs: &[Cmsg], flags: u32) -> SysResult<usize> {
    let mut control = Vec::new();
    for (ty, data) in cmsgs {
        control.extend_from_slice(&((16 + data.len()) as u64).to_le_bytes());
        control.extend_from_slice(&1u32.to_le_bytes());
        control.extend_from_slice(&ty.to_le_bytes());
        control.extend_from_slice(data);
        while !control.len().is_multiple_of(8) {
            control.push(0);
        }
    }
    let iov = [buf.as_ptr() as usize, buf.len()];
    let mut h = msghdr(&iov, &mut control);
    if cmsgs.is_empty() {
        h[4] = 0;
        h[5] = 0;
    }
    // SAFETY: `h` is a readable msghdr whose iovec and control area are valid.
    check(unsafe {
        syscall3(
            SYS_SENDMSG,
            fd as usize,
            h.as_ptr() as usize,
            flags as usize,
        )
    })
}

/// `recvmsg(fd, {buf, a control area of `room` bytes}, flags)`: (count, control messages,
/// msg_flags).
pub fn recvmsg(
    fd: Fd,
    buf: &mut [u8],
    room: usize,
    flags: u32,
) -> SysResult<(usize, Vec<Cmsg>, u32)> {
    let mut control = alloc::vec![0u8; room];
    let iov = [buf.as_mut_ptr() as usize, buf.len()];
    let mut h = msghdr(&iov, &mut control);
    // SAFETY: `h` is a writable msghdr whose iovec and control area are valid.
    let n = check(unsafe {
        syscall3(
            SYS_RECVMSG,
            fd as usize,
            h.as_mut_ptr() as usize,
            flags as usize,
        )
    })?;
    let used = h[5].min(room);
    let mut out = Vec::new();
    let mut at = 0;
    while at + 16 <= used {
        let len = u64::from_le_bytes(control[at..at + 8].try_into().unwrap_or_default()) as usize;
        if len < 16 || at + len > used {
            break;
        }
        let ty = u32::from_le_bytes(control[at + 12..at + 16].try_into().unwrap_or_default());
        out.push((ty, control[at + 16..at + len].to_vec()));
        at += (len + 7) & !7;
    }
    Ok((n, out, h[6] as u32))
}

/// `getsockopt(fd, SOL_SOCKET, name)`: the value's bytes (at most `room`).
pub fn getsockopt(fd: Fd, name: u32, room: usize) -> SysResult<Vec<u8>> {
    let mut v = alloc::vec![0u8; room];
    let mut len = room as u32;
    // SAFETY: `v` is writable for `len` bytes, `len` is a writable u32.
    check(unsafe {
        syscall5(
            SYS_GETSOCKOPT,
            fd as usize,
            1,
            name as usize,
            v.as_mut_ptr() as usize,
            &mut len as *mut u32 as usize,
        )
    })?;
    v.truncate(len as usize);
    Ok(v)
}

/// `setsockopt(fd, SOL_SOCKET, name, value)`.
pub fn setsockopt(fd: Fd, name: u32, value: &[u8]) -> SysResult<()> {
    // SAFETY: `value` is readable for its length.
    check(unsafe {
        syscall5(
            SYS_SETSOCKOPT,
            fd as usize,
            1,
            name as usize,
            value.as_ptr() as usize,
            value.len(),
        )
    })
    .map(|_| ())
}
