//! `workloads`: the seed experiments' other workloads in the guest (`make bench-workloads`).
//!
//! ```text
//! workloads NAME:DIR... [reps=N] [workloads=all|NAME,NAME...] [quick]
//! e.g. workloads dbfs:/dbfs fat32:/fat reps=3 workloads=varmail,mdtest
//! ```
//!
//! fileserver, webserver, varmail (filebench-style), mdtest (a tree of depth 3, fan-out 6,
//! 8 files a directory), create_empty, delete_2m and createdel_ordered: the code is the
//! `workloads` crate (bench/workloads), the same the host's `workloads-host` runs against a
//! dbfs-fuse or fuse2fs mount; this file only maps its `Fs` trait to Linux syscalls. Each
//! workload works in DIR/wl-NAME and removes it afterwards. Prints `PARAMS` and `RESULT`
//! lines, a table per phase, and closes with `workloads: N results, N errors`; exit status 1
//! on any error.
#![no_std]
#![no_main]

use user_tests::prelude::*;
use workloads::Open;

struct Guest;

impl workloads::Fs for Guest {
    type File = File;

    fn open(&mut self, path: &str, how: Open) -> Result<File, Errno> {
        let flags = match how {
            Open::Read => O_RDONLY,
            Open::CreateNew => O_WRONLY | O_CREAT | O_EXCL,
            Open::Append => O_WRONLY | O_APPEND,
        };
        File::open(path, flags | O_CLOEXEC, 0o644)
    }

    fn write(&mut self, f: &mut File, data: &[u8]) -> Result<(), Errno> {
        f.write_all(data)
    }

    fn read(&mut self, f: &mut File, buf: &mut [u8]) -> Result<usize, Errno> {
        f.read(buf)
    }

    fn fsync(&mut self, f: &mut File) -> Result<(), Errno> {
        f.sync()
    }

    fn close(&mut self, f: File) -> Result<(), Errno> {
        f.close()
    }

    fn fsync_dir(&mut self, path: &str) -> Result<(), Errno> {
        let d = File::open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0)?;
        d.sync()?;
        d.close()
    }

    fn stat_size(&mut self, path: &str) -> Result<u64, Errno> {
        sys::stat(path).map(|st| st.st_size as u64)
    }

    fn mkdir(&mut self, path: &str) -> Result<(), Errno> {
        sys::mkdir(path, 0o755)
    }

    fn unlink(&mut self, path: &str) -> Result<(), Errno> {
        sys::unlink(path)
    }

    fn rmdir(&mut self, path: &str) -> Result<(), Errno> {
        sys::rmdir(path)
    }

    fn remove_tree(&mut self, path: &str) -> Result<(), Errno> {
        sys::remove_tree(path)
    }

    fn is_dir(&mut self, path: &str) -> bool {
        sys::stat(path).is_ok_and(|st| st.st_mode & S_IFMT == S_IFDIR)
    }

    fn now_ns(&mut self) -> u64 {
        user_tests::time::now_ns()
    }

    fn print(&mut self, line: &str) {
        println!("{line}");
    }

    /// `dbfs` and `fat32` must be what statfs says the directory is on.
    fn check_label(&mut self, name: &str, dir: &str) -> Result<(), String> {
        let want = match name {
            "dbfs" => DBFS_MAGIC,
            "fat32" => MSDOS_SUPER_MAGIC,
            _ => return Ok(()),
        };
        match sys::statfs(dir) {
            Ok(st) if st.f_type == want => Ok(()),
            Ok(st) => Err(format!(
                "{dir} is on a file system of type {:#x}, not {name}",
                st.f_type
            )),
            Err(e) => Err(format!("statfs {dir}: {}", e.name())),
        }
    }
}

/// `statfs.f_type` of dbfs ("DBFS"), as the kernel reports it.
const DBFS_MAGIC: i64 = 0x4442_4653;

fn main(argv: &[&str]) -> i32 {
    workloads::main(&mut Guest, argv)
}

user_tests::entry!(main);
