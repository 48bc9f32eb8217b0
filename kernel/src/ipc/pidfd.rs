//! Process descriptors (pidfd_open): a descriptor that names one process for as long as it
//! is open, even after its pid is reused. Poll reports it readable (POLLIN) once the process
//! has exited; pidfd_send_signal signals it.

use alloc::sync::Arc;
use core::any::Any;

use vfs::{FileType, Metadata, Node, VfsResult};

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

impl Node for PidFd {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn getattr(&self) -> VfsResult<Metadata> {
        Ok(crate::fs::devfs::meta(0, FileType::Regular, 0o600, 0, 0))
    }
}
