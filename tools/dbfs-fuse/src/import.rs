//! `import`: copy a host directory tree into a dbfs image through the dbfs library (no mount),
//! keeping what a distribution's packages set, so that an image built on the host from a
//! Debian tree boots as the guest's root file system.
//!
//! Kept: every file type (regular files, directories, symlinks, character and block devices,
//! FIFOs, sockets), hard links (host files with the same device and inode become one dbfs node
//! with several names), owners, permission bits with set-user-ID, set-group-ID and sticky,
//! device numbers (Linux's `dev_t` encoding, the host's `st_rdev` as it is), access and
//! modification times to the nanosecond, and extended attributes (`security.capability` of a
//! program given capabilities by its package, for example). Not kept: ctime, which dbfs sets
//! itself when the node changes (as every file system does), and holes (a sparse host file
//! is written out whole).
//!
//! The walk is sorted by name, so the same tree gives the same inode numbers. A directory that
//! already exists in the image is merged into; any other name that exists is an error (the
//! image is not changed further and the error names the path). Times of a directory are set
//! after its entries are written, so writing them does not move the times again.

use std::collections::HashMap;
use std::ffi::CString;
use std::fs::{self, File};
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

use vfs::{
    FileSystem, FileType, NewNode, NodeRef, SetAttr, TimeSet, Timestamp, VfsError, XattrMode,
};

use crate::image::open_image;
use crate::offline::resolve;

/// What an import wrote, for the closing line.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct ImportStats {
    pub(crate) dirs: u64,
    pub(crate) files: u64,
    pub(crate) bytes: u64,
    pub(crate) symlinks: u64,
    pub(crate) hard_links: u64,
    /// Devices, FIFOs and sockets.
    pub(crate) special: u64,
    pub(crate) xattrs: u64,
}

/// Copy the tree under host directory `src` into directory `dest` of `image` (created, with
/// its parents, if missing), then commit. Errors name the host path that failed.
pub(crate) fn import(image: &Path, src: &Path, dest: &str) -> Result<ImportStats, String> {
    let meta = fs::symlink_metadata(src).map_err(|e| format!("{}: {e}", src.display()))?;
    if !meta.is_dir() {
        return Err(format!("{}: not a directory", src.display()));
    }
    let fs = open_image(image, false)?;
    let mut dir = fs.root().map_err(|e| format!("root: {e}"))?;
    let mut walked = String::new();
    for comp in dest.split('/').filter(|c| !c.is_empty() && *c != ".") {
        walked.push('/');
        walked.push_str(comp);
        dir = match dir.lookup(comp) {
            Ok(n) => n,
            Err(VfsError::NotFound) => dir
                .create(comp, &NewNode::new(FileType::Directory, 0o755))
                .map_err(|e| format!("{walked}: {e}"))?,
            Err(e) => return Err(format!("{walked}: {e}")),
        };
    }
    let mut copier = Copier {
        links: HashMap::new(),
        stats: ImportStats::default(),
        buf: vec![0; 1 << 20],
    };
    copier.copy_dir(src, &dir)?;
    set_attrs(&dir, &meta).map_err(|e| format!("{}: {e}", src.display()))?;
    copy_xattrs(src, &dir, &mut copier.stats)?;
    fs.sync().map_err(|e| format!("sync: {e}"))?;
    // The walk above took the path apart itself; a last lookup checks that the result is
    // reachable the way a path walk in the guest will reach it.
    resolve(&fs, dest)?;
    Ok(copier.stats)
}

struct Copier {
    /// Nodes already written for host files with more than one link: (st_dev, st_ino).
    links: HashMap<(u64, u64), NodeRef>,
    stats: ImportStats,
    buf: Vec<u8>,
}

impl Copier {
    fn copy_dir(&mut self, host_dir: &Path, dir: &NodeRef) -> Result<(), String> {
        let mut entries: Vec<_> = fs::read_dir(host_dir)
            .map_err(|e| format!("{}: {e}", host_dir.display()))?
            .collect::<Result<_, _>>()
            .map_err(|e| format!("{}: {e}", host_dir.display()))?;
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let path = entry.path();
            let name = entry.file_name();
            let name = name
                .to_str()
                .ok_or_else(|| format!("{}: the name is not UTF-8", path.display()))?;
            self.copy_entry(&path, name, dir).map_err(|e| {
                if e.contains(&*path.to_string_lossy()) {
                    e
                } else {
                    format!("{}: {e}", path.display())
                }
            })?;
        }
        Ok(())
    }

    fn copy_entry(&mut self, path: &Path, name: &str, dir: &NodeRef) -> Result<(), String> {
        let meta = fs::symlink_metadata(path).map_err(|e| e.to_string())?;
        let ft = meta.file_type();
        let new = NewNode {
            ftype: node_type(&ft).ok_or("a file of unknown type")?,
            perm: meta.mode() & 0o7777,
            uid: meta.uid(),
            gid: meta.gid(),
            rdev: if ft.is_char_device() || ft.is_block_device() {
                meta.rdev()
            } else {
                0
            },
        };
        if ft.is_dir() {
            let node = match dir.lookup(name) {
                Ok(n) if n.ftype().map_err(|e| e.to_string())? == FileType::Directory => n,
                Ok(_) => return Err("exists in the image and is not a directory".into()),
                Err(VfsError::NotFound) => {
                    self.stats.dirs += 1;
                    dir.create(name, &new).map_err(|e| e.to_string())?
                }
                Err(e) => return Err(e.to_string()),
            };
            self.copy_dir(path, &node)?;
            set_attrs(&node, &meta).map_err(|e| e.to_string())?;
            return copy_xattrs(path, &node, &mut self.stats);
        }
        match dir.lookup(name) {
            Ok(_) => return Err("exists in the image".into()),
            Err(VfsError::NotFound) => {}
            Err(e) => return Err(e.to_string()),
        }
        let key = (meta.dev(), meta.ino());
        if meta.nlink() > 1 {
            if let Some(first) = self.links.get(&key) {
                self.stats.hard_links += 1;
                return dir.link(name, &**first).map_err(|e| e.to_string());
            }
        }
        let node = if ft.is_symlink() {
            let target = fs::read_link(path).map_err(|e| e.to_string())?;
            let target = target.to_str().ok_or("the link's target is not UTF-8")?;
            self.stats.symlinks += 1;
            dir.symlink(name, target, &new).map_err(|e| e.to_string())?
        } else {
            let node = dir.create(name, &new).map_err(|e| e.to_string())?;
            if ft.is_file() {
                self.copy_data(path, &node)?;
                self.stats.files += 1;
            } else {
                self.stats.special += 1;
            }
            node
        };
        set_attrs(&node, &meta).map_err(|e| e.to_string())?;
        copy_xattrs(path, &node, &mut self.stats)?;
        if meta.nlink() > 1 && !ft.is_symlink() {
            self.links.insert(key, node);
        }
        Ok(())
    }

    fn copy_data(&mut self, path: &Path, node: &NodeRef) -> Result<(), String> {
        let mut file = File::open(path).map_err(|e| e.to_string())?;
        node.open().map_err(|e| e.to_string())?;
        let mut off = 0u64;
        let copied = loop {
            let n = match file.read(&mut self.buf) {
                Ok(0) => break Ok(()),
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => break Err(e.to_string()),
            };
            if let Err(e) = node.write_at(off, &self.buf[..n]) {
                break Err(format!("writing at {off}: {e}"));
            }
            off += n as u64;
        };
        self.stats.bytes += off;
        let released = node.release().map_err(|e| e.to_string());
        copied.and(released)
    }
}

fn node_type(ft: &fs::FileType) -> Option<FileType> {
    Some(if ft.is_dir() {
        FileType::Directory
    } else if ft.is_file() {
        FileType::Regular
    } else if ft.is_symlink() {
        FileType::Symlink
    } else if ft.is_char_device() {
        FileType::CharDevice
    } else if ft.is_block_device() {
        FileType::BlockDevice
    } else if ft.is_fifo() {
        FileType::Fifo
    } else if ft.is_socket() {
        FileType::Socket
    } else {
        return None;
    })
}

/// Permission bits (set again: a create may have been given them through a umask-free path,
/// but this makes the result independent of how the file system treats them at create) and
/// the two times. Owners were given at create.
fn set_attrs(node: &NodeRef, meta: &fs::Metadata) -> Result<(), VfsError> {
    let at = |sec: i64, nsec: i64| {
        TimeSet::At(Timestamp {
            sec,
            nsec: nsec.clamp(0, 999_999_999) as u32,
        })
    };
    node.setattr(&SetAttr {
        perm: if meta.file_type().is_symlink() {
            None
        } else {
            Some(meta.mode() & 0o7777)
        },
        atime: Some(at(meta.atime(), meta.atime_nsec())),
        mtime: Some(at(meta.mtime(), meta.mtime_nsec())),
        ..SetAttr::default()
    })
    .map(|_| ())
}

/// Copy the extended attributes of host `path` (not following a symlink) to `node`.
fn copy_xattrs(path: &Path, node: &NodeRef, stats: &mut ImportStats) -> Result<(), String> {
    let cpath = CString::new(path.as_os_str().as_bytes()).map_err(|e| e.to_string())?;
    for name in list_xattrs(&cpath).map_err(|e| format!("{}: listxattr: {e}", path.display()))? {
        let value = get_xattr(&cpath, &name)
            .map_err(|e| format!("{}: getxattr {name}: {e}", path.display()))?;
        node.setxattr(&name, &value, XattrMode::Any)
            .map_err(|e| format!("{}: setxattr {name}: {e}", path.display()))?;
        stats.xattrs += 1;
    }
    Ok(())
}

fn list_xattrs(path: &CString) -> std::io::Result<Vec<String>> {
    let mut buf = vec![0u8; 4096];
    loop {
        // SAFETY: `path` is NUL-terminated and `buf` is writable for `buf.len()` bytes.
        let n = unsafe { libc::llistxattr(path.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
        if n >= 0 {
            buf.truncate(n as usize);
            break;
        }
        let err = std::io::Error::last_os_error();
        match err.raw_os_error() {
            Some(libc::ERANGE) => buf.resize(buf.len() * 4, 0),
            // A host file system without extended attributes has none to copy.
            Some(libc::ENOTSUP) => return Ok(Vec::new()),
            _ => return Err(err),
        }
    }
    Ok(buf
        .split(|&b| b == 0)
        .filter(|n| !n.is_empty())
        .map(|n| String::from_utf8_lossy(n).into_owned())
        .collect())
}

fn get_xattr(path: &CString, name: &str) -> std::io::Result<Vec<u8>> {
    let cname = CString::new(name).map_err(std::io::Error::other)?;
    let mut buf = vec![0u8; 256];
    loop {
        // SAFETY: both strings are NUL-terminated; `buf` is writable for `buf.len()` bytes.
        let n = unsafe {
            libc::lgetxattr(
                path.as_ptr(),
                cname.as_ptr(),
                buf.as_mut_ptr().cast(),
                buf.len(),
            )
        };
        if n >= 0 {
            buf.truncate(n as usize);
            return Ok(buf);
        }
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() == Some(libc::ERANGE) && buf.len() < 1 << 20 {
            buf.resize(buf.len() * 4, 0);
        } else {
            return Err(err);
        }
    }
}
