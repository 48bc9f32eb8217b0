//! riscv_hwprobe: what the hart implements, as Linux reports it (glibc asks at every start to
//! pick its string and memory routines).
//!
//! Reported: the machine's vendor, architecture and implementation ids (from SBI), the base
//! behaviour (IMA), the F+D and C extensions (the kernel saves F/D state; it does not manage
//! vector state, so V is not reported, nor any extension the kernel has not read from the
//! device tree: the Zb* and Zicbo* bits stay 0, which makes glibc use its baseline routines),
//! misaligned accesses of unknown speed, no vector misaligned support, the highest user
//! address and the `time` CSR's frequency. A key this kernel does not know gets key -1, as
//! Linux answers.
//!
//! `RISCV_HWPROBE_WHICH_CPUS` asks the other way round: which of the given CPUs (here only
//! CPU 0) have every pair's value; the CPU set is cleared if one does not match.

use abi::Errno;

use super::args::{copy_in, copy_out, SysResult};

const WHICH_CPUS: u32 = 1;
const KEY_MVENDORID: i64 = 0;
const KEY_MARCHID: i64 = 1;
const KEY_MIMPID: i64 = 2;
const KEY_BASE_BEHAVIOR: i64 = 3;
const KEY_IMA_EXT_0: i64 = 4;
const KEY_CPUPERF_0: i64 = 5;
const KEY_ZICBOZ_BLOCK_SIZE: i64 = 6;
const KEY_HIGHEST_VIRT_ADDRESS: i64 = 7;
const KEY_TIME_CSR_FREQ: i64 = 8;
const KEY_MISALIGNED_SCALAR_PERF: i64 = 9;
const KEY_MISALIGNED_VECTOR_PERF: i64 = 10;
/// Keys Linux knows whose value is 0 on this machine (vendor extension sets of other
/// vendors, Zicbom/Zicbop block sizes without those extensions, the second extension word).
const KEYS_ZERO: core::ops::RangeInclusive<i64> = 11..=16;
const BASE_BEHAVIOR_IMA: u64 = 1;
const IMA_FD: u64 = 1 << 0;
const IMA_C: u64 = 1 << 1;
const MISALIGNED_VECTOR_UNSUPPORTED: u64 = 4;

/// The value of `key`, or None for a key this kernel does not know.
fn value(key: i64) -> Option<u64> {
    Some(match key {
        KEY_MVENDORID => sbi_rt::get_mvendorid() as u64,
        KEY_MARCHID => sbi_rt::get_marchid() as u64,
        KEY_MIMPID => sbi_rt::get_mimpid() as u64,
        KEY_BASE_BEHAVIOR => BASE_BEHAVIOR_IMA,
        KEY_IMA_EXT_0 => IMA_FD | IMA_C,
        // Misaligned scalar accesses: speed unknown (0), in both the old and the new key.
        KEY_CPUPERF_0 | KEY_MISALIGNED_SCALAR_PERF | KEY_ZICBOZ_BLOCK_SIZE => 0,
        KEY_HIGHEST_VIRT_ADDRESS => (crate::mm::USER_END - 1) as u64,
        KEY_TIME_CSR_FREQ => crate::arch::time::timebase_hz(),
        KEY_MISALIGNED_VECTOR_PERF => MISALIGNED_VECTOR_UNSUPPORTED,
        k if KEYS_ZERO.contains(&k) => 0,
        _ => return None,
    })
}

/// Whether a CPU whose `key` has value `ours` matches the asked `want` (bit sets: all asked
/// bits present; other keys: equal).
fn matches(key: i64, ours: u64, want: u64) -> bool {
    match key {
        KEY_BASE_BEHAVIOR | KEY_IMA_EXT_0 => ours & want == want,
        _ => ours == want,
    }
}

/// riscv_hwprobe(pairs, pair_count, cpusetsize, cpus, flags): each `struct riscv_hwprobe`
/// is `{ i64 key; u64 value; }`.
pub fn sys_riscv_hwprobe(
    pairs: usize,
    count: usize,
    setsize: usize,
    cpus: usize,
    flags: usize,
) -> SysResult {
    let flags = flags as u32;
    if flags & !WHICH_CPUS != 0 {
        return Err(Errno::EINVAL);
    }
    // One CPU: the first byte of the set is all that can matter.
    let which = flags & WHICH_CPUS != 0;
    if which && (setsize == 0 || cpus == 0) {
        return Err(Errno::EINVAL);
    }
    if !which && (setsize != 0 || cpus != 0) {
        let mut b = [0u8; 1];
        if setsize != 0 {
            copy_in(cpus, &mut b)?;
        }
        // The set must name an online CPU (CPU 0).
        if b[0] & 1 == 0 {
            return Err(Errno::EINVAL);
        }
    }
    // WHICH_CPUS: a set without online CPUs means all of them, so CPU 0 is asked about.
    let mut cpu0 = true;
    for i in 0..count {
        let at = i
            .checked_mul(16)
            .and_then(|o| pairs.checked_add(o))
            .ok_or(Errno::EFAULT)?;
        let mut b = [0u8; 16];
        copy_in(at, &mut b)?;
        let key = i64::from_le_bytes(b[..8].try_into().unwrap_or([0; 8]));
        let want = u64::from_le_bytes(b[8..].try_into().unwrap_or([0; 8]));
        let got = value(key);
        if which {
            match got {
                Some(v) if matches(key, v, want) => {}
                Some(_) => cpu0 = false,
                None => {
                    cpu0 = false;
                    copy_out(at, &(-1i64).to_le_bytes())?;
                }
            }
            continue;
        }
        let (key, v) = match got {
            Some(v) => (key, v),
            None => (-1, 0),
        };
        b[..8].copy_from_slice(&key.to_le_bytes());
        b[8..].copy_from_slice(&v.to_le_bytes());
        copy_out(at, &b)?;
    }
    if which {
        let mut set = alloc::vec![0u8; setsize.min(128)];
        set[0] = u8::from(cpu0);
        copy_out(cpus, &set)?;
    }
    Ok(0)
}
