//! Directory requests: opendir, readdir, readdirplus (which hands the kernel entries, so it
//! counts lookups) and fsyncdir.

use fuser::{Errno, FileHandle, Generation, INodeNo, OpenFlags};
use vfs::VfsError;

use crate::answer::{AnsDir, AnsDirPlus, AnsEmpty, AnsOpen, Caller};

use super::convert::{attr, err, kind};
use super::state::{write_lock, DbFuse, Known, TTL};

// The operations keep the argument lists of fuser's `Filesystem` methods they stand for.
#[allow(clippy::too_many_arguments)]
impl DbFuse {
    /// Directories need no open state here (readdir starts from the cookie it is given, and
    /// the kernel opens only inodes it knows to be directories), so the first opendir answers
    /// ENOSYS: the kernel then opens directories without a request, closes them without a
    /// releasedir (two round trips less per opendir(3), e.g. per fsync of a directory), and
    /// caches their listings (`FOPEN_CACHE_DIR`, dropped when it changes the directory).
    pub(crate) fn opendir(
        &self,
        _req: &Caller,
        _ino: INodeNo,
        _flags: OpenFlags,
        reply: impl AnsOpen,
    ) {
        reply.error(Errno::ENOSYS);
    }

    pub(crate) fn readdir(
        &self,
        _req: &Caller,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: impl AnsDir,
    ) {
        let r = self.node(ino).and_then(|dir| {
            dir.readdir(offset, &mut |e| {
                !reply.add(INodeNo(e.ino), e.next_cookie, kind(e.ftype), e.name)
            })
            .map_err(err)
        });
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    pub(crate) fn readdirplus(
        &self,
        _req: &Caller,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: impl AnsDirPlus,
    ) {
        let r = (|| {
            let dir = self.node(ino)?;
            let dir_attr = attr(&dir.getattr().map_err(err)?);
            // Collect first: no dbfs snapshot is held while we look entries up.
            let mut entries = Vec::new();
            dir.readdir(offset, &mut |e| {
                entries.push((e.name.to_string(), e.next_cookie));
                entries.len() < 256
            })
            .map_err(err)?;
            for (name, cookie) in entries {
                if name == "." || name == ".." {
                    // The kernel does not take a reference for these.
                    if reply.add(dir_attr.ino, cookie, &name, &TTL, &dir_attr, Generation(0)) {
                        break;
                    }
                    continue;
                }
                let node = match dir.lookup(&name) {
                    Ok(n) => n,
                    Err(VfsError::NotFound) => continue, // removed since the listing
                    Err(e) => return Err(err(e)),
                };
                let m = node.getattr().map_err(err)?;
                let a = attr(&m);
                if reply.add(a.ino, cookie, &name, &TTL, &a, Generation(0)) {
                    break;
                }
                let mut nodes = write_lock(&self.nodes);
                nodes
                    .entry(m.ino)
                    .and_modify(|k| k.lookups += 1)
                    .or_insert(Known { node, lookups: 1 });
            }
            Ok(())
        })();
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    pub(crate) fn fsyncdir(
        &self,
        _req: &Caller,
        ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: impl AnsEmpty,
    ) {
        // Directory operations commit deferred: fsync of the directory is the barrier that
        // makes its entries (and every earlier commit) durable.
        if self.read_only {
            return reply.ok();
        }
        let r = self.node(ino).and_then(|n| n.fsync(false).map_err(err));
        match r.and_then(|()| self.fs.pager().sync_after_fsync().map_err(|_| Errno::EIO)) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }
}
