//! A node of a mounted volume ([`FatNode`], named by its path) and the vfs node operations on
//! it: attributes, file reads and writes (through the cached layout, or fatfs when a write
//! grows the file), and directory operations. Every operation takes the mount lock once.

use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::any::Any;

use fatfs::{Seek, SeekFrom, Write};
use vfs::{
    DirEntry, FileType, Metadata, NewNode, Node, NodeRef, RenameFlags, SetAttr, TimeSet, Timestamp,
    VfsError, VfsResult, SECTOR_SIZE,
};

use crate::dir::{count_subdirs, find, fix_dotdot, is_dot, open_dir, open_file, Found};
use crate::error::vfs_error;
use crate::layout::{runs_of, transfer};
use crate::mount::{Mount, State};
use crate::names::{check_fat_name, join, split};
use crate::orphan;
use crate::resize::{resize, write_zeros};
use crate::time;
use crate::types::{FAT_PERM, MAX_FILE_SIZE, ROOT_INO};

/// A file or directory of a mounted FAT volume (identified by path; see the crate docs).
pub struct FatNode {
    pub(crate) mount: Arc<Mount>,
    pub(crate) ino: u64,
    pub(crate) ftype: FileType,
}

impl FatNode {
    fn node(&self, ino: u64, is_dir: bool) -> NodeRef {
        let ftype = if is_dir {
            FileType::Directory
        } else {
            FileType::Regular
        };
        Arc::new(FatNode {
            mount: self.mount.clone(),
            ino,
            ftype,
        })
    }

    fn metadata(&self, found: &Found) -> Metadata {
        let cluster = u64::from(self.mount.cluster_size);
        let mtime = time::from_fat(found.modified);
        Metadata {
            ino: self.ino,
            ftype: if found.is_dir {
                FileType::Directory
            } else {
                FileType::Regular
            },
            perm: FAT_PERM,
            nlink: if found.is_dir {
                found.subdirs.saturating_add(2)
            } else {
                1
            },
            uid: 0,
            gid: 0,
            size: found.size,
            blocks: found.size.div_ceil(cluster) * (cluster / SECTOR_SIZE as u64),
            blksize: self.mount.cluster_size,
            rdev: 0,
            atime: time::from_fat_date(found.accessed),
            mtime,
            ctime: mtime,
        }
    }

    fn check_dir(&self) -> VfsResult<()> {
        if self.ftype != FileType::Directory {
            return Err(VfsError::NotADirectory);
        }
        Ok(())
    }

    fn check_file(&self) -> VfsResult<()> {
        if self.ftype == FileType::Directory {
            return Err(VfsError::IsADirectory);
        }
        Ok(())
    }

    /// What the on-disk entry (and the open file, whose size and times may be newer) says; for
    /// a directory, also how many subdirectories it has (one listing of it).
    fn stat_locked(&self, st: &mut State) -> VfsResult<Found> {
        let path = st.names.path(self.ino)?;
        if path.is_empty() {
            let zero = time::to_fat(Timestamp::default());
            return Ok(Found {
                name: String::new(),
                is_dir: true,
                size: 0,
                modified: zero,
                accessed: zero.date,
                subdirs: count_subdirs(&open_dir(st.vol.fs(), "")?)?,
            });
        }
        let (parent, leaf) = split(&path);
        let mut found = {
            let dir = open_dir(st.vol.fs(), parent)?;
            find(&dir, leaf)?.ok_or(VfsError::NotFound)?
        };
        if found.is_dir {
            found.subdirs = count_subdirs(&open_dir(st.vol.fs(), &path)?)?;
        }
        if let Some((size, modified, accessed)) = st
            .vol
            .with_open_file(self.ino, |f| (f.size(), f.modified(), f.accessed()))
        {
            found.size = u64::from(size.unwrap_or(0));
            found.modified = modified;
            found.accessed = accessed;
        }
        Ok(found)
    }

    /// The checks before refusing a node FAT cannot hold (a symlink or a hard link): this is a
    /// directory, the name is valid and free (Linux finds an existing name, EEXIST, before vfat
    /// refuses the operation, EPERM).
    fn refuse_new(&self, name: &str) -> VfsResult<()> {
        self.check_dir()?;
        check_fat_name(name)?;
        let st = self.mount.state.lock();
        let path = st.names.path(self.ino)?;
        let dir = open_dir(st.vol.fs(), &path)?;
        if find(&dir, name)?.is_some() {
            return Err(VfsError::AlreadyExists);
        }
        Ok(())
    }

    /// The node of `other` if it belongs to this mount.
    fn same_mount<'a>(&self, other: &'a dyn Node) -> VfsResult<&'a FatNode> {
        match other.as_any().downcast_ref::<FatNode>() {
            Some(n) if Arc::ptr_eq(&n.mount, &self.mount) => Ok(n),
            _ => Err(VfsError::CrossDevice),
        }
    }
}

impl Node for FatNode {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn ftype(&self) -> VfsResult<FileType> {
        Ok(self.ftype)
    }

    fn getattr(&self) -> VfsResult<Metadata> {
        let mut st = self.mount.state.lock();
        let found = self.stat_locked(&mut st)?;
        let mut m = self.metadata(&found);
        if st.orphans.contains(&self.ino) {
            // Unlinked while open: no name links to it any more.
            m.nlink = 0;
        }
        Ok(m)
    }

    fn setattr(&self, attr: &SetAttr) -> VfsResult<Metadata> {
        if attr.perm.is_some_and(|p| p & !0o777 != 0)
            || attr.uid.is_some_and(|u| u != 0)
            || attr.gid.is_some_and(|g| g != 0)
        {
            return Err(VfsError::NotPermitted);
        }
        if attr.size.is_some() {
            self.check_file()?;
        }
        let now = self.mount.clock.now();
        let resolve = |t: TimeSet| match t {
            TimeSet::Now => now,
            TimeSet::At(t) => t,
        };
        let mut st = self.mount.state.lock();
        let path = st.names.path(self.ino)?;
        let times = attr.atime.is_some() || attr.mtime.is_some();
        if attr.size.is_some() {
            st.runs.remove(&self.ino);
        }
        if self.ftype == FileType::Regular && (attr.size.is_some() || times) {
            st.vol.with_file(
                self.ino,
                |fs| open_file(fs, &path),
                |file| -> VfsResult<()> {
                    if let Some(size) = attr.size {
                        resize(file, size, now)?;
                    }
                    #[allow(deprecated)]
                    {
                        if let Some(t) = attr.mtime {
                            file.set_modified(time::to_fat(resolve(t)));
                        }
                        if let Some(t) = attr.atime {
                            file.set_accessed(time::to_fat(resolve(t)).date);
                        }
                    }
                    Ok(())
                },
            )??;
        }
        if self.ftype == FileType::Directory && times && !path.is_empty() {
            // A directory's entry is edited through its own stream (the root has no entry:
            // its times stay unset, as on Linux vfat, where they live in memory only).
            let dir = open_dir(st.vol.fs(), &path)?;
            if let Some(stream) = dir.as_file() {
                let mut stream = stream.clone();
                #[allow(deprecated)]
                {
                    if let Some(t) = attr.mtime {
                        stream.set_modified(time::to_fat(resolve(t)));
                    }
                    if let Some(t) = attr.atime {
                        stream.set_accessed(time::to_fat(resolve(t)).date);
                    }
                }
                stream.flush().map_err(vfs_error)?;
            }
        }
        let found = self.stat_locked(&mut st)?;
        Ok(self.metadata(&found))
    }

    fn open(&self) -> VfsResult<()> {
        orphan::opened(&mut self.mount.state.lock(), self.ino);
        Ok(())
    }

    fn release(&self) -> VfsResult<()> {
        let mut st = self.mount.state.lock();
        st.runs.remove(&self.ino);
        st.vol.close(self.ino).map_err(vfs_error)?;
        orphan::released(&mut st, self.ino)
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> VfsResult<usize> {
        self.check_file()?;
        let mut st = self.mount.state.lock();
        let path = st.names.path(self.ino)?;
        let State { vol, runs, .. } = &mut *st;
        let io = &*self.mount.io;
        vol.with_file(
            self.ino,
            |fs| open_file(fs, &path),
            |file| -> VfsResult<usize> {
                let size = u64::from(file.size().unwrap_or(0));
                if offset >= size || buf.is_empty() {
                    return Ok(0);
                }
                let want = buf.len().min((size - offset) as usize);
                // Straight from the device: fatfs would read one cluster per call.
                let layout = runs_of(runs, self.ino, file, size)?;
                transfer(io, layout, offset, want, |io, pos, range| {
                    io.read_bytes(pos, &mut buf[range])
                })?;
                Ok(want)
            },
        )?
    }

    fn write_at(&self, offset: u64, buf: &[u8]) -> VfsResult<usize> {
        self.check_file()?;
        let end = offset
            .checked_add(buf.len() as u64)
            .ok_or(VfsError::FileTooLarge)?;
        if end > MAX_FILE_SIZE {
            return Err(VfsError::FileTooLarge);
        }
        let now = time::to_fat(self.mount.clock.now());
        let mut st = self.mount.state.lock();
        let path = st.names.path(self.ino)?;
        let State { vol, runs, .. } = &mut *st;
        let io = &*self.mount.io;
        vol.with_file(
            self.ino,
            |fs| open_file(fs, &path),
            |file| -> VfsResult<usize> {
                if buf.is_empty() {
                    return Ok(0);
                }
                let size = u64::from(file.size().unwrap_or(0));
                if end <= size {
                    // An overwrite inside the file: no allocation, straight to the device.
                    let layout = runs_of(runs, self.ino, file, size)?;
                    transfer(io, layout, offset, buf.len(), |io, pos, range| {
                        io.write_bytes(pos, &buf[range])
                    })?;
                    #[allow(deprecated)]
                    file.set_modified(now);
                    return Ok(buf.len());
                }
                // Growing: fatfs allocates clusters; the cached layout is stale afterwards.
                runs.remove(&self.ino);
                if offset > size {
                    file.seek(SeekFrom::End(0)).map_err(vfs_error)?;
                    write_zeros(file, offset - size)?;
                } else {
                    file.seek(SeekFrom::Start(offset)).map_err(vfs_error)?;
                }
                // Like Linux, a write that runs out of space part way is short: it reports the
                // bytes the file now holds, and only a write that stored nothing is ENOSPC.
                let mut done = 0;
                while done < buf.len() {
                    match file.write(&buf[done..]) {
                        Ok(0) if done == 0 => return Err(VfsError::NoSpace),
                        Ok(0) => break,
                        Ok(n) => done += n,
                        Err(fatfs::Error::NotEnoughSpace) if done > 0 => break,
                        Err(e) => return Err(vfs_error(e)),
                    }
                }
                Ok(done)
            },
        )?
    }

    fn truncate(&self, size: u64) -> VfsResult<()> {
        self.check_file()?;
        let now = self.mount.clock.now();
        let mut st = self.mount.state.lock();
        let path = st.names.path(self.ino)?;
        st.runs.remove(&self.ino);
        st.vol.with_file(
            self.ino,
            |fs| open_file(fs, &path),
            |file| resize(file, size, now),
        )?
    }

    fn fsync(&self, _data_only: bool) -> VfsResult<()> {
        let mut st = self.mount.state.lock();
        st.names.path(self.ino)?;
        if let Some(r) = st.vol.with_open_file(self.ino, |f| f.flush()) {
            r.map_err(vfs_error)?;
        }
        self.mount.io.flush()
    }

    fn lookup(&self, name: &str) -> VfsResult<NodeRef> {
        self.check_dir()?;
        check_fat_name(name)?;
        let mut st = self.mount.state.lock();
        let path = st.names.path(self.ino)?;
        let found = {
            let dir = open_dir(st.vol.fs(), &path)?;
            find(&dir, name)?.ok_or(VfsError::NotFound)?
        };
        if orphan::is_orphan_name(&path, &found.name) {
            return Err(VfsError::NotFound);
        }
        let ino = st.names.ino(&join(&path, &found.name));
        Ok(self.node(ino, found.is_dir))
    }

    fn create(&self, name: &str, new: &NewNode) -> VfsResult<NodeRef> {
        self.check_dir()?;
        check_fat_name(name)?;
        let mut st = self.mount.state.lock();
        let path = st.names.path(self.ino)?;
        // An existing name is EEXIST whatever the type asked for (as Linux, which looks the
        // name up before it asks vfat, which has no FIFOs, sockets or devices: EPERM).
        let is_dir = {
            let dir = open_dir(st.vol.fs(), &path)?;
            if find(&dir, name)?.is_some() {
                return Err(VfsError::AlreadyExists);
            }
            let is_dir = match new.ftype {
                FileType::Regular => false,
                FileType::Directory => true,
                _ => return Err(VfsError::NotPermitted),
            };
            if is_dir {
                dir.create_dir(name).map_err(vfs_error)?;
            }
            is_dir
        };
        let child = join(&path, name);
        let ino = st.names.ino(&child);
        if !is_dir {
            // Keep the new file open: it is usually written next.
            st.vol.with_file(
                ino,
                |fs| open_dir(fs, &path)?.create_file(name).map_err(vfs_error),
                |_| (),
            )?;
        }
        Ok(self.node(ino, is_dir))
    }

    fn symlink(&self, name: &str, _target: &str, _new: &NewNode) -> VfsResult<NodeRef> {
        self.refuse_new(name)?;
        Err(VfsError::NotPermitted)
    }

    fn link(&self, name: &str, _target: &dyn Node) -> VfsResult<()> {
        self.refuse_new(name)?;
        Err(VfsError::NotPermitted)
    }

    fn unlink(&self, name: &str) -> VfsResult<()> {
        self.check_dir()?;
        check_fat_name(name)?;
        let mut st = self.mount.state.lock();
        let path = st.names.path(self.ino)?;
        let found = {
            let dir = open_dir(st.vol.fs(), &path)?;
            find(&dir, name)?.ok_or(VfsError::NotFound)?
        };
        if found.is_dir {
            return Err(VfsError::IsADirectory);
        }
        let child = join(&path, &found.name);
        // An open file would write its directory entry back over the deleted one.
        if let Some(ino) = st.names.get(&child) {
            st.runs.remove(&ino);
            st.vol.close(ino).map_err(vfs_error)?;
            if orphan::is_open(&st, ino) {
                // Still open: its data stays until the last close (crate::orphan).
                return orphan::keep(&mut st, &path, &found.name, ino);
            }
        }
        open_dir(st.vol.fs(), &path)?
            .remove(&found.name)
            .map_err(vfs_error)?;
        st.names.forget(&child);
        Ok(())
    }

    fn rmdir(&self, name: &str) -> VfsResult<()> {
        self.check_dir()?;
        check_fat_name(name)?;
        let mut st = self.mount.state.lock();
        let path = st.names.path(self.ino)?;
        let found = {
            let dir = open_dir(st.vol.fs(), &path)?;
            find(&dir, name)?.ok_or(VfsError::NotFound)?
        };
        if !found.is_dir {
            return Err(VfsError::NotADirectory);
        }
        let child = join(&path, &found.name);
        // fatfs lists the directory to see that it is empty: check its chain first.
        open_dir(st.vol.fs(), &child)?;
        open_dir(st.vol.fs(), &path)?
            .remove(&found.name)
            .map_err(vfs_error)?;
        st.names.forget(&child);
        Ok(())
    }

    fn rename(
        &self,
        name: &str,
        new_parent: &dyn Node,
        new_name: &str,
        flags: RenameFlags,
    ) -> VfsResult<()> {
        self.check_dir()?;
        let target_dir = self.same_mount(new_parent)?;
        target_dir.check_dir()?;
        check_fat_name(name)?;
        check_fat_name(new_name)?;
        if flags.exchange {
            return Err(VfsError::Unsupported);
        }
        let mut st = self.mount.state.lock();
        let src_parent = st.names.path(self.ino)?;
        let dst_parent = st.names.path(target_dir.ino)?;
        let (src, dst) = {
            let fs = st.vol.fs();
            let src = find(&open_dir(fs, &src_parent)?, name)?.ok_or(VfsError::NotFound)?;
            let dst = find(&open_dir(fs, &dst_parent)?, new_name)?;
            (src, dst)
        };
        let src_path = join(&src_parent, &src.name);
        let dst_path = join(&dst_parent, new_name);
        if src.is_dir
            && (dst_parent == src_path || dst_parent.starts_with(&alloc::format!("{src_path}/")))
        {
            return Err(VfsError::InvalidInput);
        }
        let mut case_only = false;
        if let Some(dst) = &dst {
            // Linux checks RENAME_NOREPLACE before anything else: a name that exists, the
            // source's own included (FAT's names are case-insensitive), gives EEXIST.
            if flags.noreplace {
                return Err(VfsError::AlreadyExists);
            }
            if src_parent == dst_parent && dst.name == src.name {
                // The same entry: FAT names are case-insensitive.
                if src.name == new_name {
                    return Ok(());
                }
                case_only = true;
            } else {
                match (src.is_dir, dst.is_dir) {
                    (true, false) => return Err(VfsError::NotADirectory),
                    (false, true) => return Err(VfsError::IsADirectory),
                    _ => {}
                }
            }
        }
        // Open files keep the position of their directory entry, which is about to move.
        for path in [
            &src_path,
            &join(
                &dst_parent,
                dst.as_ref().map_or(new_name, |d| d.name.as_str()),
            ),
        ] {
            if let Some(ino) = st.names.get(path) {
                st.runs.remove(&ino);
                st.vol.close(ino).map_err(vfs_error)?;
            }
        }
        {
            let fs = st.vol.fs();
            let src_dir = open_dir(fs, &src_parent)?;
            let dst_dir = open_dir(fs, &dst_parent)?;
            if case_only {
                // fatfs sees "a" -> "A" as a no-op: go through a temporary name.
                let tmp = alloc::format!(".rename-{}", self.ino);
                src_dir
                    .rename(&src.name, &src_dir, &tmp)
                    .map_err(vfs_error)?;
                src_dir
                    .rename(&tmp, &dst_dir, new_name)
                    .map_err(vfs_error)?;
            } else {
                if let Some(dst) = &dst {
                    if dst.is_dir {
                        // Listed by fatfs to see that it is empty: check its chain first.
                        open_dir(fs, &join(&dst_parent, &dst.name))?;
                    }
                    dst_dir.remove(&dst.name).map_err(vfs_error)?;
                }
                src_dir
                    .rename(&src.name, &dst_dir, new_name)
                    .map_err(vfs_error)?;
            }
            if src.is_dir && src_parent != dst_parent && fs.fat_type() == fatfs::FatType::Fat32 {
                fix_dotdot(fs, &dst_path, &dst_parent)?;
            }
        }
        if let Some(dst) = &dst {
            if !case_only {
                st.names.forget(&join(&dst_parent, &dst.name));
            }
        }
        st.names.rename(&src_path, &dst_path);
        Ok(())
    }

    fn readdir(&self, cookie: u64, sink: &mut dyn FnMut(DirEntry<'_>) -> bool) -> VfsResult<()> {
        self.check_dir()?;
        // Collected under the lock, delivered after it: the sink may call back into the fs.
        let mut entries: Vec<(u64, bool, String)> = Vec::new();
        {
            let mut st = self.mount.state.lock();
            let path = st.names.path(self.ino)?;
            if cookie == 0 {
                entries.push((self.ino, true, ".".to_string()));
            }
            if cookie <= 1 {
                let parent = if path.is_empty() {
                    ROOT_INO
                } else {
                    st.names.ino(split(&path).0)
                };
                entries.push((parent, true, "..".to_string()));
            }
            let skip = cookie.saturating_sub(2);
            let mut listed: Vec<(bool, String)> = Vec::new();
            {
                let dir = open_dir(st.vol.fs(), &path)?;
                let mut index = 0u64;
                for entry in dir.iter() {
                    let e = entry.map_err(vfs_error)?;
                    let name = e.file_name();
                    if is_dot(&name) || orphan::is_orphan_name(&path, &name) {
                        continue;
                    }
                    if index >= skip {
                        listed.push((e.is_dir(), name));
                    }
                    index += 1;
                }
            }
            for (is_dir, name) in listed {
                let ino = st.names.ino(&join(&path, &name));
                entries.push((ino, is_dir, name));
            }
        }
        for (i, (ino, is_dir, name)) in entries.iter().enumerate() {
            // Entry i of this batch sits at position cookie + i of the listing.
            let next_cookie = cookie + i as u64 + 1;
            let ftype = if *is_dir {
                FileType::Directory
            } else {
                FileType::Regular
            };
            if !sink(DirEntry {
                ino: *ino,
                ftype,
                name,
                next_cookie,
            }) {
                break;
            }
        }
        Ok(())
    }
}
