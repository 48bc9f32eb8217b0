//! The one error type of kvdb.

use core::fmt;

/// Why a kvdb operation failed.
///
/// Every failure of a write transaction leaves the store as it was before the transaction began:
/// the caller may retry, or drop the transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// The pager failed to read, write or sync.
    Io,
    /// The image is inconsistent; the string says which check failed. Never a panic.
    Corrupted(&'static str),
    /// The pager cannot grow to hold the pages this commit needs.
    NoSpace,
    /// A key is empty or longer than [`crate::Db::max_key_len`].
    KeyTooLarge,
    /// A value is longer than the store can describe (over 4 GiB).
    ValueTooLarge,
    /// `create_bucket` on a name that already exists (as a bucket or as a key).
    BucketExists,
    /// No bucket of that name.
    BucketNotFound,
    /// The key names a bucket where a value was expected, or a value where a bucket was.
    IncompatibleValue,
    /// A write operation on a read-only transaction.
    TxReadOnly,
    /// An earlier commit failed while writing its meta page, so the on-disk state is unknown;
    /// the store refuses further writes until it is reopened.
    Poisoned,
    /// `Options` are out of range (page size not a power of two in 1 KiB..=64 KiB).
    InvalidOptions,
}

/// Result alias used throughout the crate.
pub type Result<T> = core::result::Result<T, Error>;

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io => write!(f, "I/O error"),
            Error::Corrupted(why) => write!(f, "corrupted image: {why}"),
            Error::NoSpace => write!(f, "no space left"),
            Error::KeyTooLarge => write!(f, "key empty or too large"),
            Error::ValueTooLarge => write!(f, "value too large"),
            Error::BucketExists => write!(f, "bucket already exists"),
            Error::BucketNotFound => write!(f, "bucket not found"),
            Error::IncompatibleValue => write!(f, "key holds the other kind (bucket vs value)"),
            Error::TxReadOnly => write!(f, "write on a read-only transaction"),
            Error::Poisoned => write!(f, "an earlier commit failed mid-way; reopen the store"),
            Error::InvalidOptions => write!(f, "invalid options"),
        }
    }
}
