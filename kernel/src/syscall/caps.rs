//! capget, capset and prctl: the capability sets (`task::caps`) and the per-process settings
//! prctl reaches (name, capability bounding set, keep-capabilities flag).
//!
//! capget/capset take Linux's header (`version`, `pid`) and one (version 1, 32-bit sets) or
//! two (versions 2 and 3, 64-bit sets as two halves) data records. An unknown version is
//! EINVAL with version 3 written back into the header; capget with no data pointer only
//! probes the version. capset changes only the caller (another pid: EPERM).
//!
//! prctl answers the options below; any other is EINVAL, as Linux answers an option it
//! does not know.

use abi::Errno;

use super::args::{copy_in, copy_out, SysResult};
use crate::task::caps::{CAP_LAST_CAP, CAP_SETPCAP};
use crate::task::{self, with_current};

const CAP_V1: u32 = 0x1998_0330;
const CAP_V2: u32 = 0x2007_1026;
const CAP_V3: u32 = 0x2008_0522;

/// The header's version: how many 12-byte data records it means, or EINVAL after writing
/// the preferred version (3) back (EFAULT when the header cannot be read or written).
fn records(header: usize) -> Result<usize, Errno> {
    let mut v = [0u8; 4];
    copy_in(header, &mut v)?;
    match u32::from_le_bytes(v) {
        CAP_V1 => Ok(1),
        CAP_V2 | CAP_V3 => Ok(2),
        _ => {
            copy_out(header, &CAP_V3.to_le_bytes())?;
            Err(Errno::EINVAL)
        }
    }
}

fn header_pid(header: usize) -> Result<i32, Errno> {
    let mut p = [0u8; 4];
    copy_in(header + 4, &mut p)?;
    Ok(i32::from_le_bytes(p))
}

pub fn sys_capget(header: usize, data: usize) -> SysResult {
    let n = match records(header) {
        Ok(n) => n,
        // A null data pointer asks only which version the kernel prefers.
        Err(Errno::EINVAL) if data == 0 => return Ok(0),
        Err(e) => return Err(e),
    };
    if data == 0 {
        return Ok(0);
    }
    let pid = header_pid(header)?;
    if pid < 0 {
        return Err(Errno::EINVAL);
    }
    let caps = if pid == 0 || pid as usize == task::current_tid() {
        with_current(|p| p.cred.caps)
    } else {
        let t = task::find_thread(pid as usize).ok_or(Errno::ESRCH)?;
        let caps = t.process.inner.lock().cred.caps;
        caps
    };
    let mut out = [0u8; 24];
    for (i, rec) in out.chunks_mut(12).enumerate().take(n) {
        let half = |set: u64| ((set >> (32 * i)) as u32).to_le_bytes();
        rec[0..4].copy_from_slice(&half(caps.effective));
        rec[4..8].copy_from_slice(&half(caps.permitted));
        rec[8..12].copy_from_slice(&half(caps.inheritable));
    }
    copy_out(data, &out[..12 * n])?;
    Ok(0)
}

pub fn sys_capset(header: usize, data: usize) -> SysResult {
    let n = records(header)?;
    let pid = header_pid(header)?;
    if pid != 0 && pid as usize != task::current_tid() {
        return Err(Errno::EPERM);
    }
    let mut raw = [0u8; 24];
    copy_in(data, &mut raw[..12 * n])?;
    let word = |i: usize, k: usize| {
        let at = 12 * i + 4 * k;
        u32::from_le_bytes([raw[at], raw[at + 1], raw[at + 2], raw[at + 3]]) as u64
    };
    let set = |k: usize| word(0, k) | word(1, k) << 32;
    let (effective, permitted, inheritable) = (set(0), set(1), set(2));
    with_current(|p| {
        if p.cred.caps.set(effective, permitted, inheritable) {
            Ok(0)
        } else {
            Err(Errno::EPERM)
        }
    })
}

const PR_SET_PDEATHSIG: usize = 1;
const PR_GET_PDEATHSIG: usize = 2;
const PR_GET_DUMPABLE: usize = 3;
const PR_SET_DUMPABLE: usize = 4;
const PR_GET_KEEPCAPS: usize = 7;
const PR_SET_KEEPCAPS: usize = 8;
const PR_SET_NAME: usize = 15;
const PR_GET_NAME: usize = 16;
const PR_CAPBSET_READ: usize = 23;
const PR_CAPBSET_DROP: usize = 24;
const PR_SET_TIMERSLACK: usize = 29;
const PR_GET_TIMERSLACK: usize = 30;

/// The length of a task name with its NUL (Linux's TASK_COMM_LEN).
const COMM_LEN: usize = 16;

pub fn sys_prctl(option: usize, arg2: usize) -> SysResult {
    match option {
        PR_SET_PDEATHSIG => {
            if arg2 > crate::task::signal::NSIG {
                return Err(Errno::EINVAL);
            }
            with_current(|p| p.pdeath_signal = arg2 as u32);
            Ok(0)
        }
        PR_GET_PDEATHSIG => {
            let sig = with_current(|p| p.pdeath_signal) as i32;
            copy_out(arg2, &sig.to_le_bytes())?;
            Ok(0)
        }
        // 0 sets the default back; the value is kept and reported (`ProcInner::timer_slack_ns`).
        PR_SET_TIMERSLACK => {
            let ns = if arg2 == 0 {
                crate::task::DEFAULT_TIMER_SLACK_NS
            } else {
                arg2 as u64
            };
            with_current(|p| p.timer_slack_ns = ns);
            Ok(0)
        }
        PR_GET_TIMERSLACK => Ok(with_current(|p| p.timer_slack_ns) as usize),
        PR_GET_DUMPABLE => Ok(usize::from(with_current(|p| p.dumpable))),
        // 0 or 1 (Linux's SUID_DUMP_ROOT, 2, is for the sysctl only: EINVAL here too).
        PR_SET_DUMPABLE => {
            if arg2 > 1 {
                return Err(Errno::EINVAL);
            }
            with_current(|p| p.dumpable = arg2 == 1);
            Ok(0)
        }
        PR_GET_KEEPCAPS => Ok(with_current(|p| p.cred.caps.keep) as usize),
        PR_SET_KEEPCAPS => {
            if arg2 > 1 {
                return Err(Errno::EINVAL);
            }
            with_current(|p| p.cred.caps.keep = arg2 == 1);
            Ok(0)
        }
        PR_SET_NAME => {
            // Up to 15 bytes, ending at the first NUL; the page may end inside the 16.
            let mut name = [0u8; COMM_LEN];
            let mut len = 0;
            while len < COMM_LEN - 1 {
                copy_in(arg2 + len, &mut name[len..len + 1])?;
                if name[len] == 0 {
                    break;
                }
                len += 1;
            }
            let name = alloc::string::String::from_utf8_lossy(&name[..len]).into_owned();
            with_current(|p| p.comm = name);
            Ok(0)
        }
        PR_GET_NAME => {
            let mut out = [0u8; COMM_LEN];
            with_current(|p| {
                let b = p.comm.as_bytes();
                let n = b.len().min(COMM_LEN - 1);
                out[..n].copy_from_slice(&b[..n]);
            });
            copy_out(arg2, &out)?;
            Ok(0)
        }
        PR_CAPBSET_READ => {
            if arg2 > CAP_LAST_CAP as usize {
                return Err(Errno::EINVAL);
            }
            Ok(with_current(|p| p.cred.caps.bounding >> arg2 & 1) as usize)
        }
        PR_CAPBSET_DROP => {
            if arg2 > CAP_LAST_CAP as usize {
                return Err(Errno::EINVAL);
            }
            with_current(|p| {
                if !p.cred.caps.has(CAP_SETPCAP) {
                    return Err(Errno::EPERM);
                }
                p.cred.caps.bounding &= !(1u64 << arg2);
                Ok(0)
            })
        }
        _ => Err(Errno::EINVAL),
    }
}
