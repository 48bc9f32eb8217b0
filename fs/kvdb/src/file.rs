//! Host pager over a file: `pread`/`pwrite`/`fdatasync`, no `mmap` (so no `unsafe`).
//!
//! Reads go through a cache of immutable page buffers (`Arc<[u8]>`): a page is read from the file
//! once, then every read transaction shares the buffer. Writes replace the cached copy (write
//! through), so freshly committed pages are served from memory, the way a mapped file would serve
//! them from the page cache. The cache is dropped wholesale when it exceeds its byte budget.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;
use std::vec::Vec;

use crate::sync::RwLock;

use crate::error::{Error, Result};
use crate::pager::Pager;

/// Default cache budget: 256 MiB.
pub const DEFAULT_CACHE_BYTES: usize = 256 << 20;

/// Writes larger than this (overflow values) are not copied into the cache: a large value is
/// read back as one range that rarely matches how it was written, and the copy costs as much as
/// the write. They are cached on first read instead.
const WRITE_THROUGH_MAX: usize = 16 << 10;

/// A read of at most a quarter of this that misses the cache reads the whole aligned window of
/// this size around it and caches every piece of the same length in it (see [`FilePager::read`]).
const READ_AROUND: u64 = 64 << 10;

/// Cached ranges are keyed by their start offset in units of the smallest page size, so a
/// lookup is one index into a vector (reads sit on every tree step of every `get`).
const GRANULE: u64 = crate::page::MIN_PAGE_SIZE as u64;

struct Cache {
    /// `slots[i]`: the cached range starting at byte `i * GRANULE`, if any.
    slots: Vec<Option<Arc<[u8]>>>,
    bytes: usize,
    longest: usize,
}

/// A [`Pager`] over a host file.
pub struct FilePager {
    file: File,
    len: RwLock<u64>,
    cache: RwLock<Cache>,
    cache_budget: usize,
    sync_enabled: bool,
    /// Bumped by every `write` before its `pwrite` and again (under the cache lock) after it
    /// updated the cache; `writing` counts the writes between the two. A read-around caches
    /// the neighbours it read only if no write ran meanwhile and none is running (a neighbour,
    /// unlike the range asked for, may be a page being rewritten).
    writes: std::sync::atomic::AtomicU64,
    writing: std::sync::atomic::AtomicU64,
}

impl FilePager {
    /// Open (or create) `path` for reading and writing.
    pub fn open(path: impl AsRef<Path>) -> std::io::Result<FilePager> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        Self::from_file(file)
    }

    /// Use an already open file.
    pub fn from_file(file: File) -> std::io::Result<FilePager> {
        let len = file.metadata()?.len();
        Ok(FilePager {
            file,
            len: RwLock::new(len),
            cache: RwLock::new(Cache {
                slots: Vec::new(),
                bytes: 0,
                longest: 0,
            }),
            cache_budget: DEFAULT_CACHE_BYTES,
            sync_enabled: true,
            writes: std::sync::atomic::AtomicU64::new(0),
            writing: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// Make `sync` a no-op (benchmarks of "no sync" mode; never for real data).
    pub fn without_sync(mut self) -> Self {
        self.sync_enabled = false;
        self
    }

    /// Set the read-cache budget in bytes (0 disables caching).
    pub fn with_cache_budget(mut self, bytes: usize) -> Self {
        self.cache_budget = bytes;
        self
    }

    fn insert(&self, offset: u64, data: Arc<[u8]>) {
        if self.cache_budget == 0 || !offset.is_multiple_of(GRANULE) {
            return;
        }
        let Ok(index) = usize::try_from(offset / GRANULE) else {
            return;
        };
        let mut cache = self.cache.write();
        if cache.bytes + data.len() > self.cache_budget {
            cache.slots.clear();
            cache.bytes = 0;
        }
        if cache.slots.len() <= index {
            cache.slots.resize(index + 1, None);
        }
        cache.bytes += data.len();
        cache.longest = cache.longest.max(data.len());
        if let Some(old) = cache.slots[index].replace(data) {
            cache.bytes -= old.len();
        }
    }

    fn cached(&self, offset: u64, len: usize) -> Option<Arc<[u8]>> {
        if !offset.is_multiple_of(GRANULE) {
            return None;
        }
        let index = usize::try_from(offset / GRANULE).ok()?;
        let cache = self.cache.read();
        match cache.slots.get(index) {
            Some(Some(d)) if d.len() == len => Some(d.clone()),
            _ => None,
        }
    }

    /// Drop every cached range that overlaps `[offset, offset + len)`.
    fn invalidate(&self, offset: u64, len: usize) {
        let mut cache = self.cache.write();
        let end = offset + len as u64;
        let first = (offset.saturating_sub(cache.longest as u64) / GRANULE) as usize;
        let last = (end.div_ceil(GRANULE) as usize).min(cache.slots.len());
        let mut freed = 0;
        for i in first..last {
            let start = i as u64 * GRANULE;
            let overlaps = match &cache.slots[i] {
                Some(d) => start < end && offset < start + d.len() as u64,
                None => false,
            };
            if overlaps {
                freed += cache.slots[i].take().map_or(0, |d| d.len());
            }
        }
        cache.bytes -= freed;
    }

    /// The writes themselves: each run of contiguous ranges as one `pwrite`, then the cache.
    fn write_pieces(&self, writes: &[(u64, &[u8])]) -> Result<()> {
        // Coalesce contiguous ranges into one pwrite each.
        let mut i = 0;
        while i < writes.len() {
            let mut j = i + 1;
            let mut end = writes[i].0 + writes[i].1.len() as u64;
            while j < writes.len() && writes[j].0 == end {
                end += writes[j].1.len() as u64;
                j += 1;
            }
            let start = writes[i].0;
            let result = if j == i + 1 {
                self.file.write_all_at(writes[i].1, start)
            } else {
                let mut buf = Vec::with_capacity((end - start) as usize);
                for w in &writes[i..j] {
                    buf.extend_from_slice(w.1);
                }
                self.file.write_all_at(&buf, start)
            };
            for w in &writes[i..j] {
                self.invalidate(w.0, w.1.len());
            }
            result.map_err(|e| {
                if e.raw_os_error() == Some(28) {
                    Error::NoSpace
                } else {
                    Error::Io
                }
            })?;
            for w in writes[i..j]
                .iter()
                .filter(|w| w.1.len() <= WRITE_THROUGH_MAX)
            {
                self.insert(w.0, Arc::from(w.1));
            }
            let mut len = self.len.write();
            *len = (*len).max(end);
            i = j;
        }
        Ok(())
    }

    /// [`Pager::read`] of `offset..offset + len` through one `pread` of `first..last` (pieces
    /// of `len` bytes): the range asked for is cached, and so are its neighbours if no write
    /// ran meanwhile.
    fn read_around(&self, offset: u64, len: usize, first: u64, last: u64) -> Result<Arc<[u8]>> {
        use std::sync::atomic::Ordering::SeqCst;
        let before = self.writes.load(SeqCst);
        let mut buf = std::vec![0u8; (last - first) as usize];
        self.file
            .read_exact_at(&mut buf, first)
            .map_err(|_| Error::Io)?;
        let at = (offset - first) as usize;
        let data: Arc<[u8]> = Arc::from(&buf[at..at + len]);
        self.insert(offset, data.clone());
        let mut cache = self.cache.write();
        if self.writes.load(SeqCst) != before || self.writing.load(SeqCst) != 0 {
            return Ok(data);
        }
        for (k, piece) in buf.chunks_exact(len).enumerate() {
            let start = first + (k * len) as u64;
            if start == offset || !start.is_multiple_of(GRANULE) {
                continue;
            }
            let Ok(index) = usize::try_from(start / GRANULE) else {
                continue;
            };
            if cache.bytes + len > self.cache_budget {
                break;
            }
            if cache.slots.len() <= index {
                cache.slots.resize(index + 1, None);
            }
            if cache.slots[index].is_none() {
                cache.bytes += len;
                cache.longest = cache.longest.max(len);
                cache.slots[index] = Some(Arc::from(piece));
            }
        }
        Ok(data)
    }
}

impl Pager for FilePager {
    type Page<'a> = Arc<[u8]>;

    fn read(&self, offset: u64, len: usize) -> Result<Arc<[u8]>> {
        if let Some(d) = self.cached(offset, len) {
            return Ok(d);
        }
        let end = offset.checked_add(len as u64).ok_or(Error::Io)?;
        let file_len = *self.len.read();
        if end > file_len {
            return Err(Error::Io);
        }
        // Read around a small miss: the pieces of the same length before and after it, within
        // the aligned READ_AROUND window, come in with the same `pread` (random reads of small
        // chunks then warm the cache as fast as reads of large ones would).
        let step = len as u64;
        // Only whole granules: the cache finds a range by its start's granule, so every piece
        // must start on one.
        if self.cache_budget > 0
            && step > 0
            && step.is_multiple_of(GRANULE)
            && step <= READ_AROUND / 4
            && offset.is_multiple_of(GRANULE)
        {
            let window = offset - offset % READ_AROUND;
            let first = offset - (offset - window) / step * step;
            let last = (first + (READ_AROUND / step) * step)
                .min(file_len / step * step)
                .max(end);
            if last - first > step {
                return self.read_around(offset, len, first, last);
            }
        }
        let mut buf = std::vec![0u8; len];
        self.file
            .read_exact_at(&mut buf, offset)
            .map_err(|_| Error::Io)?;
        let data: Arc<[u8]> = Arc::from(buf);
        self.insert(offset, data.clone());
        Ok(data)
    }

    fn write(&self, writes: &[(u64, &[u8])]) -> Result<()> {
        use std::sync::atomic::Ordering::SeqCst;
        self.writing.fetch_add(1, SeqCst);
        self.writes.fetch_add(1, SeqCst);
        let r = self.write_pieces(writes);
        // Under the cache lock, after this write's invalidations: see `read_around`.
        let _cache = self.cache.write();
        self.writes.fetch_add(1, SeqCst);
        self.writing.fetch_sub(1, SeqCst);
        r
    }

    fn sync(&self) -> Result<()> {
        if self.sync_enabled {
            self.file.sync_data().map_err(|_| Error::Io)?;
        }
        Ok(())
    }

    fn len(&self) -> u64 {
        *self.len.read()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(k: u64, version: u8) -> Vec<u8> {
        (0..4096u64)
            .map(|i| (i as u8) ^ (k as u8).wrapping_mul(7) ^ version)
            .collect()
    }

    /// Neighbours cached by a read-around are the file's bytes, and a later write of one of
    /// them is what reads return (the write invalidates the read-around's copy).
    #[test]
    fn read_around_caches_neighbours_and_writes_replace_them() {
        let dir = std::env::temp_dir().join(format!("kvdb-readaround-{}", std::process::id()));
        let pager = FilePager::open(&dir).unwrap();
        let pages = 40u64; // 160 KiB: two full 64 KiB windows and a partial one
        let all: Vec<Vec<u8>> = (0..pages).map(|k| page(k, 1)).collect();
        // Written as one large run (not cached: larger than WRITE_THROUGH_MAX), so reads miss.
        let joined: Vec<u8> = all.concat();
        pager.write(&[(0, &joined)]).unwrap();
        assert_eq!(&*pager.read(5 * 4096, 4096).unwrap(), all[5].as_slice());
        // Page 5's window is pages 0..16: the others are cached now, with the right bytes.
        for k in 0..16u64 {
            let c = pager.cached(k * 4096, 4096).expect("neighbour not cached");
            assert_eq!(&*c, all[k as usize].as_slice(), "page {k}");
        }
        assert!(
            pager.cached(16 * 4096, 4096).is_none(),
            "read past the window"
        );
        // A write of a cached neighbour wins over the read-around's copy.
        let new7 = page(7, 2);
        pager.write(&[(7 * 4096, &new7)]).unwrap();
        assert_eq!(&*pager.read(7 * 4096, 4096).unwrap(), new7.as_slice());
        // Near the end of the file the window stops at the end.
        assert_eq!(&*pager.read(39 * 4096, 4096).unwrap(), all[39].as_slice());
        assert_eq!(&*pager.cached(33 * 4096, 4096).unwrap(), all[33].as_slice());
        assert!(pager.read(40 * 4096, 4096).is_err());
        // A read of less than a granule (a meta page's header) brings in no neighbours: the
        // cache could not find pieces that do not start on a granule.
        let pager = FilePager::open(&dir).unwrap();
        assert_eq!(&*pager.read(0, 100).unwrap(), &all[0][..100]);
        assert!(pager.cached(1024, 100).is_none());
        assert_eq!(&*pager.read(1024, 1024).unwrap(), &all[0][1024..2048]);
        std::fs::remove_file(&dir).unwrap();
    }
}
