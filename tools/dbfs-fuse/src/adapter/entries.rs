//! Requests on names: lookup and forget (the kernel's lookup counts), and the ones that make,
//! remove, rename or link an entry (mknod, mkdir, create, symlink, link, unlink, rmdir, rename).

use std::ffi::OsStr;
use std::path::Path;

use fuser::{Errno, Generation, INodeNo};
use vfs::{FileType, RenameFlags};

use crate::answer::{AnsCreate, AnsEmpty, AnsEntry, Caller};

use super::convert::{err, utf8};
use super::state::{lock, write_lock, DbFuse, TTL};

// The operations keep the argument lists of fuser's `Filesystem` methods they stand for.
#[allow(clippy::too_many_arguments)]
impl DbFuse {
    pub(crate) fn lookup(
        &self,
        _req: &Caller,
        parent: INodeNo,
        name: &OsStr,
        reply: impl AnsEntry,
    ) {
        let r = (|| {
            let dir = self.node(parent)?;
            let node = dir.lookup(utf8(name)?).map_err(err)?;
            self.remember(node)
        })();
        match r {
            Ok(a) => reply.entry(&TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    pub(crate) fn forget(&self, _req: &Caller, ino: INodeNo, nlookup: u64) {
        if ino == INodeNo::ROOT {
            return;
        }
        let mut nodes = write_lock(&self.nodes);
        if let Some(k) = nodes.get_mut(&ino.0) {
            k.lookups = k.lookups.saturating_sub(nlookup);
            if k.lookups == 0 {
                nodes.remove(&ino.0);
                // No file of it is open: no flush or fsync will come to report this.
                lock(&self.writeback_errors).remove(&ino.0);
            }
        }
    }

    pub(crate) fn mknod(
        &self,
        req: &Caller,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        rdev: u32,
        reply: impl AnsEntry,
    ) {
        let r = (|| {
            let ftype = FileType::from_mode(mode).ok_or(Errno::EINVAL)?;
            if ftype == FileType::Directory || ftype == FileType::Symlink {
                return Err(Errno::EINVAL);
            }
            self.make(
                parent,
                name,
                &Self::new_node(req, ftype, mode, umask, u64::from(rdev)),
                None,
            )
        })();
        match r {
            Ok(a) => reply.entry(&TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    pub(crate) fn mkdir(
        &self,
        req: &Caller,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: impl AnsEntry,
    ) {
        match self.make(
            parent,
            name,
            &Self::new_node(req, FileType::Directory, mode, umask, 0),
            None,
        ) {
            Ok(a) => reply.entry(&TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    pub(crate) fn unlink(
        &self,
        _req: &Caller,
        parent: INodeNo,
        name: &OsStr,
        reply: impl AnsEmpty,
    ) {
        match self
            .node(parent)
            .and_then(|d| d.unlink(utf8(name)?).map_err(err))
        {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    pub(crate) fn rmdir(&self, _req: &Caller, parent: INodeNo, name: &OsStr, reply: impl AnsEmpty) {
        match self
            .node(parent)
            .and_then(|d| d.rmdir(utf8(name)?).map_err(err))
        {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    pub(crate) fn symlink(
        &self,
        req: &Caller,
        parent: INodeNo,
        link_name: &OsStr,
        target: &Path,
        reply: impl AnsEntry,
    ) {
        match self.make(
            parent,
            link_name,
            &Self::new_node(req, FileType::Symlink, 0o777, 0, 0),
            Some(target),
        ) {
            Ok(a) => reply.entry(&TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    pub(crate) fn rename(
        &self,
        _req: &Caller,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: fuser::RenameFlags,
        reply: impl AnsEmpty,
    ) {
        let r = (|| {
            if flags.contains(fuser::RenameFlags::RENAME_WHITEOUT) {
                return Err(Errno::EINVAL);
            }
            let f = RenameFlags {
                noreplace: flags.contains(fuser::RenameFlags::RENAME_NOREPLACE),
                exchange: flags.contains(fuser::RenameFlags::RENAME_EXCHANGE),
            };
            let from = self.node(parent)?;
            let to = self.node(newparent)?;
            from.rename(utf8(name)?, &*to, utf8(newname)?, f)
                .map_err(err)
        })();
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    pub(crate) fn link(
        &self,
        _req: &Caller,
        ino: INodeNo,
        newparent: INodeNo,
        newname: &OsStr,
        reply: impl AnsEntry,
    ) {
        let r = (|| {
            let target = self.node(ino)?;
            let dir = self.node(newparent)?;
            dir.link(utf8(newname)?, &*target).map_err(err)?;
            self.remember(target)
        })();
        match r {
            Ok(a) => reply.entry(&TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    pub(crate) fn create(
        &self,
        req: &Caller,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        _flags: i32,
        reply: impl AnsCreate,
    ) {
        let r = (|| {
            let ftype = FileType::from_mode(mode).unwrap_or(FileType::Regular);
            if ftype != FileType::Regular {
                return Err(Errno::EINVAL);
            }
            let dir = self.node(parent)?;
            let node = dir
                .create(utf8(name)?, &Self::new_node(req, ftype, mode, umask, 0))
                .map_err(err)?;
            let a = self.remember(node.clone())?;
            let fh = self.open_handle(node)?;
            Ok((a, fh))
        })();
        match r {
            Ok((a, fh)) => {
                let flags = self.open_flags(a.ino.0);
                reply.created(&TTL, &a, Generation(0), fh, flags)
            }
            Err(e) => reply.error(e),
        }
    }
}
