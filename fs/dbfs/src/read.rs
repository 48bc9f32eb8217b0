//! The read path of regular files. Four ways to serve a read, cheapest first:
//! - a small read of a remembered chunk location copies under `state` and kvdb's snapshot
//!   lock, with no read transaction ([`DbFs::read_remembered`]);
//! - a file with buffered or placed chunks reads the store, then overlays the cache and the
//!   placed chunks (a run of them adjacent on the disk in one read), under `state`;
//! - otherwise one read snapshot and one cursor walk, copied without `state`
//!   ([`read_chunks`]);
//! - reads of at least [`DIRECT_READ_MIN`] bytes move whole stored chunks with
//!   [`kvdb::Pager::read_into`] (the kernel window: disk to the caller's buffer; dbfs-fuse's
//!   image file: one `pread` per run of adjacent chunks), also into the pieces of a
//!   scattered read ([`Pieces`]). Their cursor only locates the chunks
//!   ([`kvdb::Cursor::locate_overflow_values`]): it does not read them first.
//!
//! Lock rules: `state` is taken to look at the cache and begin the snapshot (O(1)); the
//! store is copied without it except in the first two cases. A read never waits for the
//! writer lock. A due `relatime` update is buffered in the write-back cache, never committed
//! here.

use alloc::vec::Vec;

use kvdb::{Pager, Tx};
use vfs::{Timestamp, VfsError, VfsResult};

use crate::atime::relatime_due;
use crate::error::kv;
use crate::format::Inode;
use crate::format::{self, bucket, ino_key, pair_key};
use crate::mounted::DbFs;
use crate::snapshot_cache::{chunk_run, CHUNK_RUN};
#[cfg(doc)]
use crate::snapshot_cache::{ChunkLocs, SnapshotInodes};
use crate::state::{piece_size, Pending, ReadMemo, State};
use crate::tuning::{DIRECT_READ_MIN, SMALL_READ_MAX};

impl<P: Pager> DbFs<P> {
    /// `noatime`: reads stop updating atime (for read-only media, where buffered atime updates
    /// could never be committed). Default: Linux `relatime`.
    pub fn set_noatime(&self, noatime: bool) {
        self.state.lock().noatime = noatime;
    }

    /// `read_at` of a regular file: one read transaction, one cursor walk over the chunks,
    /// bytes copied once from the store's page into `buf`; buffered chunks overlay it.
    pub(crate) fn read_file(&self, ino: u64, offset: u64, buf: &mut [u8]) -> VfsResult<usize> {
        let mut st = self.state.lock();
        // Not while a direct write to the file commits (its entry would be built on the
        // record that write replaces).
        let atime = !st.noatime && !buf.is_empty() && !st.in_flight(ino);
        let mut walk = false;
        if let Some(r) = self.read_remembered(&mut st, ino, offset, buf, atime, &mut walk) {
            let (n, due) = r?;
            // As below: an inode read from the store gets its relatime update buffered. (A
            // buffered record is not looked at by reads.)
            if let Some(now) = due {
                let p = self.pending_mut(&mut st, ino)?;
                if relatime_due(&p.inode, now) {
                    p.inode.atime = now;
                    p.gen += 1;
                }
            }
            return Ok(n);
        }
        self.read_stored(st, ino, offset, buf, atime, walk)
    }

    /// [`DbFs::read_file`] into the pieces of `bufs` (a scattered read: the kernel passes the
    /// user's pages, and the bytes go there straight from the store's pages or the disk,
    /// without a bounce buffer). Used for reads of at least [`DIRECT_READ_MIN`] bytes; `None`
    /// for smaller ones (their fast path wants one slice: the caller joins the pieces).
    pub(crate) fn read_scattered(
        &self,
        ino: u64,
        offset: u64,
        bufs: &mut [&mut [u8]],
    ) -> Option<VfsResult<usize>> {
        let mut out = Pieces::new(bufs);
        if out.len() < DIRECT_READ_MIN {
            return None;
        }
        let st = self.state.lock();
        let atime = !st.noatime && !st.in_flight(ino);
        Some(self.read_stored(st, ino, offset, &mut out, atime, false))
    }

    /// The part of [`DbFs::read_file`] after its small-read fast path (out of line, so the
    /// fast path saves few registers).
    #[inline(never)]
    fn read_stored<O: Out + ?Sized>(
        &self,
        mut st: kvdb::sync::MutexGuard<'_, State>,
        ino: u64,
        offset: u64,
        buf: &mut O,
        atime: bool,
        walk: bool,
    ) -> VfsResult<usize> {
        let now = self.clock.now();
        // A cache entry without chunks (only a buffered atime) leaves the store authoritative
        // for the data: read it like an uncached file, without holding `state`.
        if let Some(p) = st
            .wb
            .pending
            .get(&ino)
            .filter(|p| p.chunks.is_empty() && p.placed.is_empty())
        {
            let size = p.inode.size;
            let tx = self.db.begin_read().map_err(kv)?;
            drop(st);
            let n = clamp_len(size, offset, buf.len());
            if n > 0 {
                read_chunks(&tx, ino, self.chunk_size, offset, buf, n)?;
                self.remember_chunks(&tx, ino, None, offset, n, walk);
            }
            return Ok(n);
        }
        if let Some(p) = st.wb.pending.get(&ino) {
            let n = clamp_len(p.inode.size, offset, buf.len());
            let out = buf;
            if n > 0 {
                // The store's bytes (zeros past them) where no placed chunk goes: the overlay
                // of those below writes every byte of their range.
                let cs = self.chunk_size;
                let tx = if offset < p.stored_size {
                    Some(self.db.begin_read().map_err(kv)?)
                } else {
                    None
                };
                unplaced(p, cs, offset, n, |at, len| match &tx {
                    Some(tx) => {
                        let mut part = Shifted {
                            out: &mut *out,
                            base: at,
                            len,
                        };
                        read_chunks(tx, ino, cs, offset + at as u64, &mut part, len)
                    }
                    None => {
                        out.zero(at, len);
                        Ok(())
                    }
                })?;
                overlay(p, cs, offset, out, n);
                let ps = self.db.page_size() as u64;
                overlay_placed(self.db.pager(), ps, p, cs, offset, out, n)?;
            }
            if atime && relatime_due(&p.inode, now) {
                if let Some(p) = st.wb.pending.get_mut(&ino) {
                    p.inode.atime = now;
                    p.gen += 1;
                }
            }
            return Ok(n);
        }
        let tx = self.db.begin_read().map_err(kv)?;
        let cached = st.icache.get(tx.id(), ino).copied();
        drop(st);
        let inode = match cached {
            Some(i) => i,
            None => {
                let i = read_inode(&tx, ino)?;
                self.state.lock().icache.put(tx.id(), ino, i);
                i
            }
        };
        let n = clamp_len(inode.size, offset, buf.len());
        if n > 0 {
            read_chunks(&tx, ino, self.chunk_size, offset, buf, n)?;
            self.remember_chunks(&tx, ino, Some(&inode), offset, n, walk);
        }
        drop(tx);
        if atime && relatime_due(&inode, now) {
            let mut st = self.state.lock();
            if st.in_flight(ino) {
                return Ok(n);
            }
            let p = self.pending_mut(&mut st, ino)?;
            if relatime_due(&p.inode, now) {
                p.inode.atime = now;
                p.gen += 1;
            }
        }
        Ok(n)
    }

    /// Whether a read of `n` bytes at `offset` may use [`ChunkLocs`]: inside one chunk, and
    /// small (the copy runs under the store's snapshot lock).
    fn small_read(&self, offset: u64, n: usize) -> bool {
        n > 0
            && n <= SMALL_READ_MAX
            && offset / self.chunk_size == (offset + n as u64 - 1) / self.chunk_size
    }

    /// The fast path of a small read of a file whose data is all in the store (no buffered
    /// chunks): if the newest commit's location of the chunk is remembered ([`ChunkLocs`], with
    /// the stored record's size; a buffered record's size wins), copy from the store under
    /// [`kvdb::Db::with_committed`]. `st` is held throughout, so the snapshot is the one the
    /// write-back cache describes, as for [`DbFs::begin_read`] under `state`. `None`: take the
    /// slow path, and `walk` says whether it should remember a run of chunk locations (the
    /// reader looks sequential: [`ChunkLocs::missed`]). `Some(Ok((n, stored)))`: `n` bytes
    /// read; `due` is the time to store as the atime when `atime` (the read may update it) and
    /// the record comes from the store (no buffered one) and its relatime update is due (the
    /// clock's seconds against the run's [`crate::snapshot_cache::atime_due_at`]; the full
    /// time is read only then).
    fn read_remembered(
        &self,
        st: &mut State,
        ino: u64,
        offset: u64,
        buf: &mut [u8],
        atime: bool,
        walk: &mut bool,
    ) -> Option<VfsResult<(usize, Option<Timestamp>)>> {
        let memo = st.read_memo;
        let buffered = if memo.ino == ino && memo.changes == st.wb.pending.changes() {
            memo.buffered
        } else {
            let buffered = match st.wb.pending.get(&ino) {
                Some(p) if !p.chunks.is_empty() || !p.placed.is_empty() => return None,
                Some(p) => Some(p.inode.size),
                None => None,
            };
            st.read_memo = ReadMemo {
                ino,
                changes: st.wb.pending.changes(),
                buffered,
            };
            buffered
        };
        if buf.is_empty() || buf.len() > SMALL_READ_MAX {
            return None;
        }
        let cs = self.chunk_size;
        let idx = offset / cs;
        // Random readers mostly end here, without taking the snapshot lock.
        let Some(run) = st.chunk_locs.covering(ino, idx) else {
            *walk = st.chunk_locs.missed(ino, idx);
            return None;
        };
        self.db.with_committed(|txid| {
            let Some(chunk) = st.chunk_locs.at(run, txid, idx) else {
                *walk = st.chunk_locs.missed(ino, idx);
                return None;
            };
            let (size, due) = match buffered {
                Some(size) => (size, None),
                // The clock's seconds first (cheap); the full time only to stamp. `read_file`
                // decides again on the record it updates.
                None if atime && self.clock.now_sec() >= chunk.atime_due_at => {
                    let now = self.clock.now();
                    (chunk.size, (now.sec >= chunk.atime_due_at).then_some(now))
                }
                None => (chunk.size, None),
            };
            let n = clamp_len(size, offset, buf.len());
            if n == 0 {
                return Some(Ok((0, due)));
            }
            // `small_read` without its divisions: `idx` is the first byte's chunk.
            if n > SMALL_READ_MAX || (offset + n as u64 - 1) / cs != idx {
                return None;
            }
            let (at, len) = chunk.loc;
            let in_chunk = offset - idx * cs;
            let have = u64::from(len).saturating_sub(in_chunk).min(n as u64) as usize;
            if have > 0 {
                let pager = self.db.pager();
                let Some(start) = at.checked_add(in_chunk) else {
                    return Some(Err(VfsError::Corrupted));
                };
                if pager.byte_reads() {
                    match pager.read(start, have) {
                        Ok(bytes) => buf[..have].copy_from_slice(&bytes),
                        Err(e) => return Some(Err(kv(e))),
                    }
                } else {
                    // Whole pages, as kvdb reads them.
                    let ps = self.db.page_size() as u64;
                    if start.checked_add(ps + have as u64).is_none() {
                        return Some(Err(VfsError::Corrupted));
                    }
                    let from = start - start % ps;
                    let to = (start + have as u64).div_ceil(ps) * ps;
                    let pages = match pager.read(from, (to - from) as usize) {
                        Ok(p) => p,
                        Err(e) => return Some(Err(kv(e))),
                    };
                    let skip = (start - from) as usize;
                    buf[..have].copy_from_slice(&pages[skip..skip + have]);
                }
            }
            if have < n {
                buf[have..n].fill(0);
            }
            Some(Ok((n, due)))
        })
    }

    /// After a small read through `tx` missed [`ChunkLocs`] and the reader looks sequential
    /// (`walk`, from [`DbFs::read_remembered`]): remember where the chunks from this one on lie
    /// in `tx`'s snapshot (one cursor walk of up to [`CHUNK_RUN`] consecutive stored chunks),
    /// with `ino`'s record there (`stored`, or looked up), so the next reads take the fast
    /// path.
    fn remember_chunks(
        &self,
        tx: &Tx<'_, P>,
        ino: u64,
        stored: Option<&Inode>,
        offset: u64,
        n: usize,
        walk: bool,
    ) {
        if !walk || !self.small_read(offset, n) {
            return;
        }
        let cs = self.chunk_size;
        let idx = offset / cs;
        let mut locs: Vec<(u64, u32)> = Vec::with_capacity(CHUNK_RUN);
        // A failed walk or lookup only means the next reads take the slow path (which
        // reports errors).
        if chunk_run(tx, ino, idx, cs, &mut locs).is_err() || locs.is_empty() {
            return;
        }
        let inode = match stored {
            Some(i) => *i,
            None => match read_inode(tx, ino) {
                Ok(i) => i,
                Err(_) => return,
            },
        };
        self.state
            .lock()
            .chunk_locs
            .put(tx.id(), ino, &inode, idx, &locs);
    }
}

/// Bytes a read of `len` at `offset` returns from a file of `size`.
pub(crate) fn clamp_len(size: u64, offset: u64, len: usize) -> usize {
    if offset >= size {
        0
    } else {
        (size - offset).min(len as u64) as usize
    }
}

pub(crate) fn read_inode<P: Pager>(tx: &Tx<'_, P>, ino: u64) -> VfsResult<Inode> {
    match tx
        .get_bucket(bucket::INODES)
        .map_err(kv)?
        .get(&ino_key(ino))
        .map_err(kv)?
    {
        Some(raw) => Inode::decode(&raw),
        None => Err(VfsError::NotFound),
    }
}

pub(crate) fn load_chunk<P: Pager>(
    tx: &Tx<'_, P>,
    ino: u64,
    idx: u64,
    cs: u64,
) -> VfsResult<Vec<u8>> {
    let key = pair_key(ino, idx);
    let data = tx.get_bucket(bucket::DATA).map_err(kv)?;
    let mut cursor = data.cursor();
    let Some(e) = cursor
        .seek(&key)
        .map_err(kv)?
        .filter(|e| e.key() == key.as_slice())
    else {
        return Ok(Vec::new());
    };
    let value = e.value().ok_or(VfsError::Corrupted)?;
    if value.len() as u64 > cs {
        return Err(VfsError::Corrupted);
    }
    match e.overflow_location() {
        // A pager with direct reads (the kernel window) reads the chunk from the disk straight
        // into the new buffer: no page faults, no frames for pages about to be replaced.
        Some((at, len))
            if tx.pager().direct_reads() && at % 512 == 0 && len == value.len() as u64 =>
        {
            let mut buf = alloc::vec![0u8; len.next_multiple_of(512) as usize];
            tx.pager().read_into(at, &mut buf).map_err(kv)?;
            buf.truncate(len as usize);
            Ok(buf)
        }
        _ => Ok(value.to_vec()),
    }
}

/// Fill `out` with the stored bytes of `ino` at `offset`: one cursor seek, then `next` per
/// chunk; holes and bytes past a chunk's stored length are zeros.
fn read_chunks<P: Pager, O: Out + ?Sized>(
    tx: &Tx<'_, P>,
    ino: u64,
    cs: u64,
    offset: u64,
    out: &mut O,
    len: usize,
) -> VfsResult<()> {
    let data = tx.get_bucket(bucket::DATA).map_err(kv)?;
    let end = offset + len as u64;
    if len == 0 {
        return Ok(());
    }
    let direct = len >= DIRECT_READ_MIN && tx.pager().direct_reads();
    if offset / cs == (end - 1) / cs && !direct {
        // Inside one chunk (the small-read case): one point lookup, cheaper than a cursor.
        let idx = offset / cs;
        let in_chunk = (offset - idx * cs) as usize;
        let have = match data.get(&pair_key(ino, idx)).map_err(kv)? {
            Some(v) if v.len() as u64 > cs => return Err(VfsError::Corrupted),
            Some(v) => {
                let have = v.len().saturating_sub(in_chunk).min(len);
                // A chunk may store fewer bytes than `in_chunk` (grown by truncate): zeros.
                if have > 0 {
                    out.put(0, &v[in_chunk..in_chunk + have]);
                }
                have
            }
            None => 0,
        };
        out.zero(have, len - have);
        return Ok(());
    }
    let mut cursor = data.cursor();
    // A direct read moves stored chunks with `read_into`: the cursor need not read them too.
    cursor.locate_overflow_values(direct);
    // Direct reads: (store offset, position in `out`, length), merged where both are adjacent.
    let mut runs: Vec<(u64, usize, usize)> = Vec::new();
    let mut pos = offset;
    let mut entry = cursor.seek(&pair_key(ino, offset / cs)).map_err(kv)?;
    while pos < end {
        let Some(e) = entry else { break };
        let key = e.key();
        if key.len() != 16 || format::be_u64(key) != Some(ino) {
            break;
        }
        let idx = format::be_u64(&key[8..]).ok_or(VfsError::Corrupted)?;
        let start = idx.checked_mul(cs).ok_or(VfsError::Corrupted)?;
        if start >= end {
            break;
        }
        let value_len = e.value_len().ok_or(VfsError::Corrupted)?;
        if value_len > cs || start.saturating_add(cs) <= pos {
            return Err(VfsError::Corrupted);
        }
        if start > pos {
            let gap = (start - pos) as usize;
            let at = (pos - offset) as usize;
            out.zero(at, gap);
            pos = start;
        }
        let in_chunk = (pos - start) as usize;
        let take = (start.saturating_add(cs).min(end) - pos) as usize;
        let at = (pos - offset) as usize;
        let have = (value_len as usize).saturating_sub(in_chunk).min(take);
        if have > 0 {
            let src = e.overflow_location().map(|(o, _)| o + in_chunk as u64);
            match (src, e.value()) {
                (Some(src), _) if direct && src % 512 == 0 && have.is_multiple_of(512) => {
                    match runs.last_mut() {
                        Some((s, a, n)) if *s + *n as u64 == src && *a + *n == at => *n += have,
                        _ => runs.push((src, at, have)),
                    }
                }
                (_, Some(value)) => out.put(at, &value[in_chunk..in_chunk + have]),
                // A located value whose piece is not aligned for `read_into`: read the value
                // as the cursor would have.
                (Some(_), None) => {
                    let (vat, vlen) = e.overflow_location().ok_or(VfsError::Corrupted)?;
                    let value = tx.pager().read(vat, vlen as usize).map_err(kv)?;
                    out.put(at, &value[in_chunk..in_chunk + have]);
                }
                (None, None) => return Err(VfsError::Corrupted),
            }
        }
        out.zero(at + have, take - have);
        pos += take as u64;
        if pos >= end {
            break;
        }
        entry = cursor.next().map_err(kv)?;
    }
    let at = (pos - offset) as usize;
    out.zero(at, len - at);
    for (src, at, n) in runs {
        out.read_from(tx.pager(), src, at, n).map_err(kv)?;
    }
    Ok(())
}

/// Copy buffered chunks over `out` (the bytes at `offset`, read from the store): of a partly
/// loaded chunk only its loaded pieces (the others are the store's).
fn overlay<O: Out + ?Sized>(p: &Pending, cs: u64, offset: u64, out: &mut O, len: usize) {
    let end = offset + len as u64;
    for (&idx, buf) in p.chunks.range(offset / cs..end.div_ceil(cs)) {
        let start = idx * cs;
        let (from, to) = (start.max(offset), (start + cs).min(end));
        match p.partial.get(&idx) {
            None => overlay_range(buf, start, from, to, offset, out),
            Some(&loaded) => {
                let ps = piece_size(cs);
                for i in (from - start) / ps..(to - start).div_ceil(ps) {
                    if loaded & (1 << i) != 0 {
                        let s = (start + i * ps).max(from);
                        let e = (start + (i + 1) * ps).min(to);
                        overlay_range(buf, start, s, e, offset, out);
                    }
                }
            }
        }
    }
}

/// Call `f(at, n)` for each range of the `len` bytes at `offset` that no placed chunk of
/// `p` covers (`at` counts from `offset`), in order.
fn unplaced(
    p: &Pending,
    cs: u64,
    offset: u64,
    len: usize,
    mut f: impl FnMut(usize, usize) -> VfsResult<()>,
) -> VfsResult<()> {
    let end = offset + len as u64;
    let mut at = offset;
    for &idx in p
        .placed
        .range(offset / cs..end.div_ceil(cs))
        .map(|(i, _)| i)
    {
        let start = (idx * cs).max(offset);
        if start > at {
            f((at - offset) as usize, (start - at) as usize)?;
        }
        at = ((idx + 1) * cs).min(end);
    }
    if end > at {
        f((at - offset) as usize, (end - at) as usize)?;
    }
    Ok(())
}

/// Read placed chunks ([`Pending::placed`]: their bytes are on the disk, in no tree) over
/// `out` (the bytes at `offset`). The caller holds `state`, so they stay placed (their pages
/// are not freed and reused) while they are read. Chunks that follow each other in the file
/// and on the disk (a large write places them so) are read together: one [`Out::read_from`]
/// per run, not one device request per chunk.
fn overlay_placed<P: Pager, O: Out + ?Sized>(
    pager: &P,
    ps: u64,
    p: &Pending,
    cs: u64,
    offset: u64,
    out: &mut O,
    len: usize,
) -> VfsResult<()> {
    let end = offset + len as u64;
    // The run being gathered: its store address, its first byte in `out`, its length.
    let mut run: Option<(u64, usize, usize)> = None;
    for (&idx, pl) in p.placed.range(offset / cs..end.div_ceil(cs)) {
        let start = idx * cs;
        let (from, to) = (start.max(offset), (start + cs).min(end));
        let a = (from - offset) as usize;
        let in_chunk = from - start;
        let have = pl.len.saturating_sub(in_chunk).min(to - from) as usize;
        let src = pl.page * ps + in_chunk;
        if have > 0 {
            match &mut run {
                Some((s, at, n)) if *at + *n == a && *s + *n as u64 == src => *n += have,
                _ => {
                    if let Some((s, at, n)) = run.replace((src, a, have)) {
                        out.read_from(pager, s, at, n).map_err(kv)?;
                    }
                }
            }
        }
        // Zeros past the chunk's bytes (a run never extends over them: the next chunk's
        // bytes are not next to these in `out`).
        out.zero(a + have, (to - from) as usize - have);
    }
    if let Some((s, at, n)) = run {
        out.read_from(pager, s, at, n).map_err(kv)?;
    }
    Ok(())
}

/// Copy `[from, to)` of the chunk starting at `start` (buffered as `buf`: zeros past its
/// end) into `out`, whose first byte is the file's byte `offset`.
fn overlay_range<O: Out + ?Sized>(
    buf: &[u8],
    start: u64,
    from: u64,
    to: u64,
    offset: u64,
    out: &mut O,
) {
    let a = (from - offset) as usize;
    let b = (to - offset) as usize;
    let in_chunk = (from - start) as usize;
    let have = buf.len().saturating_sub(in_chunk).min(b - a);
    if have > 0 {
        out.put(a, &buf[in_chunk..in_chunk + have]);
    }
    out.zero(a + have, b - a - have);
}

/// Where a read's bytes go: one slice, or the pieces of a scattered read ([`Pieces`]).
/// Positions are offsets into the concatenation; callers keep them inside [`Out::len`].
pub(crate) trait Out {
    fn len(&self) -> usize;
    /// Copy `src` to `at..at + src.len()`.
    fn put(&mut self, at: usize, src: &[u8]);
    /// Zero `at..at + n`.
    fn zero(&mut self, at: usize, n: usize);
    /// Read `n` bytes of the store at `src` into `at..at + n` ([`Pager::read_into`]).
    fn read_from<P: Pager>(&mut self, pager: &P, src: u64, at: usize, n: usize)
        -> kvdb::Result<()>;
}

impl Out for [u8] {
    fn len(&self) -> usize {
        <[u8]>::len(self)
    }
    fn put(&mut self, at: usize, src: &[u8]) {
        self[at..at + src.len()].copy_from_slice(src);
    }
    fn zero(&mut self, at: usize, n: usize) {
        self[at..at + n].fill(0);
    }
    fn read_from<P: Pager>(
        &mut self,
        pager: &P,
        src: u64,
        at: usize,
        n: usize,
    ) -> kvdb::Result<()> {
        pager.read_into(src, &mut self[at..at + n])
    }
}

/// `len` bytes of another [`Out`] from its byte `base` on, as an [`Out`] of their own.
struct Shifted<'o, O: Out + ?Sized> {
    out: &'o mut O,
    base: usize,
    len: usize,
}

impl<O: Out + ?Sized> Out for Shifted<'_, O> {
    fn len(&self) -> usize {
        self.len
    }
    fn put(&mut self, at: usize, src: &[u8]) {
        self.out.put(self.base + at, src);
    }
    fn zero(&mut self, at: usize, n: usize) {
        self.out.zero(self.base + at, n);
    }
    fn read_from<P: Pager>(
        &mut self,
        pager: &P,
        src: u64,
        at: usize,
        n: usize,
    ) -> kvdb::Result<()> {
        self.out.read_from(pager, src, self.base + at, n)
    }
}

/// The pieces of a scattered read as one [`Out`].
pub(crate) struct Pieces<'a, 'b> {
    pieces: &'a mut [&'b mut [u8]],
    len: usize,
}

impl<'a, 'b> Pieces<'a, 'b> {
    pub(crate) fn new(pieces: &'a mut [&'b mut [u8]]) -> Self {
        let len = pieces.iter().map(|p| p.len()).sum();
        Pieces { pieces, len }
    }

    /// The parts of the pieces that hold `at..at + n`, in order.
    fn parts(&mut self, at: usize, n: usize) -> Vec<&mut [u8]> {
        let mut parts: Vec<&mut [u8]> = Vec::new();
        let (mut skip, mut have) = (at, 0);
        for piece in self.pieces.iter_mut() {
            if have == n {
                break;
            }
            if skip >= piece.len() {
                skip -= piece.len();
                continue;
            }
            let k = (piece.len() - skip).min(n - have);
            parts.push(&mut piece[skip..skip + k]);
            have += k;
            skip = 0;
        }
        parts
    }
}

impl Out for Pieces<'_, '_> {
    fn len(&self) -> usize {
        self.len
    }
    fn put(&mut self, at: usize, src: &[u8]) {
        let mut off = 0;
        for part in self.parts(at, src.len()) {
            part.copy_from_slice(&src[off..off + part.len()]);
            off += part.len();
        }
    }
    fn zero(&mut self, at: usize, n: usize) {
        for part in self.parts(at, n) {
            part.fill(0);
        }
    }
    fn read_from<P: Pager>(
        &mut self,
        pager: &P,
        src: u64,
        at: usize,
        n: usize,
    ) -> kvdb::Result<()> {
        // All parts in one `read_into_pieces`: the pager picks the way (the kernel's window:
        // one scattered device read into the user's pages when each part is whole sectors,
        // one device read through a bounce buffer when the user's buffer does not start on a
        // page, as a malloc'ed one does; a copy from the window only for dirty pages).
        let mut parts = self.parts(at, n);
        pager.read_into_pieces(src, &mut parts)
    }
}
