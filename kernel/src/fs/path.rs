//! Path resolution.

use alloc::collections::VecDeque;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use abi::fcntl::{NAME_MAX, PATH_MAX};
use abi::Errno;
use vfs::FileType;

pub use super::mount_table::Loc;
use super::mount_table::{join, mount_at};

/// Most symbolic links one resolution follows (Linux's limit): past it, ELOOP.
pub const MAX_SYMLINKS: usize = 40;

impl Loc {
    /// The location of a canonical absolute path (cwd, descriptor paths), from the root of
    /// the whole tree whatever the caller's root (chroot) is.
    pub fn from_path(path: &str) -> Result<Loc, Errno> {
        Ok(Walk::whole_tree(path)?.top().clone())
    }
}

/// The calling process's root directory (`chroot`; `/` unless changed), where its absolute
/// paths and absolute symbolic links start and where `..` stops.
pub fn process_root() -> Result<Loc, Errno> {
    root_loc(&crate::task::current_root())
}

fn root_loc(root: &Option<Arc<str>>) -> Result<Loc, Errno> {
    match root {
        None => Loc::root(),
        Some(r) => Loc::from_path(r),
    }
}

struct Walk {
    /// Directories from the root to the current position.
    stack: Vec<Loc>,
    symlinks: usize,
    /// The process's root when it is not `/` (a canonical path of the whole tree).
    root: Option<Arc<str>>,
}

impl Walk {
    fn start(base: &Loc, path: &str) -> Result<Walk, Errno> {
        if path.len() >= PATH_MAX {
            return Err(Errno::ENAMETOOLONG);
        }
        let root = crate::task::current_root();
        if path.starts_with('/') {
            return Ok(Walk {
                stack: alloc::vec![root_loc(&root)?],
                symlinks: 0,
                root,
            });
        }
        // Start at the base; its ancestors are looked up only if `..` climbs above it.
        Ok(Walk {
            stack: alloc::vec![base.clone()],
            symlinks: 0,
            root,
        })
    }

    /// The walk of a canonical absolute path from the root of the whole tree (no chroot).
    fn whole_tree(path: &str) -> Result<Walk, Errno> {
        let mut w = Walk {
            stack: alloc::vec![Loc::root()?],
            symlinks: 0,
            root: None,
        };
        w.walk(components(path), true)?;
        Ok(w)
    }

    /// The top is the process's root: `..` stays there (Linux's chroot; a directory outside
    /// it, a cwd left there by chroot without chdir, is not).
    fn at_root(&self) -> bool {
        self.root.as_deref().is_some_and(|r| self.top().path == r)
    }

    /// Replace a lone non-root bottom entry with the chain of directories from the root to it
    /// (its path is canonical: no symlinks, `.` or `..`).
    fn expand_bottom(&mut self) -> Result<(), Errno> {
        if self.stack.len() == 1 && self.stack[0].path != "/" {
            let bottom = self.stack[0].path.clone();
            self.stack = Walk::whole_tree(&bottom)?.stack;
        }
        Ok(())
    }

    fn top(&self) -> &Loc {
        self.stack.last().expect("walk stack holds the root")
    }

    /// Step into `name` from the top directory.
    fn child(&self, name: &str) -> Result<Loc, Errno> {
        let dir = self.top();
        if name.len() > NAME_MAX {
            return Err(Errno::ENAMETOOLONG);
        }
        if !dir.is_dir()? {
            return Err(Errno::ENOTDIR);
        }
        super::perm::may_search(dir)?;
        let path = join(&dir.path, name);
        if let Some(m) = mount_at(&path) {
            return Ok(Loc {
                node: m.root.clone(),
                path,
                mount: m,
            });
        }
        let node = dir.node.lookup(name)?;
        Ok(Loc {
            node,
            path,
            mount: dir.mount.clone(),
        })
    }

    /// Walk the components; the last one is followed if it is a symlink only when
    /// `follow_last`.
    fn walk(&mut self, mut comps: VecDeque<String>, follow_last: bool) -> Result<(), Errno> {
        while let Some(c) = comps.pop_front() {
            match c.as_str() {
                "" | "." => {
                    if !self.top().is_dir()? {
                        return Err(Errno::ENOTDIR);
                    }
                }
                ".." => {
                    if !self.top().is_dir()? {
                        return Err(Errno::ENOTDIR);
                    }
                    if self.at_root() {
                        continue;
                    }
                    self.expand_bottom()?;
                    if self.stack.len() > 1 {
                        self.stack.pop();
                    }
                }
                name => {
                    let loc = self.child(name)?;
                    let is_last = comps.is_empty();
                    if loc.node.ftype()? == FileType::Symlink && (!is_last || follow_last) {
                        self.symlinks += 1;
                        if self.symlinks > MAX_SYMLINKS {
                            return Err(Errno::ELOOP);
                        }
                        // A /proc/<pid>/fd link leads to the open file, not to its text.
                        if let Some(target) = super::proc_fd::magic_target(&loc.node) {
                            self.stack = alloc::vec![target?];
                            continue;
                        }
                        let target = loc.node.readlink()?;
                        if target.is_empty() {
                            return Err(Errno::ENOENT);
                        }
                        if target.starts_with('/') {
                            self.stack = alloc::vec![root_loc(&self.root)?];
                        }
                        for t in target.split('/').rev() {
                            comps.push_front(String::from(t));
                        }
                    } else {
                        self.stack.push(loc);
                    }
                }
            }
        }
        Ok(())
    }
}

fn components(path: &str) -> VecDeque<String> {
    path.split('/')
        .filter(|c| !c.is_empty())
        .map(String::from)
        .collect()
}

/// Resolve `path` relative to `base`.
pub fn resolve(base: &Loc, path: &str, follow_last: bool) -> Result<Loc, Errno> {
    if path.is_empty() {
        return Err(Errno::ENOENT);
    }
    let mut w = Walk::start(base, path)?;
    // "link/" names what the link points to (Linux follows a last link a slash ends).
    w.walk(components(path), follow_last || path.ends_with('/'))?;
    let loc = w.top().clone();
    // "file/" names a directory.
    if path.ends_with('/') && !loc.is_dir()? {
        return Err(Errno::ENOTDIR);
    }
    Ok(loc)
}

/// What the last component of a path names, for calls that create or remove it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Special {
    /// The path is `/` (or only slashes).
    Root,
    /// The path ends in `.`.
    Dot,
    /// The path ends in `..`.
    DotDot,
}

/// Resolve everything but the last component: the parent directory and the final name.
/// A path whose last component is not a plain name gives `Err(Ok(special))`: each call maps
/// that to its own errno, as Linux does (rmdir `..` is ENOTEMPTY, unlink `.` is EISDIR, ...),
/// after the parent itself resolved.
pub fn resolve_parent_or_special(
    base: &Loc,
    path: &str,
) -> Result<(Loc, String), Result<Special, Errno>> {
    if path.is_empty() {
        return Err(Err(Errno::ENOENT));
    }
    let mut comps = components(path);
    let name = comps.pop_back();
    let mut w = Walk::start(base, path).map_err(Err)?;
    w.walk(comps, true).map_err(Err)?;
    let parent = w.top().clone();
    if !parent.is_dir().map_err(Err)? {
        return Err(Err(Errno::ENOTDIR));
    }
    match name.as_deref() {
        None => Err(Ok(Special::Root)),
        Some(".") => Err(Ok(Special::Dot)),
        Some("..") => Err(Ok(Special::DotDot)),
        Some(n) if n.len() > NAME_MAX => Err(Err(Errno::ENAMETOOLONG)),
        Some(_) => Ok((parent, name.unwrap_or_default())),
    }
}

/// [`resolve_parent_or_special`] for calls that give one errno (`special_errno`) whatever
/// the special last component is.
pub fn resolve_parent_as(
    base: &Loc,
    path: &str,
    special_errno: Errno,
) -> Result<(Loc, String), Errno> {
    resolve_parent_or_special(base, path).map_err(|e| e.map_or_else(|e| e, |_| special_errno))
}

/// Parent and name for creating a node (mkdir, link, symlink, mount points): `.`, `..` and
/// `/` already exist.
pub fn resolve_parent(base: &Loc, path: &str) -> Result<(Loc, String), Errno> {
    resolve_parent_as(base, path, Errno::EEXIST)
}
