//! The host side of `make test-cross`: the `crosscheck` crate's traits over the dbfs library
//! (an image, no mount: `gen-tree`, `verify-tree`) and over std::fs (any directory, e.g. a FUSE
//! mount of an image: `verify-dir`, `workload`).
//!
//! The guest program `user-tests/src/bin/crosscheck.rs` implements the same traits with
//! syscalls; the plan, manifest, comparison and workload code is shared, so the two sides
//! cannot drift apart.

use std::ffi::CString;
use std::fs::{self, File, OpenOptions};
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, FileExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use crosscheck::manifest::{format_manifest, parse_manifest, Report};
use crosscheck::plan::Plan;
use crosscheck::{Attr, Errno, FsOps, FsView, Kind, MANIFEST_NAME};
use vfs::{FileSystem, FileType, NewNode, NodeRef, RenameFlags, SetAttr, VfsError, XattrMode};

use crate::image::{open_image, Fs};

fn errno(e: VfsError) -> Errno {
    Errno::from(e)
}

fn io_errno(e: std::io::Error) -> Errno {
    Errno(e.raw_os_error().unwrap_or(Errno::EIO.0))
}

// ---- the dbfs library ----

/// A tree inside an image, through the vfs traits (paths never cross symlinks).
pub struct LibTree {
    fs: Arc<Fs>,
    /// Components of the tree's root below the image's root.
    base: Vec<String>,
}

impl LibTree {
    fn node(&self, path: &str) -> Result<NodeRef, Errno> {
        let mut n = self.fs.root().map_err(errno)?;
        for c in self
            .base
            .iter()
            .map(String::as_str)
            .chain(path.split('/').filter(|c| !c.is_empty()))
        {
            n = n.lookup(c).map_err(errno)?;
        }
        Ok(n)
    }

    fn parent(&self, path: &str) -> Result<(NodeRef, String), Errno> {
        let (dir, name) = path.rsplit_once('/').unwrap_or(("", path));
        Ok((self.node(dir)?, name.to_string()))
    }
}

impl FsView for LibTree {
    fn lstat(&mut self, path: &str) -> Result<Attr, Errno> {
        let m = self.node(path)?.getattr().map_err(errno)?;
        let kind = Kind::from_mode(m.mode()).ok_or(Errno::EIO)?;
        Ok(Attr {
            kind,
            size: m.size,
            mode: m.mode(),
            nlink: m.nlink,
        })
    }

    fn read_all(&mut self, path: &str, sink: &mut dyn FnMut(&[u8])) -> Result<(), Errno> {
        let node = self.node(path)?;
        let mut buf = vec![0u8; 1 << 20];
        let mut off = 0u64;
        loop {
            let n = node.read_at(off, &mut buf).map_err(errno)?;
            if n == 0 {
                return Ok(());
            }
            sink(&buf[..n]);
            off += n as u64;
        }
    }

    fn readlink(&mut self, path: &str) -> Result<String, Errno> {
        self.node(path)?.readlink().map_err(errno)
    }

    fn read_dir(&mut self, path: &str) -> Result<Vec<String>, Errno> {
        let mut names = Vec::new();
        self.node(path)?
            .readdir(0, &mut |e| {
                if e.name != "." && e.name != ".." {
                    names.push(e.name.to_string());
                }
                true
            })
            .map_err(errno)?;
        Ok(names)
    }

    fn list_xattrs(&mut self, path: &str) -> Result<Vec<String>, Errno> {
        self.node(path)?.listxattr().map_err(errno)
    }

    fn get_xattr(&mut self, path: &str, name: &str) -> Result<Vec<u8>, Errno> {
        self.node(path)?.getxattr(name).map_err(errno)
    }
}

impl FsOps for LibTree {
    fn mkdir(&mut self, path: &str, mode: u32) -> Result<(), Errno> {
        let (dir, name) = self.parent(path)?;
        dir.create(&name, &NewNode::new(FileType::Directory, mode))
            .map_err(errno)?;
        Ok(())
    }

    fn create(&mut self, path: &str, mode: u32) -> Result<(), Errno> {
        let (dir, name) = self.parent(path)?;
        dir.create(&name, &NewNode::new(FileType::Regular, mode))
            .map_err(errno)?;
        Ok(())
    }

    fn write_at(&mut self, path: &str, offset: u64, data: &[u8]) -> Result<(), Errno> {
        let node = self.node(path)?;
        node.open().map_err(errno)?;
        let mut done = 0;
        let r = loop {
            if done == data.len() {
                break Ok(());
            }
            match node.write_at(offset + done as u64, &data[done..]) {
                Ok(0) => break Err(Errno::EIO),
                Ok(n) => done += n,
                Err(e) => break Err(errno(e)),
            }
        };
        let released = node.release().map_err(errno);
        r.and(released)
    }

    fn truncate(&mut self, path: &str, size: u64) -> Result<(), Errno> {
        self.node(path)?.truncate(size).map_err(errno)
    }

    fn symlink(&mut self, target: &str, path: &str) -> Result<(), Errno> {
        let (dir, name) = self.parent(path)?;
        dir.symlink(&name, target, &NewNode::new(FileType::Symlink, 0o777))
            .map_err(errno)?;
        Ok(())
    }

    fn link(&mut self, existing: &str, path: &str) -> Result<(), Errno> {
        let target = self.node(existing)?;
        let (dir, name) = self.parent(path)?;
        dir.link(&name, &*target).map_err(errno)
    }

    fn rename(&mut self, from: &str, to: &str) -> Result<(), Errno> {
        let (od, on) = self.parent(from)?;
        let (nd, nn) = self.parent(to)?;
        od.rename(&on, &*nd, &nn, RenameFlags::default())
            .map_err(errno)
    }

    fn unlink(&mut self, path: &str) -> Result<(), Errno> {
        let (dir, name) = self.parent(path)?;
        dir.unlink(&name).map_err(errno)
    }

    fn rmdir(&mut self, path: &str) -> Result<(), Errno> {
        let (dir, name) = self.parent(path)?;
        dir.rmdir(&name).map_err(errno)
    }

    fn chmod(&mut self, path: &str, mode: u32) -> Result<(), Errno> {
        self.node(path)?
            .setattr(&SetAttr {
                perm: Some(mode),
                ..Default::default()
            })
            .map(|_| ())
            .map_err(errno)
    }

    fn set_xattr(&mut self, path: &str, name: &str, value: &[u8]) -> Result<(), Errno> {
        self.node(path)?
            .setxattr(name, value, XattrMode::Any)
            .map_err(errno)
    }

    fn sync(&mut self) -> Result<(), Errno> {
        self.fs.sync().map_err(errno)
    }
}

// ---- std::fs ----

/// A tree in a host directory, through std::fs and libc's xattr calls.
pub struct HostTree {
    root: PathBuf,
}

fn cpath(p: &Path) -> Result<CString, Errno> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| Errno::EINVAL)
}

fn cstring(s: &str) -> Result<CString, Errno> {
    CString::new(s).map_err(|_| Errno::EINVAL)
}

/// Call a size-query-then-fill libc function (`lgetxattr`, `llistxattr`) until it fits.
fn sized_call(mut call: impl FnMut(&mut [u8]) -> isize) -> Result<Vec<u8>, Errno> {
    for _ in 0..8 {
        let n = call(&mut []);
        if n < 0 {
            return Err(io_errno(std::io::Error::last_os_error()));
        }
        let mut buf = vec![0u8; n as usize];
        let got = call(&mut buf);
        if got >= 0 {
            buf.truncate(got as usize);
            return Ok(buf);
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::ERANGE) {
            return Err(io_errno(e));
        }
    }
    Err(Errno::ERANGE)
}

impl HostTree {
    fn full(&self, path: &str) -> PathBuf {
        if path.is_empty() {
            self.root.clone()
        } else {
            self.root.join(path)
        }
    }
}

impl FsView for HostTree {
    fn lstat(&mut self, path: &str) -> Result<Attr, Errno> {
        let m = fs::symlink_metadata(self.full(path)).map_err(io_errno)?;
        let kind = Kind::from_mode(m.mode()).ok_or(Errno::EIO)?;
        let nlink = u32::try_from(m.nlink()).map_err(|_| Errno::EOVERFLOW)?;
        Ok(Attr {
            kind,
            size: m.size(),
            mode: m.mode(),
            nlink,
        })
    }

    fn read_all(&mut self, path: &str, sink: &mut dyn FnMut(&[u8])) -> Result<(), Errno> {
        let mut f = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(self.full(path))
            .map_err(io_errno)?;
        let mut buf = vec![0u8; 1 << 20];
        loop {
            match f.read(&mut buf) {
                Ok(0) => return Ok(()),
                Ok(n) => sink(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(io_errno(e)),
            }
        }
    }

    fn readlink(&mut self, path: &str) -> Result<String, Errno> {
        let t = fs::read_link(self.full(path)).map_err(io_errno)?;
        t.into_os_string().into_string().map_err(|_| Errno::EINVAL)
    }

    fn read_dir(&mut self, path: &str) -> Result<Vec<String>, Errno> {
        let mut names = Vec::new();
        for e in fs::read_dir(self.full(path)).map_err(io_errno)? {
            let name = e.map_err(io_errno)?.file_name();
            names.push(name.into_string().map_err(|_| Errno::EINVAL)?);
        }
        Ok(names)
    }

    fn list_xattrs(&mut self, path: &str) -> Result<Vec<String>, Errno> {
        let p = cpath(&self.full(path))?;
        let raw = sized_call(|buf| {
            // SAFETY: `p` is NUL-terminated; `buf` is writable for its length (or empty).
            unsafe { libc::llistxattr(p.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) }
        })?;
        raw.split(|&b| b == 0)
            .filter(|n| !n.is_empty())
            .map(|n| String::from_utf8(n.to_vec()).map_err(|_| Errno::EINVAL))
            .collect()
    }

    fn get_xattr(&mut self, path: &str, name: &str) -> Result<Vec<u8>, Errno> {
        let p = cpath(&self.full(path))?;
        let n = cstring(name)?;
        sized_call(|buf| {
            // SAFETY: both strings are NUL-terminated; `buf` is writable for its length.
            unsafe { libc::lgetxattr(p.as_ptr(), n.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) }
        })
    }
}

impl FsOps for HostTree {
    fn mkdir(&mut self, path: &str, mode: u32) -> Result<(), Errno> {
        fs::DirBuilder::new()
            .mode(mode)
            .create(self.full(path))
            .map_err(io_errno)
    }

    fn create(&mut self, path: &str, mode: u32) -> Result<(), Errno> {
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(self.full(path))
            .map(drop)
            .map_err(io_errno)
    }

    fn write_at(&mut self, path: &str, offset: u64, data: &[u8]) -> Result<(), Errno> {
        let f = OpenOptions::new()
            .write(true)
            .open(self.full(path))
            .map_err(io_errno)?;
        f.write_all_at(data, offset).map_err(io_errno)
    }

    fn truncate(&mut self, path: &str, size: u64) -> Result<(), Errno> {
        let f = OpenOptions::new()
            .write(true)
            .open(self.full(path))
            .map_err(io_errno)?;
        f.set_len(size).map_err(io_errno)
    }

    fn symlink(&mut self, target: &str, path: &str) -> Result<(), Errno> {
        std::os::unix::fs::symlink(target, self.full(path)).map_err(io_errno)
    }

    fn link(&mut self, existing: &str, path: &str) -> Result<(), Errno> {
        fs::hard_link(self.full(existing), self.full(path)).map_err(io_errno)
    }

    fn rename(&mut self, from: &str, to: &str) -> Result<(), Errno> {
        fs::rename(self.full(from), self.full(to)).map_err(io_errno)
    }

    fn unlink(&mut self, path: &str) -> Result<(), Errno> {
        fs::remove_file(self.full(path)).map_err(io_errno)
    }

    fn rmdir(&mut self, path: &str) -> Result<(), Errno> {
        fs::remove_dir(self.full(path)).map_err(io_errno)
    }

    fn chmod(&mut self, path: &str, mode: u32) -> Result<(), Errno> {
        fs::set_permissions(self.full(path), fs::Permissions::from_mode(mode)).map_err(io_errno)
    }

    fn set_xattr(&mut self, path: &str, name: &str, value: &[u8]) -> Result<(), Errno> {
        let p = cpath(&self.full(path))?;
        let n = cstring(name)?;
        // SAFETY: both strings are NUL-terminated; `value` is readable for its length.
        let r = unsafe {
            libc::lsetxattr(
                p.as_ptr(),
                n.as_ptr(),
                value.as_ptr().cast(),
                value.len(),
                0,
            )
        };
        if r == 0 {
            Ok(())
        } else {
            Err(io_errno(std::io::Error::last_os_error()))
        }
    }

    fn sync(&mut self) -> Result<(), Errno> {
        let f = File::open(&self.root).map_err(io_errno)?;
        // SAFETY: `f` is an open descriptor for the duration of the call.
        if unsafe { libc::syncfs(std::os::fd::AsRawFd::as_raw_fd(&f)) } == 0 {
            Ok(())
        } else {
            Err(io_errno(std::io::Error::last_os_error()))
        }
    }
}

// ---- commands ----

fn components(dir: &str) -> Vec<String> {
    dir.split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .map(String::from)
        .collect()
}

fn report(what: &str, r: &Report) -> Result<(), String> {
    for f in &r.failures {
        println!("{what}: FAILED {f}");
    }
    println!("{} passed, {} failed", r.passed, r.failed);
    if r.failed == 0 {
        Ok(())
    } else {
        Err(format!("{what}: {} checks failed", r.failed))
    }
}

/// Check a tree against its `MANIFEST`.
fn verify(what: &str, view: &mut dyn FsView) -> Result<(), String> {
    let mut text = Vec::new();
    view.read_all(MANIFEST_NAME, &mut |b| text.extend_from_slice(b))
        .map_err(|e| format!("{MANIFEST_NAME}: {}", e.name()))?;
    let text = String::from_utf8(text).map_err(|_| format!("{MANIFEST_NAME}: not UTF-8"))?;
    let expected = parse_manifest(&text).map_err(|e| format!("{MANIFEST_NAME}: {e}"))?;
    let t = Instant::now();
    let scan = crosscheck::scan(view, &[MANIFEST_NAME]);
    let r = crosscheck::compare(&expected, &scan);
    println!(
        "{what}: {} entries listed, {} found, scanned in {:.2} s",
        expected.len(),
        scan.entries.len(),
        t.elapsed().as_secs_f64()
    );
    report(what, &r)
}

/// `gen-tree`: write the tree of `seed` and its manifest into `dir` of `image` (no mount).
pub fn gen_tree(image: &Path, seed: u64, dir: &str) -> Result<(), String> {
    let fs = open_image(image, false)?;
    let base = components(dir);
    let mut tree = LibTree {
        fs: fs.clone(),
        base: Vec::new(),
    };
    for i in 0..base.len() {
        match tree.mkdir(&base[..=i].join("/"), 0o755) {
            Ok(()) | Err(Errno::EEXIST) => {}
            Err(e) => return Err(format!("mkdir {}: {}", base[..=i].join("/"), e.name())),
        }
    }
    tree.base = base;
    let t = Instant::now();
    Plan::generate(seed).apply(&mut tree, &mut |m| println!("gen-tree: {m}"))?;
    fs.sync().map_err(|e| format!("sync: {e}"))?;
    fs.pager()
        .sync_file()
        .map_err(|e| format!("image flush: {e}"))?;
    println!(
        "gen-tree: seed {seed} written in {:.2} s",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// `verify-tree`: check `dir` of `image` against its manifest, through the library.
pub fn verify_tree(image: &Path, dir: &str) -> Result<(), String> {
    let fs = open_image(image, true)?;
    verify(
        "verify-tree",
        &mut LibTree {
            fs,
            base: components(dir),
        },
    )
}

/// `verify-dir`: check a host directory (e.g. a FUSE mount) against its manifest.
pub fn verify_dir(dir: &Path) -> Result<(), String> {
    verify(
        "verify-dir",
        &mut HostTree {
            root: dir.to_path_buf(),
        },
    )
}

/// `workload`: run the workload script in a new directory `dir` through std::fs, print the
/// listing between markers.
pub fn workload(dir: &Path) -> Result<(), String> {
    let steps = crosscheck::workload::parse(crosscheck::WORKLOAD)?;
    // SAFETY: umask has no preconditions; the script's modes are exact.
    unsafe { libc::umask(0) };
    fs::DirBuilder::new()
        .mode(0o755)
        .create(dir)
        .map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
    let mut tree = HostTree {
        root: dir.to_path_buf(),
    };
    let mut r = crosscheck::workload::run(&steps, &mut tree);
    let scan = crosscheck::scan(&mut tree, &[]);
    for (path, msg) in &scan.errors {
        r.fail(format!("listing {path}: {msg}"));
    }
    println!("{}", crosscheck::LISTING_BEGIN);
    print!("{}", format_manifest(&scan.entries));
    println!("{}", crosscheck::LISTING_END);
    report("workload", &r)
}
