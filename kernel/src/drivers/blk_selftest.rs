//! A boot-time check of the virtio-blk scatter-gather path on a scratch disk (kernel parameter
//! `blk_selftest=1`, run by `make test-guest` on vdc, the raw disk no file system uses).
//!
//! The kernel crate cannot run `cargo test` (riscv64 only) and the file systems reach
//! `write_gather` only with whatever frame layout they happen to get, so this writes layouts
//! chosen to hit every case of the request builder against the real device: more pieces than
//! `seg_max`, more bytes than one request, a piece cut at the request limit, pieces of odd
//! sector counts, pieces adjacent in memory, several runs in flight at once, and the errors
//! (a piece that is not whole sectors, a run past the end: nothing may be written). Then it
//! reads the region back and checks every sector holds the bytes meant for it, and reads one
//! run back scattered (`read_scatter`) into pieces in scrambled memory order, and one into
//! pieces that end inside sectors (the pages of a buffer that does not start on a page).
//! [`window_clusters`] then checks which pages a disk window's faults read on that disk.

use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;

use vfs::{BlockDevice, VfsError, SECTOR_SIZE};

use super::virtio_blk::{VirtioDisk, MAX_REQUEST};

/// Sectors of the scratch region the test owns (10 MiB from sector 0).
const REGION_SECTORS: u64 = 20480;
/// Pieces of run A: 4 KiB each, scattered in memory; more than any `seg_max` we allow
/// (`QUEUE_SIZE` - 2 = 510) and more than two requests' bytes (2.4 MiB).
const A_PIECES: usize = 600;
const A_SECTOR: u64 = 8;
const B_SECTOR: u64 = 4816;
const C_SECTOR: u64 = 11400;

/// The bytes sector `sector` holds in generation `generation`: a stamp (generation, sector)
/// in the first 8 bytes, then a pattern that differs from sector to sector.
fn fill_sector(out: &mut [u8], sector: u64, generation: u8) {
    out[..8].copy_from_slice(&((u64::from(generation) << 56) | sector).to_le_bytes());
    for (j, b) in out[8..].iter_mut().enumerate() {
        *b = (sector as usize)
            .wrapping_mul(31)
            .wrapping_add(j * 7)
            .wrapping_add(usize::from(generation) * 101) as u8;
    }
}

/// `sectors` sectors of generation `generation` starting at disk sector `first`.
fn pattern(first: u64, sectors: usize, generation: u8) -> Vec<u8> {
    let mut v = vec![0u8; sectors * SECTOR_SIZE];
    for (k, s) in v.chunks_mut(SECTOR_SIZE).enumerate() {
        fill_sector(s, first + k as u64, generation);
    }
    v
}

/// Read the region back and compare each sector with `expected_generation(sector)`.
fn check_region(disk: &VirtioDisk, expected_generation: impl Fn(u64) -> u8) -> Result<(), String> {
    let mut back = vec![0u8; REGION_SECTORS as usize * SECTOR_SIZE];
    disk.read_sectors(0, &mut back)
        .map_err(|e| format!("read back: {:?}", e))?;
    let mut want = [0u8; SECTOR_SIZE];
    for (s, got) in back.chunks(SECTOR_SIZE).enumerate() {
        let s = s as u64;
        fill_sector(&mut want, s, expected_generation(s));
        if got != want {
            let stamp = u64::from_le_bytes(got[..8].try_into().unwrap_or([0; 8]));
            return Err(format!(
                "sector {} holds generation {} sector {}, expected generation {}",
                s,
                stamp >> 56,
                stamp & ((1 << 56) - 1),
                expected_generation(s)
            ));
        }
    }
    Ok(())
}

/// Run the check on `disk` (its first 10 MiB are overwritten). `Err` says what was wrong.
pub fn run(disk: &VirtioDisk) -> Result<(), String> {
    if disk.num_sectors() < REGION_SECTORS + 8 {
        return Err(format!(
            "{} is smaller than the 10 MiB the test needs",
            disk.name
        ));
    }
    // Generation 1 everywhere, one piece per call.
    disk.write_sectors(0, &pattern(0, REGION_SECTORS as usize, 1))
        .map_err(|e| format!("write: {:?}", e))?;

    // Run A: piece k (disk sector A_SECTOR + 8k) lies at slot (7k mod 300) of one buffer, so
    // no two consecutive pieces are adjacent in memory.
    let mut a_buf = vec![0u8; A_PIECES * 4096];
    let slot = |k: usize| (k * 7) % A_PIECES;
    for k in 0..A_PIECES {
        let first = A_SECTOR + 8 * k as u64;
        a_buf[slot(k) * 4096..(slot(k) + 1) * 4096].copy_from_slice(&pattern(first, 8, 2));
    }
    let a_pieces: Vec<&[u8]> = (0..A_PIECES)
        .map(|k| &a_buf[slot(k) * 4096..(slot(k) + 1) * 4096])
        .collect();
    // Run B: 3 MiB in one piece (cut at each request limit), then pieces of 1 and 3 sectors.
    let b_big = pattern(B_SECTOR, 6144, 2);
    let b_one = pattern(B_SECTOR + 6144, 1, 2);
    let b_three = pattern(B_SECTOR + 6145, 3, 2);
    let b_pieces: [&[u8]; 3] = [&b_big, &b_one, &b_three];
    // Run C: two pieces adjacent in memory and on the disk, and an empty one between them.
    let c_buf = pattern(C_SECTOR, 32, 2);
    let (c_first, c_second) = c_buf.split_at(16 * SECTOR_SIZE);
    let c_pieces: [&[u8]; 3] = [c_first, &[], c_second];

    // The errors first: each call holds a good run too, and must write nothing.
    let half = [0u8; SECTOR_SIZE / 2];
    type Runs<'a> = &'a [(u64, &'a [&'a [u8]])];
    let bad_calls: [(&str, Runs); 3] = [
        (
            "a piece of half a sector",
            &[(A_SECTOR, &a_pieces[..1]), (C_SECTOR, &[&half])],
        ),
        (
            "a run past the end",
            &[
                (A_SECTOR, &a_pieces[..1]),
                (disk.num_sectors() - 2, &[&b_three]),
            ],
        ),
        (
            "a run past u64",
            &[(u64::MAX - 1, &[&b_one, &b_one, &b_one])],
        ),
    ];
    for (what, runs) in bad_calls {
        match disk.write_gather(runs) {
            Err(VfsError::InvalidInput) => {}
            other => return Err(format!("{}: {:?}, expected InvalidInput", what, other)),
        }
    }
    check_region(disk, |_| 1).map_err(|e| format!("after the rejected writes: {}", e))?;

    // A background flush in flight while the gathered write runs: its completion must be
    // taken back on the way (not mistaken for a stray one, which resets the device), and a
    // second hint while it is still in flight sends nothing more.
    let flushes = crate::counters::snapshot().dev_flushes;
    disk.flush_behind();
    disk.flush_behind();
    let before = crate::counters::snapshot().dev_write_requests;
    let runs: [(u64, &[&[u8]]); 3] = [
        (A_SECTOR, &a_pieces),
        (B_SECTOR, &b_pieces),
        (C_SECTOR, &c_pieces),
    ];
    disk.write_gather(&runs)
        .map_err(|e| format!("write_gather: {:?}", e))?;
    let requests = crate::counters::snapshot().dev_write_requests - before;

    let in_run = |s: u64, at: u64, sectors: u64| s >= at && s < at + sectors;
    check_region(disk, |s| {
        if in_run(s, A_SECTOR, 8 * A_PIECES as u64)
            || in_run(s, B_SECTOR, 6148)
            || in_run(s, C_SECTOR, 32)
        {
            2
        } else {
            1
        }
    })?;

    // Run A read back into the same scrambled slots of another buffer (`read_scatter`): it
    // must come out identical to `a_buf`, in as few requests as the write took.
    let mut r_buf = vec![0u8; A_PIECES * 4096];
    let mut slots: Vec<Option<&mut [u8]>> = r_buf.chunks_mut(4096).map(Some).collect();
    let mut r_pieces: Vec<&mut [u8]> = Vec::with_capacity(A_PIECES);
    for k in 0..A_PIECES {
        r_pieces.push(slots[slot(k)].take().ok_or("slot used twice")?);
    }
    let before_read = crate::counters::snapshot().dev_read_requests;
    disk.read_scatter(A_SECTOR, &mut r_pieces)
        .map_err(|e| format!("read_scatter: {:?}", e))?;
    let read_requests = crate::counters::snapshot().dev_read_requests - before_read;
    drop(r_pieces);
    if r_buf != a_buf {
        return Err(String::from(
            "read_scatter put sectors into the wrong pieces",
        ));
    }
    match disk.read_scatter(A_SECTOR, &mut [&mut [0u8; 100][..]]) {
        Err(VfsError::InvalidInput) => {}
        other => {
            return Err(format!(
                "read_scatter of half a sector: {:?}, expected InvalidInput",
                other
            ))
        }
    }

    // Run B read back into a buffer laid out like a malloc'ed user buffer's pages: the first
    // piece ends 16 bytes short of a page, so every piece boundary lies inside a sector, and
    // there are more pieces than one request takes; each request must still be whole sectors.
    let b_len = 6148 * SECTOR_SIZE;
    let mut u_buf = vec![0u8; b_len];
    let (head, mut rest) = u_buf.split_at_mut(4096 - 16);
    let mut u_pieces: Vec<&mut [u8]> = vec![head];
    while !rest.is_empty() {
        let (page, later) = rest.split_at_mut(rest.len().min(4096));
        u_pieces.push(page);
        rest = later;
    }
    disk.read_scatter(B_SECTOR, &mut u_pieces)
        .map_err(|e| format!("read_scatter into unaligned pages: {:?}", e))?;
    drop(u_pieces);
    if u_buf[..] != pattern(B_SECTOR, 6148, 2)[..] {
        return Err(String::from(
            "read_scatter into pieces that end inside sectors read the wrong bytes",
        ));
    }

    // A run is split only where it must be: A every `max_segments` pieces (its pieces are
    // 4 KiB, so 1 MiB is 256 of them), B every MAX_REQUEST bytes (its last request holds 3
    // pieces: the tail of the big one is empty, so 2, if the device takes that many), C not
    // at all.
    let per_request = disk.max_segments().min(MAX_REQUEST / 4096);
    let b_requests =
        (6148 * SECTOR_SIZE).div_ceil(MAX_REQUEST) + usize::from(disk.max_segments() < 2);
    let expected = A_PIECES.div_ceil(per_request) + b_requests + 1;
    if requests != expected as u64 {
        return Err(format!(
            "{} write requests, expected {} ({} pieces each)",
            requests, expected, per_request
        ));
    }
    if read_requests != A_PIECES.div_ceil(per_request) as u64 {
        return Err(format!(
            "{} read requests for run A, expected {}",
            read_requests,
            A_PIECES.div_ceil(per_request)
        ));
    }
    disk.flush()
        .map_err(|e| format!("flush after flush_behind: {:?}", e))?;
    let sent = crate::counters::snapshot().dev_flushes - flushes;
    if !(2..=3).contains(&sent) {
        return Err(format!(
            "{} flushes for two flush_behind hints and a flush, expected 2 or 3",
            sent
        ));
    }
    Ok(())
}

/// A boot-time check of the disk window's fault clusters on the same scratch disk (after
/// [`run`], with `blk_selftest=1`): a fault that starts a stream reads the pages before it
/// back to its aligned cluster's start, stopping at a resident page, and the pages it maps
/// hold the disk's bytes. Counted through the kernel counters, which nothing else moves this
/// early in boot. The window stays (windows live as long as the kernel) but keeps no pages.
pub fn window_clusters(disk: Arc<VirtioDisk>) -> Result<(), String> {
    use crate::drivers::window::{DiskWindow, FAULT_CLUSTER_PAGES};
    use crate::mm::PAGE_SIZE;
    let w = DiskWindow::new(disk.clone(), 0).map_err(|e| format!("window: {:?}", e))?;
    let c = FAULT_CLUSTER_PAGES;
    // (page touched, first page the fault must read, pages it must read). The first two
    // touches start streams in clean clusters: back to the cluster start, then a whole
    // cluster on from the page touched (the second reads up to page 5c + 3). The third
    // starts a stream two pages past that, in the same aligned cluster: it may not go back
    // over resident pages, so it starts right after the second one's last.
    let steps = [
        (5, 0, 5 + c),
        (4 * c + 3, 4 * c, 3 + c),
        (5 * c + 5, 5 * c + 3, 2 + c),
    ];
    for (page, first, pages) in steps {
        let before = crate::counters::snapshot();
        let bytes = w
            .slice(page * PAGE_SIZE, 1)
            .ok_or_else(|| format!("page {page} is past the window"))?;
        // SAFETY: a read of a live window byte; the volatile read keeps the touch.
        let _ = unsafe { core::ptr::read_volatile(bytes.as_ptr()) };
        let after = crate::counters::snapshot();
        let faults = after.page_faults - before.page_faults;
        let read = after.window_pages_read - before.window_pages_read;
        if faults != 1 || read != pages as u64 {
            return Err(format!(
                "touching page {page}: {faults} faults reading {read} pages, expected 1 fault \
                 reading {pages} (pages {first}..{})",
                first + pages
            ));
        }
        // Every page of the cluster is resident now (no fault) and holds the disk's bytes.
        let mut want = vec![0u8; pages * PAGE_SIZE];
        disk.read_sectors((first * PAGE_SIZE / SECTOR_SIZE) as u64, &mut want)
            .map_err(|e| format!("read back: {:?}", e))?;
        let got = w
            .slice(first * PAGE_SIZE, pages * PAGE_SIZE)
            .ok_or("cluster past the window")?;
        let mismatch = got.iter().zip(&want).position(|(a, b)| a != b);
        let faults = crate::counters::snapshot().page_faults - after.page_faults;
        if let Some(at) = mismatch {
            return Err(format!(
                "touching page {page}: window byte {} differs from the disk",
                first * PAGE_SIZE + at
            ));
        }
        if faults != 0 {
            return Err(format!(
                "touching page {page}: its cluster {first}..{} took {faults} more faults",
                first + pages
            ));
        }
    }
    w.drop_pages();
    Ok(())
}
