//! The `relatime` rule: when a read updates a file's atime.
//!
//! Layer: a pure function on an inode record, named by the read paths and the snapshot inode
//! cache; names only `format`.

use vfs::Timestamp;

use crate::format::Inode;

/// How old an atime may grow under `relatime` before a read updates it anyway: a day.
pub(crate) const RELATIME_SECS: i64 = 24 * 3600;

/// Linux `relatime`: update atime if it is not newer than mtime or ctime, or a day old.
pub(crate) fn relatime_due(i: &Inode, now: Timestamp) -> bool {
    // `<=` spelled out on the fields: the derived comparison goes through `partial_cmp` and
    // an `Option<Ordering>`, twice the instructions on every small read.
    let not_after =
        |a: Timestamp, b: Timestamp| a.sec < b.sec || (a.sec == b.sec && a.nsec <= b.nsec);
    not_after(i.atime, i.mtime)
        || not_after(i.atime, i.ctime)
        || now.sec.saturating_sub(i.atime.sec) >= RELATIME_SECS
}
