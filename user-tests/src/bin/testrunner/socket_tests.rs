//! Unix-domain sockets with data: a stream connection through a bound name between two
//! processes (accept, names, SO_PEERCRED), socket pairs of each type (message boundaries,
//! MSG_PEEK/MSG_TRUNC/MSG_DONTWAIT, shutdown, EPIPE), descriptors and credentials passed in
//! control messages, a reader blocked in one process woken by a writer in another, and the
//! errors of bad use.

use user_tests::prelude::*;
use user_tests::time::now_ns;

use crate::{ensure, expect_errno, Check, Ctx, TestResult};

const SOCK_STREAM: u32 = 1;
const SOCK_DGRAM: u32 = 2;
const SOCK_SEQPACKET: u32 = 5;
const SOCK_NONBLOCK: u32 = 0o4000;
const SOCK_CLOEXEC: u32 = 0o2000000;
const MSG_PEEK: u32 = 2;
const MSG_TRUNC: u32 = 0x20;
const MSG_DONTWAIT: u32 = 0x40;
const MSG_WAITALL: u32 = 0x100;
const MSG_NOSIGNAL: u32 = 0x4000;
const SO_TYPE: u32 = 3;
const SO_RCVBUF: u32 = 8;
const SO_PASSCRED: u32 = 16;
const SO_PEERCRED: u32 = 17;
const SO_RCVTIMEO: u32 = 20;

fn int(v: &[u8]) -> i32 {
    i32::from_le_bytes(v[..4].try_into().unwrap_or_default())
}

/// A server bound to a path (or an abstract name), a child that connects and sends "ping"
/// and reads "pong": accept gives a socket whose peer credentials name the child, the names
/// on each side are the bound one, data goes both ways, and the child sees end of file
/// when the server end closes. Connecting again to a closed listener is ECONNREFUSED.
pub fn unix_stream_connect(cx: &Ctx) -> TestResult {
    // FAT cannot hold a socket node: the abstract namespace serves there.
    let name: Vec<u8> = if cx.fat {
        b"\0dbfs-os-testrunner-stream".to_vec()
    } else {
        cx.path("srv").into_bytes()
    };
    let srv = sys::socket(sys::AF_UNIX, SOCK_STREAM, 0).what("socket")?;
    sys::bind_name(srv, &name).what("bind")?;
    expect_errno(sys::bind_name(srv, &name), Errno::EINVAL, "bind twice")?;
    let other = sys::socket(sys::AF_UNIX, SOCK_STREAM, 0).what("socket 2")?;
    expect_errno(
        sys::bind_name(other, &name),
        Errno::EADDRINUSE,
        "bind a used name",
    )?;
    expect_errno(
        sys::connect_name(other, &name),
        Errno::ECONNREFUSED,
        "connect before listen",
    )?;
    sys::listen(srv, 4).what("listen")?;
    let pid = sys::fork().what("fork")?;
    if pid == 0 {
        let mut code = 0;
        let c = sys::socket(sys::AF_UNIX, SOCK_STREAM, 0).unwrap_or(-1);
        if sys::connect_name(c, &name).is_err() {
            sys::exit(1);
        }
        if sys::connect_name(c, &name) != Err(Errno::EISCONN) {
            code |= 2;
        }
        if sys::write(c, b"ping") != Ok(4) {
            code |= 4;
        }
        let mut b = [0u8; 8];
        if sys::read_full(c, &mut b[..4]) != Ok(4) || &b[..4] != b"pong" {
            code |= 8;
        }
        if sys::read(c, &mut b) != Ok(0) {
            code |= 16;
        }
        sys::exit(code);
    }
    let a = sys::accept4(srv, SOCK_CLOEXEC).what("accept4")?;
    let cred = sys::getsockopt(a, SO_PEERCRED, 12).what("SO_PEERCRED")?;
    ensure!(
        int(&cred) == pid,
        "SO_PEERCRED pid {} for child {pid}",
        int(&cred)
    );
    let (mine, _) = sys::sockname(a, 110, false).what("getsockname of accepted")?;
    ensure!(
        mine == sys::sockaddr_un(&name),
        "accepted socket's name {mine:?}"
    );
    let (peer, plen) = sys::sockname(a, 110, true).what("getpeername of accepted")?;
    ensure!(
        plen == 2 && peer == [1, 0],
        "unbound client's name {peer:?}"
    );
    let mut b = [0u8; 4];
    sys::read_full(a, &mut b).what("read ping")?;
    ensure!(&b == b"ping", "server read {b:?}");
    sys::write_all(a, b"pong").what("write pong")?;
    sys::close(a).what("close accepted")?;
    let (_, st) = sys::waitpid(pid).what("wait")?;
    ensure!(st.exited() && st.exit_code() == 0, "client: {st:?}");
    sys::close(srv).what("close listener")?;
    expect_errno(
        sys::connect_name(other, &name),
        Errno::ECONNREFUSED,
        "connect to closed",
    )?;
    let _ = sys::close(other);
    if !cx.fat {
        sys::unlink(&cx.path("srv")).what("unlink the socket node")?;
    }
    Ok(())
}

/// Socket pairs: a datagram pair keeps message boundaries (MSG_PEEK leaves one queued,
/// MSG_TRUNC gives its whole length), a seqpacket pair too; a stream pair merges writes,
/// MSG_DONTWAIT on an empty queue is EAGAIN, SOCK_NONBLOCK shows in F_GETFL; shutdown of
/// writing gives the peer end of file and the writer EPIPE; a write to a closed peer is
/// EPIPE (MSG_NOSIGNAL: no signal).
pub fn unix_socketpair_data(_cx: &Ctx) -> TestResult {
    for ty in [SOCK_DGRAM, SOCK_SEQPACKET] {
        let (a, b) = sys::socketpair(ty).what("socketpair")?;
        sys::send(a, b"first", 0).what("send 1")?;
        sys::send(a, b"second!", 0).what("send 2")?;
        let mut buf = [0u8; 16];
        let n = sys::recv(b, &mut buf, MSG_PEEK).what("peek")?;
        ensure!(&buf[..n] == b"first", "type {ty} peek {:?}", &buf[..n]);
        let n = sys::recv(b, &mut buf[..3], MSG_TRUNC).what("recv truncated")?;
        ensure!(
            n == 5 && &buf[..3] == b"fir",
            "type {ty}: MSG_TRUNC gave {n}"
        );
        let n = sys::recv(b, &mut buf, 0).what("recv 2")?;
        ensure!(&buf[..n] == b"second!", "type {ty}: second {:?}", &buf[..n]);
        expect_errno(sys::recv(b, &mut buf, MSG_DONTWAIT), Errno::EAGAIN, "empty")?;
        let t = sys::getsockopt(a, SO_TYPE, 4).what("SO_TYPE")?;
        ensure!(int(&t) == ty as i32, "SO_TYPE {} for {ty}", int(&t));
        let _ = sys::close(a);
        let _ = sys::close(b);
    }
    let (a, b) = sys::socketpair(SOCK_STREAM | SOCK_NONBLOCK).what("stream pair")?;
    // SAFETY: F_GETFL takes no pointer.
    let fl = Errno::from_ret(unsafe {
        user_tests::raw::syscall3(abi::syscall::SYS_FCNTL, a as usize, 3, 0)
    })
    .what("F_GETFL")?;
    ensure!(
        fl & O_NONBLOCK as usize != 0,
        "SOCK_NONBLOCK not in F_GETFL {fl:#o}"
    );
    let mut buf = [0u8; 16];
    expect_errno(
        sys::read(b, &mut buf),
        Errno::EAGAIN,
        "read empty nonblocking",
    )?;
    sys::write(a, b"abc").what("write 1")?;
    sys::write(a, b"def").what("write 2")?;
    let n = sys::recv(b, &mut buf, 0).what("stream recv")?;
    ensure!(&buf[..n] == b"abcdef", "stream read {:?}", &buf[..n]);
    sys::shutdown(a, 1).what("shutdown SHUT_WR")?;
    ensure!(
        sys::read(b, &mut buf) == Ok(0),
        "no end of file after SHUT_WR"
    );
    expect_errno(
        sys::send(a, b"x", MSG_NOSIGNAL),
        Errno::EPIPE,
        "send after SHUT_WR",
    )?;
    sys::write(b, b"back").what("the other way still works")?;
    let n = sys::read(a, &mut buf).what("read back")?;
    ensure!(&buf[..n] == b"back", "read back {:?}", &buf[..n]);
    sys::close(b).what("close b")?;
    expect_errno(
        sys::send(a, b"x", MSG_NOSIGNAL),
        Errno::EPIPE,
        "send to closed",
    )?;
    let _ = sys::close(a);
    Ok(())
}

/// SCM_RIGHTS: a file's descriptor sent over a pair and the original closed, the received
/// one reads the file (sharing its offset); SCM_CREDENTIALS with SO_PASSCRED: the sender's
/// pid; a claim of another pid by root goes, a bad descriptor is EBADF; a control area too
/// small for the descriptors sets MSG_CTRUNC.
pub fn unix_pass_descriptors(cx: &Ctx) -> TestResult {
    let path = cx.path("passed");
    let f = sys::open(&path, O_RDWR | O_CREAT | O_TRUNC, 0o644).what("create")?;
    sys::write_all(f, b"hello, passed file").what("write")?;
    sys::lseek(f, 7, 0).what("lseek")?;
    let (a, b) = sys::socketpair(SOCK_STREAM).what("socketpair")?;
    sys::sendmsg(a, b"F", &[(sys::SCM_RIGHTS, Vec::from(f.to_le_bytes()))], 0)
        .what("sendmsg SCM_RIGHTS")?;
    sys::close(f).what("close original")?;
    let mut one = [0u8; 1];
    let (n, cm, _) = sys::recvmsg(b, &mut one, 64, 0).what("recvmsg")?;
    ensure!(n == 1 && one[0] == b'F', "data {n} {one:?}");
    ensure!(
        cm.len() == 1 && cm[0].0 == sys::SCM_RIGHTS && cm[0].1.len() == 4,
        "control {cm:?}"
    );
    let g = int(&cm[0].1);
    let mut buf = [0u8; 32];
    let n = sys::read(g, &mut buf).what("read the passed descriptor")?;
    ensure!(
        &buf[..n] == b"passed file",
        "passed file reads {:?}",
        &buf[..n]
    );
    expect_errno(
        sys::sendmsg(
            a,
            b"x",
            &[(sys::SCM_RIGHTS, Vec::from(999i32.to_le_bytes()))],
            0,
        ),
        Errno::EBADF,
        "SCM_RIGHTS of a closed descriptor",
    )?;
    // Two descriptors into room for none: MSG_CTRUNC, and both closed.
    let mut two = Vec::from(g.to_le_bytes());
    two.extend_from_slice(&g.to_le_bytes());
    sys::sendmsg(a, b"T", &[(sys::SCM_RIGHTS, two)], 0).what("send two")?;
    let (_, cm, fl) = sys::recvmsg(b, &mut one, 16, 0).what("recvmsg, small control")?;
    ensure!(
        cm.is_empty() && fl & 8 != 0,
        "no MSG_CTRUNC: {cm:?} flags {fl:#x}"
    );
    let _ = sys::close(g);
    // Credentials.
    sys::setsockopt(b, SO_PASSCRED, &1i32.to_le_bytes()).what("SO_PASSCRED")?;
    sys::send(a, b"C", 0).what("send for creds")?;
    let (_, cm, _) = sys::recvmsg(b, &mut one, 64, 0).what("recvmsg creds")?;
    let me = sys::getpid();
    ensure!(
        cm.len() == 1 && cm[0].0 == sys::SCM_CREDENTIALS && int(&cm[0].1) == me,
        "credentials {cm:?}, pid {me}"
    );
    let mut claim = Vec::from(me.to_le_bytes());
    claim.extend_from_slice(&0u32.to_le_bytes());
    claim.extend_from_slice(&0u32.to_le_bytes());
    sys::sendmsg(a, b"D", &[(sys::SCM_CREDENTIALS, claim)], 0).what("send own creds")?;
    let (_, cm, _) = sys::recvmsg(b, &mut one, 64, 0).what("recvmsg own creds")?;
    ensure!(cm.len() == 1 && int(&cm[0].1) == me, "claimed creds {cm:?}");
    let _ = sys::close(a);
    let _ = sys::close(b);
    sys::unlink(&path).what("unlink")?;
    Ok(())
}

/// A reader blocked on an empty socket in this process is woken by a writer in another
/// (after 50 ms); with MSG_WAITALL it waits for every byte asked, across two writes; a
/// receive timeout (SO_RCVTIMEO) ends a wait with EAGAIN; a datagram socket bound to an
/// abstract name gets the sender's name with recvfrom.
pub fn unix_blocked_reader_woken(_cx: &Ctx) -> TestResult {
    let (a, b) = sys::socketpair(SOCK_STREAM).what("socketpair")?;
    let pid = sys::fork().what("fork")?;
    if pid == 0 {
        let _ = sys::close(b);
        let t = now_ns();
        while now_ns() - t < 50_000_000 {
            sys::sched_yield();
        }
        let mut code = 0;
        if sys::write(a, b"wake") != Ok(4) {
            code |= 1;
        }
        let t = now_ns();
        while now_ns() - t < 20_000_000 {
            sys::sched_yield();
        }
        if sys::write(a, b" up!") != Ok(4) {
            code |= 2;
        }
        sys::exit(code);
    }
    let _ = sys::close(a);
    let start = now_ns();
    let mut buf = [0u8; 8];
    let n = sys::recv(b, &mut buf, MSG_WAITALL).what("blocking recv MSG_WAITALL")?;
    let waited = now_ns() - start;
    ensure!(&buf[..n] == b"wake up!", "woken with {:?}", &buf[..n]);
    ensure!(
        waited >= 40_000_000,
        "recv returned after {waited} ns, before the write"
    );
    ensure!(
        sys::read(b, &mut buf) == Ok(0),
        "no end of file after the writer exited"
    );
    let (_, st) = sys::waitpid(pid).what("wait")?;
    ensure!(st.exited() && st.exit_code() == 0, "writer: {st:?}");
    let _ = sys::close(b);
    // SO_RCVTIMEO: 30 ms.
    let (c, d) = sys::socketpair(SOCK_DGRAM).what("dgram pair")?;
    let mut tv = Vec::from(0i64.to_le_bytes());
    tv.extend_from_slice(&30_000i64.to_le_bytes());
    sys::setsockopt(d, SO_RCVTIMEO, &tv).what("SO_RCVTIMEO")?;
    let t = now_ns();
    expect_errno(
        sys::recv(d, &mut buf, 0),
        Errno::EAGAIN,
        "recv past SO_RCVTIMEO",
    )?;
    ensure!(
        now_ns() - t >= 25_000_000,
        "timeout after {} ns",
        now_ns() - t
    );
    let _ = sys::close(c);
    let _ = sys::close(d);
    // Datagrams between named sockets.
    let (s1, s2) = (
        sys::socket(sys::AF_UNIX, SOCK_DGRAM, 0).what("dgram 1")?,
        sys::socket(sys::AF_UNIX, SOCK_DGRAM, 0).what("dgram 2")?,
    );
    sys::bind_name(s1, b"\0dbfs-os-testrunner-d1").what("bind abstract 1")?;
    sys::bind_name(s2, b"\0dbfs-os-testrunner-d2").what("bind abstract 2")?;
    sys::send_to(s2, b"dgram", b"\0dbfs-os-testrunner-d1").what("sendto")?;
    let (n, from) = sys::recv_from(s1, &mut buf, 0).what("recvfrom")?;
    ensure!(&buf[..n] == b"dgram", "datagram {:?}", &buf[..n]);
    ensure!(
        from == sys::sockaddr_un(b"\0dbfs-os-testrunner-d2"),
        "from {from:?}"
    );
    let _ = sys::close(s1);
    let _ = sys::close(s2);
    Ok(())
}

/// Bad use: other families are EAFNOSUPPORT (no network stack), unknown types EINVAL, a
/// protocol other than 0 EPROTONOSUPPORT; data calls on an unconnected stream socket are
/// ENOTCONN, accept on a socket not listening EINVAL, connect to no node ENOENT, shutdown
/// with a bad `how` EINVAL, options of another level EOPNOTSUPP and unknown ones
/// ENOPROTOOPT; SO_RCVBUF is doubled as on Linux.
pub fn unix_socket_errors(cx: &Ctx) -> TestResult {
    expect_errno(
        sys::socket(2, SOCK_STREAM, 0),
        Errno::EAFNOSUPPORT,
        "AF_INET",
    )?;
    expect_errno(sys::socket(sys::AF_UNIX, 75, 0), Errno::EINVAL, "type 75")?;
    expect_errno(
        sys::socket(sys::AF_UNIX, SOCK_STREAM, 6),
        Errno::EPROTONOSUPPORT,
        "protocol 6",
    )?;
    let s = sys::socket(sys::AF_UNIX, SOCK_STREAM, 0).what("socket")?;
    let mut buf = [0u8; 4];
    expect_errno(
        sys::recv(s, &mut buf, 0),
        Errno::ENOTCONN,
        "recv unconnected",
    )?;
    expect_errno(
        sys::send(s, b"x", MSG_NOSIGNAL),
        Errno::ENOTCONN,
        "send unconnected",
    )?;
    expect_errno(sys::accept4(s, 0), Errno::EINVAL, "accept not listening")?;
    expect_errno(sys::accept4(s, 0x1234), Errno::EINVAL, "accept4 bad flags")?;
    expect_errno(sys::listen(s, 1), Errno::EINVAL, "listen unbound")?;
    expect_errno(
        sys::connect_name(s, cx.path("nothing").as_bytes()),
        Errno::ENOENT,
        "connect to no node",
    )?;
    expect_errno(sys::shutdown(s, 7), Errno::EINVAL, "shutdown how 7")?;
    expect_errno(sys::shutdown(s, 2), Errno::ENOTCONN, "shutdown unconnected")?;
    expect_errno(
        sys::getsockopt(s, 9999, 4),
        Errno::ENOPROTOOPT,
        "unknown option",
    )?;
    sys::setsockopt(s, SO_RCVBUF, &10000i32.to_le_bytes()).what("SO_RCVBUF")?;
    let v = sys::getsockopt(s, SO_RCVBUF, 4).what("get SO_RCVBUF")?;
    ensure!(int(&v) == 20000, "SO_RCVBUF {}", int(&v));
    expect_errno(
        sys::setsockopt(s, SO_RCVBUF, &[1, 0]),
        Errno::EINVAL,
        "2-byte option",
    )?;
    let f = sys::open(&cx.path("plain"), O_RDWR | O_CREAT, 0o644).what("create")?;
    expect_errno(sys::listen(f, 1), Errno::ENOTSOCK, "listen on a file")?;
    expect_errno(sys::send(f, b"x", 0), Errno::ENOTSOCK, "send on a file")?;
    let _ = sys::close(f);
    let _ = sys::close(s);
    expect_errno(sys::listen(s, 1), Errno::EBADF, "listen on a closed fd")?;
    Ok(())
}
