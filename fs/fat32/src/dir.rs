//! Directory handling under the mount lock: resolving paths one component at a time with each
//! directory's cluster chain checked first, finding entries by name, counting subdirectories
//! and rewriting a moved directory's `..` entry.

use alloc::string::String;

use fatfs::{Read, Seek, SeekFrom, Write};
use vfs::{VfsError, VfsResult};

use crate::error::vfs_error;
use crate::names::split;
use crate::types::{FatDir, FatDirEntry, FatFile, FatFs};

/// Fail with `Corrupted` if the cluster chain of `dir` has more clusters than the volume (it
/// loops). fatfs follows a directory's chain until it ends, so a loop would make every listing,
/// lookup or entry allocation in that directory spin forever; this walk only reads FAT entries
/// (a seek, no directory data) and stops after the volume's cluster count.
pub(crate) fn check_dir_chain(fs: &FatFs, dir: &FatDir<'_>) -> VfsResult<()> {
    // The FAT12/16 root directory is a fixed area, not a chain.
    let Some(stream) = dir.as_file() else {
        return Ok(());
    };
    let clusters = u64::from(fs.stats().map_err(vfs_error)?.total_clusters());
    let limit = (clusters + 1)
        .saturating_mul(u64::from(fs.cluster_size()))
        .min(u64::from(u32::MAX));
    let reached = stream
        .clone()
        .seek(SeekFrom::Start(limit))
        .map_err(vfs_error)?;
    if reached >= limit {
        return Err(VfsError::Corrupted);
    }
    Ok(())
}

/// The entry of `dir` named `name` (ignoring case, as FAT does), never `.` or `..`.
pub(crate) fn find_entry<'a>(dir: &FatDir<'a>, name: &str) -> VfsResult<Option<FatDirEntry<'a>>> {
    for entry in dir.iter() {
        let e = entry.map_err(vfs_error)?;
        if e.eq_name(name) && !is_dot(&e.file_name()) {
            return Ok(Some(e));
        }
    }
    Ok(None)
}

/// Open the directory at `path`, one component at a time, checking each directory's cluster
/// chain before it is read (see [`check_dir_chain`]; fatfs's own `open_dir` would walk a looping
/// directory forever).
pub(crate) fn open_dir<'a>(fs: &'a FatFs, path: &str) -> VfsResult<FatDir<'a>> {
    let mut dir = fs.root_dir();
    check_dir_chain(fs, &dir)?;
    if path.is_empty() {
        return Ok(dir);
    }
    for name in path.split('/') {
        let e = find_entry(&dir, name)?.ok_or(VfsError::NotFound)?;
        if !e.is_dir() {
            return Err(VfsError::NotADirectory);
        }
        dir = e.to_dir();
        check_dir_chain(fs, &dir)?;
    }
    Ok(dir)
}

/// Open the file at `path`. A size larger than the volume's data area is `Corrupted`: every
/// chain walk fatfs does on the file (seek, read, extents) is bounded by the size, so this keeps
/// a looping chain from being walked for up to 4 GiB worth of clusters.
pub(crate) fn open_file<'a>(fs: &'a FatFs, path: &str) -> VfsResult<FatFile<'a>> {
    let (parent, leaf) = split(path);
    let dir = open_dir(fs, parent)?;
    let e = find_entry(&dir, leaf)?.ok_or(VfsError::NotFound)?;
    if e.is_dir() {
        return Err(VfsError::IsADirectory);
    }
    let stats = fs.stats().map_err(vfs_error)?;
    if e.len() > u64::from(stats.total_clusters()) * u64::from(stats.cluster_size()) {
        return Err(VfsError::Corrupted);
    }
    Ok(e.to_file())
}

/// What a directory entry says about its node.
pub(crate) struct Found {
    pub(crate) name: String,
    pub(crate) is_dir: bool,
    pub(crate) size: u64,
    pub(crate) modified: fatfs::DateTime,
    pub(crate) accessed: fatfs::Date,
    /// A directory's subdirectories (its link count is 2 + this, as Linux vfat counts them);
    /// 0 until [`FatNode::stat_locked`](crate::node::FatNode::stat_locked) counts them.
    pub(crate) subdirs: u32,
}

/// The subdirectories of `dir`, `.` and `..` aside.
pub(crate) fn count_subdirs(dir: &FatDir<'_>) -> VfsResult<u32> {
    let mut n = 0;
    for entry in dir.iter() {
        let e = entry.map_err(vfs_error)?;
        if e.is_dir() && !is_dot(&e.file_name()) {
            n += 1;
        }
    }
    Ok(n)
}

pub(crate) fn is_dot(name: &str) -> bool {
    name == "." || name == ".."
}

/// The entry of `dir` whose name equals `name` (ignoring case, as FAT does).
pub(crate) fn find(dir: &FatDir<'_>, name: &str) -> VfsResult<Option<Found>> {
    Ok(find_entry(dir, name)?.map(|e| Found {
        name: e.file_name(),
        is_dir: e.is_dir(),
        size: e.len(),
        modified: e.modified(),
        accessed: e.accessed(),
        subdirs: 0,
    }))
}

/// Point the `..` entry of the directory at `moved` to its new parent `parent` (fatfs's rename
/// moves the entry but leaves `..` naming the old parent, which `fsck.vfat` reports). The
/// cluster number is copied from the parent's own `.` entry; the root is cluster 0 by the FAT
/// specification.
pub(crate) fn fix_dotdot(fs: &FatFs, moved: &str, parent: &str) -> VfsResult<()> {
    const DOT: &[u8; 11] = b".          ";
    const DOTDOT: &[u8; 11] = b"..         ";
    let mut cluster = [0u8; 4]; // high word (bytes 20..22), low word (26..28)
    if !parent.is_empty() {
        let dir = open_dir(fs, parent)?;
        let mut stream = dir.as_file().ok_or(VfsError::Corrupted)?.clone();
        let mut dot = [0u8; 32];
        stream.read_exact(&mut dot).map_err(vfs_error)?;
        if &dot[..11] != DOT {
            return Err(VfsError::Corrupted);
        }
        cluster = [dot[20], dot[21], dot[26], dot[27]];
    }
    let dir = open_dir(fs, moved)?;
    let mut stream = dir.as_file().ok_or(VfsError::Corrupted)?.clone();
    let mut dotdot = [0u8; 32];
    stream.seek(SeekFrom::Start(32)).map_err(vfs_error)?;
    stream.read_exact(&mut dotdot).map_err(vfs_error)?;
    if &dotdot[..11] != DOTDOT {
        return Err(VfsError::Corrupted);
    }
    dotdot[20..22].copy_from_slice(&cluster[..2]);
    dotdot[26..28].copy_from_slice(&cluster[2..]);
    stream.seek(SeekFrom::Start(32)).map_err(vfs_error)?;
    stream.write_all(&dotdot).map_err(vfs_error)
}
