//! kvdb's host pager over a mapped file ([`MmapPager`]), the host's counterpart of the kernel's
//! disk window: kvdb reads pages as plain slices of one mapping of the file, with no cache of
//! its own and no copy, while writes go through `pwrite` and the barrier is `fdatasync`
//! (LMDB's arrangement without its write map; jammdb maps its file the same way).
//!
//! The mapping is made once, read-only and shared, over [`RESERVE`] bytes of address space,
//! whatever the file's size: the kernel's page cache is what both the mapping and `pwrite`
//! see, so bytes written are at once visible through the mapping, and a file that grows never
//! needs a new mapping (a slice handed out stays valid for the pager's whole life). Reads are
//! checked against the file's length as written through this pager: past it the mapping has
//! no pages (a load would fault), so such a read is an error.
//!
//! [`kvdb::FilePager`] keeps its pages in heap buffers instead, which needs no `unsafe` at
//! all; this pager trades that for two blocks (the mapping, and the `sync_file_range` call
//! below, which touches no memory). The mapping's contract: its bytes must not change under
//! a live reader, which holds as long as nothing but this pager writes the file (kvdb itself
//! never writes a range a live reader can reach). The file is locked against other writers
//! by the caller if it needs that, as `dbfs-fuse` does with `flock`.
//!
//! Large values' pages (writes of [`WRITEBACK_MIN`] bytes or more) have their write-back
//! started as they are written, in runs of [`WRITEBACK_RUN`] (`sync_file_range`, Linux), so
//! the disk writes them while the transaction goes on; the barrier's `fdatasync` is still
//! what makes them durable.

#![deny(unsafe_op_in_unsafe_fn)]

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::Mutex;

use kvdb::{Error, Pager, Result};

/// Address space mapped for a file, and so the largest store a pager may grow to: 1 TiB
/// (of the 128 TiB a Linux process has on x86-64 and on RISC-V Sv48).
pub const RESERVE: u64 = 1 << 40;

/// A [`Pager`] over a host file, read through a mapping.
pub struct MmapPager {
    file: File,
    map: memmap2::Mmap,
    /// The file's length as this pager wrote it: the end of what reads may see.
    len: AtomicU64,
    sync_enabled: bool,
    /// Large writes whose write-back has not been started yet: one contiguous run of the
    /// file, `start..end` (empty when equal). See [`MmapPager::start_writeback`].
    unstarted: Mutex<(u64, u64)>,
}

/// A write of at least this many bytes is a large value's pages: its write-back is started
/// before the barrier asks for it.
pub const WRITEBACK_MIN: usize = 64 << 10;

/// Contiguous large writes are handed to the host's write-back in runs of this many bytes.
pub const WRITEBACK_RUN: u64 = 1 << 20;

impl MmapPager {
    /// Open (or create) the file at `path` for reading and writing.
    pub fn open(path: impl AsRef<Path>) -> std::io::Result<MmapPager> {
        Self::from_file(kvdb::open_store_file(path)?)
    }

    /// Use an already open file (readable and writable).
    pub fn from_file(file: File) -> std::io::Result<MmapPager> {
        let len = file.metadata()?.len();
        if len > RESERVE {
            return Err(std::io::Error::other(format!(
                "file of {len} bytes is larger than the {RESERVE} bytes a mapping reserves"
            )));
        }
        // SAFETY: the mapping is read-only and shared, so the only way its bytes change is
        // a write to the file. This pager's own writes never touch a range a live reader can
        // reach (kvdb's freelist guarantees it), and the type's contract above leaves other
        // writers of the file out. Pages past the end of the file are never read: `read`
        // checks every range against `len` first.
        let map = unsafe {
            memmap2::MmapOptions::new()
                .len(RESERVE as usize)
                .map(&file)?
        };
        Ok(MmapPager {
            file,
            map,
            len: AtomicU64::new(len),
            sync_enabled: true,
            unstarted: Mutex::new((0, 0)),
        })
    }

    /// Skip `fdatasync` in [`Pager::sync`] (benchmarks of commits without durability).
    pub fn without_sync(mut self) -> Self {
        self.sync_enabled = false;
        self
    }

    /// Note a large write of `offset..end` and start the host's write-back of the run it
    /// continues once that run is [`WRITEBACK_RUN`] long or this write does not continue it.
    /// The barrier's `fdatasync` then finds most of a large commit's pages already on their
    /// way to the disk instead of sending them all itself, so the device writes while the
    /// transaction still builds (what RocksDB's `bytes_per_sync` does). A hint only: it
    /// promises nothing, and a failure is left for `fdatasync` to report.
    fn start_writeback(&self, offset: u64, end: u64) {
        let run = note_large_write(
            &mut self.unstarted.lock().unwrap_or_else(|e| e.into_inner()),
            offset,
            end,
        );
        if let Some((start, end)) = run {
            sync_file_range_write(&self.file, start, end - start);
        }
    }
}

/// Add the large write `offset..end` to `unstarted` (a run of the file, empty when its ends
/// are equal) and return the run whose write-back is due: the earlier run when this write
/// does not continue it, or the run this write made [`WRITEBACK_RUN`] long.
fn note_large_write(unstarted: &mut (u64, u64), offset: u64, end: u64) -> Option<(u64, u64)> {
    if unstarted.0 != unstarted.1 && offset != unstarted.1 {
        return Some(core::mem::replace(unstarted, (offset, end)));
    }
    if unstarted.0 == unstarted.1 {
        *unstarted = (offset, end);
    } else {
        unstarted.1 = end;
    }
    if unstarted.1 - unstarted.0 >= WRITEBACK_RUN {
        return Some(core::mem::take(unstarted));
    }
    None
}

/// `sync_file_range(SYNC_FILE_RANGE_WRITE)` of `len` bytes at `offset`: start the write-back
/// of the range's dirty pages, without waiting for it and without a device flush.
#[cfg(target_os = "linux")]
fn sync_file_range_write(file: &File, offset: u64, len: u64) {
    use std::os::fd::AsRawFd;
    let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
        return;
    };
    // SAFETY: the call takes a file descriptor and three integers and touches no memory of
    // this process; `file` is open for the whole call.
    unsafe {
        libc::sync_file_range(file.as_raw_fd(), offset, len, libc::SYNC_FILE_RANGE_WRITE);
    }
}

#[cfg(not(target_os = "linux"))]
fn sync_file_range_write(_file: &File, _offset: u64, _len: u64) {}

impl Pager for MmapPager {
    type Page<'a> = &'a [u8];

    fn read(&self, offset: u64, len: usize) -> Result<&[u8]> {
        let end = offset.checked_add(len as u64).ok_or(Error::Io)?;
        if end > self.len.load(SeqCst) {
            return Err(Error::Io);
        }
        Ok(&self.map[offset as usize..end as usize])
    }

    fn write(&self, writes: &[(u64, &[u8])]) -> Result<()> {
        for &(offset, bytes) in writes {
            let end = offset.checked_add(bytes.len() as u64).ok_or(Error::Io)?;
            if end > RESERVE {
                return Err(Error::NoSpace);
            }
            self.file
                .write_all_at(bytes, offset)
                .map_err(|_| Error::Io)?;
            self.len.fetch_max(end, SeqCst);
            if self.sync_enabled && bytes.len() >= WRITEBACK_MIN {
                self.start_writeback(offset, end);
            }
        }
        Ok(())
    }

    fn sync(&self) -> Result<()> {
        if self.sync_enabled {
            // fdatasync writes what is still unstarted.
            *self.unstarted.lock().unwrap_or_else(|e| e.into_inner()) = (0, 0);
            self.file.sync_data().map_err(|_| Error::Io)?;
        }
        Ok(())
    }

    fn len(&self) -> u64 {
        self.len.load(SeqCst)
    }

    fn capacity(&self) -> u64 {
        RESERVE
    }

    fn byte_reads(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contiguous_large_writes_start_their_write_back_in_runs() {
        let mut u = (0, 0);
        let k64 = WRITEBACK_MIN as u64;
        // Sixteen contiguous 64 KiB writes: the sixteenth makes the run 1 MiB.
        for i in 0..15 {
            assert_eq!(
                note_large_write(&mut u, 8192 + i * k64, 8192 + (i + 1) * k64),
                None
            );
        }
        assert_eq!(
            note_large_write(&mut u, 8192 + 15 * k64, 8192 + 16 * k64),
            Some((8192, 8192 + WRITEBACK_RUN))
        );
        assert_eq!(u.0, u.1, "nothing left unstarted");
        // A write elsewhere hands over the run before it, however short, and starts its own.
        assert_eq!(note_large_write(&mut u, 0, k64), None);
        assert_eq!(note_large_write(&mut u, 10 * k64, 11 * k64), Some((0, k64)));
        assert_eq!(u, (10 * k64, 11 * k64));
        // One write longer than a run goes at once.
        assert_eq!(
            note_large_write(&mut u, 11 * k64, 11 * k64 + 2 * WRITEBACK_RUN),
            Some((10 * k64, 11 * k64 + 2 * WRITEBACK_RUN))
        );
    }
}
