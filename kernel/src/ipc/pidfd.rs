//! Process descriptors (pidfd_open): a descriptor that names one process for as long as it
//! is open, even after its pid is reused. Poll reports it readable (POLLIN) once the process
//! has exited; pidfd_send_signal signals it.

use alloc::sync::Arc;
use core::any::Any;

use abi::Errno;
use vfs::{FileType, Metadata, Node, VfsResult};

use crate::fs::file::OpenFile;
use crate::fs::path::Loc;
use crate::task::Process;

pub struct PidFd {
    pub process: Arc<Process>,
}

impl PidFd {
    /// Whether the process has exited (a zombie, or reaped already).
    pub fn exited(&self) -> bool {
        self.process.inner.lock().zombie.is_some()
    }
}

/// A new close-on-exec pidfd of `process` in the caller's table (pidfd_open, and clone's
/// `CLONE_PIDFD`): its descriptor number.
pub fn install(process: Arc<Process>, status_flags: u32) -> Result<i32, Errno> {
    let root = Loc::root()?;
    let loc = Loc {
        node: Arc::new(PidFd { process }),
        path: alloc::string::String::from("anon_inode:[pidfd]"),
        mount: root.mount,
    };
    let f = OpenFile::new(loc, true, false, status_flags)?;
    crate::task::with_current(|p| p.files.fds().install(f, true))
}

impl Node for PidFd {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn getattr(&self) -> VfsResult<Metadata> {
        Ok(crate::fs::devfs::meta(0, FileType::Regular, 0o600, 0, 0))
    }
}
