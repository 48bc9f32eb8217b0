//! The mount's life and whole-file-system requests: `init` (what is asked of the kernel),
//! `destroy`, `statfs`.

use std::sync::atomic::Ordering;

use fuser::{INodeNo, InitFlags, KernelConfig};
use vfs::FileSystem;

use crate::answer::{AnsStatfs, Caller};

use super::convert::err;
use super::state::{write_lock, DbFuse, MAX_IO};

// The operations keep the argument lists of fuser's `Filesystem` methods they stand for.
#[allow(clippy::too_many_arguments)]
impl DbFuse {
    pub(crate) fn init(&self, config: &mut KernelConfig) -> std::io::Result<()> {
        // Best effort: the kernel may refuse any of these and still work.
        let _ = config.set_max_write(MAX_IO);
        let _ = config.set_max_readahead(MAX_IO);
        let _ = config.add_capabilities(InitFlags::FUSE_PARALLEL_DIROPS);
        // An O_DIRECT read larger than `max_read` (mount_opts::MAX_READ) goes to the daemon
        // as several requests at once instead of one after the other, so the worker threads
        // serve one large read together (their image reads and copies overlap).
        let _ = config.add_capabilities(InitFlags::FUSE_ASYNC_DIO);
        // Set-id bits are cleared here (see the module doc); the kernel then skips its
        // `security.capability` probe on writes to an inode it has seen free of one.
        if !self.read_only {
            let _ = config.add_capabilities(InitFlags::FUSE_HANDLE_KILLPRIV_V2);
        }
        let _ = config
            .add_capabilities(InitFlags::FUSE_DO_READDIRPLUS | InitFlags::FUSE_READDIRPLUS_AUTO);
        if self.uring()
            && config
                .add_capabilities(InitFlags::FUSE_OVER_IO_URING)
                .is_err()
        {
            self.uring.store(false, Ordering::Relaxed);
        }
        if self.writeback_cache()
            && config
                .add_capabilities(InitFlags::FUSE_WRITEBACK_CACHE)
                .is_err()
        {
            // The kernel runs the mount without it: we then answer lseek ourselves.
            self.writeback_cache.store(false, Ordering::Relaxed);
        }
        Ok(())
    }

    pub(crate) fn destroy(&self) {
        self.stop_timer.store(true, Ordering::Relaxed);
        for (_, h) in write_lock(&self.handles).drain() {
            let _ = h.node.release();
        }
        if self.read_only {
            return;
        }
        if let Err(e) = self.fs.sync() {
            eprintln!("dbfs-fuse: sync at unmount failed: {e}");
        }
        if let Err(e) = self.fs.pager().sync_file() {
            eprintln!("dbfs-fuse: flushing the image at unmount failed: {e}");
        }
    }

    pub(crate) fn statfs(&self, _req: &Caller, _ino: INodeNo, reply: impl AnsStatfs) {
        match self.fs.statfs() {
            Ok(s) => reply.statfs(
                s.blocks,
                s.blocks_free,
                s.blocks_available,
                s.files,
                s.files_free,
                s.block_size as u32,
                s.name_max as u32,
                s.block_size as u32,
            ),
            Err(e) => reply.error(err(e)),
        }
    }
}
