//! Pipes (pipe2) and FIFOs (a named pipe made by mknod/mkfifo in any file system).
//!
//! A [`Pipe`] is a 64 KiB ring with counts of open read and write ends. Each end is a
//! [`PipeEnd`], a VFS node that an `OpenFile` holds like any other, so dup, fork, close-on-exec
//! and the last close (`release`, which drops the end's count) work unchanged. Semantics as on
//! Linux: a read of an empty pipe sleeps while a writer exists and returns 0 (end of file)
//! when none is left; a write sleeps while the pipe is full, writes of at most `PIPE_BUF`
//! bytes are never interleaved with others, and a write with no reader left raises SIGPIPE and
//! fails with EPIPE. `O_NONBLOCK` turns each sleep into EAGAIN. A FIFO's pipe lives in
//! [`FIFOS`], keyed by the node's mount and inode, while any end is open; opening one end
//! waits for the other as Linux does (except O_RDWR, and O_NONBLOCK: a reader opens at once,
//! a writer without a reader gets ENXIO).
//!
//! Lock rule: a pipe's state lock is never held while sleeping or signalling.

use alloc::collections::{BTreeMap, VecDeque};
use alloc::sync::{Arc, Weak};
use core::any::Any;

use abi::Errno;
use vfs::{FileType, Metadata, Node, NodeRef, Timestamp, VfsResult};

use crate::sync::Mutex;
use crate::task::signal;
use crate::task::wait::WaitQueue;

/// Bytes a new pipe holds (Linux's default pipe size); `F_SETPIPE_SZ` changes it per pipe.
pub const PIPE_CAPACITY: usize = 64 * 1024;
/// The largest size `F_SETPIPE_SZ` gives a process without privilege, and the most a new
/// pipe of such a process holds (`/proc/sys/fs/pipe-max-size`; Linux's default, 1 MiB).
static PIPE_MAX_SIZE: core::sync::atomic::AtomicUsize =
    core::sync::atomic::AtomicUsize::new(1024 * 1024);

/// `/proc/sys/fs/pipe-max-size`.
pub fn max_size() -> usize {
    PIPE_MAX_SIZE.load(core::sync::atomic::Ordering::Relaxed)
}

/// Writing `/proc/sys/fs/pipe-max-size` (root, checked by procfs): rounded up as
/// `F_SETPIPE_SZ` rounds (a page at least, else a power of two); EINVAL past 2 GiB.
pub fn set_max_size(size: usize) -> Result<(), Errno> {
    let size = round_size(size)?;
    PIPE_MAX_SIZE.store(size, core::sync::atomic::Ordering::Relaxed);
    Ok(())
}

/// A pipe size as Linux rounds it: a page at least, else a power of two; EINVAL past 2 GiB.
fn round_size(size: usize) -> Result<usize, Errno> {
    const PAGE: usize = 4096;
    let size = if size <= PAGE {
        PAGE
    } else {
        size.checked_next_power_of_two().ok_or(Errno::EINVAL)?
    };
    if size > u32::MAX as usize / 2 + 1 {
        return Err(Errno::EINVAL);
    }
    Ok(size)
}
/// What a new pipe holds: [`PIPE_CAPACITY`], or less when pipe-max-size is lower and the
/// creating process lacks CAP_SYS_RESOURCE (Linux's `alloc_pipe_info`).
fn new_capacity() -> usize {
    const CAP_SYS_RESOURCE: u32 = 24;
    let max = max_size();
    if max < PIPE_CAPACITY && !crate::task::current_cred().caps.has(CAP_SYS_RESOURCE) {
        max
    } else {
        PIPE_CAPACITY
    }
}

/// Writes up to this size are atomic.
pub const PIPE_BUF: usize = 4096;

struct State {
    buf: VecDeque<u8>,
    /// Packets (writes through an O_DIRECT end, Linux's packet mode) among `buf`'s bytes:
    /// each packet's start and end as counts of bytes ever taken in, oldest first. A read
    /// returns at most one packet, and drops what of it does not fit.
    packets: VecDeque<(u64, u64)>,
    /// Bytes taken in so far (where `buf`'s back is) and consumed so far (its front).
    bytes_in: u64,
    bytes_out: u64,
    /// Bytes it may hold (`F_GETPIPE_SZ`).
    capacity: usize,
    readers: usize,
    writers: usize,
    /// Ends ever opened: a FIFO opener waits for this to move, not for the count (an end
    /// opened and closed again while it slept still lets it go, as on Linux).
    reader_opens: u64,
    writer_opens: u64,
    /// Events so far that may make the pipe readable (a write, the last writer's close) and
    /// writable (a read, the last reader's close): edge-triggered epoll reports an end again
    /// only after one of these.
    in_events: u64,
    out_events: u64,
}

/// A description of one of the pipe's ends with O_ASYNC set: told (`fs::sigio`) when the
/// pipe becomes readable (a reading end) or writable (a writing end).
struct Fasync {
    file: Weak<crate::fs::file::OpenFile>,
    /// The descriptor O_ASYNC was set through (`si_fd`).
    fd: i32,
    read: bool,
    write: bool,
}

impl State {
    /// What a read of at most `max` bytes gets from the front (`buf` not empty): the bytes
    /// handed over, and the bytes consumed. A read of a packet consumes all of it; a read of
    /// stream bytes stops where the next packet starts.
    fn readable_part(&self, max: usize) -> (usize, usize) {
        match self.packets.front() {
            Some(&(start, end)) if start <= self.bytes_out => {
                let len = (end - self.bytes_out) as usize;
                (max.min(len), len)
            }
            Some(&(start, _)) => {
                let n = max.min((start - self.bytes_out) as usize);
                (n, n)
            }
            None => {
                let n = max.min(self.buf.len());
                (n, n)
            }
        }
    }

    /// Take `n` bytes off the front, and the packets they end.
    fn consume(&mut self, n: usize) {
        self.buf.drain(..n);
        self.bytes_out += n as u64;
        while self
            .packets
            .front()
            .is_some_and(|&(_, e)| e <= self.bytes_out)
        {
            self.packets.pop_front();
        }
    }
}

pub struct Pipe {
    state: Mutex<State>,
    /// The O_ASYNC descriptions (a leaf lock: taken alone, signals sent after it is let go).
    fasync: Mutex<alloc::vec::Vec<Fasync>>,
    /// Readers waiting for data (or for the last writer to go).
    readable: WaitQueue,
    /// Writers waiting for room, and FIFO openers waiting for the other end.
    writable: WaitQueue,
    ino: u64,
}

static NEXT_INO: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(1);

impl Pipe {
    fn new() -> Arc<Pipe> {
        Arc::new(Pipe {
            state: Mutex::new(State {
                buf: VecDeque::new(),
                packets: VecDeque::new(),
                bytes_in: 0,
                bytes_out: 0,
                capacity: new_capacity(),
                readers: 0,
                writers: 0,
                reader_opens: 0,
                writer_opens: 0,
                in_events: 0,
                out_events: 0,
            }),
            fasync: Mutex::new(alloc::vec::Vec::new()),
            readable: WaitQueue::new(),
            writable: WaitQueue::new(),
            ino: NEXT_INO.fetch_add(1, core::sync::atomic::Ordering::Relaxed),
        })
    }

    fn wake_all(&self) {
        self.readable.wake_all();
        self.writable.wake_all();
        crate::task::wait::poll_wake();
    }

    /// F_SETFL's O_ASYNC on `file`, an open end of this pipe (`read`, `write`: which), set
    /// through descriptor `fd` (`on`) or cleared.
    pub fn set_async(
        &self,
        file: &Arc<crate::fs::file::OpenFile>,
        fd: i32,
        read: bool,
        write: bool,
        on: bool,
    ) -> Result<(), Errno> {
        let mut list = self.fasync.lock();
        list.retain(|a| a.file.strong_count() > 0 && !Weak::ptr_eq(&a.file, &Arc::downgrade(file)));
        if on {
            if crate::mm::heap::admit(core::mem::size_of::<Fasync>()).is_err()
                || list.try_reserve(1).is_err()
            {
                return Err(Errno::ENOMEM);
            }
            list.push(Fasync {
                file: Arc::downgrade(file),
                fd,
                read,
                write,
            });
        }
        Ok(())
    }

    /// Tell the O_ASYNC ends: readers that there is data or an end of file (`readable`),
    /// writers that there is room or no reader (`writable`).
    fn kill_fasync(&self, readable: bool, writable: bool) {
        use crate::task::siginfo::{POLL_IN, POLL_OUT};
        const IN_BAND: i64 = 0x41; // POLLIN | POLLRDNORM
        const OUT_BAND: i64 = 0x104; // POLLOUT | POLLWRNORM
        let mut told = alloc::vec::Vec::new();
        {
            let list = self.fasync.lock();
            if list.is_empty() {
                return;
            }
            for a in list.iter() {
                let Some(f) = a.file.upgrade() else {
                    continue;
                };
                if a.read && readable {
                    told.push((f.clone(), a.fd, POLL_IN, IN_BAND));
                }
                if a.write && writable {
                    told.push((f, a.fd, POLL_OUT, OUT_BAND));
                }
            }
        }
        for (f, fd, code, band) in told {
            let sigio = *f.sigio.lock();
            sigio.notify(fd, code, band);
        }
    }

    /// Read what is there (at most `buf.len()`), sleeping while the pipe is empty and a writer
    /// exists.
    pub fn read(&self, buf: &mut [u8], nonblock: bool) -> Result<usize, Errno> {
        self.take(buf, nonblock, true)
    }

    /// Copy what is there (at most `buf.len()`) without consuming it (tee), sleeping as
    /// [`Pipe::read`] does.
    pub fn peek(&self, buf: &mut [u8], nonblock: bool) -> Result<usize, Errno> {
        self.take(buf, nonblock, false)
    }

    /// Read what is there (at most `max` bytes), sleeping as [`Pipe::read`] does, into a
    /// buffer of just their size: the stream read's path, which needs no zeroed buffer
    /// first. ENOMEM when the kernel heap cannot hold the bytes (nothing is taken then).
    pub fn read_vec(&self, max: usize, nonblock: bool) -> Result<alloc::vec::Vec<u8>, Errno> {
        let mut out = alloc::vec::Vec::new();
        self.wait_for_data(max, nonblock, true, |front, back| {
            let n = front.len() + back.len();
            if crate::mm::heap::admit(n).is_err() || out.try_reserve_exact(n).is_err() {
                return Err(Errno::ENOMEM);
            }
            out.extend_from_slice(front);
            out.extend_from_slice(back);
            Ok(())
        })?;
        Ok(out)
    }

    fn take(&self, buf: &mut [u8], nonblock: bool, consume: bool) -> Result<usize, Errno> {
        self.wait_for_data(buf.len(), nonblock, consume, |front, back| {
            buf[..front.len()].copy_from_slice(front);
            buf[front.len()..front.len() + back.len()].copy_from_slice(back);
            Ok(())
        })
    }

    /// Hand the first `min(max, held)` bytes to `give` (as the ring's two slices, in order),
    /// sleeping while the pipe is empty and a writer exists; consumed if `consume` and `give`
    /// succeeds. 0 for `max` 0 or at end of file.
    fn wait_for_data(
        &self,
        max: usize,
        nonblock: bool,
        consume: bool,
        mut give: impl FnMut(&[u8], &[u8]) -> Result<(), Errno>,
    ) -> Result<usize, Errno> {
        if max == 0 {
            return Ok(0);
        }
        loop {
            {
                let mut st = self.state.lock();
                if !st.buf.is_empty() {
                    let (n, used) = st.readable_part(max);
                    let (a, b) = st.buf.as_slices();
                    let (front, back) = if n <= a.len() {
                        (&a[..n], &b[..0])
                    } else {
                        (a, &b[..n - a.len()])
                    };
                    give(front, back)?;
                    if !consume {
                        return Ok(n);
                    }
                    st.consume(used);
                    st.out_events += 1;
                    drop(st);
                    self.wake_all();
                    self.kill_fasync(false, true);
                    return Ok(n);
                }
                if st.writers == 0 {
                    return Ok(0);
                }
            }
            if nonblock {
                return Err(Errno::EAGAIN);
            }
            if signal::pending() {
                return Err(signal::ERESTARTSYS);
            }
            self.readable.sleep();
        }
    }

    /// Put bytes read from the pipe back at its front, in order (a splice whose other side
    /// took fewer than it was given). The ring may go past its capacity by what was read.
    pub fn unread(&self, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        let mut st = self.state.lock();
        // Put back in front: the ring's bytes rotated behind the new ones (a splice's
        // leftover, rare and at most a chunk).
        st.buf.extend(data);
        st.buf.rotate_right(data.len());
        st.bytes_out -= data.len() as u64;
        st.in_events += 1;
        drop(st);
        self.wake_all();
    }

    /// Wait for room (splice into the pipe): the free bytes, sleeping while the pipe is full
    /// and a reader exists; with no reader left, SIGPIPE and EPIPE as a write.
    pub fn wait_room(&self, nonblock: bool) -> Result<usize, Errno> {
        loop {
            {
                let st = self.state.lock();
                if st.readers == 0 {
                    drop(st);
                    signal::send(&crate::task::current_process(), signal::SIGPIPE);
                    return Err(Errno::EPIPE);
                }
                let room = st.capacity.saturating_sub(st.buf.len());
                if room > 0 {
                    return Ok(room);
                }
            }
            if nonblock {
                return Err(Errno::EAGAIN);
            }
            if signal::pending() {
                return Err(signal::ERESTARTSYS);
            }
            self.writable.sleep();
        }
    }

    /// Write all of `data`, sleeping while the pipe is full; a short count only when a signal
    /// or O_NONBLOCK stops it after some bytes went in. `packet` (a write through an
    /// O_DIRECT end): the bytes go in as packets of at most `PIPE_BUF` each.
    pub fn write(&self, data: &[u8], nonblock: bool, packet: bool) -> Result<usize, Errno> {
        if data.is_empty() {
            return Ok(0); // as Linux: before looking at the readers
        }
        let mut done = 0;
        loop {
            {
                let mut st = self.state.lock();
                if st.readers == 0 {
                    drop(st);
                    signal::send_from_current(&crate::task::current_process(), signal::SIGPIPE);
                    return if done > 0 {
                        Ok(done)
                    } else {
                        Err(Errno::EPIPE)
                    };
                }
                let room = st.capacity.saturating_sub(st.buf.len());
                let left = data.len() - done;
                // Small writes go in whole or not at all.
                let n = if left <= PIPE_BUF && room < left {
                    0
                } else {
                    room.min(left)
                };
                if n > 0 {
                    // The ring grows as it fills; a kernel heap that cannot grow it is ENOMEM
                    // for this write, never an abort.
                    if crate::mm::heap::admit(n).is_err() || st.buf.try_reserve(n).is_err() {
                        return if done > 0 {
                            Ok(done)
                        } else {
                            Err(Errno::ENOMEM)
                        };
                    }
                    if packet
                        && (crate::mm::heap::admit(n.div_ceil(PIPE_BUF) * 16).is_err()
                            || st.packets.try_reserve(n.div_ceil(PIPE_BUF)).is_err())
                    {
                        return if done > 0 {
                            Ok(done)
                        } else {
                            Err(Errno::ENOMEM)
                        };
                    }
                    st.buf.extend(&data[done..done + n]);
                    let start = st.bytes_in;
                    st.bytes_in += n as u64;
                    if packet {
                        let mut at = start;
                        while at < st.bytes_in {
                            let end = (at + PIPE_BUF as u64).min(st.bytes_in);
                            st.packets.push_back((at, end));
                            at = end;
                        }
                    }
                    st.in_events += 1;
                    done += n;
                    drop(st);
                    self.wake_all();
                    self.kill_fasync(true, false);
                    if done == data.len() {
                        return Ok(done);
                    }
                    continue;
                }
            }
            if nonblock {
                return if done > 0 {
                    Ok(done)
                } else {
                    Err(Errno::EAGAIN)
                };
            }
            if signal::pending() {
                return if done > 0 {
                    Ok(done)
                } else {
                    Err(signal::ERESTARTSYS)
                };
            }
            self.writable.sleep();
        }
    }

    /// `F_GETPIPE_SZ`: the bytes it may hold.
    pub fn capacity(&self) -> usize {
        self.state.lock().capacity
    }

    /// `F_SETPIPE_SZ`: hold `size` bytes, rounded up as Linux rounds (a page at least, else
    /// a power of two); returns the size set. EINVAL when no size fits, EPERM above
    /// [`max_size`] without privilege (`privileged`), EBUSY if more than that is in it.
    pub fn set_capacity(&self, size: usize, privileged: bool) -> Result<usize, Errno> {
        let size = round_size(size)?;
        if size > max_size() && !privileged {
            return Err(Errno::EPERM);
        }
        let mut st = self.state.lock();
        if st.buf.len() > size {
            return Err(Errno::EBUSY);
        }
        st.capacity = size;
        drop(st);
        self.wake_all();
        Ok(size)
    }

    /// Bytes waiting to be read (FIONREAD).
    pub fn available(&self) -> usize {
        self.state.lock().buf.len()
    }

    /// poll: (readable, writable, hung up / error).
    pub fn poll(&self, reading: bool, writing: bool) -> (bool, bool, bool) {
        let st = self.state.lock();
        // At its end (no writer, nothing left) a read end is not readable but hung up, as
        // Linux reports it: POLLHUP alone (select and epoll count the hang-up as readable).
        let r = reading && !st.buf.is_empty();
        // Writable, as Linux's pipe of page-sized slots, while a page's worth is free (all of
        // a pipe smaller than a page: empty).
        let w =
            writing && (st.readers == 0 || st.buf.len() + PIPE_BUF.min(st.capacity) <= st.capacity);
        let hup = reading && st.writers == 0;
        let err = writing && st.readers == 0;
        (r, w, hup || err)
    }

    /// The counts of events that may have made the pipe readable and writable (see
    /// `State::in_events`).
    pub fn events(&self) -> (u64, u64) {
        let st = self.state.lock();
        (st.in_events, st.out_events)
    }

    fn open_end(self: &Arc<Self>, read: bool, write: bool) {
        let mut st = self.state.lock();
        if read {
            st.readers += 1;
            st.reader_opens += 1;
        }
        if write {
            st.writers += 1;
            st.writer_opens += 1;
        }
    }

    fn close_end(&self, read: bool, write: bool) {
        {
            let mut st = self.state.lock();
            if read {
                st.readers -= 1;
                st.out_events += 1;
            }
            if write {
                st.writers -= 1;
                st.in_events += 1;
            }
        }
        self.wake_all();
        self.kill_fasync(write, read);
    }
}

/// One open end of a pipe (or both, for a FIFO opened O_RDWR).
pub struct PipeEnd {
    pub pipe: Arc<Pipe>,
    pub read: bool,
    pub write: bool,
    /// A FIFO's node in its file system (its attributes are the FIFO's); `None` for pipe2.
    backing: Option<NodeRef>,
    /// The FIFO's key in [`FIFOS`].
    fifo_key: Option<(usize, u64)>,
}

impl Drop for PipeEnd {
    fn drop(&mut self) {
        self.pipe.close_end(self.read, self.write);
        if let Some(key) = self.fifo_key {
            let mut t = FIFOS.lock();
            if t.get(&key).is_some_and(|w| w.strong_count() == 0) {
                t.remove(&key);
            }
        }
    }
}

impl Node for PipeEnd {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn getattr(&self) -> VfsResult<Metadata> {
        if let Some(b) = &self.backing {
            return b.getattr();
        }
        Ok(Metadata {
            ino: self.pipe.ino,
            ftype: FileType::Fifo,
            perm: 0o600,
            nlink: 1,
            uid: crate::task::with_current(|p| p.cred.euid),
            gid: crate::task::with_current(|p| p.cred.egid),
            size: 0,
            blocks: 0,
            blksize: PIPE_BUF as u32,
            rdev: 0,
            atime: Timestamp::default(),
            mtime: Timestamp::default(),
            ctime: Timestamp::default(),
        })
    }
    fn setattr(&self, attr: &vfs::SetAttr) -> VfsResult<Metadata> {
        match &self.backing {
            Some(b) => b.setattr(attr),
            None => self.getattr(),
        }
    }
    // The syscall layer reads and writes pipes through `Pipe::read`/`write` (with their
    // errno); a VFS-typed caller that reaches these instead sees any failure as EIO.
    fn read_at(&self, _offset: u64, buf: &mut [u8]) -> VfsResult<usize> {
        self.pipe.read(buf, false).map_err(|_| vfs::VfsError::Io)
    }
    fn write_at(&self, _offset: u64, buf: &[u8]) -> VfsResult<usize> {
        self.pipe
            .write(buf, false, false)
            .map_err(|_| vfs::VfsError::Io)
    }
}

/// A new pipe: (read end, write end) nodes.
pub fn new_pipe() -> (Arc<PipeEnd>, Arc<PipeEnd>) {
    let pipe = Pipe::new();
    pipe.open_end(true, false);
    pipe.open_end(false, true);
    let r = Arc::new(PipeEnd {
        pipe: pipe.clone(),
        read: true,
        write: false,
        backing: None,
        fifo_key: None,
    });
    let w = Arc::new(PipeEnd {
        pipe,
        read: false,
        write: true,
        backing: None,
        fifo_key: None,
    });
    (r, w)
}

impl PipeEnd {
    /// The FIFO's node in its file system; `None` for a pipe made by pipe2.
    pub fn fifo_node(&self) -> Option<NodeRef> {
        self.backing.clone()
    }

    /// A new end of this pipe2 pipe, for reading and/or writing (an open of
    /// `/proc/<pid>/fd/<n>`, which on Linux opens the pipe's inode again).
    pub fn reopen(&self, read: bool, write: bool) -> Arc<PipeEnd> {
        self.pipe.open_end(read, write);
        self.pipe.wake_all();
        Arc::new(PipeEnd {
            pipe: self.pipe.clone(),
            read,
            write,
            backing: None,
            fifo_key: None,
        })
    }
}

/// The pipes of FIFOs with an open end, by (mount id, inode).
static FIFOS: Mutex<BTreeMap<(usize, u64), Weak<Pipe>>> = Mutex::new(BTreeMap::new());

/// Open the FIFO `node` (of mount `mount_id`) for reading and/or writing: its end, after
/// waiting for the other side as Linux does.
pub fn open_fifo(
    node: NodeRef,
    mount_id: usize,
    read: bool,
    write: bool,
    nonblock: bool,
) -> Result<Arc<PipeEnd>, Errno> {
    let ino = node.getattr()?.ino;
    let key = (mount_id, ino);
    let pipe = {
        let mut t = FIFOS.lock();
        match t.get(&key).and_then(|w| w.upgrade()) {
            Some(p) => p,
            None => {
                let p = Pipe::new();
                t.insert(key, Arc::downgrade(&p));
                p
            }
        }
    };
    if write && !read && nonblock && pipe.state.lock().readers == 0 {
        return Err(Errno::ENXIO);
    }
    let (seen_r, seen_w) = {
        let st = pipe.state.lock();
        (st.reader_opens, st.writer_opens)
    };
    let end = Arc::new(PipeEnd {
        pipe: pipe.clone(),
        read,
        write,
        backing: Some(node),
        fifo_key: Some(key),
    });
    pipe.open_end(read, write);
    pipe.wake_all();
    if read && write || nonblock {
        return Ok(end);
    }
    // Wait for the other side (a reader for a writer, a writer for a reader).
    loop {
        {
            let st = pipe.state.lock();
            let other = if read {
                st.writers > 0 || st.writer_opens > seen_w
            } else {
                st.readers > 0 || st.reader_opens > seen_r
            };
            if other {
                return Ok(end);
            }
        }
        if signal::pending() {
            return Err(signal::ERESTARTSYS); // `end` drops: the count goes back
        }
        pipe.writable.sleep();
    }
}
