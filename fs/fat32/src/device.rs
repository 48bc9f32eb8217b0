//! The byte cursor fatfs reads and writes through, over a sector-addressed [`BlockDevice`].
//!
//! fatfs sees a seekable byte stream; the device only knows 512-byte sectors. A request is split
//! into at most three device calls: the unaligned head (read-modify-write of one sector), the
//! aligned middle as ONE `read_sectors` / `write_sectors` call (the kernel's device is a block
//! cache over virtio, where one large request is much cheaper than many small ones), and the
//! unaligned tail.
//!
//! fatfs reads the FAT four bytes at a time, so the cursor keeps the last partially accessed
//! sector ([`SectorCache`]). The cache is write-through: every write reaches the device at once,
//! and writes that cover the cached sector update it, so the device and the cache never disagree.
//! The cache is shared (behind its own lock) with [`DeviceIo`], which the file system also uses
//! for its direct data path.
//!
//! `flush` on the cursor does nothing: fatfs calls it whenever it flushes a file's directory
//! entry, and a device flush on every close would be a needless barrier. Durability comes from
//! [`DeviceIo::flush`], called by `fsync` and `sync`, and when the cursor is dropped (unmount).

use alloc::sync::Arc;
use spin::Mutex;
use vfs::{BlockDevice, VfsError, VfsResult, SECTOR_SIZE};

const SECTOR: u64 = SECTOR_SIZE as u64;

/// The error type of the cursor (a newtype: fatfs's `IoError` trait and `VfsError` are both
/// foreign to this crate).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceError(pub VfsError);

impl fatfs::IoError for DeviceError {
    fn is_interrupted(&self) -> bool {
        false
    }
    fn new_unexpected_eof_error() -> Self {
        DeviceError(VfsError::Io)
    }
    fn new_write_zero_error() -> Self {
        DeviceError(VfsError::NoSpace)
    }
}

impl From<VfsError> for DeviceError {
    fn from(e: VfsError) -> Self {
        DeviceError(e)
    }
}

/// One cached sector.
struct SectorCache {
    sector: Option<u64>,
    data: [u8; SECTOR_SIZE],
}

/// The device plus the one-sector cache; shared by the cursor and the direct data path.
pub struct DeviceIo {
    dev: Arc<dyn BlockDevice>,
    cache: Mutex<SectorCache>,
    size: u64,
}

impl DeviceIo {
    pub fn new(dev: Arc<dyn BlockDevice>) -> Self {
        let size = dev.num_sectors().saturating_mul(SECTOR);
        DeviceIo {
            dev,
            cache: Mutex::new(SectorCache {
                sector: None,
                data: [0; SECTOR_SIZE],
            }),
            size,
        }
    }

    /// Size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    pub fn flush(&self) -> VfsResult<()> {
        self.dev.flush()
    }

    /// Read `buf.len()` bytes at byte offset `pos`; the range must lie inside the device.
    pub fn read_bytes(&self, pos: u64, buf: &mut [u8]) -> VfsResult<()> {
        let end = pos
            .checked_add(buf.len() as u64)
            .ok_or(VfsError::InvalidInput)?;
        if end > self.size {
            return Err(VfsError::InvalidInput);
        }
        let mut done = 0usize;
        let mut at = pos;
        // Head: a partial first sector.
        if !at.is_multiple_of(SECTOR) {
            let in_sector = (at % SECTOR) as usize;
            let n = buf.len().min(SECTOR_SIZE - in_sector);
            let mut cache = self.cache.lock();
            self.load(&mut cache, at / SECTOR)?;
            buf[..n].copy_from_slice(&cache.data[in_sector..in_sector + n]);
            done += n;
            at += n as u64;
        }
        // Middle: whole sectors in one request.
        let whole = (buf.len() - done) / SECTOR_SIZE * SECTOR_SIZE;
        if whole > 0 {
            self.dev
                .read_sectors(at / SECTOR, &mut buf[done..done + whole])?;
            done += whole;
            at += whole as u64;
        }
        // Tail: a partial last sector.
        if done < buf.len() {
            let mut cache = self.cache.lock();
            self.load(&mut cache, at / SECTOR)?;
            let n = buf.len() - done;
            buf[done..].copy_from_slice(&cache.data[..n]);
        }
        Ok(())
    }

    /// Write `buf` at byte offset `pos`; the range must lie inside the device.
    pub fn write_bytes(&self, pos: u64, buf: &[u8]) -> VfsResult<()> {
        let end = pos
            .checked_add(buf.len() as u64)
            .ok_or(VfsError::InvalidInput)?;
        if end > self.size {
            return Err(VfsError::InvalidInput);
        }
        let mut done = 0usize;
        let mut at = pos;
        if !at.is_multiple_of(SECTOR) {
            let in_sector = (at % SECTOR) as usize;
            let n = buf.len().min(SECTOR_SIZE - in_sector);
            let mut cache = self.cache.lock();
            let sector = at / SECTOR;
            self.load(&mut cache, sector)?;
            cache.data[in_sector..in_sector + n].copy_from_slice(&buf[..n]);
            self.store(&mut cache, sector)?;
            done += n;
            at += n as u64;
        }
        let whole = (buf.len() - done) / SECTOR_SIZE * SECTOR_SIZE;
        if whole > 0 {
            let first = at / SECTOR;
            self.dev.write_sectors(first, &buf[done..done + whole])?;
            // Keep the cached sector equal to the device.
            let mut cache = self.cache.lock();
            if let Some(s) = cache.sector {
                if s >= first && s < first + (whole / SECTOR_SIZE) as u64 {
                    let off = done + ((s - first) as usize) * SECTOR_SIZE;
                    cache.data.copy_from_slice(&buf[off..off + SECTOR_SIZE]);
                }
            }
            done += whole;
            at += whole as u64;
        }
        if done < buf.len() {
            let mut cache = self.cache.lock();
            let sector = at / SECTOR;
            self.load(&mut cache, sector)?;
            let n = buf.len() - done;
            cache.data[..n].copy_from_slice(&buf[done..]);
            self.store(&mut cache, sector)?;
        }
        Ok(())
    }

    fn load(&self, cache: &mut SectorCache, sector: u64) -> VfsResult<()> {
        if cache.sector != Some(sector) {
            cache.sector = None;
            self.dev.read_sectors(sector, &mut cache.data)?;
            cache.sector = Some(sector);
        }
        Ok(())
    }

    fn store(&self, cache: &mut SectorCache, sector: u64) -> VfsResult<()> {
        if let Err(e) = self.dev.write_sectors(sector, &cache.data) {
            // The device may now hold either version: forget the cached copy.
            cache.sector = None;
            return Err(e);
        }
        Ok(())
    }
}

/// The seekable byte stream handed to fatfs.
pub struct DeviceCursor {
    io: Arc<DeviceIo>,
    pos: u64,
}

impl DeviceCursor {
    pub fn new(io: Arc<DeviceIo>) -> Self {
        DeviceCursor { io, pos: 0 }
    }
}

/// fatfs drops its cursor last when a file system is unmounted (after writing FSInfo and the
/// clean flag): make those writes durable. A failure cannot be reported from `drop`.
impl Drop for DeviceCursor {
    fn drop(&mut self) {
        let _ = self.io.flush();
    }
}

impl fatfs::IoBase for DeviceCursor {
    type Error = DeviceError;
}

impl fatfs::Read for DeviceCursor {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, DeviceError> {
        let left = self.io.size().saturating_sub(self.pos);
        let n = (buf.len() as u64).min(left) as usize;
        if n == 0 {
            return Ok(0);
        }
        self.io.read_bytes(self.pos, &mut buf[..n])?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl fatfs::Write for DeviceCursor {
    fn write(&mut self, buf: &[u8]) -> Result<usize, DeviceError> {
        let left = self.io.size().saturating_sub(self.pos);
        let n = (buf.len() as u64).min(left) as usize;
        if n == 0 {
            return Ok(0);
        }
        self.io.write_bytes(self.pos, &buf[..n])?;
        self.pos += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> Result<(), DeviceError> {
        Ok(())
    }
}

impl fatfs::Seek for DeviceCursor {
    fn seek(&mut self, pos: fatfs::SeekFrom) -> Result<u64, DeviceError> {
        let new = match pos {
            fatfs::SeekFrom::Start(n) => Some(n),
            fatfs::SeekFrom::End(d) => self.io.size().checked_add_signed(d),
            fatfs::SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        match new {
            Some(n) => {
                self.pos = n;
                Ok(n)
            }
            None => Err(DeviceError(VfsError::InvalidInput)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use alloc::vec::Vec;
    use core::sync::atomic::{AtomicUsize, Ordering};
    use fatfs::{Read, Seek, SeekFrom, Write};
    use vfs::RamDisk;

    /// Counts device calls, to check that the aligned middle is one request.
    struct Counting {
        disk: RamDisk,
        reads: AtomicUsize,
        writes: AtomicUsize,
    }
    impl BlockDevice for Counting {
        fn num_sectors(&self) -> u64 {
            self.disk.num_sectors()
        }
        fn read_sectors(&self, s: u64, b: &mut [u8]) -> VfsResult<()> {
            self.reads.fetch_add(1, Ordering::Relaxed);
            self.disk.read_sectors(s, b)
        }
        fn write_sectors(&self, s: u64, b: &[u8]) -> VfsResult<()> {
            self.writes.fetch_add(1, Ordering::Relaxed);
            self.disk.write_sectors(s, b)
        }
        fn flush(&self) -> VfsResult<()> {
            Ok(())
        }
    }

    #[test]
    fn unaligned_round_trip_uses_one_request_for_the_middle() {
        let dev = Arc::new(Counting {
            disk: RamDisk::new(64 * SECTOR_SIZE),
            reads: 0.into(),
            writes: 0.into(),
        });
        let mut c = DeviceCursor::new(Arc::new(DeviceIo::new(dev.clone())));
        let data: Vec<u8> = (0..10 * SECTOR_SIZE + 77).map(|i| (i * 7) as u8).collect();
        c.seek(SeekFrom::Start(100)).unwrap();
        c.write_all(&data).unwrap();
        // head RMW (read + write), middle (one write), tail RMW (read + write)
        assert_eq!(dev.writes.load(Ordering::Relaxed), 3);
        let reads_before = dev.reads.load(Ordering::Relaxed);
        c.seek(SeekFrom::Start(100)).unwrap();
        let mut back = vec![0u8; data.len()];
        c.read_exact(&mut back).unwrap();
        assert_eq!(back, data);
        assert!(dev.reads.load(Ordering::Relaxed) - reads_before <= 3);
        // The bytes around the write are untouched.
        let mut raw = vec![0u8; 64 * SECTOR_SIZE];
        dev.disk.read_sectors(0, &mut raw).unwrap();
        assert!(raw[..100].iter().all(|&b| b == 0));
        assert_eq!(&raw[100..100 + data.len()], &data[..]);
        assert!(raw[100 + data.len()..].iter().all(|&b| b == 0));
        // Past the end: short, then zero.
        c.seek(SeekFrom::End(-3)).unwrap();
        assert_eq!(c.write(&[1; 10]).unwrap(), 3);
        assert_eq!(c.write(&[1; 10]).unwrap(), 0);
        assert_eq!(c.read(&mut [0; 4]).unwrap(), 0);
        assert!(c.seek(SeekFrom::Current(-1_000_000)).is_err());
    }
}
