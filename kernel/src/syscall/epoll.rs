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

use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::any::Any;

use abi::fcntl::O_CLOEXEC;
use abi::Errno;
use vfs::{FileType, Metadata, Node, VfsResult};

use super::args::{copy_in, copy_out, SysResult};
use super::poll::{deadline, poll_file, read_sigmask, wait_loop, with_mask};
use crate::fs::file::OpenFile;
use crate::fs::path::Loc;
use crate::sync::Mutex;
use crate::task::with_current;

const EPOLLIN: u32 = 0x1;
const EPOLLPRI: u32 = 0x2;
const EPOLLOUT: u32 = 0x4;
const EPOLLERR: u32 = 0x8;
const EPOLLHUP: u32 = 0x10;
const EPOLLRDNORM: u32 = 0x40;
const EPOLLRDBAND: u32 = 0x80;
const EPOLLWRNORM: u32 = 0x100;
const EPOLLWRBAND: u32 = 0x200;
const EPOLLRDHUP: u32 = 0x2000;
const EPOLLEXCLUSIVE: u32 = 1 << 28;
const EPOLLWAKEUP: u32 = 1 << 29;
const EPOLLONESHOT: u32 = 1 << 30;
const EPOLLET: u32 = 1 << 31;
/// The events EPOLLEXCLUSIVE may be combined with.
const EXCLUSIVE_OK: u32 =
    EPOLLIN | EPOLLOUT | EPOLLERR | EPOLLHUP | EPOLLWAKEUP | EPOLLET | EPOLLEXCLUSIVE;
/// The events of the readable side and of the writable side of a file.
const IN_SIDE: u32 = EPOLLIN | EPOLLPRI | EPOLLRDNORM | EPOLLRDBAND | EPOLLRDHUP | EPOLLHUP;
const OUT_SIDE: u32 = EPOLLOUT | EPOLLWRNORM | EPOLLWRBAND | EPOLLERR;

const EPOLL_CTL_ADD: u32 = 1;
const EPOLL_CTL_DEL: u32 = 2;
const EPOLL_CTL_MOD: u32 = 3;

/// Linux's limit of epoll instances inside one another (EP_MAX_NESTS).
const MAX_NESTS: usize = 4;
/// Linux's bound on maxevents (INT_MAX / sizeof(struct epoll_event)).
const MAX_EVENTS: usize = i32::MAX as usize / 16;
/// riscv64's `struct epoll_event`: u32 events, padding, u64 data.
const EVENT_SIZE: usize = 16;

struct Item {
    fd: i32,
    file: Weak<OpenFile>,
    events: u32,
    data: u64,
    /// False once a one-shot entry has been reported.
    armed: bool,
    /// Edge-triggered: the event counts of each side when it was last reported.
    seen: [Option<u64>; 2],
    /// Looks that found a side not ready: the event count of files that keep none.
    idle: [u64; 2],
}

/// An epoll instance's node.
pub struct Epoll {
    items: Mutex<Vec<Item>>,
}

impl Node for Epoll {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn getattr(&self) -> VfsResult<Metadata> {
        Ok(crate::fs::devfs::meta(0, FileType::Regular, 0o600, 0, 0))
    }
}

/// The epoll instance behind an open file, if it is one.
pub fn epoll_of(f: &OpenFile) -> Option<&Epoll> {
    f.loc.node.as_any().downcast_ref::<Epoll>()
}

/// The counts of events of each side of `f` (see `Pipe::events`), for files that keep them.
fn event_counts(f: &OpenFile) -> Option<[u64; 2]> {
    match super::stream::stream_of(f) {
        Some(super::stream::Stream::Pipe(end)) => {
            let (i, o) = end.pipe.events();
            Some([i, o])
        }
        _ => None,
    }
}

impl Epoll {
    /// The files of the live entries (dead ones dropped).
    fn files(&self) -> Vec<Arc<OpenFile>> {
        let mut items = self.items.lock();
        items.retain(|i| i.file.strong_count() > 0);
        items.iter().filter_map(|i| i.file.upgrade()).collect()
    }

    /// How deep epoll instances nest below this one (0: it watches none).
    fn depth(&self, budget: usize) -> usize {
        if budget == 0 {
            return usize::MAX;
        }
        self.files()
            .iter()
            .filter_map(|f| epoll_of(f).map(|e| e.depth(budget - 1)))
            .max()
            .map_or(0, |d| d.saturating_add(1))
    }

    /// Whether `target` is this instance or one it watches, directly or not.
    fn reaches(&self, target: *const Epoll, budget: usize) -> bool {
        if core::ptr::eq(self, target) {
            return true;
        }
        budget > 0
            && self
                .files()
                .iter()
                .any(|f| epoll_of(f).is_some_and(|e| e.reaches(target, budget - 1)))
    }

    /// Whether some entry would be reported now (poll of an epoll descriptor).
    pub fn any_ready(&self) -> bool {
        !self.collect(1, false).is_empty()
    }

    /// Up to `max` ready entries as (events, data); with `commit`, they count as reported
    /// (edge-triggered and one-shot state move on).
    fn collect(&self, max: usize, commit: bool) -> Vec<(u32, u64)> {
        // The entries' files are polled without the list's lock (a file may be an epoll
        // instance whose poll locks its own list).
        let snapshot: Vec<(usize, Arc<OpenFile>, u32)> = {
            let mut items = self.items.lock();
            items.retain(|i| i.file.strong_count() > 0);
            items
                .iter()
                .enumerate()
                .filter(|(_, i)| i.armed)
                .filter_map(|(n, i)| i.file.upgrade().map(|f| (n, f, i.events)))
                .collect()
        };
        let mut out = Vec::new();
        for (n, f, events) in snapshot {
            if out.len() >= max {
                break;
            }
            let rev =
                poll_file(&f, (events & 0xffff) as u16) as u32 & (events | EPOLLERR | EPOLLHUP);
            let counts = event_counts(&f);
            let mut items = self.items.lock();
            let Some(item) = items.get_mut(n) else { break };
            if !item.file.ptr_eq(&Arc::downgrade(&f)) || !item.armed {
                continue;
            }
            let sides = [rev & IN_SIDE, rev & OUT_SIDE];
            let mut report = rev;
            let mut now = [0u64; 2];
            if item.events & EPOLLET != 0 {
                report = 0;
                for s in 0..2 {
                    now[s] = match counts {
                        Some(c) => c[s],
                        None => {
                            if sides[s] == 0 && commit {
                                item.idle[s] += 1;
                            }
                            item.idle[s]
                        }
                    };
                    if sides[s] != 0 && item.seen[s] != Some(now[s]) {
                        report |= sides[s];
                    }
                }
            }
            if report == 0 {
                continue;
            }
            if commit {
                if item.events & EPOLLET != 0 {
                    for s in 0..2 {
                        if report & sides[s] != 0 {
                            item.seen[s] = Some(now[s]);
                        }
                    }
                }
                if item.events & EPOLLONESHOT != 0 {
                    item.armed = false;
                }
            }
            out.push((report, item.data));
        }
        out
    }
}

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
        node: Arc::new(Epoll {
            items: Mutex::new(Vec::new()),
        }),
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
            got = ep.collect(max, true);
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
