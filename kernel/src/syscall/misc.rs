//! Memory, time and system calls.

use abi::fcntl::*;
use abi::stat::Timespec;
use abi::syscall::*;
use abi::Errno;

use super::{copy_in, copy_out, with_space, SysResult};
use crate::arch::time;
use crate::mm::addr_space::Perm;

pub fn sys_brk(addr: usize) -> SysResult {
    Ok(with_space(|s| s.brk(addr)))
}

fn perm_of(prot: u32) -> Result<Perm, Errno> {
    if prot & !(PROT_READ | PROT_WRITE | PROT_EXEC) != 0 {
        return Err(Errno::EINVAL);
    }
    let mut p = Perm::empty();
    if prot & PROT_READ != 0 {
        p |= Perm::R;
    }
    if prot & PROT_WRITE != 0 {
        p |= Perm::W;
    }
    if prot & PROT_EXEC != 0 {
        p |= Perm::X;
    }
    Ok(p)
}

pub fn sys_mmap(addr: usize, len: usize, prot: u32, flags: u32, fd: i32) -> SysResult {
    let share = flags & (MAP_SHARED | MAP_PRIVATE);
    if share == 0 || share == (MAP_SHARED | MAP_PRIVATE) || len == 0 {
        return Err(Errno::EINVAL);
    }
    let perm = perm_of(prot)?;
    if flags & MAP_ANONYMOUS == 0 {
        // File mappings are not supported: a valid descriptor gets ENODEV, as Linux gives
        // for files whose file system cannot be mapped.
        crate::task::with_current(|p| p.files.get(fd))?;
        return Err(Errno::ENODEV);
    }
    with_space(|s| s.mmap_anon(addr, len, perm, flags & MAP_FIXED != 0))
}

pub fn sys_munmap(addr: usize, len: usize) -> SysResult {
    with_space(|s| s.munmap(addr, len)).map(|_| 0)
}

pub fn sys_mprotect(addr: usize, len: usize, prot: u32) -> SysResult {
    let perm = perm_of(prot)?;
    with_space(|s| s.mprotect(addr, len, perm)).map(|_| 0)
}

fn timespec(ns: u64) -> Timespec {
    Timespec {
        tv_sec: (ns / 1_000_000_000) as i64,
        tv_nsec: (ns % 1_000_000_000) as i64,
    }
}

pub fn sys_clock_gettime(clock: u32, tp: usize) -> SysResult {
    const CLOCK_MONOTONIC_RAW: u32 = 4;
    const CLOCK_REALTIME_COARSE: u32 = 5;
    const CLOCK_MONOTONIC_COARSE: u32 = 6;
    const CLOCK_BOOTTIME: u32 = 7;
    let ns = match clock {
        CLOCK_REALTIME | CLOCK_REALTIME_COARSE => time::realtime_ns(),
        CLOCK_MONOTONIC | CLOCK_MONOTONIC_RAW | CLOCK_MONOTONIC_COARSE | CLOCK_BOOTTIME => {
            time::monotonic_ns()
        }
        _ => return Err(Errno::EINVAL),
    };
    copy_out(tp, &timespec(ns).as_bytes())?;
    Ok(0)
}

pub fn sys_gettimeofday(tv: usize) -> SysResult {
    if tv != 0 {
        let ns = time::realtime_ns();
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&((ns / 1_000_000_000) as i64).to_le_bytes());
        b[8..].copy_from_slice(&((ns % 1_000_000_000 / 1000) as i64).to_le_bytes());
        copy_out(tv, &b)?;
    }
    Ok(0)
}

pub fn sys_nanosleep(req: usize) -> SysResult {
    let mut b = [0u8; 16];
    copy_in(req, &mut b)?;
    let t = Timespec::from_bytes(&b);
    if t.tv_sec < 0 || !(0..1_000_000_000).contains(&t.tv_nsec) {
        return Err(Errno::EINVAL);
    }
    let deadline =
        time::monotonic_ns().saturating_add(t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64);
    while time::monotonic_ns() < deadline {
        crate::task::yield_now();
    }
    Ok(0)
}

pub fn sys_uname(buf: usize) -> SysResult {
    let fields = [
        "dbfs-os",
        "dbfs-os",
        env!("CARGO_PKG_VERSION"),
        "#1",
        "riscv64",
        "",
    ];
    let mut out = [0u8; 65 * 6];
    for (i, f) in fields.iter().enumerate() {
        out[i * 65..i * 65 + f.len()].copy_from_slice(f.as_bytes());
    }
    copy_out(buf, &out)?;
    Ok(0)
}

pub fn sys_reboot(magic1: usize, magic2: usize, cmd: usize) -> SysResult {
    if magic1 as u32 as usize != LINUX_REBOOT_MAGIC1
        || magic2 as u32 as usize != LINUX_REBOOT_MAGIC2
    {
        return Err(Errno::EINVAL);
    }
    if cmd as u32 as usize != LINUX_REBOOT_CMD_POWER_OFF {
        return Err(Errno::EINVAL);
    }
    crate::fs::sync_all();
    crate::shutdown(0)
}

pub fn sys_drop_caches() -> SysResult {
    crate::fs::sync_all();
    crate::drivers::block_cache::drop_all_caches()?;
    crate::mm::window::drop_all();
    Ok(0)
}

pub fn sys_counters(buf: usize) -> SysResult {
    let words = crate::counters::snapshot().to_words();
    let bytes: alloc::vec::Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    copy_out(buf, &bytes)?;
    Ok(words.len())
}
