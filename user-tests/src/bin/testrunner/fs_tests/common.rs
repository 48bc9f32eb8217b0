//! What the file-system test groups share: file-type predicates on a `stat` and a byte
//! pattern that shows misplaced data, and the names in a directory.

use user_tests::prelude::*;

use crate::{ensure, Check};

pub(super) fn is_dir(st: &Stat) -> bool {
    st.st_mode & S_IFMT == S_IFDIR
}

pub(super) fn is_reg(st: &Stat) -> bool {
    st.st_mode & S_IFMT == S_IFREG
}

/// A byte pattern that differs at every offset within a period of 251.
pub(super) fn pattern(len: usize, salt: u8) -> Vec<u8> {
    (0..len)
        .map(|i| ((i % 251) as u8).wrapping_add(salt))
        .collect()
}

/// Every entry of `dir` through getdents64 with a `buf`-byte buffer, checking each record.
pub(super) fn list(dir: &str, buf: usize) -> Result<Vec<(String, u8)>, String> {
    let mut out = Vec::new();
    for e in sys::read_dir_with(dir, buf).what("open directory")? {
        let e = e.what("getdents64")?;
        ensure!(
            (e.reclen as usize).is_multiple_of(8),
            "d_reclen {} of {:?} is not a multiple of 8",
            e.reclen,
            e.name
        );
        ensure!(
            e.reclen as usize >= dirent64_reclen(e.name.len()),
            "d_reclen {} too small for {:?}",
            e.reclen,
            e.name
        );
        ensure!(e.ino != 0, "d_ino of {:?} is 0", e.name);
        out.push((e.name, e.kind));
    }
    Ok(out)
}

pub(super) fn names_sorted(entries: &[(String, u8)]) -> Vec<String> {
    let mut v: Vec<String> = entries.iter().map(|(n, _)| n.clone()).collect();
    v.sort();
    v
}
