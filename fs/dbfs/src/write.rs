//! The write path of regular files: into the write-back cache (whole chunks copied before
//! taking `state`, partial chunks merged with the stored ones under it), or, for writes with
//! enough whole chunks, straight to the store in a transaction of their own
//! ([`DbFs::place_whole_chunks`], when the pager's direct writes beat a copy: written to the
//! disk at once, inserted into the store by the next commit of the file's entry).
//!
//! A partial write that covers whole pieces (4 KiB, see [`crate::state::piece_size`]) of
//! a stored chunk not in the cache is not merged: it makes a *partly loaded* chunk
//! ([`crate::state::Pending::partial`]: a buffer plus the mask of its pieces that hold the
//! newest bytes; the others are still the store's). A piece past the stored size counts as
//! loaded (the store has zeros there). A later write covering whole pieces adds them to the
//! mask; one touching part of a piece not loaded first loads the rest of the chunk from the
//! store (it is then an ordinary chunk), as does a mask that becomes full. Reads overlay only
//! the loaded pieces (`read.rs`), and a commit completes the chunk from the store inside its
//! transaction (`Txn::finish`). Reservations count a partly loaded chunk at the stored
//! chunk's length (what its commit writes); dirty bytes count its buffer (what it holds).
//!
//! Lock rules: `state` is never held while waiting for the writer lock. A buffered write to
//! a file whose direct write or record-changing commit is in flight drops `state`, waits for
//! the writer lock (so that commit is published), and looks again. A write that fills the
//! cache to its limit commits it after dropping `state` ([`Flush::Limit`]).

use alloc::vec::Vec;

use kvdb::{Pager, Tx};
use vfs::{VfsError, VfsResult};

use crate::error::kv;
use crate::format::MAX_FILE_SIZE;
use crate::mounted::DbFs;
use crate::read::load_chunk;
use crate::reserve;
use crate::state::{
    covered_pieces, fill_pieces, full_mask, touched_pieces, DirectWrite, Flush, WriteBack,
};

impl<P: Pager> DbFs<P> {
    /// Write the whole chunks of writes whose whole chunks add up to at least `bytes` directly
    /// (pages written by [`kvdb::Pager::write_direct`] at once, inserted by the file's next
    /// commit, no write-back cache: see [`DbFs::place_whole_chunks`]); `None` buffers every
    /// write. The default is
    /// [`crate::DIRECT_WRITE_MIN`] when the pager's [`kvdb::Pager::direct_writes`] says so,
    /// else `None`.
    pub fn set_direct_write_min(&self, bytes: Option<usize>) {
        self.state.lock().direct_write_min = bytes.map_or(usize::MAX, |b| b.max(1));
    }

    /// Whether a write of `len` bytes would only go into the write-back cache as things stand:
    /// too short for a direct write, and not filling the cache to its limit (which commits
    /// it). Such writes take the state lock briefly and copy outside it, so writers to
    /// different files run side by side (the kernel runs them without its big lock). A write
    /// that finds the cache full after all (another writer filled it meanwhile) commits as
    /// usual.
    pub(crate) fn parallel_write(&self, len: usize) -> bool {
        let st = self.state.lock();
        len < st.direct_write_min && st.wb.dirty_bytes.saturating_add(len) < st.wb.limit
    }

    /// `write_at` of a regular file: into the write-back cache; commits only if the dirty limit
    /// is reached (then everything buffered goes in one transaction).
    pub(crate) fn write_file(&self, ino: u64, offset: u64, data: &[u8]) -> VfsResult<usize> {
        self.write_gathered(ino, offset, &Src::new(&[data]))
    }

    /// [`DbFs::write_file`] of the concatenation of `data`'s pieces (a gathered write: the
    /// kernel passes the user's pages as they lie, and each byte is copied once, into the
    /// write-back cache).
    pub(crate) fn write_gathered(&self, ino: u64, offset: u64, data: &Src<'_>) -> VfsResult<usize> {
        self.write_src(ino, offset, data)
    }

    /// The write itself: checks the range, retries a failed flush of a full cache, then
    /// either stores the write's whole chunks directly ([`DbFs::write_direct`]) or buffers it
    /// ([`DbFs::buffer_write`]).
    fn write_src(&self, ino: u64, offset: u64, data: &Src<'_>) -> VfsResult<usize> {
        if data.len() == 0 {
            return Ok(0);
        }
        let end = offset
            .checked_add(data.len() as u64)
            .filter(|&e| e <= MAX_FILE_SIZE)
            .ok_or(VfsError::FileTooLarge)?;
        // A cache still at its limit means the last flush failed (a full store): try again
        // before buffering more, and fail this write if it still cannot commit. So a write that
        // returns ENOSPC buffered nothing, and a full store cannot grow the cache without end.
        let (full, direct_min) = {
            let st = self.state.lock();
            (st.wb.dirty_bytes >= st.wb.limit, st.direct_write_min)
        };
        if full {
            self.flush(Flush::Limit)?;
        }
        let cs = self.chunk_size;
        let (first, last) = (offset.div_ceil(cs), end / cs);
        if last > first && (last - first).saturating_mul(cs) >= direct_min as u64 {
            match self.write_direct(ino, offset, data, first, last) {
                // Placed chunks and the stored ones they replace both take pages until their
                // commit: committing what is buffered and placed frees the replaced ones.
                Err(VfsError::NoSpace) => {
                    self.flush(Flush::All)?;
                    self.write_direct(ino, offset, data, first, last)?;
                }
                r => r?,
            }
        } else {
            match self.buffer_write(ino, offset, data, true) {
                // No room beside the reservations: committing what is buffered turns their
                // estimates into the (smaller) real use; then try once more.
                Err(VfsError::NoSpace) => {
                    self.flush(Flush::All)?;
                    self.buffer_write(ino, offset, data, true)?;
                }
                r => r?,
            }
        }
        Ok(data.len())
    }

    /// A write with enough whole chunks (`first..last`): they are written to the disk now,
    /// straight from `data`, and placed ([`DbFs::place_whole_chunks`]). The partial chunks at
    /// either end are buffered once the whole ones are on the disk, just before the file's
    /// write-back entry lists those, and the commit that inserts the whole chunks stores them
    /// too (the file's whole write-back entry commits as one), so a crash never keeps half of
    /// the write. If buffering an end fails (a full store), the write returns the error with
    /// what it buffered, as a failed write may leave part of its bytes in the file.
    fn write_direct(
        &self,
        ino: u64,
        offset: u64,
        data: &Src<'_>,
        first: u64,
        last: u64,
    ) -> VfsResult<()> {
        let cs = self.chunk_size;
        // Each whole chunk as the pieces of `data` it spans (with a user's pages, the pages
        // themselves: kvdb sends them to the disk without a copy).
        let head = (first * cs - offset) as usize;
        let body = ((last - first) * cs) as usize;
        let chunks: Vec<Vec<&[u8]>> = (0..last - first)
            .map(|i| data.pieces_in(head + (i * cs) as usize, cs as usize))
            .collect();
        // The ends are less than a chunk each, so they are buffered; not flushed here: the
        // commit that inserts the whole chunks takes them too.
        let ends = || {
            if head > 0 {
                self.buffer_write(ino, offset, &Src::new(&data.pieces_in(0, head)), false)?;
            }
            if head + body < data.len() {
                let rest = data.pieces_in(head + body, data.len() - head - body);
                self.buffer_write(ino, last * cs, &Src::new(&rest), false)?;
            }
            Ok(())
        };
        self.place_whole_chunks(ino, first, &chunks, ends)
    }

    /// Buffer `data` at `offset` in the write-back cache (the caller checked the range).
    /// `may_flush`: whether a cache this write fills to its limit is committed here (not for
    /// the partial chunks a direct write buffers: they commit with its whole chunks; that
    /// direct write holds the file's `direct_busy` entry, which it does not wait for).
    fn buffer_write(
        &self,
        ino: u64,
        offset: u64,
        data: &Src<'_>,
        may_flush: bool,
    ) -> VfsResult<()> {
        let end = offset + data.len() as u64;
        let now = self.clock.now();
        let cs = self.chunk_size;
        // Whole chunks not in the cache are copied into fresh buffers before taking `state`,
        // so writers to different files (and readers) do not wait for each other's copies.
        // A whole chunk already cached is overwritten in place under the lock (no allocation,
        // and the buffer is still warm), as are partial chunks, which merge with what is
        // buffered or stored. The whole chunks lie between the first and the last chunk
        // boundary inside the write, in order: the loop below takes them from the front.
        let first_whole = offset.div_ceil(cs);
        let whole_end = end / cs;
        let head = (first_whole * cs - offset) as usize;
        let cached: Vec<bool> = {
            let st = self.state.lock();
            let p = st.wb.pending.get(&ino);
            (first_whole..whole_end.max(first_whole))
                .map(|i| {
                    p.and_then(|p| p.chunks.get(&i))
                        .is_some_and(|b| b.len() == cs as usize)
                })
                .collect()
        };
        let mut whole: alloc::collections::VecDeque<Option<Vec<u8>>> = (first_whole
            ..whole_end.max(first_whole))
            .zip(&cached)
            .map(|(i, &cached)| {
                let at = head + ((i - first_whole) * cs) as usize;
                (!cached).then(|| data.to_vec(at, cs as usize))
            })
            .collect();
        let mut guard = self.state.lock();
        loop {
            if may_flush && guard.direct_busy_for(ino) {
                // A direct write to this file is under way (maybe asleep while the device
                // reads its bytes, without the writer lock): wait until its entry is gone.
                drop(guard);
                kvdb::sync::relax();
            } else if guard.committing.contains(&ino)
                && (!guard.wb.pending.contains_key(&ino) || guard.reshaping.contains(&ino))
            {
                // A transaction changing the file's record is committing, and the write has
                // no entry of its own to add to (or only the one that transaction folded and
                // changed: `State::reshaping`): wait for it (it holds the writer lock until
                // the new store is published and the cache updated), then look again. A
                // commit that only stores the buffered writes leaves the entry as it is, so
                // writes go on adding to it meanwhile.
                drop(guard);
                drop(self.db.begin_write().map_err(kv)?);
            } else if guard.wb.pending.get(&ino).is_some_and(|p| {
                p.placed
                    .range(offset / cs..end.div_ceil(cs))
                    .next()
                    .is_some()
            }) {
                // Chunks a direct write placed: their bytes are on the disk, not here. Their
                // commit makes them stored chunks, which this write then merges with.
                drop(guard);
                self.fold(ino)?;
            } else {
                break;
            }
            guard = self.state.lock();
        }
        let st = &mut *guard;
        // The reservation: the pages this write's commit will need must be free beside those
        // promised to what is buffered already, or the write fails now, buffering nothing
        // (see `reserve`).
        let (growth, pages_before) = self.reservation_growth(st.wb.pending.get(&ino), offset, end);
        if growth > 0 && st.wb.reserved + growth + reserve::COMMIT_PAGES > self.write_room_pages() {
            return Err(VfsError::NoSpace);
        }
        let ps = self.db.page_size() as u64;
        let p = self.pending_mut(st, ino)?;
        // The value pages of the chunks touched, once written (each chunk is visited once).
        let mut pages_after = 0u64;
        let mut reader: Option<Tx<'_, P>> = None;
        let mut added = 0usize;
        let mut pos = offset;
        let mut src = 0usize;
        while src < data.len() {
            let idx = pos / cs;
            let in_chunk = (pos % cs) as usize;
            let take = (cs as usize - in_chunk).min(data.len() - src);
            if in_chunk == 0 && take == cs as usize {
                match (
                    whole.pop_front().ok_or(VfsError::Io)?,
                    p.chunks.get_mut(&idx),
                ) {
                    (None, Some(buf)) if buf.len() == take => data.copy_to(src, buf),
                    (copy, _) => {
                        // Copied before the lock, or (rarely) no longer cached as a whole chunk
                        // since we looked: copied now.
                        let copy = copy.unwrap_or_else(|| data.to_vec(src, take));
                        added += copy
                            .len()
                            .saturating_sub(p.chunks.get(&idx).map_or(0, |b| b.len()));
                        p.chunks.insert(idx, copy);
                    }
                }
                // Every byte of the chunk is new now.
                p.partial.remove(&idx);
                pages_after += reserve::value_pages(take, ps);
                pos += take as u64;
                src += take;
                continue;
            }
            let (a, b) = (in_chunk as u64, (in_chunk + take) as u64);
            let stored = idx * cs < p.stored_size;
            // Pieces whose stored bytes this write makes irrelevant (see `Pending::partial`).
            let covered = covered_pieces(cs, p.stored_size, idx, a, b);
            let touched = touched_pieces(cs, a, b);
            let written = match p.chunks.entry(idx) {
                alloc::collections::btree_map::Entry::Occupied(o) => {
                    let buf = o.into_mut();
                    let old = buf.len();
                    if let Some(&loaded) = p.partial.get(&idx) {
                        if touched & !(loaded | covered) == 0 {
                            let now_loaded = loaded | covered;
                            if now_loaded == full_mask(cs) {
                                p.partial.remove(&idx);
                            } else {
                                p.partial.insert(idx, now_loaded);
                            }
                        } else {
                            // Part of a piece not loaded: its other bytes come from the store.
                            // The whole chunk is loaded (one read either way).
                            if reader.is_none() {
                                reader = Some(self.db.begin_read().map_err(kv)?);
                            }
                            let from = match &reader {
                                Some(tx) => load_chunk(tx, ino, idx, cs)?,
                                None => Vec::new(),
                            };
                            fill_pieces(cs, buf, loaded, &from);
                            p.partial.remove(&idx);
                        }
                    }
                    data.put_into(src, take, buf, in_chunk, cs as usize);
                    added += buf.len() - old;
                    buf.len()
                }
                alloc::collections::btree_map::Entry::Vacant(v)
                    if stored && touched & !covered == 0 =>
                {
                    // Whole pieces of a stored chunk: buffered without reading it; the pieces
                    // not written stay the store's (loaded at commit, or by a later write).
                    // Written from its start, most likely by a sequential overwriter that will
                    // fill it: its whole buffer at once, as for an appender below. Grown by
                    // doubling instead, a chunk rewritten 4 KiB at a time copied 60 KiB more
                    // for every 64 KiB.
                    let mut buf = if in_chunk == 0 {
                        Vec::with_capacity(cs as usize)
                    } else {
                        Vec::new()
                    };
                    data.put_into(src, take, &mut buf, in_chunk, cs as usize);
                    added += buf.len();
                    let len = buf.len();
                    v.insert(buf);
                    if covered != full_mask(cs) {
                        p.partial.insert(idx, covered);
                    }
                    len
                }
                alloc::collections::btree_map::Entry::Vacant(v) => {
                    // A partial chunk: merged with what the store holds.
                    let mut buf = if stored {
                        if reader.is_none() {
                            reader = Some(self.db.begin_read().map_err(kv)?);
                        }
                        match &reader {
                            Some(tx) => load_chunk(tx, ino, idx, cs)?,
                            None => Vec::new(),
                        }
                    } else if in_chunk == 0 && idx > 0 {
                        // A new chunk past the first, written from its start: an appender
                        // that will most likely fill it. Its whole buffer at once saves the
                        // growth's reallocations and copies (12 KiB copied for each 16 KiB
                        // appended in 4 KiB writes). A small file keeps a buffer its size.
                        Vec::with_capacity(cs as usize)
                    } else {
                        Vec::new()
                    };
                    data.put_into(src, take, &mut buf, in_chunk, cs as usize);
                    added += buf.len();
                    let len = buf.len();
                    v.insert(buf);
                    len
                }
            };
            pages_after += reserve::value_pages(p.commit_len(idx, written, cs), ps);
            pos += take as u64;
            src += take;
        }
        drop(reader);
        p.inode.size = p.inode.size.max(end);
        p.inode.mtime = now;
        p.inode.ctime = now;
        p.bytes += added;
        p.gen += 1;
        p.value_pages = (p.value_pages + pages_after).saturating_sub(pages_before);
        st.wb.dirty_bytes += added;
        let wb = &mut st.wb;
        if let Some(p) = wb.pending.get_mut(&ino) {
            WriteBack::update_reservation(&mut wb.reserved, p);
        }
        let over = st.wb.dirty_bytes >= st.wb.limit && may_flush;
        drop(guard);
        if over {
            match self.flush(Flush::Limit) {
                // This write is buffered (it is not undone): the next write retries the flush
                // and fails, as do fsync, sync and the last close.
                Ok(()) => {}
                Err(VfsError::NoSpace) => self.note_write_error(None, VfsError::NoSpace),
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Place `chunks` (each the pieces of one whole chunk, from chunk `first` on), in three
    /// steps: a short write transaction takes their pages and places them
    /// ([`kvdb::Tx::reserve_placed`]: in no tree, free on disk); their bytes go to the disk
    /// straight from the pieces without the writer lock ([`kvdb::Db::write_placed`]: no copy
    /// into the write-back cache or the store's page buffers, and other writers' transactions,
    /// commits and device writes go on meanwhile), then `ends` buffers the write's partial
    /// chunks; a second short transaction makes the write-back entry of `ino` list them
    /// ([`crate::state::Pending::placed`]) in place of any cached or placed chunks they
    /// replace, with the file's new size and times, and the next commit of the entry inserts
    /// them all at once (`Txn::finish`). So large writes cost the device write and no tree
    /// update of their own, and a crash before that commit loses them as it loses buffered
    /// data (their pages are free on disk until then). The write's
    /// [`crate::state::State::direct_busy`] entry, from the first step to the last, keeps other
    /// writers to the file waiting, so no later write is lost and none is overtaken.
    fn place_whole_chunks(
        &self,
        ino: u64,
        first: u64,
        chunks: &[Vec<&[u8]>],
        ends: impl FnOnce() -> VfsResult<()>,
    ) -> VfsResult<()> {
        let end = first + chunks.len() as u64;
        let me = loop {
            let mut st = self.state.lock();
            if !st.direct_busy_for(ino) {
                st.direct_seq += 1;
                let d = DirectWrite {
                    seq: st.direct_seq,
                    ino,
                    first,
                    end,
                };
                st.direct_busy.push(d);
                break d;
            }
            // Another direct write to the file (asleep while the device reads it, perhaps).
            drop(st);
            kvdb::sync::relax();
        };
        let r = self.place_claimed(me, chunks, ends);
        if r.is_err() {
            self.state.lock().direct_busy.retain(|d| *d != me);
        }
        r
    }

    /// [`DbFs::place_whole_chunks`] once its `direct_busy` entry `me` is in place. On success
    /// the entry is gone (with the last step); on failure the caller removes it.
    fn place_claimed(
        &self,
        me: DirectWrite,
        chunks: &[Vec<&[u8]>],
        ends: impl FnOnce() -> VfsResult<()>,
    ) -> VfsResult<()> {
        let (ino, first, end) = (me.ino, me.first, me.end);
        let cs = self.chunk_size;
        let count = end - first;
        let values: Vec<&[&[u8]]> = chunks.iter().map(|c| c.as_slice()).collect();
        // Whole chunks, each `cs` bytes.
        let lens = alloc::vec![cs as usize; chunks.len()];
        // 1. Pages for the chunks.
        let placed = {
            let tx = self.db.begin_write().map_err(kv)?;
            // Space promised to buffered data stays free for it; this entry's commit needs a
            // leaf page per CHUNKS_PER_LEAF chunks more.
            tx.keep_free(
                self.state.lock().wb.promised_pages()
                    + count.div_ceil(reserve::CHUNKS_PER_LEAF)
                    + reserve::INODE_PAGES,
            );
            let placed = tx.reserve_placed(&lens).map_err(kv)?;
            tx.commit_deferred().map_err(kv)?;
            placed
        };
        // 2. Their bytes, without the writer lock, then the partial chunks at the ends.
        if let Err(e) = self
            .db
            .write_placed(&placed, &values)
            .map_err(kv)
            .and_then(|()| ends())
        {
            // Never listed: free them again (a failure here only leaves them taken until the
            // store is opened again; they are free on disk).
            let _ = self.drop_placed_now(&placed);
            return Err(e);
        }
        // 3. The write-back entry lists them, in place of what they replace.
        let tx = self.db.begin_write().and_then(|tx| {
            let replaced: Vec<kvdb::Placed> = self
                .state
                .lock()
                .wb
                .pending
                .get(&ino)
                .map(|p| p.placed.range(first..end).map(|(_, &pl)| pl).collect())
                .unwrap_or_default();
            tx.drop_placed(&replaced).map(|()| tx)
        });
        let tx = match tx {
            Ok(tx) => tx,
            Err(e) => {
                let _ = self.drop_placed_now(&placed);
                return Err(kv(e));
            }
        };
        let now = self.clock.now();
        let page_size = self.db.page_size() as u64;
        let installed = tx.commit_deferred_then(|| {
            let mut guard = self.state.lock();
            let st = &mut *guard;
            st.direct_busy.retain(|d| *d != me);
            st.wb.drop_chunks(ino, first, end, page_size, cs);
            let p = self.pending_mut(st, ino)?;
            for (i, &pl) in placed.iter().enumerate() {
                p.placed.insert(first + i as u64, pl);
            }
            p.inode.size = p.inode.size.max(end * cs);
            p.inode.mtime = now;
            p.inode.ctime = now;
            p.gen += 1;
            let wb = &mut st.wb;
            wb.since.get_or_insert(now);
            if let Some(p) = wb.pending.get_mut(&ino) {
                WriteBack::update_reservation(&mut wb.reserved, p);
            }
            Ok::<(), VfsError>(())
        });
        match installed {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => {
                // Placed, but no entry lists them (the record could not be read): free them
                // again, so they do not stay taken until the store is reopened.
                self.drop_placed_now(&placed)?;
                Err(e)
            }
            Err(e) => {
                let _ = self.drop_placed_now(&placed);
                Err(kv(e))
            }
        }
    }

    /// Free placed values no write-back entry lists, in a transaction of their own.
    fn drop_placed_now(&self, placed: &[kvdb::Placed]) -> VfsResult<()> {
        let tx = self.db.begin_write().map_err(kv)?;
        tx.drop_placed(placed).map_err(kv)?;
        tx.commit_deferred().map_err(kv)
    }

    /// Commit `ino`'s write-back entry now (a deferred commit, like a metadata operation's
    /// fold): its buffered and placed chunks become stored ones.
    pub(crate) fn fold(&self, ino: u64) -> VfsResult<()> {
        self.write_op(|t| match t.inode(ino) {
            Ok(_) | Err(VfsError::NotFound) => Ok(()),
            Err(e) => Err(e),
        })
    }
}

/// The bytes of one write: the concatenation of `pieces` (one slice for `write_at`, the
/// user's pages for a gathered write).
pub(crate) struct Src<'a> {
    pieces: &'a [&'a [u8]],
    len: usize,
    /// Where the last copy began: (piece index, offset of that piece). Writes copy front to
    /// back, so the next copy starts looking there instead of at the first piece.
    hint: core::cell::Cell<(usize, usize)>,
}

impl<'a> Src<'a> {
    pub(crate) fn new(pieces: &'a [&'a [u8]]) -> Self {
        Src {
            pieces,
            len: pieces.iter().map(|p| p.len()).sum(),
            hint: core::cell::Cell::new((0, 0)),
        }
    }

    /// The pieces from the one holding byte `at` on, and `at` relative to that piece.
    fn seek(&self, at: usize) -> (&'a [&'a [u8]], usize) {
        let (mut i, mut start) = self.hint.get();
        if at < start {
            (i, start) = (0, 0);
        }
        while i < self.pieces.len() && at >= start + self.pieces[i].len() {
            start += self.pieces[i].len();
            i += 1;
        }
        self.hint.set((i, start));
        (&self.pieces[i..], at - start)
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The pieces holding the bytes `at..at + n`, cut to that range.
    fn pieces_in(&self, at: usize, n: usize) -> Vec<&'a [u8]> {
        let (pieces, mut at) = self.seek(at);
        // The kernel's pieces are the pages of a user buffer: one allocation, not a doubling
        // per chunk (a 1 MiB write cut its sixteen chunks' piece lists in 48 allocations).
        let mut out = Vec::with_capacity(n.div_ceil(4096) + 1);
        let mut left = n;
        for piece in pieces {
            if left == 0 {
                break;
            }
            let k = (piece.len() - at).min(left);
            out.push(&piece[at..at + k]);
            left -= k;
            at = 0;
        }
        out
    }

    /// Put the `n` bytes at `at` into `buf` at `to`, growing it (zeros between its end and
    /// `to`; its capacity doubles, but not past `limit`, the chunk size). Bytes that extend
    /// `buf` are appended, not zero-filled and then overwritten: a file written 4 KiB at a
    /// time paid that fill for every byte, half again of its copy.
    fn put_into(&self, at: usize, n: usize, buf: &mut Vec<u8>, to: usize, limit: usize) {
        let end = to + n;
        if end <= buf.len() {
            self.copy_to(at, &mut buf[to..end]);
            return;
        }
        let inside = buf.len().saturating_sub(to);
        if inside > 0 {
            self.copy_to(at, &mut buf[to..]);
        } else {
            buf.resize(to, 0);
        }
        if buf.capacity() < end {
            let want = (buf.capacity() * 2).min(limit).max(end);
            buf.reserve_exact(want - buf.len());
        }
        for piece in self.pieces_in(at + inside, n - inside) {
            buf.extend_from_slice(piece);
        }
    }

    /// Copy the bytes at `at..at + dst.len()` into `dst` (the caller keeps the range inside).
    fn copy_to(&self, at: usize, dst: &mut [u8]) {
        let mut done = 0;
        for piece in self.pieces_in(at, dst.len()) {
            dst[done..done + piece.len()].copy_from_slice(piece);
            done += piece.len();
        }
    }

    /// The bytes at `at..at + n`, copied (no zero fill first).
    fn to_vec(&self, at: usize, n: usize) -> Vec<u8> {
        self.pieces_in(at, n).concat()
    }
}
