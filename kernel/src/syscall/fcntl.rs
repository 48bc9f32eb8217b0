//! fcntl: descriptor flags, status flags (F_SETFL's O_ASYNC starts signal-driven I/O on
//! pipes and FIFOs), record locks (POSIX and OFD, `fs::lock`), the owner and signal of
//! signal-driven I/O (`fs::sigio`), leases (`fs::lease`), pipe sizes and memfd seals.

use alloc::sync::Arc;
use alloc::vec::Vec;

use abi::fcntl::*;
use abi::Errno;

use super::args::{copy_out, SysResult};
use super::fd::file;
use crate::fs::file::OpenFile;
use crate::task::with_current;

/// The byte range `l_whence`/`l_start`/`l_len` of `fl` names in `f`, as first and last byte
/// (Linux's `flock_to_posix_lock`: a negative length reaches back before `l_start`, zero means
/// to the end of the file).
fn lock_range(f: &OpenFile, fl: &Flock) -> Result<(u64, u64), Errno> {
    let base: i64 = match fl.l_whence as u32 {
        SEEK_SET => 0,
        SEEK_CUR => *f.offset.lock() as i64,
        SEEK_END => f.loc.node.getattr()?.size as i64,
        _ => return Err(Errno::EINVAL),
    };
    let mut start = base.checked_add(fl.l_start).ok_or(Errno::EOVERFLOW)?;
    if start < 0 {
        return Err(Errno::EINVAL);
    }
    let end = match fl.l_len {
        0 => i64::MAX,
        len if len > 0 => start.checked_add(len - 1).ok_or(Errno::EOVERFLOW)?,
        len => {
            let end = start - 1;
            start += len;
            if start < 0 {
                return Err(Errno::EINVAL);
            }
            end
        }
    };
    Ok((start as u64, end as u64))
}

/// F_GETLK, F_SETLK, F_SETLKW: POSIX record locks, and their F_OFD_* forms, locks of the
/// open file description (`crate::fs::lock`).
fn fcntl_lock(fd: i32, cmd: u32, arg: usize) -> SysResult {
    use crate::fs::lock::Owner;
    let f = file(fd)?;
    let mut raw = [0u8; Flock::SIZE];
    super::args::copy_in(arg, &mut raw)?;
    let mut fl = Flock::from_bytes(&raw);
    let ofd = matches!(cmd, F_OFD_GETLK | F_OFD_SETLK | F_OFD_SETLKW);
    // Linux: an OFD request's l_pid must be 0.
    if ofd && fl.l_pid != 0 {
        return Err(Errno::EINVAL);
    }
    let (start, end) = lock_range(&f, &fl)?;
    let want = match fl.l_type {
        F_RDLCK => Some(false),
        F_WRLCK => Some(true),
        F_UNLCK => None,
        _ => return Err(Errno::EINVAL),
    };
    let key = f.lock_key()?;
    let owner = if ofd {
        // Only a lock taken marks the description (its last close then looks for them).
        if cmd == F_OFD_GETLK {
            Owner::File(alloc::sync::Arc::as_ptr(&f) as usize)
        } else {
            f.ofd_owner()
        }
    } else {
        Owner::Process(crate::task::current_pid())
    };
    if cmd == F_GETLK || cmd == F_OFD_GETLK {
        let write = want.ok_or(Errno::EINVAL)?;
        match crate::fs::lock::test(key, owner, write, start, end) {
            Some(l) => {
                fl.l_type = if l.write { F_WRLCK } else { F_RDLCK };
                fl.l_whence = SEEK_SET as i16;
                fl.l_start = l.start as i64;
                fl.l_len = if l.end == crate::fs::lock::OFFSET_MAX {
                    0
                } else {
                    (l.end - l.start + 1) as i64
                };
                fl.l_pid = l.owner.l_pid();
            }
            None => fl.l_type = F_UNLCK,
        }
        copy_out(arg, &fl.as_bytes())?;
        return Ok(0);
    }
    match want {
        Some(false) if !f.readable => return Err(Errno::EBADF),
        Some(true) if !f.writable => return Err(Errno::EBADF),
        _ => {}
    }
    crate::fs::lock::set(
        key,
        owner,
        want,
        start,
        end,
        matches!(cmd, F_SETLKW | F_OFD_SETLKW),
    )?;
    Ok(0)
}

/// F_SETFL's command number.
const F_SETFL: u32 = 4;

pub fn sys_fcntl(fd: i32, cmd: u32, arg: usize) -> SysResult {
    // An O_PATH descriptor only names its file: besides dup and the descriptor and status
    // flags' reads, every command is EBADF (Linux's `check_fcntl_cmd`).
    const PATH_CMDS: [u32; 5] = [0, 1030, 1, 2, 3]; // F_DUPFD(_CLOEXEC), F_GETFD/SETFD, F_GETFL
    if !PATH_CMDS.contains(&cmd) && *file(fd)?.status_flags.lock() & O_PATH != 0 {
        return Err(Errno::EBADF);
    }
    if matches!(
        cmd,
        F_GETLK | F_SETLK | F_SETLKW | F_OFD_GETLK | F_OFD_SETLK | F_OFD_SETLKW
    ) {
        return fcntl_lock(fd, cmd, arg);
    }
    const F_DUPFD: u32 = 0;
    const F_GETFD: u32 = 1;
    const F_SETFD: u32 = 2;
    const F_GETFL: u32 = 3;
    const F_DUPFD_CLOEXEC: u32 = 1030;
    const F_SETPIPE_SZ: u32 = 1031;
    const F_GETPIPE_SZ: u32 = 1032;
    const F_CREATED_QUERY: u32 = 1028;
    const F_ADD_SEALS: u32 = 1033;
    const F_GET_SEALS: u32 = 1034;
    const FD_CLOEXEC: usize = 1;
    if matches!(cmd, F_SETPIPE_SZ | F_GETPIPE_SZ) {
        // A pipe's or FIFO's size; EBADF for anything else, as Linux answers.
        let f = file(fd)?;
        let end = f
            .loc
            .node
            .as_any()
            .downcast_ref::<crate::ipc::pipe::PipeEnd>()
            .ok_or(Errno::EBADF)?;
        return if cmd == F_GETPIPE_SZ {
            Ok(end.pipe.capacity())
        } else {
            // Past pipe-max-size needs CAP_SYS_RESOURCE, as Linux's pipe_set_size.
            const CAP_SYS_RESOURCE: u32 = 24;
            let privileged = crate::task::current_cred().caps.has(CAP_SYS_RESOURCE);
            end.pipe.set_capacity(arg & 0xffff_ffff, privileged)
        };
    }
    const F_SETOWN: u32 = 8;
    const F_GETOWN: u32 = 9;
    const F_SETSIG: u32 = 10;
    const F_GETSIG: u32 = 11;
    const F_SETOWN_EX: u32 = 15;
    const F_GETOWN_EX: u32 = 16;
    const F_SETLEASE: u32 = 1024;
    const F_GETLEASE: u32 = 1025;
    if matches!(
        cmd,
        F_SETOWN | F_GETOWN | F_SETSIG | F_GETSIG | F_SETOWN_EX | F_GETOWN_EX
    ) {
        return owner(&*file(fd)?, cmd, arg);
    }
    if cmd == F_SETLEASE {
        let kind = i16::try_from(arg).map_err(|_| Errno::EINVAL)?;
        return set_lease(fd, kind).map(|_| 0);
    }
    if cmd == F_GETLEASE {
        let f = file(fd)?;
        let Ok(key) = f.lock_key() else {
            return Ok(F_UNLCK as usize);
        };
        return Ok(crate::fs::lease::get(key, Arc::as_ptr(&f) as usize) as usize);
    }
    if cmd == F_SETFL {
        return set_status(fd, arg as u32);
    }
    if matches!(cmd, F_ADD_SEALS | F_GET_SEALS) {
        let f = file(fd)?;
        return if cmd == F_ADD_SEALS {
            super::memfd::add_seals(&f, arg)
        } else {
            super::memfd::get_seals(&f)
        };
    }
    with_current(|p| {
        let f = p.files.fds().get(fd)?;
        match cmd {
            F_DUPFD | F_DUPFD_CLOEXEC => {
                if arg >= p.files.fds().limit() {
                    return Err(Errno::EINVAL);
                }
                p.files
                    .fds()
                    .install_from(arg, f, cmd == F_DUPFD_CLOEXEC)
                    .map(|fd| fd as usize)
            }
            // Whether the open that made this description created the file (Linux 6.12).
            F_CREATED_QUERY => Ok(usize::from(
                f.created.load(core::sync::atomic::Ordering::Relaxed),
            )),
            F_GETFD => Ok(if p.files.fds().cloexec(fd)? {
                FD_CLOEXEC
            } else {
                0
            }),
            F_SETFD => p
                .files
                .fds()
                .set_cloexec(fd, arg & FD_CLOEXEC != 0)
                .map(|_| 0),
            F_GETFL => Ok(*f.status_flags.lock() as usize),
            _ => Err(Errno::EINVAL),
        }
    })
}

/// F_SETFL: O_APPEND, O_NONBLOCK, O_DIRECT, O_NOATIME and O_ASYNC; the rest of `flags` is
/// ignored, as Linux's. O_ASYNC on a pipe's or FIFO's end starts (or stops) signal-driven
/// I/O through descriptor `fd`; on other files it is kept and reported, and nothing signals
/// (Linux's answer for files without `fasync`; its terminals and sockets signal, these do
/// not yet).
fn set_status(fd: i32, flags: u32) -> SysResult {
    let f = file(fd)?;
    let settable = O_APPEND | O_NONBLOCK | O_DIRECT | O_NOATIME | O_ASYNC;
    let was = *f.status_flags.lock();
    if (was ^ flags) & O_ASYNC != 0 {
        let node = f.loc.node.as_any();
        if let Some(end) = node.downcast_ref::<crate::ipc::pipe::PipeEnd>() {
            let on = flags & O_ASYNC != 0;
            end.pipe.set_async(&f, fd, end.read, end.write, on)?;
        }
    }
    let mut s = f.status_flags.lock();
    *s = (*s & !settable) | (flags & settable);
    Ok(0)
}

/// F_SETOWN, F_GETOWN, F_SETOWN_EX, F_GETOWN_EX, F_SETSIG, F_GETSIG (`fs::sigio`).
fn owner(f: &OpenFile, cmd: u32, arg: usize) -> SysResult {
    use crate::fs::sigio::Owner;
    const F_SETOWN: u32 = 8;
    const F_SETSIG: u32 = 10;
    const F_GETSIG: u32 = 11;
    const F_SETOWN_EX: u32 = 15;
    const F_GETOWN_EX: u32 = 16;
    const F_OWNER_TID: i32 = 0;
    const F_OWNER_PID: i32 = 1;
    const F_OWNER_PGRP: i32 = 2;
    // F_SETOWN_EX's argument is read before the lock is taken (a fault may sleep).
    let ex = if cmd == F_SETOWN_EX {
        let mut raw = [0u8; 8];
        super::args::copy_in(arg, &mut raw)?;
        Some(raw)
    } else {
        None
    };
    let mut sigio = f.sigio.lock();
    match cmd {
        F_SETOWN => {
            let id = arg as i32;
            let owner = match id {
                0 => Owner::None,
                id if id > 0 => Owner::Process(id as usize),
                id => Owner::Group(id.unsigned_abs() as usize),
            };
            sigio.set_owner(owner).map(|_| 0)
        }
        F_SETSIG => {
            if arg > crate::task::signal::NSIG {
                return Err(Errno::EINVAL);
            }
            sigio.sig = arg as u32;
            Ok(0)
        }
        F_GETSIG => Ok(sigio.sig as usize),
        F_SETOWN_EX => {
            let raw = ex.unwrap_or_default();
            let kind = i32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]]);
            let id = i32::from_le_bytes([raw[4], raw[5], raw[6], raw[7]]);
            let id = usize::try_from(id).map_err(|_| Errno::EINVAL)?;
            let owner = match kind {
                _ if id == 0 && (F_OWNER_TID..=F_OWNER_PGRP).contains(&kind) => Owner::None,
                F_OWNER_TID => Owner::Thread(id),
                F_OWNER_PID => Owner::Process(id),
                F_OWNER_PGRP => Owner::Group(id),
                _ => return Err(Errno::EINVAL),
            };
            sigio.set_owner(owner).map(|_| 0)
        }
        F_GETOWN_EX => {
            let (kind, id) = match sigio.owner {
                Owner::None => (F_OWNER_TID, 0),
                Owner::Thread(t) => (F_OWNER_TID, t),
                Owner::Process(p) => (F_OWNER_PID, p),
                Owner::Group(g) => (F_OWNER_PGRP, g),
            };
            let mut raw = [0u8; 8];
            raw[..4].copy_from_slice(&kind.to_le_bytes());
            raw[4..].copy_from_slice(&(id as i32).to_le_bytes());
            drop(sigio);
            copy_out(arg, &raw)?;
            Ok(0)
        }
        // F_GETOWN: a group as its negated id.
        _ => Ok(match sigio.owner {
            Owner::None => 0,
            Owner::Thread(id) | Owner::Process(id) => id,
            Owner::Group(g) => (g as isize).wrapping_neg() as usize,
        }),
    }
}

/// F_SETLEASE with Linux's checks (`fs::lease` has the rules): EINVAL for anything but a
/// regular file or a lease type, EACCES unless the caller owns the file or has CAP_LEASE,
/// EAGAIN for a read lease on a description that may write or while any description may
/// write the file, and for a write lease while another description has it open. A lease
/// taken makes the caller the description's signal-driven I/O owner, as on Linux.
fn set_lease(fd: i32, kind: i16) -> Result<(), Errno> {
    use crate::fs::lease;
    const CAP_LEASE: u32 = 28;
    let f = file(fd)?;
    if f.ftype != vfs::FileType::Regular {
        return Err(Errno::EINVAL);
    }
    let write = match kind {
        F_RDLCK => false,
        F_WRLCK => true,
        F_UNLCK => return lease::unlock(f.lock_key()?, Arc::as_ptr(&f) as usize),
        _ => return Err(Errno::EINVAL),
    };
    let cred = crate::task::current_cred();
    if cred.fsuid != f.loc.node.getattr()?.uid && !cred.caps.has(CAP_LEASE) {
        return Err(Errno::EACCES);
    }
    if !write && f.writable {
        return Err(Errno::EAGAIN);
    }
    let key = f.lease_key()?;
    let (others, writers) = other_opens(key, &f);
    if (write && others) || (!write && writers) {
        return Err(Errno::EAGAIN);
    }
    let holder = lease::Holder {
        owner: Arc::as_ptr(&f) as usize,
        sigio: Arc::downgrade(&f.sigio),
        fd,
    };
    lease::set(key, holder, write)?;
    let me = crate::task::current_pid();
    let owned = f
        .sigio
        .lock()
        .set_owner(crate::fs::sigio::Owner::Process(me));
    owned
}

/// Whether a description other than `me` has the file `key` open, and whether any (`me`
/// too) may write to it: every process's descriptor table is looked at.
fn other_opens(key: crate::fs::lock::FileKey, me: &Arc<OpenFile>) -> (bool, bool) {
    let (mut others, mut writers) = (false, me.writable);
    for p in crate::task::all_processes() {
        let files: Vec<Arc<OpenFile>> = {
            let mut inner = p.inner.lock();
            let fds = inner.files.fds();
            fds.numbers()
                .into_iter()
                .filter_map(|fd| fds.get(fd).ok())
                .collect()
        };
        for f in files {
            if Arc::ptr_eq(&f, me) || f.ftype != vfs::FileType::Regular {
                continue;
            }
            if f.loc.mount.id == key.mount && f.lock_key().is_ok_and(|k| k == key) {
                others = true;
                writers |= f.writable;
            }
        }
    }
    (others, writers)
}
