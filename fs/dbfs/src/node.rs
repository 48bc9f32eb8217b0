//! dbfs nodes: the vfs `Node` operations, each one read snapshot or one write transaction.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::any::Any;

use kvdb::Pager;
use vfs::{
    check_name, DirEntry, FileType, Metadata, NewNode, Node, NodeRef, RenameFlags, SetAttr,
    TimeSet, VfsError, VfsResult, XattrMode,
};

use crate::error::kv;
use crate::format::{
    be_u64, bucket, ino_key, name_key, CookieEntry, Inode, NameEntry, LINK_MAX, MAX_FILE_SIZE,
    NAME_MAX, SYMLINK_MAX, XATTR_NAME_MAX, XATTR_SIZE_MAX,
};
use crate::mounted::DbFs;
use crate::read::read_inode;

const S_ISUID: u32 = 0o4000;
const S_ISGID: u32 = 0o2000;
const S_IXGRP: u32 = 0o010;

/// A dbfs inode handle. Cheap: the inode number, its (immutable) type and the mount.
pub struct DbNode<P: Pager> {
    fs: Arc<DbFs<P>>,
    ino: u64,
    ftype: FileType,
}

impl<P: Pager + Send + Sync + 'static> DbNode<P> {
    pub(crate) fn new(fs: Arc<DbFs<P>>, ino: u64, ftype: FileType) -> Self {
        DbNode { fs, ino, ftype }
    }

    /// The inode number.
    pub fn ino(&self) -> u64 {
        self.ino
    }

    fn check_dir(&self) -> VfsResult<()> {
        if self.ftype == FileType::Directory {
            Ok(())
        } else {
            Err(VfsError::NotADirectory)
        }
    }

    /// A setattr of a regular file's atime and/or mtime alone (utimensat, or the times a
    /// kernel's write-back cache sends after writing: FUSE sends one for every file written and
    /// closed) is buffered with the file's data ([`DbFs::buffer_times`]) instead of a
    /// transaction of its own. `None`: not such a call, or it cannot be buffered now, so the
    /// caller runs the transaction.
    fn set_times_buffered(&self, attr: &SetAttr) -> VfsResult<Option<Metadata>> {
        let only_times = attr.perm.is_none()
            && attr.uid.is_none()
            && attr.gid.is_none()
            && attr.size.is_none()
            && (attr.atime.is_some() || attr.mtime.is_some());
        if !only_times
            || self.ftype != FileType::Regular
            || !self.fs.buffer_times(self.ino, attr.atime, attr.mtime)?
        {
            return Ok(None);
        }
        let i = self.fs.inode(self.ino)?;
        Ok(Some(self.fs.metadata(self.ino, &i)))
    }

    fn check_file(&self) -> VfsResult<()> {
        match self.ftype {
            FileType::Regular => Ok(()),
            FileType::Directory => Err(VfsError::IsADirectory),
            _ => Err(VfsError::InvalidInput),
        }
    }

    /// The error of a commit of this file's buffered data that nobody waited for (the
    /// write-back timer, the dirty limit, the last close) and that has not committed since,
    /// reported once: what close(2) answers on file systems that report write-back errors
    /// there (FUSE's `flush`). (Not in the vfs traits.)
    pub fn take_write_error(&self) -> VfsResult<()> {
        self.fs.take_write_error(self.ino)
    }

    /// `fallocate(mode 0)`: give `[offset, offset + len)` storage (zeros in holes) and grow the
    /// file to cover it. One transaction. (Not in the vfs traits yet.)
    pub fn fallocate(&self, offset: u64, len: u64) -> VfsResult<()> {
        self.check_file()?;
        if len == 0 {
            return Err(VfsError::InvalidInput);
        }
        let end = offset
            .checked_add(len)
            .filter(|&e| e <= MAX_FILE_SIZE)
            .ok_or(VfsError::FileTooLarge)?;
        let ino = self.ino;
        self.fs.write_op(|t| {
            let mut i = t.inode(ino)?;
            let old = i.size;
            t.allocate(ino, &mut i, offset, end)?;
            if i.size != old {
                i.mtime = t.now;
                i.ctime = t.now;
            }
            t.set_inode(ino, i);
            Ok(())
        })
    }

    fn same_fs<'a>(&self, other: &'a dyn Node) -> VfsResult<&'a DbNode<P>> {
        match other.as_any().downcast_ref::<DbNode<P>>() {
            Some(n) if Arc::ptr_eq(&n.fs, &self.fs) => Ok(n),
            _ => Err(VfsError::CrossDevice),
        }
    }

    /// Create a node of any type (symlinks with their target) in this directory.
    fn make(&self, name: &str, new: &NewNode, target: Option<&str>) -> VfsResult<NodeRef> {
        self.check_dir()?;
        check_name(name, NAME_MAX)?;
        let dir = self.ino;
        let ftype = new.ftype;
        let ino = self.fs.write_op(|t| {
            let mut d = t.live_dir(dir)?;
            if t.lookup_name(dir, name)?.is_some() {
                return Err(VfsError::AlreadyExists);
            }
            if ftype == FileType::Directory && d.nlink >= LINK_MAX {
                return Err(VfsError::TooManyLinks);
            }
            let ino = t.alloc_ino()?;
            let mut perm = new.perm & 0o7777;
            let mut gid = new.gid;
            if d.perm & S_ISGID != 0 {
                gid = d.gid;
                if ftype == FileType::Directory {
                    perm |= S_ISGID;
                }
            }
            let now = t.now;
            let dev = matches!(ftype, FileType::CharDevice | FileType::BlockDevice);
            let inode = Inode {
                ftype,
                perm,
                uid: new.uid,
                gid,
                nlink: if ftype == FileType::Directory { 2 } else { 1 },
                size: target.map_or(0, |s| s.len() as u64),
                alloc_bytes: 0,
                rdev: if dev { new.rdev } else { 0 },
                atime: now,
                mtime: now,
                ctime: now,
                parent: if ftype == FileType::Directory { dir } else { 0 },
                next_cookie: if ftype == FileType::Directory { 2 } else { 0 },
            };
            t.set_inode(ino, inode);
            if let Some(target) = target {
                t.bucket(bucket::SYMLINKS)?
                    .put(&ino_key(ino), target.as_bytes())
                    .map_err(kv)?;
            }
            t.add_entry(dir, name, ino, ftype)?;
            d = t.inode(dir)?;
            if ftype == FileType::Directory {
                d.nlink += 1;
            }
            d.mtime = now;
            d.ctime = now;
            t.set_inode(dir, d);
            Ok(ino)
        })?;
        self.fs.node(ino, ftype)
    }

    fn xattr_name_ok(&self, name: &str, setting: bool) -> VfsResult<()> {
        let known = ["user.", "trusted.", "security."];
        let Some(prefix) = known.iter().find(|p| name.starts_with(*p)) else {
            return Err(VfsError::Unsupported);
        };
        if name.len() == prefix.len() {
            return Err(VfsError::InvalidInput);
        }
        if name.len() > XATTR_NAME_MAX {
            return Err(VfsError::Range);
        }
        // Linux allows user.* only on regular files and directories.
        if setting
            && *prefix == "user."
            && !matches!(self.ftype, FileType::Regular | FileType::Directory)
        {
            return Err(VfsError::NotPermitted);
        }
        Ok(())
    }
}

impl<P: Pager + Send + Sync + 'static> Node for DbNode<P> {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn getattr(&self) -> VfsResult<Metadata> {
        let i = self.fs.inode(self.ino)?;
        Ok(self.fs.metadata(self.ino, &i))
    }

    /// The type the node was made with (an inode's type never changes): a path walk asks it
    /// of every component, and the inode need not be read for it.
    fn ftype(&self) -> VfsResult<FileType> {
        Ok(self.ftype)
    }

    fn setattr(&self, attr: &SetAttr) -> VfsResult<Metadata> {
        if attr.size.is_some() {
            self.check_file()?;
        }
        if attr.size.is_some_and(|s| s > MAX_FILE_SIZE) {
            return Err(VfsError::FileTooLarge);
        }
        let ino = self.ino;
        if let Some(m) = self.set_times_buffered(attr)? {
            return Ok(m);
        }
        let i = self.fs.write_op(|t| {
            let mut i = t.inode(ino)?;
            let now = t.now;
            let only_size = attr.perm.is_none()
                && attr.uid.is_none()
                && attr.gid.is_none()
                && attr.atime.is_none()
                && attr.mtime.is_none();
            if let Some(size) = attr.size {
                if size != i.size {
                    t.resize(ino, &mut i, size)?;
                    i.mtime = now;
                    i.ctime = now;
                } else if only_size {
                    // POSIX: times change only if the size does.
                    return Ok(i);
                }
            }
            if let Some(perm) = attr.perm {
                i.perm = perm & 0o7777;
            }
            if attr.uid.is_some() || attr.gid.is_some() {
                if let Some(uid) = attr.uid {
                    i.uid = uid;
                }
                if let Some(gid) = attr.gid {
                    i.gid = gid;
                }
                if attr.perm.is_none() && i.ftype != FileType::Directory {
                    i.perm &= !S_ISUID;
                    if i.perm & S_IXGRP != 0 {
                        i.perm &= !S_ISGID;
                    }
                }
            }
            let resolve = |ts: TimeSet| match ts {
                TimeSet::Now => now,
                TimeSet::At(x) => x,
            };
            if let Some(a) = attr.atime {
                i.atime = resolve(a);
            }
            if let Some(m) = attr.mtime {
                i.mtime = resolve(m);
            }
            i.ctime = now;
            t.set_inode(ino, i);
            Ok(i)
        })?;
        Ok(self.fs.metadata(ino, &i))
    }

    fn open(&self) -> VfsResult<()> {
        self.fs.open_node(self.ino);
        Ok(())
    }

    fn release(&self) -> VfsResult<()> {
        self.fs.release_node(self.ino)
    }

    /// Reads take the state lock and a read transaction (a snapshot) only: the host runs them
    /// on many FUSE threads, the kernel on several harts without its big lock. Reads of
    /// [`crate::DIRECT_READ_MIN`] bytes or more go from the disk to the caller's buffer; a
    /// kernel sleeps through that wait under its lock.
    fn parallel_read(&self, _len: usize) -> bool {
        true
    }

    /// Writes the write-back cache takes as they are (see [`DbFs::parallel_write`]).
    fn parallel_write(&self, len: usize) -> bool {
        self.fs.parallel_write(len)
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> VfsResult<usize> {
        self.check_file()?;
        self.fs.read_file(self.ino, offset, buf)
    }

    fn write_at(&self, offset: u64, buf: &[u8]) -> VfsResult<usize> {
        self.check_file()?;
        self.fs.write_file(self.ino, offset, buf)
    }

    fn read_scattered_at(&self, offset: u64, bufs: &mut [&mut [u8]]) -> Option<VfsResult<usize>> {
        match self.check_file() {
            Ok(()) => self.fs.read_scattered(self.ino, offset, bufs),
            Err(e) => Some(Err(e)),
        }
    }

    fn write_gathered_at(&self, offset: u64, bufs: &[&[u8]]) -> Option<VfsResult<usize>> {
        Some(self.check_file().and_then(|_| {
            self.fs
                .write_gathered(self.ino, offset, &crate::write::Src::new(bufs))
        }))
    }

    fn truncate(&self, size: u64) -> VfsResult<()> {
        self.setattr(&SetAttr {
            size: Some(size),
            ..Default::default()
        })
        .map(|_| ())
    }

    fn punch_hole(&self, offset: u64, len: u64) -> VfsResult<()> {
        self.check_file()?;
        let end = offset.checked_add(len).ok_or(VfsError::FileTooLarge)?;
        let ino = self.ino;
        // One transaction: the file's buffered writes are folded into it (`Txn::inode`), and
        // `Txn::finish` zeroes their bytes inside the hole before it stores them.
        self.fs.write_op(|t| {
            let mut i = t.inode(ino)?;
            if offset < i.size {
                t.punch(ino, &mut i, offset, end)?;
                i.mtime = t.now;
                i.ctime = t.now;
                t.set_inode(ino, i);
            }
            Ok(())
        })
    }

    fn fsync(&self, _data_only: bool) -> VfsResult<()> {
        self.fs.flush(crate::state::Flush::Inode(self.ino))
    }

    fn lookup(&self, name: &str) -> VfsResult<NodeRef> {
        self.check_dir()?;
        check_name(name, NAME_MAX)?;
        let e = match self.fs.remembered_name(self.ino, name) {
            Some(e) => e,
            None => {
                let tx = self.fs.begin_read()?;
                let raw = tx
                    .get_bucket(bucket::NAMES)
                    .map_err(kv)?
                    .get(&name_key(self.ino, name.as_bytes()))
                    .map_err(kv)?;
                let e = raw.map(|v| NameEntry::decode(&v)).transpose()?;
                self.fs.state.lock().names.put(tx.id(), self.ino, name, e);
                e
            }
        };
        let e = e.ok_or(VfsError::NotFound)?;
        self.fs.node(e.ino, e.ftype)
    }

    fn create(&self, name: &str, new: &NewNode) -> VfsResult<NodeRef> {
        if new.ftype == FileType::Symlink {
            self.check_dir()?;
            return Err(VfsError::InvalidInput);
        }
        self.make(name, new, None)
    }

    fn symlink(&self, name: &str, target: &str, new: &NewNode) -> VfsResult<NodeRef> {
        self.check_dir()?;
        check_name(name, NAME_MAX)?;
        if target.is_empty() {
            return Err(VfsError::NotFound);
        }
        if target.len() > SYMLINK_MAX {
            return Err(VfsError::NameTooLong);
        }
        let new = NewNode {
            ftype: FileType::Symlink,
            perm: 0o777,
            ..*new
        };
        self.make(name, &new, Some(target))
    }

    fn link(&self, name: &str, target: &dyn Node) -> VfsResult<()> {
        self.check_dir()?;
        let target = self.same_fs(target)?;
        check_name(name, NAME_MAX)?;
        if target.ftype == FileType::Directory {
            return Err(VfsError::NotPermitted);
        }
        let (dir, ino, ftype) = (self.ino, target.ino, target.ftype);
        self.fs.write_op(|t| {
            t.live_dir(dir)?;
            if t.lookup_name(dir, name)?.is_some() {
                return Err(VfsError::AlreadyExists);
            }
            let mut i = t.inode(ino)?;
            if i.nlink == 0 {
                return Err(VfsError::NotFound);
            }
            if i.nlink >= LINK_MAX {
                return Err(VfsError::TooManyLinks);
            }
            i.nlink += 1;
            i.ctime = t.now;
            t.set_inode(ino, i);
            t.add_entry(dir, name, ino, ftype)?;
            let mut d = t.inode(dir)?;
            d.mtime = t.now;
            d.ctime = t.now;
            t.set_inode(dir, d);
            Ok(())
        })
    }

    fn unlink(&self, name: &str) -> VfsResult<()> {
        self.check_dir()?;
        check_name(name, NAME_MAX)?;
        let dir = self.ino;
        self.fs.write_op(|t| {
            let e = t.lookup_name(dir, name)?.ok_or(VfsError::NotFound)?;
            if e.ftype == FileType::Directory {
                return Err(VfsError::IsADirectory);
            }
            t.remove_entry(dir, name, &e)?;
            t.drop_link(e.ino)?;
            let mut d = t.inode(dir)?;
            d.mtime = t.now;
            d.ctime = t.now;
            t.set_inode(dir, d);
            Ok(())
        })
    }

    fn rmdir(&self, name: &str) -> VfsResult<()> {
        self.check_dir()?;
        check_name(name, NAME_MAX)?;
        let dir = self.ino;
        self.fs.write_op(|t| {
            let e = t.lookup_name(dir, name)?.ok_or(VfsError::NotFound)?;
            if e.ftype != FileType::Directory {
                return Err(VfsError::NotADirectory);
            }
            if !t.dir_is_empty(e.ino)? {
                return Err(VfsError::DirectoryNotEmpty);
            }
            t.remove_entry(dir, name, &e)?;
            t.drop_link(e.ino)?;
            let mut d = t.inode(dir)?;
            d.nlink = d.nlink.saturating_sub(1);
            d.mtime = t.now;
            d.ctime = t.now;
            t.set_inode(dir, d);
            Ok(())
        })
    }

    fn rename(
        &self,
        name: &str,
        new_parent: &dyn Node,
        new_name: &str,
        flags: RenameFlags,
    ) -> VfsResult<()> {
        self.check_dir()?;
        let other = self.same_fs(new_parent)?;
        other.check_dir()?;
        check_name(name, NAME_MAX)?;
        check_name(new_name, NAME_MAX)?;
        if flags.noreplace && flags.exchange {
            return Err(VfsError::InvalidInput);
        }
        let (sdir, ddir) = (self.ino, other.ino);
        self.fs.write_op(|t| {
            let s = t.lookup_name(sdir, name)?.ok_or(VfsError::NotFound)?;
            let d = t.lookup_name(ddir, new_name)?;
            if flags.noreplace && d.is_some() {
                return Err(VfsError::AlreadyExists);
            }
            if flags.exchange && d.is_none() {
                return Err(VfsError::NotFound);
            }
            // Linux's order: a directory moving into its own subtree is EINVAL; a target that is
            // an ancestor of the source is ENOTEMPTY (EINVAL for an exchange).
            if sdir != ddir && s.ftype == FileType::Directory && t.is_ancestor(s.ino, ddir)? {
                return Err(VfsError::InvalidInput);
            }
            if let Some(d) = &d {
                if sdir != ddir && d.ftype == FileType::Directory && t.is_ancestor(d.ino, sdir)? {
                    return Err(if flags.exchange {
                        VfsError::InvalidInput
                    } else {
                        VfsError::DirectoryNotEmpty
                    });
                }
                if d.ino == s.ino {
                    // Same name, or two links to one inode: nothing to do.
                    return Ok(());
                }
            }
            let now = t.now;
            if flags.exchange {
                let d = d.ok_or(VfsError::NotFound)?;
                t.set_entry(
                    sdir,
                    name,
                    NameEntry {
                        cookie: s.cookie,
                        ino: d.ino,
                        ftype: d.ftype,
                    },
                )?;
                t.set_entry(
                    ddir,
                    new_name,
                    NameEntry {
                        cookie: d.cookie,
                        ino: s.ino,
                        ftype: s.ftype,
                    },
                )?;
                if sdir != ddir {
                    for (moved, ftype, from, to) in
                        [(s.ino, s.ftype, sdir, ddir), (d.ino, d.ftype, ddir, sdir)]
                    {
                        if ftype == FileType::Directory {
                            let mut m = t.inode(moved)?;
                            m.parent = to;
                            t.set_inode(moved, m);
                            t.bump(from, -1)?;
                            t.bump(to, 1)?;
                        }
                    }
                }
                t.bump(s.ino, 0)?;
                t.bump(d.ino, 0)?;
            } else {
                let s_dir = s.ftype == FileType::Directory;
                if let Some(d) = &d {
                    let d_dir = d.ftype == FileType::Directory;
                    if s_dir && !d_dir {
                        return Err(VfsError::NotADirectory);
                    }
                    if !s_dir && d_dir {
                        return Err(VfsError::IsADirectory);
                    }
                    if d_dir && !t.dir_is_empty(d.ino)? {
                        return Err(VfsError::DirectoryNotEmpty);
                    }
                }
                if s_dir
                    && sdir != ddir
                    && !d.as_ref().is_some_and(|d| d.ftype == FileType::Directory)
                    && t.inode(ddir)?.nlink >= LINK_MAX
                {
                    return Err(VfsError::TooManyLinks);
                }
                if let Some(d) = &d {
                    t.remove_entry(ddir, new_name, d)?;
                    t.drop_link(d.ino)?;
                    if d.ftype == FileType::Directory {
                        t.bump(ddir, -1)?;
                    }
                }
                t.remove_entry(sdir, name, &s)?;
                t.add_entry(ddir, new_name, s.ino, s.ftype)?;
                if s_dir && sdir != ddir {
                    let mut m = t.inode(s.ino)?;
                    m.parent = ddir;
                    t.set_inode(s.ino, m);
                    t.bump(sdir, -1)?;
                    t.bump(ddir, 1)?;
                }
                t.bump(s.ino, 0)?;
            }
            for dir in [sdir, ddir] {
                let mut i = t.inode(dir)?;
                i.mtime = now;
                i.ctime = now;
                t.set_inode(dir, i);
            }
            Ok(())
        })
    }

    fn readdir(&self, cookie: u64, sink: &mut dyn FnMut(DirEntry<'_>) -> bool) -> VfsResult<()> {
        self.check_dir()?;
        let tx = self.fs.begin_read()?;
        let me = read_inode(&tx, self.ino)?;
        if cookie == 0
            && !sink(DirEntry {
                ino: self.ino,
                ftype: FileType::Directory,
                name: ".",
                next_cookie: 1,
            })
        {
            return Ok(());
        }
        if cookie <= 1
            && !sink(DirEntry {
                ino: me.parent,
                ftype: FileType::Directory,
                name: "..",
                next_cookie: 2,
            })
        {
            return Ok(());
        }
        let cookies = tx.get_bucket(bucket::COOKIES).map_err(kv)?;
        let mut cursor = cookies.cursor();
        let mut entry = cursor
            .seek(&crate::format::pair_key(self.ino, cookie.max(2)))
            .map_err(kv)?;
        while let Some(e) = entry {
            let key = e.key();
            if key.len() != 16 || be_u64(key) != Some(self.ino) {
                break;
            }
            let c = be_u64(&key[8..]).ok_or(VfsError::Corrupted)?;
            let v = CookieEntry::decode(e.value().ok_or(VfsError::Corrupted)?)?;
            if !sink(DirEntry {
                ino: v.ino,
                ftype: v.ftype,
                name: v.name,
                next_cookie: c.saturating_add(1),
            }) {
                return Ok(());
            }
            entry = cursor.next().map_err(kv)?;
        }
        Ok(())
    }

    fn readlink(&self) -> VfsResult<String> {
        if self.ftype != FileType::Symlink {
            return Err(VfsError::InvalidInput);
        }
        let tx = self.fs.begin_read()?;
        let raw = tx
            .get_bucket(bucket::SYMLINKS)
            .map_err(kv)?
            .get(&ino_key(self.ino))
            .map_err(kv)?;
        let raw = raw.ok_or(VfsError::Corrupted)?;
        core::str::from_utf8(&raw)
            .map(String::from)
            .map_err(|_| VfsError::Corrupted)
    }

    fn getxattr(&self, name: &str) -> VfsResult<Vec<u8>> {
        self.xattr_name_ok(name, false)?;
        let tx = self.fs.begin_read()?;
        read_inode(&tx, self.ino)?;
        let raw = tx
            .get_bucket(bucket::XATTRS)
            .map_err(kv)?
            .get(&name_key(self.ino, name.as_bytes()))
            .map_err(kv)?;
        raw.map(|v| v.to_vec()).ok_or(VfsError::NoData)
    }

    fn setxattr(&self, name: &str, value: &[u8], mode: XattrMode) -> VfsResult<()> {
        self.xattr_name_ok(name, true)?;
        if value.len() > XATTR_SIZE_MAX {
            return Err(VfsError::NoSpace);
        }
        let ino = self.ino;
        self.fs.write_op(|t| {
            let mut i = t.inode(ino)?;
            let b = t.bucket(bucket::XATTRS)?;
            let key = name_key(ino, name.as_bytes());
            let exists = b.get(&key).map_err(kv)?.is_some();
            match (mode, exists) {
                (XattrMode::Create, true) => return Err(VfsError::AlreadyExists),
                (XattrMode::Replace, false) => return Err(VfsError::NoData),
                _ => {}
            }
            b.put(&key, value).map_err(kv)?;
            i.ctime = t.now;
            t.set_inode(ino, i);
            Ok(())
        })
    }

    fn listxattr(&self) -> VfsResult<Vec<String>> {
        let tx = self.fs.begin_read()?;
        read_inode(&tx, self.ino)?;
        let b = tx.get_bucket(bucket::XATTRS).map_err(kv)?;
        let mut c = b.cursor();
        let mut out = Vec::new();
        let mut e = c.seek(&ino_key(self.ino)).map_err(kv)?;
        while let Some(entry) = e {
            let key = entry.key();
            if be_u64(key) != Some(self.ino) {
                break;
            }
            out.push(String::from(
                core::str::from_utf8(&key[8..]).map_err(|_| VfsError::Corrupted)?,
            ));
            e = c.next().map_err(kv)?;
        }
        Ok(out)
    }

    fn removexattr(&self, name: &str) -> VfsResult<()> {
        self.xattr_name_ok(name, false)?;
        let ino = self.ino;
        self.fs.write_op(|t| {
            let mut i = t.inode(ino)?;
            if !t
                .bucket(bucket::XATTRS)?
                .delete(&name_key(ino, name.as_bytes()))
                .map_err(kv)?
            {
                return Err(VfsError::NoData);
            }
            i.ctime = t.now;
            t.set_inode(ino, i);
            Ok(())
        })
    }

    fn not_a_file(&self) -> VfsError {
        match self.ftype {
            FileType::Directory => VfsError::IsADirectory,
            _ => VfsError::InvalidInput,
        }
    }
}

impl<P: Pager + Send + Sync + 'static> DbFs<P> {
    /// What the newest commit says directory `dir` holds under `name`, if a lookup in that
    /// snapshot remembered it ([`crate::snapshot_cache::SnapshotNames`]): `Some(None)` for a
    /// name it does not hold. A lookup reads the newest commit too, so the answer is the same.
    fn remembered_name(&self, dir: u64, name: &str) -> Option<Option<NameEntry>> {
        let st = self.state.lock();
        self.db.with_committed(|txid| st.names.get(txid, dir, name))
    }

    /// The node of `ino` (of type `ftype`), holding the mount alive.
    pub(crate) fn node(&self, ino: u64, ftype: FileType) -> VfsResult<NodeRef> {
        let fs = self.me.upgrade().ok_or(VfsError::Io)?;
        Ok(Arc::new(DbNode::new(fs, ino, ftype)))
    }
}
