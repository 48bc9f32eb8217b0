//! mlock, mlock2, munlock, mlockall, munlockall and mmap's MAP_LOCKED: Linux's checks
//! (CAP_IPC_LOCK, RLIMIT_MEMLOCK, flags) in front of the address space's locks
//! (`mm::mlock`).

use abi::Errno;

use super::args::SysResult;
use crate::mm::area::Lock;
use crate::mm::{page_ceil, page_floor, PAGE_SIZE};
use crate::task::ProcInner;

/// CAP_IPC_LOCK: lock memory without RLIMIT_MEMLOCK's bound.
const CAP_IPC_LOCK: u32 = 14;
/// mlock2's flag: lock the pages as they are faulted in.
const MLOCK_ONFAULT: usize = 1;
const MCL_CURRENT: usize = 1;
const MCL_FUTURE: usize = 2;
const MCL_ONFAULT: usize = 4;

/// The most pages the caller may have locked (None: no bound, CAP_IPC_LOCK); EPERM when its
/// RLIMIT_MEMLOCK is 0 and it lacks the capability (Linux's `can_do_mlock`).
fn lock_limit(p: &ProcInner) -> Result<Option<usize>, Errno> {
    if p.cred.caps.has(CAP_IPC_LOCK) {
        return Ok(None);
    }
    let limit = p.limits.memlock.0;
    if limit == 0 {
        return Err(Errno::EPERM);
    }
    Ok(Some(
        (limit / PAGE_SIZE as u64).min(usize::MAX as u64) as usize
    ))
}

/// The pages [start, end) that `addr`, `len` name (the address need not be aligned; the
/// range is widened to whole pages). EINVAL when it wraps around.
fn page_range(addr: usize, len: usize) -> Result<(usize, usize), Errno> {
    let end = addr.checked_add(len).ok_or(Errno::EINVAL)?;
    if end > usize::MAX - PAGE_SIZE {
        return Err(Errno::EINVAL);
    }
    Ok((page_floor(addr), page_ceil(end)))
}

fn lock_range(addr: usize, len: usize, how: Lock) -> SysResult {
    crate::task::with_current(|p| {
        let limit = lock_limit(p)?;
        let (start, end) = page_range(addr, len)?;
        if let Some(limit) = limit {
            let s = &p.space;
            let after = s.locked_bytes() + (end - start) - s.locked_bytes_in(start, end);
            if after / PAGE_SIZE > limit {
                return Err(Errno::ENOMEM);
            }
        }
        p.space.set_lock(start, end, how)
    })?;
    Ok(0)
}

pub fn sys_mlock(addr: usize, len: usize) -> SysResult {
    lock_range(addr, len, Lock::Populated)
}

pub fn sys_mlock2(addr: usize, len: usize, flags: usize) -> SysResult {
    if flags & !MLOCK_ONFAULT != 0 {
        return Err(Errno::EINVAL);
    }
    let how = if flags & MLOCK_ONFAULT != 0 {
        Lock::OnFault
    } else {
        Lock::Populated
    };
    lock_range(addr, len, how)
}

pub fn sys_munlock(addr: usize, len: usize) -> SysResult {
    let (start, end) = page_range(addr, len)?;
    crate::task::with_current(|p| p.space.set_lock(start, end, Lock::None))?;
    Ok(0)
}

/// mlockall: MCL_CURRENT locks every area now (ENOMEM past RLIMIT_MEMLOCK), MCL_FUTURE
/// every area mapped from now on; MCL_ONFAULT with either locks pages as they are touched.
pub fn sys_mlockall(flags: usize) -> SysResult {
    if flags == 0 || flags & !(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT) != 0 || flags == MCL_ONFAULT
    {
        return Err(Errno::EINVAL);
    }
    let how = if flags & MCL_ONFAULT != 0 {
        Lock::OnFault
    } else {
        Lock::Populated
    };
    crate::task::with_current(|p| {
        let limit = lock_limit(p)?;
        if flags & MCL_CURRENT != 0 && limit.is_some_and(|l| p.space.mapped_bytes() / PAGE_SIZE > l)
        {
            return Err(Errno::ENOMEM);
        }
        p.space.lock_future = if flags & MCL_FUTURE != 0 {
            how
        } else {
            Lock::None
        };
        if flags & MCL_CURRENT != 0 {
            p.space.set_lock_all(how)?;
        }
        Ok(())
    })?;
    Ok(0)
}

pub fn sys_munlockall() -> SysResult {
    crate::task::with_current(|p| {
        p.space.lock_future = Lock::None;
        p.space.set_lock_all(Lock::None)
    })?;
    Ok(0)
}

/// How a new mapping of `len` bytes is locked (MAP_LOCKED, or mlockall's MCL_FUTURE), after
/// the check Linux's `mlock_future_ok` makes: EAGAIN when it would pass RLIMIT_MEMLOCK.
pub fn lock_for_new(map_locked: bool, len: usize) -> Result<Lock, Errno> {
    crate::task::with_current(|p| {
        let how = match p.space.lock_future {
            Lock::None if map_locked => Lock::Populated,
            how => how,
        };
        if how == Lock::None {
            return Ok(how);
        }
        if let Some(limit) = lock_limit(p).map_err(|_| Errno::EAGAIN)? {
            if (p.space.locked_bytes() + page_ceil(len)) / PAGE_SIZE > limit {
                return Err(Errno::EAGAIN);
            }
        }
        Ok(how)
    })
}

/// Lock the new mapping [addr, addr + len) as `how` says; the pages are faulted in as far as
/// memory allows (Linux ignores a failure to populate here).
pub fn lock_new(addr: usize, len: usize, how: Lock) {
    if how == Lock::None {
        return;
    }
    let _ = crate::task::with_current(|p| p.space.set_lock(addr, addr + page_ceil(len), how));
}
