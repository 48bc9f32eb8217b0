//! Tunables: the default limits and thresholds of the write-back cache and of the direct read
//! and write paths, and the size `statfs` reports for an unbounded pager.
//!
//! Layer: constants only, named by every module that needs one and naming nothing; the
//! public ones are re-exported at the crate root.

/// Default write-back limit: a write that brings the buffered bytes to this commits them.
pub const DEFAULT_DIRTY_LIMIT: usize = 16 << 20;
/// [`DbFs::writeback_tick`](crate::DbFs::writeback_tick) commits buffered data older than
/// this many seconds.
pub const WRITEBACK_SECS: i64 = 5;
/// Default data chunk size.
pub const DEFAULT_CHUNK_SIZE: u32 = 16 << 10;
/// Reads of at least this many bytes move whole stored chunks with [`kvdb::Pager::read_into`]
/// when the pager says that beats a copy (the kernel window: a device read straight into the
/// caller's buffer, like FAT32's direct I/O for large runs).
pub const DIRECT_READ_MIN: usize = 128 << 10;
/// Reads of at most this many bytes inside one chunk may copy from a remembered chunk location
/// ([`ChunkLocs`](crate::snapshot_cache::ChunkLocs)) under the store's snapshot lock, without
/// a read transaction.
pub(crate) const SMALL_READ_MAX: usize = 64 << 10;
/// Writes whose whole chunks add up to at least this many bytes store those chunks at once, in
/// one transaction, without the write-back cache, when the pager says its
/// [`kvdb::Pager::write_direct`] beats a copy (the kernel window: a device write straight from
/// the caller's buffer, like FAT32 overwriting in place). See
/// [`DbFs::set_direct_write_min`](crate::DbFs::set_direct_write_min).
pub const DIRECT_WRITE_MIN: usize = 128 << 10;
/// `statfs` size reported for a pager without a size limit (e.g. a growing host file).
pub const UNBOUNDED_REPORTED_BYTES: u64 = 1 << 40;
