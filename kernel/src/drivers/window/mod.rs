//! Disk windows: a disk exposed as one contiguous range of kernel virtual memory, filled on
//! demand by the page-fault handler. This is how the dbfs store reaches its disk: kvdb reads
//! pages as plain slices of the window (no copy, no I/O call), and the first touch of a page
//! that is not resident traps into [`handle_kernel_fault`], which reads a cluster of pages
//! from it in ONE virtio request (64 KiB, doubling up to 1 MiB while faults continue a
//! sequential stream; [`READ_STREAMS`] streams are followed at once; a fault that starts a
//! stream also takes the pages before it in its 64 KiB-aligned cluster), maps them, flushes
//! the TLB and resumes the access. A fault whose thread may give the CPU away reads with the
//! window's lock released and sleeps until the disk is done ([`DiskWindow::fault_in`]), so
//! other threads run, and fault, meanwhile.
//!
//! Layout: windows live in the upper half of Sv39 from [`WINDOW_BASE`], each starting on a
//! 1 GiB boundary. Their level-1 tables are kernel root entries shared by every page table,
//! so a page mapped once is visible in every address space. Pages are mapped read-write,
//! global, never user-accessible.
//!
//! Writes never read the disk: [`DiskWindow::write`] puts whole pages into the window (a fresh
//! frame for a page not resident) and marks them dirty; [`DiskWindow::sync`] sends all dirty
//! pages as batched contiguous disk runs, each gathered from its frames (no copy), and then
//! flushes the disk. kvdb's commit order (pages, sync, meta page, sync) therefore reaches the
//! disk unchanged, in a few large requests.
//!
//! Contract with the user of a window (kvdb): bytes handed out by `slice` are never written
//! while borrowed. kvdb guarantees it: commits write only pages no live snapshot references
//! (copy-on-write) and the meta page that is not current.
//!
//! Large reads of file data do not fault pages in ([`large_read`]): they go from the disk
//! straight into the caller's pages, or, for a stretch read again while other large reads run,
//! out of pages the window keeps for them.
//!
//! A clean page can be dropped at any time and is read again at its next touch: when the frame
//! pool runs dry, a fault evicts a quarter of its window's clean pages; [`drop_all`] empties
//! every window of its clean pages (the `cold` benchmarks). Dirty pages stay until `sync`.
//! Lock order (`arch::lockcheck::rank`): a window's `state`, then the disk, the kernel's
//! root entries and the frame pool, each taken under it.

use alloc::collections::{BTreeSet, VecDeque};
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::Ordering::Relaxed;
use core::sync::atomic::{AtomicBool, AtomicUsize};

use crate::arch::lockcheck::{rank, SpinLock};
use vfs::{BlockDevice, VfsError, VfsResult, SECTOR_SIZE};

use crate::mm::frame::{self, Frame};
use crate::mm::{page_table, PAGE_SIZE};
use crate::task::wait::WaitQueue;

pub mod large_read;

/// First window address (root index 320 of Sv39's upper half).
pub const WINDOW_BASE: usize = 0xffff_ffd0_0000_0000;
const GIB: usize = 1 << 30;
/// Pages read by a fault that does not continue the previous one (64 KiB).
pub const FAULT_CLUSTER_PAGES: usize = 16;
/// Largest cluster: each fault that continues the previous one doubles it, up to 1 MiB.
pub const MAX_FAULT_CLUSTER_PAGES: usize = 256;

/// Sequential streams the fault read-ahead follows at once. Several readers of their own files
/// (fio with 4 jobs) interleave their faults; with one stream each fault broke the others'
/// sequence, so every cluster stayed at 64 KiB (four cold 2 MiB files read in turn cost 128
/// device reads). A fault that continues no stream starts one in the least recently used slot.
pub const READ_STREAMS: usize = 8;

/// One sequential stream of faults: `next` is the page after its last cluster, `cluster` the
/// size of its next cluster if a fault lands there, `used` when it last read (a tick of
/// [`State::ticks`]).
#[derive(Clone, Copy)]
struct Stream {
    next: usize,
    cluster: usize,
    used: u64,
}

impl Stream {
    /// A slot no fault continues yet.
    const FRESH: Stream = Stream {
        next: usize::MAX,
        cluster: FAULT_CLUSTER_PAGES,
        used: 0,
    };
}

/// Default first step of background flushes: bytes `write_direct` calls must have sent since
/// the last `sync` for the window to start a background flush of them
/// ([`BlockDevice::flush_behind`]) with the next direct write (a `sync` first makes it moot). Each background flush that no `sync` follows doubles the
/// bytes the next one waits for, up to [`FLUSH_BEHIND_MAX`]: a few large writes before an fsync
/// (rewrite) find their data durable already, while a long run of writes without one
/// (randwrite) does not make the host write every MiB out as it comes. Kernel parameter
/// `dbfs_flush_behind_kib` (0 = never).
pub const FLUSH_BEHIND_DEFAULT: usize = 256 << 10;
/// The largest gap between background flushes.
const FLUSH_BEHIND_MAX: usize = 64 << 20;

/// Set while a system call that ends in a barrier (fsync, fdatasync, msync(MS_SYNC), sync)
/// runs: its direct writes (a mapping's write-back, the write-back cache's commit) start no
/// background flush, since the barrier's own flush follows at once (a 64 MiB mapping written
/// back by fsync started twelve).
static BARRIER_COMING: AtomicUsize = AtomicUsize::new(0);

/// Run `f`, a system call's work that ends in a barrier of every disk it wrote (see
/// [`BARRIER_COMING`]). Nests.
pub fn barrier_coming<R>(f: impl FnOnce() -> R) -> R {
    // A count, not a flag: a task may give the CPU away inside `f` (the barrier's flush)
    // and another task's barrier may begin and end meanwhile.
    BARRIER_COMING.fetch_add(1, Relaxed);
    let r = f();
    BARRIER_COMING.fetch_sub(1, Relaxed);
    r
}

struct State {
    /// Resident pages by index.
    frames: alloc::collections::BTreeMap<usize, Frame>,
    level0_tables: Vec<Frame>,
    /// Level-1 tables (one per GiB), kept for the window's life.
    _level1_tables: Vec<Frame>,
    /// Pages written since the last `sync`: their only up-to-date copy is the frame, so they
    /// are never evicted until `sync` has put them on the disk.
    dirty: BTreeSet<usize>,
    /// Sequential read-ahead: the streams faults are followed in.
    streams: [Stream; READ_STREAMS],
    /// Faults so far (the clock of [`Stream::used`]).
    ticks: u64,
    /// Clusters being read with the lock released ([`DiskWindow::fault_in`]).
    loads: Vec<Load>,
    /// The next [`Load::id`] (and id of a direct write in `writes`).
    next_load: u64,
    /// Page ranges `[first, end)` of direct writes under way with the lock released
    /// ([`DiskWindow::write_direct`]), by id: no fault reads them before the device has the
    /// new bytes.
    writes: Vec<(u64, usize, usize)>,
    /// Page ranges `[first, end)` large reads took from the disk straight into their
    /// caller's buffers, oldest first, at most [`large_read::READ_ONCE_RANGES`]: a large
    /// read inside one of them is a read again ([`DiskWindow::read_into_pieces`]).
    read_once: VecDeque<(usize, usize)>,
}

/// Why a [`Load`] reads its pages ([`DiskWindow::read_load`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum LoadFor {
    /// A fault that may give the CPU away ([`DiskWindow::fault_in`]).
    Fault,
    /// A large read that keeps the pages it reads (`large_read`).
    Keep,
}

/// A cluster a fault reads from the disk while the window's state lock is not held.
struct Load {
    id: u64,
    first: usize,
    pages: usize,
    /// A write reached one of its pages meanwhile: what the read brings may be older than
    /// that write, so the fault throws it away and starts over.
    stale: bool,
}

impl State {
    /// Whether a page of `[first, end)` is dirty.
    fn any_dirty(&self, first: usize, end: usize) -> bool {
        self.dirty.range(first..end).next().is_some()
    }

    /// Whether a [`Load`] is reading page `page`.
    fn loading(&self, page: usize) -> bool {
        self.loads
            .iter()
            .any(|l| page >= l.first && page < l.first + l.pages)
    }

    /// Whether a direct write under way is writing page `page`.
    fn being_written(&self, page: usize) -> bool {
        self.writes
            .iter()
            .any(|&(_, first, end)| page >= first && page < end)
    }

    /// A write reaches pages `[first, end)`: every load reading one of them is stale.
    fn writing(&mut self, first: usize, end: usize) {
        for l in self.loads.iter_mut() {
            if first < l.first + l.pages && l.first < end {
                l.stale = true;
            }
        }
    }

    /// The stream a fault at page `index` continues, its cluster doubled; else the least
    /// recently used slot, restarted at [`FAULT_CLUSTER_PAGES`]. The flag says whether the
    /// fault continues a stream.
    fn stream_for(&mut self, index: usize) -> (usize, bool) {
        self.ticks += 1;
        if let Some(k) = self.streams.iter().position(|s| s.next == index) {
            let s = &mut self.streams[k];
            s.cluster = (s.cluster * 2).min(MAX_FAULT_CLUSTER_PAGES);
            s.used = self.ticks;
            return (k, true);
        }
        let k = (0..READ_STREAMS)
            .min_by_key(|&k| self.streams[k].used)
            .unwrap_or(0);
        self.streams[k] = Stream {
            used: self.ticks,
            ..Stream::FRESH
        };
        (k, false)
    }

    /// The first page a fault at `index` reads: a fault that starts a stream also reads the
    /// pages before it back to the [`FAULT_CLUSTER_PAGES`]-aligned boundary, as long as none
    /// of them is resident (a B+tree's pages written by one commit lie together but are
    /// touched in no particular order: a cold read of a dbfs file faulted page 4, then page
    /// 3, then its leaf). A fault that continues a stream reads forward only.
    fn cluster_start(&self, index: usize, continues: bool) -> usize {
        if continues {
            return index;
        }
        let floor = index - index % FAULT_CLUSTER_PAGES;
        let mut first = index;
        while first > floor && !self.frames.contains_key(&(first - 1)) {
            first -= 1;
        }
        first
    }
}

pub struct DiskWindow {
    base: usize,
    len: usize,
    dev: Arc<dyn BlockDevice>,
    state: SpinLock<State, { rank::WINDOW }>,
    /// Faults waiting for a [`Load`] of their page, woken when any load ends.
    loaded: WaitQueue,
    /// First step of background flushes in bytes (0: none; see [`FLUSH_BEHIND_DEFAULT`]).
    flush_behind: usize,
    /// Bytes sent by `write_direct` since it last started a background flush or `sync` ran.
    direct_since_flush: AtomicUsize,
    /// Large reads under way ([`Self::read_into_pieces`]), on any hart.
    large_reads: AtomicUsize,
    /// Bytes the next background flush waits for (0: `flush_behind`, as after a sync).
    behind_at: AtomicUsize,
    /// Direct writes reached `behind_at`: the next direct write starts a background flush
    /// (unless a `sync` comes first and flushes them anyway).
    behind_due: AtomicBool,
}

/// Whether faults may sleep while the disk reads ([`DiskWindow::fault_in`]; boot parameter
/// `dbfs_fault_sleep`).
static FAULT_SLEEP: AtomicBool = AtomicBool::new(true);

/// Let window faults sleep while the disk reads (the default), or make every one poll with
/// the window locked (boot, before any process exists).
pub fn set_fault_sleep(on: bool) {
    FAULT_SLEEP.store(on, Relaxed);
}

static WINDOWS: SpinLock<Vec<Arc<DiskWindow>>, { rank::WINDOW_LIST }> = SpinLock::new(Vec::new());
static NEXT_BASE: SpinLock<usize, { rank::WINDOW_BASE }> = SpinLock::new(WINDOW_BASE);

impl DiskWindow {
    /// A window over the whole of `dev`, whose direct writes start background flushes after
    /// `flush_behind` bytes (see [`FLUSH_BEHIND_DEFAULT`]). Must be called before any process
    /// exists (the root entries are copied into page tables when they are created).
    pub fn new(dev: Arc<dyn BlockDevice>, flush_behind: usize) -> VfsResult<Arc<DiskWindow>> {
        let len = (dev.size_bytes() as usize) / PAGE_SIZE * PAGE_SIZE;
        let gibs = len.div_ceil(GIB).max(1);
        let base = {
            let mut next = NEXT_BASE.lock();
            let b = *next;
            *next += gibs * GIB;
            b
        };
        let mut level1 = Vec::new();
        for g in 0..gibs {
            let f = frame::alloc_kernel().ok_or(VfsError::NoMemory)?;
            page_table::add_kernel_subtree(((base + g * GIB) >> 30) & 0x1ff, f.pa());
            level1.push(f);
        }
        let w = Arc::new(DiskWindow {
            base,
            len,
            dev,
            state: SpinLock::new(State {
                frames: Default::default(),
                level0_tables: Vec::new(),
                _level1_tables: level1,
                dirty: BTreeSet::new(),
                streams: [Stream::FRESH; READ_STREAMS],
                ticks: 0,
                loads: Vec::new(),
                next_load: 0,
                writes: Vec::new(),
                read_once: VecDeque::new(),
            }),
            loaded: WaitQueue::new(),
            flush_behind,
            direct_since_flush: AtomicUsize::new(0),
            large_reads: AtomicUsize::new(0),
            behind_at: AtomicUsize::new(0),
            behind_due: AtomicBool::new(false),
        });
        WINDOWS.lock().push(w.clone());
        Ok(w)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// The window's bytes [offset, offset + len): touching them faults pages in.
    pub fn slice(&self, offset: usize, len: usize) -> Option<&[u8]> {
        let end = offset.checked_add(len)?;
        if end > self.len {
            return None;
        }
        // SAFETY: the range lies inside the window, which is reserved for this disk for the
        // kernel's life; unmapped pages are filled by the fault handler on first touch, and
        // bytes handed out are not written while borrowed (module contract).
        Some(unsafe { core::slice::from_raw_parts((self.base + offset) as *const u8, len) })
    }

    /// Copy `[offset, offset + dst.len())` into `dst`: a device read straight into `dst` (no
    /// page is mapped, nothing is copied by the CPU; its wait may give the CPU away:
    /// [`BlockDevice::read_scatter_shared`]) unless a page of the range is dirty (its
    /// newest bytes are only in the window) or the range is not sector-aligned; then a copy
    /// out of the window. Clean pages equal the disk (commits write them before they become
    /// visible), so resident clean pages need not be looked at. `dst` must be memory the device
    /// can write (kernel or user frames, through the direct map).
    pub fn read_into(&self, offset: usize, dst: &mut [u8]) -> VfsResult<()> {
        if dst.is_empty() {
            return Ok(());
        }
        let dirty = self.any_dirty(offset, dst.len())?;
        if dirty || !offset.is_multiple_of(SECTOR_SIZE) || !dst.len().is_multiple_of(SECTOR_SIZE) {
            let src = self
                .slice(offset, dst.len())
                .ok_or(VfsError::InvalidInput)?;
            dst.copy_from_slice(src);
            return Ok(());
        }
        crate::counters::add_window_direct(dst.len());
        self.dev
            .read_scatter_shared((offset / SECTOR_SIZE) as u64, &mut [dst])
    }

    /// Whether a page of [offset, offset + len) (`len` > 0) is dirty, i.e. newer in its frame
    /// than on the disk; `InvalidInput` for a range past the window.
    fn any_dirty(&self, offset: usize, len: usize) -> VfsResult<bool> {
        let end = offset
            .checked_add(len)
            .filter(|&e| e <= self.len)
            .ok_or(VfsError::InvalidInput)?;
        Ok(self
            .state
            .lock()
            .any_dirty(offset / PAGE_SIZE, end.div_ceil(PAGE_SIZE)))
    }

    /// Map page `index` (and up to a cluster of following non-resident pages, and for a new
    /// stream the non-resident pages before it in its aligned cluster) from the disk.
    ///
    /// A thread that may give the CPU away ([`crate::task::may_give_cpu_away`]) reads with
    /// the state lock released and sleeps until the device is done: the cluster is recorded as
    /// a [`Load`], another fault on one of its pages sleeps until it is mapped, a write to one
    /// of them makes the load stale (its bytes may be older than the write: thrown away, the
    /// fault starts over), and pages mapped meanwhile (a write's) are kept. Any other fault
    /// (a thread in `task::keep_cpu`, the scheduler's own stack) reads under the lock and
    /// polls, as it must not wait for a sleeping loader.
    fn fault_in(&self, index: usize) -> VfsResult<()> {
        if !FAULT_SLEEP.load(Relaxed) || !crate::task::may_give_cpu_away() {
            return self.fault_in_polled(index);
        }
        loop {
            // Queued before the look, so a loader that finishes between the look and the
            // sleep wakes this thread (the wait queue's locks rank below the state's: taken
            // only while it is not held).
            self.loaded.prepare_to_wait();
            let mut st = self.state.lock();
            if st.frames.contains_key(&index) {
                drop(st);
                self.loaded.finish_wait();
                // Mapped meanwhile, maybe on another hart, whose new entries this hart was
                // not told of (only evictions are shot down everywhere).
                crate::arch::csr::sfence_vma_all();
                return Ok(());
            }
            if st.loading(index) || st.being_written(index) {
                drop(st);
                crate::task::away(|| self.loaded.sleep_prepared(None));
                continue;
            }
            let (first, frames) = self.cluster(&mut st, index, true)?;
            let id = st.next_load;
            st.next_load += 1;
            st.loads.push(Load {
                id,
                first,
                pages: frames.len(),
                stale: false,
            });
            drop(st);
            self.loaded.finish_wait();
            crate::counters::add_window_fault_sleep();
            let done = self.read_load(id, first, frames, LoadFor::Fault);
            if done? {
                return Ok(());
            }
        }
    }

    /// Read the pages `first..` of the [`Load`] `id` into `frames` with the state lock
    /// released, take the load off the list, and map the frames of pages not resident
    /// meanwhile; faults waiting for the load then look again. Whether the pages were mapped
    /// (false: a write reached one of them meanwhile, so the bytes may be older than it, and
    /// nothing was mapped).
    fn read_load(
        &self,
        id: u64,
        first: usize,
        mut frames: Vec<Frame>,
        why: LoadFor,
    ) -> VfsResult<bool> {
        let sector = (first * PAGE_SIZE / SECTOR_SIZE) as u64;
        let r = {
            let mut pieces: Vec<&mut [u8]> = frames.iter_mut().map(|f| f.bytes_mut()).collect();
            match why {
                LoadFor::Fault => self.dev.read_scatter_owned(sector, &mut pieces),
                // The frames are the reader's alone until mapped: its wait may give the CPU
                // away as a large read's does.
                LoadFor::Keep => self.dev.read_scatter_shared(sector, &mut pieces),
            }
        };
        let mut st = self.state.lock();
        let k = st
            .loads
            .iter()
            .position(|l| l.id == id)
            .ok_or(VfsError::Io)?;
        let load = st.loads.swap_remove(k);
        let done = match r {
            Err(e) => Err(e),
            Ok(()) if load.stale => {
                crate::counters::add_window_stale_load();
                Ok(false)
            }
            Ok(()) => {
                let n = frames.len();
                if why == LoadFor::Fault {
                    crate::counters::add_page_fault();
                }
                self.install(&mut st, first, frames).map(|()| {
                    if why == LoadFor::Keep {
                        crate::counters::add_window_kept(n);
                    }
                    true
                })
            }
        };
        drop(st);
        self.loaded.wake_all();
        done
    }

    /// [`Self::fault_in`] for a thread that may not give the CPU away: the cluster is read
    /// with the state lock held, the device polled. Pages a sleeping [`Load`] reads too are
    /// mapped here first; the load keeps what is mapped when it finishes.
    fn fault_in_polled(&self, index: usize) -> VfsResult<()> {
        let mut st = self.state.lock();
        if st.frames.contains_key(&index) {
            // Another access mapped it meanwhile, maybe on another hart, whose new entries
            // this hart was not told of (only evictions are shot down everywhere).
            crate::arch::csr::sfence_vma_all();
            return Ok(());
        }
        let (first, mut frames) = self.cluster(&mut st, index, false)?;
        {
            let mut pieces: Vec<&mut [u8]> = frames.iter_mut().map(|f| f.bytes_mut()).collect();
            self.dev
                .read_scatter((first * PAGE_SIZE / SECTOR_SIZE) as u64, &mut pieces)?;
        }
        crate::counters::add_page_fault();
        self.install(&mut st, first, frames)
    }

    /// The pages a fault at `fault` reads, and a frame for each: from the cluster's first
    /// page (see [`State::cluster_start`]) up to the stream's cluster size, stopping at a
    /// resident page (and, with `skip_loading`, at a page a [`Load`] is reading). Frames first,
    /// then one device request fills them all in place (scatter-gather: the frames need not be
    /// contiguous); one read per physically contiguous run of frames cost a request per page
    /// once the frame pool's free list was shuffled by a few thousand frees. Short of frames,
    /// a quarter of the window's clean pages are evicted, then fewer pages are read.
    fn cluster(
        &self,
        st: &mut State,
        fault: usize,
        skip_loading: bool,
    ) -> VfsResult<(usize, Vec<Frame>)> {
        let pages_total = self.len / PAGE_SIZE;
        // A page a direct write is sending is left out too: read now, it could be older than
        // the write.
        let free = |st: &State, page: usize| {
            let busy = st.frames.contains_key(&page)
                || st.being_written(page)
                || (skip_loading && st.loading(page));
            !busy
        };
        let (stream, continues) = st.stream_for(fault);
        let want = st.streams[stream].cluster;
        let mut after = 1;
        while after < want && fault + after < pages_total && free(st, fault + after) {
            after += 1;
        }
        let mut first = st.cluster_start(fault, continues);
        while first < fault && !(first..fault).all(|p| free(st, p)) {
            first += 1;
        }
        let n = fault + after - first;
        let mut frames: Vec<Frame> = Vec::with_capacity(n);
        for _ in 0..n {
            let f = match frame::alloc_kernel_for_overwrite() {
                Some(f) => f,
                None => {
                    let keep: BTreeSet<usize> = (first..first + n).collect();
                    let victims = st.frames.len() / 4 + 1;
                    Self::evict(self.base, st, victims, &keep);
                    match frame::alloc_kernel_for_overwrite() {
                        Some(f) => f,
                        // Short of frames: read fewer pages than the cluster, from the
                        // faulting page on (so one frame is enough).
                        None if !frames.is_empty() => {
                            first = fault;
                            frames.truncate(after);
                            break;
                        }
                        None => return Err(VfsError::NoMemory),
                    }
                }
            };
            frames.push(f);
        }
        st.streams[stream].next = first + frames.len();
        Ok((first, frames))
    }

    /// Map the frames read for pages `first..`, each unless its page is resident already (a
    /// write or another fault mapped it while the read was under way: that copy is as new or
    /// newer).
    fn install(&self, st: &mut State, first: usize, frames: Vec<Frame>) -> VfsResult<()> {
        let n = frames.len();
        for (k, f) in frames.into_iter().enumerate() {
            let page = first + k;
            if st.frames.contains_key(&page) {
                continue;
            }
            let va = self.base + page * PAGE_SIZE;
            if !page_table::map_kernel_page(va, f.pa(), &mut st.level0_tables) {
                return Err(VfsError::NoMemory);
            }
            st.frames.insert(page, f);
        }
        // The new entries were invalid before: one local flush covers the whole cluster (a
        // hart that faults on them finds them mapped and flushes its own TLB, above).
        crate::arch::csr::sfence_vma_all();
        crate::counters::add_window_read(n);
        Ok(())
    }

    /// Write `(offset, bytes)` pairs (sorted, non-overlapping). Whole pages go into the window
    /// (a page not resident gets a fresh frame: no read) and become dirty; [`Self::sync`] sends
    /// them to the disk. Pieces that are not whole pages (never from kvdb, whose pages are
    /// multiples of 4 KiB) are written through at once.
    pub fn write(&self, writes: &[(u64, &[u8])]) -> VfsResult<()> {
        let mut st = self.state.lock();
        let mut through: Vec<(u64, &[u8])> = Vec::new();
        let mut mapped_new = false;
        for &(off, bytes) in writes {
            let off = off as usize;
            if off.checked_add(bytes.len()).is_none_or(|e| e > self.len) {
                return Err(VfsError::InvalidInput);
            }
            st.writing(off / PAGE_SIZE, (off + bytes.len()).div_ceil(PAGE_SIZE));
            if !off.is_multiple_of(PAGE_SIZE) || !bytes.len().is_multiple_of(PAGE_SIZE) {
                for (k, chunk) in bytes.chunks(PAGE_SIZE).enumerate() {
                    let at = off + k * PAGE_SIZE;
                    if let Some(f) = st.frames.get_mut(&(at / PAGE_SIZE)) {
                        let in_page = at % PAGE_SIZE;
                        let n = chunk.len().min(PAGE_SIZE - in_page);
                        f.bytes_mut()[in_page..in_page + n].copy_from_slice(&chunk[..n]);
                    }
                }
                if !off.is_multiple_of(SECTOR_SIZE) || !bytes.len().is_multiple_of(SECTOR_SIZE) {
                    return Err(VfsError::InvalidInput);
                }
                through.push(((off / SECTOR_SIZE) as u64, bytes));
                continue;
            }
            // Frames for the pages not resident, allocated together and sorted, so that the
            // consecutive pages of a piece tend to get physically contiguous frames, which
            // `sync` then hands to the device as one piece (fewer descriptors per request).
            let first = off / PAGE_SIZE;
            let pages = bytes.len() / PAGE_SIZE;
            let missing: Vec<usize> = (first..first + pages)
                .filter(|p| !st.frames.contains_key(p))
                .collect();
            let mut fresh: Vec<Frame> = Vec::with_capacity(missing.len());
            for _ in 0..missing.len() {
                let f = match frame::alloc_kernel_for_overwrite() {
                    Some(f) => f,
                    None => {
                        let keep: BTreeSet<usize> = missing.iter().copied().collect();
                        let victims = st.frames.len() / 4 + 1;
                        Self::evict(self.base, &mut st, victims, &keep);
                        frame::alloc_kernel_for_overwrite().ok_or(VfsError::NoMemory)?
                    }
                };
                fresh.push(f);
            }
            fresh.sort_unstable_by_key(|f| f.pa());
            for (page, f) in missing.into_iter().zip(fresh) {
                let st = &mut *st;
                if !page_table::map_kernel_page(
                    self.base + page * PAGE_SIZE,
                    f.pa(),
                    &mut st.level0_tables,
                ) {
                    return Err(VfsError::NoMemory);
                }
                st.frames.insert(page, f);
                mapped_new = true;
            }
            for (k, page_bytes) in bytes.chunks(PAGE_SIZE).enumerate() {
                let page = first + k;
                if let Some(f) = st.frames.get_mut(&page) {
                    f.bytes_mut().copy_from_slice(page_bytes);
                }
                st.dirty.insert(page);
            }
        }
        if mapped_new {
            // The new entries were invalid before: one local flush covers them all (as in
            // `fault_in`).
            crate::arch::csr::sfence_vma_all();
        }
        drop(st);
        self.dev.write_runs(&through)
    }

    /// Write whole pages to the disk straight from the callers' buffers (`(offset, bytes)`
    /// pairs, sorted, non-overlapping, in runs of whole pages: see [`kvdb::Pager::write_direct`];
    /// the pairs of a user buffer that does not start on a page are not whole pages):
    /// kvdb's direct writes, for the pages of large values. No frame is filled; a resident
    /// copy of any of those pages (clean, or dirty from an earlier write this one supersedes)
    /// is unmapped and forgotten first, so the window never shows, nor later syncs, older
    /// bytes: the next touch reads the disk. Pieces adjacent on the disk form one run, sent as
    /// one gathered request whatever memory they lie in (pieces also adjacent in memory become
    /// one piece), all runs in flight together; they have completed when this returns, so the
    /// flush of the next [`Self::sync`] covers them. The requests are sent with the state lock
    /// released ([`BlockDevice::write_gather_shared`]: a caller whose buffers cannot be
    /// unmapped meanwhile may sleep until the device is done): the pages are listed in
    /// `State::writes` meanwhile, so no fault reads them (a fault on one waits; a cluster
    /// stops short of them) and a load already reading one is stale. A run is cut at a page
    /// boundary where a piece that is not whole sectors would otherwise lie inside it (the
    /// device takes a partial piece only first or last). Pairs that leave a page partly
    /// written, or that cannot be so cut, are `InvalidInput`, before anything changes. `bytes`
    /// must be memory the device can read (kernel or user frames, through the direct map).
    pub fn write_direct(&self, writes: &[(u64, &[u8])]) -> VfsResult<()> {
        let runs = direct_runs(writes, self.len)?;
        let mut st = self.state.lock();
        let id = st.next_load;
        st.next_load += 1;
        // The resident pages are unmapped together (one TLB shootdown), their frames freed
        // after it.
        let mut unmapped: Vec<usize> = Vec::new();
        let mut freed: Vec<Frame> = Vec::new();
        for (at, _, len) in &runs {
            let (first, end) = (at / PAGE_SIZE, (at + len) / PAGE_SIZE);
            st.writing(first, end);
            st.forget_read(first, end);
            st.writes.push((id, first, end));
            let resident: Vec<usize> = st.frames.range(first..end).map(|(&page, _)| page).collect();
            for page in resident {
                unmapped.push(self.base + page * PAGE_SIZE);
                freed.extend(st.frames.remove(&page));
                st.dirty.remove(&page);
            }
        }
        page_table::unmap_kernel_pages(&unmapped);
        drop(freed);
        let gathered: Vec<(u64, &[&[u8]])> = runs
            .iter()
            .map(|(at, pieces, _)| ((at / SECTOR_SIZE) as u64, pieces.as_slice()))
            .collect();
        drop(st);
        let r = self.dev.write_gather_shared(&gathered);
        self.state.lock().writes.retain(|w| w.0 != id);
        // Faults that found one of these pages being written look again.
        self.loaded.wake_all();
        // Direct writes (file data) are flushed in the background, so the flush of the next
        // barrier (fsync) finds them durable already and only has the commit's own pages
        // left; less and less often while no barrier comes (see FLUSH_BEHIND_DEFAULT).
        // The flush is started by the *next* direct write, not this one: a commit that a
        // barrier follows at once (fsync storing the cached chunks) would otherwise send two
        // flushes back to back, the background one covering nothing the barrier's own flush
        // does not (measured: 5 device flushes for one fsync of a fio 4 KiB write line).
        let base = self.flush_behind;
        if r.is_ok() && base > 0 && BARRIER_COMING.load(Relaxed) == 0 {
            if self.behind_due.swap(false, Relaxed) {
                self.dev.flush_behind();
            }
            let sent: usize = writes.iter().map(|w| w.1.len()).sum();
            let since = self.direct_since_flush.fetch_add(sent, Relaxed) + sent;
            let at = self.behind_at.load(Relaxed).max(base);
            if since >= at {
                self.direct_since_flush.store(0, Relaxed);
                self.behind_at.store(
                    at.saturating_mul(2).min(FLUSH_BEHIND_MAX.max(base)),
                    Relaxed,
                );
                self.behind_due.store(true, Relaxed);
            }
        }
        r
    }

    /// Send every dirty page to the disk, then flush the disk: everything written before this
    /// call is durable when it returns. Each run of pages consecutive on the disk is one
    /// gathered write whose pieces are its frames (frames also consecutive in physical memory
    /// make one piece): no copy, and the device splits nothing it need not (past `seg_max`
    /// pieces or 1 MiB); all runs are in flight together.
    pub fn sync(&self) -> VfsResult<()> {
        let mut st = self.state.lock();
        // (first page, pieces, pages so far), in disk order.
        let mut runs: Vec<(usize, Vec<&[u8]>, usize)> = Vec::new();
        for &page in &st.dirty {
            let pa = st.frames.get(&page).ok_or(VfsError::Io)?.va();
            // SAFETY: the frame of a resident page: in the direct map, owned by `st.frames`, and
            // neither written nor freed while the state lock is held, which it is until the
            // device has finished with these bytes (below).
            let frame = unsafe { core::slice::from_raw_parts(pa as *const u8, PAGE_SIZE) };
            match runs.last_mut() {
                Some((first, pieces, pages)) if *first + *pages == page => {
                    *pages += 1;
                    match pieces.last_mut() {
                        Some(prev) if prev.as_ptr() as usize + prev.len() == pa => {
                            // SAFETY: `prev` ends where this frame begins, both frames of the
                            // state held as above: the union is one readable physical range.
                            *prev = unsafe {
                                core::slice::from_raw_parts(prev.as_ptr(), prev.len() + PAGE_SIZE)
                            };
                        }
                        _ => pieces.push(frame),
                    }
                }
                _ => runs.push((page, alloc::vec![frame], 1)),
            }
        }
        let sector = |page: usize| (page * PAGE_SIZE / SECTOR_SIZE) as u64;
        let gathered: Vec<(u64, &[&[u8]])> = runs
            .iter()
            .map(|(page, pieces, _)| (sector(*page), pieces.as_slice()))
            .collect();
        self.dev.write_gather(&gathered)?;
        crate::counters::add_window_written(st.dirty.len());
        st.dirty.clear();
        drop(st);
        // A barrier: background flushes start over from the first step.
        self.direct_since_flush.store(0, Relaxed);
        self.behind_at.store(0, Relaxed);
        self.behind_due.store(false, Relaxed);
        // The flush's wait lets other tasks run: nothing of the window is held now, and a
        // barrier's caller holds only kvdb's writer lock, whose waiters give the CPU away.
        self.dev.flush_shared()
    }

    /// Unmap up to `count` resident pages (not those in `keep`), returning their frames.
    fn evict(base: usize, st: &mut State, count: usize, keep: &BTreeSet<usize>) {
        let victims: Vec<usize> = st
            .frames
            .keys()
            .copied()
            .filter(|i| !keep.contains(i) && !st.dirty.contains(i))
            .take(count)
            .collect();
        let vas: Vec<usize> = victims.iter().map(|&i| base + i * PAGE_SIZE).collect();
        page_table::unmap_kernel_pages(&vas);
        for i in victims {
            st.frames.remove(&i);
        }
    }

    /// Unmap every resident page: the next access to each reads the disk again.
    pub fn drop_pages(&self) {
        let mut st = self.state.lock();
        let all = st.frames.len();
        Self::evict(self.base, &mut st, all, &BTreeSet::new());
        // A cold read after this is a first read again.
        st.read_once.clear();
    }
}

/// Drop the resident pages of every window.
pub fn drop_all() {
    let windows: Vec<Arc<DiskWindow>> = WINDOWS.lock().clone();
    for w in windows {
        w.drop_pages();
    }
}

/// Serve a kernel page fault at `addr`: true if it was a window page and is now mapped.
pub fn handle_kernel_fault(addr: usize) -> bool {
    let w = {
        let windows = WINDOWS.lock();
        windows
            .iter()
            .find(|w| addr >= w.base && addr < w.base + w.len)
            .cloned()
    };
    let Some(w) = w else { return false };
    match w.fault_in((addr - w.base) / PAGE_SIZE) {
        Ok(()) => true,
        Err(e) => {
            // The access cannot be completed; this is a disk or memory failure under a
            // kernel data structure: report it loudly rather than return garbage.
            log::error!("disk window fault at {:#x}: {}", addr, e);
            false
        }
    }
}

/// A run of [`DiskWindow::write_direct`]: its first byte on the disk, its pieces, its bytes.
type DirectRun<'a> = (usize, Vec<&'a [u8]>, usize);

/// The runs of [`DiskWindow::write_direct`]'s pairs: `(first byte, pieces, bytes)`, each starting
/// and ending on a page, pieces adjacent in memory joined, and no piece that is not whole
/// sectors inside a run (the device's rule, [`vfs::scatter_shape`]): where one would be, the
/// run is cut at its end if that is a page boundary, or before the piece if it starts on one.
/// `len`: the window's size. Any other shape, or a pair outside the window, is
/// `InvalidInput`.
fn direct_runs<'a>(writes: &[(u64, &'a [u8])], len: usize) -> VfsResult<Vec<DirectRun<'a>>> {
    let mut runs: Vec<DirectRun<'a>> = Vec::with_capacity(writes.len());
    for &(off, bytes) in writes {
        let off = usize::try_from(off).map_err(|_| VfsError::InvalidInput)?;
        if off.checked_add(bytes.len()).is_none_or(|e| e > len) {
            return Err(VfsError::InvalidInput);
        }
        if bytes.is_empty() {
            continue;
        }
        let Some((_, pieces, n)) = runs.last_mut().filter(|r| r.0 + r.2 == off) else {
            runs.push((off, alloc::vec![bytes], bytes.len()));
            continue;
        };
        let only = pieces.len() == 1;
        let prev = pieces.last_mut().ok_or(VfsError::InvalidInput)?;
        if (prev.as_ptr() as usize).checked_add(prev.len()) == Some(bytes.as_ptr() as usize) {
            // SAFETY: `prev` and `bytes` are both borrowed for the caller's call and adjacent
            // in memory, so the joined range is exactly their union: readable, live, not
            // written while borrowed.
            *prev = unsafe { core::slice::from_raw_parts(prev.as_ptr(), prev.len() + bytes.len()) };
            *n += bytes.len();
        } else if only || prev.len().is_multiple_of(SECTOR_SIZE) {
            pieces.push(bytes);
            *n += bytes.len();
        } else if off.is_multiple_of(PAGE_SIZE) {
            runs.push((off, alloc::vec![bytes], bytes.len()));
        } else {
            // The partial piece before this one: cut the run before it, if it starts a page.
            let from = off - prev.len();
            if !from.is_multiple_of(PAGE_SIZE) {
                return Err(VfsError::InvalidInput);
            }
            let moved = pieces.pop().ok_or(VfsError::InvalidInput)?;
            *n -= moved.len();
            let cut = (from, alloc::vec![moved, bytes], moved.len() + bytes.len());
            if *n == 0 {
                runs.pop();
            }
            runs.push(cut);
        }
    }
    if runs
        .iter()
        .any(|(at, _, n)| !at.is_multiple_of(PAGE_SIZE) || !n.is_multiple_of(PAGE_SIZE))
    {
        return Err(VfsError::InvalidInput);
    }
    Ok(runs)
}
