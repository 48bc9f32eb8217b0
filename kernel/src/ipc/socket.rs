//! Unix-domain sockets (AF_UNIX): stream, datagram and sequenced-packet sockets, their names
//! (a node in a file system, or a name in the abstract namespace), connections and the data
//! path. The system calls (`syscall::socket`) copy user memory and hand this layer kernel
//! buffers; this layer never touches user memory.
//!
//! Model, as Linux's `af_unix`:
//! - Every socket has a receive queue of [`Msg`]s. A sender appends to its peer's queue (a
//!   datagram sender to the queue of the socket it names), so a queue is bounded by the
//!   receiver's `rcvbuf` bytes, each message counted with an overhead of its own as Linux
//!   counts an skb's truesize; a sender that does not fit sleeps on the receiver's queue.
//! - A stream read drains bytes across messages (it stops before a message that carries
//!   descriptors once it has some bytes, so descriptors arrive with their first byte); a
//!   datagram or seqpacket read takes one message, the rest of a long one is dropped.
//! - `connect` to a listening stream/seqpacket socket makes the server's end at once (a new
//!   socket queued on the listener until `accept` takes it) and connects the two; a full
//!   backlog makes the connecter wait (EAGAIN when non-blocking). Data sent before `accept`
//!   waits in the server end's queue.
//! - Closing an end (the last reference to its [`Socket`] dropped) tells the peer: its reads
//!   reach end of file, its writes EPIPE. `shutdown` does the same per direction.
//! - Names live in one table, [`NAMES`], keyed by the bound node's (mount, inode) or by the
//!   abstract name; the entry goes with the socket.
//!
//! Wake-ups: every change to a socket's state (data in or out, a connection, a close or
//! shutdown) wakes the socket's queue, its peer's and the pollers (`task::wait::poll_wake`).
//! Sleepers re-check under the state lock with interrupts off, so no wake-up is lost.
//!
//! Lock rule: at most one socket's state lock is held at a time; never while sleeping,
//! signalling or dropping a socket.

use alloc::collections::{BTreeMap, VecDeque};
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::any::Any;

use abi::Errno;
use vfs::{FileType, Metadata, Node, VfsResult};

use crate::fs::file::OpenFile;
use crate::sync::Mutex;
use crate::task::signal;
use crate::task::wait::WaitQueue;

pub const AF_UNIX: usize = 1;
/// Linux's default and largest socket buffer (net.core.rmem_default / wmem_max).
pub const DEFAULT_BUF: usize = 212_992;
/// What a queued message costs the receive buffer besides its bytes (Linux charges each
/// skb's truesize, some 700 bytes for a small one), so a flood of tiny datagrams fills the
/// queue after hundreds of messages, not hundreds of thousands.
const MSG_OVERHEAD: usize = 512;

/// The receive buffer's bytes in use: the queued bytes and each message's overhead.
fn charged(st: &State) -> usize {
    st.rx_bytes + st.rx.len() * MSG_OVERHEAD
}
/// The smallest buffer SO_RCVBUF/SO_SNDBUF give (Linux's SOCK_MIN_RCVBUF).
pub const MIN_BUF: usize = 2304;
/// Most descriptors one SCM_RIGHTS message carries (Linux's SCM_MAX_FD).
pub const MAX_RIGHTS: usize = 253;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Stream,
    Dgram,
    Seqpacket,
}

impl Kind {
    /// SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET.
    pub fn from_type(ty: usize) -> Option<Kind> {
        match ty {
            1 => Some(Kind::Stream),
            2 => Some(Kind::Dgram),
            5 => Some(Kind::Seqpacket),
            _ => None,
        }
    }
    pub fn as_type(self) -> i32 {
        match self {
            Kind::Stream => 1,
            Kind::Dgram => 2,
            Kind::Seqpacket => 5,
        }
    }
    /// Stream and seqpacket sockets connect to a listener.
    pub fn connection(self) -> bool {
        self != Kind::Dgram
    }
}

/// The credentials a message or a connection carries (`struct ucred`).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Ucred {
    pub pid: u32,
    pub uid: u32,
    pub gid: u32,
}

impl Ucred {
    /// The calling process's (pid, real uid and gid... as Linux: the effective ids).
    pub fn current() -> Ucred {
        let c = crate::task::current_cred();
        Ucred {
            pid: crate::task::current_pid() as u32,
            uid: c.euid,
            gid: c.egid,
        }
    }
}

/// A socket's name: the bytes of `sun_path` as bound (a path without its NUL, or the
/// abstract name with its leading NUL).
pub type Name = Vec<u8>;

/// The key of a bound name in [`NAMES`].
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Key {
    /// A node in a file system: (mount id, inode).
    Node(usize, u64),
    Abstract(Vec<u8>),
}

/// Every bound socket by its name.
static NAMES: Mutex<BTreeMap<Key, Weak<Socket>>> = Mutex::new(BTreeMap::new());

/// The socket bound to `key`, if it is still open.
pub fn lookup(key: &Key) -> Option<Arc<Socket>> {
    NAMES.lock().get(key).and_then(|w| w.upgrade())
}

/// One message in a receive queue.
pub struct Msg {
    pub data: Vec<u8>,
    /// Bytes a stream read has taken already.
    taken: usize,
    /// The sender's name (datagrams: recvfrom's address).
    pub from: Option<Name>,
    /// Descriptors passed (SCM_RIGHTS), handed out with the message's first byte.
    pub rights: Vec<Arc<OpenFile>>,
    pub cred: Ucred,
}

/// What a receive gives back.
pub struct Received {
    /// Bytes copied into the buffer.
    pub len: usize,
    /// The whole message's length (datagram, seqpacket), for MSG_TRUNC.
    pub full: usize,
    pub from: Option<Name>,
    pub rights: Vec<Arc<OpenFile>>,
    pub cred: Option<Ucred>,
}

struct Listen {
    backlog: usize,
    queue: VecDeque<Arc<Socket>>,
}

struct State {
    name: Option<Name>,
    /// Registered in [`NAMES`] under this key (bound by this socket, not inherited by an
    /// accepted end).
    key: Option<Key>,
    listen: Option<Listen>,
    /// The connected peer (stream, seqpacket), or a datagram socket's default destination.
    peer: Option<Weak<Socket>>,
    /// The peer's name as at connect time (getpeername).
    peer_name: Option<Name>,
    /// A stream/seqpacket socket was connected (ENOTCONN before, EPIPE after the peer left).
    connected: bool,
    rx: VecDeque<Msg>,
    rx_bytes: usize,
    /// No more data will come in: the peer closed or shut down its writing side.
    rx_eof: bool,
    /// The peer will take no more data: it closed or shut down its reading side.
    tx_closed: bool,
    shut_rd: bool,
    shut_wr: bool,
    rcvbuf: usize,
    sndbuf: usize,
    passcred: bool,
    reuseaddr: bool,
    /// SO_PEERCRED: the peer's credentials at connect (or listen) time.
    peercred: Option<Ucred>,
    /// Pending SO_ERROR.
    error: Option<Errno>,
    /// Receive and send timeouts (ns, 0: none).
    rcvtimeo: u64,
    sndtimeo: u64,
    /// Counts of events that may make the socket readable / writable (edge-triggered epoll).
    in_events: u64,
    out_events: u64,
}

/// An AF_UNIX socket: the node behind a socket descriptor.
pub struct Socket {
    pub kind: Kind,
    state: Mutex<State>,
    /// Threads waiting for this socket: readers for data, accepters for connections, writers
    /// for room in its queue, connecters for room in its backlog.
    wq: WaitQueue,
    ino: u64,
    /// This socket's own `Arc` (the descriptor layer holds it as a node; calls that connect
    /// or send need the socket itself).
    me: Weak<Socket>,
}

static NEXT_INO: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(1 << 40);

/// How a blocking call waits: not at all (EAGAIN), or until a deadline (monotonic ns; then
/// EAGAIN), or for ever; a signal ends it (EINTR with a timeout, else a restart).
#[derive(Clone, Copy)]
pub struct Wait {
    pub nonblock: bool,
    pub deadline: Option<u64>,
}

impl Wait {
    fn sleep(self, wq: &WaitQueue) -> Result<(), Errno> {
        if self.nonblock {
            return Err(Errno::EAGAIN);
        }
        if self
            .deadline
            .is_some_and(|d| crate::arch::time::monotonic_ns() >= d)
        {
            return Err(Errno::EAGAIN);
        }
        if signal::pending() {
            return Err(if self.deadline.is_some() {
                Errno::EINTR
            } else {
                signal::ERESTARTSYS
            });
        }
        wq.sleep_until(self.deadline);
        Ok(())
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        let st = self.state.get_mut();
        if let Some(key) = st.key.take() {
            let mut names = NAMES.lock();
            if names.get(&key).is_some_and(|w| w.strong_count() == 0) {
                names.remove(&key);
            }
        }
        let peer = st.peer.take().and_then(|w| w.upgrade());
        let kind = self.kind;
        // Unaccepted connections and queued descriptors go after the lock is released.
        let pending = st.listen.take();
        let rx = core::mem::take(&mut st.rx);
        if let Some(p) = peer {
            if kind.connection() {
                let mut ps = p.state.lock();
                ps.rx_eof = true;
                ps.tx_closed = true;
                ps.in_events += 1;
                ps.out_events += 1;
                drop(ps);
            }
            p.wq.wake_all();
        }
        crate::task::wait::poll_wake();
        drop(pending);
        drop(rx);
    }
}

impl Socket {
    pub fn new(kind: Kind) -> Arc<Socket> {
        Arc::new_cyclic(|me| Socket {
            me: me.clone(),
            kind,
            state: Mutex::new(State {
                name: None,
                key: None,
                listen: None,
                peer: None,
                peer_name: None,
                connected: false,
                rx: VecDeque::new(),
                rx_bytes: 0,
                rx_eof: false,
                tx_closed: false,
                shut_rd: false,
                shut_wr: false,
                rcvbuf: DEFAULT_BUF,
                sndbuf: DEFAULT_BUF,
                passcred: false,
                reuseaddr: false,
                peercred: None,
                error: None,
                rcvtimeo: 0,
                sndtimeo: 0,
                in_events: 0,
                out_events: 0,
            }),
            wq: WaitQueue::new(),
            ino: NEXT_INO.fetch_add(1, core::sync::atomic::Ordering::Relaxed),
        })
    }

    /// The socket as an `Arc` (it lives while a caller holds `&self` through one).
    pub fn arc(&self) -> Option<Arc<Socket>> {
        self.me.upgrade()
    }

    /// Wake this socket's sleepers and the pollers.
    fn changed(&self) {
        self.wq.wake_all();
        crate::task::wait::poll_wake();
    }

    fn peer(&self) -> Option<Arc<Socket>> {
        self.state.lock().peer.as_ref().and_then(|w| w.upgrade())
    }

    /// Two connected sockets (socketpair), each with the caller's credentials as its peer's.
    pub fn pair(kind: Kind) -> (Arc<Socket>, Arc<Socket>) {
        let (a, b) = (Socket::new(kind), Socket::new(kind));
        let cred = Ucred::current();
        for (me, other) in [(&a, &b), (&b, &a)] {
            let mut st = me.state.lock();
            st.peer = Some(Arc::downgrade(other));
            st.connected = true;
            st.peercred = Some(cred);
        }
        (a, b)
    }

    pub fn name(&self) -> Option<Name> {
        self.state.lock().name.clone()
    }

    pub fn peer_name(&self) -> Result<Option<Name>, Errno> {
        let st = self.state.lock();
        let live = st.peer.as_ref().is_some_and(|w| w.strong_count() > 0);
        if !live || (self.kind.connection() && !st.connected) {
            return Err(Errno::ENOTCONN);
        }
        Ok(st.peer_name.clone())
    }

    pub fn is_bound(&self) -> bool {
        self.state.lock().name.is_some()
    }

    /// Register `name` under `key` for this socket: EINVAL if it has a name already,
    /// EADDRINUSE if another open socket has the key.
    pub fn bind(self: &Arc<Self>, name: Name, key: Key) -> Result<(), Errno> {
        let mut names = NAMES.lock();
        if names.get(&key).is_some_and(|w| w.strong_count() > 0) {
            return Err(Errno::EADDRINUSE);
        }
        let mut st = self.state.lock();
        if st.name.is_some() {
            return Err(Errno::EINVAL);
        }
        names.insert(key.clone(), Arc::downgrade(self));
        st.name = Some(name);
        st.key = Some(key);
        Ok(())
    }

    /// Bind to a free abstract name of five hex digits (Linux's autobind).
    pub fn autobind(self: &Arc<Self>) -> Result<(), Errno> {
        if self.is_bound() {
            return Ok(());
        }
        static NEXT: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(0);
        for _ in 0..0x10_0000 {
            let n = NEXT.fetch_add(1, core::sync::atomic::Ordering::Relaxed) & 0xf_ffff;
            let mut name = alloc::vec![0u8];
            name.extend_from_slice(alloc::format!("{:05x}", n).as_bytes());
            match self.bind(name.clone(), Key::Abstract(name)) {
                Ok(()) => return Ok(()),
                Err(Errno::EADDRINUSE) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(Errno::ENOSPC)
    }

    /// listen(2): accept connections, at most `backlog` waiting (a listening socket just
    /// gets the new backlog).
    pub fn listen(&self, backlog: usize) -> Result<(), Errno> {
        if !self.kind.connection() {
            return Err(Errno::EOPNOTSUPP);
        }
        let mut st = self.state.lock();
        if st.connected || st.name.is_none() {
            return Err(Errno::EINVAL);
        }
        match &mut st.listen {
            Some(l) => l.backlog = backlog,
            None => {
                st.listen = Some(Listen {
                    backlog,
                    queue: VecDeque::new(),
                });
                st.peercred = Some(Ucred::current());
            }
        }
        drop(st);
        self.changed();
        Ok(())
    }

    pub fn listening(&self) -> bool {
        self.state.lock().listen.is_some()
    }

    /// connect(2) of a stream/seqpacket socket to the listener `target`.
    pub fn connect_stream(self: &Arc<Self>, target: &Arc<Socket>, wait: Wait) -> Result<(), Errno> {
        {
            let st = self.state.lock();
            if st.listen.is_some() {
                return Err(Errno::EINVAL);
            }
            if st.connected {
                return Err(Errno::EISCONN);
            }
        }
        if target.kind != self.kind {
            return Err(Errno::EPROTOTYPE);
        }
        let me = Ucred::current();
        loop {
            let mut ts = target.state.lock();
            let listener_cred = ts.peercred;
            let listener_name = ts.name.clone();
            let Some(l) = ts.listen.as_mut() else {
                return Err(Errno::ECONNREFUSED);
            };
            if l.queue.len() <= l.backlog {
                let server = Socket::new(self.kind);
                {
                    let mut ss = server.state.lock();
                    ss.name = listener_name.clone();
                    ss.peer = Some(Arc::downgrade(self));
                    ss.peer_name = self.name();
                    ss.connected = true;
                    ss.peercred = Some(me);
                }
                l.queue.push_back(server.clone());
                ts.in_events += 1;
                drop(ts);
                {
                    let mut st = self.state.lock();
                    if st.connected {
                        // Another thread connected this socket meanwhile.
                        return Err(Errno::EISCONN);
                    }
                    st.peer = Some(Arc::downgrade(&server));
                    st.peer_name = listener_name;
                    st.connected = true;
                    st.peercred = listener_cred;
                    st.out_events += 1;
                }
                target.changed();
                self.changed();
                return Ok(());
            }
            drop(ts);
            wait.sleep(&target.wq)?;
        }
    }

    /// connect(2) of a datagram socket: `target` becomes the default destination (None:
    /// dissolve the association, AF_UNSPEC).
    pub fn connect_dgram(&self, target: Option<&Arc<Socket>>) -> Result<(), Errno> {
        let mut st = self.state.lock();
        match target {
            Some(t) => {
                if t.kind != self.kind {
                    return Err(Errno::EPROTOTYPE);
                }
                st.peer = Some(Arc::downgrade(t));
                st.peer_name = t.name();
                st.peercred = Some(Ucred::current());
            }
            None => {
                st.peer = None;
                st.peer_name = None;
            }
        }
        st.tx_closed = false;
        Ok(())
    }

    /// accept(2): the next connection, sleeping while there is none.
    pub fn accept(&self, wait: Wait) -> Result<Arc<Socket>, Errno> {
        if !self.kind.connection() {
            return Err(Errno::EOPNOTSUPP);
        }
        loop {
            {
                let mut st = self.state.lock();
                let Some(l) = st.listen.as_mut() else {
                    return Err(Errno::EINVAL);
                };
                if let Some(s) = l.queue.pop_front() {
                    drop(st);
                    // Room in the backlog for a waiting connecter.
                    self.changed();
                    return Ok(s);
                }
            }
            wait.sleep(&self.wq)?;
        }
    }

    /// Put a message into this socket's queue if it fits (`false`: full).
    fn enqueue(&self, st: &mut State, msg: Msg) -> Result<(), Msg> {
        let len = msg.data.len();
        if !st.rx.is_empty() && charged(st) + len > st.rcvbuf {
            return Err(msg);
        }
        st.rx_bytes += len;
        st.rx.push_back(msg);
        st.in_events += 1;
        Ok(())
    }

    /// Send on a connected socket or, for a datagram socket, to `to` (or its default
    /// destination). `data` goes whole (datagram, seqpacket: EMSGSIZE beyond the send
    /// buffer) or, for a stream, in pieces as room appears; the count sent is returned
    /// (short only when a signal or EAGAIN stopped a stream send after some bytes).
    /// EPIPE comes back for a peer gone or shut; the caller raises SIGPIPE.
    pub fn send(
        self: &Arc<Self>,
        data: &[u8],
        to: Option<Arc<Socket>>,
        mut rights: Vec<Arc<OpenFile>>,
        cred: Ucred,
        wait: Wait,
    ) -> Result<usize, Errno> {
        let (target, my_name) = {
            let st = self.state.lock();
            if st.shut_wr {
                return Err(Errno::EPIPE);
            }
            let target = match (self.kind, to) {
                (Kind::Dgram, Some(t)) => t,
                (Kind::Dgram, None) => match &st.peer {
                    Some(w) => w.upgrade().ok_or(Errno::ECONNREFUSED)?,
                    None => return Err(Errno::ENOTCONN),
                },
                (_, Some(_)) if !st.connected => return Err(Errno::EOPNOTSUPP),
                (_, _) => {
                    if !st.connected {
                        return Err(Errno::ENOTCONN);
                    }
                    if st.tx_closed {
                        return Err(Errno::EPIPE);
                    }
                    st.peer
                        .as_ref()
                        .and_then(|w| w.upgrade())
                        .ok_or(Errno::EPIPE)?
                }
            };
            if self.kind != Kind::Stream && data.len() > st.sndbuf.max(DEFAULT_BUF) {
                return Err(Errno::EMSGSIZE);
            }
            (target, st.name.clone())
        };
        if self.kind == Kind::Dgram {
            if target.kind != Kind::Dgram {
                return Err(Errno::EPROTOTYPE);
            }
            // A datagram socket connected to another one takes datagrams only from it.
            let tp = target.peer();
            if tp.is_some_and(|p| !Arc::ptr_eq(&p, self)) {
                return Err(Errno::EPERM);
            }
        }
        if self.kind == Kind::Stream && data.is_empty() {
            return Ok(0);
        }
        let mut done = 0;
        loop {
            // This end's state first, then the target's: never both locks at once (a datagram
            // socket may send to itself).
            let tx_closed = self.state.lock().tx_closed;
            {
                let mut ts = target.state.lock();
                if self.kind.connection() && (ts.shut_rd || tx_closed) {
                    drop(ts);
                    return if done > 0 {
                        Ok(done)
                    } else {
                        Err(Errno::EPIPE)
                    };
                }
                if self.kind == Kind::Dgram && ts.shut_rd {
                    return Err(Errno::EPIPE);
                }
                let room = ts.rcvbuf.saturating_sub(charged(&ts) + MSG_OVERHEAD);
                let piece = if self.kind == Kind::Stream {
                    // A stream piece: what fits, at least a little when the queue is empty.
                    let left = data.len() - done;
                    if ts.rx.is_empty() {
                        left.min(ts.rcvbuf.max(1))
                    } else {
                        left.min(room)
                    }
                } else {
                    data.len()
                };
                let fits = if self.kind == Kind::Stream {
                    piece > 0
                } else {
                    ts.rx.is_empty() || charged(&ts) + piece <= ts.rcvbuf
                };
                if fits {
                    let msg = Msg {
                        data: data[done..done + piece].to_vec(),
                        taken: 0,
                        from: my_name.clone(),
                        rights: core::mem::take(&mut rights),
                        cred,
                    };
                    if self.enqueue(&mut ts, msg).is_ok() {
                        done += piece;
                        drop(ts);
                        target.changed();
                        if done == data.len() {
                            return Ok(done);
                        }
                        continue;
                    }
                }
            }
            if let Err(e) = wait.sleep(&target.wq) {
                return if done > 0 && self.kind == Kind::Stream {
                    Ok(done)
                } else {
                    Err(e)
                };
            }
        }
    }

    /// Receive into `buf`. `peek` leaves the data queued; `waitall` (streams) waits for the
    /// whole buffer unless end of file, a signal or an error comes first.
    pub fn recv(
        &self,
        buf: &mut [u8],
        peek: bool,
        waitall: bool,
        wait: Wait,
    ) -> Result<Received, Errno> {
        let mut out = Received {
            len: 0,
            full: 0,
            from: None,
            rights: Vec::new(),
            cred: None,
        };
        loop {
            {
                let mut st = self.state.lock();
                if self.kind.connection() && !st.connected && st.rx.is_empty() {
                    return Err(Errno::ENOTCONN);
                }
                if self.kind == Kind::Stream {
                    self.take_stream(&mut st, buf, peek, &mut out);
                } else if let Some(m) = st.rx.front_mut() {
                    let n = buf.len().min(m.data.len());
                    buf[..n].copy_from_slice(&m.data[..n]);
                    out.len = n;
                    out.full = m.data.len();
                    out.from = m.from.clone();
                    out.cred = Some(m.cred);
                    if peek {
                        out.rights = m.rights.clone();
                    } else {
                        let m = st.rx.pop_front().expect("front exists");
                        st.rx_bytes -= m.data.len();
                        out.rights = m.rights;
                    }
                    st.out_events += 1;
                    drop(st);
                    self.after_take(peek);
                    return Ok(out);
                }
                let want_more = waitall && !peek && out.len < buf.len();
                let eof = st.rx_eof || st.shut_rd;
                let stream_empty_read = self.kind == Kind::Stream && buf.is_empty();
                if out.len > 0 && (!want_more || eof) || stream_empty_read {
                    drop(st);
                    self.after_take(peek);
                    return Ok(out);
                }
                if eof {
                    return Ok(out);
                }
            }
            if out.len > 0 {
                self.after_take(peek);
            }
            if let Err(e) = wait.sleep(&self.wq) {
                return if out.len > 0 { Ok(out) } else { Err(e) };
            }
        }
    }

    /// A stream read's bytes from the queue into `buf[out.len..]`.
    fn take_stream(&self, st: &mut State, buf: &mut [u8], peek: bool, out: &mut Received) {
        let mut i = 0;
        while out.len < buf.len() && i < st.rx.len() {
            let m = &mut st.rx[i];
            // Descriptors come with their message's first byte, never in the middle of a read.
            if out.len > 0 && !m.rights.is_empty() {
                break;
            }
            let avail = &m.data[m.taken..];
            let n = (buf.len() - out.len).min(avail.len());
            buf[out.len..out.len + n].copy_from_slice(&avail[..n]);
            out.len += n;
            out.cred.get_or_insert(m.cred);
            if peek {
                out.rights.extend(m.rights.iter().cloned());
                i += 1;
                continue;
            }
            out.rights.append(&mut m.rights);
            m.taken += n;
            if m.taken == m.data.len() {
                let m = st.rx.pop_front().expect("message exists");
                st.rx_bytes -= m.data.len();
            }
            // A message that keeps bytes means the buffer is full.
        }
        out.full = out.len;
        if out.len > 0 && !peek {
            st.out_events += 1;
        }
    }

    /// Data was taken: senders waiting for room (on this queue) may go on.
    fn after_take(&self, peek: bool) {
        if !peek {
            self.changed();
            if let Some(p) = self.peer() {
                p.state.lock().out_events += 1;
                p.changed();
            }
        }
    }

    /// shutdown(2): `read`/`write` sides of this end.
    pub fn shutdown(&self, read: bool, write: bool) -> Result<(), Errno> {
        let peer = {
            let mut st = self.state.lock();
            if self.kind.connection() && !st.connected {
                return Err(Errno::ENOTCONN);
            }
            st.shut_rd |= read;
            st.shut_wr |= write;
            st.in_events += 1;
            st.out_events += 1;
            st.peer.as_ref().and_then(|w| w.upgrade())
        };
        if let (Some(p), true) = (&peer, self.kind.connection()) {
            let mut ps = p.state.lock();
            ps.rx_eof |= write;
            ps.tx_closed |= read;
            ps.in_events += 1;
            ps.out_events += 1;
            drop(ps);
            p.changed();
        }
        self.changed();
        Ok(())
    }

    /// poll: (readable, writable, hang-up, error).
    pub fn poll(&self) -> (bool, bool, bool, bool) {
        let st = self.state.lock();
        let rx_closed = st.rx_eof || st.shut_rd;
        let closed_tx = st.shut_wr || st.tx_closed;
        // Linux's unix_poll: both directions shut, or a connection socket never connected.
        let hup = rx_closed && closed_tx
            || self.kind.connection() && !st.connected && st.listen.is_none();
        let readable = !st.rx.is_empty()
            || st.rx_eof
            || st.shut_rd
            || st.listen.as_ref().is_some_and(|l| !l.queue.is_empty());
        let err = st.error.is_some();
        if st.listen.is_some() {
            return (readable, false, false, err);
        }
        let peer = st.peer.as_ref().and_then(|w| w.upgrade());
        let connected = st.connected;
        drop(st);
        let writable = if closed_tx || self.kind.connection() && !connected {
            true
        } else {
            match peer {
                // Writable while the peer's queue is at most three quarters full, as Linux's
                // unix_writable.
                Some(p) => {
                    let ps = p.state.lock();
                    charged(&ps) * 4 <= ps.rcvbuf * 3
                }
                None => !self.kind.connection(),
            }
        };
        (readable, writable, hup, err)
    }

    /// The counts of events that may have made the socket readable and writable.
    pub fn events(&self) -> (u64, u64) {
        let st = self.state.lock();
        (st.in_events, st.out_events)
    }

    /// Bytes waiting (FIONREAD/SIOCINQ): a stream's unread bytes, a datagram's first one.
    pub fn available(&self) -> usize {
        let st = self.state.lock();
        match self.kind {
            Kind::Stream => st.rx.iter().map(|m| m.data.len() - m.taken).sum(),
            _ => st.rx.front().map_or(0, |m| m.data.len()),
        }
    }

    /// SO_ERROR: the pending error, cleared.
    pub fn take_error(&self) -> Option<Errno> {
        self.state.lock().error.take()
    }

    pub fn passcred(&self) -> bool {
        self.state.lock().passcred
    }
    pub fn set_passcred(&self, on: bool) {
        self.state.lock().passcred = on;
    }
    pub fn reuseaddr(&self) -> bool {
        self.state.lock().reuseaddr
    }
    pub fn set_reuseaddr(&self, on: bool) {
        self.state.lock().reuseaddr = on;
    }
    pub fn peercred(&self) -> Option<Ucred> {
        self.state.lock().peercred
    }
    /// (receive buffer, send buffer) in bytes.
    pub fn buffers(&self) -> (usize, usize) {
        let st = self.state.lock();
        (st.rcvbuf, st.sndbuf)
    }
    pub fn set_buffers(&self, rcv: Option<usize>, snd: Option<usize>) {
        let mut st = self.state.lock();
        if let Some(r) = rcv {
            st.rcvbuf = r;
        }
        if let Some(s) = snd {
            st.sndbuf = s;
        }
        drop(st);
        self.changed();
    }
    /// (receive, send) timeouts in ns, 0 for none.
    pub fn timeouts(&self) -> (u64, u64) {
        let st = self.state.lock();
        (st.rcvtimeo, st.sndtimeo)
    }
    pub fn set_timeouts(&self, rcv: Option<u64>, snd: Option<u64>) {
        let mut st = self.state.lock();
        if let Some(r) = rcv {
            st.rcvtimeo = r;
        }
        if let Some(s) = snd {
            st.sndtimeo = s;
        }
    }
}

impl Node for Socket {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn getattr(&self) -> VfsResult<Metadata> {
        let c = crate::task::current_cred();
        let mut m = crate::fs::devfs::meta(self.ino, FileType::Socket, 0o777, 0, 0);
        m.uid = c.euid;
        m.gid = c.egid;
        Ok(m)
    }
}
