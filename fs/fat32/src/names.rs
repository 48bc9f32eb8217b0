//! The path/inode table of a mount (paths as stored on disk, numbers from a per-mount counter)
//! and the path and name helpers around it.

use alloc::collections::BTreeMap;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use vfs::{VfsError, VfsResult};

use crate::types::{NAME_MAX, ROOT_INO};

/// Path <-> inode number, for the life of the mount.
pub(crate) struct Names {
    by_path: BTreeMap<String, u64>,
    by_ino: BTreeMap<u64, String>,
    next: u64,
}

impl Names {
    pub(crate) fn new() -> Self {
        let mut n = Names {
            by_path: BTreeMap::new(),
            by_ino: BTreeMap::new(),
            next: ROOT_INO + 1,
        };
        n.by_path.insert(String::new(), ROOT_INO);
        n.by_ino.insert(ROOT_INO, String::new());
        n
    }

    pub(crate) fn path(&self, ino: u64) -> VfsResult<String> {
        self.by_ino.get(&ino).cloned().ok_or(VfsError::NotFound)
    }

    pub(crate) fn get(&self, path: &str) -> Option<u64> {
        self.by_path.get(path).copied()
    }

    pub(crate) fn ino(&mut self, path: &str) -> u64 {
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
    pub(crate) fn subtree(&self, path: &str) -> Vec<(String, u64)> {
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

    pub(crate) fn forget(&mut self, path: &str) {
        for (p, ino) in self.subtree(path) {
            self.by_path.remove(&p);
            self.by_ino.remove(&ino);
        }
    }

    pub(crate) fn rename(&mut self, from: &str, to: &str) {
        self.forget(to);
        for (p, ino) in self.subtree(from) {
            let new = alloc::format!("{to}{}", &p[from.len()..]);
            self.by_path.remove(&p);
            self.by_path.insert(new.clone(), ino);
            self.by_ino.insert(ino, new);
        }
    }
}

pub(crate) fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        alloc::format!("{dir}/{name}")
    }
}

/// `(parent, leaf)` of a non-root path.
pub(crate) fn split(path: &str) -> (&str, &str) {
    match path.rfind('/') {
        Some(i) => (&path[..i], &path[i + 1..]),
        None => ("", path),
    }
}

pub(crate) fn check_fat_name(name: &str) -> VfsResult<()> {
    vfs::check_name(name, NAME_MAX * 3)?;
    if name.encode_utf16().count() > NAME_MAX {
        return Err(VfsError::NameTooLong);
    }
    Ok(())
}
