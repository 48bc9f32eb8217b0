//! Streams: pipes (pipe2, FIFOs), the terminal, timer and signal descriptors (read only),
//! event descriptors (8-byte reads and writes) and sockets (handed to `socket`), whose reads and writes sleep, honour
//! O_NONBLOCK and can be interrupted by signals; and ioctl.
//!
//! `read`/`write` in `fs.rs` hand a descriptor to [`read`]/[`write`] here when [`stream_of`]
//! says it is one. Data moves through a kernel buffer of at most [`STREAM_CHUNK`] bytes per
//! call (a pipe holds 64 KiB, a terminal line 4 KiB), so no user page is borrowed while the
//! caller sleeps.

use alloc::sync::Arc;

use abi::fcntl::{O_CLOEXEC, O_NONBLOCK};
use abi::Errno;

use super::args::{copy_in, copy_out, SysResult};
use crate::fs::file::OpenFile;
use crate::fs::path::Loc;
use crate::ipc::pipe::{self, PipeEnd};
use crate::mm::uaccess;
use crate::task::with_current;

/// Most bytes one stream read or write moves through the kernel buffer.
const STREAM_CHUNK: usize = 64 * 1024;

/// What kind of stream an open file is.
pub enum Stream<'a> {
    Pipe(&'a PipeEnd),
    Tty,
    Timer(&'a crate::ipc::timerfd::TimerFd),
    Event(&'a crate::ipc::eventfd::EventFd),
    Signal(&'a crate::ipc::signalfd::SignalFd),
    Socket(&'a crate::ipc::socket::Socket),
}

pub fn stream_of(f: &OpenFile) -> Option<Stream<'_>> {
    let node = &*f.loc.node;
    if let Some(p) = node.as_any().downcast_ref::<PipeEnd>() {
        return Some(Stream::Pipe(p));
    }
    if let Some(t) = node.as_any().downcast_ref::<crate::ipc::timerfd::TimerFd>() {
        return Some(Stream::Timer(t));
    }
    if let Some(e) = node.as_any().downcast_ref::<crate::ipc::eventfd::EventFd>() {
        return Some(Stream::Event(e));
    }
    if let Some(s) = node
        .as_any()
        .downcast_ref::<crate::ipc::signalfd::SignalFd>()
    {
        return Some(Stream::Signal(s));
    }
    if let Some(s) = node.as_any().downcast_ref::<crate::ipc::socket::Socket>() {
        return Some(Stream::Socket(s));
    }
    crate::fs::devfs::is_console(node).then_some(Stream::Tty)
}

/// A zeroed kernel buffer of `n` bytes, or ENOMEM when the heap cannot give it (a user
/// program must not be able to abort the kernel by asking for many at once).
fn kernel_buffer(n: usize) -> Result<alloc::vec::Vec<u8>, Errno> {
    crate::mm::heap::try_zeroed(n)
}

fn nonblock(f: &OpenFile) -> bool {
    *f.status_flags.lock() & O_NONBLOCK != 0
}

/// A pipe end open with O_DIRECT writes packets (Linux's packet mode, pipe2(2)).
fn packetized(f: &OpenFile) -> bool {
    *f.status_flags.lock() & abi::fcntl::O_DIRECT != 0
}

/// read(2) on a stream.
pub fn read(f: &OpenFile, s: Stream, va: usize, len: usize) -> SysResult {
    read_with(f, s, va, len, false)
}

/// [`read`], not waiting if `nowait` (preadv2's RWF_NOWAIT) even on a blocking descriptor.
pub fn read_with(f: &OpenFile, s: Stream, va: usize, len: usize, nowait: bool) -> SysResult {
    let nonblock = |f: &OpenFile| nowait || nonblock(f);
    if !f.readable {
        return Err(Errno::EBADF);
    }
    if let Stream::Socket(_) = s {
        return super::socket::read(f, va, len);
    }
    if !uaccess::range_ok(va, len) {
        return Err(Errno::EFAULT);
    }
    let len = len.min(STREAM_CHUNK);
    // Check the buffer first: data taken from a pipe and then not delivered would be lost.
    super::args::with_space(|sp| uaccess::segments(sp, va, len, crate::mm::area::Access::Write))?;
    if let Stream::Pipe(p) = s {
        // Only the bytes the pipe gives, not a zeroed chunk first.
        let got = p.pipe.read_vec(len, nonblock(f))?;
        copy_out(va, &got)?;
        return Ok(got.len());
    }
    let mut buf = kernel_buffer(len)?;
    let n = match s {
        Stream::Tty => crate::tty::read(&mut buf, nonblock(f))?,
        Stream::Timer(t) => {
            // One u64: the expirations since the last read (EINVAL for a smaller buffer).
            if buf.len() < 8 {
                return Err(Errno::EINVAL);
            }
            let n = t.read(nonblock(f))?;
            buf[..8].copy_from_slice(&n.to_le_bytes());
            8
        }
        Stream::Event(e) => {
            if buf.len() < 8 {
                return Err(Errno::EINVAL);
            }
            let n = e.read(nonblock(f))?;
            buf[..8].copy_from_slice(&n.to_le_bytes());
            8
        }
        Stream::Signal(s) => s.read(&mut buf, nonblock(f))?,
        // Both went their own ways above.
        Stream::Pipe(_) | Stream::Socket(_) => return Err(Errno::EINVAL),
    };
    copy_out(va, &buf[..n])?;
    Ok(n)
}

/// write(2) on a stream.
pub fn write(f: &OpenFile, s: Stream, va: usize, len: usize) -> SysResult {
    write_with(f, s, va, len, false)
}

/// [`write`], not waiting if `nowait` (pwritev2's RWF_NOWAIT) even on a blocking descriptor.
pub fn write_with(f: &OpenFile, s: Stream, va: usize, len: usize, nowait: bool) -> SysResult {
    let nonblock = |f: &OpenFile| nowait || nonblock(f);
    if !f.writable {
        return Err(Errno::EBADF);
    }
    if let Stream::Socket(_) = s {
        return super::socket::write(f, va, len);
    }
    if !uaccess::range_ok(va, len) {
        return Err(Errno::EFAULT);
    }
    if let Stream::Event(e) = s {
        // One u64 added to the counter (EINVAL for a smaller buffer).
        if len < 8 {
            return Err(Errno::EINVAL);
        }
        let mut v = [0u8; 8];
        copy_in(va, &mut v)?;
        e.write(u64::from_le_bytes(v), nonblock(f))?;
        return Ok(8);
    }
    let mut done = 0;
    while done < len {
        let n = (len - done).min(STREAM_CHUNK);
        let mut buf = kernel_buffer(n)?;
        copy_in(va + done, &mut buf)?;
        let put = match &s {
            Stream::Pipe(p) => match p.pipe.write(&buf, nonblock(f), packetized(f)) {
                Ok(k) => k,
                Err(_) if done > 0 => break,
                Err(e) => return Err(e),
            },
            Stream::Tty => {
                crate::tty::write(&buf);
                n
            }
            Stream::Timer(_) | Stream::Event(_) | Stream::Signal(_) | Stream::Socket(_) => {
                return Err(Errno::EINVAL)
            }
        };
        done += put;
        if put < n {
            break;
        }
    }
    Ok(done)
}

/// An open file for one pipe end (no path: `/proc/self/fd` would show `pipe:[ino]`).
fn pipe_file(end: Arc<PipeEnd>, flags: u32) -> Result<Arc<OpenFile>, Errno> {
    let root = Loc::root()?;
    let (r, w) = (end.read, end.write);
    let loc = Loc {
        node: end,
        path: alloc::string::String::from("pipe:"),
        mount: root.mount,
    };
    OpenFile::new(loc, r, w, flags & (O_NONBLOCK | abi::fcntl::O_DIRECT))
}

pub fn sys_pipe2(fds: usize, flags: u32) -> SysResult {
    const O_DIRECT: u32 = abi::fcntl::O_DIRECT;
    if flags & !(O_CLOEXEC | O_NONBLOCK | O_DIRECT) != 0 {
        return Err(Errno::EINVAL);
    }
    // Check the result pointer before anything is installed.
    super::args::with_space(|sp| uaccess::segments(sp, fds, 8, crate::mm::area::Access::Write))?;
    let (r, w) = pipe::new_pipe();
    let (rf, wf) = (pipe_file(r, flags)?, pipe_file(w, flags)?);
    let cloexec = flags & O_CLOEXEC != 0;
    let (a, b) = with_current(|p| {
        let a = p.files.fds().install(rf, cloexec)?;
        match p.files.fds().install(wf, cloexec) {
            Ok(b) => Ok((a, b)),
            Err(e) => {
                let _ = p.files.fds().close(a);
                Err(e)
            }
        }
    })?;
    let mut out = [0u8; 8];
    out[..4].copy_from_slice(&a.to_le_bytes());
    out[4..].copy_from_slice(&b.to_le_bytes());
    copy_out(fds, &out)?;
    Ok(0)
}

/// Open a FIFO found by path: its pipe end, in place of the file system's node.
pub fn open_fifo(mut loc: Loc, flags: u32) -> Result<Arc<OpenFile>, Errno> {
    use abi::fcntl::{O_ACCMODE, O_RDONLY, O_RDWR, O_WRONLY};
    let (r, w) = match flags & O_ACCMODE {
        O_RDONLY => (true, false),
        O_WRONLY => (false, true),
        O_RDWR => (true, true),
        _ => return Err(Errno::EINVAL),
    };
    // An open end reached through /proc/<pid>/fd: a FIFO is opened again by its node, a
    // pipe2 pipe gets a new end.
    if let Some(end) = loc.node.as_any().downcast_ref::<PipeEnd>() {
        match end.fifo_node() {
            Some(node) => loc.node = node,
            None => {
                let loc = Loc {
                    node: end.reopen(r, w),
                    path: loc.path,
                    mount: loc.mount,
                };
                return OpenFile::new(loc, r, w, flags & (O_NONBLOCK | O_ACCMODE));
            }
        }
    }
    let end = pipe::open_fifo(
        loc.node.clone(),
        loc.mount.id,
        r,
        w,
        flags & O_NONBLOCK != 0,
    )?;
    let loc = Loc {
        node: end,
        path: loc.path,
        mount: loc.mount,
    };
    OpenFile::new(
        loc,
        r,
        w,
        flags & (O_NONBLOCK | abi::fcntl::O_APPEND | O_ACCMODE),
    )
}

/// The block-device ioctls programs such as mkfs and LTP's device library ask a disk:
/// its size (in bytes, in 512-byte sectors), its sector sizes, whether it is read-only, and
/// BLKFLSBUF (its buffers written back: /dev/vdX has no cache of its own).
fn block_ioctl(d: &crate::fs::devfs::DiskNode, cmd: u32, arg: usize) -> SysResult {
    const BLKROGET: u32 = 0x125e;
    const BLKGETSIZE: u32 = 0x1260;
    const BLKFLSBUF: u32 = 0x1261;
    const BLKSSZGET: u32 = 0x1268;
    const BLKPBSZGET: u32 = 0x127b;
    const BLKGETSIZE64: u32 = 0x8008_1272;
    match cmd {
        BLKGETSIZE64 => copy_out(arg, &d.size_bytes().to_le_bytes())?,
        BLKGETSIZE => copy_out(arg, &(d.size_bytes() / 512).to_le_bytes())?,
        BLKSSZGET | BLKPBSZGET => copy_out(arg, &512i32.to_le_bytes())?,
        BLKROGET => copy_out(arg, &0i32.to_le_bytes())?,
        BLKFLSBUF => {}
        _ => return Err(Errno::ENOTTY),
    }
    Ok(0)
}

pub fn sys_ioctl(fd: i32, cmd: usize, arg: usize) -> SysResult {
    const FIONBIO: u32 = 0x5421;
    const FIOCLEX: u32 = 0x5451;
    const FIONCLEX: u32 = 0x5450;
    let f = super::fd::file_not_path(fd)?;
    let cmd = cmd as u32;
    match cmd {
        FIOCLEX | FIONCLEX => {
            with_current(|p| p.files.fds().set_cloexec(fd, cmd == FIOCLEX))?;
            return Ok(0);
        }
        FIONBIO => {
            let mut b = [0u8; 4];
            copy_in(arg, &mut b)?;
            let mut s = f.status_flags.lock();
            if i32::from_le_bytes(b) != 0 {
                *s |= O_NONBLOCK;
            } else {
                *s &= !O_NONBLOCK;
            }
            return Ok(0);
        }
        _ => {}
    }
    if let Some(d) = f
        .loc
        .node
        .as_any()
        .downcast_ref::<crate::fs::devfs::DiskNode>()
    {
        return block_ioctl(d, cmd, arg);
    }
    // RNDGETENTCNT: the random devices' entropy count (the other random ioctls, which feed
    // or clear the pool, are not built: ENOTTY).
    const RNDGETENTCNT: u32 = 0x8004_5200;
    if cmd == RNDGETENTCNT && crate::fs::devfs::is_random(&*f.loc.node) {
        copy_out(arg, &crate::fs::devfs::ENTROPY_BITS.to_le_bytes())?;
        return Ok(0);
    }
    match stream_of(&f) {
        Some(Stream::Tty) => crate::tty::ioctl(cmd, arg, &copy_in, &copy_out),
        Some(Stream::Pipe(p)) if cmd == 0x541b => {
            // FIONREAD: bytes waiting in the pipe.
            let n = p.pipe.available() as i32;
            copy_out(arg, &n.to_le_bytes())?;
            Ok(0)
        }
        Some(Stream::Socket(s)) if cmd == 0x541b => {
            // FIONREAD (SIOCINQ): a stream's unread bytes, the next datagram's size.
            copy_out(arg, &(s.available() as i32).to_le_bytes())?;
            Ok(0)
        }
        _ => Err(Errno::ENOTTY),
    }
}
