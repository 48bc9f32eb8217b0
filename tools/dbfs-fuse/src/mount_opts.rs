//! `-o` mount options: the kernel's (as fuser's [`MountOption`]s) and the tool's own
//! (`nobarrier`, `nowriteback_cache`, `nokeep_cache`, `noclose_errors`, `nodirect_writes`,
//! `nouring`, `noidle_commits`, `cache_size=`), told apart in one place.

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
    /// Files open with the kernel's page cache kept (`nokeep_cache` turns it off).
    pub(crate) keep_cache: bool,
    /// close(2) reports a refused write-back write or a failed background commit
    /// (`close_errors`; on by default, `noclose_errors` turns it off).
    pub(crate) close_errors: bool,
    /// Requests through the kernel's per-CPU io_uring queues when it offers them (`uring`, the
    /// default; `nouring` keeps them on /dev/fuse; see `crate::uring`).
    pub(crate) uring: bool,
    /// Ring threads answer small reads as `SCHED_IDLE`, so the caller wakes on its own CPU
    /// (`idle_commits`, the default; `noidle_commits` turns it off; see `uring/wake.rs`).
    pub(crate) idle_commits: bool,
}

impl ToolOptions {
    /// Set the on/off option `o` (`name` or `noname`) if it is one of the tool's own.
    fn flag(&mut self, o: &str) -> bool {
        let (field, on) = match o {
            "barrier" => (&mut self.barriers, true),
            "nobarrier" => (&mut self.barriers, false),
            "writeback_cache" => (&mut self.writeback_cache, true),
            "nowriteback_cache" => (&mut self.writeback_cache, false),
            "keep_cache" => (&mut self.keep_cache, true),
            "nokeep_cache" => (&mut self.keep_cache, false),
            "close_errors" => (&mut self.close_errors, true),
            "noclose_errors" => (&mut self.close_errors, false),
            "direct_writes" => (&mut self.direct_writes, true),
            "nodirect_writes" => (&mut self.direct_writes, false),
            "uring" => (&mut self.uring, true),
            "nouring" => (&mut self.uring, false),
            "idle_commits" => (&mut self.idle_commits, true),
            "noidle_commits" => (&mut self.idle_commits, false),
            _ => return false,
        };
        *field = on;
        true
    }
}

/// The kernel's `max_read` unless `-o max_read=` says otherwise: the largest FUSE read
/// request. With `FUSE_ASYNC_DIO` (adapter/session.rs, `init`) a 1 MiB O_DIRECT read is then two
/// requests that two worker threads serve at once; one 1 MiB request was served by one
/// thread. Measured on 1 MiB reads of files just written, caches dropped: with one fio job
/// faster, with four about the same, and 256 KiB requests were slower with four jobs
/// (docs/BENCHMARKS.md, "1 MiB reads and writes through FUSE: one pread a read").
pub(crate) const MAX_READ: u32 = 512 << 10;

/// Mount options as fuser understands them, for a tool running as `euid`: `max_read=`
/// ([`MAX_READ`]) is always added (a `-o max_read=` replaces it), and `default_permissions`
/// as [`kernel_checks_permissions`] decides. The tool's own options (`nobarrier`,
/// `nowriteback_cache`, `nokeep_cache`, `noclose_errors`, `nodirect_writes`, `nouring`,
/// `noidle_commits`, `cache_size=`) are taken out and returned.
pub(crate) fn mount_options(
    opts: &[String],
    euid: u32,
) -> Result<(Vec<MountOption>, SessionACL, ToolOptions), String> {
    let mut tool = ToolOptions {
        barriers: true,
        writeback_cache: true,
        cache_bytes: image::default_mount_cache_bytes(),
        direct_writes: true,
        keep_cache: true,
        close_errors: true,
        uring: true,
        idle_commits: true,
    };
    let mut out = vec![
        MountOption::FSName("dbfs".into()),
        MountOption::Subtype("dbfs".into()),
        MountOption::CUSTOM(format!("max_read={MAX_READ}")),
    ];
    let mut acl = SessionACL::Owner;
    let mut asked_checks = false;
    for o in opts
        .iter()
        .flat_map(|s| s.split(','))
        .filter(|s| !s.is_empty())
    {
        if tool.flag(o) {
            continue;
        }
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
            "default_permissions" => {
                asked_checks = true;
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
            x if x.starts_with("max_read=") => {
                out.retain(|o| !matches!(o, MountOption::CUSTOM(c) if c.starts_with("max_read=")));
                MountOption::CUSTOM(x.into())
            }
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
    if asked_checks || kernel_checks_permissions(acl, euid) {
        out.push(MountOption::DefaultPermissions);
    }
    Ok((out, acl, tool))
}

/// Whether the kernel checks mode bits for dbfs (`default_permissions`; dbfs itself checks
/// none): yes unless only root can reach the mount (the tool runs as root, without
/// `allow_other`; `allow_root` then adds no one). Root passes the kernel's checks but one,
/// executing a regular file with no x bit, which the kernel makes with or without the option.
/// Without it the kernel spares a round trip per change to a directory: under
/// `default_permissions` it asks again for a changed directory's attributes (a GETATTR)
/// before the next permission check in it, one of the three requests of every unlink
/// (fuse2fs, mounted without the option, sends one). `-o default_permissions` asks for the
/// checks anyway, e.g. for a root process without CAP_DAC_OVERRIDE, which they would stop.
pub(crate) fn kernel_checks_permissions(acl: SessionACL, euid: u32) -> bool {
    acl == SessionACL::All || euid != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn max_reads(opts: &[MountOption]) -> Vec<String> {
        opts.iter()
            .filter_map(|o| match o {
                MountOption::CUSTOM(c) if c.starts_with("max_read=") => Some(c.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn max_read_has_a_default_that_an_option_replaces() {
        let (opts, _, _) = mount_options(&[], 0).unwrap();
        assert_eq!(max_reads(&opts), [format!("max_read={MAX_READ}")]);
        let (opts, _, _) = mount_options(&["noatime,max_read=65536".into()], 0).unwrap();
        assert_eq!(max_reads(&opts), ["max_read=65536"]);
        assert!(opts.contains(&MountOption::NoAtime));
    }

    #[test]
    fn the_cache_and_close_options_are_the_tools_own() {
        let (opts, _, tool) = mount_options(&[], 0).unwrap();
        assert!(tool.keep_cache && tool.close_errors && tool.uring && tool.idle_commits);
        let n = opts.len();
        let (opts, _, tool) = mount_options(
            &["nokeep_cache,noclose_errors,nouring,noidle_commits".into()],
            0,
        )
        .unwrap();
        assert!(!tool.keep_cache && !tool.close_errors && !tool.uring && !tool.idle_commits);
        assert_eq!(opts.len(), n, "no kernel option was added");
    }

    #[test]
    fn the_kernel_checks_permissions_unless_only_root_can_reach_the_mount() {
        let checks = |o: &str, euid: u32| {
            let (opts, _, _) = mount_options(&[o.to_string()], euid).unwrap();
            let n = opts
                .iter()
                .filter(|o| **o == MountOption::DefaultPermissions)
                .count();
            assert!(n <= 1, "{o}: {opts:?}");
            n == 1
        };
        // Root alone: its processes pass every check the option would add.
        assert!(!checks("", 0));
        assert!(!checks("allow_root", 0));
        assert!(!checks("auto_unmount", 0));
        // Other users' processes reach the mount, or the tool is not root: the kernel checks.
        assert!(checks("allow_other", 0));
        assert!(checks("", 1000));
        assert!(checks("allow_root", 1000));
        // Asked for: always (once).
        assert!(checks("default_permissions", 0));
        assert!(checks("allow_other,default_permissions", 0));
    }
}
