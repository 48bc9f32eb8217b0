//! Unix-domain sockets, as far as binding a name goes: `socket(AF_UNIX, ...)` gives a
//! descriptor, and `bind` creates the socket's node (type socket, mode 0777 less the umask,
//! owned by the caller) in the file system, which is what file-system tools and pjdfstest
//! use sockets for. No data moves: `connect` to a bound name is ECONNREFUSED, `listen` is
//! accepted, `accept` and the data calls are EOPNOTSUPP.

use alloc::sync::Arc;
use core::any::Any;

use vfs::{FileType, Metadata, Node, VfsResult};

use crate::sync::Mutex;

pub const AF_UNIX: usize = 1;

/// An unbound or bound socket (the descriptor's node).
pub struct Socket {
    /// The path it was bound to.
    pub bound: Mutex<Option<alloc::string::String>>,
    ino: u64,
}

static NEXT_INO: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(1 << 40);

impl Socket {
    pub fn new() -> Arc<Socket> {
        Arc::new(Socket {
            bound: Mutex::new(None),
            ino: NEXT_INO.fetch_add(1, core::sync::atomic::Ordering::Relaxed),
        })
    }
}

impl Node for Socket {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn getattr(&self) -> VfsResult<Metadata> {
        let c = crate::task::current_cred();
        let mut m = crate::fs::devfs::meta(self.ino, FileType::Socket, 0o777, 0, 0);
        m.uid = c.euid;
        m.gid = c.egid;
        Ok(m)
    }
}
