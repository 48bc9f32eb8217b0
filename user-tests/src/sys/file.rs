//! [`File`]: an owned descriptor that closes on drop, with the file calls as methods.

use alloc::vec::Vec;

use abi::fcntl::*;
use abi::stat::Stat;

use super::files::{
    close, fstat, fsync, ftruncate, lseek, open, pread, pread_full, pwrite, pwrite_all, read,
    read_full, write, write_all,
};
use super::marshal::{Fd, SysResult};

/// An open file descriptor, closed on drop.
#[derive(Debug)]
pub struct File {
    fd: Fd,
}

impl File {
    /// `open(path, flags, mode)`.
    pub fn open(path: &str, flags: u32, mode: u32) -> SysResult<File> {
        open(path, flags | O_CLOEXEC, mode).map(|fd| File { fd })
    }
    /// Open read-only.
    pub fn open_read(path: &str) -> SysResult<File> {
        File::open(path, O_RDONLY, 0)
    }
    /// Create or truncate for writing (`O_WRONLY|O_CREAT|O_TRUNC`, mode 0644).
    pub fn create(path: &str) -> SysResult<File> {
        File::open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    }
    /// Own a descriptor a system call just returned (closed on drop).
    ///
    /// # Safety
    /// Nothing else may own or close `fd`.
    pub unsafe fn from_raw(fd: Fd) -> File {
        File { fd }
    }
    /// The raw descriptor (still owned by `self`).
    pub fn fd(&self) -> Fd {
        self.fd
    }
    /// Give up ownership: the descriptor is not closed on drop.
    pub fn into_raw(self) -> Fd {
        let fd = self.fd;
        core::mem::forget(self);
        fd
    }
    /// Close now, reporting the error that drop would hide.
    pub fn close(self) -> SysResult<()> {
        close(self.into_raw())
    }
    pub fn read(&self, buf: &mut [u8]) -> SysResult<usize> {
        read(self.fd, buf)
    }
    pub fn write(&self, buf: &[u8]) -> SysResult<usize> {
        write(self.fd, buf)
    }
    pub fn write_all(&self, buf: &[u8]) -> SysResult<()> {
        write_all(self.fd, buf)
    }
    pub fn read_full(&self, buf: &mut [u8]) -> SysResult<usize> {
        read_full(self.fd, buf)
    }
    pub fn pread(&self, buf: &mut [u8], offset: u64) -> SysResult<usize> {
        pread(self.fd, buf, offset)
    }
    pub fn pwrite(&self, buf: &[u8], offset: u64) -> SysResult<usize> {
        pwrite(self.fd, buf, offset)
    }
    pub fn pread_full(&self, buf: &mut [u8], offset: u64) -> SysResult<usize> {
        pread_full(self.fd, buf, offset)
    }
    pub fn pwrite_all(&self, buf: &[u8], offset: u64) -> SysResult<()> {
        pwrite_all(self.fd, buf, offset)
    }
    pub fn seek(&self, offset: i64, whence: u32) -> SysResult<u64> {
        lseek(self.fd, offset, whence)
    }
    pub fn stat(&self) -> SysResult<Stat> {
        fstat(self.fd)
    }
    pub fn sync(&self) -> SysResult<()> {
        fsync(self.fd)
    }
    pub fn set_len(&self, len: u64) -> SysResult<()> {
        ftruncate(self.fd, len)
    }
    /// Read everything from the current offset to EOF.
    pub fn read_to_end(&self) -> SysResult<Vec<u8>> {
        let mut out = Vec::new();
        let mut chunk = [0u8; 512];
        loop {
            match self.read(&mut chunk)? {
                0 => return Ok(out),
                n => out.extend_from_slice(&chunk[..n]),
            }
        }
    }
}

impl Drop for File {
    fn drop(&mut self) {
        let _ = close(self.fd);
    }
}
