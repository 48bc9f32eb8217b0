//! [`Fs`] over std::fs, for `workloads-host` and the crate's tests.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::time::Instant;

use abi::Errno;

use crate::fs::{Fs, Open};

/// The host's file system through std::fs; paths are used as given.
pub struct HostFs {
    epoch: Instant,
}

impl Default for HostFs {
    fn default() -> Self {
        HostFs {
            epoch: Instant::now(),
        }
    }
}

fn errno(e: std::io::Error) -> Errno {
    Errno(e.raw_os_error().unwrap_or(Errno::EIO.0))
}

impl Fs for HostFs {
    type File = File;

    fn open(&mut self, path: &str, how: Open) -> Result<File, Errno> {
        let mut o = OpenOptions::new();
        match how {
            Open::Read => o.read(true),
            Open::CreateNew => o.write(true).create_new(true).mode(0o644),
            Open::Append => o.append(true),
        };
        o.open(path).map_err(errno)
    }

    fn write(&mut self, f: &mut File, data: &[u8]) -> Result<(), Errno> {
        f.write_all(data).map_err(errno)
    }

    fn read(&mut self, f: &mut File, buf: &mut [u8]) -> Result<usize, Errno> {
        f.read(buf).map_err(errno)
    }

    fn fsync(&mut self, f: &mut File) -> Result<(), Errno> {
        f.sync_all().map_err(errno)
    }

    fn close(&mut self, f: File) -> Result<(), Errno> {
        // std closes on drop and ignores close's error; no file system here reports one.
        drop(f);
        Ok(())
    }

    fn fsync_dir(&mut self, path: &str) -> Result<(), Errno> {
        File::open(path).and_then(|d| d.sync_all()).map_err(errno)
    }

    fn stat_size(&mut self, path: &str) -> Result<u64, Errno> {
        fs::metadata(path).map(|m| m.len()).map_err(errno)
    }

    fn mkdir(&mut self, path: &str) -> Result<(), Errno> {
        fs::create_dir(path).map_err(errno)
    }

    fn unlink(&mut self, path: &str) -> Result<(), Errno> {
        fs::remove_file(path).map_err(errno)
    }

    fn rmdir(&mut self, path: &str) -> Result<(), Errno> {
        fs::remove_dir(path).map_err(errno)
    }

    fn remove_tree(&mut self, path: &str) -> Result<(), Errno> {
        match fs::remove_dir_all(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            r => r.map_err(errno),
        }
    }

    fn is_dir(&mut self, path: &str) -> bool {
        fs::metadata(path).is_ok_and(|m| m.is_dir())
    }

    fn now_ns(&mut self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    fn print(&mut self, line: &str) {
        println!("{line}");
    }

    /// `tmpfs`, `dbfs-fuse` and `fuse2fs-*` are checked against the mount `dir` is on
    /// (/proc/mounts: dbfs-fuse mounts as source `dbfs`, type `fuse`); other names are free.
    fn check_label(&mut self, name: &str, dir: &str) -> Result<(), String> {
        let want: fn(&str, &str) -> bool = match name {
            "tmpfs" => |_, ty| ty == "tmpfs",
            "dbfs-fuse" => |src, ty| src == "dbfs" && ty.starts_with("fuse"),
            n if n.starts_with("fuse2fs") => |src, ty| src != "dbfs" && ty.starts_with("fuse"),
            _ => return Ok(()),
        };
        let (src, ty) = mount_of(dir).ok_or_else(|| format!("{dir}: not found in /proc/mounts"))?;
        if want(&src, &ty) {
            Ok(())
        } else {
            Err(format!("{dir} is on {src} ({ty}), not {name}"))
        }
    }
}

/// (source, type) of the mount `dir` lies on: the longest mount point that contains it.
fn mount_of(dir: &str) -> Option<(String, String)> {
    let dir = fs::canonicalize(dir).ok()?;
    let mounts = fs::read_to_string("/proc/mounts").ok()?;
    mounts
        .lines()
        .filter_map(|l| {
            let mut f = l.split(' ');
            let (src, at, ty) = (f.next()?, f.next()?, f.next()?);
            // /proc/mounts escapes spaces and the like as octal; our mount points have none.
            dir.starts_with(at)
                .then(|| (at.len(), src.to_string(), ty.to_string()))
        })
        .max_by_key(|m| m.0)
        .map(|(_, src, ty)| (src, ty))
}
