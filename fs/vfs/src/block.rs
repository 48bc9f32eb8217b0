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
    /// Size in bytes.
    fn size_bytes(&self) -> u64 {
        self.num_sectors() * SECTOR_SIZE as u64
    }
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

/// A disk held in memory, for tests and for building images.
pub struct RamDisk {
    data: Mutex<Vec<u8>>,
    sectors: u64,
}

impl RamDisk {
    /// A zero-filled disk of `bytes` bytes (rounded down to whole sectors).
    pub fn new(bytes: usize) -> Self {
        let sectors = (bytes / SECTOR_SIZE) as u64;
        RamDisk { data: Mutex::new(vec![0; sectors as usize * SECTOR_SIZE]), sectors }
    }

    /// A disk holding `image` (its length rounded down to whole sectors).
    pub fn from_vec(mut image: Vec<u8>) -> Self {
        let sectors = (image.len() / SECTOR_SIZE) as u64;
        image.truncate(sectors as usize * SECTOR_SIZE);
        RamDisk { data: Mutex::new(image), sectors }
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
        assert_eq!(d.read_sectors(0, &mut [0; 100]), Err(VfsError::InvalidInput));
        assert_eq!(d.read_sectors(u64::MAX, &mut back), Err(VfsError::InvalidInput));
    }
}
