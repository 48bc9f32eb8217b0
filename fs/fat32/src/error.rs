//! The one conversion from fatfs errors to [`vfs::VfsError`]; every module maps fatfs results
//! through it.

use vfs::VfsError;

use crate::device::DeviceError;
use crate::types::FatError;

/// The one conversion from fatfs errors to the vfs error.
pub(crate) fn vfs_error(e: FatError) -> VfsError {
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
