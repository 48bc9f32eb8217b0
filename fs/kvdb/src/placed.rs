//! Placed values: large values whose fresh pages one write transaction takes
//! ([`Tx::reserve_placed`]), written after it without the writer lock ([`Db::write_placed`]),
//! and inserted under a key by a later one ([`crate::Bucket::put_placed`]).
//!
//! A layer above that stores large writes as they come (dbfs's direct writes) but wants their
//! tree updates batched into one commit places each write's values at once (the bytes go to
//! the disk straight from the caller's buffer) and inserts them all at its next commit, so a
//! write no longer pays for a commit of its own (copying its leaves out of their pages and
//! back).
//!
//! State: the placed pages are a set of the freelist ([`crate::freelist::Freelist::place`]):
//! taken (no allocation hands them out), in no tree, and listed as free in every freelist
//! extent written while they wait, so a crash before their insert leaves them free, never
//! leaked. A placing transaction must commit (a deferred commit is enough: it publishes the
//! store's new size if the pages grew it) for its values to stay placed; dropped, it gives
//! them back. [`crate::Bucket::put_placed`] and [`Tx::drop_placed`] take pages out of the set
//! in their transaction; if it does not commit, they are placed again.

use alloc::vec::Vec;

use crate::error::{Error, Result};
use crate::node::LeafValue;
use crate::overflow::write_value_pages;
use crate::page::{self, PageId};
use crate::pager::Pager;
use crate::store::Db;
use crate::tx::Tx;

/// A value [`Tx::reserve_placed`] placed: `len` bytes in the `pages` contiguous pages from
/// `page`.
/// Inserting it ([`crate::Bucket::put_placed`]) may store fewer bytes than were written
/// ([`Placed::cut`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placed {
    /// The first page.
    pub page: PageId,
    /// Pages written (the value's length when placed, in pages).
    pub pages: u64,
    /// Bytes the value holds.
    pub len: u64,
}

impl Placed {
    /// The same pages holding only the first `len` bytes (at most the written length): what
    /// a file truncated inside the value keeps. The insert frees the pages past them.
    pub fn cut(self, len: u64) -> Placed {
        Placed {
            len: len.min(self.len),
            ..self
        }
    }
}

impl<'db, P: Pager> Tx<'db, P> {
    /// Pages for values of `lens` bytes, placed: in no tree, waiting for a later transaction's
    /// [`crate::Bucket::put_placed`] or [`Tx::drop_placed`]. Their bytes are written once this
    /// transaction has committed (a deferred commit is enough), without the writer lock
    /// ([`crate::Db::write_placed`]), so other transactions run while the device works. Until
    /// that write has returned, the pages hold whatever they held: nothing may insert them
    /// before. Every length must be too long to be stored inline ([`page::max_inline_len`]),
    /// else [`Error::IncompatibleValue`] and nothing is taken.
    pub fn reserve_placed(&self, lens: &[usize]) -> Result<Vec<Placed>> {
        self.check_writable()?;
        let inline = page::max_inline_len(self.db.page_size);
        for &len in lens {
            if len <= inline {
                return Err(Error::IncompatibleValue);
            }
            if len as u64 > u32::MAX as u64 {
                return Err(Error::ValueTooLarge);
            }
        }
        let mut st = self.state.borrow_mut();
        let st = &mut *st;
        let extents = self.alloc_values(st, lens)?;
        let ws = st.write.as_mut().ok_or(Error::TxReadOnly)?;
        let mut placed = Vec::with_capacity(extents.len());
        for (extent, &len) in extents.iter().zip(lens) {
            let (page, pages) = extent.ok_or(Error::Corrupted("placed value stored inline"))?;
            ws.guard.freelist.place(page, pages);
            ws.placed_now.push((page, pages));
            placed.push(Placed {
                page,
                pages,
                len: len as u64,
            });
        }
        Ok(placed)
    }

    /// Free placed values that will never be inserted (the layer above replaced them before
    /// its commit). Values not placed (already inserted or dropped) are
    /// [`Error::Corrupted`], and none is dropped then.
    pub fn drop_placed(&self, placed: &[Placed]) -> Result<()> {
        let mut st = self.state.borrow_mut();
        let ws = st.write.as_mut().ok_or(Error::TxReadOnly)?;
        for (i, p) in placed.iter().enumerate() {
            if !ws.guard.freelist.unplace(p.page, p.pages) {
                for q in &placed[..i] {
                    ws.guard.freelist.place(q.page, q.pages);
                }
                return Err(Error::Corrupted("dropped value is not placed"));
            }
        }
        for p in placed {
            ws.adopted.push((p.page, p.pages));
            ws.freed.push((p.page, p.pages));
        }
        Ok(())
    }

    /// [`crate::Bucket::put_placed`] into bucket `b`.
    pub(crate) fn put_placed(
        &self,
        b: usize,
        pairs: &[(&[u8], Placed)],
    ) -> Result<Vec<Option<u64>>> {
        self.check_writable()?;
        let ps = self.db.page_size as u64;
        for &(key, p) in pairs {
            self.check_pair_len(key, p.len as usize)?;
            if p.len <= page::max_inline_len(self.db.page_size) as u64
                || p.len.div_ceil(ps) > p.pages
            {
                return Err(Error::IncompatibleValue);
            }
        }
        let mut st = self.state.borrow_mut();
        let st = &mut *st;
        if st.buckets[b].deleted {
            return Err(Error::BucketNotFound);
        }
        {
            let ws = st.write.as_mut().ok_or(Error::TxReadOnly)?;
            for (i, &(_, p)) in pairs.iter().enumerate() {
                if !ws.guard.freelist.unplace(p.page, p.pages) {
                    for &(_, q) in &pairs[..i] {
                        ws.guard.freelist.place(q.page, q.pages);
                    }
                    return Err(Error::Corrupted("inserted value is not placed"));
                }
            }
            for &(_, p) in pairs {
                ws.adopted.push((p.page, p.pages));
            }
        }
        let keys: Vec<&[u8]> = pairs.iter().map(|(k, _)| *k).collect();
        let values: Vec<LeafValue> = pairs
            .iter()
            .map(|&(_, p)| LeafValue::Overflow {
                page: p.page,
                len: p.len,
            })
            .collect();
        let r = self.insert_values(st, b, &keys, values);
        let inserted = match &r {
            Ok(_) => pairs.len(),
            Err((i, _)) => *i,
        };
        let ws = st.write.as_mut().ok_or(Error::TxReadOnly)?;
        // Pages past a cut value's last one are not referenced: free.
        for &(_, p) in &pairs[..inserted] {
            let used = p.len.div_ceil(ps);
            if used < p.pages {
                ws.freed.push((p.page + used, p.pages - used));
            }
        }
        // The pair that failed and those after it are not inserted: placed again.
        for &(_, p) in &pairs[inserted..] {
            ws.guard.freelist.place(p.page, p.pages);
            ws.adopted.pop();
        }
        r.map_err(|(_, e)| e)
    }
}

/// Each value's length: the sum of its pieces.
fn value_lens(values: &[&[&[u8]]]) -> Vec<usize> {
    values
        .iter()
        .map(|pieces| pieces.iter().map(|p| p.len()).sum())
        .collect()
}

impl<P: Pager> Db<P> {
    /// Write the bytes of values [`Tx::reserve_placed`] placed (`values[i]`, the concatenation
    /// of its pieces, `placed[i].len` bytes) as a transaction writes large values, but
    /// without the writer lock: other transactions, commits and barriers run meanwhile. The
    /// pages are in no tree and listed as free in every freelist written, so a crash at any
    /// point leaves them free; the caller inserts them ([`crate::Bucket::put_placed`]) only
    /// after this returned, and drops them ([`Tx::drop_placed`]) if it failed. The next
    /// barrier flushes the device before its meta page (no commit record vouches for these
    /// writes), so a meta that references them is never durable before they are. A length
    /// that does not match its placed value is [`Error::IncompatibleValue`], before anything
    /// is written.
    pub fn write_placed(&self, placed: &[Placed], values: &[&[&[u8]]]) -> Result<()> {
        let ps = self.page_size;
        let lens = value_lens(values);
        if placed.len() != values.len()
            || placed
                .iter()
                .zip(&lens)
                .any(|(p, &len)| p.len != len as u64 || (len.div_ceil(ps) as u64) > p.pages)
        {
            return Err(Error::IncompatibleValue);
        }
        let extents: Vec<Option<(PageId, u64)>> =
            placed.iter().map(|p| Some((p.page, p.pages))).collect();
        let r = write_value_pages(ps, &extents, values, &lens, |writes, direct| {
            if direct {
                self.pager.write_direct(writes)
            } else {
                self.pager.write(writes)
            }
        });
        // Counted whether or not it failed (part of it may have landed): see `commit_record`.
        self.unnoted_writes
            .fetch_add(1, core::sync::atomic::Ordering::SeqCst);
        r
    }
}
