//! epoll: epoll_create1, epoll_ctl, epoll_pwait and epoll_pwait2.
//!
//! An epoll instance is a node (`anon_inode:[eventpoll]`) holding its interest list: for each
//! (descriptor, open file) pair the events asked for, the user's data, and the state of the
//! edge-triggered and one-shot modes. It holds its files weakly, so an entry goes when the
//! last descriptor of its file closes, as on Linux. Readiness is asked of the files as
//! `poll` asks them (`poll::poll_file`); a waiter with nothing ready sleeps on the poll queue
//! every readiness change wakes, and looks again, so no change between its look and its sleep
//! is lost.
//!
//! Level-triggered entries are reported while ready. An edge-triggered one is reported when
//! it is ready and something happened to its file since it was last reported: for a pipe, a
//! write or the last writer's close (readable side) and a read or the last reader's close
//! (writable side), as Linux's wake-ups; for another file, its becoming ready after a look
//! that found it not ready. A one-shot entry is disabled once reported, until EPOLL_CTL_MOD.
//! EPOLLEXCLUSIVE is accepted with Linux's rules; every waiter is woken (Linux wakes one or
//! more). Regular files and directories cannot be watched (EPERM), as on Linux.

use alloc::sync::Arc;
use alloc::vec::Vec;

use abi::fcntl::O_CLOEXEC;
use abi::Errno;
use vfs::FileType;

use super::args::{copy_in, copy_out, SysResult};
use super::poll::{deadline, poll_file, read_sigmask, wait_loop, with_mask};
use crate::fs::file::OpenFile;
use crate::fs::path::Loc;
use crate::ipc::epoll::*;
use crate::task::with_current;

fn epoll_file(epfd: i32) -> Result<Arc<OpenFile>, Errno> {
    let f = with_current(|p| p.files.fds().get(epfd))?;
    if epoll_of(&f).is_none() {
        return Err(Errno::EINVAL);
    }
    Ok(f)
}

pub fn sys_epoll_create1(flags: u32) -> SysResult {
    if flags & !O_CLOEXEC != 0 {
        return Err(Errno::EINVAL);
    }
    let loc = Loc {
        node: Epoll::new(),
        path: alloc::string::String::from("anon_inode:[eventpoll]"),
        mount: Loc::root()?.mount,
    };
    let f = OpenFile::new(loc, true, false, 0)?;
    with_current(|p| p.files.fds().install(f, flags & O_CLOEXEC != 0)).map(|fd| fd as usize)
}

pub fn sys_epoll_ctl(epfd: i32, op: u32, fd: i32, event: usize) -> SysResult {
    // As Linux: the event is copied first, then the descriptors are looked at.
    let (mut events, data) = if op != EPOLL_CTL_DEL {
        let mut b = [0u8; EVENT_SIZE];
        copy_in(event, &mut b)?;
        (
            u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            u64::from_le_bytes(b[8..16].try_into().map_err(|_| Errno::EFAULT)?),
        )
    } else {
        (0, 0)
    };
    let ep_file = with_current(|p| p.files.fds().get(epfd))?;
    let target = with_current(|p| p.files.fds().get(fd))?;
    if matches!(target.ftype, FileType::Regular | FileType::Directory)
        && epoll_of(&target).is_none()
        && super::stream::stream_of(&target).is_none()
    {
        return Err(Errno::EPERM);
    }
    // No wake-up source can be held (CAP_BLOCK_SUSPEND is not built): dropped, as Linux
    // does for a caller without it.
    events &= !EPOLLWAKEUP;
    if op != EPOLL_CTL_DEL && events & EPOLLEXCLUSIVE != 0 {
        if op == EPOLL_CTL_MOD
            || events & !EXCLUSIVE_OK != 0
            || events & EPOLLONESHOT != 0
            || epoll_of(&target).is_some()
        {
            return Err(Errno::EINVAL);
        }
    }
    let ep = epoll_of(&ep_file).ok_or(Errno::EINVAL)?;
    if Arc::ptr_eq(&ep_file, &target) {
        return Err(Errno::EINVAL);
    }
    if op == EPOLL_CTL_ADD {
        if let Some(inner) = epoll_of(&target) {
            // A loop, or instances nested deeper than Linux allows.
            if inner.reaches(ep, MAX_NESTS + 1) || inner.depth(MAX_NESTS + 1) >= MAX_NESTS {
                return Err(Errno::ELOOP);
            }
        }
    }
    let weak = Arc::downgrade(&target);
    let mut items = ep.items.lock();
    items.retain(|i| i.file.strong_count() > 0);
    let at = items
        .iter()
        .position(|i| i.fd == fd && i.file.ptr_eq(&weak));
    match (op, at) {
        (EPOLL_CTL_ADD, Some(_)) => Err(Errno::EEXIST),
        (EPOLL_CTL_ADD, None) => {
            items.push(Item {
                fd,
                file: weak,
                events: events | EPOLLERR | EPOLLHUP,
                data,
                armed: true,
                seen: [None, None],
                idle: [0, 0],
            });
            drop(items);
            crate::task::wait::poll_wake();
            Ok(0)
        }
        (EPOLL_CTL_DEL, Some(n)) => {
            items.remove(n);
            Ok(0)
        }
        (EPOLL_CTL_MOD, Some(n)) => {
            let item = &mut items[n];
            if item.events & EPOLLEXCLUSIVE != 0 {
                return Err(Errno::EINVAL);
            }
            item.events = events | EPOLLERR | EPOLLHUP;
            item.data = data;
            item.armed = true;
            item.seen = [None, None];
            drop(items);
            crate::task::wait::poll_wake();
            Ok(0)
        }
        (EPOLL_CTL_DEL | EPOLL_CTL_MOD, None) => Err(Errno::ENOENT),
        _ => Err(Errno::EINVAL),
    }
}

/// The wait of epoll_pwait and epoll_pwait2, until `deadline` (None: no limit).
fn wait(
    epfd: i32,
    events: usize,
    maxevents: i32,
    deadline: Option<u64>,
    mask: Option<u64>,
) -> SysResult {
    let ep_file = epoll_file(epfd)?;
    let ep = epoll_of(&ep_file).ok_or(Errno::EINVAL)?;
    let max = maxevents as usize;
    let got = with_mask(mask, || {
        let mut got = Vec::new();
        wait_loop(deadline, || {
            got = ep.collect(max, true, poll_file);
            (!got.is_empty()).then_some(got.len())
        })?;
        Ok::<_, Errno>(got)
    })?;
    let mut raw = alloc::vec![0u8; got.len() * EVENT_SIZE];
    for (i, (ev, data)) in got.iter().enumerate() {
        raw[i * EVENT_SIZE..i * EVENT_SIZE + 4].copy_from_slice(&ev.to_le_bytes());
        raw[i * EVENT_SIZE + 8..(i + 1) * EVENT_SIZE].copy_from_slice(&data.to_le_bytes());
    }
    copy_out(events, &raw)?;
    Ok(got.len())
}

/// Linux's checks before the wait: maxevents (EINVAL), the buffer (EFAULT), then epfd.
fn check_args(events: usize, maxevents: i32) -> Result<(), Errno> {
    if maxevents <= 0 || maxevents as usize > MAX_EVENTS {
        return Err(Errno::EINVAL);
    }
    if !crate::mm::uaccess::range_ok(events, maxevents as usize * EVENT_SIZE) {
        return Err(Errno::EFAULT);
    }
    Ok(())
}

pub fn sys_epoll_pwait(
    epfd: i32,
    events: usize,
    maxevents: i32,
    timeout_ms: i32,
    sigmask: usize,
    size: usize,
) -> SysResult {
    check_args(events, maxevents)?;
    epoll_file(epfd)?;
    let mask = read_sigmask(sigmask, size)?;
    let dl = (timeout_ms >= 0)
        .then(|| crate::arch::time::monotonic_ns().saturating_add(timeout_ms as u64 * 1_000_000));
    wait(epfd, events, maxevents, dl, mask)
}

pub fn sys_epoll_pwait2(
    epfd: i32,
    events: usize,
    maxevents: i32,
    tmo: usize,
    sigmask: usize,
    size: usize,
) -> SysResult {
    check_args(events, maxevents)?;
    epoll_file(epfd)?;
    // A NULL timeout waits without limit.
    let dl = deadline(tmo)?;
    let mask = read_sigmask(sigmask, size)?;
    wait(epfd, events, maxevents, dl, mask)
}
