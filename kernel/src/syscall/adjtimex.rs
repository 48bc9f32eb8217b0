//! adjtimex and clock_adjtime(CLOCK_REALTIME): the kernel clock's NTP parameters.
//!
//! Reading them (modes 0, or ADJ_OFFSET_SS_READ) is open to everyone and fills `struct timex`
//! as Linux does: the parameters, the time now, the tick, and the clock state as the result
//! (TIME_ERROR while STA_UNSYNC is set, as on a Linux no NTP daemon has synchronised).
//! Setting them needs CAP_SYS_TIME and Linux's checks (EPERM, EINVAL for a tick outside
//! 900000/HZ..1100000/HZ or a frequency past its scale, EFAULT); the kernel then keeps and
//! reports them, as it does the scheduling policies, but its clock follows the hardware timer
//! and is never slewed by them. What would change the clock itself is refused with
//! EOPNOTSUPP: stepping it (ADJ_SETOFFSET) and adjtime(3)'s slew (ADJ_OFFSET_SINGLESHOT)
//! by anything but 0, since every process's vDSO copy holds the clock's epoch offset (clock_settime is not
//! built either).

use abi::Errno;

use super::args::{copy_in, copy_out, SysResult};
use crate::sync::Mutex;

const ADJ_OFFSET: u32 = 0x0001;
const ADJ_FREQUENCY: u32 = 0x0002;
const ADJ_MAXERROR: u32 = 0x0004;
const ADJ_ESTERROR: u32 = 0x0008;
const ADJ_STATUS: u32 = 0x0010;
const ADJ_TIMECONST: u32 = 0x0020;
const ADJ_TAI: u32 = 0x0080;
const ADJ_SETOFFSET: u32 = 0x0100;
const ADJ_MICRO: u32 = 0x1000;
const ADJ_NANO: u32 = 0x2000;
const ADJ_TICK: u32 = 0x4000;
/// The kernel's own bits of adjtime(3)'s modes (ADJ_OFFSET_SINGLESHOT is 0x8001,
/// ADJ_OFFSET_SS_READ 0xa001).
const ADJ_ADJTIME: u32 = 0x8000;
const ADJ_OFFSET_READONLY: u32 = 0x2000;

const STA_PLL: i32 = 0x0001;
const STA_UNSYNC: i32 = 0x0040;
const STA_NANO: i32 = 0x2000;
/// The status bits only the kernel sets (STA_PPSSIGNAL ... STA_CLK).
const STA_RONLY: i32 = 0x0100 | 0x0200 | 0x0400 | 0x0800 | 0x2000 | 0x4000 | 0x8000;

const TIME_OK: usize = 0;
const TIME_ERROR: usize = 5;
const CAP_SYS_TIME: u32 = 25;
const CLOCK_REALTIME: usize = 0;
/// Linux's NTP_PHASE_LIMIT (µs): maxerror and esterror of an unsynchronised clock.
const PHASE_LIMIT: i64 = 16_000_000;
/// Linux's MAXTC: the largest time constant.
const MAXTC: i64 = 10;
/// PPM_SCALE: freq is in parts per million, scaled by 2^16.
const PPM_SCALE: i64 = 1000 << 16;
/// MAXFREQ_SCALED / PPM_SCALE: 500 ppm, the tolerance reported.
const TOLERANCE: i64 = 500 << 16;
/// `struct timex` on riscv64 (Linux's layout, padding included).
const TIMEX_SIZE: usize = 208;

struct Ntp {
    offset: i64,
    freq: i64,
    maxerror: i64,
    esterror: i64,
    status: i32,
    constant: i64,
    tick: i64,
    tai: i32,
}

static NTP: Mutex<Ntp> = Mutex::new(Ntp {
    offset: 0,
    freq: 0,
    maxerror: PHASE_LIMIT,
    esterror: PHASE_LIMIT,
    status: STA_UNSYNC,
    constant: 2,
    tick: 1_000_000 / crate::arch::time::CLK_TCK as i64,
    tai: 0,
});

fn field(buf: &[u8], at: usize) -> i64 {
    i64::from_le_bytes(buf[at..at + 8].try_into().unwrap_or_default())
}

fn field32(buf: &[u8], at: usize) -> i32 {
    i32::from_le_bytes(buf[at..at + 4].try_into().unwrap_or_default())
}

pub fn sys_adjtimex(va: usize) -> SysResult {
    let mut buf = [0u8; TIMEX_SIZE];
    copy_in(va, &mut buf)?;
    let modes = u32::from_le_bytes(buf[..4].try_into().unwrap_or_default());
    let privileged = crate::task::current_cred().caps.has(CAP_SYS_TIME);
    // Linux's timekeeping_validate_timex.
    if modes & ADJ_ADJTIME != 0 {
        if modes & ADJ_OFFSET == 0 {
            return Err(Errno::EINVAL);
        }
        if modes & ADJ_OFFSET_READONLY == 0 && !privileged {
            return Err(Errno::EPERM);
        }
    } else {
        if modes != 0 && !privileged {
            return Err(Errno::EPERM);
        }
        let hz = crate::arch::time::CLK_TCK as i64;
        let tick = field(&buf, 88);
        if modes & ADJ_TICK != 0 && (tick < 900_000 / hz || tick > 1_100_000 / hz) {
            return Err(Errno::EINVAL);
        }
    }
    if modes & ADJ_SETOFFSET != 0 {
        let frac = field(&buf, 80);
        let limit = if modes & ADJ_NANO != 0 {
            1_000_000_000
        } else {
            1_000_000
        };
        if !(0..limit).contains(&frac) {
            return Err(Errno::EINVAL);
        }
    }
    let freq = field(&buf, 16);
    if modes & ADJ_FREQUENCY != 0 && (freq < i64::MIN / PPM_SCALE || freq > i64::MAX / PPM_SCALE) {
        return Err(Errno::EINVAL);
    }
    // A slew of 0 (adjtime(3) cancelling what is pending: nothing here) is done already.
    let slews = modes & ADJ_ADJTIME != 0 && modes & ADJ_OFFSET_READONLY == 0 && field(&buf, 8) != 0;
    if modes & ADJ_SETOFFSET != 0 || slews {
        return Err(Errno::EOPNOTSUPP);
    }
    let mut n = NTP.lock();
    if modes & ADJ_ADJTIME == 0 {
        if modes & ADJ_STATUS != 0 {
            let status = field32(&buf, 40);
            n.status = (n.status & STA_RONLY) | (status & !STA_RONLY);
        }
        if modes & ADJ_NANO != 0 {
            n.status |= STA_NANO;
        }
        if modes & ADJ_MICRO != 0 {
            n.status &= !STA_NANO;
        }
        if modes & ADJ_FREQUENCY != 0 {
            n.freq = freq.clamp(-TOLERANCE, TOLERANCE);
        }
        if modes & ADJ_MAXERROR != 0 {
            n.maxerror = field(&buf, 24).clamp(0, PHASE_LIMIT);
        }
        if modes & ADJ_ESTERROR != 0 {
            n.esterror = field(&buf, 32).clamp(0, PHASE_LIMIT);
        }
        if modes & ADJ_TIMECONST != 0 {
            n.constant = field(&buf, 48).clamp(0, MAXTC);
        }
        if modes & ADJ_TAI != 0 && field(&buf, 48) >= 0 {
            n.tai = field(&buf, 48) as i32;
        }
        if modes & ADJ_OFFSET != 0 && n.status & STA_PLL != 0 {
            n.offset = field(&buf, 8);
        }
        if modes & ADJ_TICK != 0 {
            n.tick = field(&buf, 88);
        }
    }
    // The answer: every field Linux fills, the rest (padding, PPS) zero.
    let mut out = [0u8; TIMEX_SIZE];
    let put = |out: &mut [u8], at: usize, v: i64| out[at..at + 8].copy_from_slice(&v.to_le_bytes());
    let put32 =
        |out: &mut [u8], at: usize, v: i32| out[at..at + 4].copy_from_slice(&v.to_le_bytes());
    out[..4].copy_from_slice(&modes.to_le_bytes());
    // adjtime(3) reads the slew still to go in `offset`: none is ever pending here.
    put(
        &mut out,
        8,
        if modes & ADJ_ADJTIME != 0 {
            0
        } else {
            n.offset
        },
    );
    put(&mut out, 16, n.freq);
    put(&mut out, 24, n.maxerror);
    put(&mut out, 32, n.esterror);
    put32(&mut out, 40, n.status);
    put(&mut out, 48, n.constant);
    put(&mut out, 56, 1); // precision (µs)
    put(&mut out, 64, TOLERANCE);
    let ns = crate::arch::time::realtime_ns();
    put(&mut out, 72, (ns / 1_000_000_000) as i64);
    let frac = ns % 1_000_000_000;
    put(
        &mut out,
        80,
        if n.status & STA_NANO != 0 {
            frac
        } else {
            frac / 1000
        } as i64,
    );
    put(&mut out, 88, n.tick);
    put32(&mut out, 160, n.tai);
    let state = if n.status & STA_UNSYNC != 0 {
        TIME_ERROR
    } else {
        TIME_OK
    };
    drop(n);
    copy_out(va, &out)?;
    Ok(state)
}

/// clock_adjtime: CLOCK_REALTIME's is adjtimex; another valid clock cannot be adjusted
/// (EOPNOTSUPP, Linux's answer for the monotonic ones), an invalid id is EINVAL.
pub fn sys_clock_adjtime(clock: usize, va: usize) -> SysResult {
    match clock {
        CLOCK_REALTIME => sys_adjtimex(va),
        1..=11 => Err(Errno::EOPNOTSUPP),
        _ => Err(Errno::EINVAL),
    }
}
