//! The [`vfs::FileSystem`] calls of a mounted [`DbFs`] (root, statfs, sync) and unmount
//! (dropping the last `Arc<DbFs>` commits the write-back cache).
//!
//! Layer: the top of dbfs, beside `node`: it calls into `writeback` (flush, barrier),
//! `reserve` (pages promised to buffered writes) and `node` (the root node).

use kvdb::Pager;
use vfs::{FileSystem, FileType, FsStats, NodeRef, VfsError, VfsResult};

use crate::error::kv;
use crate::format::{self, bucket, Superblock, DBFS_MAGIC, NAME_MAX, ROOT_INO};
use crate::mounted::DbFs;
use crate::state::Flush;
use crate::tuning::UNBOUNDED_REPORTED_BYTES;

impl<P: Pager + Send + Sync + 'static> FileSystem for DbFs<P> {
    fn fs_name(&self) -> &'static str {
        "dbfs"
    }

    fn root(&self) -> VfsResult<NodeRef> {
        self.node(ROOT_INO, FileType::Directory)
    }

    /// A read-only mount's reads leave atime alone (`noatime`): a buffered atime update would
    /// be written back to a device that must not change.
    fn set_readonly(&self, readonly: bool) {
        self.set_noatime(readonly);
    }

    /// Blocks are kvdb pages. The total is the pager's capacity ([`UNBOUNDED_REPORTED_BYTES`]
    /// for a pager that can grow without limit); free = pages on kvdb's freelist (also those
    /// waiting for a reader or a barrier) + pages the store can still grow by
    /// ([`kvdb::Db::free_pages`]); available = free minus kvdb's reserve for deletions
    /// ([`kvdb::reserve_pages`]) and minus the pages reserved for buffered writes. Files: inodes in use from the superblock; free inodes are
    /// estimated as one per free page.
    fn statfs(&self) -> VfsResult<FsStats> {
        // Pages freed by commits count as free at once, also those a reader or the next
        // barrier still holds: the allocator makes a barrier when it runs short, so they are
        // there for writes (a deleted file's space shows up in `df` right away).
        let (stats, free_pages) = (self.db.stats(), self.db.free_pages());
        let used_inodes = {
            let tx = self.db.begin_read().map_err(kv)?;
            let raw = tx
                .get_bucket(bucket::META)
                .map_err(kv)?
                .get(format::SUPERBLOCK_KEY)
                .map_err(kv)?;
            raw.and_then(|r| Superblock::decode(&r))
                .ok_or(VfsError::Corrupted)?
                .inode_count
        };
        let ps = self.db.page_size() as u64;
        let cap = self.db.pager().capacity();
        let cap = if cap == u64::MAX {
            UNBOUNDED_REPORTED_BYTES
        } else {
            cap
        };
        let total = (cap / ps).max(stats.page_count);
        // `free_pages` counts the pager's whole capacity past the store's end: keep only the
        // listed pages of it, then add the growth room of the reported size.
        let cap_pages = self.db.pager().capacity() / ps;
        let listed = free_pages.saturating_sub(cap_pages.saturating_sub(stats.page_count));
        let free = listed + total.saturating_sub(stats.page_count);
        // kvdb keeps pages back for deletions: free, but not available to writes; and pages
        // reserved for buffered writes are as good as used (see `reserve`).
        let promised = self.state.lock().wb.promised_pages();
        let available = free
            .saturating_sub(kvdb::reserve_pages(total))
            .saturating_sub(promised);
        Ok(FsStats {
            fs_type: DBFS_MAGIC,
            block_size: ps,
            blocks: total,
            blocks_free: free,
            blocks_available: available,
            files: used_inodes.saturating_add(free),
            files_free: free,
            name_max: NAME_MAX as u64,
        })
    }

    /// Commit everything buffered (one transaction; also when nothing is buffered, so pages
    /// freed by earlier commits become reusable).
    fn sync(&self) -> VfsResult<()> {
        self.flush(Flush::AllAlways)
    }
}

impl<P: Pager> Drop for DbFs<P> {
    /// Unmount: commit the write-back cache (errors cannot be reported here; call `sync` first
    /// to see them).
    fn drop(&mut self) {
        let _ = self.flush(Flush::All);
        let _ = self.barrier();
    }
}
