//! Host pager over a file: `pread`/`pwrite`/`fdatasync`, no `mmap` (so no `unsafe`).
//!
//! Reads go through a cache of immutable page buffers (`Arc<[u8]>`): a page is read from the file
//! once, then every read transaction shares the buffer. Writes replace the cached copy (write
//! through), so freshly committed pages are served from memory, the way a mapped file would serve
//! them from the page cache. The cache is dropped wholesale when it exceeds its byte budget.
//! Two kinds of bytes pass it by: [`Pager::read_into`] (a large read, one `pread` into the
//! caller's buffer) and [`Pager::write_direct`] (a large write's pages, not copied into it).
//!
//! Deferred writes ([`FilePager::with_deferred_writes`]): small writes (tree pages) are kept in
//! memory and written to the file at the next [`Pager::sync`] (or when they exceed a byte
//! bound), sorted and with each run of contiguous pages as one `pwrite`. kvdb's pager contract
//! allows it: nothing written is durable before `sync`, and `sync` writes them before its
//! `fdatasync`, so the barrier order (pages, sync, meta page, sync) is kept. A commit without
//! a barrier (kvdb's deferred commit, one per unlink in dbfs) then costs no system call; many
//! commits' pages reach the file in a few large writes.

use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;
use std::vec::Vec;

use crate::sync::{Mutex, RwLock};

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
    /// Written ranges not yet in the file (see the module doc); empty unless `defer_max > 0`.
    pending: Mutex<Pending>,
    /// Bytes of pending writes past which they are written out (0: no deferral).
    defer_max: usize,
}

#[derive(Default)]
struct Pending {
    /// Start offset -> bytes; ranges never overlap.
    ranges: BTreeMap<u64, Arc<[u8]>>,
    bytes: usize,
    longest: usize,
}

impl Pending {
    /// Starts of the ranges overlapping `[offset, end)`, and whether each lies inside it.
    fn overlapping(&self, offset: u64, end: u64) -> smallvec::SmallVec<[(u64, bool); 4]> {
        let from = offset.saturating_sub(self.longest as u64);
        self.ranges
            .range(from..end)
            .filter(|(s, d)| **s + d.len() as u64 > offset)
            .map(|(s, d)| (*s, *s >= offset && *s + d.len() as u64 <= end))
            .collect()
    }
}

/// The file a host pager works on: `path` opened for reading and writing, created if it is
/// missing, never truncated.
pub fn open_store_file(path: impl AsRef<Path>) -> std::io::Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
}

impl FilePager {
    /// Open (or create) `path` for reading and writing.
    pub fn open(path: impl AsRef<Path>) -> std::io::Result<FilePager> {
        Self::from_file(open_store_file(path)?)
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
            pending: Mutex::new(Pending::default()),
            defer_max: 0,
        })
    }

    /// Keep writes of at most `WRITE_THROUGH_MAX` (16 KiB) in memory until the next
    /// [`Pager::sync`] or [`FilePager::flush`], or until more than `max_bytes` of them wait
    /// (see the module doc). Reads see them at once.
    pub fn with_deferred_writes(mut self, max_bytes: usize) -> Self {
        self.defer_max = max_bytes;
        self
    }

    /// Write every deferred write to the file (no `fdatasync`): the file then holds everything
    /// written so far, as it would without deferral. [`Pager::sync`] does this first.
    pub fn flush(&self) -> Result<()> {
        let mut pending = self.pending.lock();
        self.flush_locked(&mut pending)
    }

    fn flush_locked(&self, pending: &mut Pending) -> Result<()> {
        if pending.ranges.is_empty() {
            return Ok(());
        }
        // One pwrite per run of contiguous ranges, each run copied into one buffer of at most
        // FLUSH_BUF bytes (a run of many 4 KiB pages is one system call, not one per page).
        const FLUSH_BUF: usize = 1 << 20;
        let mut buf: Vec<u8> = Vec::new();
        let mut buf_at = 0u64;
        let mut result = Ok(());
        for (&off, data) in pending.ranges.iter() {
            if !buf.is_empty()
                && (buf_at + buf.len() as u64 != off || buf.len() + data.len() > FLUSH_BUF)
            {
                result = result.and(write_at(&self.file, &buf, buf_at));
                buf.clear();
            }
            if buf.is_empty() {
                buf_at = off;
            }
            buf.extend_from_slice(data);
        }
        if !buf.is_empty() {
            result = result.and(write_at(&self.file, &buf, buf_at));
        }
        // Kept on an error: the commits they belong to are published, and a barrier that
        // failed is tried again by the next one (kvdb keeps it pending), which must find
        // them still to write, or its meta page would point at pages never written. Writing
        // a range twice is harmless.
        result?;
        pending.ranges.clear();
        pending.bytes = 0;
        pending.longest = 0;
        Ok(())
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

    /// Defer what can be deferred (see [`FilePager::with_deferred_writes`]); the rest goes to
    /// [`FilePager::write_now`]. `defer`: false for [`Pager::write_direct`] (a large value's
    /// pages, written at once and not kept).
    fn write_pieces(&self, writes: &[(u64, &[u8])], defer: bool) -> Result<()> {
        if self.defer_max == 0 {
            return self.write_now(writes, defer);
        }
        let mut pending = self.pending.lock();
        let mut now: Vec<(u64, &[u8])> = Vec::new();
        for &(off, data) in writes {
            let end = off + data.len() as u64;
            let over = pending.overlapping(off, end);
            if over.iter().any(|&(_, inside)| !inside) {
                // A pending range sticking out of this one: its other part must survive, so
                // write everything out first (pages are reused in other shapes only rarely).
                self.flush_locked(&mut pending)?;
            } else {
                for (start, _) in over {
                    if let Some(old) = pending.ranges.remove(&start) {
                        pending.bytes -= old.len();
                    }
                }
            }
            if !defer || data.len() > WRITE_THROUGH_MAX {
                now.push((off, data));
                continue;
            }
            let bytes: Arc<[u8]> = Arc::from(data);
            pending.bytes += bytes.len();
            pending.longest = pending.longest.max(bytes.len());
            pending.ranges.insert(off, bytes.clone());
            self.invalidate(off, data.len());
            self.insert(off, bytes);
            let mut len = self.len.write();
            *len = (*len).max(end);
        }
        if pending.bytes > self.defer_max {
            self.flush_locked(&mut pending)?;
        }
        drop(pending);
        if now.is_empty() {
            Ok(())
        } else {
            self.write_now(&now, defer)
        }
    }

    /// The writes themselves: each run of contiguous ranges as one `pwrite`, then the cache
    /// (`cache`: false for [`Pager::write_direct`], whose pages are a file's data, moved
    /// by large reads with [`Pager::read_into`], past the cache).
    fn write_now(&self, writes: &[(u64, &[u8])], cache: bool) -> Result<()> {
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
                write_at(&self.file, writes[i].1, start)
            } else {
                join_and_write(&self.file, &writes[i..j], start, (end - start) as usize)
            };
            for w in &writes[i..j] {
                self.invalidate(w.0, w.1.len());
            }
            result?;
            for w in writes[i..j]
                .iter()
                .filter(|w| cache && w.1.len() <= WRITE_THROUGH_MAX)
            {
                self.insert(w.0, Arc::from(w.1));
            }
            let mut len = self.len.write();
            *len = (*len).max(end);
            i = j;
        }
        Ok(())
    }

    /// A deferred write of exactly `offset..offset + len`, if one waits; any other deferred
    /// write overlapping `[from, to)` is written to the file first, so a `pread` of that
    /// window returns what was written.
    fn pending_read(
        &self,
        offset: u64,
        len: usize,
        from: u64,
        to: u64,
    ) -> Result<Option<Arc<[u8]>>> {
        if self.defer_max == 0 {
            return Ok(None);
        }
        let mut pending = self.pending.lock();
        if pending.ranges.is_empty() {
            return Ok(None);
        }
        if let Some(d) = pending.ranges.get(&offset) {
            if d.len() == len {
                return Ok(Some(d.clone()));
            }
        }
        if !pending.overlapping(from, to).is_empty() {
            self.flush_locked(&mut pending)?;
        }
        Ok(None)
    }

    /// [`Pager::read`] of `offset..offset + len` through one `pread` of `first..last` (pieces
    /// of `len` bytes): the range asked for is cached, and so are its neighbours if no write
    /// ran meanwhile.
    fn read_around(&self, offset: u64, len: usize, first: u64, last: u64) -> Result<Arc<[u8]>> {
        use std::sync::atomic::Ordering::SeqCst;
        let before = self.writes.load(SeqCst);
        // After `before`: a write deferred from here on is seen by the check below.
        if let Some(d) = self.pending_read(offset, len, first, last)? {
            return Ok(d);
        }
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
        if let Some(d) = self.pending_read(offset, len, offset, end)? {
            return Ok(d);
        }
        let mut buf = std::vec![0u8; len];
        self.file
            .read_exact_at(&mut buf, offset)
            .map_err(|_| Error::Io)?;
        let data: Arc<[u8]> = Arc::from(buf);
        self.insert(offset, data.clone());
        Ok(data)
    }

    /// One `pread` straight into `dst`, past the cache: a large read (a file's chunks, moved
    /// whole by dbfs) neither fills the cache with pages read once nor pays a copy out of it.
    /// Deferred writes overlapping the range are written to the file first.
    fn read_into(&self, offset: u64, dst: &mut [u8]) -> Result<()> {
        let end = offset.checked_add(dst.len() as u64).ok_or(Error::Io)?;
        if end > *self.len.read() {
            return Err(Error::Io);
        }
        if self.defer_max > 0 {
            let mut pending = self.pending.lock();
            if !pending.ranges.is_empty() && !pending.overlapping(offset, end).is_empty() {
                self.flush_locked(&mut pending)?;
            }
        }
        self.file.read_exact_at(dst, offset).map_err(|_| Error::Io)
    }

    /// Yes: see [`FilePager::read_into`] (a `pread` of the whole range into the caller's
    /// buffer instead of one cached copy per page and a copy out of each).
    fn direct_reads(&self) -> bool {
        true
    }

    fn write(&self, writes: &[(u64, &[u8])]) -> Result<()> {
        self.write_counted(writes, true)
    }

    fn write_direct(&self, writes: &[(u64, &[u8])]) -> Result<()> {
        self.write_counted(writes, false)
    }

    fn sync(&self) -> Result<()> {
        self.flush()?;
        if self.sync_enabled {
            self.file.sync_data().map_err(|_| Error::Io)?;
        }
        Ok(())
    }

    fn len(&self) -> u64 {
        *self.len.read()
    }
}

impl FilePager {
    fn write_counted(&self, writes: &[(u64, &[u8])], defer: bool) -> Result<()> {
        use std::sync::atomic::Ordering::SeqCst;
        self.writing.fetch_add(1, SeqCst);
        self.writes.fetch_add(1, SeqCst);
        let r = self.write_pieces(writes, defer);
        // Under the cache lock, after this write's invalidations: see `read_around`.
        let _cache = self.cache.write();
        self.writes.fetch_add(1, SeqCst);
        self.writing.fetch_sub(1, SeqCst);
        r
    }
}

/// Runs of at most this many bytes are joined in a buffer each thread keeps (see
/// [`join_and_write`]); longer ones in a buffer of their own.
const JOIN_KEEP: usize = 4 << 20;

std::thread_local! {
    static JOIN_BUF: core::cell::RefCell<Vec<u8>> = const { core::cell::RefCell::new(Vec::new()) };
}

/// One `pwrite` of the concatenation of `run` (`len` bytes) at `offset`. The join goes
/// through a buffer the thread keeps: a fresh one per write (a 1 MiB direct write of 256
/// chunk pages) was memory the allocator took from and gave back to the system each time,
/// so every write faulted in and zeroed its pages again.
fn join_and_write(file: &File, run: &[(u64, &[u8])], offset: u64, len: usize) -> Result<()> {
    let join = |buf: &mut Vec<u8>| {
        buf.clear();
        buf.reserve(len);
        for w in run {
            buf.extend_from_slice(w.1);
        }
        write_at(file, buf, offset)
    };
    if len > JOIN_KEEP {
        return join(&mut Vec::new());
    }
    // Another join on this thread (not expected: nothing here calls back) gets its own.
    JOIN_BUF.with(|b| match b.try_borrow_mut() {
        Ok(mut buf) => join(&mut buf),
        Err(_) => join(&mut Vec::new()),
    })
}

fn write_at(file: &File, buf: &[u8], offset: u64) -> Result<()> {
    file.write_all_at(buf, offset).map_err(|e| {
        if e.raw_os_error() == Some(28) {
            Error::NoSpace
        } else {
            Error::Io
        }
    })
}

impl Drop for FilePager {
    /// Deferred writes reach the file when the pager goes away, as they would have without
    /// deferral (not durable: only `sync` promises that).
    fn drop(&mut self) {
        let _ = self.flush();
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

    fn on_disk(path: &std::path::Path, offset: u64, len: usize) -> Vec<u8> {
        let mut buf = std::vec![0u8; len];
        let f = File::open(path).unwrap();
        let n = f.read_at(&mut buf, offset).unwrap();
        buf.truncate(n);
        buf
    }

    /// Deferred writes: reads see them at once (cached or not, exact or through a read-around
    /// window), the file gets them only at `sync` (a crash before it finds the old bytes), and
    /// a write overlapping a deferred range in another shape keeps both right.
    #[test]
    fn deferred_writes_are_read_back_and_reach_the_file_at_sync() {
        let tmp = tempfile::NamedTempFile::new().unwrap();
        let path = tmp.path().to_path_buf();
        let old: Vec<Vec<u8>> = (0..16u64).map(|k| page(k, 1)).collect();
        {
            let pager = FilePager::open(&path).unwrap();
            pager.write(&[(0, &old.concat())]).unwrap();
            pager.sync().unwrap();
        }
        // No cache: every read goes past the cache to the deferred ranges or the file.
        let pager = FilePager::open(&path)
            .unwrap()
            .with_cache_budget(0)
            .with_deferred_writes(1 << 20);
        let new3 = page(3, 2);
        let new9 = page(9, 2);
        let new20 = page(20, 2); // past the end of the file
        pager
            .write(&[(3 * 4096, &new3), (9 * 4096, &new9), (20 * 4096, &new20)])
            .unwrap();
        assert_eq!(pager.len(), 21 * 4096);
        assert_eq!(
            on_disk(&path, 3 * 4096, 4096),
            old[3],
            "written before sync"
        );
        assert_eq!(&*pager.read(3 * 4096, 4096).unwrap(), new3.as_slice());
        assert_eq!(&*pager.read(20 * 4096, 4096).unwrap(), new20.as_slice());
        assert_eq!(on_disk(&path, 3 * 4096, 4096), old[3]);
        // A read of another shape over a deferred range writes the deferred ranges out first.
        let two = pager.read(8 * 4096, 2 * 4096).unwrap();
        assert_eq!(&two[..4096], old[8].as_slice());
        assert_eq!(&two[4096..], new9.as_slice());
        assert_eq!(on_disk(&path, 9 * 4096, 4096), new9);
        assert_eq!(on_disk(&path, 20 * 4096, 4096), new20);
        // A crash (the pager vanishes without sync or drop) loses what was deferred.
        let new5 = page(5, 3);
        pager.write(&[(5 * 4096, &new5)]).unwrap();
        assert_eq!(&*pager.read(5 * 4096, 4096).unwrap(), new5.as_slice());
        std::mem::forget(pager);
        assert_eq!(on_disk(&path, 5 * 4096, 4096), old[5], "lost in the crash");

        // With the cache on, a read-around window over a deferred page never caches the
        // file's stale copy of it.
        let pager = FilePager::open(&path)
            .unwrap()
            .with_deferred_writes(1 << 20);
        pager.write(&[(6 * 4096, &new5)]).unwrap();
        pager.invalidate(6 * 4096, 4096); // as if the cache had been dropped
        assert_eq!(&*pager.read(7 * 4096, 4096).unwrap(), old[7].as_slice());
        assert_eq!(&*pager.read(6 * 4096, 4096).unwrap(), new5.as_slice());
        // A larger write covering part of a deferred two-page range: both survive.
        let pair = [page(10, 4), page(11, 4)].concat();
        pager.write(&[(10 * 4096, &pair)]).unwrap();
        let big: Vec<u8> = (0..5).flat_map(|k| page(11 + k, 5)).collect();
        pager.write(&[(11 * 4096, &big)]).unwrap();
        assert_eq!(&*pager.read(10 * 4096, 4096).unwrap(), &pair[..4096]);
        assert_eq!(&*pager.read(11 * 4096, 5 * 4096).unwrap(), big.as_slice());
        // A direct write goes to the file at once, and a deferred write of a page it covers
        // is dropped (written at the sync, it would undo the direct write).
        pager.write(&[(2 * 4096, &page(2, 6))]).unwrap();
        let direct = page(2, 7);
        pager.write_direct(&[(2 * 4096, &direct)]).unwrap();
        assert_eq!(
            on_disk(&path, 2 * 4096, 4096),
            direct,
            "direct: not deferred"
        );
        assert_eq!(&*pager.read(2 * 4096, 4096).unwrap(), direct.as_slice());
        pager.sync().unwrap();
        assert_eq!(on_disk(&path, 2 * 4096, 4096), direct);
        assert_eq!(
            on_disk(&path, 6 * 4096, 4096),
            new5,
            "kept after the barrier"
        );
        assert_eq!(on_disk(&path, 10 * 4096, 4096), pair[..4096].to_vec());
        assert_eq!(on_disk(&path, 11 * 4096, 5 * 4096), big);
    }

    /// `read_into` (a `pread` past the cache) returns deferred writes it overlaps, the file's
    /// bytes elsewhere, a fresh write-through over a cached page, and refuses a range past the
    /// end.
    #[test]
    fn read_into_sees_deferred_and_cached_writes() {
        let tmp = tempfile::NamedTempFile::new().unwrap();
        let path = tmp.path().to_path_buf();
        let old: Vec<Vec<u8>> = (0..16u64).map(|k| page(k, 1)).collect();
        let pager = FilePager::open(&path)
            .unwrap()
            .with_deferred_writes(1 << 20);
        assert!(pager.direct_reads());
        pager.write_direct(&[(0, &old.concat())]).unwrap();
        pager.sync().unwrap();
        // Cached through a read, then rewritten (deferred: not in the file yet).
        assert_eq!(&*pager.read(4 * 4096, 4096).unwrap(), old[4].as_slice());
        let new4 = page(4, 2);
        let new6 = page(6, 2);
        pager
            .write(&[(4 * 4096, &new4), (6 * 4096, &new6)])
            .unwrap();
        assert_eq!(on_disk(&path, 4 * 4096, 4096), old[4], "deferred");
        let mut buf = std::vec![0u8; 8 * 4096];
        pager.read_into(2 * 4096, &mut buf).unwrap();
        let mut want: Vec<u8> = old[2..10].concat();
        want[2 * 4096..3 * 4096].copy_from_slice(&new4);
        want[4 * 4096..5 * 4096].copy_from_slice(&new6);
        assert_eq!(buf, want);
        // A range with no deferred write in it leaves the others deferred.
        pager.write(&[(12 * 4096, &page(12, 3))]).unwrap();
        let mut one = std::vec![0u8; 4096];
        pager.read_into(14 * 4096, &mut one).unwrap();
        assert_eq!(one, old[14]);
        assert_eq!(on_disk(&path, 12 * 4096, 4096), old[12], "still deferred");
        // Unaligned pieces and the end of the file.
        let mut odd = std::vec![0u8; 100];
        pager.read_into(4 * 4096 + 10, &mut odd).unwrap();
        assert_eq!(odd, new4[10..110]);
        let mut past = std::vec![0u8; 8192];
        assert!(pager.read_into(15 * 4096, &mut past).is_err());
        assert!(pager.read_into(u64::MAX - 10, &mut one).is_err());
    }

    /// A deferred write that fails to reach the file at a sync stays deferred: reads still
    /// see it and the next sync tries it again (and fails again here), instead of a later
    /// barrier succeeding without it.
    #[test]
    fn failed_flush_keeps_deferred_writes() {
        let tmp = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(tmp.path(), page(0, 1)).unwrap();
        // Opened read-only: every pwrite fails (EBADF).
        let file = File::open(tmp.path()).unwrap();
        let pager = FilePager::from_file(file)
            .unwrap()
            .with_cache_budget(0)
            .with_deferred_writes(1 << 20);
        let new = page(1, 2);
        pager.write(&[(4096, &new)]).unwrap();
        assert!(pager.sync().is_err());
        assert_eq!(&*pager.read(4096, 4096).unwrap(), new.as_slice());
        assert!(pager.sync().is_err(), "the failed range was dropped");
        assert!(pager.flush().is_err());
        std::mem::forget(pager); // its drop would try once more
    }
}
