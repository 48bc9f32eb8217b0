//! FAT timestamps <-> Unix time.
//!
//! FAT stores local date and time without a zone; we store UTC. Granularity: modification time
//! 2 s, creation time 10 ms, access time one day; the range is 1980-01-01 to 2107-12-31 and
//! times outside it are clamped. FAT has no ctime: we report the modification time.

use alloc::sync::Arc;
use vfs::{Clock, Timestamp};

const MIN_YEAR: i64 = 1980;
const MAX_YEAR: i64 = 2107;

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day count since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (
        if m <= 2 {
            yoe + era * 400 + 1
        } else {
            yoe + era * 400
        },
        m,
        d,
    )
}

/// Unix time of a FAT date and time. Out-of-range fields of a corrupt entry are clamped, never
/// a panic.
pub fn from_fat(dt: fatfs::DateTime) -> Timestamp {
    let month = i64::from(dt.date.month).clamp(1, 12);
    let day = i64::from(dt.date.day).clamp(1, 31);
    let days = days_from_civil(i64::from(dt.date.year), month, day);
    let secs = i64::from(dt.time.hour.min(23)) * 3600
        + i64::from(dt.time.min.min(59)) * 60
        + i64::from(dt.time.sec.min(59));
    Timestamp {
        sec: days * 86_400 + secs,
        nsec: u32::from(dt.time.millis.min(999)) * 1_000_000,
    }
}

/// Unix time of a FAT date (midnight).
pub fn from_fat_date(d: fatfs::Date) -> Timestamp {
    from_fat(fatfs::DateTime::new(d, fatfs::Time::new(0, 0, 0, 0)))
}

/// The FAT date and time of a Unix time, clamped to FAT's range.
pub fn to_fat(t: Timestamp) -> fatfs::DateTime {
    let min = days_from_civil(MIN_YEAR, 1, 1) * 86_400;
    let max = days_from_civil(MAX_YEAR, 12, 31) * 86_400 + 86_399;
    let (sec, nsec) = if t.sec < min {
        (min, 0)
    } else if t.sec > max {
        (max, 0)
    } else {
        (t.sec, t.nsec.min(999_999_999))
    };
    let (y, m, d) = civil_from_days(sec.div_euclid(86_400));
    let s = sec.rem_euclid(86_400);
    // All values are in range by construction, so the asserting constructors cannot panic.
    fatfs::DateTime::new(
        fatfs::Date::new(y as u16, m as u16, d as u16),
        fatfs::Time::new(
            (s / 3600) as u16,
            (s / 60 % 60) as u16,
            (s % 60) as u16,
            (nsec / 1_000_000) as u16,
        ),
    )
}

/// fatfs's clock: the mount's [`Clock`].
#[derive(Clone)]
pub struct ClockTime(pub Arc<dyn Clock>);

impl core::fmt::Debug for ClockTime {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("ClockTime")
    }
}

impl fatfs::TimeProvider for ClockTime {
    fn get_current_date(&self) -> fatfs::Date {
        to_fat(self.0.now()).date
    }
    fn get_current_date_time(&self) -> fatfs::DateTime {
        to_fat(self.0.now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_at_fat_granularity() {
        // 2024-02-29 13:37:42.5 UTC
        let t = Timestamp {
            sec: 1_709_213_862,
            nsec: 500_000_000,
        };
        let dt = to_fat(t);
        assert_eq!((dt.date.year, dt.date.month, dt.date.day), (2024, 2, 29));
        assert_eq!((dt.time.hour, dt.time.min, dt.time.sec), (13, 37, 42));
        assert_eq!(from_fat(dt), t);
        assert_eq!(to_fat(Timestamp { sec: 0, nsec: 0 }).date.year, 1980);
        assert_eq!(
            to_fat(Timestamp {
                sec: i64::MAX,
                nsec: 0
            })
            .date
            .year,
            2107
        );
        assert_eq!(
            to_fat(Timestamp {
                sec: i64::MIN,
                nsec: 0
            })
            .date
            .year,
            1980
        );
    }
}
