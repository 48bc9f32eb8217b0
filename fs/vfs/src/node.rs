//! File-system and node traits, and the plain data they exchange.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::any::Any;

use crate::{VfsError, VfsResult};

/// A shared handle to a node.
pub type NodeRef = Arc<dyn Node>;

/// Read `buf.len()` bytes of `node` from `offset` on, or up to the end of the file: the
/// bytes read ([`Node::read_at`] may return fewer than asked before the end).
pub fn read_fully(node: &dyn Node, offset: u64, buf: &mut [u8]) -> VfsResult<usize> {
    let mut done = 0;
    while done < buf.len() {
        let n = node.read_at(offset + done as u64, &mut buf[done..])?;
        if n == 0 {
            break;
        }
        done += n;
    }
    Ok(done)
}

/// The type of a node, as `stat` and `getdents64` report it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FileType {
    /// A regular file: bytes at offsets.
    Regular,
    /// A directory: names of other nodes.
    Directory,
    /// A symbolic link: a path string resolved by the path walk.
    Symlink,
    /// A character device (`/dev/console`, `/dev/null`): no offsets, no size.
    CharDevice,
    /// A block device (`/dev/vdX`): sectors addressed by byte offset.
    BlockDevice,
    /// A named pipe (`mkfifo`).
    Fifo,
    /// A Unix-domain socket's name in the tree (`mknod` with `S_IFSOCK`).
    Socket,
}

impl FileType {
    /// The `S_IFMT` bits of this type.
    pub fn mode_bits(self) -> u32 {
        use abi::stat::*;
        match self {
            FileType::Regular => S_IFREG,
            FileType::Directory => S_IFDIR,
            FileType::Symlink => S_IFLNK,
            FileType::CharDevice => S_IFCHR,
            FileType::BlockDevice => S_IFBLK,
            FileType::Fifo => S_IFIFO,
            FileType::Socket => S_IFSOCK,
        }
    }

    /// The type encoded in the `S_IFMT` bits of `mode`, if any.
    pub fn from_mode(mode: u32) -> Option<FileType> {
        use abi::stat::*;
        Some(match mode & S_IFMT {
            S_IFREG => FileType::Regular,
            S_IFDIR => FileType::Directory,
            S_IFLNK => FileType::Symlink,
            S_IFCHR => FileType::CharDevice,
            S_IFBLK => FileType::BlockDevice,
            S_IFIFO => FileType::Fifo,
            S_IFSOCK => FileType::Socket,
            _ => return None,
        })
    }

    /// The `d_type` of `getdents64`.
    pub fn dirent_type(self) -> u8 {
        use abi::stat::*;
        match self {
            FileType::Regular => DT_REG,
            FileType::Directory => DT_DIR,
            FileType::Symlink => DT_LNK,
            FileType::CharDevice => DT_CHR,
            FileType::BlockDevice => DT_BLK,
            FileType::Fifo => DT_FIFO,
            FileType::Socket => DT_SOCK,
        }
    }
}

/// A point in time: seconds and nanoseconds since the Unix epoch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp {
    /// Whole seconds since 1970-01-01 00:00:00 UTC (negative: before it).
    pub sec: i64,
    /// Nanoseconds past `sec`, always below 1_000_000_000.
    pub nsec: u32,
}

/// Where a file system gets "now" from (the kernel's clock, the host's, or a test's).
pub trait Clock: Send + Sync {
    /// The current wall-clock time.
    fn now(&self) -> Timestamp;

    /// The whole seconds of [`Clock::now`], for decisions at the scale of seconds (whether a
    /// `relatime` update is due, on every read). A clock whose seconds cost less than the
    /// full time overrides it (the kernel's: one division, where the full time takes three
    /// and a split into seconds and nanoseconds).
    fn now_sec(&self) -> i64 {
        self.now().sec
    }
}

/// A clock that always reads zero, for file systems built without a time source.
pub struct ZeroClock;
impl Clock for ZeroClock {
    fn now(&self) -> Timestamp {
        Timestamp::default()
    }
}

/// What `stat` reports about a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Metadata {
    /// Inode number, unique within the file system for the node's lifetime (`st_ino`).
    pub ino: u64,
    /// What kind of node this is (the type bits of `st_mode`).
    pub ftype: FileType,
    /// Permission bits including setuid, setgid and sticky (`0o7777`); no type bits.
    pub perm: u32,
    /// Number of hard links: directory entries naming the node (`st_nlink`).
    pub nlink: u32,
    /// Owner user id (`st_uid`).
    pub uid: u32,
    /// Owner group id (`st_gid`).
    pub gid: u32,
    /// Size in bytes (for a symlink, the target's length).
    pub size: u64,
    /// Allocated space in 512-byte units.
    pub blocks: u64,
    /// Preferred I/O size.
    pub blksize: u32,
    /// Device number, for device nodes.
    pub rdev: u64,
    /// Last data access (`st_atim`).
    pub atime: Timestamp,
    /// Last data modification (`st_mtim`).
    pub mtime: Timestamp,
    /// Last change of data or attributes (`st_ctim`).
    pub ctime: Timestamp,
}

impl Metadata {
    /// `st_mode`: type bits | permission bits.
    pub fn mode(&self) -> u32 {
        self.ftype.mode_bits() | (self.perm & 0o7777)
    }
}

/// How to set one timestamp in [`SetAttr`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeSet {
    /// The file system's clock at the time of the call.
    Now,
    /// This exact time (`utimensat` with an explicit timespec).
    At(Timestamp),
}

/// The attributes `setattr` changes; `None` leaves a field alone. A file system applies all
/// given fields in one step (one transaction where it has them) and updates ctime.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SetAttr {
    /// New permission bits (`0o7777` mask), from `chmod`.
    pub perm: Option<u32>,
    /// New owner user id, from `chown`.
    pub uid: Option<u32>,
    /// New owner group id, from `chown`.
    pub gid: Option<u32>,
    /// New size in bytes (`truncate`): shrinking drops data, growing reads back zeros.
    pub size: Option<u64>,
    /// New access time (`utimensat`).
    pub atime: Option<TimeSet>,
    /// New modification time (`utimensat`).
    pub mtime: Option<TimeSet>,
}

/// The identity and initial attributes of a node being created.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NewNode {
    /// The kind of node to create.
    pub ftype: FileType,
    /// Permission bits after the caller applied its umask.
    pub perm: u32,
    /// Owner user id of the new node.
    pub uid: u32,
    /// Owner group id of the new node.
    pub gid: u32,
    /// Device number for character and block devices, else 0.
    pub rdev: u64,
}

impl NewNode {
    /// A root-owned node of `ftype` with `perm`.
    pub fn new(ftype: FileType, perm: u32) -> Self {
        NewNode {
            ftype,
            perm,
            uid: 0,
            gid: 0,
            rdev: 0,
        }
    }
}

/// One directory entry handed to a `readdir` sink.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DirEntry<'a> {
    /// Inode number of the entry's node (`d_ino`).
    pub ino: u64,
    /// Kind of the entry's node (`d_type`).
    pub ftype: FileType,
    /// The entry's name: one component, no `/`.
    pub name: &'a str,
    /// The cookie that resumes a listing right after this entry.
    pub next_cookie: u64,
}

/// Flags of `rename` (the `RENAME_*` values of renameat2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RenameFlags {
    /// Fail with `AlreadyExists` if the target exists.
    pub noreplace: bool,
    /// Atomically swap source and target, which must both exist.
    pub exchange: bool,
}

/// `statfs` figures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FsStats {
    /// Magic number identifying the file-system type (`f_type`).
    pub fs_type: u64,
    /// Size in bytes of the unit the block counts below are in (`f_bsize`).
    pub block_size: u64,
    /// Total data blocks of the file system (`f_blocks`).
    pub blocks: u64,
    /// Free blocks (`f_bfree`).
    pub blocks_free: u64,
    /// Free blocks an unprivileged user may use (`f_bavail`).
    pub blocks_available: u64,
    /// Total inodes the file system can hold (`f_files`).
    pub files: u64,
    /// Inodes still available (`f_ffree`).
    pub files_free: u64,
    /// Longest file name in bytes (`f_namelen`).
    pub name_max: u64,
}

/// How an `setxattr` treats an existing attribute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XattrMode {
    /// Create or replace.
    Any,
    /// XATTR_CREATE: fail with `AlreadyExists` if present.
    Create,
    /// XATTR_REPLACE: fail with `NoData` if absent.
    Replace,
}

/// A mounted file system.
pub trait FileSystem: Send + Sync {
    /// A short type name (`"fat32"`, `"dbfs"`, `"devfs"`).
    fn fs_name(&self) -> &'static str;
    /// The root directory.
    fn root(&self) -> VfsResult<NodeRef>;
    /// Space and inode figures.
    fn statfs(&self) -> VfsResult<FsStats> {
        Err(VfsError::Unsupported)
    }
    /// Write everything buffered to the device and flush it.
    fn sync(&self) -> VfsResult<()> {
        Ok(())
    }
    /// The mount turned read-only (or read-write again): nothing may reach the device while
    /// it is read-only, not even the access times reads would update (Linux: no atime update
    /// on a read-only mount). The VFS refuses every change itself (EROFS).
    fn set_readonly(&self, _readonly: bool) {}
    /// Power-off's last call: write everything back and leave the on-disk state of a clean
    /// unmount (FAT: the dirty flag cleared, FSInfo written). The file system is not used
    /// afterwards.
    fn unmount(&self) -> VfsResult<()> {
        self.sync()
    }
}

/// An inode. Every method has a default that refuses the operation with the errno Linux would
/// give for an object that cannot do it, so a file system implements only what it supports.
pub trait Node: Send + Sync {
    /// For downcasting the other node of `rename` / `link` to this file system's node type;
    /// a node of another file system is refused with `CrossDevice`.
    fn as_any(&self) -> &dyn Any;

    /// The node's attributes, as `stat` reports them.
    fn getattr(&self) -> VfsResult<Metadata>;
    /// The node's type. Path walks ask this for every component, so a file system that knows
    /// the type without reading attributes should override it.
    fn ftype(&self) -> VfsResult<FileType> {
        Ok(self.getattr()?.ftype)
    }
    /// Change the attributes given in `attr` (`chmod`, `chown`, `truncate`, `utimensat`);
    /// answers the attributes after the change.
    fn setattr(&self, _attr: &SetAttr) -> VfsResult<Metadata> {
        Err(VfsError::NotPermitted)
    }

    /// Called when a file description referring to this node is opened / closed for the last
    /// time; a file system may keep an unlinked node's data until the last release.
    fn open(&self) -> VfsResult<()> {
        Ok(())
    }
    /// The last file description referring to the node was closed.
    fn release(&self) -> VfsResult<()> {
        Ok(())
    }

    // ---- regular files ----
    /// Whether a [`Node::read_at`] or [`Node::read_scattered_at`] of `len` bytes of this
    /// regular file (or device) may run on several CPUs at once, alongside any other call of the
    /// file system, with nothing but the file system's own locks between them (a kernel then
    /// runs it without its big lock: its device waits poll, but for a device read into the
    /// caller's pages, which it sends, then sleeps through under the kernel's lock). False for
    /// file systems that rely on a kernel's lock, and for devices whose reads may sleep.
    fn parallel_read(&self, _len: usize) -> bool {
        false
    }
    /// Whether a [`Node::write_at`] or [`Node::write_gathered_at`] of `len` bytes of this
    /// regular file may run on several CPUs at once in the same way as [`Node::parallel_read`]:
    /// true only for writes the file system keeps in memory (not those that go to the device
    /// or must commit first), and only for file systems with locks of their own.
    fn parallel_write(&self, _len: usize) -> bool {
        false
    }
    /// Read at `offset`; returns the bytes read (0 at or past end of file).
    fn read_at(&self, _offset: u64, _buf: &mut [u8]) -> VfsResult<usize> {
        Err(self.not_a_file())
    }
    /// Write at `offset`, growing the file as needed; returns the bytes written.
    fn write_at(&self, _offset: u64, _buf: &[u8]) -> VfsResult<usize> {
        Err(self.not_a_file())
    }
    /// Write back at `offset` what a shared mapping stored into the file's pages (never past
    /// the size), not a write(2): the same as [`Node::write_at`] except for a file that
    /// refuses write(2) for a reason its existing mappings do not share (a memfd sealed with
    /// F_SEAL_FUTURE_WRITE keeps taking the stores of mappings made before the seal).
    fn write_back_at(&self, offset: u64, buf: &[u8]) -> VfsResult<usize> {
        self.write_at(offset, buf)
    }
    /// A scattered read (like `preadv` with one offset): the bytes at `offset` into the
    /// concatenation of `bufs`, same result as [`Node::read_at`] into the joined buffer. A file
    /// system that fills scattered pieces itself returns `Some`; the default `None` (also
    /// allowed for any read the file system prefers to get as one slice) asks the caller to
    /// read into one buffer and scatter it.
    fn read_scattered_at(&self, _offset: u64, _bufs: &mut [&mut [u8]]) -> Option<VfsResult<usize>> {
        None
    }
    /// A gathered write (like `pwritev` with one offset): the concatenation of `bufs` at
    /// `offset`, same result as [`Node::write_at`] of the joined bytes. A file system that
    /// copies from scattered pieces itself (so the kernel need not join a user's pages into a
    /// bounce buffer first) returns `Some`; the default `None` asks the caller to join them.
    fn write_gathered_at(&self, _offset: u64, _bufs: &[&[u8]]) -> Option<VfsResult<usize>> {
        None
    }
    /// Set the size; growing reads back zeros.
    fn truncate(&self, size: u64) -> VfsResult<()> {
        self.setattr(&SetAttr {
            size: Some(size),
            ..Default::default()
        })
        .map(|_| ())
    }
    /// Make `[offset, offset + len)` read as zeros, the size kept (fallocate's
    /// FALLOC_FL_PUNCH_HOLE), freeing the space the range held; the caller cuts the range to
    /// the size. `Unsupported` (EOPNOTSUPP, what Linux's vfat answers) from a file system
    /// without holes.
    fn punch_hole(&self, _offset: u64, _len: u64) -> VfsResult<()> {
        Err(VfsError::Unsupported)
    }
    /// Make this node's data (and metadata unless `data_only`) durable.
    fn fsync(&self, _data_only: bool) -> VfsResult<()> {
        Ok(())
    }

    // ---- directories ----
    /// The node named `name` in this directory (`NotFound` if none).
    fn lookup(&self, _name: &str) -> VfsResult<NodeRef> {
        Err(VfsError::NotADirectory)
    }
    /// Create a node of `new.ftype` (regular, directory, fifo, device...) named `name`.
    fn create(&self, _name: &str, _new: &NewNode) -> VfsResult<NodeRef> {
        Err(VfsError::NotADirectory)
    }
    /// Create a symbolic link `name` -> `target`.
    fn symlink(&self, _name: &str, _target: &str, _new: &NewNode) -> VfsResult<NodeRef> {
        Err(VfsError::NotADirectory)
    }
    /// Add the name `name` for the existing `target` node (a hard link).
    fn link(&self, _name: &str, _target: &dyn Node) -> VfsResult<()> {
        Err(VfsError::NotADirectory)
    }
    /// Remove a non-directory entry.
    fn unlink(&self, _name: &str) -> VfsResult<()> {
        Err(VfsError::NotADirectory)
    }
    /// Remove an empty directory entry.
    fn rmdir(&self, _name: &str) -> VfsResult<()> {
        Err(VfsError::NotADirectory)
    }
    /// Move `name` of this directory to `new_name` in `new_parent` (same file system).
    fn rename(
        &self,
        _name: &str,
        _new_parent: &dyn Node,
        _new_name: &str,
        _flags: RenameFlags,
    ) -> VfsResult<()> {
        Err(VfsError::NotADirectory)
    }
    /// List entries from `cookie` (0 = start). Entries `.` and `..` come first. The sink returns
    /// false to stop (e.g. the caller's buffer is full); the listing resumes from the
    /// `next_cookie` of the last entry the sink accepted.
    fn readdir(&self, _cookie: u64, _sink: &mut dyn FnMut(DirEntry<'_>) -> bool) -> VfsResult<()> {
        Err(VfsError::NotADirectory)
    }

    // ---- symlinks ----
    /// A symbolic link's target, as stored (`InvalidInput` for any other node).
    fn readlink(&self) -> VfsResult<String> {
        Err(VfsError::InvalidInput)
    }

    // ---- extended attributes ----
    /// The value of extended attribute `name` (`NoData` if the node has none of that name).
    fn getxattr(&self, _name: &str) -> VfsResult<Vec<u8>> {
        Err(VfsError::Unsupported)
    }
    /// Set extended attribute `name` to `value`, as `mode` allows.
    fn setxattr(&self, _name: &str, _value: &[u8], _mode: XattrMode) -> VfsResult<()> {
        Err(VfsError::Unsupported)
    }
    /// The names of the node's extended attributes.
    fn listxattr(&self) -> VfsResult<Vec<String>> {
        Err(VfsError::Unsupported)
    }
    /// Remove extended attribute `name` (`NoData` if absent).
    fn removexattr(&self, _name: &str) -> VfsResult<()> {
        Err(VfsError::Unsupported)
    }

    /// The error a file operation gives on this node: `IsADirectory` for a directory,
    /// `InvalidInput` otherwise.
    fn not_a_file(&self) -> VfsError {
        match self.getattr() {
            Ok(m) if m.ftype == FileType::Directory => VfsError::IsADirectory,
            _ => VfsError::InvalidInput,
        }
    }
}

/// Check a single path component as every file system must: not empty, no `/` or NUL, not `.`
/// or `..`, at most `max_len` bytes.
pub fn check_name(name: &str, max_len: usize) -> VfsResult<()> {
    if name.is_empty() || name == "." || name == ".." || name.bytes().any(|b| b == b'/' || b == 0) {
        return Err(VfsError::InvalidInput);
    }
    if name.len() > max_len {
        return Err(VfsError::NameTooLong);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mode_bits_round_trip() {
        for t in [
            FileType::Regular,
            FileType::Directory,
            FileType::Symlink,
            FileType::CharDevice,
            FileType::BlockDevice,
            FileType::Fifo,
            FileType::Socket,
        ] {
            assert_eq!(FileType::from_mode(t.mode_bits() | 0o644), Some(t));
        }
        assert_eq!(FileType::from_mode(0o644), None);
    }

    #[test]
    fn names_are_checked() {
        assert_eq!(check_name("a", 255), Ok(()));
        assert_eq!(check_name("", 255), Err(VfsError::InvalidInput));
        assert_eq!(check_name("..", 255), Err(VfsError::InvalidInput));
        assert_eq!(check_name("a/b", 255), Err(VfsError::InvalidInput));
        assert_eq!(
            check_name(&"x".repeat(256), 255),
            Err(VfsError::NameTooLong)
        );
    }

    #[test]
    fn every_error_has_its_own_errno() {
        use abi::Errno;
        let all = [
            VfsError::NotFound,
            VfsError::AlreadyExists,
            VfsError::NotADirectory,
            VfsError::IsADirectory,
            VfsError::DirectoryNotEmpty,
            VfsError::InvalidInput,
            VfsError::NameTooLong,
            VfsError::NoSpace,
            VfsError::ReadOnly,
            VfsError::CrossDevice,
            VfsError::TooManyLinks,
            VfsError::Loop,
            VfsError::PermissionDenied,
            VfsError::NotPermitted,
            VfsError::Io,
            VfsError::Corrupted,
            VfsError::Unsupported,
            VfsError::NoMemory,
            VfsError::FileTooLarge,
            VfsError::Busy,
            VfsError::NoData,
            VfsError::Range,
            VfsError::IllegalSeek,
            VfsError::NotBlockDevice,
            VfsError::BadHandle,
        ];
        let mut seen: Vec<i32> = all.iter().map(|e| Errno::from(*e).0).collect();
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), all.len());
        assert_eq!(Errno::from(VfsError::NotFound), Errno::ENOENT);
    }
}
