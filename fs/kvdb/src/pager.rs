//! The storage interface kvdb reads and writes through, and its RAM implementation.
//!
//! kvdb knows nothing about files or devices: it asks a [`Pager`] for byte ranges that are always
//! whole pages (page-aligned offset, length a multiple of the page size), except the meta-page
//! probe at open, which reads [`crate::page::META_SIZE`] bytes at candidate page offsets.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::ops::Deref;

use crate::sync::{Mutex, RwLock};

use crate::error::{Error, Result};

/// Backing store of a database: a linear array of bytes, read by range, written in batches, made
/// durable by [`Pager::sync`].
///
/// Contract:
/// - A [`Pager::Page`] returned by `read` must keep showing the bytes it showed when it was
///   returned for as long as it lives, except that kvdb never writes a range that a live reader can
///   still reach (that is the freelist's job), so a pager over one big memory window may hand out
///   plain borrowed slices: `type Page<'a> = &'a [u8]` is the zero-copy case.
/// - `write` may leave any subset of the given ranges written (and the last one torn) if it fails
///   or the power fails; nothing written is guaranteed durable before `sync` returns.
/// - `sync` is a barrier: every `write` that returned before it is durable when it returns.
/// - Writing past [`Pager::len`] grows the store; a pager that cannot grow that far returns
///   [`Error::NoSpace`] (or reports a smaller [`Pager::capacity`], which kvdb checks first).
pub trait Pager {
    /// Bytes of a range, valid for the life of a read transaction.
    type Page<'a>: Deref<Target = [u8]> + Clone
    where
        Self: 'a;

    /// Bytes `[offset, offset + len)`. Out-of-range reads are an error, never a panic.
    fn read(&self, offset: u64, len: usize) -> Result<Self::Page<'_>>;

    /// Write every `(offset, bytes)` pair. kvdb passes them sorted by offset and non-overlapping.
    fn write(&self, writes: &[(u64, &[u8])]) -> Result<()>;

    /// Durability barrier: all earlier writes reach stable storage before this returns.
    fn sync(&self) -> Result<()>;

    /// Current size in bytes.
    fn len(&self) -> u64;

    /// True when the store holds no bytes (a fresh device or file).
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The largest size the store may grow to.
    fn capacity(&self) -> u64 {
        u64::MAX
    }

    /// Copy the bytes `[offset, offset + dst.len())` into `dst`. A pager that can move them
    /// more cheaply than a copy out of [`Pager::read`] (the kernel's disk window: a device read
    /// straight into `dst`) overrides it, and says so with [`Pager::direct_reads`].
    fn read_into(&self, offset: u64, dst: &mut [u8]) -> Result<()> {
        let src = self.read(offset, dst.len())?;
        dst.copy_from_slice(&src);
        Ok(())
    }

    /// [`Pager::read_into`] of the bytes at `offset` into the concatenation of `dst`'s pieces
    /// (the pages of a user buffer). The default reads each piece in turn; the kernel's disk
    /// window reads them with one scattered device request.
    fn read_into_pieces(&self, offset: u64, dst: &mut [&mut [u8]]) -> Result<()> {
        let mut at = offset;
        for piece in dst.iter_mut() {
            self.read_into(at, piece)?;
            at += piece.len() as u64;
        }
        Ok(())
    }

    /// Whether [`Pager::read_into`] beats copying from [`Pager::read`] for large ranges.
    fn direct_reads(&self) -> bool {
        false
    }

    /// Whether [`Pager::read`] serves any byte range as cheaply as whole pages (a pager over
    /// one mapped window). kvdb itself always reads whole pages; a caller copying a few bytes
    /// out of committed pages (dbfs's small reads) then skips rounding the range out to pages.
    fn byte_reads(&self) -> bool {
        false
    }

    /// Write every `(offset, bytes)` pair (sorted, non-overlapping) like [`Pager::write`], for
    /// the pages of large values ([`crate::Bucket::put_direct`]). The pairs need not be whole
    /// pages, but each run of pairs adjacent on the disk is (it starts and ends on a page),
    /// and a pair whose length is not whole pages starts or ends on a page boundary: a value
    /// given as the pages of a user buffer that does not start on a page comes as a partial
    /// first page, whole pages, and a partial last page. A pager
    /// that can move them more cheaply than `write` (the kernel's disk window: a device write
    /// straight from the caller's buffer, dropping any resident copy of those pages) overrides
    /// it and says so with [`Pager::direct_writes`]. Same contract as `write`: durable once the
    /// next `sync` returns; the pager is done with the buffers when this returns.
    fn write_direct(&self, writes: &[(u64, &[u8])]) -> Result<()> {
        self.write(writes)
    }

    /// Whether [`Pager::write_direct`] beats [`Pager::write`] for large values.
    fn direct_writes(&self) -> bool {
        false
    }

    /// Told after transaction `txid` committed (its meta page is durable). For counters; the
    /// default does nothing.
    fn committed(&self, _txid: u64) {}
}

/// Whether `writes` has the shape [`Pager::write_direct`] promises its pager: sorted and
/// non-overlapping, each run of pairs adjacent on the disk starting and ending on a page of
/// `page_size` bytes, and every pair that is not whole pages long starting or ending on a page
/// boundary. For pagers that rely on it (and their tests).
pub fn direct_writes_well_formed(writes: &[(u64, &[u8])], page_size: usize) -> bool {
    let ps = page_size as u64;
    let mut run_end: Option<u64> = None;
    for &(off, bytes) in writes {
        let len = bytes.len() as u64;
        let Some(end) = off.checked_add(len) else {
            return false;
        };
        if run_end.is_some_and(|e| off < e) {
            return false; // not sorted, or overlapping
        }
        if run_end != Some(off)
            && (!run_end.unwrap_or(0).is_multiple_of(ps) || !off.is_multiple_of(ps))
        {
            return false; // a run ends or starts inside a page
        }
        if !len.is_multiple_of(ps) && !off.is_multiple_of(ps) && !end.is_multiple_of(ps) {
            return false; // a partial page inside a value
        }
        run_end = Some(end);
    }
    run_end.unwrap_or(0).is_multiple_of(ps)
}

/// One recorded pager operation, in issue order (see [`MemPager::record`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PagerEvent {
    /// Bytes written at an offset.
    Write(u64, Vec<u8>),
    /// A [`Pager::sync`] barrier.
    Sync,
}

/// A pager in RAM, for tests and for building images. Reads copy the range into an `Arc<[u8]>`.
///
/// It can record every write and barrier (crash tests replay prefixes of that log), cap its size
/// (out-of-space tests) and fail the n-th write from now (I/O-error tests).
#[derive(Default)]
pub struct MemPager {
    bytes: RwLock<Vec<u8>>,
    log: Mutex<Option<Vec<PagerEvent>>>,
    capacity: Option<u64>,
    fail_after_writes: Mutex<Option<usize>>,
}

impl MemPager {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// A store holding `image` (e.g. bytes read from a file or a crash-test reconstruction).
    pub fn from_image(image: Vec<u8>) -> Self {
        MemPager {
            bytes: RwLock::new(image),
            ..Self::default()
        }
    }

    /// Limit the store to `capacity` bytes: growing past it is [`Error::NoSpace`].
    pub fn with_capacity_limit(mut self, capacity: u64) -> Self {
        self.capacity = Some(capacity);
        self
    }

    /// A copy of the current bytes.
    pub fn image(&self) -> Vec<u8> {
        self.bytes.read().clone()
    }

    /// Start recording writes and barriers (clears any earlier log).
    pub fn record(&self) {
        *self.log.lock() = Some(Vec::new());
    }

    /// Stop recording and return the log.
    pub fn take_log(&self) -> Vec<PagerEvent> {
        self.log.lock().take().unwrap_or_default()
    }

    /// Make the `n`-th write call from now (0 = the next one) and every later one fail with
    /// [`Error::Io`]; `None` heals the pager.
    pub fn fail_writes_after(&self, n: Option<usize>) {
        *self.fail_after_writes.lock() = n;
    }
}

impl Pager for MemPager {
    type Page<'a> = Arc<[u8]>;

    fn read(&self, offset: u64, len: usize) -> Result<Arc<[u8]>> {
        let bytes = self.bytes.read();
        let start = usize::try_from(offset).map_err(|_| Error::Io)?;
        let end = start.checked_add(len).ok_or(Error::Io)?;
        bytes.get(start..end).map(Arc::from).ok_or(Error::Io)
    }

    fn write(&self, writes: &[(u64, &[u8])]) -> Result<()> {
        {
            let mut fail = self.fail_after_writes.lock();
            if let Some(n) = fail.as_mut() {
                if *n == 0 {
                    return Err(Error::Io);
                }
                *n -= 1;
            }
        }
        let mut bytes = self.bytes.write();
        let mut log = self.log.lock();
        for &(offset, data) in writes {
            let start = usize::try_from(offset).map_err(|_| Error::NoSpace)?;
            let end = start.checked_add(data.len()).ok_or(Error::NoSpace)?;
            if end as u64 > self.capacity() {
                return Err(Error::NoSpace);
            }
            if bytes.len() < end {
                bytes.resize(end, 0);
            }
            bytes[start..end].copy_from_slice(data);
            if let Some(log) = log.as_mut() {
                log.push(PagerEvent::Write(offset, data.to_vec()));
            }
        }
        Ok(())
    }

    fn sync(&self) -> Result<()> {
        if let Some(log) = self.log.lock().as_mut() {
            log.push(PagerEvent::Sync);
        }
        Ok(())
    }

    fn len(&self) -> u64 {
        self.bytes.read().len() as u64
    }

    fn capacity(&self) -> u64 {
        self.capacity.unwrap_or(u64::MAX)
    }
}

/// A pager over a borrowed byte slice: read-only, zero-copy (`Page = &[u8]`). This is the shape of
/// the kernel's memory window, and lets a caller inspect an image without copying it.
pub struct SlicePager<'s>(pub &'s [u8]);

impl<'s> Pager for SlicePager<'s> {
    type Page<'a>
        = &'a [u8]
    where
        Self: 'a;

    fn read(&self, offset: u64, len: usize) -> Result<&[u8]> {
        let start = usize::try_from(offset).map_err(|_| Error::Io)?;
        let end = start.checked_add(len).ok_or(Error::Io)?;
        self.0.get(start..end).ok_or(Error::Io)
    }

    fn write(&self, _writes: &[(u64, &[u8])]) -> Result<()> {
        Err(Error::Io)
    }

    fn sync(&self) -> Result<()> {
        Ok(())
    }

    fn len(&self) -> u64 {
        self.0.len() as u64
    }
}
