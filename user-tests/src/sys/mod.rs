//! Layer 1: safe syscall wrappers returning `Result<T, Errno>`.
//!
//! One function per Linux syscall, named after the libc function, with Rust types: paths are
//! `&str` (copied into a NUL-terminated buffer here), buffers are slices, structures are the
//! [`abi::stat`] layouts. Errors are the kernel's errno, never erased. [`File`] closes its
//! descriptor on drop; the free functions take raw descriptors so tests can misuse them.
//!
//! One module per subsystem, all re-exported here: `marshal` (the descriptor and result types,
//! the errno check and the path copy every wrapper uses), `files` (calls on open files and
//! their paths), `names` (the name space), `process` (time and processes), `memory` (mappings),
//! `file` ([`File`]), `dir` (directory listing), `xattr` (extended attributes), `aio`
//! (native AIO) and `socket` (Unix-domain socket names).

mod aio;
mod dir;
mod file;
mod files;
mod marshal;
mod memory;
mod names;
mod process;
mod socket;
mod xattr;

pub use aio::*;
pub use dir::*;
pub use file::*;
pub use files::*;
pub use marshal::{Fd, SysResult};
pub use memory::*;
pub use names::*;
pub use process::*;
pub use socket::*;
pub use xattr::*;
