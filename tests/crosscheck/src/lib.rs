//! Guest and host agree: the shared half of `make test-cross`.
//!
//! Layer: plain `no_std` + `alloc` logic with no I/O of its own. Each side supplies the file
//! system through two small traits and runs the same code over it:
//! - [`FsView`] (read: lstat, read, readlink, readdir, xattrs): the guest program
//!   (`user-tests/src/bin/crosscheck.rs`, Linux syscalls), `dbfs-fuse verify-tree` (the dbfs
//!   library on an image) and `dbfs-fuse verify-dir` (std::fs, e.g. on a FUSE mount).
//! - [`FsOps`] (write: mkdir, create, write at an offset, truncate, symlink, link, rename,
//!   unlink, rmdir, chmod, setxattr): the guest program, `dbfs-fuse gen-tree` (library) and
//!   `dbfs-fuse workload` (std::fs).
//!
//! What is shared:
//! - [`plan`]: a tree generated from a seed (nested directories, files from 0 bytes to a few
//!   MiB with sizes around page and chunk boundaries, sparse files, symlinks, hard links,
//!   `user.*` xattrs, 255-byte names) and the manifest it must produce, computed from the plan
//!   alone (never read back from the file system that was written).
//! - [`manifest`]: the manifest / listing text format (one entry a line: type, path, size,
//!   mode, nlink, FNV-1a-64 of the content or symlink target, xattr names with length and
//!   checksum), [`scan`] that builds the same entries from a live tree, and [`compare`].
//! - [`workload`]: the scripted workload of `tests/crosscheck/workload.txt` ([`WORKLOAD`],
//!   compiled into both sides), its parser and its runner, which also checks the errno of
//!   every step that must fail.
//!
//! Paths given to the traits are relative to the tree's root, `/`-separated, never empty
//! (the root itself is `""` only for [`FsView::read_dir`]).
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod manifest;
pub mod plan;
pub mod workload;

use alloc::string::String;
use alloc::vec::Vec;

pub use abi::Errno;
pub use manifest::{compare, scan, Entry, Kind, Report, Scan};

/// The workload script, compiled into the guest program and the host tool alike.
pub const WORKLOAD: &str = include_str!("../workload.txt");

/// The file the generated tree's manifest is stored in, at the tree's root.
pub const MANIFEST_NAME: &str = "MANIFEST";

/// Markers around a listing printed on a console, so a host can cut it out of a log.
pub const LISTING_BEGIN: &str = "--- crosscheck listing begin ---";
pub const LISTING_END: &str = "--- crosscheck listing end ---";

/// What `lstat` says about a node, as far as the cross-check looks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attr {
    pub kind: Kind,
    pub size: u64,
    /// `st_mode`: type bits and permission bits.
    pub mode: u32,
    pub nlink: u32,
}

/// Read access to a tree.
pub trait FsView {
    /// Attributes of `path`, not following a final symlink.
    fn lstat(&mut self, path: &str) -> Result<Attr, Errno>;
    /// Hand every byte of regular file `path` to `sink`, in order.
    fn read_all(&mut self, path: &str, sink: &mut dyn FnMut(&[u8])) -> Result<(), Errno>;
    fn readlink(&mut self, path: &str) -> Result<String, Errno>;
    /// Names in directory `path` (`""` = the root), without `.` and `..`, in any order.
    fn read_dir(&mut self, path: &str) -> Result<Vec<String>, Errno>;
    /// Extended attribute names of `path` (not following a symlink).
    fn list_xattrs(&mut self, path: &str) -> Result<Vec<String>, Errno>;
    fn get_xattr(&mut self, path: &str, name: &str) -> Result<Vec<u8>, Errno>;
}

/// Write access to a tree. Modes are exact (no umask applies).
pub trait FsOps {
    fn mkdir(&mut self, path: &str, mode: u32) -> Result<(), Errno>;
    /// Create an empty regular file; `EEXIST` if the name exists.
    fn create(&mut self, path: &str, mode: u32) -> Result<(), Errno>;
    /// Write `data` at `offset` of existing file `path`.
    fn write_at(&mut self, path: &str, offset: u64, data: &[u8]) -> Result<(), Errno>;
    fn truncate(&mut self, path: &str, size: u64) -> Result<(), Errno>;
    fn symlink(&mut self, target: &str, path: &str) -> Result<(), Errno>;
    fn link(&mut self, existing: &str, path: &str) -> Result<(), Errno>;
    fn rename(&mut self, from: &str, to: &str) -> Result<(), Errno>;
    fn unlink(&mut self, path: &str) -> Result<(), Errno>;
    fn rmdir(&mut self, path: &str) -> Result<(), Errno>;
    fn chmod(&mut self, path: &str, mode: u32) -> Result<(), Errno>;
    /// Set (create or replace) `name` on `path`, not following a symlink.
    fn set_xattr(&mut self, path: &str, name: &str, value: &[u8]) -> Result<(), Errno>;
    /// Make everything durable.
    fn sync(&mut self) -> Result<(), Errno>;
}

/// FNV-1a, 64 bits: the checksum of contents, symlink targets and xattr values.
#[derive(Clone, Copy, Debug)]
pub struct Fnv64(u64);

impl Fnv64 {
    pub const fn new() -> Self {
        Fnv64(0xcbf2_9ce4_8422_2325)
    }
    pub fn update(&mut self, bytes: &[u8]) {
        let mut h = self.0;
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        self.0 = h;
    }
    /// Feed `n` zero bytes (a hole).
    pub fn update_zeros(&mut self, mut n: u64) {
        let zeros = [0u8; 512];
        while n > 0 {
            let k = n.min(zeros.len() as u64) as usize;
            self.update(&zeros[..k]);
            n -= k as u64;
        }
    }
    pub fn finish(self) -> u64 {
        self.0
    }
}

impl Default for Fnv64 {
    fn default() -> Self {
        Self::new()
    }
}

/// FNV-1a-64 of `bytes`.
pub fn fnv64(bytes: &[u8]) -> u64 {
    let mut h = Fnv64::new();
    h.update(bytes);
    h.finish()
}

/// splitmix64: the generator behind every pseudo-random choice and byte.
pub fn mix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Fill `buf` with the content stream `stream` from byte `offset` on: the byte at position
/// `p` depends on the stream and on `p`, so data written at the wrong place is caught.
pub fn fill(stream: u64, offset: u64, buf: &mut [u8]) {
    let mut pos = offset;
    let mut i = 0;
    while i < buf.len() {
        let word = mix64(stream.wrapping_mul(0x2545_f491_4f6c_dd1d) ^ (pos >> 3));
        let bytes = word.to_le_bytes();
        let start = (pos & 7) as usize;
        let n = (8 - start).min(buf.len() - i);
        buf[i..i + n].copy_from_slice(&bytes[start..start + n]);
        i += n;
        pos += n as u64;
    }
}

/// The errno named `name` (`"ENOENT"`), if it is one this project knows.
pub fn errno_by_name(name: &str) -> Option<Errno> {
    (1..200).map(Errno).find(|e| e.name() == name)
}

/// `dir/name`, where `dir` may be `""` (the root).
pub fn join(dir: &str, name: &str) -> String {
    let mut s = String::with_capacity(dir.len() + 1 + name.len());
    if !dir.is_empty() {
        s.push_str(dir);
        s.push('/');
    }
    s.push_str(name);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_known_values() {
        assert_eq!(fnv64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv64(b"a"), 0xaf63_dc4c_8601_ec8c);
        let mut h = Fnv64::new();
        h.update(b"ab");
        h.update_zeros(1000);
        let mut flat = alloc::vec![0u8; 1002];
        flat[..2].copy_from_slice(b"ab");
        assert_eq!(h.finish(), fnv64(&flat));
    }

    #[test]
    fn fill_is_position_addressed() {
        let mut whole = [0u8; 100];
        fill(7, 1000, &mut whole);
        for start in [0usize, 1, 7, 8, 13, 99] {
            let mut part = [0u8; 100];
            fill(7, 1000 + start as u64, &mut part[..100 - start]);
            assert_eq!(&part[..100 - start], &whole[start..]);
        }
        let mut other = [0u8; 100];
        fill(8, 1000, &mut other);
        assert_ne!(other, whole);
    }

    #[test]
    fn errno_names() {
        assert_eq!(errno_by_name("ENOTEMPTY"), Some(Errno::ENOTEMPTY));
        assert_eq!(errno_by_name("EBOGUS"), None);
    }
}
