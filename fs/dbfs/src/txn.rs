//! One dbfs operation inside one kvdb write transaction.
//!
//! A [`Txn`] wraps the write transaction with dbfs's view of it: inode records are loaded once
//! and written back once (at [`Txn::finish`]), the superblock counters are updated in place, and
//! loading an inode that has buffered writes in the write-back cache *folds* them into this
//! transaction first (its dirty chunks are written and its cached attributes become the
//! record), so a metadata operation and the data it depends on commit together. The caller
//! (`DbFs::run_txn`) drops the folded cache entries only after the commit succeeded.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use kvdb::{Bucket, Pager, Tx};
use vfs::{FileType, Timestamp, VfsError, VfsResult};

use crate::error::kv;
use crate::format::{
    be_u64, bucket, corrupt, footprint, ino_key, name_key, pair_key, CookieEntry, Inode, NameEntry,
    Superblock, ROOT_INO, SUPERBLOCK_KEY,
};
use crate::state::State;

pub(crate) struct Txn<'a, 'db, P: Pager> {
    pub tx: &'a Tx<'db, P>,
    pub chunk_size: u64,
    pub st: &'a State,
    pub now: Timestamp,
    /// Inodes read or written by this operation: (record, needs writing).
    cache: BTreeMap<u64, (Inode, bool)>,
    /// Inodes whose write-back entry this transaction consumed (folded or freed).
    pub folded: Vec<u64>,
    /// Inodes whose record the operation itself set ([`Txn::set_inode`]: a chmod, a
    /// truncate, a punched hole, ...), beyond folding their buffered writes.
    modified: Vec<u64>,
    /// Ranges `(ino, start, end)` this transaction punched: `finish` zeroes them in the folded
    /// buffered chunks too, which it writes after the operation's own changes.
    punched: Vec<(u64, u64, u64)>,
    sb: Option<(Superblock, bool)>,
}

impl<'a, 'db, P: Pager> Txn<'a, 'db, P> {
    pub fn new(tx: &'a Tx<'db, P>, chunk_size: u64, st: &'a State, now: Timestamp) -> Self {
        Txn {
            tx,
            chunk_size,
            st,
            now,
            cache: BTreeMap::new(),
            folded: Vec::new(),
            modified: Vec::new(),
            punched: Vec::new(),
            sb: None,
        }
    }

    pub fn bucket(&self, name: &[u8]) -> VfsResult<Bucket<'a, 'db, P>> {
        self.tx.get_bucket(name).map_err(kv)
    }

    /// The inode record, with any buffered writes folded into this transaction.
    pub fn inode(&mut self, ino: u64) -> VfsResult<Inode> {
        if let Some((i, _)) = self.cache.get(&ino) {
            return Ok(*i);
        }
        let stored = match self
            .bucket(bucket::INODES)?
            .get(&ino_key(ino))
            .map_err(kv)?
        {
            Some(raw) => Inode::decode(&raw)?,
            None => return Err(VfsError::NotFound),
        };
        let mut inode = stored;
        let mut dirty = false;
        if let Some(p) = self.st.wb.pending.get(&ino) {
            // Buffered writes become part of this transaction; their chunks are written by
            // `finish`, cut to the size the operation leaves (so a truncate or unlink of a file
            // with buffered data never has to store it first).
            inode = p.inode;
            inode.alloc_bytes = stored.alloc_bytes;
            self.folded.push(ino);
            dirty = true;
        }
        self.cache.insert(ino, (inode, dirty));
        Ok(inode)
    }

    /// The size this transaction leaves `ino` with, if it loaded the inode.
    /// Inodes whose stored record this transaction changes (written, folded or freed).
    pub fn changed_inodes(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self
            .cache
            .iter()
            .filter(|(_, (_, dirty))| *dirty)
            .map(|(&ino, _)| ino)
            .collect();
        v.extend_from_slice(&self.folded);
        v
    }

    pub fn cached_size(&self, ino: u64) -> Option<u64> {
        self.cache.get(&ino).map(|(i, _)| i.size)
    }

    pub fn set_inode(&mut self, ino: u64, inode: Inode) {
        self.cache.insert(ino, (inode, true));
        self.modified.push(ino);
    }

    /// Inodes whose write-back entry this transaction folds and whose record (or data: a
    /// punched hole) the operation changes as well. The entry keeps what it had before the
    /// operation until the commit is published, so a write meanwhile must not build on it
    /// (see `State::reshaping`).
    pub fn reshaped(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self
            .modified
            .iter()
            .copied()
            .filter(|i| self.folded.contains(i))
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// A directory's record, refusing other types with `NotADirectory` and removed directories
    /// with `NotFound` (Linux: creating in a deleted directory is ENOENT).
    pub fn live_dir(&mut self, ino: u64) -> VfsResult<Inode> {
        let d = self.inode(ino)?;
        if d.ftype != FileType::Directory {
            return Err(VfsError::NotADirectory);
        }
        if d.nlink == 0 {
            return Err(VfsError::NotFound);
        }
        Ok(d)
    }

    pub fn superblock(&mut self) -> VfsResult<Superblock> {
        if let Some((sb, _)) = &self.sb {
            return Ok(sb.clone());
        }
        let raw = self.bucket(bucket::META)?.get(SUPERBLOCK_KEY).map_err(kv)?;
        let sb = raw
            .and_then(|r| Superblock::decode(&r))
            .ok_or(VfsError::Corrupted)?;
        self.sb = Some((sb.clone(), false));
        Ok(sb)
    }

    fn set_superblock(&mut self, sb: Superblock) {
        self.sb = Some((sb, true));
    }

    /// A fresh inode number (never handed out before, even across crashes: the counter commits
    /// with the inode).
    pub fn alloc_ino(&mut self) -> VfsResult<u64> {
        let mut sb = self.superblock()?;
        let ino = sb.next_ino;
        sb.next_ino = ino.checked_add(1).ok_or(VfsError::NoSpace)?;
        sb.inode_count = sb.inode_count.saturating_add(1);
        self.set_superblock(sb);
        Ok(ino)
    }

    pub fn lookup_name(&self, dir: u64, name: &str) -> VfsResult<Option<NameEntry>> {
        match self
            .bucket(bucket::NAMES)?
            .get(&name_key(dir, name.as_bytes()))
            .map_err(kv)?
        {
            Some(v) => Ok(Some(NameEntry::decode(&v)?)),
            None => Ok(None),
        }
    }

    /// Add `name -> ino` to directory `dir` with a fresh cookie (the caller updates times/nlink).
    pub fn add_entry(&mut self, dir: u64, name: &str, ino: u64, ftype: FileType) -> VfsResult<()> {
        let mut d = self.inode(dir)?;
        let cookie = d.next_cookie.max(2);
        d.next_cookie = cookie.checked_add(1).ok_or(VfsError::NoSpace)?;
        self.set_inode(dir, d);
        self.set_entry(dir, name, NameEntry { cookie, ino, ftype })
    }

    /// Write both keys of an entry (new, or pointing an existing name elsewhere in place).
    pub fn set_entry(&mut self, dir: u64, name: &str, e: NameEntry) -> VfsResult<()> {
        self.bucket(bucket::NAMES)?
            .put(&name_key(dir, name.as_bytes()), &e.encode())
            .map_err(kv)?;
        self.bucket(bucket::COOKIES)?
            .put(
                &pair_key(dir, e.cookie),
                &CookieEntry::encode(e.ino, e.ftype, name),
            )
            .map_err(kv)
    }

    pub fn remove_entry(&mut self, dir: u64, name: &str, e: &NameEntry) -> VfsResult<()> {
        self.bucket(bucket::NAMES)?
            .delete(&name_key(dir, name.as_bytes()))
            .map_err(kv)?;
        self.bucket(bucket::COOKIES)?
            .delete(&pair_key(dir, e.cookie))
            .map_err(kv)?;
        Ok(())
    }

    pub fn dir_is_empty(&self, dir: u64) -> VfsResult<bool> {
        let cookies = self.bucket(bucket::COOKIES)?;
        let mut c = cookies.cursor();
        let first = c.seek(&ino_key(dir)).map_err(kv)?;
        Ok(first.is_none_or(|e| be_u64(e.key()) != Some(dir)))
    }

    /// Whether `anc` is `dir` or one of its ancestors.
    pub fn is_ancestor(&mut self, anc: u64, dir: u64) -> VfsResult<bool> {
        let mut cur = dir;
        for _ in 0..1_000_000 {
            if cur == anc {
                return Ok(true);
            }
            if cur == ROOT_INO {
                return Ok(false);
            }
            let parent = self.inode(cur)?.parent;
            if parent == 0 {
                return corrupt();
            }
            cur = parent;
        }
        corrupt()
    }

    /// Add `dn` to the link count of `ino` and set its ctime (a moved or exchanged inode: 0).
    pub fn bump(&mut self, ino: u64, dn: i32) -> VfsResult<()> {
        let mut i = self.inode(ino)?;
        i.nlink = (i64::from(i.nlink) + i64::from(dn)).max(0) as u32;
        i.ctime = self.now;
        self.set_inode(ino, i);
        Ok(())
    }

    /// One name of `ino` went away: drop its link count (a directory's to 0), update ctime,
    /// and free it, or list it as an orphan while it is still open.
    pub fn drop_link(&mut self, ino: u64) -> VfsResult<()> {
        // Removing a name must work on a full store (kvdb's reserve).
        self.tx.use_reserve();
        let mut i = self.inode(ino)?;
        i.ctime = self.now;
        i.nlink = if i.ftype == FileType::Directory {
            0
        } else {
            i.nlink.saturating_sub(1)
        };
        if i.nlink > 0 {
            self.set_inode(ino, i);
        } else if self.st.open.get(&ino).is_some_and(|&n| n > 0) {
            self.set_inode(ino, i);
            self.bucket(bucket::ORPHANS)?
                .put(&ino_key(ino), &[])
                .map_err(kv)?;
        } else {
            self.free_inode(ino)?;
        }
        Ok(())
    }

    /// Delete every trace of `ino`: record, data, symlink target, xattrs, orphan entry.
    pub fn free_inode(&mut self, ino: u64) -> VfsResult<()> {
        self.tx.use_reserve();
        self.bucket(bucket::INODES)?
            .delete(&ino_key(ino))
            .map_err(kv)?;
        self.delete_prefix(bucket::DATA, ino)?;
        self.delete_prefix(bucket::XATTRS, ino)?;
        self.bucket(bucket::SYMLINKS)?
            .delete(&ino_key(ino))
            .map_err(kv)?;
        self.bucket(bucket::ORPHANS)?
            .delete(&ino_key(ino))
            .map_err(kv)?;
        self.cache.remove(&ino);
        self.folded.push(ino);
        let mut sb = self.superblock()?;
        sb.inode_count = sb.inode_count.saturating_sub(1);
        self.set_superblock(sb);
        Ok(())
    }

    /// Delete every key of `name` that starts with `ino` (big-endian); returns the bytes of
    /// values removed (as chunk footprints).
    fn delete_prefix(&self, name: &[u8], ino: u64) -> VfsResult<u64> {
        self.delete_range(name, ino, &ino_key(ino))
    }

    fn delete_range(&self, name: &[u8], ino: u64, from: &[u8]) -> VfsResult<u64> {
        // The keys of `ino` end before those of `ino + 1`; the largest inode number's run to
        // the end.
        let end = ino.checked_add(1).map(u64::to_be_bytes);
        self.delete_keys(name, from, end.as_ref().map(|e| &e[..]))
    }

    /// Delete the keys in `[from, to)` (to the end: `None`) of bucket `name`; returns the
    /// footprint they freed. One pass over the tree, values not read (a 2 MiB file is 32
    /// chunk keys).
    fn delete_keys(&self, name: &[u8], from: &[u8], to: Option<&[u8]>) -> VfsResult<u64> {
        let lens = self.bucket(name)?.delete_range(from, to).map_err(kv)?;
        Ok(lens.iter().fold(0u64, |sum, &len| {
            sum.saturating_add(footprint(usize::try_from(len).unwrap_or(usize::MAX)))
        }))
    }

    /// Set a regular file's size: chunks past the end go, the last partial chunk is cut, so no
    /// stored byte at or past the size is ever non-zero. Times are the caller's business.
    pub fn resize(&mut self, ino: u64, inode: &mut Inode, size: u64) -> VfsResult<()> {
        let cs = self.chunk_size;
        if size < inode.size {
            self.tx.use_reserve(); // shrinking frees space: allowed on a full store
            let first_gone = size.div_ceil(cs);
            let freed = self.delete_range(bucket::DATA, ino, &pair_key(ino, first_gone))?;
            inode.alloc_bytes = inode.alloc_bytes.saturating_sub(freed);
            let keep = (size % cs) as usize;
            if keep != 0 {
                let data = self.bucket(bucket::DATA)?;
                let key = pair_key(ino, size / cs);
                let cut = match data.get(&key).map_err(kv)? {
                    Some(v) if v.len() > keep => Some((v[..keep].to_vec(), v.len())),
                    _ => None,
                };
                if let Some((kept, old)) = cut {
                    data.put(&key, &kept).map_err(kv)?;
                    inode.alloc_bytes = inode
                        .alloc_bytes
                        .saturating_add(footprint(keep))
                        .saturating_sub(footprint(old));
                }
            }
        }
        inode.size = size;
        Ok(())
    }

    /// Make `[offset, end)` (cut to the size) read as zeros, the size kept (fallocate's
    /// FALLOC_FL_PUNCH_HOLE): the chunks inside it go (a hole, their space freed), the bytes
    /// of the chunks at either end that fall inside it are zeroed in place. Buffered chunks of
    /// the file folded into this transaction are zeroed the same way by `finish`.
    pub fn punch(&mut self, ino: u64, inode: &mut Inode, offset: u64, end: u64) -> VfsResult<()> {
        let cs = self.chunk_size;
        let end = end.min(inode.size);
        if offset >= end {
            return Ok(());
        }
        self.tx.use_reserve(); // a punch frees space: allowed on a full store
        self.punched.push((ino, offset, end));
        let (first_whole, end_whole) = (offset.div_ceil(cs), end / cs);
        if first_whole < end_whole {
            let to = pair_key(ino, end_whole);
            let freed =
                self.delete_keys(bucket::DATA, &pair_key(ino, first_whole), Some(&to[..]))?;
            inode.alloc_bytes = inode.alloc_bytes.saturating_sub(freed);
        }
        let data = self.bucket(bucket::DATA)?;
        let mut ends = Vec::with_capacity(2);
        if !offset.is_multiple_of(cs) {
            ends.push(offset / cs);
        }
        if !end.is_multiple_of(cs) && !ends.contains(&(end / cs)) {
            ends.push(end / cs);
        }
        for idx in ends {
            let key = pair_key(ino, idx);
            let start = idx * cs;
            let zeroed = match data.get(&key).map_err(kv)? {
                Some(v) => {
                    let a = (offset.max(start) - start) as usize;
                    let b = ((end.min(start + cs) - start) as usize).min(v.len());
                    (a < b && v[a..b].iter().any(|&x| x != 0)).then(|| {
                        let mut nv = v.to_vec();
                        nv[a..b].fill(0);
                        nv
                    })
                }
                None => None,
            };
            if let Some(nv) = zeroed {
                data.put(&key, &nv).map_err(kv)?;
            }
        }
        Ok(())
    }

    /// Give every chunk of `[offset, end)` storage (zeros where there was a hole).
    pub fn allocate(
        &mut self,
        ino: u64,
        inode: &mut Inode,
        offset: u64,
        end: u64,
    ) -> VfsResult<()> {
        let cs = self.chunk_size;
        let data = self.bucket(bucket::DATA)?;
        let new_size = inode.size.max(end);
        for idx in offset / cs..end.div_ceil(cs) {
            let key = pair_key(ino, idx);
            if data.get(&key).map_err(kv)?.is_none() {
                let len = (new_size - idx * cs).min(cs) as usize;
                data.put(&key, &alloc::vec![0u8; len]).map_err(kv)?;
                inode.alloc_bytes = inode.alloc_bytes.saturating_add(footprint(len));
            }
        }
        inode.size = new_size;
        Ok(())
    }

    /// Write the folded buffered chunks of inodes that still exist, every changed inode record
    /// and the superblock.
    pub fn finish(&mut self) -> VfsResult<()> {
        let cs = self.chunk_size;
        let mut folded = self.folded.clone();
        folded.sort_unstable();
        folded.dedup();
        for &ino in &folded {
            let Some(p) = self.st.wb.pending.get(&ino) else {
                continue;
            };
            let Some(&(mut inode, _)) = self.cache.get(&ino) else {
                // Freed by this transaction: chunks placed for it go back to the free pages.
                let placed: Vec<kvdb::Placed> = p.placed.values().copied().collect();
                self.tx.drop_placed(&placed).map_err(kv)?;
                continue;
            };
            let data = self.bucket(bucket::DATA)?;
            // All of the file's chunks in one `put_direct`: their pages go to the store straight
            // from the cache's buffers (the kernel window sends them to the disk without copying
            // them into its frames), and the replaced values' lengths come back with it.
            let punched: Vec<(u64, u64)> = self
                .punched
                .iter()
                .filter(|p| p.0 == ino)
                .map(|p| (p.1, p.2))
                .collect();
            // A chunk wholly inside a punched range stays a hole.
            let in_hole = |idx: u64| {
                let (a, b) = (idx * cs, (idx + 1).saturating_mul(cs));
                punched
                    .iter()
                    .any(|&(s, e)| s <= a && b.min(inode.size) <= e)
            };
            let kept = |idx: u64| idx.saturating_mul(cs) < inode.size && !in_hole(idx);
            // Partly loaded chunks get their missing pieces from the store as this
            // transaction sees it (a truncate in it has cut the stored chunk already), into
            // copies: the cache keeps its entry until the commit is published.
            let mut filled: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
            for (&idx, &loaded) in &p.partial {
                let Some(buf) = p.chunks.get(&idx).filter(|_| kept(idx)) else {
                    continue;
                };
                let mut full = buf.clone();
                if let Some(old) = data.get(&pair_key(ino, idx)).map_err(kv)? {
                    if old.len() as u64 > cs {
                        return Err(VfsError::Corrupted);
                    }
                    crate::state::fill_pieces(cs, &mut full, loaded, &old);
                }
                filled.insert(idx, full);
            }
            // Buffered bytes inside a punched range were written before the punch: zeros.
            for (&idx, buf) in &p.chunks {
                let (a, b) = (idx * cs, (idx + 1).saturating_mul(cs));
                if !kept(idx) || !punched.iter().any(|&(s, e)| s < b && a < e) {
                    continue;
                }
                let mut v = filled.remove(&idx).unwrap_or_else(|| buf.clone());
                for &(s, e) in &punched {
                    let from = (s.max(a) - a) as usize;
                    let to = ((e.min(b) - a) as usize).min(v.len());
                    if from < to {
                        v[from..to].fill(0);
                    }
                }
                filled.insert(idx, v);
            }
            let mut keys: Vec<[u8; 16]> = Vec::with_capacity(p.chunks.len());
            let mut values: Vec<&[u8]> = Vec::with_capacity(p.chunks.len());
            for (&idx, buf) in &p.chunks {
                if !kept(idx) {
                    continue;
                }
                let buf = filled.get(&idx).unwrap_or(buf);
                let start = idx * cs;
                let keep = buf.len().min((inode.size - start).min(cs) as usize);
                keys.push(pair_key(ino, idx));
                values.push(&buf[..keep]);
            }
            let pairs: Vec<(&[u8], &[u8])> = keys
                .iter()
                .map(|k| k.as_slice())
                .zip(values.iter().copied())
                .collect();
            let old = data.put_direct(&pairs).map_err(kv)?;
            let mut lens: Vec<(usize, Option<u64>)> =
                values.iter().map(|v| v.len()).zip(old).collect();
            // Placed chunks: inserted where their pages lie, cut to the size; those the file
            // lost (past its end, inside a punched range) are freed. One a punch covers in
            // part is read back and stored with that part zeroed, like a buffered one, and so
            // is one cut to a length the store keeps inline.
            let mut place_keys: Vec<[u8; 16]> = Vec::new();
            let mut place_values: Vec<kvdb::Placed> = Vec::new();
            let mut dropped: Vec<kvdb::Placed> = Vec::new();
            let mut rewritten: Vec<(u64, Vec<u8>)> = Vec::new();
            for (&idx, &pl) in &p.placed {
                let (a, b) = (idx * cs, (idx + 1).saturating_mul(cs));
                if !kept(idx) {
                    dropped.push(pl);
                    continue;
                }
                let keep = pl.len.min(inode.size - a);
                // Cut so short that the store keeps it inline, or punched in part.
                let inline = keep <= kvdb::page::max_inline_len(self.tx.page_size()) as u64;
                if inline || punched.iter().any(|&(s, e)| s < b && a < e) {
                    let mut v = alloc::vec![0u8; keep as usize];
                    let ps = self.tx.page_size() as u64;
                    self.tx
                        .pager()
                        .read_into(pl.page * ps, &mut v)
                        .map_err(kv)?;
                    for &(s, e) in &punched {
                        let from = (s.max(a) - a) as usize;
                        let to = ((e.min(b) - a) as usize).min(v.len());
                        if from < to {
                            v[from..to].fill(0);
                        }
                    }
                    rewritten.push((idx, v));
                    dropped.push(pl);
                    continue;
                }
                place_keys.push(pair_key(ino, idx));
                place_values.push(pl.cut(keep));
            }
            self.tx.drop_placed(&dropped).map_err(kv)?;
            let pairs: Vec<(&[u8], kvdb::Placed)> = place_keys
                .iter()
                .map(|k| k.as_slice())
                .zip(place_values.iter().copied())
                .collect();
            let old = data.put_placed(&pairs).map_err(kv)?;
            lens.extend(place_values.iter().map(|v| v.len as usize).zip(old));
            let keys: Vec<[u8; 16]> = rewritten.iter().map(|(i, _)| pair_key(ino, *i)).collect();
            let pairs: Vec<(&[u8], &[u8])> = keys
                .iter()
                .map(|k| k.as_slice())
                .zip(rewritten.iter().map(|(_, v)| v.as_slice()))
                .collect();
            let old = data.put_direct(&pairs).map_err(kv)?;
            lens.extend(rewritten.iter().map(|(_, v)| v.len()).zip(old));
            for (len, old) in lens {
                let old = old.map_or(0, |len| len as usize);
                inode.alloc_bytes = inode
                    .alloc_bytes
                    .saturating_add(footprint(len))
                    .saturating_sub(footprint(old));
            }
            self.cache.insert(ino, (inode, true));
        }
        let inodes = self.bucket(bucket::INODES)?;
        for (ino, (inode, dirty)) in &self.cache {
            if *dirty {
                inodes.put(&ino_key(*ino), &inode.encode()).map_err(kv)?;
            }
        }
        if let Some((sb, true)) = &self.sb {
            self.bucket(bucket::META)?
                .put(SUPERBLOCK_KEY, &sb.encode())
                .map_err(kv)?;
        }
        Ok(())
    }
}
