//! Scheduling policy calls: sched_setscheduler, sched_getscheduler, sched_setparam,
//! sched_getparam, sched_get_priority_max/min, sched_rr_get_interval, sched_setattr and
//! sched_getattr, with Linux's checks and errnos. The policy is the process's
//! (`task::policy::SchedPolicy`); the scheduler runs every policy round-robin (it records a
//! real-time policy and reports it back, but does not run such a process first).

use alloc::sync::Arc;

use abi::Errno;

use super::args::{copy_in, copy_out, SysResult};
use super::process::{can_nice, may_renice, CAP_SYS_NICE};
use crate::task::policy::{
    SchedPolicy, MAX_RT_PRIO, SCHED_BATCH, SCHED_FIFO, SCHED_IDLE, SCHED_OTHER, SCHED_RR,
};
use crate::task::{self, Process};

/// `SCHED_RESET_ON_FORK`, or'ed into sched_setscheduler's policy.
const SCHED_RESET_ON_FORK: u32 = 0x4000_0000;
/// sched_setattr's flags: SCHED_FLAG_RESET_ON_FORK.
const SCHED_FLAG_RESET_ON_FORK: u64 = 1;
/// `struct sched_attr`'s first published size (SCHED_ATTR_SIZE_VER0) and the size this
/// kernel knows (VER1, with the utilization clamps).
const SCHED_ATTR_SIZE_VER0: usize = 48;
const SCHED_ATTR_SIZE_VER1: usize = 56;

/// The process `pid` names (0: the caller; a thread id names its process). EINVAL for a
/// negative pid, ESRCH for one that does not exist.
fn target(pid: usize) -> Result<Arc<Process>, Errno> {
    if (pid as isize) < 0 {
        return Err(Errno::EINVAL);
    }
    if pid == 0 {
        return Ok(task::current_process());
    }
    task::find(pid)
        .or_else(|| task::find_thread(pid).map(|t| t.process.clone()))
        .ok_or(Errno::ESRCH)
}

fn valid_policy(policy: u32) -> bool {
    matches!(
        policy,
        SCHED_OTHER | SCHED_FIFO | SCHED_RR | SCHED_BATCH | SCHED_IDLE
    )
}

/// Set `p`'s policy to `new` (Linux's `__sched_setscheduler`): the priority must fit the
/// policy (1..=99 real-time, 0 otherwise: EINVAL); without CAP_SYS_NICE a caller may not
/// take a real-time policy or priority beyond its RLIMIT_RTPRIO, leave SCHED_IDLE unless its
/// RLIMIT_NICE allows its nice value, touch another user's process or drop
/// SCHED_RESET_ON_FORK (EPERM). `nice`: the nice value sched_setattr sets with a normal
/// policy.
fn set_policy(p: &Process, new: SchedPolicy, nice: Option<i32>) -> Result<(), Errno> {
    if !valid_policy(new.policy) {
        return Err(Errno::EINVAL);
    }
    let rt = SchedPolicy::is_rt(new.policy);
    if (rt && !(1..=MAX_RT_PRIO).contains(&new.priority)) || (!rt && new.priority != 0) {
        return Err(Errno::EINVAL);
    }
    let cred = task::current_cred();
    let mut t = p.inner.lock();
    if !cred.caps.has(CAP_SYS_NICE) {
        let old = t.sched;
        if let Some(n) = nice.filter(|&n| !rt && n < t.nice) {
            if !can_nice(&cred, &t, n) {
                return Err(Errno::EPERM);
            }
        }
        if rt {
            let limit = t.limits.rtprio.0;
            if new.policy != old.policy && limit == 0 {
                return Err(Errno::EPERM);
            }
            if new.priority > old.priority && u64::from(new.priority) > limit {
                return Err(Errno::EPERM);
            }
        }
        if old.policy == SCHED_IDLE && new.policy != SCHED_IDLE && !can_nice(&cred, &t, t.nice) {
            return Err(Errno::EPERM);
        }
        if !may_renice(&cred, &t.cred) {
            return Err(Errno::EPERM);
        }
        if old.reset_on_fork && !new.reset_on_fork {
            return Err(Errno::EPERM);
        }
    }
    t.sched = new;
    if let Some(n) = nice.filter(|_| !rt) {
        t.nice = n.clamp(-20, 19);
    }
    Ok(())
}

/// The `sched_priority` of a `struct sched_param` at `param` (EINVAL for a null pointer).
fn read_param(param: usize) -> Result<u32, Errno> {
    if param == 0 {
        return Err(Errno::EINVAL);
    }
    let mut b = [0u8; 4];
    copy_in(param, &mut b)?;
    // A negative priority is out of every policy's range.
    Ok(i32::from_le_bytes(b).try_into().unwrap_or(u32::MAX))
}

pub fn sys_sched_setscheduler(pid: usize, policy: usize, param: usize) -> SysResult {
    if param == 0 || (pid as isize) < 0 {
        return Err(Errno::EINVAL);
    }
    let priority = read_param(param)?;
    let p = target(pid)?;
    let policy = policy as u32;
    if (policy as i32) < 0 {
        return Err(Errno::EINVAL);
    }
    let new = SchedPolicy {
        policy: policy & !SCHED_RESET_ON_FORK,
        priority,
        reset_on_fork: policy & SCHED_RESET_ON_FORK != 0,
    };
    set_policy(&p, new, None)?;
    Ok(0)
}

pub fn sys_sched_setparam(pid: usize, param: usize) -> SysResult {
    if param == 0 || (pid as isize) < 0 {
        return Err(Errno::EINVAL);
    }
    let priority = read_param(param)?;
    let p = target(pid)?;
    let old = p.inner.lock().sched;
    set_policy(&p, SchedPolicy { priority, ..old }, None)?;
    Ok(0)
}

pub fn sys_sched_getscheduler(pid: usize) -> SysResult {
    let s = target(pid)?.inner.lock().sched;
    let flag = if s.reset_on_fork {
        SCHED_RESET_ON_FORK
    } else {
        0
    };
    Ok((s.policy | flag) as usize)
}

pub fn sys_sched_getparam(pid: usize, param: usize) -> SysResult {
    if param == 0 || (pid as isize) < 0 {
        return Err(Errno::EINVAL);
    }
    let prio = target(pid)?.inner.lock().sched.priority;
    copy_out(param, &prio.to_le_bytes())?;
    Ok(0)
}

pub fn sys_sched_get_priority_max(policy: usize) -> SysResult {
    match policy as u32 {
        SCHED_FIFO | SCHED_RR => Ok(MAX_RT_PRIO as usize),
        SCHED_OTHER | SCHED_BATCH | SCHED_IDLE => Ok(0),
        _ => Err(Errno::EINVAL),
    }
}

pub fn sys_sched_get_priority_min(policy: usize) -> SysResult {
    match policy as u32 {
        SCHED_FIFO | SCHED_RR => Ok(1),
        SCHED_OTHER | SCHED_BATCH | SCHED_IDLE => Ok(0),
        _ => Err(Errno::EINVAL),
    }
}

/// sched_rr_get_interval: the time slice the scheduler gives the process (its round-robin
/// slice, `task::TIME_SLICE_MS`); 0 for SCHED_FIFO, which runs until it yields.
pub fn sys_sched_rr_get_interval(pid: usize, ts: usize) -> SysResult {
    let policy = target(pid)?.inner.lock().sched.policy;
    let ns = if policy == SCHED_FIFO {
        0
    } else {
        task::TIME_SLICE_MS * 1_000_000
    };
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&(ns / 1_000_000_000).to_le_bytes());
    b[8..].copy_from_slice(&(ns % 1_000_000_000).to_le_bytes());
    copy_out(ts, &b)?;
    Ok(0)
}

/// sched_setattr: `struct sched_attr` (size, policy, flags, nice, priority, then the
/// deadline parameters and utilization clamps, which only SCHED_DEADLINE and clamping use:
/// neither is built, so a policy or flag asking for them is EINVAL).
pub fn sys_sched_setattr(pid: usize, attr: usize, flags: usize) -> SysResult {
    if attr == 0 || (pid as isize) < 0 || flags != 0 {
        return Err(Errno::EINVAL);
    }
    let mut size_b = [0u8; 4];
    copy_in(attr, &mut size_b)?;
    let mut size = u32::from_le_bytes(size_b) as usize;
    if size == 0 {
        size = SCHED_ATTR_SIZE_VER0;
    }
    if !(SCHED_ATTR_SIZE_VER0..=crate::mm::PAGE_SIZE).contains(&size) {
        // Linux writes the size it knows back and answers E2BIG.
        copy_out(attr, &(SCHED_ATTR_SIZE_VER1 as u32).to_le_bytes())?;
        return Err(Errno::E2BIG);
    }
    let mut b = [0u8; SCHED_ATTR_SIZE_VER1];
    let n = size.min(SCHED_ATTR_SIZE_VER1);
    copy_in(attr, &mut b[..n])?;
    // Bytes past what this kernel knows must be zero (E2BIG otherwise).
    if size > SCHED_ATTR_SIZE_VER1 {
        let mut rest = alloc::vec![0u8; size - SCHED_ATTR_SIZE_VER1];
        copy_in(attr + SCHED_ATTR_SIZE_VER1, &mut rest)?;
        if rest.iter().any(|&x| x != 0) {
            copy_out(attr, &(SCHED_ATTR_SIZE_VER1 as u32).to_le_bytes())?;
            return Err(Errno::E2BIG);
        }
    }
    let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
    let policy = u32_at(4);
    let sched_flags = u64::from(u32_at(8)) | u64::from(u32_at(12)) << 32;
    let nice = u32_at(16) as i32;
    let priority = u32_at(20);
    if sched_flags & !SCHED_FLAG_RESET_ON_FORK != 0 || (policy as i32) < 0 {
        return Err(Errno::EINVAL);
    }
    let p = target(pid)?;
    let new = SchedPolicy {
        policy,
        priority,
        reset_on_fork: sched_flags & SCHED_FLAG_RESET_ON_FORK != 0,
    };
    set_policy(&p, new, Some(nice))?;
    Ok(0)
}

/// sched_getattr: the policy, flags, nice value and priority as a `struct sched_attr` of at
/// most `size` bytes (EINVAL for flags, a size below VER0 or above a page).
pub fn sys_sched_getattr(pid: usize, attr: usize, size: usize, flags: usize) -> SysResult {
    if attr == 0
        || (pid as isize) < 0
        || flags != 0
        || !(SCHED_ATTR_SIZE_VER0..=crate::mm::PAGE_SIZE).contains(&size)
    {
        return Err(Errno::EINVAL);
    }
    let p = target(pid)?;
    let (s, nice) = {
        let t = p.inner.lock();
        (t.sched, t.nice)
    };
    let n = size.min(SCHED_ATTR_SIZE_VER1);
    let mut b = [0u8; SCHED_ATTR_SIZE_VER1];
    b[..4].copy_from_slice(&(n as u32).to_le_bytes());
    b[4..8].copy_from_slice(&s.policy.to_le_bytes());
    b[8..16].copy_from_slice(&u64::from(s.reset_on_fork).to_le_bytes());
    let nice = if SchedPolicy::is_rt(s.policy) {
        0
    } else {
        nice
    };
    b[16..20].copy_from_slice(&nice.to_le_bytes());
    b[20..24].copy_from_slice(&s.priority.to_le_bytes());
    copy_out(attr, &b[..n])?;
    Ok(0)
}
