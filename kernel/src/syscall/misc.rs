//! Memory, time and system calls.

use abi::fcntl::*;
use abi::stat::Timespec;
use abi::syscall::*;
use abi::Errno;

use super::args::{copy_in, copy_out, with_space, SysResult};
use crate::arch::time;
use crate::mm::addr_space::Fixed;
use crate::mm::area::Perm;

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

pub fn sys_mmap(
    addr: usize,
    len: usize,
    prot: u32,
    flags: u32,
    fd: i32,
    offset: usize,
) -> SysResult {
    let anon = flags & MAP_ANONYMOUS != 0;
    // Linux looks the descriptor up first: a bad one is EBADF whatever else is wrong.
    let file = if anon {
        None
    } else {
        Some(super::fd::file_not_path(fd)?)
    };
    let share = match flags & (MAP_SHARED | MAP_PRIVATE) {
        MAP_SHARED_VALIDATE if anon => return Err(Errno::EINVAL),
        MAP_SHARED_VALIDATE if flags & !MAP_KNOWN != 0 => return Err(Errno::EOPNOTSUPP),
        MAP_SHARED_VALIDATE => MAP_SHARED,
        0 => return Err(Errno::EINVAL),
        s => s,
    };
    if len == 0 {
        return Err(Errno::EINVAL);
    }
    let perm = perm_of(prot)?;
    let fixed = if flags & MAP_FIXED_NOREPLACE != 0 {
        Fixed::NoReplace
    } else if flags & MAP_FIXED != 0 {
        Fixed::Replace
    } else {
        Fixed::No
    };
    let lock = super::memlock::lock_for_new(flags & MAP_LOCKED != 0, len)?;
    let shared = share == MAP_SHARED;
    let at = match file {
        // /dev/zero maps as anonymous memory (Linux: shared, its pages go to the processes
        // forked after), with a file's access rules.
        Some(f) if crate::fs::devfs::is_zero(&*f.loc.node) => {
            if !offset.is_multiple_of(crate::mm::PAGE_SIZE) {
                return Err(Errno::EINVAL);
            }
            if !f.readable || (shared && perm.contains(Perm::W) && !f.writable) {
                return Err(Errno::EACCES);
            }
            if shared && !f.writable {
                with_space(|s| s.mmap_zero_read_only(addr, len, perm, fixed))?
            } else {
                with_space(|s| s.mmap_anon(addr, len, perm, fixed, shared))?
            }
        }
        Some(f) => map_file(addr, len, perm, fixed, shared, f, offset)?,
        None => with_space(|s| s.mmap_anon(addr, len, perm, fixed, shared))?,
    };
    super::memlock::lock_new(at, len, lock);
    Ok(at)
}

/// `mmap` of an open file, with Linux's answers: EINVAL for an offset that is not
/// page-aligned, ENODEV for what has no pages to map (pipes, terminals, directories, devices
/// other than /dev/zero), EACCES for a file not open for reading, or a writable shared
/// mapping of one not open for writing (or open for appending only), EPERM for a
/// writable shared mapping of a memfd sealed against writes, EOVERFLOW when
/// the mapping would end past the largest file offset.
fn map_file(
    addr: usize,
    len: usize,
    perm: Perm,
    fixed: Fixed,
    shared: bool,
    f: alloc::sync::Arc<crate::fs::file::OpenFile>,
    offset: usize,
) -> SysResult {
    use crate::mm::{area::FileArea, file_pages, page_ceil, PAGE_SIZE};
    if !offset.is_multiple_of(PAGE_SIZE) {
        return Err(Errno::EINVAL);
    }
    if f.ftype != vfs::FileType::Regular {
        return Err(Errno::ENODEV);
    }
    if !f.readable || (shared && perm.contains(Perm::W) && (!f.writable || f.append())) {
        return Err(Errno::EACCES);
    }
    // A memfd sealed against writes (F_SEAL_WRITE, F_SEAL_FUTURE_WRITE) takes no new shared
    // writable mapping (its read-only ones stay read-only: `MappedFile::writable`).
    if shared && perm.contains(Perm::W) && crate::fs::memfd::write_sealed(&f.loc.node) {
        return Err(Errno::EPERM);
    }
    if len > crate::mm::USER_END {
        return Err(Errno::ENOMEM);
    }
    if (offset as u64)
        .checked_add(page_ceil(len) as u64)
        .is_none_or(|end| end > i64::MAX as u64)
    {
        return Err(Errno::EOVERFLOW);
    }
    let key = f.lock_key()?;
    let table = file_pages::shared_table(&*f, key)?;
    // A shared library's code (the loader maps it private and executable): its pages stay
    // cached for the next program that maps it, as the programs' own do.
    if !shared && perm.contains(Perm::X) {
        file_pages::keep_recent(&table);
    }
    let area = FileArea::new(f, key, table, !shared, offset as u64);
    with_space(|s| s.mmap_file(addr, len, perm, fixed, area))
}

/// msync: write the dirty pages of the shared file mappings in the range back to their files
/// (and, for MS_SYNC, make them durable). EINVAL for an unaligned address, unknown flags or
/// both MS_SYNC and MS_ASYNC; EBUSY for MS_INVALIDATE of locked pages; ENOMEM if part of the
/// range is not mapped.
pub fn sys_msync(addr: usize, len: usize, flags: u32) -> SysResult {
    use crate::mm::{page_ceil, PAGE_SIZE};
    if flags & !(MS_ASYNC | MS_INVALIDATE | MS_SYNC) != 0
        || flags & (MS_ASYNC | MS_SYNC) == MS_ASYNC | MS_SYNC
        || !addr.is_multiple_of(PAGE_SIZE)
    {
        return Err(Errno::EINVAL);
    }
    let end = addr
        .checked_add(len)
        .filter(|&e| e <= crate::mm::USER_END)
        .ok_or(Errno::ENOMEM)?;
    let end = page_ceil(end);
    if end == addr {
        return Ok(0);
    }
    // Linux: locked pages cannot be invalidated.
    if flags & MS_INVALIDATE != 0 && with_space(|s| s.locked_in(addr, end)) {
        return Err(Errno::EBUSY);
    }
    let (targets, mapped) = with_space(|s| s.shared_files_in(addr, end));
    for (table, first, stop) in targets {
        if flags & MS_SYNC != 0 {
            crate::drivers::window::barrier_coming(|| {
                table.write_back(first, stop)?;
                table.sync()
            })?;
        } else {
            table.write_back(first, stop)?;
        }
    }
    mapped.map(|_| 0)
}

/// madvise (`mm::advice`): EINVAL for an unaligned address, unknown advice or a range past
/// user space; an empty range does nothing.
pub fn sys_madvise(addr: usize, len: usize, advice: u32) -> SysResult {
    use crate::mm::{advice::known, page_ceil, PAGE_SIZE};
    if !addr.is_multiple_of(PAGE_SIZE) || !known(advice) {
        return Err(Errno::EINVAL);
    }
    let end = addr
        .checked_add(len)
        .filter(|&e| e <= crate::mm::USER_END)
        .ok_or(Errno::EINVAL)?;
    let end = page_ceil(end);
    if end == addr {
        return Ok(0);
    }
    with_space(|s| s.advise(addr, end, advice)).map(|_| 0)
}

/// mincore(addr, len, vec): EINVAL for an unaligned address, ENOMEM for a range outside user
/// space or not wholly mapped, EFAULT for a bad vector; pages are reported in chunks, so a
/// huge range costs no huge kernel buffer.
pub fn sys_mincore(addr: usize, len: usize, vec: usize) -> SysResult {
    use crate::mm::PAGE_SIZE;
    const CHUNK: usize = 1 << 16;
    if !addr.is_multiple_of(PAGE_SIZE) {
        return Err(Errno::EINVAL);
    }
    if !crate::mm::uaccess::range_ok(addr, len) {
        return Err(Errno::ENOMEM);
    }
    let pages = len.div_ceil(PAGE_SIZE);
    if !crate::mm::uaccess::range_ok(vec, pages) {
        return Err(Errno::EFAULT);
    }
    let mut done = 0;
    while done < pages {
        let n = (pages - done).min(CHUNK);
        let start = addr + done * PAGE_SIZE;
        let bytes = with_space(|s| s.mincore(start, start + n * PAGE_SIZE))?;
        copy_out(vec + done, &bytes)?;
        done += n;
    }
    Ok(0)
}

pub fn sys_munmap(addr: usize, len: usize) -> SysResult {
    with_space(|s| s.munmap(addr, len)).map(|_| 0)
}

pub fn sys_mremap(
    old: usize,
    old_len: usize,
    new_len: usize,
    flags: u32,
    new_addr: usize,
) -> SysResult {
    with_space(|s| s.mremap(old, old_len, new_len, flags, new_addr))
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

/// clock_gettime: the wall and monotonic clocks, the caller's CPU time (user and system
/// time together), and the CPU clocks of other processes and of the caller's threads
/// (negative ids: [`cpu_clock_ns`]).
pub fn sys_clock_gettime(clock: u32, tp: usize) -> SysResult {
    const CLOCK_PROCESS_CPUTIME_ID: u32 = 2;
    const CLOCK_THREAD_CPUTIME_ID: u32 = 3;
    const CLOCK_MONOTONIC_RAW: u32 = 4;
    const CLOCK_REALTIME_COARSE: u32 = 5;
    const CLOCK_MONOTONIC_COARSE: u32 = 6;
    const CLOCK_BOOTTIME: u32 = 7;
    let ns = match clock {
        CLOCK_REALTIME | CLOCK_REALTIME_COARSE => time::realtime_ns(),
        CLOCK_MONOTONIC | CLOCK_MONOTONIC_RAW | CLOCK_MONOTONIC_COARSE | CLOCK_BOOTTIME => {
            time::monotonic_ns()
        }
        CLOCK_PROCESS_CPUTIME_ID => crate::task::cpu_times().0,
        CLOCK_THREAD_CPUTIME_ID => crate::task::cpu_times().1,
        _ => cpu_clock_ns(clock)?,
    };
    copy_out(tp, &timespec(ns).as_bytes())?;
    Ok(0)
}

/// The CPU clock of another process or thread, as Linux encodes it in a negative clock id
/// (clock_getcpuclockid, pthread_getcpuclockid): the process or thread id inverted above
/// three bits, bit 2 for a thread, and the kind below: PROF (user and system time), VIRT
/// (user time; not kept per thread: EINVAL) or SCHED (all of it). EINVAL for any other id,
/// for a process that does not exist and for a thread not of the caller's process.
fn cpu_clock_ns(clock: u32) -> Result<u64, Errno> {
    const PROF: i32 = 0;
    const VIRT: i32 = 1;
    const SCHED: i32 = 2;
    let id = clock as i32;
    if id >= 0 {
        return Err(Errno::EINVAL);
    }
    let who = !(id >> 3);
    let thread = id & 4 != 0;
    let who = usize::try_from(who).map_err(|_| Errno::EINVAL)?;
    let (total, sys) = crate::task::cpu_time_of(who, thread).ok_or(Errno::EINVAL)?;
    match (id & 3, sys) {
        (PROF | SCHED, _) => Ok(total),
        (VIRT, Some(sys)) => Ok(total.saturating_sub(sys)),
        _ => Err(Errno::EINVAL),
    }
}

/// gettimeofday(tv, tz): the wall clock in `tv`; `tz`, if given, gets Linux's default
/// `struct timezone` (minutes west 0, no DST; nothing here sets it).
pub fn sys_gettimeofday(tv: usize, tz: usize) -> SysResult {
    if tv != 0 {
        let ns = time::realtime_ns();
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&((ns / 1_000_000_000) as i64).to_le_bytes());
        b[8..].copy_from_slice(&((ns % 1_000_000_000 / 1000) as i64).to_le_bytes());
        copy_out(tv, &b)?;
    }
    if tz != 0 {
        copy_out(tz, &[0u8; 8])?;
    }
    Ok(0)
}

/// `which` must name one of the three timers (`task::itimer`): EINVAL otherwise.
fn check_itimer(which: usize) -> Result<(), Errno> {
    use crate::task::itimer::{ITIMER_PROF, ITIMER_REAL, ITIMER_VIRTUAL};
    if [ITIMER_REAL, ITIMER_VIRTUAL, ITIMER_PROF].contains(&which) {
        Ok(())
    } else {
        Err(Errno::EINVAL)
    }
}

/// `struct itimerval` (it_interval, it_value; each a `struct timeval`) from (value, interval)
/// in ns: microseconds, the rest cut off.
fn put_itimerval(ptr: usize, (value, interval): (u64, u64)) -> Result<(), Errno> {
    let mut b = [0u8; 32];
    for (i, ns) in [interval, value].into_iter().enumerate() {
        b[i * 16..i * 16 + 8].copy_from_slice(&((ns / 1_000_000_000) as i64).to_le_bytes());
        let usec = (ns % 1_000_000_000 / 1000) as i64;
        b[i * 16 + 8..i * 16 + 16].copy_from_slice(&usec.to_le_bytes());
    }
    copy_out(ptr, &b)
}

/// getitimer(which, curr): the time left and the interval.
pub fn sys_getitimer(which: usize, curr: usize) -> SysResult {
    check_itimer(which)?;
    let p = crate::task::current_process();
    put_itimerval(
        curr,
        crate::task::itimer::get(&p, which, time::monotonic_ns()),
    )?;
    Ok(0)
}

/// setitimer(which, new, old): arm (a non-zero `it_value`) or disarm the timer; a null `new`
/// disarms, as on Linux. EINVAL for a negative time or microseconds outside 0..1e6.
pub fn sys_setitimer(which: usize, new: usize, old: usize) -> SysResult {
    let (value, interval) = if new != 0 {
        let mut b = [0u8; 32];
        copy_in(new, &mut b)?;
        let ns = |at: usize| -> Result<u64, Errno> {
            let sec = i64::from_le_bytes(b[at..at + 8].try_into().unwrap());
            let usec = i64::from_le_bytes(b[at + 8..at + 16].try_into().unwrap());
            if sec < 0 || !(0..1_000_000).contains(&usec) {
                return Err(Errno::EINVAL);
            }
            Ok((sec as u64)
                .saturating_mul(1_000_000_000)
                .saturating_add(usec as u64 * 1000))
        };
        (ns(16)?, ns(0)?)
    } else {
        (0, 0)
    };
    check_itimer(which)?;
    let p = crate::task::current_process();
    let was = crate::task::itimer::set(&p, which, time::monotonic_ns(), value, interval);
    if old != 0 {
        put_itimerval(old, was)?;
    }
    Ok(0)
}

pub fn sys_nanosleep(req: usize, rem: usize) -> SysResult {
    sys_clock_nanosleep(CLOCK_MONOTONIC, 0, req, rem)
}

/// A `struct timespec` from user memory, in nanoseconds: EINVAL for a negative time or
/// nanoseconds outside 0..1e9 (Linux's `timespec64_valid`).
pub fn read_timespec_ns(ptr: usize) -> Result<u64, Errno> {
    let mut b = [0u8; 16];
    copy_in(ptr, &mut b)?;
    let t = Timespec::from_bytes(&b);
    if t.tv_sec < 0 || !(0..1_000_000_000).contains(&t.tv_nsec) {
        return Err(Errno::EINVAL);
    }
    Ok((t.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(t.tv_nsec as u64))
}

/// clock_nanosleep (and nanosleep): sleep on the timer list until the deadline; a signal
/// ends the sleep early with EINTR and the time left in `rem` (relative sleeps only).
pub fn sys_clock_nanosleep(clock: u32, flags: u32, req: usize, rem: usize) -> SysResult {
    const TIMER_ABSTIME: u32 = 1;
    let ns = read_timespec_ns(req)?;
    let now = time::monotonic_ns();
    let deadline = match (clock, flags & TIMER_ABSTIME != 0) {
        (CLOCK_REALTIME, true) => now.saturating_add(ns.saturating_sub(time::realtime_ns())),
        (CLOCK_MONOTONIC | 7, true) => ns,
        (CLOCK_REALTIME | CLOCK_MONOTONIC | 7, false) => now.saturating_add(ns),
        _ => return Err(Errno::EINVAL),
    };
    loop {
        let now = time::monotonic_ns();
        if now >= deadline {
            return Ok(0);
        }
        if crate::task::signal::pending() {
            if rem != 0 && flags & TIMER_ABSTIME == 0 {
                copy_out(rem, &timespec(deadline - now).as_bytes())?;
            }
            return Err(Errno::EINTR);
        }
        crate::task::wait::sleep_until(deadline);
    }
}

pub fn sys_clock_getres(clock: u32, res: usize) -> SysResult {
    if clock > 11 && (clock as i32) >= 0 {
        return Err(Errno::EINVAL);
    }
    if (clock as i32) < 0 {
        cpu_clock_ns(clock)?;
    }
    if res != 0 {
        let tick = (1_000_000_000 / time::timebase_hz()).max(1);
        copy_out(res, &timespec(tick).as_bytes())?;
    }
    Ok(0)
}

/// getrandom: bytes from the kernel's generator (never blocks; flags GRND_NONBLOCK,
/// GRND_RANDOM, GRND_INSECURE accepted).
pub fn sys_getrandom(buf: usize, len: usize, flags: u32) -> SysResult {
    if flags & !7 != 0 {
        return Err(Errno::EINVAL);
    }
    let len = len.min(1 << 20);
    let mut b = alloc::vec![0u8; len];
    crate::arch::random::fill(&mut b);
    copy_out(buf, &b)?;
    Ok(len)
}

/// sysinfo: uptime, memory (frames free of the frame pool), process count.
pub fn sys_sysinfo(info: usize) -> SysResult {
    let mut b = [0u8; 112];
    let put = |b: &mut [u8], off: usize, v: u64| b[off..off + 8].copy_from_slice(&v.to_le_bytes());
    put(&mut b, 0, time::monotonic_ns() / 1_000_000_000);
    let free = crate::mm::frame::free_count() as u64 * crate::mm::PAGE_SIZE as u64;
    let total = free + crate::mm::frame::used_count() as u64 * crate::mm::PAGE_SIZE as u64;
    put(&mut b, 32, total); // totalram
    put(&mut b, 40, free); // freeram
    let procs = crate::task::all_processes().len() as u16;
    b[80..82].copy_from_slice(&procs.to_le_bytes());
    b[104..108].copy_from_slice(&1u32.to_le_bytes()); // mem_unit
    copy_out(info, &b)?;
    Ok(0)
}

/// times: user and system time of the caller and of its reaped children, in clock ticks;
/// returns the ticks since boot.
pub fn sys_times(buf: usize) -> SysResult {
    let me = crate::task::current_process();
    let (own, children) = (crate::task::process_cpu(), me.inner.lock().children_cpu);
    let tick = |ns: u64| ns / (1_000_000_000 / crate::arch::time::CLK_TCK);
    if buf != 0 {
        // struct tms: tms_utime, tms_stime, tms_cutime, tms_cstime.
        let mut b = [0u8; 32];
        b[0..8].copy_from_slice(&tick(own.user_ns()).to_le_bytes());
        b[8..16].copy_from_slice(&tick(own.sys_ns).to_le_bytes());
        b[16..24].copy_from_slice(&tick(children.user_ns()).to_le_bytes());
        b[24..32].copy_from_slice(&tick(children.sys_ns).to_le_bytes());
        copy_out(buf, &b)?;
    }
    Ok(tick(time::monotonic_ns()) as usize)
}

/// getrusage: user and system time, the peak resident memory (`ru_maxrss`) and the
/// voluntary and involuntary context switches (`ru_nvcsw`, `ru_nivcsw`) for RUSAGE_SELF (0),
/// RUSAGE_CHILDREN (-1, the reaped ones: the largest peak of any) and RUSAGE_THREAD (1,
/// answered for the whole process).
pub fn sys_getrusage(who: isize, buf: usize) -> SysResult {
    let me = crate::task::current_process();
    let (cpu, switches, rss_peak) = match who {
        0 | 1 => (
            crate::task::process_cpu(),
            me.switch_counts(),
            me.inner.lock().rss_peak(),
        ),
        -1 => {
            let i = me.inner.lock();
            (i.children_cpu, i.children_switches, i.children_rss_peak)
        }
        _ => return Err(Errno::EINVAL),
    };
    // struct rusage: ru_utime, ru_stime (timevals), ru_maxrss, then 13 longs, ru_nvcsw and
    // ru_nivcsw the last two.
    let mut b = super::process::rusage_of(cpu, rss_peak);
    b[128..136].copy_from_slice(&switches[0].to_le_bytes());
    b[136..144].copy_from_slice(&switches[1].to_le_bytes());
    copy_out(buf, &b)?;
    Ok(0)
}

/// reboot(2)'s LINUX_REBOOT_CMD_CAD_ON and _CAD_OFF: what Ctrl-Alt-Del does (reboot at
/// once, or send SIGINT to init). The setting is kept, as Linux keeps it; the console has no
/// Ctrl-Alt-Del key event to act on.
const LINUX_REBOOT_CMD_CAD_ON: u32 = 0x89ab_cdef;
const LINUX_REBOOT_CMD_CAD_OFF: u32 = 0;
static CAD_REBOOTS: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(true);

/// reboot(2): power off, and the Ctrl-Alt-Del setting. Linux checks CAP_SYS_BOOT before
/// anything else, so another user than root gets EPERM whatever the magic numbers (before,
/// any user could power off).
pub fn sys_reboot(magic1: usize, magic2: usize, cmd: usize) -> SysResult {
    if !crate::task::current_cred().is_root() {
        return Err(Errno::EPERM);
    }
    if magic1 as u32 as usize != LINUX_REBOOT_MAGIC1
        || magic2 as u32 as usize != LINUX_REBOOT_MAGIC2
    {
        return Err(Errno::EINVAL);
    }
    match cmd as u32 {
        LINUX_REBOOT_CMD_CAD_ON | LINUX_REBOOT_CMD_CAD_OFF => {
            let on = cmd as u32 == LINUX_REBOOT_CMD_CAD_ON;
            CAD_REBOOTS.store(on, core::sync::atomic::Ordering::Relaxed);
            return Ok(0);
        }
        c if c as usize == LINUX_REBOOT_CMD_POWER_OFF => {}
        _ => return Err(Errno::EINVAL),
    }
    crate::fs::sync_all();
    crate::fs::sync_and_power_off(0)
}

pub fn sys_drop_caches() -> SysResult {
    crate::fs::drop_caches()?;
    Ok(0)
}

pub fn sys_counters(buf: usize) -> SysResult {
    let words = crate::counters::snapshot().to_words();
    let bytes: alloc::vec::Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    copy_out(buf, &bytes)?;
    Ok(words.len())
}

/// The CPU mask's size in bytes (Linux's `cpumask_size()` for at most 64 CPUs).
const CPUMASK_BYTES: usize = 8;

/// The thread `pid` names for the affinity calls (0: the caller; as on Linux, any thread id,
/// not only a process's).
fn affinity_target(pid: usize) -> Result<alloc::sync::Arc<crate::task::Thread>, Errno> {
    if pid == 0 {
        return Ok(crate::task::current_thread());
    }
    if (pid as isize) < 0 {
        return Err(Errno::ESRCH);
    }
    crate::task::find_thread(pid).ok_or(Errno::ESRCH)
}

/// sched_getaffinity: the harts thread `pid` may run on (CPU i = the kernel's hart slot i)
/// among those running. As Linux, `size` must hold every CPU and be a multiple of 8; the
/// return value is the mask's size.
pub fn sys_sched_getaffinity(pid: usize, size: usize, mask: usize) -> SysResult {
    let t = affinity_target(pid)?;
    if size * 8 < crate::arch::hart::count() || !size.is_multiple_of(8) {
        return Err(Errno::EINVAL);
    }
    let n = size.min(CPUMASK_BYTES);
    let bits = t.affinity() & crate::arch::hart::online_mask() as u64;
    copy_out(mask, &bits.to_le_bytes()[..n])?;
    Ok(n)
}

/// sched_setaffinity: thread `pid` runs only on the harts of the mask (those running among
/// them; EINVAL if none is), with Linux's checks in Linux's order: the mask is read (EFAULT),
/// the thread found (ESRCH), and a caller without CAP_SYS_NICE may only change a thread
/// whose process's real or effective uid is its effective uid (EPERM). The caller, when it
/// is the thread and no longer allowed where it runs, moves before the call returns; another
/// thread moves at its next switch (a time slice at most).
pub fn sys_sched_setaffinity(pid: usize, size: usize, mask: usize) -> SysResult {
    let mut b = [0u8; CPUMASK_BYTES];
    let n = size.min(CPUMASK_BYTES);
    copy_in(mask, &mut b[..n])?;
    let t = affinity_target(pid)?;
    let cred = crate::task::current_cred();
    let target = t.process.inner.lock().cred.clone();
    if !super::process::may_renice(&cred, &target) {
        return Err(Errno::EPERM);
    }
    let harts = u64::from_le_bytes(b) & crate::arch::hart::online_mask() as u64;
    if harts == 0 {
        return Err(Errno::EINVAL);
    }
    crate::task::set_affinity(&t, harts);
    Ok(0)
}
