//! A write-back block cache in front of one disk; it is itself a `vfs::BlockDevice`, so a
//! file system mounts the cache instead of the raw disk.
//!
//! Contract: reads see every earlier write. Writes stay in memory (dirty) until `flush`
//! (fsync, sync, unmount), until dirty data passes half the capacity, or until eviction needs
//! the slot; `flush` returns only after the data is written and the device flushed.
//!
//! Runs of [`DIRECT_IO`] bytes or more bypass the cache, like O_DIRECT: a read goes from the
//! disk straight into the caller's buffer, then dirty cached sectors of the range are laid
//! over it; a write goes straight to the disk and refreshes (and cleans) cached copies. Large
//! sequential I/O then costs the same copies as the raw device, and does not flush the small
//! metadata blocks out of the cache.
//!
//! Design: 4 KiB cache blocks with per-sector valid/dirty bits, so a partial-block write never
//! reads the disk first. A miss reads a run of missing blocks in one request, with read-ahead
//! when misses are sequential. Write-back walks dirty blocks in order and sends contiguous runs
//! (up to 1 MiB), each gathered from its blocks' buffers without copying them together.
//! Eviction is the clock (second-chance) algorithm. Lock order: the cache's own mutex, then
//! the disk's.
//!
//! Each cache is a value owned by its mount: two disks never share one.

use alloc::boxed::Box;
use alloc::collections::{BTreeMap, VecDeque};
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;

use crate::arch::lockcheck::{rank, SpinLock};
use vfs::{BlockDevice, VfsError, VfsResult, SECTOR_SIZE};

/// Bytes per cache block.
pub const BLOCK_SIZE: usize = 4096;
const SECTORS_PER_BLOCK: u64 = (BLOCK_SIZE / SECTOR_SIZE) as u64;
const FULL: u8 = 0xff;
/// Longest run written or read in one request, in blocks (1 MiB).
const MAX_RUN: usize = 256;
/// Blocks read ahead on a sequential miss (128 KiB).
const READ_AHEAD: usize = 32;
/// Runs at least this long bypass the cache.
pub const DIRECT_IO: usize = 128 * 1024;

struct Entry {
    data: Box<[u8; BLOCK_SIZE]>,
    valid: u8,
    dirty: u8,
    referenced: bool,
}

struct Inner {
    map: BTreeMap<u64, Entry>,
    clock: VecDeque<u64>,
    dirty_blocks: usize,
    capacity: usize,
    /// The block after the last miss, to detect sequential reading.
    next_sequential: u64,
}

pub struct BlockCache {
    dev: Arc<dyn BlockDevice>,
    inner: SpinLock<Inner, { rank::BLOCK_CACHE }>,
    blocks: u64,
}

/// The part of a sector run that falls in one cache block.
struct Piece {
    block: u64,
    /// First sector of the piece within its block, and how many sectors.
    first: u64,
    count: u64,
    /// Where the piece starts in the caller's buffer, and its length in bytes.
    at: usize,
    len: usize,
}

impl Piece {
    fn mask(&self) -> u8 {
        sector_mask(self.first, self.count)
    }
    /// The piece's byte range inside its block's data.
    fn in_block(&self) -> core::ops::Range<usize> {
        let off = self.first as usize * SECTOR_SIZE;
        off..off + self.len
    }
}

/// Split the run of `len` bytes starting at `sector` into per-block pieces.
fn pieces(sector: u64, len: usize) -> impl Iterator<Item = Piece> {
    let mut at = 0usize;
    core::iter::from_fn(move || {
        if at >= len {
            return None;
        }
        let s = sector + (at / SECTOR_SIZE) as u64;
        let first = s % SECTORS_PER_BLOCK;
        let count = (SECTORS_PER_BLOCK - first).min(((len - at) / SECTOR_SIZE) as u64);
        let p = Piece {
            block: s / SECTORS_PER_BLOCK,
            first,
            count,
            at,
            len: count as usize * SECTOR_SIZE,
        };
        at += p.len;
        Some(p)
    })
}

fn sector_mask(first: u64, count: u64) -> u8 {
    (((1u16 << count) - 1) << first) as u8
}

impl BlockCache {
    /// A cache of `capacity_bytes` over `dev`.
    pub fn new(dev: Arc<dyn BlockDevice>, capacity_bytes: usize) -> Self {
        let blocks = dev.num_sectors() / SECTORS_PER_BLOCK;
        BlockCache {
            dev,
            blocks,
            inner: SpinLock::new(Inner {
                map: BTreeMap::new(),
                clock: VecDeque::new(),
                dirty_blocks: 0,
                capacity: (capacity_bytes / BLOCK_SIZE).max(2 * MAX_RUN),
                next_sequential: u64::MAX,
            }),
        }
    }

    /// Write every dirty block (no device flush): contiguous fully valid blocks as runs of
    /// up to 1 MiB, partially valid blocks as their dirty sector runs, all submitted together.
    /// A run is gathered straight from its blocks' buffers (`write_gather`: no copy; blocks
    /// that happen to be adjacent in memory become one piece).
    fn write_back(&self, inner: &mut Inner) -> VfsResult<()> {
        let dirty: Vec<u64> = inner
            .map
            .iter()
            .filter(|(_, e)| e.dirty != 0)
            .map(|(&b, _)| b)
            .collect();
        if dirty.is_empty() {
            return Ok(());
        }
        let mut runs: Vec<(u64, Vec<&[u8]>)> = Vec::new();
        let map = &inner.map;
        let whole = |b: u64| map.get(&b).is_some_and(|e| e.valid == FULL);
        let mut i = 0;
        while i < dirty.len() {
            let start = dirty[i];
            let mut n = 1;
            if whole(start) {
                while i + n < dirty.len()
                    && n < MAX_RUN
                    && dirty[i + n] == start + n as u64
                    && whole(start + n as u64)
                {
                    n += 1;
                }
                let mut pieces: Vec<&[u8]> = Vec::with_capacity(n);
                for k in 0..n {
                    let block: &[u8] = &map.get(&(start + k as u64)).ok_or(VfsError::Io)?.data[..];
                    match pieces.last_mut() {
                        Some(prev)
                            if prev.as_ptr() as usize + prev.len() == block.as_ptr() as usize =>
                        {
                            // SAFETY: two blocks of `map`, adjacent in memory and both borrowed
                            // (the cache is locked) until the write returns: their union is one
                            // live, readable range.
                            *prev = unsafe {
                                core::slice::from_raw_parts(prev.as_ptr(), prev.len() + BLOCK_SIZE)
                            };
                        }
                        _ => pieces.push(block),
                    }
                }
                runs.push((start * SECTORS_PER_BLOCK, pieces));
            } else if let Some(e) = map.get(&start) {
                let mut s = 0u64;
                while s < SECTORS_PER_BLOCK {
                    if e.dirty & (1 << s) == 0 {
                        s += 1;
                        continue;
                    }
                    let mut k = 1;
                    while s + k < SECTORS_PER_BLOCK && e.dirty & (1 << (s + k)) != 0 {
                        k += 1;
                    }
                    let bytes = &e.data[s as usize * SECTOR_SIZE..(s + k) as usize * SECTOR_SIZE];
                    runs.push((start * SECTORS_PER_BLOCK + s, vec![bytes]));
                    s += k;
                }
            }
            i += n;
        }
        let batch: Vec<(u64, &[&[u8]])> = runs
            .iter()
            .map(|(s, pieces)| (*s, pieces.as_slice()))
            .collect();
        self.dev.write_gather(&batch)?;
        for b in dirty {
            if let Some(e) = inner.map.get_mut(&b) {
                e.dirty = 0;
            }
        }
        inner.dirty_blocks = 0;
        Ok(())
    }

    /// Make room for one more block.
    fn evict_one(&self, inner: &mut Inner) -> VfsResult<()> {
        while inner.map.len() >= inner.capacity {
            let Some(b) = inner.clock.pop_front() else {
                return Ok(());
            };
            let Some(e) = inner.map.get_mut(&b) else {
                continue;
            };
            if e.referenced {
                e.referenced = false;
                inner.clock.push_back(b);
                continue;
            }
            if e.dirty != 0 {
                // Write back everything dirty: eviction under write pressure then sends long
                // sequential runs instead of one block at a time.
                inner.clock.push_front(b);
                self.write_back(inner)?;
                inner.clock.pop_front();
            }
            inner.map.remove(&b);
        }
        Ok(())
    }

    fn insert(&self, inner: &mut Inner, block: u64, entry: Entry) -> VfsResult<()> {
        self.evict_one(inner)?;
        inner.map.insert(block, entry);
        inner.clock.push_back(block);
        Ok(())
    }

    /// Fill block `b` (missing or partially valid) and the missing blocks after it, up to
    /// `want` blocks, with one device read.
    fn fill(&self, inner: &mut Inner, b: u64, want: usize) -> VfsResult<()> {
        let mut n = 1;
        while n < want && b + (n as u64) < self.blocks && !inner.map.contains_key(&(b + n as u64)) {
            n += 1;
        }
        let mut buf = vec![0u8; n * BLOCK_SIZE];
        self.dev.read_sectors(b * SECTORS_PER_BLOCK, &mut buf)?;
        for k in 0..n {
            let blk = b + k as u64;
            let src = &buf[k * BLOCK_SIZE..(k + 1) * BLOCK_SIZE];
            if let Some(e) = inner.map.get_mut(&blk) {
                // Keep sectors already valid (they may be dirty and newer than the disk).
                for s in 0..SECTORS_PER_BLOCK as usize {
                    if e.valid & (1 << s) == 0 {
                        e.data[s * SECTOR_SIZE..(s + 1) * SECTOR_SIZE]
                            .copy_from_slice(&src[s * SECTOR_SIZE..(s + 1) * SECTOR_SIZE]);
                    }
                }
                e.valid = FULL;
                e.referenced = true;
            } else {
                let mut data = Box::new([0u8; BLOCK_SIZE]);
                data.copy_from_slice(src);
                // New blocks enter referenced (clock): a full sweep must pass before they go.
                self.insert(
                    inner,
                    blk,
                    Entry {
                        data,
                        valid: FULL,
                        dirty: 0,
                        referenced: true,
                    },
                )?;
            }
        }
        inner.next_sequential = b + n as u64;
        Ok(())
    }
}

impl BlockCache {
    fn read_direct(&self, inner: &mut Inner, sector: u64, buf: &mut [u8]) -> VfsResult<()> {
        self.dev.read_sectors(sector, buf)?;
        // Clean cached sectors equal the disk; lay the dirty ones over what it returned.
        for p in pieces(sector, buf.len()) {
            let Some(e) = inner.map.get(&p.block) else {
                continue;
            };
            for s in p.first..p.first + p.count {
                if e.dirty & (1 << s) != 0 {
                    let o = p.at + ((s - p.first) as usize) * SECTOR_SIZE;
                    let src = s as usize * SECTOR_SIZE;
                    buf[o..o + SECTOR_SIZE].copy_from_slice(&e.data[src..src + SECTOR_SIZE]);
                }
            }
        }
        crate::counters::add_cache(0, (buf.len() / BLOCK_SIZE) as u64);
        Ok(())
    }

    fn write_direct(&self, inner: &mut Inner, sector: u64, buf: &[u8]) -> VfsResult<()> {
        self.dev.write_sectors(sector, buf)?;
        // Cached copies of the written sectors now equal the disk: refresh them, clean.
        for p in pieces(sector, buf.len()) {
            let Some(e) = inner.map.get_mut(&p.block) else {
                continue;
            };
            e.data[p.in_block()].copy_from_slice(&buf[p.at..p.at + p.len]);
            e.valid |= p.mask();
            let was_dirty = e.dirty != 0;
            e.dirty &= !p.mask();
            if was_dirty && e.dirty == 0 {
                inner.dirty_blocks -= 1;
            }
        }
        Ok(())
    }
}

/// Every cache of a mounted disk, for `drop_caches`.
static CACHES: SpinLock<Vec<Arc<BlockCache>>, { rank::BLOCK_CACHE_LIST }> =
    SpinLock::new(Vec::new());

/// Remember `cache` for [`drop_all_caches`].
pub fn register(cache: Arc<BlockCache>) {
    CACHES.lock().push(cache);
}

/// Forget `cache` (its file system was unmounted).
pub fn unregister(cache: &Arc<BlockCache>) {
    CACHES.lock().retain(|c| !Arc::ptr_eq(c, cache));
}

/// Under memory pressure ([`crate::mm::heap::admit`]): every registered cache forgets its
/// clean blocks. A cache busy at this moment (its lock held further up this very call chain)
/// is skipped rather than waited for.
pub fn shrink_all() {
    let Some(caches) = CACHES.try_lock().map(|c| c.clone()) else {
        return;
    };
    for c in caches {
        c.shrink_clean();
    }
}

/// Empty every registered cache (after writing back what is dirty).
pub fn drop_all_caches() -> VfsResult<()> {
    let caches: Vec<Arc<BlockCache>> = CACHES.lock().clone();
    for c in caches {
        c.drop_all()?;
    }
    Ok(())
}

impl BlockCache {
    /// Forget every clean block (dirty ones stay until write-back); skipped if the cache is
    /// in use. Returns the blocks dropped.
    pub fn shrink_clean(&self) -> usize {
        let Some(mut inner) = self.inner.try_lock() else {
            return 0;
        };
        let before = inner.map.len();
        inner.map.retain(|_, e| e.dirty != 0);
        let Inner { map, clock, .. } = &mut *inner;
        clock.retain(|b| map.contains_key(b));
        before - inner.map.len()
    }

    /// Write back everything dirty, flush the disk, and forget every block (cold reads).
    pub fn drop_all(&self) -> VfsResult<()> {
        self.flush()?;
        let mut inner = self.inner.lock();
        inner.map.clear();
        inner.clock.clear();
        inner.next_sequential = u64::MAX;
        Ok(())
    }
}

impl BlockDevice for BlockCache {
    fn num_sectors(&self) -> u64 {
        self.dev.num_sectors()
    }

    fn read_sectors(&self, sector: u64, buf: &mut [u8]) -> VfsResult<()> {
        vfs::check_run(self.num_sectors(), sector, buf.len())?;
        let mut inner = self.inner.lock();
        if buf.len() >= DIRECT_IO {
            return self.read_direct(&mut inner, sector, buf);
        }
        let (mut hits, mut misses) = (0, 0);
        for p in pieces(sector, buf.len()) {
            let need = p.mask();
            if inner
                .map
                .get(&p.block)
                .is_some_and(|e| e.valid & need == need)
            {
                hits += 1;
            } else {
                misses += 1;
                let remaining_blocks = (buf.len() - p.at).div_ceil(BLOCK_SIZE) + 1;
                let want = if p.block == inner.next_sequential {
                    remaining_blocks.max(READ_AHEAD)
                } else {
                    remaining_blocks
                };
                self.fill(&mut inner, p.block, want.min(MAX_RUN))?;
            }
            let dst = &mut buf[p.at..p.at + p.len];
            match inner.map.get_mut(&p.block) {
                Some(e) => {
                    e.referenced = true;
                    dst.copy_from_slice(&e.data[p.in_block()]);
                }
                // Evicted by its own fill (a cache smaller than the run): the disk has the
                // data, since a block that is not cached cannot be dirty.
                None => self
                    .dev
                    .read_sectors(p.block * SECTORS_PER_BLOCK + p.first, dst)?,
            }
        }
        crate::counters::add_cache(hits, misses);
        Ok(())
    }

    fn write_sectors(&self, sector: u64, buf: &[u8]) -> VfsResult<()> {
        vfs::check_run(self.num_sectors(), sector, buf.len())?;
        let mut inner = self.inner.lock();
        if buf.len() >= DIRECT_IO {
            return self.write_direct(&mut inner, sector, buf);
        }
        for p in pieces(sector, buf.len()) {
            if !inner.map.contains_key(&p.block) {
                let entry = Entry {
                    data: Box::new([0u8; BLOCK_SIZE]),
                    valid: 0,
                    dirty: 0,
                    referenced: true,
                };
                self.insert(&mut inner, p.block, entry)?;
            }
            let mut newly_dirty = false;
            if let Some(e) = inner.map.get_mut(&p.block) {
                e.data[p.in_block()].copy_from_slice(&buf[p.at..p.at + p.len]);
                e.valid |= p.mask();
                newly_dirty = e.dirty == 0;
                e.dirty |= p.mask();
                e.referenced = true;
            }
            if newly_dirty {
                inner.dirty_blocks += 1;
            }
        }
        if inner.dirty_blocks > inner.capacity / 2 {
            self.write_back(&mut inner)?;
        }
        Ok(())
    }

    fn flush(&self) -> VfsResult<()> {
        let mut inner = self.inner.lock();
        self.write_back(&mut inner)?;
        drop(inner);
        self.dev.flush()
    }
}
