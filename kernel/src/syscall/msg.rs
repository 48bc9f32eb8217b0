//! System V message queue calls: msgget, msgsnd, msgrcv, msgctl (`crate::ipc::msg` holds the
//! queues). Arguments are checked in Linux's order, so each bad one gets Linux's errno.

use alloc::vec;

use abi::Errno;

use super::args::{copy_in, copy_out, SysResult};
use crate::ipc::msg;
use crate::ipc::sysv::{IPC64_PERM_SIZE, IPC_64, IPC_INFO, IPC_RMID, IPC_SET, IPC_STAT};
use crate::task;

const MSG_STAT: u32 = 11;
const MSG_INFO: u32 = 12;
const MSG_STAT_ANY: u32 = 13;

pub fn sys_msgget(key: usize, flags: usize) -> SysResult {
    msg::get(key as i32, flags as u32, &task::current_cred()).map(|id| id as usize)
}

/// `struct msgbuf`'s `mtype`, the long before the text.
fn read_mtype(buf: usize) -> Result<i64, Errno> {
    let mut b = [0u8; 8];
    copy_in(buf, &mut b)?;
    Ok(i64::from_le_bytes(b))
}

pub fn sys_msgsnd(id: usize, buf: usize, size: usize, flags: usize) -> SysResult {
    let id = id as i32;
    if size > msg::MSGMAX || id < 0 {
        return Err(Errno::EINVAL);
    }
    let mtype = read_mtype(buf)?;
    if mtype < 1 {
        return Err(Errno::EINVAL);
    }
    let mut data = vec![0u8; size];
    copy_in(buf.wrapping_add(8), &mut data)?;
    let cred = task::current_cred();
    msg::send(id, &cred, task::current_pid(), mtype, data, flags as u32).map(|_| 0)
}

pub fn sys_msgrcv(id: usize, buf: usize, size: usize, msgtyp: usize, flags: usize) -> SysResult {
    let (id, flags) = (id as i32, flags as u32);
    if (size as isize) < 0 || id < 0 {
        return Err(Errno::EINVAL);
    }
    if flags & msg::MSG_COPY != 0 {
        // Copying a message by index is a checkpoint/restore feature
        // (CONFIG_CHECKPOINT_RESTORE), not built: Linux then answers ENOSYS.
        return Err(Errno::ENOSYS);
    }
    // A buffer that cannot take the type is EFAULT before a message is taken off the queue.
    super::args::with_space(|s| {
        crate::mm::uaccess::segments(s, buf, 8, crate::mm::area::Access::Write)
    })?;
    let cred = task::current_cred();
    let (mtype, data) = msg::receive(id, &cred, task::current_pid(), size, msgtyp as i64, flags)?;
    copy_out(buf, &mtype.to_le_bytes())?;
    copy_out(buf.wrapping_add(8), &data)?;
    Ok(data.len())
}

pub fn sys_msgctl(id: usize, cmd: usize, buf: usize) -> SysResult {
    let cred = task::current_cred();
    let id = id as i32;
    match cmd as u32 & !IPC_64 {
        IPC_RMID => msg::remove(id, &cred).map(|_| 0),
        IPC_SET => {
            let mut ds = [0u8; msg::MSQID_DS_SIZE];
            copy_in(buf, &mut ds)?;
            let mut perm = [0u8; IPC64_PERM_SIZE];
            perm.copy_from_slice(&ds[..IPC64_PERM_SIZE]);
            let mut qbytes = [0u8; 8];
            qbytes.copy_from_slice(&ds[88..96]);
            msg::set(id, &cred, &perm, u64::from_le_bytes(qbytes)).map(|_| 0)
        }
        IPC_STAT => {
            copy_out(buf, &msg::stat(id, &cred)?)?;
            Ok(0)
        }
        c @ (MSG_STAT | MSG_STAT_ANY) => {
            let index = usize::try_from(id).map_err(|_| Errno::EINVAL)?;
            let (id, ds) = msg::stat_index(index, &cred, c == MSG_STAT_ANY)?;
            copy_out(buf, &ds)?;
            Ok(id as usize)
        }
        c @ (IPC_INFO | MSG_INFO) => {
            let (info, max) = msg::info(c == MSG_INFO);
            copy_out(buf, &info)?;
            Ok(max)
        }
        _ => Err(Errno::EINVAL),
    }
}
