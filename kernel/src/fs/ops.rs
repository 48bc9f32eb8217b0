//! Path operations boot, exec and the system calls share (fs layer): mount a file system,
//! create a node with Linux's permission rules, read a whole program file.

use alloc::sync::Arc;
use alloc::vec::Vec;

use abi::Errno;
use vfs::FileSystem;

use super::path::{self, Loc};
use super::perm;

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
    super::mount_table::add(path, fs, root);
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
