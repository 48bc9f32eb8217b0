//! The mounted file system value, [`DbFs`]: its fields (the store, the clock, the superblock
//! as mounted, the state behind `DbFs::state`) and the accessors that need nothing else.
//!
//! Layer: below the modules that add the file system's work as further `impl DbFs` blocks
//! (`read`, `write`, `writeback`, `reserve`, `mount`, `node`, `filesystem`); it names only
//! the lower ones (`format`, `state`, `fsck`, `error`). Mounting and formatting are in
//! `mount`, the [`vfs::FileSystem`] calls and unmount in `filesystem`.

use alloc::string::String;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;

use kvdb::sync::Mutex;
use kvdb::{Db, Pager, Tx};
use vfs::{Clock, Metadata, VfsResult};

use crate::error::kv;
use crate::format::{Inode, Superblock};
use crate::fsck;
use crate::state::State;

/// A mounted dbfs.
pub struct DbFs<P: Pager> {
    pub(crate) db: Db<P>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) params: Superblock,
    pub(crate) chunk_size: u64,
    /// The write-back cache, open counts and fsync waiters (see `state`; lock order in the
    /// crate docs).
    pub(crate) state: Mutex<State>,
    /// The `Arc` this value lives in, for handing out nodes that keep the mount alive.
    pub(crate) me: Weak<DbFs<P>>,
}

impl<P: Pager> DbFs<P> {
    /// The superblock as mounted (label, uuid, page and chunk size; counters as of mount).
    pub fn superblock(&self) -> &Superblock {
        &self.params
    }

    /// Bytes per data chunk.
    pub fn chunk_size(&self) -> u32 {
        self.params.chunk_size
    }

    /// The store's pager (counters, or the image of a `MemPager`).
    pub fn pager(&self) -> &P {
        self.db.pager()
    }

    /// Store pages written by direct writes whose commit has not inserted them yet
    /// (`kvdb::Stats::placed_pages`; `None` while a write transaction runs).
    pub fn placed_pages(&self) -> Option<u64> {
        self.db.stats().placed_pages
    }

    /// Check the committed image's consistency (one read snapshot; buffered writes are not
    /// looked at). Returns the problems found; empty means consistent.
    pub fn fsck(&self) -> VfsResult<Vec<String>> {
        let tx = self.db.begin_read().map_err(kv)?;
        fsck::check(&tx, self.chunk_size)
    }

    pub(crate) fn metadata(&self, ino: u64, i: &Inode) -> Metadata {
        Metadata {
            ino,
            ftype: i.ftype,
            perm: i.perm,
            nlink: i.nlink,
            uid: i.uid,
            gid: i.gid,
            size: i.size,
            blocks: i.alloc_bytes / 512,
            blksize: self.params.chunk_size,
            rdev: i.rdev,
            atime: i.atime,
            mtime: i.mtime,
            ctime: i.ctime,
        }
    }

    /// Begin a read transaction (for readers that do not care about the write-back cache).
    pub(crate) fn begin_read(&self) -> VfsResult<Tx<'_, P>> {
        self.db.begin_read().map_err(kv)
    }
}
