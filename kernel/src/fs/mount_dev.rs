//! Mounting and unmounting at run time (fs layer): mount(2) attaches a file system found on a
//! block device to a directory, umount2(2) takes it away when nothing uses it.
//!
//! Which file systems a disk can hold, and how one is opened on it (a block cache for FAT32,
//! a disk window for dbfs), is the boot layer's business (`mounts.rs`): it registers a
//! [`BlockMounter`] at boot. A disk is mounted at most once at a time (the boot layer refuses
//! a second mount with EBUSY: Linux would share the file system between the two places).

use alloc::string::String;
use alloc::sync::Arc;

use abi::Errno;
use spin::Once;
use vfs::{FileSystem, FileType};

use super::mount_table::{self, Source};
use super::path::Loc;

/// The boot layer's answer to "open a file system of type `fstype` on disk `rdev`" (ENODEV:
/// no such type, ENXIO: no such disk, EBUSY: the disk is mounted, EINVAL: the disk does not
/// hold that file system), and its release of a disk whose file system was unmounted and
/// dropped.
pub struct BlockMounter {
    pub mount: fn(rdev: u64, fstype: &str) -> Result<Arc<dyn FileSystem>, Errno>,
    pub release: fn(rdev: u64),
    /// The types `mount` knows, as /proc/filesystems names them.
    pub types: &'static [&'static str],
}

static MOUNTER: Once<BlockMounter> = Once::new();

pub fn set_block_mounter(m: BlockMounter) {
    MOUNTER.call_once(|| m);
}

/// Whether `fstype` names a file system a block device can be mounted as.
pub fn is_block_type(fstype: &str) -> bool {
    MOUNTER.get().is_some_and(|m| m.types.contains(&fstype))
}

/// Mount the file system of type `fstype` on the block device node `source` (named
/// `source_name`) at the directory `target`, read-only with `readonly`.
pub fn mount_block(
    source: &Loc,
    source_name: &str,
    fstype: &str,
    target: &Loc,
    readonly: bool,
) -> Result<(), Errno> {
    let meta = source.node.getattr()?;
    if meta.ftype != FileType::BlockDevice {
        return Err(Errno::ENOTBLK);
    }
    let mounter = MOUNTER.get().ok_or(Errno::ENODEV)?;
    if !target.is_dir()? {
        return Err(Errno::ENOTDIR);
    }
    if mount_table::mount_at(&target.path).is_some() {
        // Linux would stack the new mount on the old one; here one place holds one mount.
        return Err(Errno::EBUSY);
    }
    let fs = (mounter.mount)(meta.rdev, fstype)?;
    let root = match fs.root() {
        Ok(r) => r,
        Err(e) => {
            drop(fs);
            (mounter.release)(meta.rdev);
            return Err(e.into());
        }
    };
    let src = Source {
        name: String::from(source_name),
        rdev: meta.rdev,
    };
    mount_table::add(&target.path, fs, root, Some(src), readonly);
    Ok(())
}

/// Unmount the file system mounted at `target` (a canonical path): EINVAL if none is, EBUSY
/// while it is in use (`in_use`: a process's working directory inside it; an open file, a
/// mapping, a mount below it or the root are checked here). Its data is written back first; a
/// file system mounted from a block device is dropped and its disk released.
pub fn unmount(target: &str, in_use: impl Fn(&str) -> bool) -> Result<(), Errno> {
    let m = mount_table::mount_at(target).ok_or(Errno::EINVAL)?;
    if m.path == "/" || in_use(&m.path) {
        return Err(Errno::EBUSY);
    }
    // Written back before it leaves the table, so a failure leaves it mounted.
    m.fs.sync()?;
    drop(m);
    let gone = mount_table::remove(target, |m, all| {
        // The table's reference and `m` itself: anything more is an open file, a mapping or a
        // location some call is using right now.
        Arc::strong_count(m) > 1 || all.iter().any(|o| o.id != m.id && below(&o.path, &m.path))
    })?;
    let source = gone.source.clone();
    let fs = gone.fs.clone();
    drop(gone);
    if let Some(src) = source {
        // The last reference: dropping it commits what is left (dbfs) before the disk is free.
        if Arc::strong_count(&fs) == 1 {
            drop(fs);
            if let Some(mounter) = MOUNTER.get() {
                (mounter.release)(src.rdev);
            }
        } else {
            log::warn!(
                "unmounted {} is still referenced; its disk stays busy",
                target
            );
        }
    }
    Ok(())
}

/// Change the mount whose root is `target` (a canonical path) to read-only or read-write
/// (MS_REMOUNT): EINVAL if `target` is no mount's root, EBUSY when making it read-only while
/// a file is open through it for writing. Its data is written back before it turns
/// read-only.
pub fn remount(target: &str, readonly: bool) -> Result<(), Errno> {
    let m = mount_table::mount_at(target).ok_or(Errno::EINVAL)?;
    if readonly && !m.is_readonly() {
        m.set_readonly(true)?;
        if let Err(e) = m.fs.sync() {
            let _ = m.set_readonly(false);
            return Err(e.into());
        }
        return Ok(());
    }
    m.set_readonly(readonly)
}

/// Whether `path` lies strictly below the directory `dir` (both canonical).
fn below(path: &str, dir: &str) -> bool {
    if dir == "/" {
        return path != "/";
    }
    path.len() > dir.len() && path.starts_with(dir) && path.as_bytes()[dir.len()] == b'/'
}
