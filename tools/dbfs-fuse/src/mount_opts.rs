//! `-o` mount options: the kernel's (as fuser's [`MountOption`]s) and the tool's own
//! (`nobarrier`, `nowriteback_cache`, `nodirect_writes`, `cache_size=`), told apart in one place.

use fuser::{MountOption, SessionACL};

use crate::image::{self, parse_size};

/// The tool's own mount options (not passed to the kernel).
pub(crate) struct ToolOptions {
    /// kvdb barriers `fdatasync` the image (`nobarrier` turns them off).
    pub(crate) barriers: bool,
    /// The kernel's write-back cache (`nowriteback_cache` turns it off).
    pub(crate) writeback_cache: bool,
    /// The image page cache's budget in bytes (`cache_size=`).
    pub(crate) cache_bytes: usize,
    /// dbfs stores large whole-chunk writes directly (`nodirect_writes` turns it off).
    pub(crate) direct_writes: bool,
}

/// Mount options as fuser understands them; `default_permissions` is always added. The tool's
/// own options (`nobarrier`, `nowriteback_cache`, `nodirect_writes`, `cache_size=`) are taken out and returned.
pub(crate) fn mount_options(
    opts: &[String],
) -> Result<(Vec<MountOption>, SessionACL, ToolOptions), String> {
    let mut tool = ToolOptions {
        barriers: true,
        writeback_cache: true,
        cache_bytes: image::default_mount_cache_bytes(),
        direct_writes: true,
    };
    let mut out = vec![
        MountOption::FSName("dbfs".into()),
        MountOption::Subtype("dbfs".into()),
        MountOption::DefaultPermissions,
    ];
    let mut acl = SessionACL::Owner;
    for o in opts
        .iter()
        .flat_map(|s| s.split(','))
        .filter(|s| !s.is_empty())
    {
        let m = match o {
            "allow_other" => {
                acl = SessionACL::All;
                continue;
            }
            "allow_root" => {
                acl = SessionACL::RootAndOwner;
                continue;
            }
            "auto_unmount" => MountOption::AutoUnmount,
            "default_permissions" => continue,
            "nobarrier" => {
                tool.barriers = false;
                continue;
            }
            "barrier" => {
                tool.barriers = true;
                continue;
            }
            "nowriteback_cache" => {
                tool.writeback_cache = false;
                continue;
            }
            "writeback_cache" => {
                tool.writeback_cache = true;
                continue;
            }
            "nodirect_writes" => {
                tool.direct_writes = false;
                continue;
            }
            "direct_writes" => {
                tool.direct_writes = true;
                continue;
            }
            x if x.starts_with("cache_size=") => {
                let v = &x["cache_size=".len()..];
                tool.cache_bytes = parse_size(v)
                    .ok()
                    .and_then(|b| usize::try_from(b).ok())
                    .ok_or_else(|| format!("-o cache_size={v}: not a size (e.g. 512M, 2G, 0)"))?;
                continue;
            }
            "ro" => MountOption::RO,
            "rw" => MountOption::RW,
            "dev" => MountOption::Dev,
            "nodev" => MountOption::NoDev,
            "suid" => MountOption::Suid,
            "nosuid" => MountOption::NoSuid,
            "exec" => MountOption::Exec,
            "noexec" => MountOption::NoExec,
            "atime" => MountOption::Atime,
            "noatime" => MountOption::NoAtime,
            "sync" => MountOption::Sync,
            "async" => MountOption::Async,
            "dirsync" => MountOption::DirSync,
            x if x.starts_with("fsname=") => MountOption::FSName(x["fsname=".len()..].into()),
            x if x.starts_with("subtype=") => MountOption::Subtype(x["subtype=".len()..].into()),
            x => MountOption::CUSTOM(x.into()),
        };
        if let MountOption::FSName(_) | MountOption::Subtype(_) = m {
            out.retain(|o| std::mem::discriminant(o) != std::mem::discriminant(&m));
        }
        out.push(m);
    }
    if out.contains(&MountOption::AutoUnmount) && acl == SessionACL::Owner {
        // fusermount3 implements auto_unmount only for mounts other users may see.
        acl = SessionACL::RootAndOwner;
    }
    Ok((out, acl, tool))
}
