//! The file system a workload runs on: the small [`Fs`] trait each side (guest syscalls, host
//! std::fs) implements, and how a file is opened ([`Open`]).

use alloc::string::String;

use abi::Errno;

/// How a file is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Open {
    /// `O_RDONLY`.
    Read,
    /// `O_WRONLY | O_CREAT | O_EXCL`, mode 0644.
    CreateNew,
    /// `O_WRONLY | O_APPEND` of an existing file.
    Append,
}

/// The file system under test, as the workloads see it. Paths are absolute (the target's
/// directory joined with names the workload makes).
pub trait Fs {
    type File;
    fn open(&mut self, path: &str, how: Open) -> Result<Self::File, Errno>;
    /// Write all of `data` at the file's position.
    fn write(&mut self, f: &mut Self::File, data: &[u8]) -> Result<(), Errno>;
    /// Read up to `buf.len()` bytes at the file's position (0 = end of file).
    fn read(&mut self, f: &mut Self::File, buf: &mut [u8]) -> Result<usize, Errno>;
    fn fsync(&mut self, f: &mut Self::File) -> Result<(), Errno>;
    fn close(&mut self, f: Self::File) -> Result<(), Errno>;
    /// Open directory `path` and fsync it (makes creates and unlinks in it durable).
    fn fsync_dir(&mut self, path: &str) -> Result<(), Errno>;
    /// `st_size` of `path` (stat, following symlinks).
    fn stat_size(&mut self, path: &str) -> Result<u64, Errno>;
    fn mkdir(&mut self, path: &str) -> Result<(), Errno>;
    fn unlink(&mut self, path: &str) -> Result<(), Errno>;
    fn rmdir(&mut self, path: &str) -> Result<(), Errno>;
    /// Remove `path` and everything under it; absent is fine (untimed clean-up).
    fn remove_tree(&mut self, path: &str) -> Result<(), Errno>;
    /// Whether `path` is an existing directory.
    fn is_dir(&mut self, path: &str) -> bool;
    /// Monotonic nanoseconds.
    fn now_ns(&mut self) -> u64;
    /// One console line.
    fn print(&mut self, line: &str);
    /// Whether `dir` is on the file system the label `name` says (shared/BENCH-PROTOCOL.md:
    /// a disk that failed to mount must not yield figures under its name). Labels a side
    /// does not know are accepted.
    fn check_label(&mut self, _name: &str, _dir: &str) -> Result<(), String> {
        Ok(())
    }
}
