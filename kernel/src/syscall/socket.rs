//! Socket calls: Unix-domain sockets that can be bound to a name (`ipc::socket`); other
//! families are EAFNOSUPPORT.

use abi::Errno;

use super::args::{copy_in, copy_out, SysResult};
use crate::fs::file::OpenFile;
use crate::fs::path::{self, Loc};
use crate::fs::perm;
use crate::ipc::socket::{Socket, AF_UNIX};
use crate::task::with_current;

const SOCK_STREAM: usize = 1;
const SOCK_DGRAM: usize = 2;
const SOCK_SEQPACKET: usize = 5;
const SOCK_NONBLOCK: usize = 0o4000;
const SOCK_CLOEXEC: usize = 0o2000000;

fn socket_of(fd: i32) -> Result<alloc::sync::Arc<OpenFile>, Errno> {
    let f = with_current(|p| p.files.fds().get(fd))?;
    // An O_PATH descriptor is no descriptor for socket calls (Linux's fdget: EBADF).
    if *f.status_flags.lock() & abi::fcntl::O_PATH != 0 {
        return Err(Errno::EBADF);
    }
    if f.loc.node.as_any().downcast_ref::<Socket>().is_none() {
        return Err(Errno::ENOTSOCK);
    }
    Ok(f)
}

/// The socket of a descriptor [`socket_of`] answered.
fn socket(f: &OpenFile) -> &Socket {
    f.loc
        .node
        .as_any()
        .downcast_ref::<Socket>()
        .expect("socket_of checked that the node is a socket")
}

pub fn sys_socket(domain: usize, ty: usize, _protocol: usize) -> SysResult {
    if domain != AF_UNIX {
        return Err(Errno::EAFNOSUPPORT);
    }
    let kind = ty & !(SOCK_NONBLOCK | SOCK_CLOEXEC);
    if ![SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET].contains(&kind) {
        return Err(Errno::EINVAL);
    }
    let root = Loc::root()?;
    let loc = Loc {
        node: Socket::new(),
        path: alloc::string::String::from("socket:"),
        mount: root.mount,
    };
    let status = if ty & SOCK_NONBLOCK != 0 {
        abi::fcntl::O_NONBLOCK
    } else {
        0
    } | abi::fcntl::O_RDWR;
    let f = OpenFile::new(loc, true, true, status)?;
    with_current(|p| p.files.fds().install(f, ty & SOCK_CLOEXEC != 0)).map(|fd| fd as usize)
}

/// The path in a `sockaddr_un` (family 1, then up to 108 bytes, NUL-terminated or not).
fn sun_path(addr: usize, len: usize) -> Result<alloc::string::String, Errno> {
    if !(2..=110).contains(&len) {
        return Err(Errno::EINVAL);
    }
    let mut b = alloc::vec![0u8; len];
    copy_in(addr, &mut b)?;
    if u16::from_le_bytes([b[0], b[1]]) as usize != AF_UNIX {
        return Err(Errno::EINVAL);
    }
    let p = &b[2..];
    let end = p.iter().position(|&c| c == 0).unwrap_or(p.len());
    if end == 0 {
        return Err(Errno::EINVAL); // the abstract namespace is not supported
    }
    alloc::string::String::from_utf8(p[..end].to_vec()).map_err(|_| Errno::EINVAL)
}

pub fn sys_bind(fd: i32, addr: usize, len: usize) -> SysResult {
    let f = socket_of(fd)?;
    let path = sun_path(addr, len)?;
    let sock = socket(&f);
    if sock.bound.lock().is_some() {
        return Err(Errno::EINVAL);
    }
    let base = if path.starts_with('/') {
        Loc::root()?
    } else {
        Loc::from_path(&with_current(|p| p.cwd.clone()))?
    };
    let (parent, name) = path::resolve_parent(&base, &path)?;
    if parent.node.lookup(&name).is_ok() {
        return Err(Errno::EADDRINUSE);
    }
    let c = perm::cred();
    perm::may_modify_dir(&c, &parent)?;
    let umask = with_current(|p| p.umask);
    let new = perm::new_node(&c, &parent, vfs::FileType::Socket, 0o777 & !umask)?;
    parent.node.create(&name, &new)?;
    *sock.bound.lock() = Some(path);
    Ok(0)
}

pub fn sys_listen(fd: i32) -> SysResult {
    socket_of(fd)?;
    Ok(0)
}

pub fn sys_connect(fd: i32, addr: usize, len: usize) -> SysResult {
    socket_of(fd)?;
    let path = sun_path(addr, len)?;
    let base = if path.starts_with('/') {
        Loc::root()?
    } else {
        Loc::from_path(&with_current(|p| p.cwd.clone()))?
    };
    let loc = path::resolve(&base, &path, true)?;
    if loc.node.ftype()? != vfs::FileType::Socket {
        return Err(Errno::ECONNREFUSED);
    }
    perm::check(&perm::cred(), &loc, perm::MAY_WRITE)?;
    Err(Errno::ECONNREFUSED)
}

pub fn sys_unsupported(fd: i32) -> SysResult {
    socket_of(fd)?;
    Err(Errno::EOPNOTSUPP)
}

/// getsockname(fd, addr, addrlen): the `sockaddr_un` the socket is bound to (the family alone
/// when unbound), cut to `*addrlen` bytes; `*addrlen` receives its full length.
pub fn sys_getsockname(fd: i32, addr: usize, addrlen: usize) -> SysResult {
    let f = socket_of(fd)?;
    let mut len = [0u8; 4];
    copy_in(addrlen, &mut len)?;
    let room = i32::from_le_bytes(len);
    if room < 0 {
        return Err(Errno::EINVAL);
    }
    let sock = socket(&f);
    let mut sa = alloc::vec::Vec::from((AF_UNIX as u16).to_le_bytes());
    if let Some(path) = sock.bound.lock().as_ref() {
        sa.extend_from_slice(path.as_bytes());
        sa.push(0);
    }
    let n = sa.len().min(room as usize);
    copy_out(addr, &sa[..n])?;
    copy_out(addrlen, &(sa.len() as u32).to_le_bytes())?;
    Ok(0)
}

/// getpeername(fd, addr, addrlen): no socket here is ever connected (ENOTCONN); a descriptor
/// that is not a socket is ENOTSOCK.
pub fn sys_getpeername(fd: i32, _addr: usize, _addrlen: usize) -> SysResult {
    socket_of(fd)?;
    Err(Errno::ENOTCONN)
}
