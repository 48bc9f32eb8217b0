//! The one error type of the file-system layer, and its one errno table.

use abi::Errno;

/// Why a file-system operation failed. Each variant maps to exactly one Linux errno.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VfsError {
    /// ENOENT: no such file or directory.
    NotFound,
    /// EEXIST: the name already exists.
    AlreadyExists,
    /// ENOTDIR: a directory operation on a non-directory.
    NotADirectory,
    /// EISDIR: a file operation on a directory.
    IsADirectory,
    /// ENOTEMPTY: removing or replacing a non-empty directory.
    DirectoryNotEmpty,
    /// EINVAL: an argument is out of range or inconsistent.
    InvalidInput,
    /// ENAMETOOLONG: a component is longer than the file system allows.
    NameTooLong,
    /// ENOSPC: no free blocks or inodes.
    NoSpace,
    /// EROFS: the file system is mounted read-only.
    ReadOnly,
    /// EXDEV: the operation would cross file systems.
    CrossDevice,
    /// EMLINK: too many links.
    TooManyLinks,
    /// ELOOP: too many symbolic links while resolving a path.
    Loop,
    /// EACCES: permission bits deny the access.
    PermissionDenied,
    /// EPERM: the operation is not permitted for this caller or this object.
    NotPermitted,
    /// EIO: the device failed.
    Io,
    /// EUCLEAN: the on-disk structures are inconsistent (corrupt image).
    Corrupted,
    /// EOPNOTSUPP: this file system does not implement the operation.
    Unsupported,
    /// ENOMEM: out of memory.
    NoMemory,
    /// EFBIG: the file would exceed the maximum size.
    FileTooLarge,
    /// EBUSY: the object is in use (e.g. a mount point).
    Busy,
    /// ENODATA: no such extended attribute.
    NoData,
    /// ERANGE: the caller's buffer is too small.
    Range,
    /// ESPIPE: seek on an object that has no position.
    IllegalSeek,
    /// ENOTTY / ENODEV-like: the object is not a block device.
    NotBlockDevice,
    /// EBADF: the handle is not open for this access.
    BadHandle,
}

/// Result of every file-system operation.
pub type VfsResult<T> = Result<T, VfsError>;

impl From<VfsError> for Errno {
    fn from(e: VfsError) -> Errno {
        match e {
            VfsError::NotFound => Errno::ENOENT,
            VfsError::AlreadyExists => Errno::EEXIST,
            VfsError::NotADirectory => Errno::ENOTDIR,
            VfsError::IsADirectory => Errno::EISDIR,
            VfsError::DirectoryNotEmpty => Errno::ENOTEMPTY,
            VfsError::InvalidInput => Errno::EINVAL,
            VfsError::NameTooLong => Errno::ENAMETOOLONG,
            VfsError::NoSpace => Errno::ENOSPC,
            VfsError::ReadOnly => Errno::EROFS,
            VfsError::CrossDevice => Errno::EXDEV,
            VfsError::TooManyLinks => Errno::EMLINK,
            VfsError::Loop => Errno::ELOOP,
            VfsError::PermissionDenied => Errno::EACCES,
            VfsError::NotPermitted => Errno::EPERM,
            VfsError::Io => Errno::EIO,
            VfsError::Corrupted => Errno::EUCLEAN,
            VfsError::Unsupported => Errno::EOPNOTSUPP,
            VfsError::NoMemory => Errno::ENOMEM,
            VfsError::FileTooLarge => Errno::EFBIG,
            VfsError::Busy => Errno::EBUSY,
            VfsError::NoData => Errno::ENODATA,
            VfsError::Range => Errno::ERANGE,
            VfsError::IllegalSeek => Errno::ESPIPE,
            VfsError::NotBlockDevice => Errno::ENOTBLK,
            VfsError::BadHandle => Errno::EBADF,
        }
    }
}

impl core::fmt::Display for VfsError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Display::fmt(&Errno::from(*self), f)
    }
}
