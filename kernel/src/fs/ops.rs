//! Path operations boot, exec and the system calls share (fs layer): mount a file system,
//! create a node with Linux's permission rules, open a program for execve.

use alloc::sync::Arc;

use abi::Errno;
use vfs::FileSystem;

use super::path::{self, Loc};
use super::perm;

/// Mount `fs` (from the block device `source`, if any) at `path` (canonical, absolute), at
/// boot. The mount point directory is created in the parent file system if it does not exist,
/// so listings show it.
pub fn mount(
    path: &str,
    fs: Arc<dyn FileSystem>,
    source: Option<super::mount_table::Source>,
) -> Result<(), Errno> {
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
    super::mount_table::add(path, fs, root, source, false);
    Ok(())
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

/// Open a program for execve: a regular file the caller may execute (EACCES otherwise),
/// opened for reading (whatever its read permission: exec maps it, the program cannot read
/// it through this). Only its headers are read; its segments are mapped from its pages.
pub fn open_exec(
    cwd: &str,
    path: &str,
) -> Result<Arc<dyn crate::mm::file_pages::MappedFile>, Errno> {
    let base = path::Loc::from_path(cwd)?;
    let loc = path::resolve(&base, path, true)?;
    let meta = loc.node.getattr()?;
    if meta.ftype != vfs::FileType::Regular {
        return Err(Errno::EACCES);
    }
    perm::check_meta(&perm::cred(), &meta, perm::MAY_EXEC)?;
    let file: Arc<dyn crate::mm::file_pages::MappedFile> =
        super::file::OpenFile::new(loc, true, false, 0)?;
    Ok(file)
}
