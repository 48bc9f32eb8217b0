//! An epoll instance (the node behind an epoll descriptor): its interest list and the
//! reporting rules of its modes. The system calls are `syscall::epoll`, which gives this the
//! poll of a file (`syscall::poll`), so nested instances are asked as any file is.

use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::any::Any;

use vfs::{FileType, Metadata, Node, VfsResult};

use crate::fs::file::OpenFile;
use crate::sync::Mutex;

/// The poll of one open file: its events among those asked (POLL* bits, as `poll`).
pub type PollFn = fn(&OpenFile, u16) -> u16;

pub const EPOLLIN: u32 = 0x1;
pub const EPOLLPRI: u32 = 0x2;
pub const EPOLLOUT: u32 = 0x4;
pub const EPOLLERR: u32 = 0x8;
pub const EPOLLHUP: u32 = 0x10;
pub const EPOLLRDNORM: u32 = 0x40;
pub const EPOLLRDBAND: u32 = 0x80;
pub const EPOLLWRNORM: u32 = 0x100;
pub const EPOLLWRBAND: u32 = 0x200;
pub const EPOLLRDHUP: u32 = 0x2000;
pub const EPOLLEXCLUSIVE: u32 = 1 << 28;
pub const EPOLLWAKEUP: u32 = 1 << 29;
pub const EPOLLONESHOT: u32 = 1 << 30;
pub const EPOLLET: u32 = 1 << 31;
/// The events EPOLLEXCLUSIVE may be combined with.
pub const EXCLUSIVE_OK: u32 =
    EPOLLIN | EPOLLOUT | EPOLLERR | EPOLLHUP | EPOLLWAKEUP | EPOLLET | EPOLLEXCLUSIVE;
/// The events of the readable side and of the writable side of a file.
const IN_SIDE: u32 = EPOLLIN | EPOLLPRI | EPOLLRDNORM | EPOLLRDBAND | EPOLLRDHUP | EPOLLHUP;
const OUT_SIDE: u32 = EPOLLOUT | EPOLLWRNORM | EPOLLWRBAND | EPOLLERR;

pub const EPOLL_CTL_ADD: u32 = 1;
pub const EPOLL_CTL_DEL: u32 = 2;
pub const EPOLL_CTL_MOD: u32 = 3;

/// Linux's limit of epoll instances inside one another (EP_MAX_NESTS).
pub const MAX_NESTS: usize = 4;
/// Linux's bound on maxevents (INT_MAX / sizeof(struct epoll_event)).
pub const MAX_EVENTS: usize = i32::MAX as usize / 16;
/// riscv64's `struct epoll_event`: u32 events, padding, u64 data.
pub const EVENT_SIZE: usize = 16;

pub struct Item {
    pub fd: i32,
    pub file: Weak<OpenFile>,
    pub events: u32,
    pub data: u64,
    /// False once a one-shot entry has been reported.
    pub armed: bool,
    /// Edge-triggered: the event counts of each side when it was last reported.
    pub seen: [Option<u64>; 2],
    /// Looks that found a side not ready: the event count of files that keep none.
    pub idle: [u64; 2],
}

/// An epoll instance's node.
pub struct Epoll {
    pub items: Mutex<Vec<Item>>,
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
    let node = f.loc.node.as_any();
    let (i, o) = match node.downcast_ref::<super::pipe::PipeEnd>() {
        Some(end) => end.pipe.events(),
        None => node.downcast_ref::<super::socket::Socket>()?.events(),
    };
    Some([i, o])
}

impl Epoll {
    pub fn new() -> Arc<Epoll> {
        Arc::new(Epoll {
            items: Mutex::new(Vec::new()),
        })
    }

    /// The files of the live entries (dead ones dropped).
    fn files(&self) -> Vec<Arc<OpenFile>> {
        let mut items = self.items.lock();
        items.retain(|i| i.file.strong_count() > 0);
        items.iter().filter_map(|i| i.file.upgrade()).collect()
    }

    /// How deep epoll instances nest below this one (0: it watches none).
    pub fn depth(&self, budget: usize) -> usize {
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
    pub fn reaches(&self, target: *const Epoll, budget: usize) -> bool {
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
    pub fn any_ready(&self, poll: PollFn) -> bool {
        !self.collect(1, false, poll).is_empty()
    }

    /// Up to `max` ready entries as (events, data); with `commit`, they count as reported
    /// (edge-triggered and one-shot state move on).
    pub fn collect(&self, max: usize, commit: bool, poll: PollFn) -> Vec<(u32, u64)> {
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
            let rev = poll(&f, (events & 0xffff) as u16) as u32 & (events | EPOLLERR | EPOLLHUP);
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
