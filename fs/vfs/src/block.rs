//! The block-device contract and a RAM-backed device for tests.

use alloc::vec;
use alloc::vec::Vec;
use spin::Mutex;

use crate::{VfsError, VfsResult};

/// Size of one addressable block ("sector") of every [`BlockDevice`].
pub const SECTOR_SIZE: usize = 512;

/// A disk: fixed-size 512-byte sectors, read and written in runs.
///
/// Contract: `buf.len()` is a multiple of [`SECTOR_SIZE`]; a run past the end of the device is
/// `InvalidInput`; a device failure is `Io`. A run may be served as one request (the virtio
/// driver does), so callers should pass the largest contiguous run they have. Writes are
/// durable only after `flush` returns.
pub trait BlockDevice: Send + Sync {
    /// Number of sectors.
    fn num_sectors(&self) -> u64;
    /// Read `buf.len() / SECTOR_SIZE` sectors starting at `sector`.
    fn read_sectors(&self, sector: u64, buf: &mut [u8]) -> VfsResult<()>;
    /// Write `buf.len() / SECTOR_SIZE` sectors starting at `sector`.
    fn write_sectors(&self, sector: u64, buf: &[u8]) -> VfsResult<()>;
    /// Make every completed write durable.
    fn flush(&self) -> VfsResult<()>;
    /// Write several runs `(sector, bytes)`; a device that can keep several requests in
    /// flight overrides this to submit them together. Returns when all are written.
    fn write_runs(&self, runs: &[(u64, &[u8])]) -> VfsResult<()> {
        for &(sector, bytes) in runs {
            self.write_sectors(sector, bytes)?;
        }
        Ok(())
    }
    /// Write several runs `(sector, pieces)`: the concatenation of a run's `pieces` is written
    /// from `sector` on. Every piece is a multiple of [`SECTOR_SIZE`] bytes (else
    /// `InvalidInput`, and nothing is written). This lets a caller whose bytes for one stretch
    /// of the disk lie in several buffers send them without first copying them into one: a
    /// device with scatter-gather (the kernel's virtio driver) sends each run as one request
    /// whose data is described by all its pieces. Returns when all are written; durable, like
    /// the other writes, only after `flush`. This default sends each piece as its own run.
    fn write_gather(&self, runs: &[(u64, &[&[u8]])]) -> VfsResult<()> {
        let flat = gather_to_runs(self.num_sectors(), runs)?;
        self.write_runs(&flat)
    }
    /// Read the sectors from `sector` on into the concatenation of `pieces`, a scattered read,
    /// e.g. straight into the pages of a user buffer: whole sectors in all, and every piece but
    /// the first and the last whole sectors (a buffer that does not start on a page), else
    /// `InvalidInput`. A device with scatter-gather (the kernel's virtio driver) serves it as
    /// one request; this default reads piece by piece, or through one buffer when a piece ends
    /// inside a sector.
    fn read_scatter(&self, sector: u64, pieces: &mut [&mut [u8]]) -> VfsResult<()> {
        let (total, whole) =
            scatter_shape(pieces.iter().map(|p| p.len())).ok_or(VfsError::InvalidInput)?;
        check_run(self.num_sectors(), sector, total)?;
        if whole {
            let mut at = sector;
            for piece in pieces.iter_mut() {
                self.read_sectors(at, piece)?;
                at += (piece.len() / SECTOR_SIZE) as u64;
            }
            return Ok(());
        }
        let mut joined = vec![0u8; total];
        self.read_sectors(sector, &mut joined)?;
        let mut at = 0;
        for piece in pieces.iter_mut() {
            piece.copy_from_slice(&joined[at..at + piece.len()]);
            at += piece.len();
        }
        Ok(())
    }
    /// A hint: start making the completed writes durable, without waiting (a device that can
    /// keep a flush in flight in the background does; the default does nothing). Durability
    /// still comes only from `flush`, which then has less left to do.
    fn flush_behind(&self) {}
    /// [`BlockDevice::flush`] whose wait may let other tasks run (a device that completes
    /// requests in the background does; the default is `flush`). For callers that hold no
    /// lock another task could wait for without giving the CPU away: the kernel's dbfs disk
    /// window, whose barrier holds only kvdb's writer lock meanwhile.
    fn flush_shared(&self) -> VfsResult<()> {
        self.flush()
    }
    /// [`BlockDevice::read_scatter`] whose wait may let other tasks run (a device that
    /// completes requests in the background does, when its caller's buffers cannot be freed
    /// meanwhile; the default is `read_scatter`). For the kernel's dbfs disk window, which
    /// holds no lock another task could wait for without giving the CPU away.
    fn read_scatter_shared(&self, sector: u64, pieces: &mut [&mut [u8]]) -> VfsResult<()> {
        self.read_scatter(sector, pieces)
    }
    /// [`BlockDevice::write_gather`] whose wait may let other tasks run (a device that
    /// completes requests in the background does, when its caller's buffers cannot be freed
    /// meanwhile; the default is `write_gather`). For the kernel's dbfs disk window's direct
    /// writes, sent with the window unlocked.
    fn write_gather_shared(&self, runs: &[(u64, &[&[u8]])]) -> VfsResult<()> {
        self.write_gather(runs)
    }
    /// [`BlockDevice::read_scatter`] into memory the caller owns for the whole call (no other
    /// task can free or unmap it), whose wait may let other tasks run (a device that completes
    /// requests in the background does; the default is `read_scatter`). For the kernel's dbfs
    /// disk window, whose faults read into fresh frames of their own.
    fn read_scatter_owned(&self, sector: u64, pieces: &mut [&mut [u8]]) -> VfsResult<()> {
        self.read_scatter(sector, pieces)
    }
    /// Size in bytes.
    fn size_bytes(&self) -> u64 {
        self.num_sectors() * SECTOR_SIZE as u64
    }
}

/// The shape a scattered read's pieces may have (`BlockDevice::read_scatter`): whole sectors
/// in all, and every non-empty piece but the first and the last whole sectors (the pages of a
/// buffer that does not start on a page). `Some((total, every piece whole sectors))`, or
/// `None` for another shape (or a total past `usize`).
pub fn scatter_shape(lens: impl Iterator<Item = usize>) -> Option<(usize, bool)> {
    // One pass, no list (this runs on every large read): a piece that is not whole sectors
    // and not the first is allowed only if no non-empty piece follows it.
    let mut total = 0usize;
    let mut whole = true;
    let mut partial_not_first = false;
    for l in lens.filter(|&l| l > 0) {
        if partial_not_first {
            return None;
        }
        if !l.is_multiple_of(SECTOR_SIZE) {
            whole = false;
            partial_not_first = total > 0;
        }
        total = total.checked_add(l)?;
    }
    total.is_multiple_of(SECTOR_SIZE).then_some((total, whole))
}

/// Check a run against a device of `num_sectors` sectors.
pub fn check_run(num_sectors: u64, sector: u64, len: usize) -> VfsResult<()> {
    if !len.is_multiple_of(SECTOR_SIZE) {
        return Err(VfsError::InvalidInput);
    }
    let count = (len / SECTOR_SIZE) as u64;
    match sector.checked_add(count) {
        Some(end) if end <= num_sectors => Ok(()),
        _ => Err(VfsError::InvalidInput),
    }
}

/// Check gathered runs against a device of `num_sectors` sectors (every piece a whole number
/// of sectors, every run inside the device) and list their non-empty pieces as plain runs,
/// each at the sector following the previous piece of its run.
pub fn gather_to_runs<'a>(
    num_sectors: u64,
    runs: &[(u64, &[&'a [u8]])],
) -> VfsResult<Vec<(u64, &'a [u8])>> {
    let mut flat = Vec::with_capacity(runs.len());
    for &(sector, pieces) in runs {
        let mut len = 0usize;
        for piece in pieces {
            if !piece.len().is_multiple_of(SECTOR_SIZE) {
                return Err(VfsError::InvalidInput);
            }
            len = len.checked_add(piece.len()).ok_or(VfsError::InvalidInput)?;
        }
        check_run(num_sectors, sector, len)?;
        let mut at = sector;
        for &piece in pieces {
            if !piece.is_empty() {
                flat.push((at, piece));
                at += (piece.len() / SECTOR_SIZE) as u64;
            }
        }
    }
    Ok(flat)
}

/// A disk held in memory, for tests and for building images.
pub struct RamDisk {
    data: Mutex<Vec<u8>>,
    sectors: u64,
}

impl RamDisk {
    /// A zero-filled disk of `bytes` bytes (rounded down to whole sectors).
    pub fn new(bytes: usize) -> Self {
        let sectors = (bytes / SECTOR_SIZE) as u64;
        RamDisk {
            data: Mutex::new(vec![0; sectors as usize * SECTOR_SIZE]),
            sectors,
        }
    }

    /// A disk holding `image` (its length rounded down to whole sectors).
    pub fn from_vec(mut image: Vec<u8>) -> Self {
        let sectors = (image.len() / SECTOR_SIZE) as u64;
        image.truncate(sectors as usize * SECTOR_SIZE);
        RamDisk {
            data: Mutex::new(image),
            sectors,
        }
    }

    /// A copy of the whole disk.
    pub fn to_vec(&self) -> Vec<u8> {
        self.data.lock().clone()
    }
}

impl BlockDevice for RamDisk {
    fn num_sectors(&self) -> u64 {
        self.sectors
    }
    fn read_sectors(&self, sector: u64, buf: &mut [u8]) -> VfsResult<()> {
        check_run(self.sectors, sector, buf.len())?;
        let at = sector as usize * SECTOR_SIZE;
        buf.copy_from_slice(&self.data.lock()[at..at + buf.len()]);
        Ok(())
    }
    fn write_sectors(&self, sector: u64, buf: &[u8]) -> VfsResult<()> {
        check_run(self.sectors, sector, buf.len())?;
        let at = sector as usize * SECTOR_SIZE;
        self.data.lock()[at..at + buf.len()].copy_from_slice(buf);
        Ok(())
    }
    fn flush(&self) -> VfsResult<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ram_disk_round_trip_and_bounds() {
        let d = RamDisk::new(8 * SECTOR_SIZE);
        let data: Vec<u8> = (0..2 * SECTOR_SIZE).map(|i| i as u8).collect();
        d.write_sectors(6, &data).unwrap();
        let mut back = vec![0; 2 * SECTOR_SIZE];
        d.read_sectors(6, &mut back).unwrap();
        assert_eq!(back, data);
        assert_eq!(d.write_sectors(7, &data), Err(VfsError::InvalidInput));
        assert_eq!(
            d.read_sectors(0, &mut [0; 100]),
            Err(VfsError::InvalidInput)
        );
        assert_eq!(
            d.read_sectors(u64::MAX, &mut back),
            Err(VfsError::InvalidInput)
        );
    }

    /// Sector `s` of the pattern: every byte says which sector it was meant for.
    fn pattern(first: u8, sectors: usize) -> Vec<u8> {
        (0..sectors * SECTOR_SIZE)
            .map(|i| first.wrapping_add((i / SECTOR_SIZE) as u8))
            .collect()
    }

    #[test]
    fn write_gather_places_each_piece_after_the_previous_one() {
        let d = RamDisk::new(32 * SECTOR_SIZE);
        // Run 1 at sector 3: pieces of 2, 0 and 3 sectors, from separate buffers.
        let a = pattern(10, 2);
        let b = pattern(12, 3);
        // Run 2 at sector 20: one piece of 1 sector, then one of 2.
        let c = pattern(40, 1);
        let e = pattern(41, 2);
        let empty: &[u8] = &[];
        d.write_gather(&[(3, &[&a, empty, &b]), (20, &[&c, &e])])
            .unwrap();

        let disk = d.to_vec();
        let sector = |s: usize| &disk[s * SECTOR_SIZE..(s + 1) * SECTOR_SIZE];
        for s in 0..32 {
            let expect = match s {
                3..=7 => Some(10 + (s - 3) as u8),
                20..=22 => Some(40 + (s - 20) as u8),
                _ => None,
            };
            match expect {
                Some(v) => assert!(
                    sector(s).iter().all(|&x| x == v),
                    "sector {s} holds the wrong piece"
                ),
                None => assert!(sector(s).iter().all(|&x| x == 0), "sector {s} was written"),
            }
        }
    }

    #[test]
    fn read_scatter_fills_a_buffer_whose_head_and_tail_end_inside_sectors() {
        let d = RamDisk::from_vec(pattern(1, 16));
        let mut buf = vec![0u8; 5 * SECTOR_SIZE];
        let (head, rest) = buf.split_at_mut(100);
        let (middle, tail) = rest.split_at_mut(4 * SECTOR_SIZE);
        d.read_scatter(2, &mut [head, middle, tail]).unwrap();
        assert_eq!(buf, pattern(3, 5));
        // A piece inside the run that ends inside a sector, or a run of part sectors: refused.
        let mut buf = vec![0u8; 3 * SECTOR_SIZE];
        let (a, rest) = buf.split_at_mut(SECTOR_SIZE);
        let (b, c) = rest.split_at_mut(100);
        assert_eq!(
            d.read_scatter(0, &mut [a, b, c]),
            Err(VfsError::InvalidInput)
        );
        let mut odd = vec![0u8; SECTOR_SIZE + 1];
        assert_eq!(
            d.read_scatter(0, &mut [&mut odd[..]]),
            Err(VfsError::InvalidInput)
        );
    }

    #[test]
    fn write_gather_rejects_bad_runs_and_writes_nothing() {
        let d = RamDisk::new(8 * SECTOR_SIZE);
        let good = pattern(1, 2);
        let half = vec![7u8; SECTOR_SIZE / 2];
        // A piece that is not whole sectors, even after a good run.
        assert_eq!(
            d.write_gather(&[(0, &[&good]), (4, &[&good, &half])]),
            Err(VfsError::InvalidInput)
        );
        // A run whose pieces together pass the end of the device.
        assert_eq!(
            d.write_gather(&[(5, &[&good, &good])]),
            Err(VfsError::InvalidInput)
        );
        assert_eq!(
            d.write_gather(&[(u64::MAX, &[&good])]),
            Err(VfsError::InvalidInput)
        );
        assert!(d.to_vec().iter().all(|&x| x == 0));
        // Exactly to the end is fine.
        d.write_gather(&[(4, &[&good, &good])]).unwrap();
        assert_eq!(
            &d.to_vec()[4 * SECTOR_SIZE..],
            &[good.as_slice(), good.as_slice()].concat()[..]
        );
    }
}
