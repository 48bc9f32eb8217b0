//! What `/proc/<pid>/maps` shows of an address space: one line per area, in address order,
//! with Linux's fields (proc(5)).

use alloc::string::String;
use alloc::vec::Vec;

use super::addr_space::{AddrSpace, STACK_TOP};
use super::area::Perm;
use super::{page_ceil, PAGE_SIZE};

/// One area of an address space as `/proc/<pid>/maps` shows it.
pub struct MapEntry {
    pub start: usize,
    pub end: usize,
    pub read: bool,
    pub write: bool,
    pub exec: bool,
    /// MAP_SHARED (an `s`), else private (`p`).
    pub shared: bool,
    /// The file offset of `start` (0 for anonymous memory).
    pub offset: u64,
    /// The mapped file's mount id (its `st_dev`) and inode number; (0, 0) for anonymous memory.
    pub dev: usize,
    pub ino: u64,
    /// The file's path, or `[heap]`, `[stack]`, `[vdso]`; empty for other anonymous memory.
    pub name: String,
}

impl AddrSpace {
    /// The areas of this space, in address order.
    pub fn maps(&self) -> Vec<MapEntry> {
        let heap = (page_ceil(self.brk_start), page_ceil(self.brk));
        let vdso = crate::arch::vdso::BASE;
        self.areas
            .values()
            .map(|a| {
                let (mut dev, mut ino, mut offset, mut name) = (0, 0, 0, String::new());
                let mut shared = a.shared.is_some();
                if let Some(f) = &a.file {
                    dev = f.key.mount;
                    ino = f.key.ino;
                    offset = f.off0 + (a.start - f.va0) as u64;
                    name = f._open.0.path();
                    shared = !f.private;
                } else if a.start == vdso && a.end == vdso + PAGE_SIZE {
                    name = String::from("[vdso]");
                } else if a.end == STACK_TOP {
                    name = String::from("[stack]");
                } else if !shared && a.start >= heap.0 && a.end <= heap.1 && heap.0 < heap.1 {
                    name = String::from("[heap]");
                }
                MapEntry {
                    start: a.start,
                    end: a.end,
                    read: a.perm.contains(Perm::R),
                    write: a.perm.contains(Perm::W),
                    exec: a.perm.contains(Perm::X),
                    shared,
                    offset,
                    dev,
                    ino,
                    name,
                }
            })
            .collect()
    }

    /// Whether a shared mapping of file `key` here may store into it (made writable now or
    /// later: the file was open for writing when it was mapped, Linux's VM_SHARED with
    /// VM_MAYWRITE): memfd's F_SEAL_WRITE is refused while one exists.
    pub fn maps_file_writably(&self, key: crate::mm::file_pages::FileKey) -> bool {
        self.areas.values().any(|a| {
            a.file
                .as_ref()
                .is_some_and(|f| f.key == key && !f.private && f.may_write)
        })
    }
}
