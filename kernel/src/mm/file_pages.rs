//! The pages of mapped files (`mmap` of a regular file), filled by the page-fault handler.
//!
//! Every mapping of one file, in every process, private or shared, maps the frames of one
//! [`SharedFile`]: a table of that file's pages by page index, keyed by (mount, inode) in a
//! registry of weak references, alive while some area maps the file (and, for the programs
//! exec ran and the libraries mapped executable most recently, afterwards: [`keep_recent`]).
//! exec maps programs this way too (`elf_loader`). There is one copy of each such page, so:
//! - read(2) of the file copies the resident pages over what the file system returned
//!   ([`overlay_read`]); write(2) copies what it wrote into the resident pages
//!   ([`update_after_write`]); truncation drops the pages past the new end and zeroes the
//!   tail of the last one ([`truncated`]), and unmaps them from every address space, so a later
//!   touch is SIGBUS as on Linux;
//! - a shared mapping (`MAP_SHARED`) maps a page read-only at a read fault and makes it
//!   writable, and marks it dirty, at the first write fault. Dirty pages reach the file through
//!   its `write_back_at` (never past the file's size) at `msync`, `fsync`, `sync`, and when
//!   the last mapping goes (munmap, exit, exec). Write-back cleans a page and maps it
//!   read-only in every shared mapping again, so the next store faults and dirties it anew;
//! - a private mapping (`MAP_PRIVATE`) maps the table's page read-only too, and so sees
//!   write(2) and shared stores, until its first store to the page, which gives it a copy of
//!   its own (as Linux's copy-on-write of page-cache pages). Its pages are never dirty.
//!
//! These are frames of their own, never pages of a dbfs disk window: dbfs learns of mapped
//! writes only through `write_at`, so its copy-on-write commits never see a mapped frame.
//!
//! Boundaries: mm reaches a mapped file only through [`MappedFile`], a trait it defines and
//! the file layer's open file implements, and every process's address space only through the
//! [`SpaceAccess`] the task layer registers at boot ([`set_space_access`]); it names neither.
//!
//! Under memory pressure ([`shrink`]) clean pages that no process maps are dropped; they are
//! read again at the next touch. Lock order: the registry, then one table, then the frame
//! pool; no table lock is held across a file-system call.

use alloc::collections::BTreeMap;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};

use abi::Errno;

use super::frame::Frame;
use super::PAGE_SIZE;
use crate::sync::Mutex;

/// Which file: the mount's id (`st_dev`) and the inode number. Names a file's page table
/// here and its record locks in the file layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct FileKey {
    pub mount: usize,
    pub ino: u64,
}

/// What a file mapping needs of an open file (the file layer's open file implements it).
pub trait MappedFile: Send + Sync {
    /// The node the pages are read from and written back to.
    fn node(&self) -> &vfs::NodeRef;
    /// The file's key (an error for a file that cannot say: an unlinked FAT32 file).
    fn key(&self) -> Result<FileKey, Errno>;
    /// Whether it is a regular file (only those have shared pages).
    fn is_regular(&self) -> bool;
    /// Whether it was opened for writing (a shared mapping may then be made writable).
    fn writable(&self) -> bool;
    /// The path it was opened by (what `/proc/<pid>/maps` shows).
    fn path(&self) -> alloc::string::String;
    /// The file as `Any`, so the file layer finds its own type again (`/proc/<pid>/exe`).
    fn as_any(&self) -> &dyn core::any::Any;
}

/// How the pages of a file reach every process's mappings of it: the task layer, which owns
/// the processes, registers these at boot (each calls the `AddrSpace` method of that name on
/// every address space, under its process's lock).
pub struct SpaceAccess {
    /// Unmap the pages of file `key` from page index `first_gone` on, once no thread is away
    /// in the kernel with user pages in hand, without giving the CPU away meanwhile
    /// (`task::keep_cpu`): truncation.
    pub unmap_file_pages: fn(key: FileKey, first_gone: u64),
    /// Map the pages `first..end` of file `key` read-only again: write-back.
    pub write_protect_file_pages: fn(key: FileKey, first: u64, end: u64),
}

static SPACES: spin::Once<SpaceAccess> = spin::Once::new();

/// Register the [`SpaceAccess`] (once, at boot, before any process runs).
pub fn set_space_access(access: SpaceAccess) {
    SPACES.call_once(|| access);
}

const PAGE: u64 = PAGE_SIZE as u64;

/// What one resident page costs the heap (its tree node's share included), for `admit`.
const PAGE_ENTRY_BYTES: usize = 96;

struct Page {
    frame: Arc<Frame>,
    dirty: bool,
}

/// Pages a fault read besides its own, by file page index (for fault-around).
pub type Around = Vec<(u64, Arc<Frame>)>;

/// The shared pages of one file.
pub struct SharedFile {
    key: FileKey,
    node: vfs::NodeRef,
    pages: Mutex<BTreeMap<u64, Page>>,
    /// The file's size as last seen: a fault below it needs no `getattr`; one at or past it
    /// asks the file system again. Truncation and write(2) keep it current.
    size: AtomicU64,
    /// Where the last load ended and how many pages it read: a fault there continues a
    /// sequential scan and reads twice as many, up to [`MAX_CLUSTER`].
    next_index: AtomicU64,
    cluster: AtomicUsize,
    /// Some page was dirtied (a shared mapping's store): counted in [`STORED_TABLES`].
    stored: AtomicBool,
}

/// Pages a fault that continues the previous load reads at first (64 KiB), and at most
/// (1 MiB, doubling while the faults stay sequential).
const FIRST_CLUSTER: usize = 16;
const MAX_CLUSTER: usize = 256;
/// Pages a fault elsewhere reads: the aligned group of 32 around it (128 KiB, Linux's default
/// read-around for mapped files). With random 4 KiB touches of a 64 MiB file (mmapbench:
/// 4096 touches) groups of 8, 16, 32 and 64 pages needed 2922, 2014, 524 and 268 device
/// reads, against 1372 for the same preads through the disk window; each request waited for
/// costs far more under QEMU than the extra bytes.
const READ_AROUND: usize = 32;
/// Resident pages a fault maps around a resident page: the aligned group of 16 (64 KiB,
/// Linux's `fault_around_bytes`).
const FAULT_AROUND: u64 = 16;
/// Most pages one write-back call writes (1 MiB, the system calls' I/O chunk).
const WRITE_BACK_RUN: usize = 256;

/// Live tables by file. Entries whose table is gone are removed by the table's `Drop`.
static TABLES: Mutex<BTreeMap<FileKey, Weak<SharedFile>>> = Mutex::new(BTreeMap::new());
/// How many tables exist: write(2) looks for one only when this is not zero.
static LIVE: AtomicUsize = AtomicUsize::new(0);
/// How many tables have had a page dirtied: read(2) looks for one only when this is not zero.
/// A clean page holds what the file system holds (write(2) updates both), so only a table
/// with stores through a shared mapping can show a reader something else. Every process maps
/// its program's table, so LIVE is never zero: looking up the table at every read cost a
/// cached 4 KiB pread of dbfs 163 instructions (of about 1850).
static STORED_TABLES: AtomicUsize = AtomicUsize::new(0);
/// How many areas map a file (any kind): truncation scans the address spaces only when this
/// is not zero.
static FILE_AREAS: AtomicUsize = AtomicUsize::new(0);

/// A counted reference to a mapped file: held by every area that maps it (so the file stays
/// open after its descriptor is closed) and counted in [`FILE_AREAS`].
pub struct FileRef(pub Arc<dyn MappedFile>);

impl FileRef {
    /// Hold `f` open for one area.
    pub fn new(f: Arc<dyn MappedFile>) -> FileRef {
        FILE_AREAS.fetch_add(1, Relaxed);
        FileRef(f)
    }
}

impl Clone for FileRef {
    fn clone(&self) -> FileRef {
        FileRef::new(self.0.clone())
    }
}

impl Drop for FileRef {
    fn drop(&mut self) {
        FILE_AREAS.fetch_sub(1, Relaxed);
    }
}

/// The table of the file `f` (whose key is `key`), made if it has none (its first mapping).
pub fn shared_table(f: &dyn MappedFile, key: FileKey) -> Result<Arc<SharedFile>, Errno> {
    let mut tables = TABLES.lock();
    if let Some(t) = tables.get(&key).and_then(Weak::upgrade) {
        return Ok(t);
    }
    super::heap::admit(core::mem::size_of::<SharedFile>() + 2 * PAGE_ENTRY_BYTES)?;
    let size = f.node().getattr()?.size;
    let t = Arc::new(SharedFile {
        key,
        node: f.node().clone(),
        pages: Mutex::new(BTreeMap::new()),
        size: AtomicU64::new(size),
        next_index: AtomicU64::new(u64::MAX),
        cluster: AtomicUsize::new(0),
        stored: AtomicBool::new(false),
    });
    tables.insert(key, Arc::downgrade(&t));
    LIVE.fetch_add(1, Relaxed);
    Ok(t)
}

/// Whether no mapped file page differs from the file system's: then reads need no
/// [`overlay_read`] (a check the read path inlines, so it does not pay a call for nothing).
#[inline]
pub fn none_shared() -> bool {
    STORED_TABLES.load(Relaxed) == 0
}

/// Whether no file is mapped now: then writes need no [`update_after_write`].
#[inline]
pub fn none_mapped() -> bool {
    LIVE.load(Relaxed) == 0
}

/// The live shared table of the file `key`, if any.
fn table_of(key: FileKey) -> Option<Arc<SharedFile>> {
    if LIVE.load(Relaxed) == 0 {
        return None;
    }
    TABLES.lock().get(&key).and_then(Weak::upgrade)
}

/// The live shared table of an open file, if any (cheap when no file is mapped shared).
fn table_of_open(f: &dyn MappedFile) -> Option<Arc<SharedFile>> {
    if LIVE.load(Relaxed) == 0 || !f.is_regular() {
        return None;
    }
    table_of(f.key().ok()?)
}

/// Whether the open file `f` has pages in a table now (some process maps it, or exec ran it
/// lately): a write must then refresh them ([`update_after_write`]).
pub fn has_table(f: &dyn MappedFile) -> bool {
    table_of_open(f).is_some()
}

/// Fill `frames` with the pages from `first` on of `node`, whose size is `size`: one
/// scattered read straight into the frames where the file system offers it, else one read
/// into a buffer (FAT32's large reads are direct), else page by page. The frames' old
/// contents are not trusted: every byte the file does not supply (past its end, or past a
/// short read) is zeroed.
fn load_cluster(
    node: &vfs::NodeRef,
    first: u64,
    size: u64,
    frames: &mut [Frame],
) -> Result<(), Errno> {
    let off = first * PAGE;
    let n = size
        .saturating_sub(off)
        .min((frames.len() * PAGE_SIZE) as u64) as usize;
    let got = read_into_frames(node, off, n, frames)?;
    for (k, f) in frames.iter_mut().enumerate() {
        let from = got.saturating_sub(k * PAGE_SIZE).min(PAGE_SIZE);
        f.bytes_mut()[from..].fill(0);
    }
    Ok(())
}

/// Read `n` bytes of `node` at `off` into the start of `frames`: the bytes read.
fn read_into_frames(
    node: &vfs::NodeRef,
    off: u64,
    n: usize,
    frames: &mut [Frame],
) -> Result<usize, Errno> {
    if frames.len() > 1 {
        let mut pieces: Vec<&mut [u8]> = Vec::new();
        pieces
            .try_reserve(frames.len())
            .map_err(|_| Errno::ENOMEM)?;
        let mut left = n;
        for f in frames.iter_mut() {
            let k = left.min(PAGE_SIZE);
            if k == 0 {
                break;
            }
            pieces.push(&mut f.bytes_mut()[..k]);
            left -= k;
        }
        if let Some(r) = node.read_scattered_at(off, &mut pieces) {
            let r = r?;
            if r == n {
                return Ok(r);
            }
        }
        if let Ok(mut buf) = super::heap::try_zeroed(n) {
            let got = vfs::read_fully(&**node, off, &mut buf)?;
            for (f, chunk) in frames.iter_mut().zip(buf[..got].chunks(PAGE_SIZE)) {
                f.bytes_mut()[..chunk.len()].copy_from_slice(chunk);
            }
            return Ok(got);
        }
    }
    let mut got = 0;
    for f in frames.iter_mut() {
        let want = (n - got).min(PAGE_SIZE);
        if want == 0 {
            break;
        }
        let k = vfs::read_fully(&**node, off + got as u64, &mut f.bytes_mut()[..want])?;
        got += k;
        if k < want {
            break;
        }
    }
    Ok(got)
}

/// The file's size; a page at or past it is a bus error (`EIO` to the fault handler).
fn size_of(node: &vfs::NodeRef) -> Result<u64, Errno> {
    Ok(node.getattr()?.size)
}

impl SharedFile {
    /// The resident pages covering file bytes [offset, end), by page index.
    fn resident(&self, offset: u64, end: u64) -> Vec<(u64, Arc<Frame>)> {
        self.pages
            .lock()
            .range(offset / PAGE..end.div_ceil(PAGE))
            .map(|(&i, p)| (i, p.frame.clone()))
            .collect()
    }

    /// Whether the table holds page `index` (mincore).
    pub(super) fn holds(&self, index: u64) -> bool {
        self.pages.lock().contains_key(&index)
    }

    /// The file's size if page `index` lies (at least partly) inside it; `EIO` (SIGBUS) if
    /// it lies wholly past the end.
    fn size_covering(&self, index: u64) -> Result<u64, Errno> {
        let inside = |size: u64| index.checked_mul(PAGE).is_some_and(|off| off < size);
        let size = self.size.load(Relaxed);
        if inside(size) {
            return Ok(size);
        }
        let size = size_of(&self.node)?;
        self.size.store(size, Relaxed);
        if inside(size) {
            Ok(size)
        } else {
            Err(Errno::EIO)
        }
    }

    /// The frame of page `index`, read from the file at its first touch: `EIO` if the page
    /// lies wholly past the end of the file (SIGBUS), `ENOMEM` if no frame is left. A fault
    /// that continues the previous load reads a cluster of pages (one file-system call);
    /// the pages read besides `index` are returned too, for the caller to map.
    pub fn page(&self, index: u64) -> Result<(Arc<Frame>, Around), Errno> {
        let size = self.size_covering(index)?;
        let last = size.div_ceil(PAGE);
        // Which pages to read: a fault that continues the previous load reads on from it,
        // twice as many as last time; any other fault reads the aligned group of
        // READ_AROUND pages around it, so later touches nearby find their pages mapped. The range stops at resident pages
        // and at the end of the file.
        let (first, end) = {
            let pages = self.pages.lock();
            if let Some(p) = pages.get(&index) {
                // Resident (a program run again, a page another process touched): its
                // resident neighbours in the aligned group of FAULT_AROUND pages are mapped
                // with it, as Linux's fault-around, instead of one fault each.
                let from = index - index % FAULT_AROUND;
                let mut around = Vec::new();
                if around.try_reserve(FAULT_AROUND as usize).is_ok() {
                    around.extend(
                        pages
                            .range(from..from + FAULT_AROUND)
                            .filter(|(&i, _)| i != index)
                            .map(|(&i, q)| (i, q.frame.clone())),
                    );
                }
                return Ok((p.frame.clone(), around));
            }
            let (from, want) = if self.next_index.load(Relaxed) == index {
                let want = (self.cluster.load(Relaxed) * 2).clamp(FIRST_CLUSTER, MAX_CLUSTER);
                (index, want as u64)
            } else {
                let group = READ_AROUND as u64;
                (index - index % group, group)
            };
            let first = pages
                .range(from..index)
                .next_back()
                .map_or(from, |(&i, _)| i + 1);
            let stop = pages
                .range(index..)
                .next()
                .map_or(last, |(&i, _)| i.min(last));
            (first, stop.min(first + want))
        };
        let n = (end - first) as usize;
        super::heap::admit(n * PAGE_ENTRY_BYTES)?;
        let mut frames = Vec::new();
        frames.try_reserve(n).map_err(|_| Errno::ENOMEM)?;
        // Frames whose old contents stay until the load overwrites them (`load_cluster`
        // zeroes what the file does not cover); never mapped if the load fails. Short of
        // frames, read from the faulting page on, as far as the frames go.
        let mut first = first;
        for k in 0..n as u64 {
            match super::frame::alloc_reclaiming_for_overwrite() {
                Some(f) => frames.push(f),
                None if first + k > index => break,
                None => {
                    frames.clear();
                    first = index;
                    match super::frame::alloc_reclaiming_for_overwrite() {
                        Some(f) => frames.push(f),
                        None => return Err(Errno::ENOMEM),
                    }
                    break;
                }
            }
        }
        load_cluster(&self.node, first, size, &mut frames)?;
        let end = first + frames.len() as u64;
        self.next_index.store(end, Relaxed);
        self.cluster.store(frames.len(), Relaxed);
        let frames: Vec<Arc<Frame>> = frames.into_iter().map(Arc::new).collect();
        // One hart and no sleeping in the kernel: nobody filled these pages meanwhile.
        let mut pages = self.pages.lock();
        for (k, f) in frames.iter().enumerate() {
            pages.insert(
                first + k as u64,
                Page {
                    frame: f.clone(),
                    dirty: false,
                },
            );
        }
        drop(pages);
        let mut own = None;
        let mut around = Vec::new();
        around
            .try_reserve(frames.len())
            .map_err(|_| Errno::ENOMEM)?;
        for (k, f) in frames.into_iter().enumerate() {
            let i = first + k as u64;
            if i == index {
                own = Some(f);
            } else {
                around.push((i, f));
            }
        }
        Ok((own.ok_or(Errno::ENOMEM)?, around))
    }

    /// Page `index` is (about to be) mapped writable: it must be written back.
    pub fn mark_dirty(&self, index: u64) {
        if let Some(p) = self.pages.lock().get_mut(&index) {
            p.dirty = true;
            if !self.stored.swap(true, Relaxed) {
                STORED_TABLES.fetch_add(1, Relaxed);
            }
        }
    }

    /// Whether page `index` holds stores not yet known to be written back.
    pub fn is_dirty(&self, index: u64) -> bool {
        self.pages.lock().get(&index).is_some_and(|p| p.dirty)
    }

    /// Write the dirty pages with index in [first, end) back through the file system (never
    /// past the file's end). They are clean afterwards, and every shared mapping maps them
    /// read-only again, so a later store marks them dirty anew: fsync then munmap, or
    /// msync(MS_SYNC) (a range, then the file), write each page once, not once per call
    /// (fio's mmap write line wrote its file three times before).
    pub fn write_back(&self, first: u64, end: u64) -> Result<(), Errno> {
        self.write_back_pages(first, end, true)
    }

    /// [`Self::write_back`]; `mapped`: whether some area may still map the pages (not in
    /// `Drop`, which may run under an address space's lock).
    fn write_back_pages(&self, first: u64, end: u64, mapped: bool) -> Result<(), Errno> {
        let dirty: Vec<(u64, Arc<Frame>)> = {
            let mut pages = self.pages.lock();
            pages
                .range_mut(first..end)
                .filter(|(_, p)| p.dirty)
                .map(|(&i, p)| {
                    p.dirty = false;
                    (i, p.frame.clone())
                })
                .collect()
        };
        if dirty.is_empty() {
            return Ok(());
        }
        if mapped {
            // No process's lock is held here (msync, fsync, sync), and nothing below switches
            // to another task (one hart, no sleeping in the kernel): no store can slip in
            // between the pages' cleaning and their copying to the file.
            let (lo, hi) = (dirty[0].0, dirty[dirty.len() - 1].0 + 1);
            if let Some(spaces) = SPACES.get() {
                (spaces.write_protect_file_pages)(self.key, lo, hi);
            }
        }
        let r = self.write_pages(&dirty);
        if let Err((failed_from, e)) = r {
            // What did not reach the file stays dirty (a store will not fault for it, but
            // the next write-back sees the flag).
            let mut pages = self.pages.lock();
            for (index, _) in &dirty[failed_from..] {
                if let Some(p) = pages.get_mut(index) {
                    p.dirty = true;
                }
            }
            return Err(e);
        }
        Ok(())
    }

    /// Copy `dirty` (in index order) to the file; on failure, the position of the first page
    /// that may not have reached it. Runs of consecutive pages go in one call of up to
    /// [`WRITE_BACK_RUN`] pages: a gathered write from the frames where the file system takes
    /// one (dbfs sends whole chunks from them straight to the disk), else one joined buffer.
    /// Page by page, fio's mmap write line paid a write-back-cache insert per 4 KiB.
    fn write_pages(&self, dirty: &[(u64, Arc<Frame>)]) -> Result<(), (usize, Errno)> {
        let size = size_of(&self.node).map_err(|e| (0, e))?;
        let mut k = 0;
        while k < dirty.len() {
            let first = dirty[k].0;
            let mut n = 1;
            while k + n < dirty.len() && n < WRITE_BACK_RUN && dirty[k + n].0 == first + n as u64 {
                n += 1;
            }
            let off = first * PAGE;
            if off < size {
                let len = (size - off).min(n as u64 * PAGE) as usize;
                let pieces: Vec<&[u8]> = dirty[k..k + n]
                    .iter()
                    .enumerate()
                    .map(|(j, (_, f))| {
                        &f.bytes()[..(len - (j * PAGE_SIZE).min(len)).min(PAGE_SIZE)]
                    })
                    .filter(|p| !p.is_empty())
                    .collect();
                self.write_run(off, &pieces, len).map_err(|e| (k, e))?;
            }
            k += n;
        }
        Ok(())
    }

    /// Write `len` bytes, the concatenation of `pieces`, at `off`.
    fn write_run(&self, off: u64, pieces: &[&[u8]], len: usize) -> Result<(), Errno> {
        let mut done = match self.node.write_gathered_at(off, pieces) {
            Some(r) => r?,
            None => match super::heap::try_zeroed(len) {
                Ok(mut buf) => {
                    let mut at = 0;
                    for p in pieces {
                        buf[at..at + p.len()].copy_from_slice(p);
                        at += p.len();
                    }
                    self.node.write_back_at(off, &buf)?
                }
                Err(_) => 0,
            },
        };
        // A short write (or no memory to join the pieces): the rest page piece by piece.
        let mut at = 0;
        for p in pieces {
            let end = at + p.len();
            while done < end {
                let from = done - at;
                let put = self.node.write_back_at(off + done as u64, &p[from..])?;
                if put == 0 {
                    return Err(Errno::EIO);
                }
                done += put;
            }
            at = end;
        }
        Ok(())
    }

    /// Write every dirty page back, then make the file durable (`msync(MS_SYNC)`).
    pub fn sync(&self) -> Result<(), Errno> {
        self.write_back(0, u64::MAX)?;
        self.node.fsync(false)?;
        Ok(())
    }
}

impl Drop for SharedFile {
    fn drop(&mut self) {
        // The last mapping is gone: its dirty pages go to the file (errors are lost, as on
        // Linux when nobody calls msync or fsync).
        if let Err(e) = self.write_back_pages(0, u64::MAX, false) {
            log::warn!("write-back of mapped file {:?} failed: {:?}", self.key, e);
        }
        let mut tables = TABLES.lock();
        if tables.get(&self.key).is_some_and(|w| w.strong_count() == 0) {
            tables.remove(&self.key);
        }
        LIVE.fetch_sub(1, Relaxed);
        if self.stored.load(Relaxed) {
            STORED_TABLES.fetch_sub(1, Relaxed);
        }
    }
}

/// read(2) of `f` returned `len` bytes at `offset`: hand each resident shared page's part of
/// that range to `put(file offset, bytes)`, which copies it over what the file system gave.
pub fn overlay_read(
    f: &dyn MappedFile,
    offset: u64,
    len: usize,
    mut put: impl FnMut(u64, &[u8]) -> Result<(), Errno>,
) -> Result<(), Errno> {
    if STORED_TABLES.load(Relaxed) == 0 {
        return Ok(());
    }
    let Some(t) = table_of_open(f) else {
        return Ok(());
    };
    let end = offset.saturating_add(len as u64);
    let resident = t.resident(offset, end);
    let mut copy = super::heap::try_zeroed(PAGE_SIZE)?;
    for (index, frame) in resident {
        let (from, to) = ((index * PAGE).max(offset), ((index + 1) * PAGE).min(end));
        let at = (from - index * PAGE) as usize;
        let n = (to - from) as usize;
        // Through a copy: the user buffer may be this very page (read into the mapping).
        copy[..n].copy_from_slice(&frame.bytes()[at..at + n]);
        put(from, &copy[..n])?;
    }
    Ok(())
}

/// write(2) put `len` bytes at `offset` into `f`: refresh the resident shared pages of that
/// range, `get(file offset, buffer)` fetching the bytes written there.
pub fn update_after_write(
    f: &dyn MappedFile,
    offset: u64,
    len: usize,
    mut get: impl FnMut(u64, &mut [u8]) -> Result<(), Errno>,
) -> Result<(), Errno> {
    let Some(t) = table_of_open(f) else {
        return Ok(());
    };
    let end = offset.saturating_add(len as u64);
    t.size.fetch_max(end, Relaxed);
    let resident = t.resident(offset, end);
    let mut copy = super::heap::try_zeroed(PAGE_SIZE)?;
    for (index, frame) in resident {
        let (from, to) = ((index * PAGE).max(offset), ((index + 1) * PAGE).min(end));
        let n = (to - from) as usize;
        get(from, &mut copy[..n])?;
        frame.write_shared((from - index * PAGE) as usize, &copy[..n]);
    }
    Ok(())
}

/// Write back the dirty shared pages of `f` (fsync, before the file system's own).
pub fn write_back_open(f: &dyn MappedFile) -> Result<(), Errno> {
    match table_of_open(f) {
        Some(t) => t.write_back(0, u64::MAX),
        None => Ok(()),
    }
}

/// Write back every table's dirty pages (sync(2), shutdown).
pub fn write_back_all() {
    if LIVE.load(Relaxed) == 0 {
        return;
    }
    let tables: Vec<Arc<SharedFile>> = TABLES.lock().values().filter_map(Weak::upgrade).collect();
    for t in tables {
        if let Err(e) = t.write_back(0, u64::MAX) {
            log::warn!("write-back of mapped file {:?} failed: {:?}", t.key, e);
        }
    }
}

/// The file `key` now has `size` bytes: drop the shared pages past it, zero the tail of the
/// last one, and unmap every mapped page past it from every address space (a later touch is
/// SIGBUS, as on Linux).
pub fn truncated(key: FileKey, size: u64) {
    if FILE_AREAS.load(Relaxed) == 0 {
        return;
    }
    let first_gone = size.div_ceil(PAGE);
    if let Some(t) = table_of(key) {
        t.size.store(size, Relaxed);
        let mut pages = t.pages.lock();
        let gone: Vec<u64> = pages.range(first_gone..).map(|(&i, _)| i).collect();
        for i in gone {
            pages.remove(&i);
        }
        let tail = (size % PAGE) as usize;
        if tail != 0 {
            if let Some(p) = pages.get(&(size / PAGE)) {
                p.frame
                    .write_shared(tail, &[0u8; PAGE_SIZE][..PAGE_SIZE - tail]);
            }
        }
    }
    // A write(2) of another process may be away inside dbfs (`task::relax`) with user pages
    // of a mapping of this file in hand (`UserPages`): unmap only when no thread is away, and
    // without giving the CPU away meanwhile. No lock is held here.
    if let Some(spaces) = SPACES.get() {
        (spaces.unmap_file_pages)(key, first_gone);
    }
}

/// [`truncated`] for an open file, looked up only when some area maps a file (a file whose
/// key cannot be had, such as an unlinked FAT32 file, cannot be mapped either).
pub fn truncated_open(f: &dyn MappedFile, size: u64) {
    if FILE_AREAS.load(Relaxed) == 0 {
        return;
    }
    if let Ok(key) = f.key() {
        truncated(key, size);
    }
}

/// How many address spaces run each file as their program (exec's file, not its loader):
/// such a file may not be opened for writing (ETXTBSY, Linux's `deny_write_access`).
static RUNNING: Mutex<BTreeMap<FileKey, usize>> = Mutex::new(BTreeMap::new());

/// An address space runs the file `key` as its program while this is held (exec takes it,
/// fork clones it, exit and the next exec drop it).
pub struct Running(FileKey);

impl Running {
    /// The file `key` starts running in one more address space.
    pub fn new(key: FileKey) -> Result<Running, Errno> {
        super::heap::admit(PAGE_ENTRY_BYTES)?;
        *RUNNING.lock().entry(key).or_insert(0) += 1;
        Ok(Running(key))
    }
}

impl Clone for Running {
    fn clone(&self) -> Running {
        *RUNNING.lock().entry(self.0).or_insert(0) += 1;
        Running(self.0)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let mut running = RUNNING.lock();
        if let Some(n) = running.get_mut(&self.0) {
            *n -= 1;
            if *n == 0 {
                running.remove(&self.0);
            }
        }
    }
}

/// Whether some process runs the file `key` as its program: opening it for writing is then
/// ETXTBSY.
pub fn is_running(key: FileKey) -> bool {
    RUNNING.lock().contains_key(&key)
}

/// How many programs' and libraries' tables [`keep_recent`] keeps at most: enough for a
/// program of Debian's with all its libraries (fio loads 57) and a few more programs.
const RECENT_PROGRAMS: usize = 128;
/// The share of the frame pool the kept tables' pages may fill (a quarter): past it the
/// oldest tables go first, so the kept pages never crowd out what cannot be reclaimed (page
/// tables take no frame back from them).
const RECENT_POOL_SHARE: usize = 4;
/// The tables of the programs (and loaders) exec mapped and the files mapped executable
/// (shared libraries) most recently, oldest first. Lock
/// order: before the registry.
static RECENT: Mutex<Vec<Arc<SharedFile>>> = Mutex::new(Vec::new());

/// exec mapped the program whose table is `t`, or a library was mapped executable: keep the
/// table (and the pages read into it) after its last process is gone, as Linux keeps a
/// file's page cache, so that the next exec of the program finds its pages resident. The
/// [`RECENT_PROGRAMS`] most recent are kept, fewer when their pages pass a
/// [`RECENT_POOL_SHARE`] of the frame pool. Pages no process maps are dropped under memory
/// pressure ([`shrink`]) like those of any table. Keeping a table by its (mount, inode) key
/// is safe because neither is ever reused while the kernel runs (dbfs counts inode numbers
/// up, FAT32 numbers paths per mount, mounts are never removed), and write(2) and truncation
/// keep a live table current.
pub fn keep_recent(t: &Arc<SharedFile>) {
    let old: Vec<Arc<SharedFile>> = {
        let mut recent = RECENT.lock();
        if let Some(i) = recent.iter().position(|x| Arc::ptr_eq(x, t)) {
            let x = recent.remove(i);
            recent.push(x);
            return;
        }
        let room = RECENT_PROGRAMS.saturating_sub(recent.len());
        if recent.try_reserve_exact(room).is_err() {
            return;
        }
        // The oldest go past the count, and past the budget of pages.
        let mut over = (recent.len() + 1).saturating_sub(RECENT_PROGRAMS);
        let budget = (super::frame::free_count() + super::frame::used_count()) / RECENT_POOL_SHARE;
        let mut pages: usize = t.pages.lock().len();
        // Newest first: the tables that fit in the budget stay, the older rest go.
        for (i, x) in recent.iter().enumerate().rev() {
            pages += x.pages.lock().len();
            if pages > budget {
                over = over.max(i + 1);
                break;
            }
        }
        let old = recent.drain(..over).collect();
        recent.push(t.clone());
        old
    };
    // Outside the lock: the last reference's drop writes back and takes the registry's lock.
    drop(old);
}

/// Memory is short: drop the clean shared pages no process maps (read again at their next
/// touch). Returns whether any frame was freed.
pub fn shrink() -> bool {
    if LIVE.load(Relaxed) == 0 {
        return false;
    }
    let tables: Vec<Arc<SharedFile>> = match TABLES.try_lock() {
        Some(t) => t.values().filter_map(Weak::upgrade).collect(),
        None => return false,
    };
    let mut freed = false;
    for t in tables {
        // A table whose lock is held is being worked on by the caller's caller: skip it.
        if let Some(mut pages) = t.pages.try_lock() {
            let before = pages.len();
            pages.retain(|_, p| p.dirty || Arc::strong_count(&p.frame) > 1);
            freed |= pages.len() < before;
        }
    }
    freed
}
