//! The areas of an address space and what they map (mm layer): an area's range and
//! permissions ([`Perm`]), shared anonymous memory ([`SharedAnon`]), file mappings
//! ([`FileArea`], through mm's `file_pages::MappedFile`), and a mapped page's kind
//! (private, shared, copy-on-write). `addr_space` owns them.

use alloc::collections::BTreeMap;
use alloc::sync::Arc;

use super::file_pages::{FileKey, FileRef, MappedFile, SharedFile};
use super::frame::{self, Frame};
use super::page_table::PteFlags;
use super::PAGE_SIZE;
use crate::sync::Mutex;

/// What one area costs the heap, its tree node's share included (for `heap::admit`).
pub(super) const AREA_BYTES: usize = 2 * core::mem::size_of::<Area>() + 16;

bitflags::bitflags! {
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Perm: u8 {
        const R = 1;
        const W = 2;
        const X = 4;
    }
}

impl Perm {
    /// The permissions of a clean shared file page in an area with these: writable ones
    /// become read-only (readable: RISC-V has no write-only pages).
    pub(super) fn clean(self) -> Perm {
        if self.contains(Perm::W) {
            (self - Perm::W) | Perm::R
        } else {
            self
        }
    }

    pub(super) fn pte(self) -> PteFlags {
        let mut f = PteFlags::U;
        if self.contains(Perm::R) {
            f |= PteFlags::R;
        }
        if self.contains(Perm::W) {
            f |= PteFlags::W | PteFlags::R;
        }
        if self.contains(Perm::X) {
            f |= PteFlags::X;
        }
        f
    }
}

/// The pages of one shared anonymous mapping, by page index from the mapping's start.
#[derive(Default)]
pub struct SharedAnon {
    pub(super) pages: Mutex<BTreeMap<usize, Arc<Frame>>>,
}

impl SharedAnon {
    /// The frame of page `index`, allocated (zeroed) at the first touch in any process.
    pub(super) fn page(&self, index: usize) -> Option<Arc<Frame>> {
        let mut pages = self.pages.lock();
        if let Some(f) = pages.get(&index) {
            return Some(f.clone());
        }
        let f = Arc::new(frame::alloc_reclaiming()?);
        pages.insert(index, f.clone());
        Some(f)
    }
}

#[derive(Clone)]
pub(super) struct Area {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) perm: Perm,
    /// For `MAP_SHARED | MAP_ANONYMOUS`: the shared pages, and the address of their page 0
    /// in this space (splitting the area by munmap or mprotect keeps both).
    pub(super) shared: Option<(Arc<SharedAnon>, usize)>,
    /// For a file mapping: which file, and where.
    pub(super) file: Option<FileArea>,
    /// mlock: the area's pages are locked in memory (Linux's VM_LOCKED, VM_LOCKONFAULT).
    pub(super) lock: Lock,
    /// What fork makes of it (madvise's MADV_DONTFORK, MADV_WIPEONFORK and their undoing).
    pub(super) on_fork: OnFork,
    /// It may not be made writable (mprotect: EACCES): a shared mapping of /dev/zero opened
    /// read-only, as a shared mapping of a file not open for writing.
    pub(super) no_write: bool,
}

/// What a forked child gets of an area.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnFork {
    /// The area, its pages shared copy-on-write (or shared, for shared mappings).
    #[default]
    Copy,
    /// The area, zero-filled (MADV_WIPEONFORK, private anonymous areas only; the child's
    /// area keeps the mark, as Linux's VM_WIPEONFORK).
    Wipe,
    /// Nothing: the child has no mapping there (MADV_DONTFORK, Linux's VM_DONTCOPY).
    Drop,
}

/// Whether an area is locked (mlock, mlock2, mlockall): its pages stay mapped while it is
/// (this kernel never swaps or reclaims a mapped anonymous page; a locked file page stays
/// mapped too), and they were faulted in when it was locked, or are as they are touched
/// (`OnFault`, MLOCK_ONFAULT).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Lock {
    #[default]
    None,
    Populated,
    OnFault,
}

/// What a file mapping maps: a file (kept open by the area), from which offset, and whether
/// stores reach the file (`MAP_SHARED`) or a private copy (`MAP_PRIVATE`).
#[derive(Clone)]
pub struct FileArea {
    /// The file's one table of pages: a shared mapping maps them; a private one maps them
    /// read-only until its first store to a page, which copies it. Declared before `_open`,
    /// so dropped first: the last area's table writes its dirty pages back while the file is
    /// still open (an unlinked file is freed when it is released).
    pub(super) table: Arc<SharedFile>,
    /// Held only so that the file stays open while it is mapped (as Linux's `vm_file`).
    pub(super) _open: FileRef,
    pub(super) key: FileKey,
    pub(super) private: bool,
    /// The file offset of address `va0` (the area's first address when it was made; splits
    /// keep it, so every part computes its offsets the same way).
    pub(super) va0: usize,
    pub(super) off0: u64,
    /// The file was opened for writing (a shared mapping may be made writable).
    pub(super) may_write: bool,
}

impl FileArea {
    /// A mapping of `file` (whose lock key is `key`, whose pages are `table`) from `offset`,
    /// private (`MAP_PRIVATE`) or shared.
    pub fn new(
        file: Arc<dyn MappedFile>,
        key: FileKey,
        table: Arc<SharedFile>,
        private: bool,
        offset: u64,
    ) -> FileArea {
        let may_write = file.writable();
        FileArea {
            _open: FileRef::new(file),
            key,
            table,
            private,
            va0: 0,
            off0: offset,
            may_write,
        }
    }

    /// The index of the file page mapped at the page `va`.
    pub(super) fn index(&self, va: usize) -> u64 {
        (self.off0 + (va - self.va0) as u64) / PAGE_SIZE as u64
    }
}

impl Area {
    pub(super) fn new(start: usize, end: usize, perm: Perm) -> Area {
        Area {
            start,
            end,
            perm,
            shared: None,
            file: None,
            lock: Lock::None,
            on_fork: OnFork::Copy,
            no_write: false,
        }
    }

    /// The page-table permissions of the page `va`, mapped to `m`: the area's, except that
    /// a shared file page is writable only once it is dirty (so its first store is seen), and
    /// a private mapping's view of the file's page never is (its first store copies it).
    pub(super) fn pte_of(&self, va: usize, m: Option<&Mapped>) -> PteFlags {
        if let Some(Mapped::Cow(_)) = m {
            return self.perm.clean().pte();
        }
        match &self.file {
            Some(f) if f.private && matches!(m, Some(Mapped::Shared(_))) => self.perm.clean().pte(),
            Some(f) if !f.private && !f.table.is_dirty(self.file_index(va)) => {
                self.perm.clean().pte()
            }
            _ => self.perm.pte(),
        }
    }

    pub(super) fn file_index(&self, va: usize) -> u64 {
        self.file.as_ref().map_or(0, |f| f.index(va))
    }
}

/// A mapped user page: the process's own, one of a shared mapping, or a private page that
/// a fork left shared between address spaces until one of them stores to it (copy-on-write:
/// mapped without write permission; the first store takes the frame back if no other space
/// holds it any more, else copies it, see [`AddrSpace::unshare`]).
pub(super) enum Mapped {
    Private(Frame),
    Shared(Arc<Frame>),
    Cow(Arc<Frame>),
}

impl Mapped {
    pub(super) fn frame(&self) -> &Frame {
        match self {
            Mapped::Private(f) => f,
            Mapped::Shared(f) | Mapped::Cow(f) => f,
        }
    }

    /// The same page for another address space (fork); `None` for a private page, which has
    /// to be made copy-on-write first.
    pub(super) fn share(&self) -> Option<Mapped> {
        match self {
            Mapped::Private(_) => None,
            Mapped::Shared(f) => Some(Mapped::Shared(f.clone())),
            Mapped::Cow(f) => Some(Mapped::Cow(f.clone())),
        }
    }
}

/// How a fault or a kernel access wants to use a page.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Access {
    Read,
    Write,
    Exec,
}

impl Access {
    /// The flags a user page's leaf entry must carry for this access.
    #[inline]
    pub(super) fn pte_needs(self) -> PteFlags {
        let perm = match self {
            Access::Read => PteFlags::R,
            Access::Write => PteFlags::W,
            Access::Exec => PteFlags::X,
        };
        perm | PteFlags::U
    }
}

/// A new anonymous area; a shared one maps `obj`'s pages, page 0 at `start`.
pub(super) fn anon_area(
    start: usize,
    len: usize,
    perm: Perm,
    obj: Option<Arc<SharedAnon>>,
) -> Area {
    Area {
        shared: obj.map(|o| (o, start)),
        ..Area::new(start, start + len, perm)
    }
}
