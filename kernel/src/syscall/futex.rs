//! futex(2): FUTEX_WAIT, FUTEX_WAKE, their bitset forms, FUTEX_REQUEUE and
//! FUTEX_CMP_REQUEUE (`task::futex` keeps the waiters). Wake-op and priority-inheritance
//! operations answer ENOSYS, as a kernel built without them would; glibc's mutexes,
//! condition variables, semaphores and pthread_join use none of them.

use abi::stat::Timespec;
use abi::Errno;

use super::args::{copy_in, SysResult};
use crate::arch::time;
use crate::mm::area::Access;
use crate::task::futex;

const FUTEX_WAIT: u32 = 0;
const FUTEX_WAKE: u32 = 1;
const FUTEX_REQUEUE: u32 = 3;
const FUTEX_CMP_REQUEUE: u32 = 4;
const FUTEX_WAIT_BITSET: u32 = 9;
const FUTEX_WAKE_BITSET: u32 = 10;
const FUTEX_PRIVATE_FLAG: u32 = 128;
const FUTEX_CLOCK_REALTIME: u32 = 256;

/// futex(uaddr, op, val, timeout or val2, uaddr2, val3).
pub fn sys_futex(
    uaddr: usize,
    op: usize,
    val: usize,
    timeout: usize,
    uaddr2: usize,
    val3: usize,
) -> SysResult {
    let op = op as u32;
    let cmd = op & !(FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME);
    let bitset = match cmd {
        FUTEX_WAIT | FUTEX_WAKE | FUTEX_REQUEUE | FUTEX_CMP_REQUEUE => u32::MAX,
        FUTEX_WAIT_BITSET | FUTEX_WAKE_BITSET => val3 as u32,
        _ => return Err(Errno::ENOSYS),
    };
    if bitset == 0 || !uaddr.is_multiple_of(4) {
        return Err(Errno::EINVAL);
    }
    if op & FUTEX_CLOCK_REALTIME != 0 && cmd != FUTEX_WAIT && cmd != FUTEX_WAIT_BITSET {
        return Err(Errno::ENOSYS);
    }
    // The futex's name (`task::futex::key`): the kernel address of its word in a shared
    // mapping (the same for every process that maps the page), else its address here.
    let key = futex::key(uaddr, Access::Read)?;
    if cmd == FUTEX_REQUEUE || cmd == FUTEX_CMP_REQUEUE {
        return requeue(cmd, key, uaddr, val, timeout, uaddr2, val3);
    }
    if cmd == FUTEX_WAKE || cmd == FUTEX_WAKE_BITSET {
        // Linux wakes at least one, whatever the count says.
        let count = (val as u32 as i32).max(1) as usize;
        return Ok(futex::wake(key, bitset, count));
    }
    let deadline = if timeout == 0 {
        None
    } else {
        let mut b = [0u8; 16];
        copy_in(timeout, &mut b)?;
        let t = Timespec::from_bytes(&b);
        if t.tv_sec < 0 || !(0..1_000_000_000).contains(&t.tv_nsec) {
            return Err(Errno::EINVAL);
        }
        let ns = (t.tv_sec as u64)
            .saturating_mul(1_000_000_000)
            .saturating_add(t.tv_nsec as u64);
        let now = time::monotonic_ns();
        Some(match (cmd, op & FUTEX_CLOCK_REALTIME != 0) {
            // FUTEX_WAIT: a relative timeout; the bitset form: an absolute time.
            (FUTEX_WAIT, _) => now.saturating_add(ns),
            (_, true) => now.saturating_add(ns.saturating_sub(time::realtime_ns())),
            (_, false) => ns,
        })
    };
    let mut word = [0u8; 4];
    copy_in(uaddr, &mut word)?;
    if u32::from_le_bytes(word) != val as u32 {
        return Err(Errno::EAGAIN);
    }
    futex::wait(key, bitset, deadline).map(|_| 0)
}

/// FUTEX_REQUEUE / FUTEX_CMP_REQUEUE: wake `val` waiters of `uaddr`, move up to `val2` (the
/// timeout argument's slot) of the others to `uaddr2`; the CMP form first checks that the
/// word at `uaddr` still holds `val3` (EAGAIN if not).
fn requeue(
    cmd: u32,
    key: usize,
    uaddr: usize,
    val: usize,
    val2: usize,
    uaddr2: usize,
    val3: usize,
) -> SysResult {
    let (nr_wake, nr_requeue) = (val as u32 as i32, val2 as u32 as i32);
    if nr_wake < 0 || nr_requeue < 0 || !uaddr2.is_multiple_of(4) {
        return Err(Errno::EINVAL);
    }
    let key2 = futex::key(uaddr2, Access::Read)?;
    if cmd == FUTEX_CMP_REQUEUE {
        let mut word = [0u8; 4];
        copy_in(uaddr, &mut word)?;
        if u32::from_le_bytes(word) != val3 as u32 {
            return Err(Errno::EAGAIN);
        }
    }
    Ok(futex::requeue(
        key,
        u32::MAX,
        nr_wake as usize,
        Some(key2),
        nr_requeue as usize,
    ))
}
