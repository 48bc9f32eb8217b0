//! The byte cursor fatfs reads and writes through, over a sector-addressed [`BlockDevice`].
//!
//! fatfs sees a seekable byte stream; the device only knows 512-byte sectors. A request is split
//! into at most three device calls: the unaligned head (read-modify-write of one sector), the
//! aligned middle as ONE `read_sectors` / `write_sectors` call (the kernel's device is a block
//! cache over virtio, where one large request is much cheaper than many small ones), and the
//! unaligned tail.
//!
//! fatfs reads and writes the FAT four bytes at a time, so [`DeviceIo`] keeps the last
//! [`CACHED_SECTORS`] partially accessed sectors, write-back: dirty sectors reach the device on
//! eviction and on flush; whole-sector reads lay cached dirty sectors over what the device
//! returned, and whole-sector writes refresh cached copies, so no reader sees stale data. The
//! same `DeviceIo` serves the file system's direct data path.
//!
//! fatfs grows a file one cluster per device write. Whole-sector writes that continue the
//! previous one are therefore gathered into a pending run (up to [`MAX_PENDING`] bytes) and
//! sent as one request when the run breaks, fills, or is flushed; any read or write that
//! overlaps the run sends it first, so the device is never read stale. Order between writes to
//! different places does not matter to FAT (it makes no crash-ordering promises).
//!
//! `flush` on the cursor does nothing: fatfs calls it whenever it flushes a file's directory
//! entry, and a device flush on every close would be a needless barrier. Durability comes from
//! [`DeviceIo::flush`], called by `fsync` and `sync`, and when the cursor is dropped (unmount).

use alloc::sync::Arc;
use alloc::vec::Vec;
use spin::Mutex;
use vfs::{BlockDevice, VfsError, VfsResult, SECTOR_SIZE};

const SECTOR: u64 = SECTOR_SIZE as u64;
/// Longest run of sequential writes gathered into one device request.
pub const MAX_PENDING: usize = 1 << 20;

/// Sequential whole-sector writes not yet sent to the device.
struct Pending {
    first_sector: u64,
    data: Vec<u8>,
}

impl Pending {
    fn end_sector(&self) -> u64 {
        self.first_sector + (self.data.len() / SECTOR_SIZE) as u64
    }
}

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

/// Sectors kept by [`DeviceIo`]: fatfs updates both FAT copies for every cluster it
/// allocates, so a handful of sectors is enough to stop FAT1/FAT2 ping-pong.
pub const CACHED_SECTORS: usize = 16;

/// One cached sector.
struct CachedSector {
    sector: u64,
    data: [u8; SECTOR_SIZE],
    /// Newer than the device (written back on eviction and flush).
    dirty: bool,
}

/// A small write-back cache of sectors touched by partial-sector reads and writes (FAT
/// entries, directory entries, FSInfo).
struct SectorCache {
    entries: Vec<CachedSector>,
    /// Round-robin victim for eviction.
    next_victim: usize,
}

/// The device, the sector cache and the pending run; shared by the cursor and the direct data
/// path.
pub struct DeviceIo {
    dev: Arc<dyn BlockDevice>,
    cache: Mutex<SectorCache>,
    pending: Mutex<Pending>,
    size: u64,
}

impl DeviceIo {
    pub fn new(dev: Arc<dyn BlockDevice>) -> Self {
        let size = dev.num_sectors().saturating_mul(SECTOR);
        DeviceIo {
            dev,
            cache: Mutex::new(SectorCache {
                entries: Vec::new(),
                next_victim: 0,
            }),
            pending: Mutex::new(Pending {
                first_sector: 0,
                data: Vec::new(),
            }),
            size,
        }
    }

    /// Send the pending run, if any.
    fn send_pending(&self, p: &mut Pending) -> VfsResult<()> {
        if p.data.is_empty() {
            return Ok(());
        }
        let r = self.dev.write_sectors(p.first_sector, &p.data);
        p.data.clear();
        r
    }

    /// Send the pending run if it overlaps the sectors holding bytes [pos, pos + len).
    fn settle(&self, pos: u64, len: usize) -> VfsResult<()> {
        let mut p = self.pending.lock();
        if p.data.is_empty() || len == 0 {
            return Ok(());
        }
        let first = pos / SECTOR;
        let end = (pos + len as u64).div_ceil(SECTOR);
        if first < p.end_sector() && end > p.first_sector {
            self.send_pending(&mut p)?;
        }
        Ok(())
    }

    /// Make cached copies of sectors [first, first + buf.len()/SECTOR_SIZE) equal to `buf`,
    /// which is on its way to the device (so they are clean).
    fn refresh_cached(&self, first: u64, buf: &[u8]) {
        let n = (buf.len() / SECTOR_SIZE) as u64;
        let mut cache = self.cache.lock();
        for e in cache.entries.iter_mut() {
            if e.sector >= first && e.sector < first + n {
                let off = ((e.sector - first) as usize) * SECTOR_SIZE;
                e.data.copy_from_slice(&buf[off..off + SECTOR_SIZE]);
                e.dirty = false;
            }
        }
    }

    /// Gather a whole-sector write that continues the pending run (or starts one). Returns
    /// false when the write is not of that shape and must go the normal way.
    fn gather(&self, pos: u64, buf: &[u8]) -> VfsResult<bool> {
        if !pos.is_multiple_of(SECTOR)
            || buf.is_empty()
            || !buf.len().is_multiple_of(SECTOR_SIZE)
            || buf.len() >= MAX_PENDING
        {
            return Ok(false);
        }
        let sector = pos / SECTOR;
        let mut p = self.pending.lock();
        let continues = !p.data.is_empty() && sector == p.end_sector();
        if !continues || p.data.len() + buf.len() > MAX_PENDING {
            if !p.data.is_empty() && !continues {
                // A write elsewhere: only overlapping runs must go first.
                let end = sector + (buf.len() / SECTOR_SIZE) as u64;
                if sector < p.end_sector() && end > p.first_sector {
                    self.send_pending(&mut p)?;
                } else {
                    return Ok(false);
                }
            } else {
                self.send_pending(&mut p)?;
            }
            p.first_sector = sector;
        }
        p.data.extend_from_slice(buf);
        drop(p);
        self.refresh_cached(sector, buf);
        Ok(true)
    }

    /// Size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Write back dirty cached sectors and the pending run, then flush the device.
    pub fn flush(&self) -> VfsResult<()> {
        self.write_back_cached()?;
        self.send_pending(&mut self.pending.lock())?;
        self.dev.flush()
    }

    fn write_back_cached(&self) -> VfsResult<()> {
        let mut cache = self.cache.lock();
        for e in cache.entries.iter_mut().filter(|e| e.dirty) {
            self.dev.write_sectors(e.sector, &e.data)?;
            e.dirty = false;
        }
        Ok(())
    }

    /// Read `buf.len()` bytes at byte offset `pos`; the range must lie inside the device.
    pub fn read_bytes(&self, pos: u64, buf: &mut [u8]) -> VfsResult<()> {
        let end = pos
            .checked_add(buf.len() as u64)
            .ok_or(VfsError::InvalidInput)?;
        if end > self.size {
            return Err(VfsError::InvalidInput);
        }
        self.settle(pos, buf.len())?;
        let mut done = 0usize;
        let mut at = pos;
        // Head: a partial first sector.
        if !at.is_multiple_of(SECTOR) {
            let in_sector = (at % SECTOR) as usize;
            let n = buf.len().min(SECTOR_SIZE - in_sector);
            let mut cache = self.cache.lock();
            let i = self.load(&mut cache, at / SECTOR)?;
            buf[..n].copy_from_slice(&cache.entries[i].data[in_sector..in_sector + n]);
            done += n;
            at += n as u64;
        }
        // Middle: whole sectors in one request, then the cache's (possibly newer) copies.
        let whole = (buf.len() - done) / SECTOR_SIZE * SECTOR_SIZE;
        if whole > 0 {
            let first = at / SECTOR;
            let middle = &mut buf[done..done + whole];
            self.dev.read_sectors(first, middle)?;
            let cache = self.cache.lock();
            let n = (whole / SECTOR_SIZE) as u64;
            for e in cache
                .entries
                .iter()
                .filter(|e| e.dirty && e.sector >= first && e.sector < first + n)
            {
                let off = ((e.sector - first) as usize) * SECTOR_SIZE;
                middle[off..off + SECTOR_SIZE].copy_from_slice(&e.data);
            }
            done += whole;
            at += whole as u64;
        }
        // Tail: a partial last sector.
        if done < buf.len() {
            let mut cache = self.cache.lock();
            let i = self.load(&mut cache, at / SECTOR)?;
            let n = buf.len() - done;
            buf[done..].copy_from_slice(&cache.entries[i].data[..n]);
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
        if self.gather(pos, buf)? {
            return Ok(());
        }
        self.settle(pos, buf.len())?;
        let mut done = 0usize;
        let mut at = pos;
        if !at.is_multiple_of(SECTOR) {
            let in_sector = (at % SECTOR) as usize;
            let n = buf.len().min(SECTOR_SIZE - in_sector);
            let mut cache = self.cache.lock();
            let i = self.load(&mut cache, at / SECTOR)?;
            cache.entries[i].data[in_sector..in_sector + n].copy_from_slice(&buf[..n]);
            cache.entries[i].dirty = true;
            done += n;
            at += n as u64;
        }
        let whole = (buf.len() - done) / SECTOR_SIZE * SECTOR_SIZE;
        if whole > 0 {
            let first = at / SECTOR;
            self.dev.write_sectors(first, &buf[done..done + whole])?;
            self.refresh_cached(first, &buf[done..done + whole]);
            done += whole;
            at += whole as u64;
        }
        if done < buf.len() {
            let mut cache = self.cache.lock();
            let i = self.load(&mut cache, at / SECTOR)?;
            let n = buf.len() - done;
            cache.entries[i].data[..n].copy_from_slice(&buf[done..]);
            cache.entries[i].dirty = true;
        }
        Ok(())
    }

    /// The cache slot holding `sector`, reading it (and evicting a slot) if needed.
    fn load(&self, cache: &mut SectorCache, sector: u64) -> VfsResult<usize> {
        if let Some(i) = cache.entries.iter().position(|e| e.sector == sector) {
            return Ok(i);
        }
        let mut data = [0u8; SECTOR_SIZE];
        self.dev.read_sectors(sector, &mut data)?;
        let fresh = CachedSector {
            sector,
            data,
            dirty: false,
        };
        if cache.entries.len() < CACHED_SECTORS {
            cache.entries.push(fresh);
            return Ok(cache.entries.len() - 1);
        }
        let i = cache.next_victim;
        cache.next_victim = (i + 1) % CACHED_SECTORS;
        let victim = &cache.entries[i];
        if victim.dirty {
            self.dev.write_sectors(victim.sector, &victim.data)?;
        }
        cache.entries[i] = fresh;
        Ok(i)
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
        let io = Arc::new(DeviceIo::new(dev.clone()));
        let mut c = DeviceCursor::new(io.clone());
        let data: Vec<u8> = (0..10 * SECTOR_SIZE + 77).map(|i| (i * 7) as u8).collect();
        c.seek(SeekFrom::Start(100)).unwrap();
        c.write_all(&data).unwrap();
        // The middle is one write; head and tail sectors wait in the write-back cache.
        assert_eq!(dev.writes.load(Ordering::Relaxed), 1);
        let reads_before = dev.reads.load(Ordering::Relaxed);
        c.seek(SeekFrom::Start(100)).unwrap();
        let mut back = vec![0u8; data.len()];
        c.read_exact(&mut back).unwrap();
        assert_eq!(back, data);
        assert!(dev.reads.load(Ordering::Relaxed) - reads_before <= 3);
        // Flushing writes head and tail; the bytes around the write are untouched.
        io.flush().unwrap();
        assert_eq!(dev.writes.load(Ordering::Relaxed), 3);
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
