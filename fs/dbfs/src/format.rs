//! On-image layout of dbfs: bucket names, key encodings and the fixed-size records.
//!
//! This module is the one definition of the layout; the FUSE tool and fsck use it through the
//! crate's public re-exports. Keys are big-endian so that the B+tree's byte order is numeric
//! order (a cursor walks a file's chunks, or a directory's cookies, in order). Record fields are
//! little-endian. Every decoder checks lengths and ranges and returns `Corrupted`; nothing read
//! from an image can panic.

use alloc::string::String;
use alloc::vec::Vec;

use vfs::{FileType, Timestamp, VfsError, VfsResult};

/// `statfs` `f_type` of dbfs ("DBFS" in ASCII).
pub const DBFS_MAGIC: u64 = 0x4442_4653;
/// First bytes of the superblock record.
pub const SUPERBLOCK_MAGIC: [u8; 8] = *b"dbfs-os\0";
/// On-image format version this code reads and writes.
pub const FORMAT_VERSION: u32 = 1;
/// Inode number of the root directory.
pub const ROOT_INO: u64 = 1;
/// Longest name of a directory entry, in bytes.
pub const NAME_MAX: usize = 255;
/// Longest symlink target, in bytes (PATH_MAX - 1).
pub const SYMLINK_MAX: usize = 4095;
/// Longest extended-attribute name, in bytes.
pub const XATTR_NAME_MAX: usize = 255;
/// Largest extended-attribute value, in bytes.
pub const XATTR_SIZE_MAX: usize = 65536;
/// Longest volume label, in bytes.
pub const LABEL_MAX: usize = 64;
/// Most hard links (and subdirectories + 2) an inode may have.
pub const LINK_MAX: u32 = 65000;
/// Largest file size (2^48 bytes).
pub const MAX_FILE_SIZE: u64 = 1 << 48;
/// Smallest and largest data chunk sizes accepted by mkfs and mount.
pub const MIN_CHUNK_SIZE: u32 = 512;
/// See [`MIN_CHUNK_SIZE`].
pub const MAX_CHUNK_SIZE: u32 = 1 << 20;
/// Smallest kvdb page size dbfs accepts: keys (directory ino + 255-byte name) must fit.
pub const MIN_PAGE_SIZE: usize = 4096;

/// Names of the top-level kvdb buckets.
pub mod bucket {
    /// `"superblock"` -> [`super::Superblock`].
    pub const META: &[u8] = b"meta";
    /// ino (BE u64) -> [`super::Inode`] record.
    pub const INODES: &[u8] = b"inodes";
    /// dir ino (BE u64) ++ name -> [`super::NameEntry`] (the name index of directories).
    pub const NAMES: &[u8] = b"names";
    /// dir ino (BE u64) ++ cookie (BE u64) -> [`super::CookieEntry`] (listing order).
    pub const COOKIES: &[u8] = b"cookies";
    /// ino (BE u64) ++ chunk index (BE u64) -> chunk bytes (absent = hole).
    pub const DATA: &[u8] = b"data";
    /// ino (BE u64) -> symlink target bytes.
    pub const SYMLINKS: &[u8] = b"symlinks";
    /// ino (BE u64) ++ attribute name -> value.
    pub const XATTRS: &[u8] = b"xattrs";
    /// ino (BE u64) -> empty: inodes with no links that were still open.
    pub const ORPHANS: &[u8] = b"orphans";
    /// Every bucket, in the order mkfs creates them.
    pub const ALL: [&[u8]; 8] = [
        META, INODES, NAMES, COOKIES, DATA, SYMLINKS, XATTRS, ORPHANS,
    ];
}

/// Key of the superblock record in the `meta` bucket.
pub const SUPERBLOCK_KEY: &[u8] = b"superblock";

pub(crate) fn corrupt<T>() -> VfsResult<T> {
    Err(VfsError::Corrupted)
}

fn u32_at(b: &[u8], at: usize) -> VfsResult<u32> {
    match b.get(at..at + 4) {
        Some(s) => Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]])),
        None => corrupt(),
    }
}

fn u64_at(b: &[u8], at: usize) -> VfsResult<u64> {
    match b.get(at..at + 8) {
        Some(s) => {
            let mut a = [0u8; 8];
            a.copy_from_slice(s);
            Ok(u64::from_le_bytes(a))
        }
        None => corrupt(),
    }
}

/// Big-endian u64 at the start of a key.
pub(crate) fn be_u64(b: &[u8]) -> Option<u64> {
    let s = b.get(..8)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(s);
    Some(u64::from_be_bytes(a))
}

pub(crate) fn ino_key(ino: u64) -> [u8; 8] {
    ino.to_be_bytes()
}

/// `(ino, n)` as 16 big-endian bytes: chunk keys and cookie keys.
pub(crate) fn pair_key(ino: u64, n: u64) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&ino.to_be_bytes());
    k[8..].copy_from_slice(&n.to_be_bytes());
    k
}

/// `(ino, name)`: name-index keys and xattr keys.
pub(crate) fn name_key(ino: u64, name: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(8 + name.len());
    k.extend_from_slice(&ino.to_be_bytes());
    k.extend_from_slice(name);
    k
}

/// The superblock: what mkfs chose; mount refuses an image whose superblock it does not
/// understand.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Superblock {
    /// On-image format version mkfs wrote ([`FORMAT_VERSION`]); another version refuses the mount.
    pub version: u32,
    /// kvdb page size the image was made with.
    pub page_size: u32,
    /// Bytes per data chunk.
    pub chunk_size: u32,
    /// Incompatible feature bits; this version knows none, so any set bit refuses the mount.
    pub incompat: u32,
    /// Random identity of the file system, chosen by mkfs (bytes 24..40 of the record).
    pub uuid: [u8; 16],
    /// Volume label, UTF-8, at most [`LABEL_MAX`] bytes.
    pub label: String,
    /// Next inode number to hand out (never reused).
    pub next_ino: u64,
    /// Inodes in use (including orphans).
    pub inode_count: u64,
    /// When mkfs ran.
    pub created: Timestamp,
}

const SB_LEN: usize = 64 + 1 + LABEL_MAX;

impl Superblock {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(SB_LEN);
        b.extend_from_slice(&SUPERBLOCK_MAGIC);
        b.extend_from_slice(&self.version.to_le_bytes());
        b.extend_from_slice(&self.page_size.to_le_bytes());
        b.extend_from_slice(&self.chunk_size.to_le_bytes());
        b.extend_from_slice(&self.incompat.to_le_bytes());
        b.extend_from_slice(&self.uuid);
        b.extend_from_slice(&self.next_ino.to_le_bytes());
        b.extend_from_slice(&self.inode_count.to_le_bytes());
        b.extend_from_slice(&self.created.sec.to_le_bytes());
        let label = self.label.as_bytes();
        let n = label.len().min(LABEL_MAX);
        b.push(n as u8);
        b.extend_from_slice(&label[..n]);
        b.resize(SB_LEN, 0);
        b
    }

    /// Decode and check the magic only; the caller checks version and parameters so that it can
    /// say which one it does not understand.
    pub(crate) fn decode(b: &[u8]) -> Option<Superblock> {
        if b.len() != SB_LEN || b[..8] != SUPERBLOCK_MAGIC {
            return None;
        }
        let n = b[64] as usize;
        let label = core::str::from_utf8(b.get(65..65 + n)?).ok()?;
        let mut uuid = [0u8; 16];
        uuid.copy_from_slice(&b[24..40]);
        Some(Superblock {
            version: u32_at(b, 8).ok()?,
            page_size: u32_at(b, 12).ok()?,
            chunk_size: u32_at(b, 16).ok()?,
            incompat: u32_at(b, 20).ok()?,
            uuid,
            next_ino: u64_at(b, 40).ok()?,
            inode_count: u64_at(b, 48).ok()?,
            created: Timestamp {
                sec: u64_at(b, 56).ok()? as i64,
                nsec: 0,
            },
            label: String::from(label),
        })
    }
}

pub(crate) fn ftype_code(t: FileType) -> u8 {
    match t {
        FileType::Regular => 1,
        FileType::Directory => 2,
        FileType::Symlink => 3,
        FileType::CharDevice => 4,
        FileType::BlockDevice => 5,
        FileType::Fifo => 6,
        FileType::Socket => 7,
    }
}

pub(crate) fn ftype_from(code: u8) -> VfsResult<FileType> {
    Ok(match code {
        1 => FileType::Regular,
        2 => FileType::Directory,
        3 => FileType::Symlink,
        4 => FileType::CharDevice,
        5 => FileType::BlockDevice,
        6 => FileType::Fifo,
        7 => FileType::Socket,
        _ => return corrupt(),
    })
}

/// The attribute record of one inode (fixed size, [`INODE_LEN`] bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Inode {
    /// Kind of node (byte 1 of the record; codes 1..7, regular to socket).
    pub ftype: FileType,
    /// Permission bits including set-id and sticky (`0o7777`).
    pub perm: u32,
    /// Owner user id.
    pub uid: u32,
    /// Owner group id.
    pub gid: u32,
    /// Directory entries naming the inode; 0 with the inode still open makes it an orphan.
    pub nlink: u32,
    /// Size in bytes (`st_size`; a symlink: its target's length).
    pub size: u64,
    /// Bytes of stored chunk data, each chunk rounded up to 512 (`st_blocks` * 512).
    pub alloc_bytes: u64,
    /// Device number of a character or block device node, else 0.
    pub rdev: u64,
    /// Last data access (seconds and nanoseconds since the Unix epoch).
    pub atime: Timestamp,
    /// Last data modification.
    pub mtime: Timestamp,
    /// Last change of data or attributes.
    pub ctime: Timestamp,
    /// Directories: the parent directory (`..`; the root is its own parent). Else 0.
    pub parent: u64,
    /// Directories: the next readdir cookie to hand out (never reused). Else 0.
    pub next_cookie: u64,
}

/// Length of an encoded [`Inode`].
pub const INODE_LEN: usize = 104;
const INODE_VERSION: u8 = 1;

fn put_time(b: &mut Vec<u8>, t: Timestamp) {
    b.extend_from_slice(&t.sec.to_le_bytes());
    b.extend_from_slice(&t.nsec.to_le_bytes());
}

fn time_at(b: &[u8], at: usize) -> VfsResult<Timestamp> {
    let sec = u64_at(b, at)? as i64;
    let nsec = u32_at(b, at + 8)?;
    if nsec >= 1_000_000_000 {
        return corrupt();
    }
    Ok(Timestamp { sec, nsec })
}

impl Inode {
    pub(crate) fn encode(&self) -> [u8; INODE_LEN] {
        let mut b = Vec::with_capacity(INODE_LEN);
        b.push(INODE_VERSION);
        b.push(ftype_code(self.ftype));
        b.extend_from_slice(&[0, 0]);
        b.extend_from_slice(&self.perm.to_le_bytes());
        b.extend_from_slice(&self.uid.to_le_bytes());
        b.extend_from_slice(&self.gid.to_le_bytes());
        b.extend_from_slice(&self.nlink.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&self.size.to_le_bytes());
        b.extend_from_slice(&self.alloc_bytes.to_le_bytes());
        b.extend_from_slice(&self.rdev.to_le_bytes());
        put_time(&mut b, self.atime);
        put_time(&mut b, self.mtime);
        put_time(&mut b, self.ctime);
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&self.parent.to_le_bytes());
        b.extend_from_slice(&self.next_cookie.to_le_bytes());
        let mut out = [0u8; INODE_LEN];
        out.copy_from_slice(&b);
        out
    }

    pub(crate) fn decode(b: &[u8]) -> VfsResult<Inode> {
        if b.len() != INODE_LEN || b[0] != INODE_VERSION {
            return corrupt();
        }
        let perm = u32_at(b, 4)?;
        if perm & !0o7777 != 0 {
            return corrupt();
        }
        Ok(Inode {
            ftype: ftype_from(b[1])?,
            perm,
            uid: u32_at(b, 8)?,
            gid: u32_at(b, 12)?,
            nlink: u32_at(b, 16)?,
            size: u64_at(b, 24)?,
            alloc_bytes: u64_at(b, 32)?,
            rdev: u64_at(b, 40)?,
            atime: time_at(b, 48)?,
            mtime: time_at(b, 60)?,
            ctime: time_at(b, 72)?,
            parent: u64_at(b, 88)?,
            next_cookie: u64_at(b, 96)?,
        })
    }
}

/// Value of a name-index entry: where the entry sits in the listing and what it names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NameEntry {
    /// The entry's readdir cookie: its key in the `cookies` bucket, so its place in the listing.
    pub cookie: u64,
    /// Inode number the name refers to.
    pub ino: u64,
    /// Kind of that inode, kept here so readdir need not read the inode.
    pub ftype: FileType,
}

impl NameEntry {
    pub(crate) fn encode(&self) -> [u8; 17] {
        let mut b = [0u8; 17];
        b[..8].copy_from_slice(&self.cookie.to_le_bytes());
        b[8..16].copy_from_slice(&self.ino.to_le_bytes());
        b[16] = ftype_code(self.ftype);
        b
    }

    pub(crate) fn decode(b: &[u8]) -> VfsResult<NameEntry> {
        if b.len() != 17 {
            return corrupt();
        }
        Ok(NameEntry {
            cookie: u64_at(b, 0)?,
            ino: u64_at(b, 8)?,
            ftype: ftype_from(b[16])?,
        })
    }
}

/// Value of a cookie entry: the listing's view of one directory entry.
pub struct CookieEntry<'a> {
    /// Inode number the entry refers to.
    pub ino: u64,
    /// Kind of that inode (the `d_type` readdir reports).
    pub ftype: FileType,
    /// The entry's name, UTF-8, 1 to [`NAME_MAX`] bytes.
    pub name: &'a str,
}

impl<'a> CookieEntry<'a> {
    pub(crate) fn encode(ino: u64, ftype: FileType, name: &str) -> Vec<u8> {
        let mut b = Vec::with_capacity(9 + name.len());
        b.extend_from_slice(&ino.to_le_bytes());
        b.push(ftype_code(ftype));
        b.extend_from_slice(name.as_bytes());
        b
    }

    pub(crate) fn decode(b: &'a [u8]) -> VfsResult<CookieEntry<'a>> {
        if b.len() < 10 || b.len() > 9 + NAME_MAX {
            return corrupt();
        }
        let name = core::str::from_utf8(&b[9..]).map_err(|_| VfsError::Corrupted)?;
        Ok(CookieEntry {
            ino: u64_at(b, 0)?,
            ftype: ftype_from(b[8])?,
            name,
        })
    }
}

/// Space a stored chunk of `len` bytes is accounted for in `st_blocks` (512-byte units).
pub(crate) fn footprint(len: usize) -> u64 {
    (len as u64).div_ceil(512) * 512
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        let i = Inode {
            ftype: FileType::Directory,
            perm: 0o2755,
            uid: 1,
            gid: 2,
            nlink: 3,
            size: 4,
            alloc_bytes: 512,
            rdev: 6,
            atime: Timestamp { sec: -7, nsec: 8 },
            mtime: Timestamp { sec: 9, nsec: 10 },
            ctime: Timestamp {
                sec: 11,
                nsec: 999_999_999,
            },
            parent: 12,
            next_cookie: 13,
        };
        assert_eq!(Inode::decode(&i.encode()), Ok(i));
        assert_eq!(Inode::decode(&i.encode()[..50]), Err(VfsError::Corrupted));
        let sb = Superblock {
            version: 1,
            page_size: 4096,
            chunk_size: 16384,
            incompat: 0,
            uuid: [7; 16],
            label: String::from("vol"),
            next_ino: 5,
            inode_count: 4,
            created: Timestamp { sec: 100, nsec: 0 },
        };
        assert_eq!(Superblock::decode(&sb.encode()), Some(sb));
        let n = NameEntry {
            cookie: 9,
            ino: 10,
            ftype: FileType::Fifo,
        };
        assert_eq!(NameEntry::decode(&n.encode()), Ok(n));
        let c = CookieEntry::encode(3, FileType::Symlink, "name");
        let d = CookieEntry::decode(&c).unwrap();
        assert_eq!((d.ino, d.ftype, d.name), (3, FileType::Symlink, "name"));
    }

    #[test]
    fn garbage_is_corrupted_not_a_panic() {
        for len in 0..120 {
            let junk: Vec<u8> = (0..len).map(|i| (i * 37 + 11) as u8).collect();
            let _ = Inode::decode(&junk);
            let _ = NameEntry::decode(&junk);
            let _ = CookieEntry::decode(&junk);
            let _ = Superblock::decode(&junk);
        }
    }
}
