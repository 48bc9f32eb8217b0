//! Socket calls on Unix-domain sockets (`ipc::socket`): socket, socketpair, bind, listen,
//! connect, accept/accept4, sendto/sendmsg, recvfrom/recvmsg, shutdown, getsockname,
//! getpeername, getsockopt/setsockopt, and read/write on a socket descriptor. Other families
//! are EAFNOSUPPORT: there is no network stack.
//!
//! This layer reads and writes user memory (addresses, iovecs, control messages) and turns
//! descriptors into open files and back; the socket layer moves kernel buffers.

use alloc::sync::Arc;
use alloc::vec::Vec;

use abi::Errno;

use super::args::{copy_in, copy_out, SysResult};
use crate::fs::file::OpenFile;
use crate::fs::path::{self, Loc};
use crate::fs::perm;
use crate::ipc::socket::{Key, Kind, Name, Received, Socket, Ucred, Wait, AF_UNIX};
use crate::mm::uaccess;
use crate::task::{signal, with_current};

const SOCK_NONBLOCK: usize = 0o4000;
const SOCK_CLOEXEC: usize = 0o2000000;
const SOCK_RAW: usize = 3;
/// The largest socket type number (SOCK_PACKET); types up to it exist but not for AF_UNIX.
const SOCK_MAX: usize = 10;
const AF_UNSPEC: u16 = 0;

const MSG_OOB: u32 = 0x1;
const MSG_PEEK: u32 = 0x2;
const MSG_CTRUNC: u32 = 0x8;
const MSG_TRUNC: u32 = 0x20;
const MSG_DONTWAIT: u32 = 0x40;
const MSG_WAITALL: u32 = 0x100;
const MSG_NOSIGNAL: u32 = 0x4000;
const MSG_CMSG_CLOEXEC: u32 = 0x4000_0000;

const SOL_SOCKET: usize = 1;
const SCM_RIGHTS: u32 = 1;
const SCM_CREDENTIALS: u32 = 2;
const SO_REUSEADDR: usize = 2;
const SO_TYPE: usize = 3;
const SO_ERROR: usize = 4;
const SO_SNDBUF: usize = 7;
const SO_RCVBUF: usize = 8;
const SO_PASSCRED: usize = 16;
const SO_PEERCRED: usize = 17;
const SO_RCVTIMEO: usize = 20;
const SO_SNDTIMEO: usize = 21;
const SO_ACCEPTCONN: usize = 30;
const SO_PROTOCOL: usize = 38;
const SO_DOMAIN: usize = 39;
/// Linux's net.core.wmem_max / rmem_max: the most SO_SNDBUF/SO_RCVBUF take (then doubled).
const BUF_MAX: usize = 212_992;
const MIN_SNDBUF: usize = 4608;

/// riscv64's `struct cmsghdr`: u64 length, i32 level, i32 type; data 8-byte aligned.
const CMSG_HDR: usize = 16;
/// riscv64's `struct msghdr`: name, namelen (+pad), iov, iovlen, control, controllen, flags.
const MSGHDR_SIZE: usize = 56;
/// The most bytes one call moves through a kernel buffer (a datagram up to the largest
/// send buffer fits whole).
const CHUNK: usize = 512 * 1024;

/// The open file of a socket descriptor: EBADF for no descriptor (or an O_PATH one, as
/// Linux's fdget), ENOTSOCK for another file.
fn socket_of(fd: i32) -> Result<(Arc<OpenFile>, Arc<Socket>), Errno> {
    let f = with_current(|p| p.files.fds().get(fd))?;
    if *f.status_flags.lock() & abi::fcntl::O_PATH != 0 {
        return Err(Errno::EBADF);
    }
    let s = socket_node(&f).ok_or(Errno::ENOTSOCK)?;
    Ok((f, s))
}

/// The socket behind an open file, if it is one.
pub fn socket_node(f: &OpenFile) -> Option<Arc<Socket>> {
    f.loc.node.as_any().downcast_ref::<Socket>()?.arc()
}

fn nonblock(f: &OpenFile) -> bool {
    *f.status_flags.lock() & abi::fcntl::O_NONBLOCK != 0
}

/// How a call on `f` waits: MSG_DONTWAIT or O_NONBLOCK, and the socket's timeout (ns).
fn wait_of(f: &OpenFile, flags: u32, timeout_ns: u64) -> Wait {
    Wait {
        nonblock: nonblock(f) || flags & MSG_DONTWAIT != 0,
        deadline: (timeout_ns > 0)
            .then(|| crate::arch::time::monotonic_ns().saturating_add(timeout_ns)),
    }
}

/// The kind of an AF_UNIX socket of `ty` (flags taken off), as Linux's socket checks:
/// EINVAL for unknown flags or a type past SOCK_MAX, ESOCKTNOSUPPORT for a type AF_UNIX
/// does not have, EPROTONOSUPPORT for a protocol other than 0 or PF_UNIX; SOCK_RAW is a
/// datagram socket (unix_create). Other families: EAFNOSUPPORT.
fn socket_kind(domain: usize, ty: usize, protocol: usize) -> Result<Kind, Errno> {
    let base = ty & !(SOCK_NONBLOCK | SOCK_CLOEXEC);
    if base > SOCK_MAX || ty & !(SOCK_NONBLOCK | SOCK_CLOEXEC | 0xf) != 0 {
        return Err(Errno::EINVAL);
    }
    if domain != AF_UNIX {
        return Err(Errno::EAFNOSUPPORT);
    }
    if protocol != 0 && protocol != AF_UNIX {
        return Err(Errno::EPROTONOSUPPORT);
    }
    let base = if base == SOCK_RAW { 2 } else { base };
    Kind::from_type(base).ok_or(Errno::ESOCKTNOSUPPORT)
}

/// An open file for a socket, installed as a descriptor.
fn install_socket(s: Arc<Socket>, flags: usize) -> Result<i32, Errno> {
    let f = socket_file(s, flags)?;
    with_current(|p| p.files.fds().install(f, flags & SOCK_CLOEXEC != 0))
}

fn socket_file(s: Arc<Socket>, flags: usize) -> Result<Arc<OpenFile>, Errno> {
    let root = Loc::root()?;
    let loc = Loc {
        node: s,
        path: alloc::string::String::from("socket:"),
        mount: root.mount,
    };
    let status = if flags & SOCK_NONBLOCK != 0 {
        abi::fcntl::O_NONBLOCK
    } else {
        0
    } | abi::fcntl::O_RDWR;
    OpenFile::new(loc, true, true, status)
}

pub fn sys_socket(domain: usize, ty: usize, protocol: usize) -> SysResult {
    let kind = socket_kind(domain, ty, protocol)?;
    install_socket(Socket::new(kind), ty).map(|fd| fd as usize)
}

pub fn sys_socketpair(domain: usize, ty: usize, protocol: usize, sv: usize) -> SysResult {
    let kind = socket_kind(domain, ty, protocol)?;
    // Check the result pointer before anything is installed.
    super::args::with_space(|sp| uaccess::segments(sp, sv, 8, crate::mm::area::Access::Write))?;
    let (a, b) = Socket::pair(kind);
    let (fa, fb) = (socket_file(a, ty)?, socket_file(b, ty)?);
    let cloexec = ty & SOCK_CLOEXEC != 0;
    let (x, y) = with_current(|p| {
        let x = p.files.fds().install(fa, cloexec)?;
        match p.files.fds().install(fb, cloexec) {
            Ok(y) => Ok((x, y)),
            Err(e) => {
                let _ = p.files.fds().close(x);
                Err(e)
            }
        }
    })?;
    let mut out = [0u8; 8];
    out[..4].copy_from_slice(&x.to_le_bytes());
    out[4..].copy_from_slice(&y.to_le_bytes());
    copy_out(sv, &out)?;
    Ok(0)
}

/// A `sockaddr_un` read from user memory.
enum Addr {
    /// The family alone: autobind (bind), dissolve (datagram connect with AF_UNSPEC).
    Unnamed(u16),
    Path(alloc::string::String),
    Abstract(Vec<u8>),
}

/// Read a `sockaddr_un` (family, then up to 108 bytes: a path, NUL-terminated or not, or
/// an abstract name starting with NUL). EINVAL for a bad length or family.
fn read_addr(addr: usize, len: usize) -> Result<Addr, Errno> {
    if !(2..=110).contains(&len) {
        return Err(Errno::EINVAL);
    }
    let mut b = alloc::vec![0u8; len];
    copy_in(addr, &mut b)?;
    let family = u16::from_le_bytes([b[0], b[1]]);
    if len == 2 {
        return Ok(Addr::Unnamed(family));
    }
    if family != AF_UNIX as u16 {
        return Ok(Addr::Unnamed(family));
    }
    let p = &b[2..];
    if p[0] == 0 {
        return Ok(Addr::Abstract(p.to_vec()));
    }
    let end = p.iter().position(|&c| c == 0).unwrap_or(p.len());
    alloc::string::String::from_utf8(p[..end].to_vec())
        .map(Addr::Path)
        .map_err(|_| Errno::EINVAL)
}

fn base_for(path: &str) -> Result<Loc, Errno> {
    if path.starts_with('/') {
        Loc::root()
    } else {
        Loc::from_path(&with_current(|p| p.cwd.clone()))
    }
}

/// The socket a name is bound to: ENOENT (or the path walk's error) for no node,
/// ECONNREFUSED for a node nobody listens on or no socket of that name; EACCES without write
/// permission on the node.
fn find_peer(addr: &Addr) -> Result<Arc<Socket>, Errno> {
    let key = match addr {
        Addr::Unnamed(_) => return Err(Errno::EINVAL),
        Addr::Abstract(name) => Key::Abstract(name.clone()),
        Addr::Path(path) => {
            let loc = path::resolve(&base_for(path)?, path, true)?;
            perm::check(&perm::cred(), &loc, perm::MAY_WRITE)?;
            if loc.node.ftype()? != vfs::FileType::Socket {
                return Err(Errno::ECONNREFUSED);
            }
            Key::Node(loc.mount.id, loc.node.getattr()?.ino)
        }
    };
    crate::ipc::socket::lookup(&key).ok_or(Errno::ECONNREFUSED)
}

pub fn sys_bind(fd: i32, addr: usize, len: usize) -> SysResult {
    let (_f, sock) = socket_of(fd)?;
    let a = read_addr(addr, len)?;
    if sock.is_bound() {
        return Err(Errno::EINVAL);
    }
    match a {
        Addr::Unnamed(f) if f == AF_UNIX as u16 => sock.autobind()?,
        Addr::Unnamed(_) => return Err(Errno::EINVAL),
        Addr::Abstract(name) => sock.bind(name.clone(), Key::Abstract(name))?,
        Addr::Path(path) => {
            let (parent, name) = path::resolve_parent(&base_for(&path)?, &path)?;
            if parent.node.lookup(&name).is_ok() {
                return Err(Errno::EADDRINUSE);
            }
            let c = perm::cred();
            perm::may_modify_dir(&c, &parent)?;
            let umask = with_current(|p| p.umask);
            let new = perm::new_node(&c, &parent, vfs::FileType::Socket, 0o777 & !umask)?;
            let node = parent.node.create(&name, &new)?;
            let key = Key::Node(parent.mount.id, node.getattr()?.ino);
            if let Err(e) = sock.bind(path.into_bytes(), key) {
                let _ = parent.node.unlink(&name);
                return Err(e);
            }
        }
    }
    Ok(0)
}

pub fn sys_listen(fd: i32, backlog: usize) -> SysResult {
    let (_f, sock) = socket_of(fd)?;
    // As Linux: a backlog past net.core.somaxconn (4096), or negative, is somaxconn.
    let backlog = (backlog as i32 as u32 as usize).min(4096);
    sock.listen(backlog)?;
    Ok(0)
}

pub fn sys_connect(fd: i32, addr: usize, len: usize) -> SysResult {
    let (f, sock) = socket_of(fd)?;
    let a = read_addr(addr, len)?;
    if sock.kind == Kind::Dgram {
        if let Addr::Unnamed(AF_UNSPEC) = a {
            sock.connect_dgram(None)?;
            return Ok(0);
        }
        let target = find_peer(&a)?;
        if sock.passcred() {
            sock.autobind()?;
        }
        sock.connect_dgram(Some(&target))?;
        return Ok(0);
    }
    if let Addr::Unnamed(_) = a {
        return Err(Errno::EINVAL);
    }
    let target = find_peer(&a)?;
    if sock.passcred() {
        sock.autobind()?;
    }
    let wait = wait_of(&f, 0, sock.timeouts().1);
    sock.connect_stream(&target, wait)?;
    Ok(0)
}

/// Write a socket name as a `sockaddr_un` to `addr`, cut to `*addrlen` bytes, and its full
/// length to `*addrlen` (Linux's move_addr_to_user).
fn put_name(name: Option<&Name>, addr: usize, addrlen: usize) -> Result<(), Errno> {
    let mut len = [0u8; 4];
    copy_in(addrlen, &mut len)?;
    let room = i32::from_le_bytes(len);
    if room < 0 {
        return Err(Errno::EINVAL);
    }
    let sa = sockaddr_bytes(name);
    let n = sa.len().min(room as usize);
    copy_out(addr, &sa[..n])?;
    copy_out(addrlen, &(sa.len() as u32).to_le_bytes())?;
    Ok(())
}

/// A name's `sockaddr_un` bytes: the family, then a path with its NUL or the abstract name.
fn sockaddr_bytes(name: Option<&Name>) -> Vec<u8> {
    let mut sa = Vec::from((AF_UNIX as u16).to_le_bytes());
    if let Some(n) = name {
        sa.extend_from_slice(n);
        if n.first() != Some(&0) {
            sa.push(0);
        }
    }
    sa
}

pub fn sys_accept4(fd: i32, addr: usize, addrlen: usize, flags: usize) -> SysResult {
    if flags & !(SOCK_NONBLOCK | SOCK_CLOEXEC) != 0 {
        return Err(Errno::EINVAL);
    }
    let (f, sock) = socket_of(fd)?;
    if addr != 0 {
        let mut len = [0u8; 4];
        copy_in(addrlen, &mut len)?;
        if i32::from_le_bytes(len) < 0 {
            return Err(Errno::EINVAL);
        }
    }
    let new = sock.accept(wait_of(&f, 0, sock.timeouts().0))?;
    let peer = new.peer_name().ok().flatten();
    let nfd = install_socket(new, flags)?;
    if addr == 0 {
        return Ok(nfd as usize);
    }
    if let Err(e) = put_name(peer.as_ref(), addr, addrlen) {
        let _ = with_current(|p| p.files.fds().close(nfd));
        return Err(e);
    }
    Ok(nfd as usize)
}

pub fn sys_getsockname(fd: i32, addr: usize, addrlen: usize) -> SysResult {
    let (_f, sock) = socket_of(fd)?;
    check_addrlen(addrlen)?;
    put_name(sock.name().as_ref(), addr, addrlen)?;
    Ok(0)
}

pub fn sys_getpeername(fd: i32, addr: usize, addrlen: usize) -> SysResult {
    let (_f, sock) = socket_of(fd)?;
    check_addrlen(addrlen)?;
    let name = sock.peer_name()?;
    put_name(name.as_ref(), addr, addrlen)?;
    Ok(0)
}

/// A socklen_t that must be readable and not negative.
fn check_addrlen(addrlen: usize) -> Result<(), Errno> {
    let mut len = [0u8; 4];
    copy_in(addrlen, &mut len)?;
    if i32::from_le_bytes(len) < 0 {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

pub fn sys_shutdown(fd: i32, how: usize) -> SysResult {
    let (_f, sock) = socket_of(fd)?;
    let (rd, wr) = match how {
        0 => (true, false),
        1 => (false, true),
        2 => (true, true),
        _ => return Err(Errno::EINVAL),
    };
    sock.shutdown(rd, wr)?;
    Ok(0)
}

/// What a send carries besides its bytes.
struct Ancillary {
    rights: Vec<Arc<OpenFile>>,
    cred: Ucred,
}

/// Parse sendmsg's control messages: SCM_RIGHTS (open files of the sender's descriptors,
/// EBADF for one that is not open, EINVAL past 253) and SCM_CREDENTIALS (EPERM for ids the
/// sender may not claim); other levels are ignored, as Linux's unix sockets do.
fn read_control(control: usize, len: usize) -> Result<Ancillary, Errno> {
    let mut anc = Ancillary {
        rights: Vec::new(),
        cred: Ucred::current(),
    };
    if len == 0 {
        return Ok(anc);
    }
    if len > 64 * 1024 {
        return Err(Errno::ENOBUFS);
    }
    let mut buf = alloc::vec![0u8; len];
    copy_in(control, &mut buf)?;
    let mut at = 0;
    while at + CMSG_HDR <= len {
        let h = &buf[at..at + CMSG_HDR];
        let clen = u64::from_le_bytes(h[..8].try_into().unwrap_or_default()) as usize;
        let level = u32::from_le_bytes(h[8..12].try_into().unwrap_or_default()) as usize;
        let ty = u32::from_le_bytes(h[12..16].try_into().unwrap_or_default());
        if clen < CMSG_HDR || clen > len - at {
            return Err(Errno::EINVAL);
        }
        let data = &buf[at + CMSG_HDR..at + clen];
        if level == SOL_SOCKET {
            match ty {
                SCM_RIGHTS => {
                    let n = data.len() / 4;
                    if n == 0 || anc.rights.len() + n > crate::ipc::socket::MAX_RIGHTS {
                        return Err(Errno::EINVAL);
                    }
                    for c in data.chunks_exact(4) {
                        let fd = i32::from_le_bytes([c[0], c[1], c[2], c[3]]);
                        let f = with_current(|p| p.files.fds().get(fd))?;
                        if *f.status_flags.lock() & abi::fcntl::O_PATH != 0 {
                            return Err(Errno::EBADF);
                        }
                        anc.rights.push(f);
                    }
                }
                SCM_CREDENTIALS => {
                    if data.len() != 12 {
                        return Err(Errno::EINVAL);
                    }
                    let w = |i: usize| {
                        u32::from_le_bytes(data[i..i + 4].try_into().unwrap_or_default())
                    };
                    let claim = Ucred {
                        pid: w(0),
                        uid: w(4),
                        gid: w(8),
                    };
                    check_cred_claim(&claim)?;
                    anc.cred = claim;
                }
                _ => return Err(Errno::EINVAL),
            }
        }
        at += (clen + 7) & !7;
    }
    Ok(anc)
}

/// Linux's scm_check_creds: the pid is the sender's (or CAP_SYS_ADMIN), the uid one of its
/// real, effective, saved (or CAP_SETUID), the gid likewise (or CAP_SETGID).
fn check_cred_claim(claim: &Ucred) -> Result<(), Errno> {
    const CAP_SETGID: u32 = 6;
    const CAP_SETUID: u32 = 7;
    const CAP_SYS_ADMIN: u32 = 21;
    let c = crate::task::current_cred();
    let pid_ok = claim.pid as usize == crate::task::current_pid() || c.caps.has(CAP_SYS_ADMIN);
    let uid_ok = [c.uid, c.euid, c.suid].contains(&claim.uid) || c.caps.has(CAP_SETUID);
    let gid_ok = [c.gid, c.egid, c.sgid].contains(&claim.gid) || c.caps.has(CAP_SETGID);
    if pid_ok && uid_ok && gid_ok {
        Ok(())
    } else {
        Err(Errno::EPERM)
    }
}

/// Copy the user buffers `iov` into one kernel buffer (at most [`CHUNK`] bytes from
/// `skip` on).
fn gather(iov: &[(usize, usize)], skip: usize, max: usize) -> Result<Vec<u8>, Errno> {
    let total: usize = iov.iter().map(|&(_, l)| l).sum();
    let n = total.saturating_sub(skip).min(max);
    let mut out = crate::mm::heap::try_zeroed(n)?;
    let (mut at, mut pos) = (0usize, 0usize);
    for &(base, len) in iov {
        if at >= n {
            break;
        }
        let (lo, hi) = (pos, pos + len);
        pos = hi;
        if hi <= skip {
            continue;
        }
        let from = skip.max(lo) - lo;
        let take = (len - from).min(n - at);
        copy_in(base + from, &mut out[at..at + take])?;
        at += take;
    }
    Ok(out)
}

/// Spread `data` over the user buffers `iov`.
fn scatter(iov: &[(usize, usize)], data: &[u8]) -> Result<(), Errno> {
    let mut at = 0;
    for &(base, len) in iov {
        if at >= data.len() {
            break;
        }
        let n = len.min(data.len() - at);
        copy_out(base, &data[at..at + n])?;
        at += n;
    }
    Ok(())
}

/// The common part of sendto and sendmsg.
fn send_common(
    fd: i32,
    iov: &[(usize, usize)],
    flags: u32,
    addr: Option<(usize, usize)>,
    anc: Ancillary,
) -> SysResult {
    let (f, sock) = socket_of(fd)?;
    if flags & MSG_OOB != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    let to = match (addr, sock.kind) {
        (None, _) | (Some(_), Kind::Seqpacket) => None,
        (Some((a, l)), Kind::Stream) => {
            read_addr(a, l)?;
            return Err(if sock.peer_name().is_ok() {
                Errno::EISCONN
            } else {
                Errno::EOPNOTSUPP
            });
        }
        (Some((a, l)), Kind::Dgram) => {
            let t = find_peer(&read_addr(a, l)?)?;
            if sock.passcred() {
                sock.autobind()?;
            }
            Some(t)
        }
    };
    let wait = wait_of(&f, flags, sock.timeouts().1);
    let total: usize = iov.iter().map(|&(_, l)| l).sum();
    let max = if sock.kind == Kind::Stream {
        CHUNK
    } else {
        total
    };
    let mut rights = anc.rights;
    let mut done = 0;
    loop {
        let data = gather(iov, done, max)?;
        let r = sock.send(
            &data,
            to.clone(),
            core::mem::take(&mut rights),
            anc.cred,
            wait,
        );
        match r {
            Ok(n) => {
                done += n;
                if n < data.len() || done >= total {
                    return Ok(done);
                }
            }
            Err(_) if done > 0 => return Ok(done),
            Err(Errno::EPIPE) => {
                if flags & MSG_NOSIGNAL == 0 {
                    signal::send(&crate::task::current_process(), signal::SIGPIPE);
                }
                return Err(Errno::EPIPE);
            }
            Err(e) => return Err(e),
        }
    }
}

pub fn sys_sendto(
    fd: i32,
    buf: usize,
    len: usize,
    flags: usize,
    addr: usize,
    alen: usize,
) -> SysResult {
    socket_of(fd)?;
    if !uaccess::range_ok(buf, len) {
        return Err(Errno::EFAULT);
    }
    let to = (addr != 0).then_some((addr, alen));
    send_common(fd, &[(buf, len)], flags as u32, to, read_control(0, 0)?)
}

/// A `struct msghdr` read from user memory.
struct MsgHdr {
    name: usize,
    namelen: u32,
    iov: Vec<(usize, usize)>,
    control: usize,
    controllen: usize,
}

fn read_msghdr(msg: usize) -> Result<MsgHdr, Errno> {
    let mut b = [0u8; MSGHDR_SIZE];
    copy_in(msg, &mut b)?;
    let u = |i: usize| usize::from_le_bytes(b[i..i + 8].try_into().unwrap_or_default());
    Ok(MsgHdr {
        name: u(0),
        namelen: u32::from_le_bytes(b[8..12].try_into().unwrap_or_default()),
        iov: super::args::iovecs(u(16), u(24))?,
        control: u(32),
        controllen: u(40),
    })
}

pub fn sys_sendmsg(fd: i32, msg: usize, flags: usize) -> SysResult {
    socket_of(fd)?;
    let h = read_msghdr(msg)?;
    let anc = read_control(h.control, h.controllen)?;
    let to = (h.name != 0 && h.namelen != 0).then_some((h.name, h.namelen as usize));
    send_common(fd, &h.iov, flags as u32, to, anc)
}

/// The common part of recvfrom and recvmsg: (the count returned, what came, msg_flags).
fn recv_common(
    fd: i32,
    iov: &[(usize, usize)],
    flags: u32,
) -> Result<(usize, Received, u32), Errno> {
    let (f, sock) = socket_of(fd)?;
    if flags & MSG_OOB != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    // Check the buffers first: data taken from the queue and then not delivered is lost.
    for &(base, len) in iov {
        super::args::with_space(|sp| {
            uaccess::segments(sp, base, len, crate::mm::area::Access::Write)
        })?;
    }
    let total: usize = iov.iter().map(|&(_, l)| l).sum();
    let mut buf = crate::mm::heap::try_zeroed(total.min(CHUNK))?;
    let got = sock.recv(
        &mut buf,
        flags & MSG_PEEK != 0,
        flags & MSG_WAITALL != 0,
        wait_of(&f, flags, sock.timeouts().0),
    )?;
    scatter(iov, &buf[..got.len])?;
    let mut mflags = 0;
    let mut n = got.len;
    if sock.kind != Kind::Stream && got.full > got.len {
        mflags |= MSG_TRUNC;
        if flags & MSG_TRUNC != 0 {
            n = got.full;
        }
    }
    Ok((n, got, mflags))
}

pub fn sys_recvfrom(
    fd: i32,
    buf: usize,
    len: usize,
    flags: usize,
    addr: usize,
    alen: usize,
) -> SysResult {
    socket_of(fd)?;
    if !uaccess::range_ok(buf, len) {
        return Err(Errno::EFAULT);
    }
    let (n, got, _) = recv_common(fd, &[(buf, len)], flags as u32)?;
    // Descriptors sent to a reader that takes no control messages are closed (dropped).
    drop(got.rights);
    if addr != 0 {
        put_name(got.from.as_ref(), addr, alen)?;
    }
    Ok(n)
}

pub fn sys_recvmsg(fd: i32, msg: usize, flags: usize) -> SysResult {
    let (_f, sock) = socket_of(fd)?;
    let h = read_msghdr(msg)?;
    let (n, got, mut mflags) = recv_common(fd, &h.iov, flags as u32)?;
    // The sender's name into msg_name (msg_namelen: its full length, 0 for none).
    let mut namelen = 0u32;
    if h.name != 0 {
        if let Some(from) = got.from.as_ref() {
            let sa = sockaddr_bytes(Some(from));
            let k = sa.len().min(h.namelen as usize);
            copy_out(h.name, &sa[..k])?;
            namelen = sa.len() as u32;
        }
    }
    // Control messages: the credentials (SO_PASSCRED), then the descriptors.
    let mut control = Vec::new();
    let room = h.controllen;
    if sock.passcred() {
        if let Some(c) = got.cred {
            let mut d = Vec::new();
            d.extend_from_slice(&c.pid.to_le_bytes());
            d.extend_from_slice(&c.uid.to_le_bytes());
            d.extend_from_slice(&c.gid.to_le_bytes());
            if !push_cmsg(&mut control, room, SCM_CREDENTIALS, &d) {
                mflags |= MSG_CTRUNC;
            }
        }
    }
    if !got.rights.is_empty() {
        let fit = room.saturating_sub(control.len() + CMSG_HDR) / 4;
        let cloexec = flags as u32 & MSG_CMSG_CLOEXEC != 0;
        let mut d = Vec::new();
        let total = got.rights.len();
        for (i, f) in got.rights.into_iter().enumerate() {
            if i >= fit {
                break; // the rest are closed
            }
            match with_current(|p| p.files.fds().install(f, cloexec)) {
                Ok(fd) => d.extend_from_slice(&fd.to_le_bytes()),
                Err(_) => break,
            }
        }
        if d.len() / 4 < total {
            mflags |= MSG_CTRUNC;
        }
        if !d.is_empty() {
            push_cmsg(&mut control, room, SCM_RIGHTS, &d);
        }
    }
    if !control.is_empty() {
        copy_out(h.control, &control)?;
    }
    // msg_namelen, msg_controllen, msg_flags.
    copy_out(msg + 8, &namelen.to_le_bytes())?;
    copy_out(msg + 40, &control.len().to_le_bytes())?;
    copy_out(msg + 48, &mflags.to_le_bytes())?;
    Ok(n)
}

/// Append one SOL_SOCKET control message if it fits in `room` bytes (with its padding, as
/// CMSG_SPACE; the last one may end at CMSG_LEN).
fn push_cmsg(out: &mut Vec<u8>, room: usize, ty: u32, data: &[u8]) -> bool {
    let len = CMSG_HDR + data.len();
    if out.len() + len > room {
        return false;
    }
    out.extend_from_slice(&(len as u64).to_le_bytes());
    out.extend_from_slice(&(SOL_SOCKET as u32).to_le_bytes());
    out.extend_from_slice(&ty.to_le_bytes());
    out.extend_from_slice(data);
    while !out.len().is_multiple_of(8) && out.len() < room {
        out.push(0);
    }
    true
}

/// read(2) on a socket: recv with no flags.
pub fn read(f: &OpenFile, va: usize, len: usize) -> SysResult {
    let fd_free = socket_node(f).ok_or(Errno::ENOTSOCK)?;
    if !uaccess::range_ok(va, len) {
        return Err(Errno::EFAULT);
    }
    super::args::with_space(|sp| uaccess::segments(sp, va, len, crate::mm::area::Access::Write))?;
    let mut buf = crate::mm::heap::try_zeroed(len.min(CHUNK))?;
    let got = fd_free.recv(&mut buf, false, false, wait_of(f, 0, fd_free.timeouts().0))?;
    copy_out(va, &buf[..got.len])?;
    Ok(got.len)
}

/// write(2) on a socket: send with no flags (SIGPIPE and EPIPE once the peer is gone).
pub fn write(f: &OpenFile, va: usize, len: usize) -> SysResult {
    let sock = socket_node(f).ok_or(Errno::ENOTSOCK)?;
    if !uaccess::range_ok(va, len) {
        return Err(Errno::EFAULT);
    }
    let wait = wait_of(f, 0, sock.timeouts().1);
    let mut done = 0;
    loop {
        let data = gather(
            &[(va, len)],
            done,
            if sock.kind == Kind::Stream {
                CHUNK
            } else {
                len
            },
        )?;
        match sock.send(&data, None, Vec::new(), Ucred::current(), wait) {
            Ok(n) => {
                done += n;
                if n < data.len() || done >= len {
                    return Ok(done);
                }
            }
            Err(_) if done > 0 => return Ok(done),
            Err(Errno::EPIPE) => {
                signal::send(&crate::task::current_process(), signal::SIGPIPE);
                return Err(Errno::EPIPE);
            }
            Err(e) => return Err(e),
        }
    }
}

/// Receive into a kernel buffer from socket `f` as read(2) receives into a user one (splice
/// out of a socket): waits as the descriptor says. A connection socket that is not connected
/// is EINVAL, as Linux's unix_stream_splice_read answers (read(2) says ENOTCONN).
pub fn read_buf(f: &OpenFile, buf: &mut [u8]) -> SysResult {
    let sock = socket_node(f).ok_or(Errno::ENOTSOCK)?;
    match sock.recv(buf, false, false, wait_of(f, 0, sock.timeouts().0)) {
        Ok(got) => Ok(got.len),
        Err(Errno::ENOTCONN) => Err(Errno::EINVAL),
        Err(e) => Err(e),
    }
}

/// Send a kernel buffer on socket `f` as write(2) sends a user one (sendfile and splice into
/// a socket): waits as the descriptor says (EAGAIN when non-blocking and full); EPIPE, with
/// SIGPIPE, for a peer gone.
pub fn write_buf(f: &OpenFile, buf: &[u8]) -> SysResult {
    let sock = socket_node(f).ok_or(Errno::ENOTSOCK)?;
    let wait = wait_of(f, 0, sock.timeouts().1);
    match sock.send(buf, None, Vec::new(), Ucred::current(), wait) {
        Err(Errno::EPIPE) => {
            signal::send(&crate::task::current_process(), signal::SIGPIPE);
            Err(Errno::EPIPE)
        }
        r => r,
    }
}

/// Read an int option (EINVAL for fewer than 4 bytes).
fn opt_int(val: usize, len: usize) -> Result<i32, Errno> {
    if len < 4 {
        return Err(Errno::EINVAL);
    }
    let mut b = [0u8; 4];
    copy_in(val, &mut b)?;
    Ok(i32::from_le_bytes(b))
}

/// A `struct timeval` option as ns (EINVAL for a short one, EDOM for usec out of range;
/// negative: no timeout... as Linux, 0).
fn opt_timeval(val: usize, len: usize) -> Result<u64, Errno> {
    if len < 16 {
        return Err(Errno::EINVAL);
    }
    let mut b = [0u8; 16];
    copy_in(val, &mut b)?;
    let sec = i64::from_le_bytes(b[..8].try_into().unwrap_or_default());
    let usec = i64::from_le_bytes(b[8..].try_into().unwrap_or_default());
    if !(0..1_000_000).contains(&usec) {
        return Err(Errno::EDOM);
    }
    if sec < 0 {
        return Ok(0);
    }
    Ok((sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(usec as u64 * 1000))
}

pub fn sys_setsockopt(fd: i32, level: usize, name: usize, val: usize, len: usize) -> SysResult {
    let (_f, sock) = socket_of(fd)?;
    if level != SOL_SOCKET {
        return Err(Errno::EOPNOTSUPP);
    }
    let len = len as u32 as i32;
    if len < 0 {
        return Err(Errno::EINVAL);
    }
    let len = len as usize;
    match name {
        SO_REUSEADDR => sock.set_reuseaddr(opt_int(val, len)? != 0),
        SO_PASSCRED => sock.set_passcred(opt_int(val, len)? != 0),
        SO_SNDBUF | SO_RCVBUF => {
            // As Linux: capped at the sysctl maximum, doubled, at least the minimum.
            let v = (opt_int(val, len)?.max(0) as usize).min(BUF_MAX) * 2;
            if name == SO_SNDBUF {
                sock.set_buffers(None, Some(v.max(MIN_SNDBUF)));
            } else {
                sock.set_buffers(Some(v.max(crate::ipc::socket::MIN_BUF)), None);
            }
        }
        SO_RCVTIMEO => sock.set_timeouts(Some(opt_timeval(val, len)?), None),
        SO_SNDTIMEO => sock.set_timeouts(None, Some(opt_timeval(val, len)?)),
        SO_TYPE | SO_ERROR | SO_PEERCRED | SO_ACCEPTCONN | SO_PROTOCOL | SO_DOMAIN => {
            return Err(Errno::ENOPROTOOPT)
        }
        _ => return Err(Errno::ENOPROTOOPT),
    }
    Ok(0)
}

pub fn sys_getsockopt(fd: i32, level: usize, name: usize, val: usize, lenp: usize) -> SysResult {
    let (_f, sock) = socket_of(fd)?;
    if level != SOL_SOCKET {
        return Err(Errno::EOPNOTSUPP);
    }
    let mut lb = [0u8; 4];
    copy_in(lenp, &mut lb)?;
    let room = i32::from_le_bytes(lb);
    if room < 0 {
        return Err(Errno::EINVAL);
    }
    let int = |v: i32| Vec::from(v.to_le_bytes());
    let tv = |ns: u64| {
        let mut v = Vec::from(((ns / 1_000_000_000) as i64).to_le_bytes());
        v.extend_from_slice(&(((ns % 1_000_000_000) / 1000) as i64).to_le_bytes());
        v
    };
    let value = match name {
        SO_TYPE => int(sock.kind.as_type()),
        SO_ERROR => int(sock.take_error().map_or(0, |e| e.0)),
        SO_REUSEADDR => int(sock.reuseaddr() as i32),
        SO_PASSCRED => int(sock.passcred() as i32),
        SO_SNDBUF => int(sock.buffers().1 as i32),
        SO_RCVBUF => int(sock.buffers().0 as i32),
        SO_ACCEPTCONN => int(sock.listening() as i32),
        SO_PROTOCOL => int(0),
        SO_DOMAIN => int(AF_UNIX as i32),
        SO_RCVTIMEO => tv(sock.timeouts().0),
        SO_SNDTIMEO => tv(sock.timeouts().1),
        SO_PEERCRED => {
            // No peer: pid 0 and the overflow ids, as Linux.
            let c = sock.peercred().unwrap_or(Ucred {
                pid: 0,
                uid: 65534,
                gid: 65534,
            });
            let mut v = Vec::from(c.pid.to_le_bytes());
            v.extend_from_slice(&c.uid.to_le_bytes());
            v.extend_from_slice(&c.gid.to_le_bytes());
            v
        }
        _ => return Err(Errno::ENOPROTOOPT),
    };
    let n = value.len().min(room as usize);
    copy_out(val, &value[..n])?;
    copy_out(lenp, &(n as u32).to_le_bytes())?;
    Ok(0)
}
