//! The mount table and a resolved location (fs layer).
//!
//! File systems are `vfs::FileSystem` values mounted at canonical absolute paths; each
//! [`Mount`] gets an id, the `st_dev` of its files. A [`Loc`] is where a path led: a node,
//! its canonical absolute path and the mount it lives in (path resolution, in `path`, makes
//! them; `ops::mount` adds mounts).

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use abi::Errno;
use spin::RwLock;
use vfs::{FileSystem, FileType, NodeRef};

pub struct Mount {
    /// Canonical absolute path of the mount point ("/" for the root).
    pub path: String,
    pub fs: Arc<dyn FileSystem>,
    pub root: NodeRef,
    /// Index in the mount table + 1: the `st_dev` of its files.
    pub id: usize,
}

static MOUNTS: RwLock<Vec<Arc<Mount>>> = RwLock::new(Vec::new());

/// Add a mount of `fs` (whose root is `root`) at `path`, which the caller has checked.
pub(super) fn add(path: &str, fs: Arc<dyn FileSystem>, root: NodeRef) {
    let mut m = MOUNTS.write();
    let id = m.len() + 1;
    m.push(Arc::new(Mount {
        path: String::from(path),
        fs,
        root,
        id,
    }));
}

pub fn mount_at(path: &str) -> Option<Arc<Mount>> {
    MOUNTS.read().iter().find(|m| m.path == path).cloned()
}

pub fn mounts() -> Vec<Arc<Mount>> {
    MOUNTS.read().clone()
}

/// A resolved location: a node, its canonical absolute path and the mount it lives in.
#[derive(Clone)]
pub struct Loc {
    pub node: NodeRef,
    pub path: String,
    pub mount: Arc<Mount>,
}

impl Loc {
    pub fn root() -> Result<Loc, Errno> {
        let m = mount_at("/").ok_or(Errno::ENOENT)?;
        Ok(Loc {
            node: m.root.clone(),
            path: String::from("/"),
            mount: m,
        })
    }

    pub fn is_dir(&self) -> Result<bool, Errno> {
        Ok(self.node.ftype()? == FileType::Directory)
    }

    /// The canonical path of `name` inside this directory.
    pub fn child_path(&self, name: &str) -> String {
        join(&self.path, name)
    }
}

pub(super) fn join(dir: &str, name: &str) -> String {
    let mut p = String::from(dir);
    if !p.ends_with('/') {
        p.push('/');
    }
    p.push_str(name);
    p
}
