//! System V semaphore calls: semget, semop, semtimedop, semctl (`crate::ipc::sem` holds the
//! sets). Arguments are checked in Linux's order, so each bad one gets Linux's errno.

use alloc::vec;
use alloc::vec::Vec;

use abi::Errno;

use super::args::{copy_in, copy_out, SysResult};
use crate::ipc::sem::{self, Field, SemOp};
use crate::ipc::sysv::{IPC64_PERM_SIZE, IPC_64, IPC_INFO, IPC_RMID, IPC_SET, IPC_STAT};
use crate::task;

const GETPID: u32 = 11;
const GETVAL: u32 = 12;
const GETALL: u32 = 13;
const GETNCNT: u32 = 14;
const GETZCNT: u32 = 15;
const SETVAL: u32 = 16;
const SETALL: u32 = 17;
const SEM_STAT: u32 = 18;
const SEM_INFO: u32 = 19;
const SEM_STAT_ANY: u32 = 20;

pub fn sys_semget(key: usize, nsems: usize, flags: usize) -> SysResult {
    sem::get(
        key as i32,
        nsems as i32,
        flags as u32,
        &task::current_cred(),
    )
    .map(|id| id as usize)
}

pub fn sys_semop(id: usize, sops: usize, nsops: usize) -> SysResult {
    sys_semtimedop(id, sops, nsops, 0)
}

/// `semtimedop`: `semop` with a relative `struct timespec` timeout (0: none).
pub fn sys_semtimedop(id: usize, sops: usize, nsops: usize, timeout: usize) -> SysResult {
    let id = id as i32;
    if nsops < 1 || id < 0 {
        return Err(Errno::EINVAL);
    }
    if nsops > sem::SEMOPM {
        return Err(Errno::E2BIG);
    }
    let mut raw = vec![0u8; nsops * 6];
    copy_in(sops, &mut raw)?;
    let ops: Vec<SemOp> = raw
        .chunks_exact(6)
        .map(|b| SemOp {
            num: u16::from_le_bytes([b[0], b[1]]),
            op: i16::from_le_bytes([b[2], b[3]]),
            flags: i16::from_le_bytes([b[4], b[5]]),
        })
        .collect();
    let deadline = if timeout != 0 {
        let mut ts = [0u8; 16];
        copy_in(timeout, &mut ts)?;
        let ns = super::timerfd::read_ns(&ts)?;
        Some(crate::arch::time::monotonic_ns().saturating_add(ns))
    } else {
        None
    };
    let cred = task::current_cred();
    sem::semop(id, &cred, task::current_pid(), &ops, deadline).map(|_| 0)
}

/// `semctl(id, num, cmd, arg)`: `arg` is `union semun` passed by value (an int for SETVAL,
/// else a pointer).
pub fn sys_semctl(id: usize, num: usize, cmd: usize, arg: usize) -> SysResult {
    let cred = task::current_cred();
    let id = id as i32;
    let num = num as i32;
    let field = |f: Field| {
        let num = usize::try_from(num).map_err(|_| Errno::EINVAL)?;
        sem::get_field(id, num, &cred, f)
    };
    match cmd as u32 & !IPC_64 {
        IPC_RMID => sem::remove(id, &cred).map(|_| 0),
        IPC_SET => {
            let mut perm = [0u8; IPC64_PERM_SIZE];
            copy_in(arg, &mut perm)?;
            sem::set_perm(id, &cred, &perm).map(|_| 0)
        }
        IPC_STAT => {
            copy_out(arg, &sem::stat(id, &cred)?)?;
            Ok(0)
        }
        c @ (SEM_STAT | SEM_STAT_ANY) => {
            let index = usize::try_from(id).map_err(|_| Errno::EINVAL)?;
            let (id, ds) = sem::stat_index(index, &cred, c == SEM_STAT_ANY)?;
            copy_out(arg, &ds)?;
            Ok(id as usize)
        }
        c @ (IPC_INFO | SEM_INFO) => {
            let (info, max) = sem::info(c == SEM_INFO);
            copy_out(arg, &info)?;
            Ok(max)
        }
        GETVAL => field(Field::Value),
        GETPID => field(Field::Pid),
        GETNCNT => field(Field::Ncnt),
        GETZCNT => field(Field::Zcnt),
        GETALL => {
            let values = sem::get_all(id, &cred)?;
            let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
            copy_out(arg, &bytes)?;
            Ok(0)
        }
        SETVAL => {
            let num = usize::try_from(num).map_err(|_| Errno::EINVAL)?;
            let value = arg as u32 as i32;
            sem::set_values(id, Some(num), &[value], &cred, task::current_pid()).map(|_| 0)
        }
        SETALL => {
            let n = sem::nsems(id)?;
            let mut raw = vec![0u8; n * 2];
            copy_in(arg, &mut raw)?;
            let values: Vec<i32> = raw
                .chunks_exact(2)
                .map(|b| u16::from_le_bytes([b[0], b[1]]) as i32)
                .collect();
            sem::set_values(id, None, &values, &cred, task::current_pid()).map(|_| 0)
        }
        _ => Err(Errno::EINVAL),
    }
}
