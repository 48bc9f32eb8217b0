//! The kernel VFS (fs layer): mount table, path resolution, open files and descriptors.
//!
//! File systems are `vfs::FileSystem` values (fat32, devfs, and later dbfs) mounted at
//! absolute paths. Path resolution walks components from the root (or from a canonical
//! directory path: the cwd or a directory descriptor's path), resolving `.`, `..`, symbolic
//! links (at most `path::MAX_SYMLINKS`) and mount points; it keeps the chain of directories it
//! walked through, so `..` never needs the file system's help and never escapes a mount
//! upwards incorrectly.

//! Files: `mount_table` (mounts, `Loc`), `path` (resolution), `perm` (Linux's permission
//! rules), `ops` (mount, create, read a program), `file` (open files, descriptor tables),
//! `lock` (record locks), `flock` (whole-file locks), `writeback` (periodic work, sync), `devfs`, `procfs` (and `procsys`,
//! its `/proc/sys`; `proc_config`, its `/proc/config.gz`), and `window_pager` (dbfs's pages through the block layer's disk window).

pub mod devfs;
pub mod file;
mod flock;
pub mod lease;
pub mod lock;
pub mod memfd;
pub mod mount_dev;
mod mount_table;
mod ops;
pub mod path;
pub mod perm;
mod proc_config;
pub mod proc_fd;
pub mod procfs;
mod procsys;
pub mod sigio;
pub mod window_pager;
mod writeback;

pub use mount_table::{mount_at, mounts, Source};
pub use ops::{create, mount, open_exec};
pub use writeback::{drop_caches, register_periodic, sync_all, sync_and_power_off, tick};
