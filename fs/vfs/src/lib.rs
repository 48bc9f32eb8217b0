//! The virtual-file-system contract of dbfs-os.
//!
//! Layer: between the kernel's VFS (mount table, path walk, open-file and fd tables) and each
//! file system (dbfs, fat32, the kernel's devfs). The same traits are implemented by the host
//! tools, so nothing here knows about the kernel.
//!
//! Contract:
//! - A [`FileSystem`] is a value (never a global); two mounts share nothing.
//! - A [`Node`] is an inode handle. Names passed to directory methods are single path
//!   components (no `/`, not empty, not `.` or `..`); the caller (the kernel's path walk or the
//!   FUSE adapter) resolves paths, `.`/`..`, symlinks and mount points.
//! - Methods a file system does not support return [`VfsError::Unsupported`] by default; no
//!   method may panic on any input, including a corrupt disk.
//! - Errors are one enum, [`VfsError`], turned into a Linux errno by exactly one table
//!   (`impl From<VfsError> for abi::Errno`).
//! - [`BlockDevice`] is the small fallible interface every disk-backed file system reads and
//!   writes through; the kernel's virtio-blk driver and block cache implement it, as do the
//!   host tools' image files and [`RamDisk`].
#![cfg_attr(not(any(test, feature = "std")), no_std)]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;

mod block;
#[cfg(feature = "conformance")]
pub mod conformance;
mod error;
mod node;

pub use block::{check_run, gather_to_runs, scatter_shape, BlockDevice, RamDisk, SECTOR_SIZE};
pub use error::{VfsError, VfsResult};
pub use node::*;
