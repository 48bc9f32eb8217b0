//! Host pager over a file: `pread`/`pwrite`/`fdatasync`, no `mmap` (so no `unsafe`).
//!
//! Reads go through a cache of immutable page buffers (`Arc<[u8]>`): a page is read from the file
//! once, then every read transaction shares the buffer. Writes replace the cached copy (write
//! through), so freshly committed pages are served from memory, the way a mapped file would serve
//! them from the page cache. The cache is dropped wholesale when it exceeds its byte budget.

use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;
use std::vec::Vec;

use spin::RwLock;

use crate::error::{Error, Result};
use crate::pager::Pager;

/// Default cache budget: 256 MiB.
pub const DEFAULT_CACHE_BYTES: usize = 256 << 20;

struct Cache {
    /// Cached ranges by offset; every entry starts at a page boundary.
    ranges: BTreeMap<u64, Arc<[u8]>>,
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
}

impl FilePager {
    /// Open (or create) `path` for reading and writing.
    pub fn open(path: impl AsRef<Path>) -> std::io::Result<FilePager> {
        let file = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path)?;
        Ok(Self::from_file(file)?)
    }

    /// Use an already open file.
    pub fn from_file(file: File) -> std::io::Result<FilePager> {
        let len = file.metadata()?.len();
        Ok(FilePager {
            file,
            len: RwLock::new(len),
            cache: RwLock::new(Cache { ranges: BTreeMap::new(), bytes: 0, longest: 0 }),
            cache_budget: DEFAULT_CACHE_BYTES,
            sync_enabled: true,
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
        if self.cache_budget == 0 {
            return;
        }
        let mut cache = self.cache.write();
        if cache.bytes + data.len() > self.cache_budget {
            cache.ranges.clear();
            cache.bytes = 0;
        }
        cache.bytes += data.len();
        cache.longest = cache.longest.max(data.len());
        if let Some(old) = cache.ranges.insert(offset, data) {
            cache.bytes -= old.len();
        }
    }

    fn invalidate(&self, offset: u64, len: usize) {
        let mut cache = self.cache.write();
        if cache.ranges.is_empty() {
            return;
        }
        let from = offset.saturating_sub(cache.longest as u64);
        let end = offset + len as u64;
        let doomed: Vec<u64> = cache
            .ranges
            .range(from..end)
            .filter(|(&o, d)| o + d.len() as u64 > offset)
            .map(|(&o, _)| o)
            .collect();
        for o in doomed {
            if let Some(d) = cache.ranges.remove(&o) {
                cache.bytes -= d.len();
            }
        }
    }
}

impl Pager for FilePager {
    type Page<'a> = Arc<[u8]>;

    fn read(&self, offset: u64, len: usize) -> Result<Arc<[u8]>> {
        if let Some(d) = self.cache.read().ranges.get(&offset) {
            if d.len() == len {
                return Ok(d.clone());
            }
        }
        let end = offset.checked_add(len as u64).ok_or(Error::Io)?;
        if end > *self.len.read() {
            return Err(Error::Io);
        }
        let mut buf = std::vec![0u8; len];
        self.file.read_exact_at(&mut buf, offset).map_err(|_| Error::Io)?;
        let data: Arc<[u8]> = Arc::from(buf);
        self.insert(offset, data.clone());
        Ok(data)
    }

    fn write(&self, writes: &[(u64, &[u8])]) -> Result<()> {
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
            result.map_err(|e| if e.raw_os_error() == Some(28) { Error::NoSpace } else { Error::Io })?;
            for w in &writes[i..j] {
                self.insert(w.0, Arc::from(w.1));
            }
            let mut len = self.len.write();
            *len = (*len).max(end);
            i = j;
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
        *self.len.read()
    }
}
