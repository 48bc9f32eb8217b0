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
//!   name, so the node keeps working and keeps its inode number. Unlink or rmdir forgets the
//!   path: the data is freed at once (FAT has no link count), and the old node answers
//!   `NotFound` afterwards (Linux keeps an unlinked open file readable; FAT here cannot).
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
#![cfg_attr(not(test), no_std)]
#![deny(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;

mod device;
mod time;
mod volume;

use alloc::collections::BTreeMap;
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::any::Any;

use fatfs::{Read, Seek, SeekFrom, Write};
use spin::Mutex;
use vfs::{
    BlockDevice, Clock, DirEntry, FileSystem, FileType, FsStats, Metadata, NewNode, Node, NodeRef,
    RenameFlags, SetAttr, TimeSet, Timestamp, VfsError, VfsResult, SECTOR_SIZE,
};

use device::{DeviceCursor, DeviceError, DeviceIo};
use time::ClockTime;
use volume::Volume;

pub(crate) type FatFs = fatfs::FileSystem<DeviceCursor, ClockTime, fatfs::LossyOemCpConverter>;
pub(crate) type FatFile<'a> = fatfs::File<'a, DeviceCursor, ClockTime, fatfs::LossyOemCpConverter>;
type FatDir<'a> = fatfs::Dir<'a, DeviceCursor, ClockTime, fatfs::LossyOemCpConverter>;
type FatDirEntry<'a> = fatfs::DirEntry<'a, DeviceCursor, ClockTime, fatfs::LossyOemCpConverter>;
type FatError = fatfs::Error<DeviceError>;

/// `f_type` of `statfs` for FAT (Linux `MSDOS_SUPER_MAGIC`).
pub const MSDOS_SUPER_MAGIC: u64 = 0x4d44;
/// Inode number of the root directory (as Linux vfat).
pub const ROOT_INO: u64 = 1;
/// Longest name, in UTF-16 units.
pub const NAME_MAX: usize = 255;
/// The permission bits every node reports.
pub const FAT_PERM: u32 = 0o755;
/// Largest file size FAT can record.
pub const MAX_FILE_SIZE: u64 = u32::MAX as u64;

/// FAT32 needs at least this many clusters.
const FAT32_MIN_CLUSTERS: u64 = 65_525;

/// The one conversion from fatfs errors to the vfs error.
fn vfs_error(e: FatError) -> VfsError {
    match e {
        fatfs::Error::Io(DeviceError(e)) => e,
        fatfs::Error::UnexpectedEof => VfsError::Io,
        fatfs::Error::WriteZero => VfsError::Io,
        fatfs::Error::InvalidInput => VfsError::InvalidInput,
        fatfs::Error::NotFound => VfsError::NotFound,
        fatfs::Error::AlreadyExists => VfsError::AlreadyExists,
        fatfs::Error::DirectoryIsNotEmpty => VfsError::DirectoryNotEmpty,
        fatfs::Error::CorruptedFileSystem => VfsError::Corrupted,
        fatfs::Error::NotEnoughSpace => VfsError::NoSpace,
        fatfs::Error::InvalidFileNameLength => VfsError::NameTooLong,
        fatfs::Error::UnsupportedFileNameCharacter => VfsError::InvalidInput,
        _ => VfsError::Io,
    }
}

/// A mounted FAT32 volume.
pub struct Fat32Fs {
    mount: Arc<Mount>,
}

/// Per-mount state shared by the file system and its nodes.
struct Mount {
    state: Mutex<State>,
    io: Arc<DeviceIo>,
    clock: Arc<dyn Clock>,
    cluster_size: u32,
}

struct State {
    vol: Volume,
    names: Names,
    /// Where the data of recently used files lives on disk, by inode number.
    runs: BTreeMap<u64, Vec<Run>>,
}

/// Forget the cached data layout of files once this many are cached.
const MAX_CACHED_LAYOUTS: usize = 256;

/// File bytes `[file_start, file_start + len)` are the contiguous device bytes starting at
/// `disk_start`. A file's runs cover its size; they change only when a write grows the file
/// past its size or a truncate runs, and are recomputed after either.
#[derive(Clone, Copy, Debug)]
struct Run {
    file_start: u64,
    disk_start: u64,
    len: u64,
}

/// The runs of `file` (size `size`), walking its cluster chain once.
fn file_runs(file: &mut FatFile<'_>, size: u64) -> VfsResult<Vec<Run>> {
    let mut runs: Vec<Run> = Vec::new();
    let mut at = 0u64;
    for extent in file.extents() {
        // The chain may be longer than the size says (or loop, if corrupt): stop at the size.
        if at >= size {
            break;
        }
        let e = extent.map_err(vfs_error)?;
        let len = u64::from(e.size);
        match runs.last_mut() {
            Some(r) if r.disk_start + r.len == e.offset => r.len += len,
            _ => runs.push(Run {
                file_start: at,
                disk_start: e.offset,
                len,
            }),
        }
        at += len;
    }
    if at < size {
        // The chain ends before the size: the entry or the FAT is corrupt.
        return Err(VfsError::Corrupted);
    }
    Ok(runs)
}

/// The cached runs of `ino`, computing them if needed.
fn runs_of<'r>(
    cache: &'r mut BTreeMap<u64, Vec<Run>>,
    ino: u64,
    file: &mut FatFile<'_>,
    size: u64,
) -> VfsResult<&'r [Run]> {
    if !cache.contains_key(&ino) {
        if cache.len() >= MAX_CACHED_LAYOUTS {
            cache.clear();
        }
        cache.insert(ino, file_runs(file, size)?);
    }
    Ok(cache.get(&ino).map_or(&[][..], |r| r.as_slice()))
}

/// Copy file bytes `[offset, offset + len)` between `buf` and the device, one device request per
/// contiguous run (plus sector read-modify-write at unaligned ends).
fn transfer(
    io: &DeviceIo,
    runs: &[Run],
    offset: u64,
    len: usize,
    mut step: impl FnMut(&DeviceIo, u64, core::ops::Range<usize>) -> VfsResult<()>,
) -> VfsResult<()> {
    let mut done = 0usize;
    while done < len {
        let at = offset + done as u64;
        let i = runs.partition_point(|r| r.file_start <= at);
        let run = match i.checked_sub(1).map(|i| runs[i]) {
            Some(r) if at < r.file_start + r.len => r,
            _ => return Err(VfsError::Corrupted),
        };
        let n = ((run.file_start + run.len - at) as usize).min(len - done);
        step(io, run.disk_start + (at - run.file_start), done..done + n)?;
        done += n;
    }
    Ok(())
}

/// Path <-> inode number, for the life of the mount.
struct Names {
    by_path: BTreeMap<String, u64>,
    by_ino: BTreeMap<u64, String>,
    next: u64,
}

impl Names {
    fn new() -> Self {
        let mut n = Names {
            by_path: BTreeMap::new(),
            by_ino: BTreeMap::new(),
            next: ROOT_INO + 1,
        };
        n.by_path.insert(String::new(), ROOT_INO);
        n.by_ino.insert(ROOT_INO, String::new());
        n
    }

    fn path(&self, ino: u64) -> VfsResult<String> {
        self.by_ino.get(&ino).cloned().ok_or(VfsError::NotFound)
    }

    fn get(&self, path: &str) -> Option<u64> {
        self.by_path.get(path).copied()
    }

    fn ino(&mut self, path: &str) -> u64 {
        if let Some(&ino) = self.by_path.get(path) {
            return ino;
        }
        let ino = self.next;
        self.next += 1;
        self.by_path.insert(path.to_string(), ino);
        self.by_ino.insert(ino, path.to_string());
        ino
    }

    /// `path` and every path below it.
    fn subtree(&self, path: &str) -> Vec<(String, u64)> {
        let prefix = alloc::format!("{path}/");
        let mut out: Vec<(String, u64)> = self
            .by_path
            .range(prefix.clone()..)
            .take_while(|(p, _)| p.starts_with(&prefix))
            .map(|(p, &i)| (p.clone(), i))
            .collect();
        if let Some(&ino) = self.by_path.get(path) {
            out.push((path.to_string(), ino));
        }
        out
    }

    fn forget(&mut self, path: &str) {
        for (p, ino) in self.subtree(path) {
            self.by_path.remove(&p);
            self.by_ino.remove(&ino);
        }
    }

    fn rename(&mut self, from: &str, to: &str) {
        self.forget(to);
        for (p, ino) in self.subtree(from) {
            let new = alloc::format!("{to}{}", &p[from.len()..]);
            self.by_path.remove(&p);
            self.by_path.insert(new.clone(), ino);
            self.by_ino.insert(ino, new);
        }
    }
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        alloc::format!("{dir}/{name}")
    }
}

/// `(parent, leaf)` of a non-root path.
fn split(path: &str) -> (&str, &str) {
    match path.rfind('/') {
        Some(i) => (&path[..i], &path[i + 1..]),
        None => ("", path),
    }
}

fn check_fat_name(name: &str) -> VfsResult<()> {
    vfs::check_name(name, NAME_MAX * 3)?;
    if name.encode_utf16().count() > NAME_MAX {
        return Err(VfsError::NameTooLong);
    }
    Ok(())
}

/// Fail with `Corrupted` if the cluster chain of `dir` has more clusters than the volume (it
/// loops). fatfs follows a directory's chain until it ends, so a loop would make every listing,
/// lookup or entry allocation in that directory spin forever; this walk only reads FAT entries
/// (a seek, no directory data) and stops after the volume's cluster count.
fn check_dir_chain(fs: &FatFs, dir: &FatDir<'_>) -> VfsResult<()> {
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
fn find_entry<'a>(dir: &FatDir<'a>, name: &str) -> VfsResult<Option<FatDirEntry<'a>>> {
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
fn open_dir<'a>(fs: &'a FatFs, path: &str) -> VfsResult<FatDir<'a>> {
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
fn open_file<'a>(fs: &'a FatFs, path: &str) -> VfsResult<FatFile<'a>> {
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
struct Found {
    name: String,
    is_dir: bool,
    size: u64,
    modified: fatfs::DateTime,
    accessed: fatfs::Date,
    /// A directory's subdirectories (its link count is 2 + this, as Linux vfat counts them);
    /// 0 until [`FatNode::stat_locked`] counts them.
    subdirs: u32,
}

/// The subdirectories of `dir`, `.` and `..` aside.
fn count_subdirs(dir: &FatDir<'_>) -> VfsResult<u32> {
    let mut n = 0;
    for entry in dir.iter() {
        let e = entry.map_err(vfs_error)?;
        if e.is_dir() && !is_dot(&e.file_name()) {
            n += 1;
        }
    }
    Ok(n)
}

fn is_dot(name: &str) -> bool {
    name == "." || name == ".."
}

/// The entry of `dir` whose name equals `name` (ignoring case, as FAT does).
fn find(dir: &FatDir<'_>, name: &str) -> VfsResult<Option<Found>> {
    Ok(find_entry(dir, name)?.map(|e| Found {
        name: e.file_name(),
        is_dir: e.is_dir(),
        size: e.len(),
        modified: e.modified(),
        accessed: e.accessed(),
        subdirs: 0,
    }))
}

fn write_zeros(file: &mut FatFile<'_>, mut count: u64) -> VfsResult<()> {
    let zeros = [0u8; 4096];
    while count > 0 {
        let n = count.min(zeros.len() as u64) as usize;
        file.write_all(&zeros[..n]).map_err(vfs_error)?;
        count -= n as u64;
    }
    Ok(())
}

/// Resize an open file: shrink frees clusters, growth writes zeros; the modification time
/// becomes `now` whether or not the size changed (truncate(2), ftruncate(2) and O_TRUNC update
/// it, as Linux vfat's truncate does).
fn resize(file: &mut FatFile<'_>, size: u64, now: Timestamp) -> VfsResult<()> {
    resize_data(file, size)?;
    #[allow(deprecated)]
    file.set_modified(time::to_fat(now));
    Ok(())
}

fn resize_data(file: &mut FatFile<'_>, size: u64) -> VfsResult<()> {
    if size > MAX_FILE_SIZE {
        return Err(VfsError::FileTooLarge);
    }
    let current = u64::from(file.size().unwrap_or(0));
    if size < current {
        file.seek(SeekFrom::Start(size)).map_err(vfs_error)?;
        file.truncate().map_err(vfs_error)?;
    } else if size > current {
        file.seek(SeekFrom::End(0)).map_err(vfs_error)?;
        write_zeros(file, size - current)?;
    }
    Ok(())
}

/// Point the `..` entry of the directory at `moved` to its new parent `parent` (fatfs's rename
/// moves the entry but leaves `..` naming the old parent, which `fsck.vfat` reports). The
/// cluster number is copied from the parent's own `.` entry; the root is cluster 0 by the FAT
/// specification.
fn fix_dotdot(fs: &FatFs, moved: &str, parent: &str) -> VfsResult<()> {
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

impl Fat32Fs {
    /// Write a fresh, empty FAT32 volume over the whole device.
    ///
    /// Clusters are 4 KiB when the device holds at least 65525 of them (about 260 MiB), else
    /// the largest of 2 KiB, 1 KiB and 512 bytes that still gives FAT32 enough clusters; a
    /// device too small for FAT32 even with 512-byte clusters (about 33 MiB) is `InvalidInput`.
    /// `label` is the volume label (at most 11 ASCII characters; stored upper-case).
    pub fn format(dev: Arc<dyn BlockDevice>, label: &str) -> VfsResult<()> {
        if label.len() > 11 || !label.bytes().all(|b| b.is_ascii_graphic() || b == b' ') {
            return Err(VfsError::InvalidInput);
        }
        let mut volume_label = [b' '; 11];
        for (dst, src) in volume_label.iter_mut().zip(label.bytes()) {
            *dst = src.to_ascii_uppercase();
        }
        let bytes = dev.size_bytes();
        if bytes / SECTOR_SIZE as u64 > u64::from(u32::MAX) {
            return Err(VfsError::InvalidInput);
        }
        let io = Arc::new(DeviceIo::new(dev));
        for cluster in [4096u32, 2048, 1024, 512] {
            // Leave room for the reserved sectors and the two FATs before asking fatfs.
            if bytes / u64::from(cluster) < FAT32_MIN_CLUSTERS + FAT32_MIN_CLUSTERS / 64 {
                continue;
            }
            let options = fatfs::FormatVolumeOptions::new()
                .fat_type(fatfs::FatType::Fat32)
                .bytes_per_cluster(cluster)
                .volume_label(volume_label);
            let mut cursor = DeviceCursor::new(io.clone());
            match fatfs::format_volume(&mut cursor, options) {
                Ok(()) => return io.flush(),
                // Layout rejected (too few clusters for FAT32): try smaller clusters.
                Err(fatfs::Error::InvalidInput) => continue,
                Err(e) => return Err(vfs_error(e)),
            }
        }
        Err(VfsError::InvalidInput)
    }

    /// Mount the FAT volume on `dev`. `clock` stamps new and modified entries.
    pub fn mount(dev: Arc<dyn BlockDevice>, clock: Arc<dyn Clock>) -> VfsResult<Arc<Fat32Fs>> {
        let io = Arc::new(DeviceIo::new(dev));
        if io.size() < SECTOR_SIZE as u64 {
            return Err(VfsError::InvalidInput);
        }
        let mut boot = [0u8; SECTOR_SIZE];
        io.read_bytes(0, &mut boot)?;
        let options = fatfs::FsOptions::new()
            .update_accessed_date(false)
            .time_provider(ClockTime(clock.clone()));
        let fs = FatFs::new(DeviceCursor::new(io.clone()), options).map_err(|e| match e {
            // A device shorter than its boot sector says reads past its end.
            fatfs::Error::UnexpectedEof | fatfs::Error::Io(DeviceError(VfsError::InvalidInput)) => {
                VfsError::Corrupted
            }
            e => vfs_error(e),
        })?;
        let stats = fs.stats().map_err(vfs_error)?;
        let cluster_size = fs.cluster_size();
        // The data area alone is total_clusters * cluster_size: a truncated image is corrupt.
        if u64::from(stats.total_clusters()) * u64::from(cluster_size) > io.size() {
            return Err(VfsError::Corrupted);
        }
        if fs.fat_type() == fatfs::FatType::Fat32 {
            let root_cluster = u32::from_le_bytes([boot[44], boot[45], boot[46], boot[47]]);
            if root_cluster < 2 || root_cluster >= stats.total_clusters().saturating_add(2) {
                return Err(VfsError::Corrupted);
            }
        }
        // The root directory must be readable (and its chain must end).
        check_dir_chain(&fs, &fs.root_dir())?;
        for entry in fs.root_dir().iter() {
            entry.map_err(vfs_error)?;
        }
        let state = State {
            vol: Volume::new(fs),
            names: Names::new(),
            runs: BTreeMap::new(),
        };
        Ok(Arc::new(Fat32Fs {
            mount: Arc::new(Mount {
                state: Mutex::new(state),
                io,
                clock,
                cluster_size,
            }),
        }))
    }

    /// Bytes per cluster of this volume.
    pub fn cluster_size(&self) -> u32 {
        self.mount.cluster_size
    }
}

impl FileSystem for Fat32Fs {
    fn fs_name(&self) -> &'static str {
        "fat32"
    }

    fn root(&self) -> VfsResult<NodeRef> {
        Ok(Arc::new(FatNode {
            mount: self.mount.clone(),
            ino: ROOT_INO,
            ftype: FileType::Directory,
        }))
    }

    fn statfs(&self) -> VfsResult<FsStats> {
        let st = self.mount.state.lock();
        let stats = st.vol.fs().stats().map_err(vfs_error)?;
        Ok(FsStats {
            fs_type: MSDOS_SUPER_MAGIC,
            block_size: u64::from(stats.cluster_size()),
            blocks: u64::from(stats.total_clusters()),
            blocks_free: u64::from(stats.free_clusters()),
            blocks_available: u64::from(stats.free_clusters()),
            files: 0,
            files_free: 0,
            name_max: NAME_MAX as u64,
        })
    }

    fn sync(&self) -> VfsResult<()> {
        let mut st = self.mount.state.lock();
        st.vol.flush_all().map_err(vfs_error)?;
        self.mount.io.flush()
    }
}

/// A file or directory of a mounted FAT volume (identified by path; see the crate docs).
pub struct FatNode {
    mount: Arc<Mount>,
    ino: u64,
    ftype: FileType,
}

impl FatNode {
    fn node(&self, ino: u64, is_dir: bool) -> NodeRef {
        let ftype = if is_dir {
            FileType::Directory
        } else {
            FileType::Regular
        };
        Arc::new(FatNode {
            mount: self.mount.clone(),
            ino,
            ftype,
        })
    }

    fn metadata(&self, found: &Found) -> Metadata {
        let cluster = u64::from(self.mount.cluster_size);
        let mtime = time::from_fat(found.modified);
        Metadata {
            ino: self.ino,
            ftype: if found.is_dir {
                FileType::Directory
            } else {
                FileType::Regular
            },
            perm: FAT_PERM,
            nlink: if found.is_dir {
                found.subdirs.saturating_add(2)
            } else {
                1
            },
            uid: 0,
            gid: 0,
            size: found.size,
            blocks: found.size.div_ceil(cluster) * (cluster / SECTOR_SIZE as u64),
            blksize: self.mount.cluster_size,
            rdev: 0,
            atime: time::from_fat_date(found.accessed),
            mtime,
            ctime: mtime,
        }
    }

    fn check_dir(&self) -> VfsResult<()> {
        if self.ftype != FileType::Directory {
            return Err(VfsError::NotADirectory);
        }
        Ok(())
    }

    fn check_file(&self) -> VfsResult<()> {
        if self.ftype == FileType::Directory {
            return Err(VfsError::IsADirectory);
        }
        Ok(())
    }

    /// What the on-disk entry (and the open file, whose size and times may be newer) says; for
    /// a directory, also how many subdirectories it has (one listing of it).
    fn stat_locked(&self, st: &mut State) -> VfsResult<Found> {
        let path = st.names.path(self.ino)?;
        if path.is_empty() {
            let zero = time::to_fat(Timestamp::default());
            return Ok(Found {
                name: String::new(),
                is_dir: true,
                size: 0,
                modified: zero,
                accessed: zero.date,
                subdirs: count_subdirs(&open_dir(st.vol.fs(), "")?)?,
            });
        }
        let (parent, leaf) = split(&path);
        let mut found = {
            let dir = open_dir(st.vol.fs(), parent)?;
            find(&dir, leaf)?.ok_or(VfsError::NotFound)?
        };
        if found.is_dir {
            found.subdirs = count_subdirs(&open_dir(st.vol.fs(), &path)?)?;
        }
        if let Some((size, modified, accessed)) = st
            .vol
            .with_open_file(self.ino, |f| (f.size(), f.modified(), f.accessed()))
        {
            found.size = u64::from(size.unwrap_or(0));
            found.modified = modified;
            found.accessed = accessed;
        }
        Ok(found)
    }

    /// The checks before refusing a node FAT cannot hold (a symlink or a hard link): this is a
    /// directory, the name is valid and free (Linux finds an existing name, EEXIST, before vfat
    /// refuses the operation, EPERM).
    fn refuse_new(&self, name: &str) -> VfsResult<()> {
        self.check_dir()?;
        check_fat_name(name)?;
        let st = self.mount.state.lock();
        let path = st.names.path(self.ino)?;
        let dir = open_dir(st.vol.fs(), &path)?;
        if find(&dir, name)?.is_some() {
            return Err(VfsError::AlreadyExists);
        }
        Ok(())
    }

    /// The node of `other` if it belongs to this mount.
    fn same_mount<'a>(&self, other: &'a dyn Node) -> VfsResult<&'a FatNode> {
        match other.as_any().downcast_ref::<FatNode>() {
            Some(n) if Arc::ptr_eq(&n.mount, &self.mount) => Ok(n),
            _ => Err(VfsError::CrossDevice),
        }
    }
}

impl Node for FatNode {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn ftype(&self) -> VfsResult<FileType> {
        Ok(self.ftype)
    }

    fn getattr(&self) -> VfsResult<Metadata> {
        let mut st = self.mount.state.lock();
        let found = self.stat_locked(&mut st)?;
        Ok(self.metadata(&found))
    }

    fn setattr(&self, attr: &SetAttr) -> VfsResult<Metadata> {
        if attr.perm.is_some_and(|p| p & !0o777 != 0)
            || attr.uid.is_some_and(|u| u != 0)
            || attr.gid.is_some_and(|g| g != 0)
        {
            return Err(VfsError::NotPermitted);
        }
        if attr.size.is_some() {
            self.check_file()?;
        }
        let now = self.mount.clock.now();
        let resolve = |t: TimeSet| match t {
            TimeSet::Now => now,
            TimeSet::At(t) => t,
        };
        let mut st = self.mount.state.lock();
        let path = st.names.path(self.ino)?;
        let times = attr.atime.is_some() || attr.mtime.is_some();
        if attr.size.is_some() {
            st.runs.remove(&self.ino);
        }
        if self.ftype == FileType::Regular && (attr.size.is_some() || times) {
            st.vol.with_file(
                self.ino,
                |fs| open_file(fs, &path),
                |file| -> VfsResult<()> {
                    if let Some(size) = attr.size {
                        resize(file, size, now)?;
                    }
                    #[allow(deprecated)]
                    {
                        if let Some(t) = attr.mtime {
                            file.set_modified(time::to_fat(resolve(t)));
                        }
                        if let Some(t) = attr.atime {
                            file.set_accessed(time::to_fat(resolve(t)).date);
                        }
                    }
                    Ok(())
                },
            )??;
        }
        if self.ftype == FileType::Directory && times && !path.is_empty() {
            // A directory's entry is edited through its own stream (the root has no entry:
            // its times stay unset, as on Linux vfat, where they live in memory only).
            let dir = open_dir(st.vol.fs(), &path)?;
            if let Some(stream) = dir.as_file() {
                let mut stream = stream.clone();
                #[allow(deprecated)]
                {
                    if let Some(t) = attr.mtime {
                        stream.set_modified(time::to_fat(resolve(t)));
                    }
                    if let Some(t) = attr.atime {
                        stream.set_accessed(time::to_fat(resolve(t)).date);
                    }
                }
                stream.flush().map_err(vfs_error)?;
            }
        }
        let found = self.stat_locked(&mut st)?;
        Ok(self.metadata(&found))
    }

    fn release(&self) -> VfsResult<()> {
        let mut st = self.mount.state.lock();
        st.runs.remove(&self.ino);
        st.vol.close(self.ino).map_err(vfs_error)
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> VfsResult<usize> {
        self.check_file()?;
        let mut st = self.mount.state.lock();
        let path = st.names.path(self.ino)?;
        let State { vol, runs, .. } = &mut *st;
        let io = &*self.mount.io;
        vol.with_file(
            self.ino,
            |fs| open_file(fs, &path),
            |file| -> VfsResult<usize> {
                let size = u64::from(file.size().unwrap_or(0));
                if offset >= size || buf.is_empty() {
                    return Ok(0);
                }
                let want = buf.len().min((size - offset) as usize);
                // Straight from the device: fatfs would read one cluster per call.
                let layout = runs_of(runs, self.ino, file, size)?;
                transfer(io, layout, offset, want, |io, pos, range| {
                    io.read_bytes(pos, &mut buf[range])
                })?;
                Ok(want)
            },
        )?
    }

    fn write_at(&self, offset: u64, buf: &[u8]) -> VfsResult<usize> {
        self.check_file()?;
        let end = offset
            .checked_add(buf.len() as u64)
            .ok_or(VfsError::FileTooLarge)?;
        if end > MAX_FILE_SIZE {
            return Err(VfsError::FileTooLarge);
        }
        let now = time::to_fat(self.mount.clock.now());
        let mut st = self.mount.state.lock();
        let path = st.names.path(self.ino)?;
        let State { vol, runs, .. } = &mut *st;
        let io = &*self.mount.io;
        vol.with_file(
            self.ino,
            |fs| open_file(fs, &path),
            |file| -> VfsResult<usize> {
                if buf.is_empty() {
                    return Ok(0);
                }
                let size = u64::from(file.size().unwrap_or(0));
                if end <= size {
                    // An overwrite inside the file: no allocation, straight to the device.
                    let layout = runs_of(runs, self.ino, file, size)?;
                    transfer(io, layout, offset, buf.len(), |io, pos, range| {
                        io.write_bytes(pos, &buf[range])
                    })?;
                    #[allow(deprecated)]
                    file.set_modified(now);
                    return Ok(buf.len());
                }
                // Growing: fatfs allocates clusters; the cached layout is stale afterwards.
                runs.remove(&self.ino);
                if offset > size {
                    file.seek(SeekFrom::End(0)).map_err(vfs_error)?;
                    write_zeros(file, offset - size)?;
                } else {
                    file.seek(SeekFrom::Start(offset)).map_err(vfs_error)?;
                }
                // Like Linux, a write that runs out of space part way is short: it reports the
                // bytes the file now holds, and only a write that stored nothing is ENOSPC.
                let mut done = 0;
                while done < buf.len() {
                    match file.write(&buf[done..]) {
                        Ok(0) if done == 0 => return Err(VfsError::NoSpace),
                        Ok(0) => break,
                        Ok(n) => done += n,
                        Err(fatfs::Error::NotEnoughSpace) if done > 0 => break,
                        Err(e) => return Err(vfs_error(e)),
                    }
                }
                Ok(done)
            },
        )?
    }

    fn truncate(&self, size: u64) -> VfsResult<()> {
        self.check_file()?;
        let now = self.mount.clock.now();
        let mut st = self.mount.state.lock();
        let path = st.names.path(self.ino)?;
        st.runs.remove(&self.ino);
        st.vol.with_file(
            self.ino,
            |fs| open_file(fs, &path),
            |file| resize(file, size, now),
        )?
    }

    fn fsync(&self, _data_only: bool) -> VfsResult<()> {
        let mut st = self.mount.state.lock();
        st.names.path(self.ino)?;
        if let Some(r) = st.vol.with_open_file(self.ino, |f| f.flush()) {
            r.map_err(vfs_error)?;
        }
        self.mount.io.flush()
    }

    fn lookup(&self, name: &str) -> VfsResult<NodeRef> {
        self.check_dir()?;
        check_fat_name(name)?;
        let mut st = self.mount.state.lock();
        let path = st.names.path(self.ino)?;
        let found = {
            let dir = open_dir(st.vol.fs(), &path)?;
            find(&dir, name)?.ok_or(VfsError::NotFound)?
        };
        let ino = st.names.ino(&join(&path, &found.name));
        Ok(self.node(ino, found.is_dir))
    }

    fn create(&self, name: &str, new: &NewNode) -> VfsResult<NodeRef> {
        self.check_dir()?;
        check_fat_name(name)?;
        let mut st = self.mount.state.lock();
        let path = st.names.path(self.ino)?;
        // An existing name is EEXIST whatever the type asked for (as Linux, which looks the
        // name up before it asks vfat, which has no FIFOs, sockets or devices: EPERM).
        let is_dir = {
            let dir = open_dir(st.vol.fs(), &path)?;
            if find(&dir, name)?.is_some() {
                return Err(VfsError::AlreadyExists);
            }
            let is_dir = match new.ftype {
                FileType::Regular => false,
                FileType::Directory => true,
                _ => return Err(VfsError::NotPermitted),
            };
            if is_dir {
                dir.create_dir(name).map_err(vfs_error)?;
            }
            is_dir
        };
        let child = join(&path, name);
        let ino = st.names.ino(&child);
        if !is_dir {
            // Keep the new file open: it is usually written next.
            st.vol.with_file(
                ino,
                |fs| open_dir(fs, &path)?.create_file(name).map_err(vfs_error),
                |_| (),
            )?;
        }
        Ok(self.node(ino, is_dir))
    }

    fn symlink(&self, name: &str, _target: &str, _new: &NewNode) -> VfsResult<NodeRef> {
        self.refuse_new(name)?;
        Err(VfsError::NotPermitted)
    }

    fn link(&self, name: &str, _target: &dyn Node) -> VfsResult<()> {
        self.refuse_new(name)?;
        Err(VfsError::NotPermitted)
    }

    fn unlink(&self, name: &str) -> VfsResult<()> {
        self.check_dir()?;
        check_fat_name(name)?;
        let mut st = self.mount.state.lock();
        let path = st.names.path(self.ino)?;
        let found = {
            let dir = open_dir(st.vol.fs(), &path)?;
            find(&dir, name)?.ok_or(VfsError::NotFound)?
        };
        if found.is_dir {
            return Err(VfsError::IsADirectory);
        }
        let child = join(&path, &found.name);
        // An open file would write its directory entry back over the deleted one.
        if let Some(ino) = st.names.get(&child) {
            st.runs.remove(&ino);
            st.vol.close(ino).map_err(vfs_error)?;
        }
        open_dir(st.vol.fs(), &path)?
            .remove(&found.name)
            .map_err(vfs_error)?;
        st.names.forget(&child);
        Ok(())
    }

    fn rmdir(&self, name: &str) -> VfsResult<()> {
        self.check_dir()?;
        check_fat_name(name)?;
        let mut st = self.mount.state.lock();
        let path = st.names.path(self.ino)?;
        let found = {
            let dir = open_dir(st.vol.fs(), &path)?;
            find(&dir, name)?.ok_or(VfsError::NotFound)?
        };
        if !found.is_dir {
            return Err(VfsError::NotADirectory);
        }
        let child = join(&path, &found.name);
        // fatfs lists the directory to see that it is empty: check its chain first.
        open_dir(st.vol.fs(), &child)?;
        open_dir(st.vol.fs(), &path)?
            .remove(&found.name)
            .map_err(vfs_error)?;
        st.names.forget(&child);
        Ok(())
    }

    fn rename(
        &self,
        name: &str,
        new_parent: &dyn Node,
        new_name: &str,
        flags: RenameFlags,
    ) -> VfsResult<()> {
        self.check_dir()?;
        let target_dir = self.same_mount(new_parent)?;
        target_dir.check_dir()?;
        check_fat_name(name)?;
        check_fat_name(new_name)?;
        if flags.exchange {
            return Err(VfsError::Unsupported);
        }
        let mut st = self.mount.state.lock();
        let src_parent = st.names.path(self.ino)?;
        let dst_parent = st.names.path(target_dir.ino)?;
        let (src, dst) = {
            let fs = st.vol.fs();
            let src = find(&open_dir(fs, &src_parent)?, name)?.ok_or(VfsError::NotFound)?;
            let dst = find(&open_dir(fs, &dst_parent)?, new_name)?;
            (src, dst)
        };
        let src_path = join(&src_parent, &src.name);
        let dst_path = join(&dst_parent, new_name);
        if src.is_dir
            && (dst_parent == src_path || dst_parent.starts_with(&alloc::format!("{src_path}/")))
        {
            return Err(VfsError::InvalidInput);
        }
        let mut case_only = false;
        if let Some(dst) = &dst {
            if src_parent == dst_parent && dst.name == src.name {
                // The same entry: FAT names are case-insensitive.
                if src.name == new_name {
                    return Ok(());
                }
                case_only = true;
            } else {
                if flags.noreplace {
                    return Err(VfsError::AlreadyExists);
                }
                match (src.is_dir, dst.is_dir) {
                    (true, false) => return Err(VfsError::NotADirectory),
                    (false, true) => return Err(VfsError::IsADirectory),
                    _ => {}
                }
            }
        }
        // Open files keep the position of their directory entry, which is about to move.
        for path in [
            &src_path,
            &join(
                &dst_parent,
                dst.as_ref().map_or(new_name, |d| d.name.as_str()),
            ),
        ] {
            if let Some(ino) = st.names.get(path) {
                st.runs.remove(&ino);
                st.vol.close(ino).map_err(vfs_error)?;
            }
        }
        {
            let fs = st.vol.fs();
            let src_dir = open_dir(fs, &src_parent)?;
            let dst_dir = open_dir(fs, &dst_parent)?;
            if case_only {
                // fatfs sees "a" -> "A" as a no-op: go through a temporary name.
                let tmp = alloc::format!(".rename-{}", self.ino);
                src_dir
                    .rename(&src.name, &src_dir, &tmp)
                    .map_err(vfs_error)?;
                src_dir
                    .rename(&tmp, &dst_dir, new_name)
                    .map_err(vfs_error)?;
            } else {
                if let Some(dst) = &dst {
                    if dst.is_dir {
                        // Listed by fatfs to see that it is empty: check its chain first.
                        open_dir(fs, &join(&dst_parent, &dst.name))?;
                    }
                    dst_dir.remove(&dst.name).map_err(vfs_error)?;
                }
                src_dir
                    .rename(&src.name, &dst_dir, new_name)
                    .map_err(vfs_error)?;
            }
            if src.is_dir && src_parent != dst_parent && fs.fat_type() == fatfs::FatType::Fat32 {
                fix_dotdot(fs, &dst_path, &dst_parent)?;
            }
        }
        if let Some(dst) = &dst {
            if !case_only {
                st.names.forget(&join(&dst_parent, &dst.name));
            }
        }
        st.names.rename(&src_path, &dst_path);
        Ok(())
    }

    fn readdir(&self, cookie: u64, sink: &mut dyn FnMut(DirEntry<'_>) -> bool) -> VfsResult<()> {
        self.check_dir()?;
        // Collected under the lock, delivered after it: the sink may call back into the fs.
        let mut entries: Vec<(u64, bool, String)> = Vec::new();
        {
            let mut st = self.mount.state.lock();
            let path = st.names.path(self.ino)?;
            if cookie == 0 {
                entries.push((self.ino, true, ".".to_string()));
            }
            if cookie <= 1 {
                let parent = if path.is_empty() {
                    ROOT_INO
                } else {
                    st.names.ino(split(&path).0)
                };
                entries.push((parent, true, "..".to_string()));
            }
            let skip = cookie.saturating_sub(2);
            let mut listed: Vec<(bool, String)> = Vec::new();
            {
                let dir = open_dir(st.vol.fs(), &path)?;
                let mut index = 0u64;
                for entry in dir.iter() {
                    let e = entry.map_err(vfs_error)?;
                    let name = e.file_name();
                    if is_dot(&name) {
                        continue;
                    }
                    if index >= skip {
                        listed.push((e.is_dir(), name));
                    }
                    index += 1;
                }
            }
            for (is_dir, name) in listed {
                let ino = st.names.ino(&join(&path, &name));
                entries.push((ino, is_dir, name));
            }
        }
        for (i, (ino, is_dir, name)) in entries.iter().enumerate() {
            // Entry i of this batch sits at position cookie + i of the listing.
            let next_cookie = cookie + i as u64 + 1;
            let ftype = if *is_dir {
                FileType::Directory
            } else {
                FileType::Regular
            };
            if !sink(DirEntry {
                ino: *ino,
                ftype,
                name,
                next_cookie,
            }) {
                break;
            }
        }
        Ok(())
    }
}
