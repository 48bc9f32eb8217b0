//! Unlinked open files: Linux keeps a file that is unlinked while open readable and writable
//! until its last close. FAT has no link count, so an unlink of an open file moves its entry
//! into the root directory under a hidden name (`.fat32-orphan-INO`, the node's inode number)
//! instead of deleting it; the node follows the entry (its path changes), and the last
//! release deletes the entry and frees the data. Orphan entries are hidden from `readdir`
//! and `lookup`, and a mount deletes any left by a power cut or a power-off with the file
//! still open.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use vfs::VfsResult;

use crate::dir::{find, open_dir};
use crate::error::vfs_error;
use crate::mount::State;
use crate::names::join;
use crate::types::FatFs;

const PREFIX: &str = ".fat32-orphan-";

/// Is `name` (a root directory entry's) an orphan's?
pub(crate) fn is_orphan_name(dir_path: &str, name: &str) -> bool {
    dir_path.is_empty() && name.starts_with(PREFIX)
}

/// Count one more open file description of `ino`.
pub(crate) fn opened(st: &mut State, ino: u64) {
    *st.opens.entry(ino).or_insert(0) += 1;
}

/// One open file description of `ino` fewer; at the last, delete its entry if it is an
/// orphan.
pub(crate) fn released(st: &mut State, ino: u64) -> VfsResult<()> {
    let Some(n) = st.opens.get_mut(&ino) else {
        return Ok(());
    };
    *n -= 1;
    if *n > 0 {
        return Ok(());
    }
    st.opens.remove(&ino);
    if !st.orphans.remove(&ino) {
        return Ok(());
    }
    let name = format!("{PREFIX}{ino}");
    st.runs.remove(&ino);
    st.vol.close(ino).map_err(vfs_error)?;
    st.vol.fs().root_dir().remove(&name).map_err(vfs_error)?;
    st.names.forget(&name);
    Ok(())
}

/// Is `ino` open? Then `unlink` keeps its data: [`keep`].
pub(crate) fn is_open(st: &State, ino: u64) -> bool {
    st.opens.get(&ino).is_some_and(|&n| n > 0)
}

/// Move the entry `name` of directory `parent` (the open file `ino`, closed in the volume's
/// table already) to the root as an orphan.
pub(crate) fn keep(st: &mut State, parent: &str, name: &str, ino: u64) -> VfsResult<()> {
    let orphan = format!("{PREFIX}{ino}");
    {
        let fs = st.vol.fs();
        let root = fs.root_dir();
        // One from an earlier life of this inode number (never released): gone first.
        if find(&root, &orphan)?.is_some() {
            root.remove(&orphan).map_err(vfs_error)?;
        }
        open_dir(fs, parent)?
            .rename(name, &root, &orphan)
            .map_err(vfs_error)?;
    }
    st.names.rename(&join(parent, name), &orphan);
    st.orphans.insert(ino);
    Ok(())
}

/// Delete the orphan entries a mount finds (their files were open at a power cut).
pub(crate) fn remove_leftovers(fs: &FatFs) -> VfsResult<usize> {
    let root = fs.root_dir();
    let mut names: Vec<String> = Vec::new();
    for entry in root.iter() {
        let e = entry.map_err(vfs_error)?;
        let name = e.file_name();
        if !e.is_dir() && name.starts_with(PREFIX) {
            names.push(name);
        }
    }
    for name in &names {
        root.remove(name).map_err(vfs_error)?;
    }
    Ok(names.len())
}
