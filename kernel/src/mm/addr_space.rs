//! A process's user address space: areas (what may be mapped, with which permissions) and the
//! frames actually mapped. Pages are allocated on first touch: a page fault inside an area maps
//! a zeroed frame; outside every area it is a segmentation fault. `uaccess` uses the same path,
//! so a syscall can read or write a page the program has not touched yet.
//!
//! Layout, as Linux lays out a riscv64 process: the ELF image at its link address (static
//! executables at 0x10000; a static-PIE `ET_DYN` image at [`ET_DYN_BASE`]), the heap (`brk`)
//! right after it, anonymous `mmap`s placed top down below the stack's reserved range, the
//! stack below [`STACK_TOP`], and the signal-return trampoline in the last user page.
//!
//! Shared anonymous memory (`MAP_SHARED | MAP_ANONYMOUS`): the area holds an
//! `Arc<SharedAnon>`, the mapping's pages by page index. Fork copies the area (the `Arc`), so
//! parent and child map the same frames, whichever of them touches a page first. Every other
//! page is private and copied by fork. A shared page's frame is freed when the last area of its
//! mapping is gone (unmapped, or its process exited or exec'd), as Linux frees shmem.

use alloc::collections::BTreeMap;
use alloc::sync::Arc;
use alloc::vec::Vec;

use abi::Errno;

use super::aio_ring::{AioContexts, AioRing};
use super::area::{
    anon_area, Access, Area, FileArea, Lock, Mapped, OnFork, Perm, SharedAnon, AREA_BYTES,
};
use super::file_pages::{FileKey, SharedFile};
use super::frame::{self, Frame};
use super::page_table::{PageTable, PteFlags};
use super::{page_ceil, page_floor, PAGE_SIZE, USER_BASE, USER_END};

pub const STACK_TOP: usize = 0x3f_0000_0000;
pub const STACK_SIZE: usize = 8 << 20;
/// Lowest address a non-fixed `mmap` is placed at (they go top down from [`MMAP_TOP`]).
pub const MMAP_BASE: usize = 0x20_0000_0000;
/// Highest end of a non-fixed `mmap`: below the stack, with a guard gap.
pub const MMAP_TOP: usize = STACK_TOP - STACK_SIZE - (1 << 20);

/// Where `mmap` puts a new area: anywhere free (the address a hint), exactly at the address
/// replacing what is there (`MAP_FIXED`), or exactly there only if nothing is
/// (`MAP_FIXED_NOREPLACE`, else EEXIST).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Fixed {
    No,
    Replace,
    NoReplace,
}

/// The heap may grow to this many bytes.
pub const BRK_MAX: usize = 4 << 30;
/// Most areas one address space may hold (Linux's default vm.max_map_count): a mapping or a
/// split beyond it is ENOMEM, as on Linux.
pub const MAX_MAP_COUNT: usize = 65530;
pub struct AddrSpace {
    pub(super) pt: PageTable,
    /// Areas keyed by start address; never overlapping.
    pub(super) areas: BTreeMap<usize, Area>,
    pub(super) frames: BTreeMap<usize, Mapped>,
    /// The most pages `frames` held before its last shrink (munmap, exit), or the parent's
    /// peak for a fork's child: [`AddrSpace::peak_pages`], getrusage's `ru_maxrss`.
    peak: usize,
    pub(super) brk_start: usize,
    pub(super) brk: usize,
    /// The program file this space runs (writing to it is ETXTBSY while this is held).
    pub(super) running: Option<super::file_pages::Running>,
    /// Its native AIO contexts (`io_setup`): released with the space, never forked.
    pub aio: AioContexts,
    /// mlockall(MCL_FUTURE): how the areas mapped from now on are locked (never forked).
    pub lock_future: Lock,
}

impl AddrSpace {
    pub fn new() -> Result<Self, Errno> {
        Ok(AddrSpace {
            pt: PageTable::new().ok_or(Errno::ENOMEM)?,
            areas: BTreeMap::new(),
            frames: BTreeMap::new(),
            peak: 0,
            brk_start: 0,
            brk: 0,
            running: None,
            aio: Default::default(),
            lock_future: Lock::None,
        })
    }

    pub fn activate(&self) {
        self.pt.activate();
    }

    /// The `satp` value that activates this space.
    pub fn satp(&self) -> usize {
        self.pt.satp()
    }

    /// Unmap and free all user memory (exit), allocating nothing; the space stays usable
    /// (empty).
    pub fn clear(&mut self) {
        self.peak = self.peak_pages();
        self.aio.clear();
        self.pt.clear_user();
        self.frames.clear();
        self.areas.clear();
        self.brk_start = 0;
        self.brk = 0;
        self.running = None;
        self.lock_future = Lock::None;
    }

    pub(super) fn area_of(&self, va: usize) -> Option<Area> {
        let (_, a) = self.areas.range(..=va).next_back()?;
        (va < a.end).then(|| a.clone())
    }

    /// The areas that overlap [start, end), in address order: found from the one holding
    /// `start`, so the cost follows the areas in the range, not those below it.
    pub(super) fn areas_in(&self, start: usize, end: usize) -> impl Iterator<Item = &Area> {
        let first = self
            .areas
            .range(..=start)
            .next_back()
            .filter(|(_, a)| a.end > start)
            .map_or(start, |(&s, _)| s);
        self.areas.range(first..end.max(first)).map(|(_, a)| a)
    }

    pub(super) fn overlaps(&self, start: usize, end: usize) -> bool {
        if let Some((_, a)) = self.areas.range(..end).next_back() {
            return a.end > start;
        }
        false
    }

    /// Add an area [start, end) (page-aligned) with `perm`.
    pub(super) fn add_area(&mut self, start: usize, end: usize, perm: Perm) -> Result<(), Errno> {
        self.insert_area(Area::new(start, end, perm))
    }

    pub(super) fn insert_area(&mut self, area: Area) -> Result<(), Errno> {
        let (start, end) = (area.start, area.end);
        if start >= end || start < USER_BASE || end > USER_END || self.overlaps(start, end) {
            return Err(Errno::EINVAL);
        }
        self.room_for(1)?;
        self.areas.insert(start, area);
        Ok(())
    }

    /// May `more` areas be added? ENOMEM past MAX_MAP_COUNT or when the heap is short.
    pub(super) fn room_for(&self, more: usize) -> Result<(), Errno> {
        if self.areas.len() + more > MAX_MAP_COUNT {
            return Err(Errno::ENOMEM);
        }
        crate::mm::heap::admit(more * AREA_BYTES)
    }

    /// Remove [start, end) from every area, unmapping and freeing its pages. ENOMEM (and
    /// nothing changed) when that splits an area in two and there is no room for the second.
    pub(super) fn remove_range(&mut self, start: usize, end: usize) -> Result<(), Errno> {
        if self
            .area_of(start)
            .is_some_and(|a| a.start < start && a.end > end)
        {
            self.room_for(1)?;
        }
        let hit: Vec<Area> = self.areas_in(start, end).cloned().collect();
        for a in hit {
            self.areas.remove(&a.start);
            if a.start < start {
                self.areas.insert(
                    a.start,
                    Area {
                        end: start,
                        ..a.clone()
                    },
                );
            }
            if a.end > end {
                self.areas.insert(end, Area { start: end, ..a });
            }
        }
        self.forget_pages(start, end, |_| true);
        Ok(())
    }

    /// Unmap and free the pages mapped in [start, end) for which `which(va)` holds, with one
    /// TLB flush for them all.
    pub(super) fn forget_pages(&mut self, start: usize, end: usize, which: impl Fn(usize) -> bool) {
        let pages: Vec<usize> = self
            .frames
            .range(start..end)
            .map(|(&va, _)| va)
            .filter(|&va| which(va))
            .collect();
        self.peak = self.peak_pages();
        self.pt.unmap_many(pages.iter().copied());
        for va in pages {
            self.frames.remove(&va);
        }
    }

    /// Map the page of `va` (inside `area`) with `perm`: a fresh zeroed frame, or the shared
    /// mapping's frame of that page. Returns its physical address.
    ///
    /// File pages: a private mapping gets its own copy; a shared one maps the file's page,
    /// writable (and marked dirty) only for a write access. `EIO`: the page lies past the end
    /// of the file, or could not be read (SIGBUS).
    pub(super) fn populate(
        &mut self,
        va: usize,
        area: &Area,
        perm: Perm,
        access: Access,
    ) -> Result<usize, Errno> {
        let page = page_floor(va);
        let mut flags = perm.pte();
        let m = match (&area.shared, &area.file) {
            (_, Some(fa)) => {
                let index = fa.index(page);
                let t = &fa.table;
                let (f, around) = t.page(index)?;
                self.map_around(page, area, around);
                if fa.private && access == Access::Write {
                    Mapped::Private(copy_of(&f)?)
                } else {
                    if access == Access::Write {
                        t.mark_dirty(index);
                    } else if fa.private || !t.is_dirty(index) {
                        flags = perm.clean().pte();
                    }
                    Mapped::Shared(f)
                }
            }
            (None, None) => Mapped::Private(frame::alloc_reclaiming().ok_or(Errno::ENOMEM)?),
            (Some((obj, base)), None) => {
                Mapped::Shared(obj.page((page - base) / PAGE_SIZE).ok_or(Errno::ENOMEM)?)
            }
        };
        let pa = m.frame().pa();
        if !self.pt.map(page, pa, flags) {
            return Err(Errno::ENOMEM);
        }
        self.frames.insert(page, m);
        crate::counters::add_page_fault();
        Ok(pa)
    }

    /// Fault-around: map the pages a file fault read besides its own (`around`, by file page
    /// index; before and after the faulting `page`) where `area` maps them and nothing is
    /// mapped yet, read-only (they are clean). Best effort: a page that cannot be mapped now
    /// faults later.
    pub(super) fn map_around(
        &mut self,
        page: usize,
        area: &Area,
        around: super::file_pages::Around,
    ) {
        let Some(fa) = &area.file else {
            return;
        };
        if around.is_empty()
            || !area.perm.intersects(Perm::R | Perm::W | Perm::X)
            || crate::mm::heap::admit(64 * around.len()).is_err()
        {
            return;
        }
        let base = fa.index(page);
        let flags = area.perm.clean().pte();
        for (index, f) in around {
            let va = if index >= base {
                usize::try_from(index - base)
                    .ok()
                    .and_then(|k| k.checked_mul(PAGE_SIZE))
                    .and_then(|d| page.checked_add(d))
            } else {
                usize::try_from(base - index)
                    .ok()
                    .and_then(|k| k.checked_mul(PAGE_SIZE))
                    .and_then(|d| page.checked_sub(d))
            };
            let Some(va) = va.filter(|&va| va >= area.start && va < area.end) else {
                continue;
            };
            if self.frames.contains_key(&va) {
                continue;
            }
            if !self.pt.map(va, f.pa(), flags) {
                break;
            }
            self.frames.insert(va, Mapped::Shared(f));
        }
    }

    /// Resolve a user access to `va`: the kernel (direct-map) address of that byte, mapping the
    /// page first if it lies in an area that allows `access`. `EFAULT` if the access is not
    /// allowed. Consecutive kernel addresses are consecutive physical ones too.
    #[inline]
    pub fn resolve(&mut self, va: usize, access: Access) -> Result<usize, Errno> {
        // The common case inline: the out-of-line rest saves many registers.
        if let Some(kva) = self.mapped_for(va, access) {
            return Ok(kva);
        }
        // A file page past the end of the file is a bad address to a system call.
        self.resolve_page(va, access).map_err(|e| match e {
            Errno::EIO => Errno::EFAULT,
            e => e,
        })
    }

    /// The futex key of the user word at `va` (Linux's `get_futex_key`), its page resolved
    /// for `access` first (EFAULT if it cannot be). A page of a shared mapping (MAP_SHARED
    /// anonymous memory, System V shared memory, a shared file mapping) is named by its
    /// kernel address, which every process that maps it sees alike. A page of a private
    /// mapping is named by its address in this space, `space_id` telling spaces apart:
    /// its frame changes when a store copies a page still shared with a fork's other side,
    /// and a waiter keyed by the old frame would never be woken (LTP's futex_wake02: threads
    /// of a forked child waiting on a static word).
    pub fn futex_key(
        &mut self,
        va: usize,
        access: Access,
        space_id: usize,
    ) -> Result<usize, Errno> {
        /// Bit 62 marks a private key; kernel addresses have bit 63 set, user ones fit 38 bits.
        const PRIVATE_KEY: usize = 1 << 62;
        let kva = self.resolve(va, access)?;
        let shared = self.areas.range(..=va).next_back().is_some_and(|(_, a)| {
            va < a.end && (a.shared.is_some() || a.file.as_ref().is_some_and(|f| !f.private))
        });
        Ok(if shared {
            kva
        } else {
            PRIVATE_KEY | (space_id & 0x3f_ffff) << 39 | va
        })
    }

    /// The kernel address of user byte `va` if its page is mapped for `access` already.
    /// A mapped page's entry carries its area's permissions (`populate`, `mprotect` and
    /// `fork` keep them equal), so such a page needs no area lookup: the common case of
    /// every read and write system call.
    #[inline]
    pub fn mapped_for(&mut self, va: usize, access: Access) -> Option<usize> {
        if !(USER_BASE..USER_END).contains(&va) {
            return None;
        }
        let page = page_floor(va);
        let (pa, flags) = self.pt.translate(page)?;
        flags
            .contains(access.pte_needs())
            .then(|| super::phys_to_virt(pa) + (va - page))
    }

    /// [`Self::mapped_for`] for the pages from `va`'s page on, from one page-table walk: the
    /// direct-map address of each page start, in order, while the pages are mapped for
    /// `access` (at most to the end of `va`'s leaf table and to `pages`). Returns how many
    /// were given to `f`; the caller resolves the next one the slow way. A 1 MiB read or write
    /// walked the table 256 times, two fifths of a large dbfs read's work.
    pub fn mapped_run(
        &self,
        va: usize,
        pages: usize,
        access: Access,
        mut f: impl FnMut(usize),
    ) -> usize {
        if !(USER_BASE..USER_END).contains(&va) {
            return 0;
        }
        let need = access.pte_needs() | PteFlags::V;
        let Some(entries) = self.pt.leaf_entries(va) else {
            return 0;
        };
        let mut n = 0;
        for &e in entries.iter().take(pages) {
            if PteFlags::from_bits_truncate(e) & need != need {
                break;
            }
            f(super::phys_to_virt((e >> 10) << 12));
            n += 1;
        }
        n
    }

    /// Whether every page of [va, va + len) is mapped for `access` already (nothing is looked
    /// up beyond the page table, nothing mapped). `len` > 0.
    pub fn all_mapped(&self, va: usize, len: usize, access: Access) -> bool {
        let Some(end) = va.checked_add(len) else {
            return false;
        };
        let mut page = page_floor(va);
        while page < end {
            let want = (end - page).div_ceil(PAGE_SIZE);
            let n = self.mapped_run(page, want, access, |_| {});
            if n == 0 {
                return false;
            }
            page += n * PAGE_SIZE;
        }
        true
    }

    #[inline(never)]
    pub(super) fn resolve_page(&mut self, va: usize, access: Access) -> Result<usize, Errno> {
        if !(USER_BASE..USER_END).contains(&va) {
            return Err(Errno::EFAULT);
        }
        let page = page_floor(va);
        if let Some(kva) = self.mapped_for(va, access) {
            return Ok(kva);
        }
        let area = self.area_of(va).ok_or(Errno::EFAULT)?;
        let allowed = match access {
            // As on Linux/RISC-V, where a writable page is always readable (the ISA has no
            // write-only pages): a PROT_WRITE buffer can be passed to write(2).
            Access::Read => area.perm.intersects(Perm::R | Perm::W),
            Access::Write => area.perm.contains(Perm::W),
            Access::Exec => area.perm.contains(Perm::X),
        };
        if !allowed {
            return Err(Errno::EFAULT);
        }
        let pa = match self.pt.translate(page) {
            Some(_)
                if access == Access::Write
                    && matches!(self.frames.get(&page), Some(Mapped::Cow(_))) =>
            {
                self.unshare(page, &area)?
            }
            Some((pa, _)) => {
                // Mapped without this permission: a file page's first store. A shared
                // mapping's page becomes dirty; a private mapping's view of the file's page
                // is replaced by its own copy.
                match &area.file {
                    Some(f) if access == Access::Write && f.private => {
                        if let Some(Mapped::Shared(shared)) = self.frames.get(&page) {
                            let own = copy_of(shared)?;
                            let pa = own.pa();
                            self.pt.unmap(page);
                            if !self.pt.map(page, pa, area.perm.pte()) {
                                self.frames.remove(&page);
                                return Err(Errno::ENOMEM);
                            }
                            self.frames.insert(page, Mapped::Private(own));
                            return Ok(super::phys_to_virt(pa) + (va - page));
                        }
                    }
                    Some(f) if access == Access::Write => f.table.mark_dirty(area.file_index(page)),
                    _ => {}
                }
                let flags = area.pte_of(page, self.frames.get(&page));
                self.pt.set_flags(page, flags);
                pa
            }
            None => self.populate(page, &area, area.perm, access)?,
        };
        Ok(super::phys_to_virt(pa) + (va - page))
    }

    /// The first store to the copy-on-write page `page` (in `area`, which allows it) since a
    /// fork: the frame becomes this space's own again if no other space holds it, else this
    /// space gets a copy. Returns the page's physical address; ENOMEM (nothing changed) when
    /// no frame is left for the copy.
    pub(super) fn unshare(&mut self, page: usize, area: &Area) -> Result<usize, Errno> {
        let Some(Mapped::Cow(shared)) = self.frames.remove(&page) else {
            return Err(Errno::EFAULT);
        };
        let own = match Arc::try_unwrap(shared) {
            Ok(f) => f,
            Err(shared) => match copy_of(&shared) {
                Ok(f) => f,
                Err(e) => {
                    self.frames.insert(page, Mapped::Cow(shared));
                    return Err(e);
                }
            },
        };
        let pa = own.pa();
        let m = Mapped::Private(own);
        let flags = area.pte_of(page, Some(&m));
        self.pt.unmap(page);
        if !self.pt.map(page, pa, flags) {
            return Err(Errno::ENOMEM);
        }
        self.frames.insert(page, m);
        Ok(pa)
    }

    /// Whether an area covers `va` (a fault there is an access it refused: SEGV_ACCERR).
    pub fn is_mapped(&self, va: usize) -> bool {
        self.area_of(va).is_some()
    }

    /// Serve a user page fault. `Err`: `ENOMEM` when no frame is left (an out-of-memory
    /// kill), `EIO` for a file page past the end of its file or unreadable (SIGBUS), anything
    /// else when the program touched memory it does not own (SIGSEGV).
    pub fn handle_fault(&mut self, va: usize, access: Access) -> Result<(), Errno> {
        self.resolve_page(va, access)?;
        if self.area_of(va).is_some_and(|a| a.perm.contains(Perm::X)) {
            // A code page was filled: the instruction fetches of every hart that runs this
            // space must see it.
            crate::arch::hart::fence_i_user(self.pt.satp());
        }
        Ok(())
    }

    /// `brk`: move the program break; returns the (possibly unchanged) break.
    pub fn brk(&mut self, new: usize) -> usize {
        if new < self.brk_start || new > self.brk_start + BRK_MAX {
            return self.brk;
        }
        let (old_end, new_end) = (page_ceil(self.brk), page_ceil(new));
        if new_end > old_end {
            if self.overlaps(old_end, new_end) {
                return self.brk;
            }
            // Merge with the heap area if there is one.
            match self.area_of(old_end - 1) {
                Some(a)
                    if old_end > self.brk_start
                        && a.perm == Perm::R | Perm::W
                        && a.shared.is_none()
                        && a.file.is_none() =>
                {
                    if let Some(a) = self.areas.get_mut(&a.start) {
                        a.end = new_end;
                    }
                }
                _ => {
                    if self.add_area(old_end, new_end, Perm::R | Perm::W).is_err() {
                        return self.brk;
                    }
                }
            }
        } else if new_end < old_end && self.remove_range(new_end, old_end).is_err() {
            return self.brk;
        }
        self.brk = new;
        new
    }

    /// A shared mapping of /dev/zero opened read-only: anonymous shared memory at
    /// [`mmap_anon`](Self::mmap_anon)'s place that mprotect may never make writable.
    pub fn mmap_zero_read_only(
        &mut self,
        hint: usize,
        len: usize,
        perm: Perm,
        fixed: Fixed,
    ) -> Result<usize, Errno> {
        let at = self.mmap_anon(hint, len, perm, fixed, true)?;
        self.change_areas(at, at + page_ceil(len), |a| a.no_write = true)?;
        Ok(at)
    }

    /// Anonymous `mmap`: returns the address of a new zero-filled area (`shared`: its pages
    /// are shared with the processes this one forks, `MAP_SHARED`).
    pub fn mmap_anon(
        &mut self,
        hint: usize,
        len: usize,
        perm: Perm,
        fixed: Fixed,
        shared: bool,
    ) -> Result<usize, Errno> {
        let obj = shared.then(|| Arc::new(SharedAnon::default()));
        self.map_anon(hint, len, perm, fixed, obj)
    }

    /// Map the pages of `obj` (a System V shared memory segment, `shmat`), page 0 first.
    /// `at`: exactly there (the range must be free unless `replace`); `None`: where
    /// `mmap` would put it.
    pub fn attach_shared(
        &mut self,
        at: Option<usize>,
        len: usize,
        perm: Perm,
        replace: bool,
        obj: Arc<SharedAnon>,
    ) -> Result<usize, Errno> {
        match at {
            Some(a) if !replace && self.overlaps(a, a.saturating_add(page_ceil(len))) => {
                Err(Errno::EINVAL)
            }
            Some(a) => self.map_anon(a, len, perm, Fixed::Replace, Some(obj)),
            None => self.map_anon(0, len, perm, Fixed::No, Some(obj)),
        }
    }

    /// `io_setup(nr_events)`: a native AIO context whose ring is mapped here (read-write,
    /// where `mmap` would put it); its id is the ring's address.
    pub fn aio_setup(&mut self, nr_events: u32) -> Result<Arc<AioRing>, Errno> {
        let mut ring = AioRing::new(nr_events)?;
        let len = ring.len;
        let base = self.attach_shared(None, len, Perm::R | Perm::W, false, ring.pages())?;
        if let Err(e) = ring.place(base) {
            let _ = self.munmap(base, len);
            return Err(e);
        }
        let ring = Arc::new(ring);
        self.aio.insert(ring.clone());
        Ok(ring)
    }

    /// Undo the `attach_shared` that mapped `obj`-sharing areas starting at `addr` (`shmdt`):
    /// every area of that attachment goes, and `obj` is returned. `EINVAL` if no attachment
    /// starts at `addr`.
    pub fn detach_shared(&mut self, addr: usize) -> Result<Arc<SharedAnon>, Errno> {
        let obj = match self.areas.get(&addr).and_then(|a| a.shared.clone()) {
            Some((obj, base)) if base == addr => obj,
            _ => return Err(Errno::EINVAL),
        };
        let parts: Vec<(usize, usize)> = self
            .areas
            .values()
            .filter(|a| {
                a.shared
                    .as_ref()
                    .is_some_and(|(o, b)| *b == addr && Arc::ptr_eq(o, &obj))
            })
            .map(|a| (a.start, a.end))
            .collect();
        for (start, end) in parts {
            self.remove_range(start, end)?;
        }
        Ok(obj)
    }

    /// A file mapping of `len` bytes (`mmap` of a regular file): its pages are read from
    /// the file at their first touch.
    pub fn mmap_file(
        &mut self,
        hint: usize,
        len: usize,
        perm: Perm,
        fixed: Fixed,
        file: FileArea,
    ) -> Result<usize, Errno> {
        self.map_area(hint, len, fixed, |start, len| Area {
            file: Some(FileArea {
                va0: start,
                ..file.clone()
            }),
            ..Area::new(start, start + len, perm)
        })
    }

    /// A zero-filled area of `len` bytes, private or with the pages of `obj`.
    pub(super) fn map_anon(
        &mut self,
        hint: usize,
        len: usize,
        perm: Perm,
        fixed: Fixed,
        obj: Option<Arc<SharedAnon>>,
    ) -> Result<usize, Errno> {
        self.map_area(hint, len, fixed, |start, len| {
            anon_area(start, len, perm, obj.clone())
        })
    }

    /// Place a new area of `len` bytes (`make(start, rounded len)` builds it): at `hint`
    /// exactly (`fixed`: replacing what is there, or EEXIST if anything is), at `hint` if it
    /// is free, else in the highest gap below [`MMAP_TOP`].
    pub(super) fn map_area(
        &mut self,
        hint: usize,
        len: usize,
        fixed: Fixed,
        make: impl Fn(usize, usize) -> Area,
    ) -> Result<usize, Errno> {
        if len == 0 {
            return Err(Errno::EINVAL);
        }
        // Linux: a length that rounds past the end of the address space, or is larger than
        // user space, is ENOMEM.
        if len > USER_END - USER_BASE {
            return Err(Errno::ENOMEM);
        }
        let len = page_ceil(len);
        if fixed != Fixed::No {
            if !hint.is_multiple_of(PAGE_SIZE)
                || hint < USER_BASE
                || hint.checked_add(len).is_none_or(|e| e > USER_END)
            {
                return Err(Errno::EINVAL);
            }
            if fixed == Fixed::NoReplace {
                if self.overlaps(hint, hint + len) {
                    return Err(Errno::EEXIST);
                }
            } else {
                self.remove_range(hint, hint + len)?;
            }
            self.insert_area(make(hint, len))?;
            return Ok(hint);
        }
        // A free hint is taken as is (Linux).
        if hint != 0
            && hint.is_multiple_of(PAGE_SIZE)
            && hint >= USER_BASE
            && hint.checked_add(len).is_some_and(|e| e <= MMAP_TOP)
            && !self.overlaps(hint, hint + len)
        {
            self.insert_area(make(hint, len))?;
            return Ok(hint);
        }
        let at = self.free_gap_top_down(len)?;
        self.insert_area(make(at, len))?;
        Ok(at)
    }

    /// Where a non-fixed mapping of `len` (page-rounded) bytes goes: the start of the
    /// highest free gap below [`MMAP_TOP`] that holds it (ENOMEM if none above [`MMAP_BASE`]).
    pub(super) fn free_gap_top_down(&self, len: usize) -> Result<usize, Errno> {
        let len = page_ceil(len);
        let mut top = MMAP_TOP;
        for (_, a) in self.areas.range(..MMAP_TOP).rev() {
            if top < len {
                break;
            }
            if a.end <= top - len {
                break;
            }
            top = top.min(a.start);
        }
        if top < len || top - len < MMAP_BASE {
            return Err(Errno::ENOMEM);
        }
        Ok(top - len)
    }

    pub fn munmap(&mut self, addr: usize, len: usize) -> Result<(), Errno> {
        if !addr.is_multiple_of(PAGE_SIZE) || len == 0 || addr.checked_add(len).is_none() {
            return Err(Errno::EINVAL);
        }
        if addr < USER_BASE || addr + len > USER_END {
            return Err(Errno::EINVAL);
        }
        self.remove_range(addr, page_ceil(addr + len))
    }

    pub fn mprotect(&mut self, addr: usize, len: usize, perm: Perm) -> Result<(), Errno> {
        if !addr.is_multiple_of(PAGE_SIZE) || addr.checked_add(len).is_none() {
            return Err(Errno::EINVAL);
        }
        let end = page_ceil(addr + len);
        let mut s = addr;
        // Every page must be in some area (Linux: ENOMEM otherwise); a shared mapping of a
        // file not open for writing cannot be made writable (EACCES).
        while s < end {
            let a = self.area_of(s).ok_or(Errno::ENOMEM)?;
            let read_only_file = a.file.as_ref().is_some_and(|f| !f.private && !f.may_write);
            if perm.contains(Perm::W) && (read_only_file || a.no_write) {
                return Err(Errno::EACCES);
            }
            s = a.end;
        }
        if end == addr {
            return Ok(());
        }
        self.change_areas(addr, end, |a| a.perm = perm)?;
        let pages: Vec<(usize, PteFlags)> = self
            .frames
            .range(addr..end)
            .map(|(&va, m)| {
                let flags = self
                    .area_of(va)
                    .map_or(perm.pte(), |a| a.pte_of(va, Some(m)));
                (va, flags)
            })
            .collect();
        self.pt.set_flags_many(pages);
        if perm.contains(Perm::X) {
            // Code written through a writable mapping may now run, on any hart.
            crate::arch::hart::fence_i_user(self.pt.satp());
        }
        Ok(())
    }

    /// Apply `change` to the parts of the areas inside [addr, end) (page-aligned), splitting
    /// an area that crosses `addr` or `end` in two. ENOMEM, and nothing changed, when there is
    /// no room for the parts.
    pub(super) fn change_areas(
        &mut self,
        addr: usize,
        end: usize,
        change: impl Fn(&mut Area),
    ) -> Result<(), Errno> {
        let splits = usize::from(self.area_of(addr).is_some_and(|a| a.start < addr))
            + usize::from(self.area_of(end - 1).is_some_and(|a| a.end > end));
        if splits > 0 {
            self.room_for(splits)?;
        }
        let hit: Vec<Area> = self.areas_in(addr, end).cloned().collect();
        for a in hit {
            self.areas.remove(&a.start);
            if a.start < addr {
                self.areas.insert(
                    a.start,
                    Area {
                        end: addr,
                        ..a.clone()
                    },
                );
            }
            let (ms, me) = (a.start.max(addr), a.end.min(end));
            let mut part = Area {
                start: ms,
                end: me,
                ..a.clone()
            };
            change(&mut part);
            self.areas.insert(ms, part);
            if a.end > end {
                self.areas.insert(end, Area { start: end, ..a });
            }
        }
        Ok(())
    }

    /// ENOMEM unless every page of [addr, end) lies in an area (Linux's answer for a hole in
    /// the range of mprotect, madvise, mlock, munlock).
    pub(super) fn covered(&self, addr: usize, end: usize) -> Result<(), Errno> {
        let mut s = addr;
        while s < end {
            s = self.area_of(s).ok_or(Errno::ENOMEM)?.end;
        }
        Ok(())
    }

    /// The shared file mappings in [addr, end) (`msync`), each as its table and the file
    /// page range it maps there; `ENOMEM` (after the list is made) if part of the range is
    /// not mapped, as Linux answers.
    pub fn shared_files_in(
        &self,
        addr: usize,
        end: usize,
    ) -> (Vec<SharedRange>, Result<(), Errno>) {
        let mut out = Vec::new();
        let mut hole = false;
        let mut at = addr;
        for a in self.areas_in(addr, end) {
            if a.start > at {
                hole = true;
            }
            let (from, to) = (a.start.max(addr), a.end.min(end));
            if let Some(f) = a.file.as_ref().filter(|f| !f.private) {
                out.push((
                    f.table.clone(),
                    a.file_index(from),
                    a.file_index(to - 1) + 1,
                ));
            }
            at = to;
        }
        if at < end {
            hole = true;
        }
        (out, if hole { Err(Errno::ENOMEM) } else { Ok(()) })
    }

    /// The file `key` was cut to `first_gone` pages: unmap every page of it mapped at or past
    /// that index (private copies too, as Linux), so the next touch faults and finds the end.
    pub fn unmap_file_pages(&mut self, key: FileKey, first_gone: u64) {
        let hit: Vec<(usize, usize, FileArea)> = self
            .areas
            .values()
            .filter_map(|a| {
                a.file
                    .as_ref()
                    .filter(|f| f.key == key)
                    .map(|f| (a.start, a.end, f.clone()))
            })
            .collect();
        for (start, end, f) in hit {
            self.forget_pages(start, end, |va| f.index(va) >= first_gone);
        }
    }

    /// The shared pages of file `key` with index in [first, end) were written back and are
    /// clean: map them read-only again (those not dirtied since), so the next store faults
    /// and marks the page dirty once more (Linux's `page_mkclean`). One TLB flush.
    pub fn write_protect_file_pages(&mut self, key: FileKey, first: u64, end: u64) {
        let mut pages = Vec::new();
        for a in self.areas.values() {
            let Some(f) = a.file.as_ref().filter(|f| f.key == key && !f.private) else {
                continue;
            };
            for (&va, m) in self.frames.range(a.start..a.end) {
                if (first..end).contains(&f.index(va)) {
                    pages.push((va, a.pte_of(va, Some(m))));
                }
            }
        }
        if !pages.is_empty() {
            self.pt.set_flags_many(pages);
        }
    }

    /// A copy of this address space (fork): same areas, the pages of shared mappings shared,
    /// every private page shared copy-on-write (in both spaces: [`Mapped::Cow`]).
    pub fn fork(&mut self) -> Result<AddrSpace, Errno> {
        crate::mm::heap::admit(self.areas.len() * AREA_BYTES)?;
        let mut child = AddrSpace::new()?;
        child.areas = self.areas.clone();
        // Memory locks are not inherited (Linux clears VM_LOCKED in the child), nor is
        // mlockall's MCL_FUTURE.
        for a in child.areas.values_mut() {
            a.lock = Lock::None;
        }
        // AIO kept stay with this space (Linux's VM_DONTCOPY), as do MADV_DONTFORK areas:
        // the child maps none of them.
        let kept: Vec<(usize, usize)> = self
            .areas
            .values()
            .filter(|a| {
                a.on_fork == OnFork::Drop
                    || a.shared.as_ref().is_some_and(|(o, _)| self.aio.holds(o))
            })
            .map(|a| (a.start, a.end))
            .collect();
        for &(start, _) in &kept {
            child.areas.remove(&start);
        }
        child.brk_start = self.brk_start;
        child.brk = self.brk;
        child.running = self.running.clone();
        // Private pages become copy-on-write in both spaces: this one loses write permission
        // on them now (one TLB flush for all), the child maps the same frames read-only.
        let own: Vec<usize> = self
            .frames
            .iter()
            .filter(|(_, m)| matches!(m, Mapped::Private(_)))
            .map(|(&va, _)| va)
            .collect();
        let mut flags = Vec::with_capacity(own.len());
        for va in own {
            if let Some(Mapped::Private(f)) = self.frames.remove(&va) {
                let m = Mapped::Cow(Arc::new(f));
                let pte = self
                    .area_of(va)
                    .map_or(Perm::R.pte(), |a| a.pte_of(va, Some(&m)));
                flags.push((va, pte));
                self.frames.insert(va, m);
            }
        }
        self.pt.set_flags_many(flags);
        for (&va, m) in &self.frames {
            // No private page is left: all were made copy-on-write above.
            let Some(m) = m.share() else {
                continue;
            };
            if kept.iter().any(|&(start, end)| (start..end).contains(&va)) {
                continue;
            }
            // MADV_WIPEONFORK: the child's pages there start as zeros.
            if child.area_of(va).is_some_and(|a| a.on_fork == OnFork::Wipe) {
                continue;
            }
            let flags = child
                .area_of(va)
                .map_or(Perm::R.pte(), |a| a.pte_of(va, Some(&m)));
            if !child.pt.map(va, m.frame().pa(), flags) {
                return Err(Errno::ENOMEM);
            }
            child.frames.insert(va, m);
        }
        child.peak = self.peak_pages();
        Ok(child)
    }
}

/// A private copy of a file page (a private mapping's first store to it).
fn copy_of(f: &Frame) -> Result<Frame, Errno> {
    let mut own = frame::alloc_reclaiming().ok_or(Errno::ENOMEM)?;
    own.bytes_mut().copy_from_slice(f.bytes());
    Ok(own)
}

/// A shared file mapping's table and the file pages [first, end) one range maps (`msync`).
pub type SharedRange = (Arc<SharedFile>, u64, u64);

/// Figures for `/proc/<pid>/stat` and `statm`.
impl AddrSpace {
    /// Bytes of user address space covered by areas (`VmSize`).
    pub fn mapped_bytes(&self) -> usize {
        self.areas.values().map(|a| a.end - a.start).sum()
    }

    /// User pages mapped right now (`VmRSS`, in pages).
    pub fn resident_pages(&self) -> usize {
        self.frames.len()
    }

    /// The most pages the space has held at once (Linux's `hiwater_rss`).
    pub fn peak_pages(&self) -> usize {
        self.peak.max(self.frames.len())
    }
}
