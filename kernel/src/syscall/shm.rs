//! System V shared memory calls: shmget, shmat, shmdt, shmctl (`crate::ipc::shm` holds the
//! segments, `mm::addr_space` maps them).

use abi::Errno;

use super::args::{copy_out, with_space, SysResult};
use crate::ipc::shm;
use crate::ipc::sysv::{IPC64_PERM_SIZE, IPC_64, IPC_INFO, IPC_RMID, IPC_SET, IPC_STAT};
use crate::mm::area::Perm;
use crate::mm::PAGE_SIZE;
use crate::task::cred::{MAY_READ, MAY_WRITE};

const SHM_RDONLY: u32 = 0o10000;
const SHM_RND: u32 = 0o20000;
const SHM_REMAP: u32 = 0o40000;
const SHM_EXEC: u32 = 0o100000;
/// `struct shmid64_ds` (asm-generic, 64-bit): `ipc64_perm` (48 bytes), then size, times, pids,
/// attach count.
const SHMID_DS_SIZE: usize = 112;
const SHM_LOCK: u32 = 11;
const SHM_UNLOCK: u32 = 12;
const SHM_STAT: u32 = 13;
const SHM_INFO: u32 = 14;
const SHM_STAT_ANY: u32 = 15;

/// The segment's `struct shmid64_ds`.
fn shmid_ds(seg: &shm::Segment) -> [u8; SHMID_DS_SIZE] {
    let mut b = [0u8; SHMID_DS_SIZE];
    b[..IPC64_PERM_SIZE].copy_from_slice(&seg.perm.to_ipc64());
    if seg.locked {
        // The mode: `ipc64_perm`'s word after key, uid, gid, cuid and cgid.
        b[20..24].copy_from_slice(&(seg.perm.mode | shm::SHM_LOCKED).to_le_bytes());
    }
    let mut put = |at: usize, v: &[u8]| b[at..at + v.len()].copy_from_slice(v);
    put(48, &(seg.size as u64).to_le_bytes());
    put(56, &seg.atime.to_le_bytes());
    put(64, &seg.dtime.to_le_bytes());
    put(72, &seg.ctime.to_le_bytes());
    put(80, &(seg.cpid as u32).to_le_bytes());
    put(84, &(seg.lpid as u32).to_le_bytes());
    put(88, &(seg.nattch() as u64).to_le_bytes());
    b
}

pub fn sys_shmget(key: usize, size: usize, flags: usize) -> SysResult {
    let cred = crate::task::current_cred();
    shm::get(
        key as i32,
        size,
        flags as u32,
        &cred,
        crate::task::current_pid(),
    )
    .map(|id| id as usize)
}

pub fn sys_shmat(id: usize, addr: usize, flags: usize) -> SysResult {
    let flags = flags as u32;
    let at = match addr {
        0 if flags & SHM_REMAP != 0 => return Err(Errno::EINVAL),
        0 => None,
        a if flags & SHM_RND != 0 => Some(a & !(PAGE_SIZE - 1)),
        a if a % PAGE_SIZE != 0 => return Err(Errno::EINVAL),
        a => Some(a),
    };
    let (mut perm, want) = if flags & SHM_RDONLY != 0 {
        (Perm::R, MAY_READ)
    } else {
        (Perm::R | Perm::W, MAY_READ | MAY_WRITE)
    };
    if flags & SHM_EXEC != 0 {
        perm |= Perm::X;
    }
    let cred = crate::task::current_cred();
    let (pages, size) = shm::attach(id as i32, &cred, want, crate::task::current_pid())?;
    with_space(|s| s.attach_shared(at, size, perm, flags & SHM_REMAP != 0, pages))
}

pub fn sys_shmdt(addr: usize) -> SysResult {
    let pages = with_space(|s| s.detach_shared(addr))?;
    shm::detached(&pages, crate::task::current_pid());
    Ok(0)
}

pub fn sys_shmctl(id: usize, cmd: usize, buf: usize) -> SysResult {
    let cred = crate::task::current_cred();
    let id = id as i32;
    match cmd as u32 & !IPC_64 {
        IPC_RMID => shm::remove(id, &cred).map(|_| 0),
        IPC_STAT => {
            let ds = shm::stat(id, &cred, shmid_ds)?;
            copy_out(buf, &ds)?;
            Ok(0)
        }
        c @ (SHM_STAT | SHM_STAT_ANY) => {
            let index = usize::try_from(id).map_err(|_| Errno::EINVAL)?;
            let (id, ds) = shm::stat_index(index, &cred, c == SHM_STAT_ANY, shmid_ds)?;
            copy_out(buf, &ds)?;
            Ok(id as usize)
        }
        SHM_INFO => {
            // struct shm_info: used_ids (an int, padded), shm_tot, shm_rss, shm_swp,
            // swap_attempts, swap_successes.
            let (used, pages, max) = shm::usage();
            let mut b = [0u8; 48];
            b[..4].copy_from_slice(&(used as i32).to_le_bytes());
            b[8..16].copy_from_slice(&pages.to_le_bytes());
            b[16..24].copy_from_slice(&pages.to_le_bytes());
            copy_out(buf, &b)?;
            Ok(max)
        }
        c @ (SHM_LOCK | SHM_UNLOCK) => shm::set_locked(id, &cred, c == SHM_LOCK).map(|_| 0),
        IPC_SET => {
            let mut perm = [0u8; IPC64_PERM_SIZE];
            super::args::copy_in(buf, &mut perm)?;
            shm::set(id, &cred, &perm).map(|_| 0)
        }
        IPC_INFO => {
            // struct shminfo64: shmmax, shmmin, shmmni, shmseg, shmall (pages), 4 unused.
            let mut b = [0u8; 72];
            let limits = [
                shm::shmmax() as u64,
                1,
                shm::SHMMNI as u64,
                shm::SHMMNI as u64,
                shm::SHMALL,
            ];
            for (i, v) in limits.into_iter().enumerate() {
                b[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
            }
            copy_out(buf, &b)?;
            Ok(shm::max_index())
        }
        _ => Err(Errno::EINVAL),
    }
}
