//! Overflow values: a value longer than a sixth of a page lives in its own run of contiguous
//! pages (no header, so a reader gets it as one slice).
//!
//! `put` writes one such value to fresh pages at once (nobody can see them until commit);
//! `put_direct` places several values' runs together and writes their whole pages straight
//! from the caller's bytes with one [`Pager::write_direct`]. State: none of its own; the pages
//! come from the transaction's allocator, and a failure frees them with the transaction's
//! frees (they were never referenced).

use alloc::vec;
use alloc::vec::Vec;

use crate::error::{Error, Result};
use crate::node::{LeafValue, ValueBytes};
use crate::page::{self, PageId};
use crate::pager::Pager;
use crate::tree::{PutMode, WriteCtx};
use crate::tx::{Tx, TxState};

impl<'db, P: Pager> Tx<'db, P> {
    /// Write a large value to fresh contiguous pages now (nobody can see them until commit).
    pub(crate) fn write_overflow(&self, st: &mut TxState<'db>, value: &[u8]) -> Result<LeafValue> {
        let ps = self.db.page_size;
        let n = value.len().div_ceil(ps) as u64;
        let id = self.alloc(st, n)?;
        let full = value.len() / ps * ps;
        let rest = &value[full..];
        // The last page padded with zeros, only when the value does not end on a page (a
        // chunk-sized value is written straight from `value`, with no page buffer to fill).
        let tail = if rest.is_empty() {
            Vec::new()
        } else {
            let mut t = vec![0u8; ps];
            t[..rest.len()].copy_from_slice(rest);
            t
        };
        let base = id * ps as u64;
        let mut writes: Vec<(u64, &[u8])> = Vec::with_capacity(2);
        if full > 0 {
            writes.push((base, &value[..full]));
        }
        if !rest.is_empty() {
            writes.push((base + full as u64, &tail));
        }
        let ws = st.write.as_mut().ok_or(Error::TxReadOnly)?;
        if let Err(e) = self.db.write_noted(&mut ws.guard, &writes, false, true) {
            ws.freed.push((id, n));
            return Err(e);
        }
        Ok(LeafValue::Overflow {
            page: id,
            len: value.len() as u64,
        })
    }

    /// [`Bucket::put_direct`]: allocate every large value's pages, write their whole pages
    /// with one [`Pager::write_direct`] (straight from the caller's bytes) and the padded last
    /// pages with one `write`, then insert the pairs. Returns the replaced values' lengths.
    pub(crate) fn put_direct(
        &self,
        b: usize,
        pairs: &[(&[u8], &[&[u8]])],
    ) -> Result<Vec<Option<u64>>> {
        self.check_writable()?;
        let lens: Vec<usize> = pairs
            .iter()
            .map(|(_, pieces)| pieces.iter().map(|p| p.len()).sum())
            .collect();
        for (&(key, _), &len) in pairs.iter().zip(&lens) {
            self.check_pair_len(key, len)?;
        }
        let mut st = self.state.borrow_mut();
        let st = &mut *st;
        if st.buckets[b].deleted {
            return Err(Error::BucketNotFound);
        }
        let values: Vec<&[&[u8]]> = pairs.iter().map(|(_, pieces)| *pieces).collect();
        let extents = self.write_values(st, &values, &lens)?;
        let values: Vec<LeafValue> = extents
            .iter()
            .zip(pairs.iter().zip(&lens))
            .map(|(extent, (&(_, pieces), &len))| match *extent {
                Some((page, _)) => LeafValue::Overflow {
                    page,
                    len: len as u64,
                },
                None => LeafValue::Inline(ValueBytes::from_vec(pieces.concat())),
            })
            .collect();
        let keys: Vec<&[u8]> = pairs.iter().map(|(k, _)| *k).collect();
        self.insert_values(st, b, &keys, values).map_err(|(i, e)| {
            // The pair that failed and those after it are not inserted: free their pages.
            if let Some(ws) = st.write.as_mut() {
                ws.freed.extend(extents[i..].iter().flatten().copied());
            }
            e
        })
    }

    /// Write `values` (each the concatenation of its pieces, `lens` their lengths) to fresh
    /// pages ([`Tx::alloc_values`], then [`write_value_pages`] through the writer's noted
    /// writes). Returns each value's extent (`None`: small enough to be stored inline, nothing
    /// written). On failure the pages go back with the transaction's frees (nothing references
    /// them).
    pub(crate) fn write_values(
        &self,
        st: &mut TxState<'db>,
        values: &[&[&[u8]]],
        lens: &[usize],
    ) -> Result<Vec<Option<(PageId, u64)>>> {
        let extents = self.alloc_values(st, lens)?;
        let ws = st.write.as_mut().ok_or(Error::TxReadOnly)?;
        let db = self.db;
        let written = write_value_pages(db.page_size, &extents, values, lens, |writes, direct| {
            db.write_noted(&mut ws.guard, writes, direct, true)
        });
        if let Err(e) = written {
            // Nothing references the pages: they go back with the transaction's frees.
            ws.freed.extend(extents.iter().flatten().copied());
            return Err(e);
        }
        Ok(extents)
    }

    /// Pages for values of `lens` bytes: every large value's taken before anything is written,
    /// one extent for all of them if the store has one (the values then lie in order, and the
    /// pager can write them as one piece), else one per value; `None` for a value small enough
    /// to be stored inline. On failure those taken go back with the transaction's frees.
    pub(crate) fn alloc_values(
        &self,
        st: &mut TxState<'db>,
        lens: &[usize],
    ) -> Result<Vec<Option<(PageId, u64)>>> {
        let ps = self.db.page_size;
        let pages_of =
            |len: usize| (len > page::max_inline_len(ps)).then(|| len.div_ceil(ps) as u64);
        let total: u64 = lens.iter().filter_map(|&len| pages_of(len)).sum();
        let mut next = if total > 0 {
            self.alloc(st, total).ok()
        } else {
            None
        };
        let mut extents: Vec<Option<(PageId, u64)>> = Vec::with_capacity(lens.len());
        for &len in lens {
            let Some(n) = pages_of(len) else {
                extents.push(None);
                continue;
            };
            let id = match next.as_mut() {
                Some(at) => {
                    *at += n;
                    *at - n
                }
                None => match self.alloc(st, n) {
                    Ok(id) => id,
                    Err(e) => {
                        let ws = st.write.as_mut().ok_or(Error::TxReadOnly)?;
                        ws.freed.extend(extents.iter().flatten().copied());
                        return Err(e);
                    }
                },
            };
            extents.push(Some((id, n)));
        }
        Ok(extents)
    }

    /// Insert `values` under `keys` into bucket `b`. Returns the replaced values' lengths
    /// (replaced overflow pages are freed), or the index of the pair that failed and why:
    /// the pairs before it stay inserted, it and those after it are not.
    pub(crate) fn insert_values(
        &self,
        st: &mut TxState<'db>,
        b: usize,
        keys: &[&[u8]],
        values: Vec<LeafValue>,
    ) -> core::result::Result<Vec<Option<u64>>, (usize, Error)> {
        let ps = self.db.page_size;
        let ws = st.write.as_mut().ok_or((0, Error::TxReadOnly))?;
        let mut ctx = WriteCtx {
            src: self.db.pages(self.meta.page_count),
            freed: &mut ws.freed,
        };
        let bucket = &mut st.buckets[b];
        bucket.version += 1;
        bucket.dirty = true;
        let mut replaced = Vec::with_capacity(keys.len());
        for (i, (&key, value)) in keys.iter().zip(values).enumerate() {
            match ctx.put(&mut bucket.tree, key, value, PutMode::Value) {
                Ok(Some(LeafValue::Overflow { page, len })) => {
                    ctx.freed.push((page, len.div_ceil(ps as u64).max(1)));
                    replaced.push(Some(len));
                }
                Ok(Some(LeafValue::Inline(v))) => replaced.push(Some(v.len() as u64)),
                Ok(_) => replaced.push(None),
                Err(e) => return Err((i, e)),
            }
        }
        Ok(replaced)
    }
}

/// Write each value of `values` (the concatenation of its pieces, `lens` its length) into its
/// extent (`None`: stored inline, nothing to write): the whole pages of all of them with one
/// `write(pairs, true)` ([`Pager::write_direct`]'s shape: straight from the pieces, joined
/// first where a piece other than the first and the last is not whole pages), then the padded
/// last pages with one `write(pairs, false)`.
pub(crate) fn write_value_pages(
    ps: usize,
    extents: &[Option<(PageId, u64)>],
    values: &[&[&[u8]]],
    lens: &[usize],
    mut write: impl FnMut(&[(u64, &[u8])], bool) -> Result<()>,
) -> Result<()> {
    let mut direct: Vec<(u64, &[u8])> = Vec::new();
    // Whole pages of values whose pieces do not fall on page boundaries, joined.
    let mut joined: Vec<(u64, Vec<u8>)> = Vec::new();
    let mut tails: Vec<(u64, Vec<u8>)> = Vec::new();
    for ((extent, &pieces), &len) in extents.iter().zip(values).zip(lens) {
        let Some((id, _)) = *extent else { continue };
        let base = id * ps as u64;
        let full = len / ps * ps;
        // The whole pages go straight from the pieces when every piece between the first
        // and the one that reaches `full` is whole pages (the pages of a user buffer,
        // whatever byte of a page it starts on: the pager gathers them into requests of
        // whole pages, see [`Pager::write_direct`]); otherwise they are joined first.
        let mut at = 0;
        let mut aligned = true;
        for piece in pieces.iter() {
            if at > 0 && at + piece.len() < full && piece.len() % ps != 0 {
                aligned = false;
                break;
            }
            at += piece.len();
            if at >= full {
                break;
            }
        }
        let mut tail = if full < len {
            vec![0u8; ps]
        } else {
            Vec::new()
        };
        let mut at = 0;
        let mut whole = Vec::with_capacity(if aligned { 0 } else { full });
        for piece in pieces.iter() {
            let in_full = piece.len().min(full.saturating_sub(at));
            if in_full > 0 {
                if aligned {
                    direct.push((base + at as u64, &piece[..in_full]));
                } else {
                    whole.extend_from_slice(&piece[..in_full]);
                }
            }
            let rest = &piece[in_full..];
            if !rest.is_empty() {
                let t = at + in_full - full;
                tail[t..t + rest.len()].copy_from_slice(rest);
            }
            at += piece.len();
        }
        if !whole.is_empty() {
            joined.push((base, whole));
        }
        if full < len {
            tails.push((base + full as u64, tail));
        }
    }
    direct.extend(joined.iter().map(|(o, w)| (*o, w.as_slice())));
    direct.sort_unstable_by_key(|w| w.0);
    tails.sort_unstable_by_key(|w| w.0);
    let tails: Vec<(u64, &[u8])> = tails.iter().map(|(o, t)| (*o, t.as_slice())).collect();
    if !direct.is_empty() {
        write(&direct, true)?;
    }
    if !tails.is_empty() {
        write(&tails, false)?;
    }
    Ok(())
}
