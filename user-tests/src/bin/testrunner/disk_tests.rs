//! /proc/diskstats: each disk's requests, sectors and times, in Linux's layout.

use user_tests::prelude::*;

use crate::{ensure, Check, Ctx, TestResult};

/// One line of /proc/diskstats: device number, name, and the numbers after it (reads,
/// reads merged, sectors read, ms reading, writes, writes merged, sectors written, ms
/// writing, in flight, ms busy, weighted ms, then discards and flushes on newer kernels).
struct DiskLine {
    major: u64,
    minor: u64,
    name: String,
    n: Vec<u64>,
}

fn diskstats() -> Result<Vec<DiskLine>, String> {
    let text = String::from_utf8(crate::get_file("/proc/diskstats")?)
        .map_err(|_| String::from("/proc/diskstats is not UTF-8"))?;
    let mut lines = Vec::new();
    for line in text.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        let bad = || format!("/proc/diskstats line {line:?} is not Linux's layout");
        // Linux has had 14 fields (before 4.18), 18 (discards) and 20 (flushes, 5.5).
        ensure!(matches!(w.len(), 14 | 18 | 20), "{}", bad());
        let num = |s: &str| s.parse::<u64>().map_err(|_| bad());
        lines.push(DiskLine {
            major: num(w[0])?,
            minor: num(w[1])?,
            name: String::from(w[2]),
            n: w[3..].iter().map(|s| num(s)).collect::<Result<_, _>>()?,
        });
    }
    ensure!(!lines.is_empty(), "/proc/diskstats lists no disk");
    Ok(lines)
}

/// /proc/diskstats has a line per disk in Linux's layout, each virtio disk's device number
/// is its /dev node's, and I/O shows up in it: 64 KiB written and fsynced in the test's
/// directory add writes and at least 128 sectors written, and on dbfs-os (whose disk nodes
/// read the device itself) a 64 KiB read of /dev/vda adds a read and 128 sectors to vda.
pub fn proc_diskstats_counts_io(cx: &Ctx) -> TestResult {
    let before = diskstats()?;
    for d in before.iter().filter(|d| d.name.starts_with("vd")) {
        let st = sys::stat(&format!("/dev/{}", d.name)).what("stat the disk's node")?;
        ensure!(
            st.st_rdev == (d.major << 8 | d.minor),
            "/proc/diskstats gives {} the number {}:{}, its node {:#x}",
            d.name,
            d.major,
            d.minor,
            st.st_rdev
        );
    }
    let sum = |lines: &[DiskLine], k: usize| lines.iter().map(|d| d.n[k]).sum::<u64>();
    let path = cx.path("diskstats");
    let f = File::open(&path, O_RDWR | O_CREAT | O_TRUNC, 0o644).what("create")?;
    f.pwrite_all(&vec![0x5au8; 64 << 10], 0).what("pwrite")?;
    sys::fsync(f.fd()).what("fsync")?;
    drop(f);
    let _ = sys::unlink(&path);
    let after = diskstats()?;
    let (writes, sectors) = (
        sum(&after, 4) - sum(&before, 4),
        sum(&after, 6) - sum(&before, 6),
    );
    ensure!(
        writes >= 1 && sectors >= 128,
        "64 KiB written and fsynced added {writes} writes and {sectors} sectors written"
    );
    if sys::counters().is_err() {
        return Ok(());
    }
    let vda = |lines: &[DiskLine]| -> Result<(u64, u64), String> {
        let d = lines
            .iter()
            .find(|d| d.name == "vda")
            .ok_or_else(|| String::from("/proc/diskstats has no vda"))?;
        Ok((d.n[0], d.n[2]))
    };
    let (reads0, sectors0) = vda(&diskstats()?)?;
    let disk = File::open("/dev/vda", O_RDONLY, 0).what("open /dev/vda")?;
    let mut buf = vec![0u8; 64 << 10];
    disk.pread_full(&mut buf, 1 << 20).what("pread /dev/vda")?;
    drop(disk);
    let (reads1, sectors1) = vda(&diskstats()?)?;
    ensure!(
        reads1 > reads0 && sectors1 - sectors0 >= 128,
        "a 64 KiB read of /dev/vda took vda from {reads0} reads, {sectors0} sectors to \
         {reads1}, {sectors1}"
    );
    Ok(())
}
