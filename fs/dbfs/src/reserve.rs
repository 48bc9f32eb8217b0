//! Space reservations for buffered writes (the equivalent of Linux's delayed-allocation
//! reservations): a write accepted into the write-back cache has the pages its commit will
//! need set aside at once, so the commit that stores it later (timer, dirty limit, last
//! close, unmount) cannot run out of space, and the write that cannot be stored fails with
//! `NoSpace` when it is made instead.
//!
//! The estimate, per buffered inode: every dirty chunk's value pages (a copy-on-write store
//! writes an overwritten chunk to new pages before the old ones are freed, so an overwrite
//! costs as much as a new chunk), one leaf page per [`CHUNKS_PER_LEAF`] chunks (the data
//! leaves the commit rewrites and the freelist entries for the values it frees), and
//! [`INODE_PAGES`] for the rewritten paths of the inode's record and data keys; plus, once
//! anything is buffered, [`COMMIT_PAGES`] for the commit itself (bucket roots, the
//! superblock path, the freelist extent). The room is kvdb's free pages as of the newest
//! commit ([`kvdb::Db::free_pages`]) less its reserve for deletions. Commits keep the
//! reservations of the data they do not store free ([`kvdb::Tx::keep_free`]), so a metadata
//! operation or a direct write cannot take space promised to buffered writes.
//!
//! State: `Pending::value_pages` and `Pending::reserved` per inode, `WriteBack::reserved`
//! their sum; all under `DbFs::state`.

use alloc::vec::Vec;

use kvdb::Pager;

use crate::mounted::DbFs;
use crate::state::{Pending, WriteBack};

/// Chunks whose keys share one rewritten leaf page, counted low (a 4 KiB leaf holds about 100
/// data keys with their overflow references).
pub(crate) const CHUNKS_PER_LEAF: u64 = 16;
/// Pages one buffered inode's commit rewrites besides its chunks: the paths from the bucket
/// roots to its record's leaf and to its first data leaf.
pub(crate) const INODE_PAGES: u64 = 8;
/// Pages any commit of buffered data needs once: the root bucket, the superblock's path and
/// the freelist extent a durable commit writes.
pub(crate) const COMMIT_PAGES: u64 = 16;

/// Pages a stored value of `len` bytes takes (small ones share a leaf; one page is an upper
/// bound for them too).
pub(crate) fn value_pages(len: usize, page_size: u64) -> u64 {
    (len as u64).div_ceil(page_size)
}

/// The reservation of an inode with `chunks` dirty chunks of `value_pages` pages in all.
pub(crate) fn inode_pages(value_pages: u64, chunks: usize) -> u64 {
    value_pages + (chunks as u64).div_ceil(CHUNKS_PER_LEAF) + INODE_PAGES
}

impl WriteBack {
    /// Drop the buffered chunks `[first, end)` of `ino` (a direct write stored newer ones).
    pub(crate) fn drop_chunks(&mut self, ino: u64, first: u64, end: u64, page_size: u64, cs: u64) {
        let Some(p) = self.pending.get_mut(&ino) else {
            return;
        };
        let gone: Vec<u64> = p.chunks.range(first..end).map(|(&i, _)| i).collect();
        for idx in gone {
            let charged = p.chunks.get(&idx).map(|b| p.commit_len(idx, b.len(), cs));
            p.partial.remove(&idx);
            if let (Some(buf), Some(charged)) = (p.chunks.remove(&idx), charged) {
                p.bytes = p.bytes.saturating_sub(buf.len());
                p.value_pages = p
                    .value_pages
                    .saturating_sub(value_pages(charged, page_size));
                self.dirty_bytes = self.dirty_bytes.saturating_sub(buf.len());
            }
        }
        WriteBack::update_reservation(&mut self.reserved, p);
    }

    /// Pages every buffered write together will need at commit.
    pub(crate) fn promised_pages(&self) -> u64 {
        if self.reserved == 0 {
            0
        } else {
            self.reserved + COMMIT_PAGES
        }
    }

    /// Bring `p`'s reservation (and the total) up to date with its chunks.
    pub(crate) fn update_reservation(reserved: &mut u64, p: &mut Pending) {
        // Placed chunks' pages are taken already; their commit rewrites leaves like the others.
        let now = inode_pages(p.value_pages, p.chunks.len() + p.placed.len());
        *reserved = reserved.saturating_sub(p.reserved).saturating_add(now);
        p.reserved = now;
    }
}

impl<P: Pager> DbFs<P> {
    /// Pages the store has for new data, before reservations: its free pages as of the newest
    /// commit less kvdb's reserve for deletions (`u64::MAX` for a pager without a limit).
    pub(crate) fn write_room_pages(&self) -> u64 {
        let cap = self.db.pager().capacity();
        if cap == u64::MAX {
            return u64::MAX;
        }
        let total = cap / self.db.page_size() as u64;
        self.db
            .free_pages()
            .saturating_sub(kvdb::reserve_pages(total))
    }

    /// Pages a buffered write of `[offset, end)` to `p` (or to an inode with nothing buffered)
    /// adds to the reservations, at most: chunks it creates or grows are counted at their
    /// largest (a partial chunk loaded from the store may be a whole one). Also returns the
    /// value pages the chunks it touches take now (what the write's accounting subtracts), so
    /// the write looks each chunk up once here.
    pub(crate) fn reservation_growth(
        &self,
        p: Option<&Pending>,
        offset: u64,
        end: u64,
    ) -> (u64, u64) {
        let cs = self.chunk_size;
        let ps = self.db.page_size() as u64;
        let (mut value_pages, mut chunks) = p.map_or((0, 0), |p| (p.value_pages, p.chunks.len()));
        let before = p.map_or(0, |p| p.reserved);
        let mut pages_now = 0;
        let mut idx = offset / cs;
        while idx * cs < end {
            let in_chunk_end = (end - idx * cs).min(cs) as usize;
            let old = p.and_then(|p| p.chunks.get(&idx).map(|b| p.commit_len(idx, b.len(), cs)));
            let new = match old {
                Some(len) => len.max(in_chunk_end),
                None => {
                    chunks += 1;
                    let stored = p.is_none_or(|p| idx * cs < p.stored_size);
                    if stored {
                        cs as usize
                    } else {
                        in_chunk_end
                    }
                }
            };
            value_pages += value_pages_delta(old.unwrap_or(0), new, ps);
            pages_now += old.map_or(0, |len| self::value_pages(len, ps));
            idx += 1;
        }
        (
            inode_pages(value_pages, chunks).saturating_sub(before),
            pages_now,
        )
    }
}

/// Pages a value growing from `old` to `new` bytes adds.
fn value_pages_delta(old: usize, new: usize, page_size: u64) -> u64 {
    value_pages(new, page_size).saturating_sub(value_pages(old, page_size))
}
