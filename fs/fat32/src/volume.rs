//! The one place with `unsafe`: a fatfs `FileSystem` that owns the `File`s open on it.
//!
//! fatfs's `File<'a>` borrows its `FileSystem` (`&'a FileSystem`). To keep a file's position
//! (its current cluster) from one `read_at` to the next, which is what keeps sequential I/O
//! from re-walking the cluster chain from the first cluster on every call, the open files must
//! live next to the file system in the same mount value. That is a self-referential struct,
//! so the `File`s are stored as `File<'static>` here.
//!
//! Why this is sound:
//! - The `FileSystem` is allocated once with `Box::into_raw` and only freed in `Drop`, after
//!   every file has been dropped (files first: the explicit `clear` in `Drop`). Its address never
//!   changes while a `File` points to it; it is never moved or handed out mutably.
//! - No `File<'static>` (and no reference to one with that lifetime) leaves this module: callers
//!   reach a file only through a closure that is generic over the lifetime (`for<'v>`), so they
//!   can neither keep it nor put a file borrowing something else in its place. Files are
//!   created only by the `open` closure from the `&FatFs` given to it, hence borrow only our
//!   file system.
//! - fatfs types use `RefCell`/`Cell` and are neither `Sync` nor (through their `&FileSystem`)
//!   `Send`. A `Volume` is only ever reached through the mount's `spin::Mutex`, so at most one
//!   thread touches the file system and its files at a time; moving that exclusive access
//!   between threads is what `unsafe impl Send` asserts. `Volume` is deliberately not `Sync`.
#![allow(unsafe_code)]

use alloc::boxed::Box;
use alloc::collections::btree_map::Entry;
use alloc::collections::BTreeMap;
use core::ptr::NonNull;

use crate::types::{FatFile, FatFs};

/// How many files keep their position cached; beyond it the oldest (lowest key) is closed.
const MAX_OPEN_FILES: usize = 64;

pub struct Volume {
    /// Open files by inode number. Dropped before `fs` (see `Drop`).
    files: BTreeMap<u64, FatFile<'static>>,
    /// Owned; freed only in `Drop` or by `unmount` (then `None`: no further use).
    fs: Option<NonNull<FatFs>>,
}

// SAFETY: every access to a Volume (and so to the fatfs FileSystem and its Files, which share
// RefCells) happens through `&mut Volume` or `&Volume` obtained from the mount's spin::Mutex,
// i.e. from one thread at a time. Nothing borrowed from the Volume escapes the lock (see the
// module docs), so sending the Volume to another thread cannot leave aliases behind.
unsafe impl Send for Volume {}

impl Volume {
    pub fn new(fs: FatFs) -> Self {
        let fs = NonNull::from(Box::leak(Box::new(fs)));
        Volume {
            files: BTreeMap::new(),
            fs: Some(fs),
        }
    }

    /// The file system, for directory operations.
    pub fn fs(&self) -> &FatFs {
        // SAFETY: `fs` came from Box::leak, is freed only in Drop or `unmount` (which leave
        // `None`), and is only ever shared (never borrowed mutably), so a shared reference for
        // the life of `&self` is valid.
        unsafe { self.live().as_ref() }
    }

    /// The file system; using a volume after `unmount` is a kernel bug (only power-off
    /// unmounts, as the last thing before the machine stops).
    fn live(&self) -> NonNull<FatFs> {
        self.fs.expect("FAT volume used after unmount")
    }

    /// A clean unmount, as Linux's umount of a vfat leaves the disk: every open file's
    /// directory entry written back, the FSInfo sector's free-cluster count written and the
    /// boot sector's dirty flag cleared (fatfs sets it at the first write; `fsck.fat` reports a
    /// volume left with it). The volume is not used afterwards (power-off).
    pub fn unmount(&mut self) -> Result<(), fatfs::Error<crate::device::DeviceError>> {
        self.files.clear();
        match self.fs.take() {
            // SAFETY: `fs` came from Box::leak and no File referring to it remains (cleared
            // above; none escapes the module), so it may be taken back and consumed.
            Some(fs) => unsafe { Box::from_raw(fs.as_ptr()) }.unmount(),
            None => Ok(()),
        }
    }

    /// Run `f` on the open file of `ino`, opening it with `open` first if needed.
    pub fn with_file<R, E>(
        &mut self,
        ino: u64,
        open: impl for<'v> FnOnce(&'v FatFs) -> Result<FatFile<'v>, E>,
        f: impl for<'v> FnOnce(&mut FatFile<'v>) -> R,
    ) -> Result<R, E> {
        let live = self.live();
        let file = match self.files.entry(ino) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(v) => {
                // SAFETY: as in `fs()`; the reference is extended to 'static only for the file
                // stored here, which is dropped before the file system (module docs).
                let fs: &'static FatFs = unsafe { live.as_ref() };
                v.insert(open(fs)?)
            }
        };
        let result = f(file);
        if self.files.len() > MAX_OPEN_FILES {
            // Dropping a file writes its directory entry back. fatfs's Drop can only log a
            // failure; a failing device fails the next operation anyway.
            if let Some(victim) = self.files.keys().copied().find(|&k| k != ino) {
                self.files.remove(&victim);
            }
        }
        Ok(result)
    }

    /// Run `f` on the open file of `ino` if there is one.
    pub fn with_open_file<R>(
        &mut self,
        ino: u64,
        f: impl for<'v> FnOnce(&mut FatFile<'v>) -> R,
    ) -> Option<R> {
        self.files.get_mut(&ino).map(f)
    }

    /// Close the file of `ino`: its directory entry (size, first cluster, times) is written back.
    pub fn close(&mut self, ino: u64) -> Result<(), fatfs::Error<crate::device::DeviceError>> {
        match self.files.remove(&ino) {
            Some(mut file) => fatfs::Write::flush(&mut file),
            None => Ok(()),
        }
    }

    /// Write back the directory entries of every open file (they stay open).
    pub fn flush_all(&mut self) -> Result<(), fatfs::Error<crate::device::DeviceError>> {
        let mut result = Ok(());
        for file in self.files.values_mut() {
            if let Err(e) = fatfs::Write::flush(file) {
                result = Err(e);
            }
        }
        result
    }
}

impl Drop for Volume {
    fn drop(&mut self) {
        // Files first: each writes back its directory entry through the file system.
        self.files.clear();
        if let Some(fs) = self.fs.take() {
            // SAFETY: `fs` came from Box::leak and no File referring to it remains.
            drop(unsafe { Box::from_raw(fs.as_ptr()) });
        }
    }
}
