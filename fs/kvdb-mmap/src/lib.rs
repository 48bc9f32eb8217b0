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
//! all; this pager trades that for one: the mapping's bytes must not change under a live
//! reader, which holds as long as nothing but this pager writes the file (kvdb itself never
//! writes a range a live reader can reach). The file is locked against other writers by
//! the caller if it needs that, as `dbfs-fuse` does with `flock`.

#![deny(unsafe_op_in_unsafe_fn)]

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};

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
}

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
        })
    }

    /// Skip `fdatasync` in [`Pager::sync`] (benchmarks of commits without durability).
    pub fn without_sync(mut self) -> Self {
        self.sync_enabled = false;
        self
    }
}

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
        }
        Ok(())
    }

    fn sync(&self) -> Result<()> {
        if self.sync_enabled {
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
