//! The one conversion from kvdb errors to the vfs error ([`kv`]), used by every module that
//! calls the store.
//!
//! Layer: below everything else in dbfs; names only `kvdb` and `vfs`.

use vfs::VfsError;

/// The one conversion from kvdb errors to the vfs error.
pub(crate) fn kv(e: kvdb::Error) -> VfsError {
    match e {
        kvdb::Error::Io | kvdb::Error::Poisoned => VfsError::Io,
        kvdb::Error::Corrupted(_) => VfsError::Corrupted,
        kvdb::Error::NoSpace => VfsError::NoSpace,
        kvdb::Error::KeyTooLarge => VfsError::NameTooLong,
        kvdb::Error::ValueTooLarge => VfsError::FileTooLarge,
        kvdb::Error::TxReadOnly => VfsError::ReadOnly,
        kvdb::Error::InvalidOptions => VfsError::InvalidInput,
        // Our buckets exist by construction: their absence or a key of the wrong kind is
        // damage.
        kvdb::Error::BucketExists
        | kvdb::Error::BucketNotFound
        | kvdb::Error::IncompatibleValue => VfsError::Corrupted,
    }
}
