//! A disk's I/O statistics, as Linux keeps them for `/proc/diskstats`
//! (Documentation/admin-guide/iostats.rst): per kind of request (read, write, flush) the
//! requests completed, their sectors and the time they took, and for the disk the requests in
//! flight, the time it had at least one (`io_ticks`, iostat's `%util`) and the time weighted
//! by how many it had (`time_in_queue`, iostat's `aqu-sz`).
//!
//! A request is timed from its submission to the moment the kernel takes its completion back
//! from the used ring: for a sleeping waiter that includes the completion interrupt and the
//! wake-up (Linux stops the clock in its interrupt handler). The kernel's driver calls
//! [`DiskStats::submitted`] and [`DiskStats::completed`] under the disk's lock, with its
//! monotonic clock.

use vfs::SECTOR_SIZE;

use crate::RequestType;

/// What a request does, for its row of counters.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Op {
    /// A read (`VIRTIO_BLK_T_IN`).
    Read = 0,
    /// A write (`VIRTIO_BLK_T_OUT`).
    Write = 1,
    /// A flush of the device's write cache.
    Flush = 2,
}

impl Op {
    /// The row a request of type `t` counts in (a device-id request, which the driver never
    /// sends, with the flushes, as its counters do).
    pub fn of(t: RequestType) -> Op {
        match t {
            RequestType::In => Op::Read,
            RequestType::Out => Op::Write,
            _ => Op::Flush,
        }
    }

    /// Its name in messages: `read`, `write`, `flush`.
    pub fn name(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Write => "write",
            Op::Flush => "flush",
        }
    }
}

/// One disk's counters since boot (times in nanoseconds).
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct DiskStats {
    /// Requests completed, by [`Op`].
    pub ios: [u64; 3],
    /// Sectors (512 bytes) they moved, by [`Op`] (0 for flushes).
    pub sectors: [u64; 3],
    /// Time they took, summed, by [`Op`].
    pub ns: [u64; 3],
    /// Requests submitted and not yet completed.
    pub in_flight: u64,
    /// Time with at least one request in flight.
    pub busy_ns: u64,
    /// Time multiplied by the requests in flight, summed.
    pub queue_ns: u64,
    /// When `busy_ns` and `queue_ns` were last brought up to date.
    stamp: u64,
}

impl DiskStats {
    /// Nothing counted yet.
    pub const fn new() -> Self {
        DiskStats {
            ios: [0; 3],
            sectors: [0; 3],
            ns: [0; 3],
            in_flight: 0,
            busy_ns: 0,
            queue_ns: 0,
            stamp: 0,
        }
    }

    /// Bring the disk-wide times up to `now`.
    fn advance(&mut self, now: u64) {
        let span = now.saturating_sub(self.stamp);
        if self.in_flight > 0 {
            self.busy_ns += span;
            self.queue_ns += span * self.in_flight;
        }
        self.stamp = self.stamp.max(now);
    }

    /// A request went to the device at `now`.
    pub fn submitted(&mut self, now: u64) {
        self.advance(now);
        self.in_flight += 1;
    }

    /// A request of `op` moving `bytes`, submitted at `started`, was taken back at `now`.
    pub fn completed(&mut self, op: Op, bytes: usize, started: u64, now: u64) {
        self.advance(now);
        self.in_flight = self.in_flight.saturating_sub(1);
        let k = op as usize;
        self.ios[k] += 1;
        self.sectors[k] += (bytes / SECTOR_SIZE) as u64;
        self.ns[k] += now.saturating_sub(started);
    }

    /// The counters as of `now` (the disk-wide times include the stretch since the last
    /// request came or went).
    pub fn at(&self, now: u64) -> DiskStats {
        let mut s = *self;
        s.advance(now);
        s
    }

    /// The line of `/proc/diskstats` for disk `name` with device number `major:minor`:
    /// Linux's twenty fields (5.5 and later), times in milliseconds, the merge and discard
    /// counts 0 (requests are never merged after submission; no discards are sent).
    pub fn line(&self, major: u64, minor: u64, name: &str) -> alloc::string::String {
        let ms = |ns: u64| ns / 1_000_000;
        let (r, w, f) = (Op::Read as usize, Op::Write as usize, Op::Flush as usize);
        alloc::format!(
            "{:4} {:7} {} {} 0 {} {} {} 0 {} {} {} {} {} 0 0 0 0 {} {}\n",
            major,
            minor,
            name,
            self.ios[r],
            self.sectors[r],
            ms(self.ns[r]),
            self.ios[w],
            self.sectors[w],
            ms(self.ns[w]),
            self.in_flight,
            ms(self.busy_ns),
            ms(self.queue_ns),
            self.ios[f],
            ms(self.ns[f]),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_request_times_its_op_and_the_disk() {
        let mut s = DiskStats::new();
        s.submitted(1_000_000);
        assert_eq!(s.in_flight, 1);
        s.completed(Op::Read, 4096, 1_000_000, 4_000_000);
        assert_eq!(s.ios, [1, 0, 0]);
        assert_eq!(s.sectors, [8, 0, 0]);
        assert_eq!(s.ns, [3_000_000, 0, 0]);
        assert_eq!(
            (s.in_flight, s.busy_ns, s.queue_ns),
            (0, 3_000_000, 3_000_000)
        );
        // Idle time after it counts nowhere.
        assert_eq!(s.at(10_000_000).busy_ns, 3_000_000);
    }

    #[test]
    fn overlapping_requests_count_busy_time_once_and_queue_time_per_request() {
        let mut s = DiskStats::new();
        s.submitted(0);
        s.submitted(2_000_000);
        s.completed(Op::Write, 8192, 0, 4_000_000);
        s.completed(Op::Read, 512, 2_000_000, 6_000_000);
        // Busy from 0 to 6 ms; two in flight from 2 to 4 ms.
        assert_eq!(s.busy_ns, 6_000_000);
        assert_eq!(s.queue_ns, 8_000_000);
        assert_eq!(s.ios, [1, 1, 0]);
        assert_eq!(s.sectors, [1, 16, 0]);
        assert_eq!(s.ns, [4_000_000, 4_000_000, 0]);
    }

    #[test]
    fn a_request_in_flight_counts_up_to_the_look() {
        let mut s = DiskStats::new();
        s.submitted(5_000_000);
        let now = s.at(7_500_000);
        assert_eq!(
            (now.in_flight, now.busy_ns, now.queue_ns),
            (1, 2_500_000, 2_500_000)
        );
        // Looking changes nothing.
        assert_eq!(s.busy_ns, 0);
    }

    #[test]
    fn the_line_has_linux_twenty_fields_in_order() {
        let mut s = DiskStats::new();
        s.submitted(0);
        s.completed(Op::Read, 1 << 20, 0, 2_000_000);
        s.submitted(2_000_000);
        s.completed(Op::Write, 4096, 2_000_000, 3_000_000);
        s.submitted(3_000_000);
        s.completed(Op::Flush, 0, 3_000_000, 8_000_000);
        s.submitted(8_000_000);
        let line = s.line(254, 16, "vdb");
        let fields: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(fields.len(), 20, "{line:?}");
        assert_eq!(
            fields,
            [
                "254", "16", "vdb", "1", "0", "2048", "2", "1", "0", "8", "1", "1", "8", "8", "0",
                "0", "0", "0", "1", "5"
            ]
        );
        assert!(line.ends_with('\n'));
    }

    #[test]
    fn a_clock_that_looks_back_adds_nothing() {
        let mut s = DiskStats::new();
        s.submitted(10);
        s.completed(Op::Read, 512, 10, 5);
        assert_eq!((s.busy_ns, s.ns[0], s.in_flight), (0, 0, 0));
        // A completion without its submission does not wrap the count.
        s.completed(Op::Read, 512, 5, 6);
        assert_eq!(s.in_flight, 0);
    }
}
