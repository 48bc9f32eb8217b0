//! The FUSE adapter: `fuser::Filesystem` requests turned into the same [`vfs::Node`] calls the
//! kernel makes on dbfs.
//!
//! # Contract
//! - FUSE inode numbers are dbfs inode numbers (`vfs::Metadata::ino`); dbfs's root is inode 1,
//!   which is also FUSE's root, so no translation table is needed.
//! - [`DbFuse::nodes`] keeps one [`NodeRef`](vfs::NodeRef) per inode the kernel knows, with
//!   its lookup count: every reply that hands the kernel an entry (lookup, create, mkdir,
//!   mknod, symlink, link, readdirplus) adds one; `forget` takes them away and drops the node
//!   at zero. The root is never dropped.
//! - An open file is a handle ([`DbFuse::handles`]) holding its node, so a file unlinked while
//!   open keeps working until `release`, which calls `Node::release` (dbfs frees it then).
//! - Every error is `abi::Errno::from(VfsError)`, the project's one errno table; names that are
//!   not UTF-8 (dbfs stores `str`) are `EILSEQ`. Nothing here panics on a request.
//! - Permission checks: dbfs leaves them to the caller; the tool mounts with
//!   `default_permissions` so the Linux kernel checks mode bits before calling us, unless only
//!   root can reach the mount (`mount_opts::kernel_checks_permissions`: root passes them).
//!   `access` is answered from the mode bits for mounts without it.
//! - Set-user-id and set-group-id bits are cleared here, not by the kernel
//!   (`FUSE_HANDLE_KILLPRIV_V2`, see [`DbFuse::kill_suid_sgid`]): on a write the kernel marks
//!   `FUSE_WRITE_KILL_SUIDGID`; on a truncate, fallocate or copy_file_range by a caller other
//!   than root (the kernel's flag for those is not passed on by fuser, or not sent); and
//!   dbfs's own `setattr` on a chown. `security.capability` is still removed by the kernel, which probes
//!   for it whenever the inode is not marked free of it.
//!
//! # Locks
//! `nodes` and `handles` are `RwLock`s held only to clone or insert an `Arc`, never across a
//! dbfs call, so requests run in parallel on the session's worker threads; reads take only
//! read locks here and dbfs's readers do not wait for each other.
//!
//! # Modules
//! `state` holds [`DbFuse`] and the helpers every request shares; `convert` the vfs-to-fuser
//! conversions. The requests are one `impl DbFuse` block per kind: `session` (init, destroy,
//! statfs), `entries` (lookup, forget and the calls that make or remove names), `attrs`,
//! `file_io`, `dirs` and `xattr`; `tests` drives them with probe replies.

mod attrs;
mod convert;
mod dirs;
mod entries;
mod file_io;
mod session;
mod state;
mod xattr;

#[cfg(test)]
mod tests;

pub use state::DbFuse;
pub(crate) use state::MAX_IO;
