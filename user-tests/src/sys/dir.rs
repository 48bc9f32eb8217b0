//! Directory listing: [`read_dir`] (a getdents64 iterator), the parser of one `linux_dirent64`
//! record, and [`remove_tree`].

use alloc::string::String;
use alloc::vec::Vec;

use abi::fcntl::*;
use abi::Errno;

use super::file::File;
use super::files::{getdents64, lstat};
use super::marshal::SysResult;
use super::names::{rmdir, unlink};

/// One `linux_dirent64` record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirEntry {
    pub ino: u64,
    /// `d_off`: the cookie to resume after this entry (opaque; only its use through the file
    /// offset is defined).
    pub off: i64,
    pub reclen: u16,
    /// `DT_REG`, `DT_DIR`, ... or `DT_UNKNOWN`.
    pub kind: u8,
    pub name: String,
}

/// Iterator over a directory's entries via `getdents64` (including `.` and `..`).
pub struct ReadDir {
    file: File,
    buf: Vec<u8>,
    pos: usize,
    len: usize,
    done: bool,
}

/// Open `path` as a directory and iterate its entries with a `buf_size`-byte getdents buffer.
pub fn read_dir_with(path: &str, buf_size: usize) -> SysResult<ReadDir> {
    let file = File::open(path, O_RDONLY | O_DIRECTORY, 0)?;
    Ok(ReadDir {
        file,
        buf: alloc::vec![0u8; buf_size],
        pos: 0,
        len: 0,
        done: false,
    })
}

/// Open `path` as a directory and iterate its entries.
pub fn read_dir(path: &str) -> SysResult<ReadDir> {
    read_dir_with(path, 4096)
}

impl Iterator for ReadDir {
    type Item = SysResult<DirEntry>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.pos >= self.len {
            if self.done {
                return None;
            }
            match getdents64(self.file.fd(), &mut self.buf) {
                Ok(0) => {
                    self.done = true;
                    return None;
                }
                Ok(n) => {
                    self.len = n;
                    self.pos = 0;
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
        let entry = parse_dirent(&self.buf[self.pos..self.len]);
        match &entry {
            Ok(e) => self.pos += e.reclen as usize,
            Err(_) => {
                self.done = true;
                self.pos = self.len;
            }
        }
        Some(entry)
    }
}

/// Decode the first `linux_dirent64` record of `b`; a malformed record is `EIO`.
pub fn parse_dirent(b: &[u8]) -> SysResult<DirEntry> {
    let hdr = abi::stat::DIRENT64_HEADER;
    if b.len() < hdr {
        return Err(Errno::EIO);
    }
    let ino = u64::from_le_bytes(b[0..8].try_into().map_err(|_| Errno::EIO)?);
    let off = i64::from_le_bytes(b[8..16].try_into().map_err(|_| Errno::EIO)?);
    let reclen = u16::from_le_bytes([b[16], b[17]]);
    let kind = b[18];
    if (reclen as usize) < hdr + 1 || reclen as usize > b.len() {
        return Err(Errno::EIO);
    }
    let name_bytes = &b[hdr..reclen as usize];
    let end = name_bytes.iter().position(|&c| c == 0).ok_or(Errno::EIO)?;
    let name = String::from_utf8(name_bytes[..end].to_vec()).map_err(|_| Errno::EIO)?;
    Ok(DirEntry {
        ino,
        off,
        reclen,
        kind,
        name,
    })
}

/// Remove `path` and everything below it (best effort on races; errors other than ENOENT
/// are returned).
pub fn remove_tree(path: &str) -> SysResult<()> {
    let st = match lstat(path) {
        Ok(st) => st,
        Err(Errno::ENOENT) => return Ok(()),
        Err(e) => return Err(e),
    };
    if st.st_mode & abi::stat::S_IFMT != abi::stat::S_IFDIR {
        return unlink(path);
    }
    // Collect first: removing while iterating is allowed on Linux but needlessly subtle.
    let mut names = Vec::new();
    for e in read_dir(path)? {
        let e = e?;
        if e.name != "." && e.name != ".." {
            names.push(e.name);
        }
    }
    for n in names {
        remove_tree(&crate::path_join(path, &n))?;
    }
    rmdir(path)
}
