//! The mount table and a resolved location (fs layer).
//!
//! File systems are `vfs::FileSystem` values mounted at canonical absolute paths; each
//! [`Mount`] gets an id, the `st_dev` of its files, never reused after an unmount. A [`Loc`]
//! is where a path led: a node, its canonical absolute path and the mount it lives in (path
//! resolution, in `path`, makes them; `ops::mount` and mount(2) add mounts, umount2(2)
//! removes them: `mount_dev`).

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::arch::lockcheck::{rank, SpinRwLock};
use abi::Errno;
use vfs::{FileSystem, FileType, NodeRef};

pub struct Mount {
    /// Canonical absolute path of the mount point ("/" for the root).
    pub path: String,
    pub fs: Arc<dyn FileSystem>,
    pub root: NodeRef,
    /// 1, 2, ... in mount order, never reused: the `st_dev` of its files.
    pub id: usize,
    /// The block device it was mounted from, if any.
    pub source: Option<Source>,
    /// Mounted read-only (MS_RDONLY): every change through it is EROFS.
    readonly: AtomicBool,
    /// Open files through this mount that may write (descriptions opened for writing): a
    /// remount read-only is EBUSY while there are any.
    writers: AtomicUsize,
}

impl Mount {
    pub fn is_readonly(&self) -> bool {
        self.readonly.load(Ordering::SeqCst)
    }

    /// EROFS if the mount is read-only.
    pub fn want_write(&self) -> Result<(), Errno> {
        if self.is_readonly() {
            Err(Errno::EROFS)
        } else {
            Ok(())
        }
    }

    /// Count an open file that may write through this mount (EROFS on a read-only mount);
    /// [`Mount::drop_writer`] when it closes. The count is raised before the flag is read
    /// and [`Mount::set_readonly`] sets the flag before it reads the count, so a writer and a
    /// remount that race cannot both succeed.
    pub fn add_writer(&self) -> Result<(), Errno> {
        self.writers.fetch_add(1, Ordering::SeqCst);
        if self.is_readonly() {
            self.drop_writer();
            return Err(Errno::EROFS);
        }
        Ok(())
    }

    pub fn drop_writer(&self) {
        self.writers.fetch_sub(1, Ordering::SeqCst);
    }

    /// Make the mount read-only (EBUSY while a file is open through it for writing) or
    /// read-write again.
    pub fn set_readonly(&self, ro: bool) -> Result<(), Errno> {
        if !ro {
            self.readonly.store(false, Ordering::SeqCst);
            self.fs.set_readonly(false);
            return Ok(());
        }
        if self.readonly.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        if self.writers.load(Ordering::SeqCst) != 0 {
            self.readonly.store(false, Ordering::SeqCst);
            return Err(Errno::EBUSY);
        }
        self.fs.set_readonly(true);
        Ok(())
    }
}

/// A mount's block device: its name (`/dev/vdc`) and device number.
#[derive(Clone)]
pub struct Source {
    pub name: String,
    pub rdev: u64,
}

static MOUNTS: SpinRwLock<Vec<Arc<Mount>>, { rank::MOUNT_TABLE }> = SpinRwLock::new(Vec::new());
static NEXT_ID: AtomicUsize = AtomicUsize::new(1);

/// Add a mount of `fs` (whose root is `root`) at `path`, which the caller has checked;
/// `readonly` for MS_RDONLY.
pub(super) fn add(
    path: &str,
    fs: Arc<dyn FileSystem>,
    root: NodeRef,
    source: Option<Source>,
    readonly: bool,
) {
    if readonly {
        fs.set_readonly(true);
    }
    let mut m = MOUNTS.write();
    m.push(Arc::new(Mount {
        path: String::from(path),
        fs,
        root,
        id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        source,
        readonly: AtomicBool::new(readonly),
        writers: AtomicUsize::new(0),
    }));
}

/// A mount of `fs` that is in no table and no directory (Linux's internal mounts, such as
/// the one memfd's files live on): its files get an `st_dev` of their own and count their
/// writers as any mount's do, and no path leads to them.
pub(super) fn internal(path: &str, fs: Arc<dyn FileSystem>, root: NodeRef) -> Arc<Mount> {
    Arc::new(Mount {
        path: String::from(path),
        fs,
        root,
        id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        source: None,
        readonly: AtomicBool::new(false),
        writers: AtomicUsize::new(0),
    })
}

/// Take the mount at `path` out of the table if `busy` (given the mount and the table, under
/// the table's lock) says it is not in use: EINVAL if nothing is mounted there.
pub(super) fn remove(
    path: &str,
    busy: impl FnOnce(&Arc<Mount>, &[Arc<Mount>]) -> bool,
) -> Result<Arc<Mount>, Errno> {
    let mut m = MOUNTS.write();
    let i = m.iter().position(|x| x.path == path).ok_or(Errno::EINVAL)?;
    if busy(&m[i], &m) {
        return Err(Errno::EBUSY);
    }
    Ok(m.remove(i))
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
    let mut p = String::with_capacity(dir.len() + 1 + name.len());
    p.push_str(dir);
    if !p.ends_with('/') {
        p.push('/');
    }
    p.push_str(name);
    p
}
