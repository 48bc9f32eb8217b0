//! FAT32 for dbfs-os: the `fatfs` crate (crates.io `starry-fatfs`) behind the vfs traits.
//!
//! Layer: below the kernel VFS (and the host tool `mkimage`), above a [`vfs::BlockDevice`]
//! (in the kernel: the block cache over virtio-blk). fatfs sees the device as a seekable byte
//! stream through `device`'s cursor, which turns every request into at most three device calls
//! with the aligned middle as one multi-sector request.
//!
//! Contract:
//! - [`Fat32Fs::format`] writes a fresh FAT32 volume; [`Fat32Fs::mount`] checks the boot
//!   sector, FSInfo, the root cluster and the device size, and returns an error (never panics)
//!   on a non-FAT or truncated device.
//! - Nodes are identified by their path from the root, spelled as stored on disk (FAT compares
//!   names case-insensitively, so `lookup("README")` finds `readme` and the node's path is
//!   `readme`). Each path gets an inode number from a per-mount counter the first time it is
//!   seen; it stays the same while the file system is mounted (root is 1). Numbers are not
//!   persistent across mounts: FAT has no inodes.
//! - Rename of an open file or directory moves the path (and the paths below it) to the new
//!   name, so the node keeps working and keeps its inode number. Unlink of a file that is
//!   not open, and rmdir, forget the path and free the data at once (FAT has no link count);
//!   unlink of an open file (`Node::open` without its `release`) moves the entry to a hidden
//!   orphan name in the root, so the file stays readable and writable, as on Linux, until its
//!   last release deletes it (`orphan`: hidden from readdir and lookup, and deleted by the
//!   next mount after a power cut).
//! - Readdir lists `.` and `..` (cookies 0 and 1), then the directory's entries in on-disk
//!   order; entry `i` has cookie `i + 2`, so a listing resumes by index. Removing entries between
//!   two calls shifts the indexes (an entry may be skipped, as POSIX allows for entries removed
//!   or added during a listing).
//!
//! What FAT cannot do (the errors are the ones Linux vfat gives):
//! - no symbolic links, hard links, device nodes, fifos or sockets: `NotPermitted` (EPERM);
//! - no permissions or owners: every node reports mode 0755 (Linux vfat's default with umask
//!   022; files keep the x bits so programs on the image can be executed), uid 0, gid 0.
//!   `setattr` accepts `perm` within 0o777 and uid/gid 0 and ignores them (like vfat with
//!   `quiet`); set-id bits or another owner are `NotPermitted`;
//! - link counts: 1 for a file, 2 + its subdirectories for a directory (as Linux vfat; counted
//!   with one listing of the directory at each `getattr`);
//! - no extended attributes (`Unsupported`); files at most 4 GiB - 1 (`FileTooLarge`);
//! - times: mtime 2 s granularity, atime one day (not updated by reads), ctime reported equal to
//!   mtime; range 1980..2107; stored as UTC. The root directory's times cannot be set (ignored);
//! - names: at most 255 UTF-16 units; `"*:<>?\|` are invalid (`InvalidInput`); case-insensitive;
//! - `RENAME_EXCHANGE` is `Unsupported`; rename over an existing target removes the target first
//!   and then moves the source (two steps, not atomic on a crash). Moving a directory to
//!   another parent rewrites its `..` entry (a third step).
//! - `sync` writes back every open file's directory entry and flushes the device; the FSInfo
//!   free-cluster hint and the clean flag are written at unmount (drop) only, so after a crash
//!   the free count is recomputed from the FAT (fatfs does this on the dirty flag).
//! - Corrupt chains: fatfs follows a directory's cluster chain until it ends, so a looping chain
//!   would hang it. Paths are therefore resolved here one component at a time and every
//!   directory's chain is checked (it must end within the volume's cluster count) before fatfs
//!   reads it; a file whose size exceeds the data area is `Corrupted` at open (fatfs's walks of a
//!   file's chain are bounded by its size). fatfs itself still does unchecked arithmetic on
//!   cluster numbers read from disk: in builds with overflow checks (tests, fuzzing) those are
//!   turned off for the fatfs crate only (see the workspace `Cargo.toml`), as in the kernel's
//!   release build, where they wrap and the access fails or lands in the wrong cluster of an
//!   already corrupt volume.
//!
//! Lock rules: one `spin::Mutex` per mount (`Mount::state`) guards the fatfs file system, the
//! table of open files and the path/inode table; every operation takes it once and does not
//! call back into the file system while holding it (readdir collects entries and calls the
//! sink after unlocking). Inside it, the device cursor's one-sector cache has its own lock
//! (always taken after, never before, the mount lock).
//!
//! Open files: fatfs walks a file's cluster chain from the start on every seek to another
//! cluster. To keep sequential I/O linear, each file node keeps its fatfs `File` (and so its
//! current cluster) open between calls, in a per-mount table (at most 64; `release` closes
//! it). That table needs `File<'static>`, which lives in `volume`, the only module with
//! `unsafe` (see its docs for why it is sound).
//!
//! Data path: fatfs moves file data one cluster per call. Reads, and writes that stay inside
//! the current size, instead use the file's layout (its runs of contiguous clusters, computed
//! once from the cluster chain and cached per node until a write grows the file or a truncate
//! runs) and go to the device directly, one request per contiguous run. Writes that grow the
//! file go through fatfs, which allocates the clusters.
//!
//! Modules, lowest first: `types` (the fatfs types over the device and the constants), `error`
//! (the one fatfs-to-vfs error conversion), `device` (the byte cursor over the block device),
//! `time` (the clock in FAT's format), `volume` (the table of open fatfs files), `names` (the
//! path/inode table), `layout` (a file's runs and the direct data path), `dir` (paths resolved
//! with chain checks, directory entries), `resize` (changing a file's size), `mount` (the
//! per-mount state behind the lock), `node` ([`FatNode`]: the node operations) and `fs`
//! ([`Fat32Fs`]: format, mount, statfs, sync).
#![cfg_attr(not(test), no_std)]
#![deny(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;

mod device;
mod dir;
mod error;
mod fs;
mod layout;
mod mount;
mod names;
mod node;
mod orphan;
mod resize;
mod time;
mod types;
mod volume;

pub use fs::Fat32Fs;
pub use node::FatNode;
pub use types::{FAT_PERM, MAX_FILE_SIZE, MSDOS_SUPER_MAGIC, NAME_MAX, ROOT_INO};
