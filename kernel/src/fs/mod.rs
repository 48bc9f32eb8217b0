//! The kernel VFS: mount table, path resolution, open files and descriptors.
//!
//! File systems are `vfs::FileSystem` values (fat32, devfs, and later dbfs) mounted at
//! absolute paths. Path resolution walks components from the root (or from a canonical
//! directory path: the cwd or a directory descriptor's path), resolving `.`, `..`, symbolic
//! links (at most [`MAX_SYMLINKS`]) and mount points; it keeps the chain of directories it
//! walked through, so `..` never needs the file system's help and never escapes a mount
//! upwards incorrectly.

pub mod devfs;
pub mod file;
pub mod lock;
pub mod path;
pub mod perm;
pub mod procfs;
pub mod window_pager;

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use abi::Errno;
use spin::RwLock;
use vfs::{FileSystem, NodeRef};

pub use path::Loc;

pub const MAX_SYMLINKS: usize = 40;

pub struct Mount {
    /// Canonical absolute path of the mount point ("/" for the root).
    pub path: String,
    pub fs: Arc<dyn FileSystem>,
    pub root: NodeRef,
    /// Index in the mount table + 1: the `st_dev` of its files.
    pub id: usize,
}

static MOUNTS: RwLock<Vec<Arc<Mount>>> = RwLock::new(Vec::new());

/// Mount `fs` at `path` (canonical, absolute). The mount point directory is created in the
/// parent file system if it does not exist, so listings show it.
pub fn mount(path: &str, fs: Arc<dyn FileSystem>) -> Result<(), Errno> {
    let root = fs.root()?;
    if path != "/" {
        let (parent, name) = path::resolve_parent(&Loc::root()?, path)?;
        match parent.node.lookup(&name) {
            Ok(_) => {}
            Err(vfs::VfsError::NotFound) => {
                parent
                    .node
                    .create(&name, &vfs::NewNode::new(vfs::FileType::Directory, 0o755))?;
            }
            Err(e) => return Err(e.into()),
        }
    }
    let mut m = MOUNTS.write();
    let id = m.len() + 1;
    m.push(Arc::new(Mount {
        path: String::from(path),
        fs,
        root,
        id,
    }));
    Ok(())
}

pub fn mount_at(path: &str) -> Option<Arc<Mount>> {
    MOUNTS.read().iter().find(|m| m.path == path).cloned()
}

pub fn mounts() -> Vec<Arc<Mount>> {
    MOUNTS.read().clone()
}

/// Work a mounted file system wants done periodically (dbfs's write-back timer).
type Periodic = alloc::boxed::Box<dyn Fn() + Send + Sync>;
static PERIODIC: spin::Mutex<Vec<Periodic>> = spin::Mutex::new(Vec::new());
static LAST_TICK_NS: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

/// Run `f` about once a second from now on.
pub fn register_periodic(f: Periodic) {
    PERIODIC.lock().push(f);
}

/// Called on timer interrupts (which only arrive in user mode, so no kernel lock is held):
/// runs the periodic work if a second has passed since the last run.
pub fn tick() {
    use core::sync::atomic::Ordering::Relaxed;
    let now = crate::arch::time::monotonic_ns();
    if now.saturating_sub(LAST_TICK_NS.load(Relaxed)) < 1_000_000_000 {
        return;
    }
    LAST_TICK_NS.store(now, Relaxed);
    // Another task may be inside the periodic work, given the CPU away in a device flush:
    // it does this round's work, and this task does not wait for it.
    let Some(list) = PERIODIC.try_lock() else {
        return;
    };
    for f in list.iter() {
        f();
    }
}

/// Write back every mounted file system (sync, shutdown).
pub fn sync_all() {
    crate::mm::file_pages::write_back_all();
    for m in mounts() {
        if let Err(e) = m.fs.sync() {
            log::error!("sync of {} failed: {}", m.path, e);
        }
    }
}

/// Write back every file system and power off with `code` as QEMU's exit status.
pub fn sync_and_power_off(code: u32) -> ! {
    sync_all();
    crate::arch::power::shutdown(code)
}

/// Create `name` in the directory `parent` (xv6's `create()`): checks that the caller may add
/// a name there, gives the node the caller's owner and the right group and mode
/// (`perm::new_node`), and returns its location. `perm` has the umask applied already; `rdev`
/// is the device number of a device node.
pub fn create(
    parent: &Loc,
    name: &str,
    ftype: vfs::FileType,
    perm: u32,
    rdev: u64,
) -> Result<Loc, Errno> {
    let c = perm::cred();
    perm::may_modify_dir(&c, parent)?;
    let mut new = perm::new_node(&c, parent, ftype, perm)?;
    new.rdev = rdev;
    let node = parent.node.create(name, &new)?;
    Ok(Loc {
        node,
        path: parent.child_path(name),
        mount: parent.mount.clone(),
    })
}

/// Read a whole regular file (for execve).
pub fn read_whole_file(cwd: &str, path: &str) -> Result<Vec<u8>, Errno> {
    let base = path::Loc::from_path(cwd)?;
    let loc = path::resolve(&base, path, true)?;
    let meta = loc.node.getattr()?;
    match meta.ftype {
        vfs::FileType::Regular => {}
        vfs::FileType::Directory => return Err(Errno::EACCES),
        _ => return Err(Errno::EACCES),
    }
    perm::check_meta(&perm::cred(), &meta, perm::MAY_EXEC)?;
    let size = usize::try_from(meta.size).map_err(|_| Errno::EFBIG)?;
    if size > 64 << 20 {
        return Err(Errno::E2BIG);
    }
    // A user can exec a large file: the buffer is reserved fallibly (ENOMEM, not an abort).
    let mut buf = crate::mm::heap::try_zeroed(size)?;
    let done = vfs::read_fully(&*loc.node, 0, &mut buf)?;
    buf.truncate(done);
    Ok(buf)
}
