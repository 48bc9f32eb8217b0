//! `struct stat`, `struct statfs`, `struct timespec`, `linux_dirent64` and mode bits, as laid out
//! by Linux on riscv64 (asm-generic). Structures are `#[repr(C)]` with explicit padding so the
//! kernel can copy them to user memory byte for byte (`as_bytes`).

/// Mask of the file-type bits of `st_mode`.
pub const S_IFMT: u32 = 0o170000;
/// File type: socket.
pub const S_IFSOCK: u32 = 0o140000;
/// File type: symbolic link.
pub const S_IFLNK: u32 = 0o120000;
/// File type: regular file.
pub const S_IFREG: u32 = 0o100000;
/// File type: block device.
pub const S_IFBLK: u32 = 0o060000;
/// File type: directory.
pub const S_IFDIR: u32 = 0o040000;
/// File type: character device.
pub const S_IFCHR: u32 = 0o020000;
/// File type: fifo (named pipe).
pub const S_IFIFO: u32 = 0o010000;
/// Set-user-id: a program runs with its owner's user id.
pub const S_ISUID: u32 = 0o4000;
/// Set-group-id: a program runs with its group's id; on a directory, new entries inherit its group.
pub const S_ISGID: u32 = 0o2000;
/// Sticky: in a directory, only an entry's owner (or the directory's) may remove it.
pub const S_ISVTX: u32 = 0o1000;

// `statfs.f_type` magic numbers (linux/magic.h) of the file systems the tests recognise.
/// `f_type` of FAT (vfat, msdos).
pub const MSDOS_SUPER_MAGIC: i64 = 0x4d44;
/// `f_type` of ext2/3/4.
pub const EXT4_SUPER_MAGIC: i64 = 0xef53;
/// `f_type` of tmpfs.
pub const TMPFS_MAGIC: i64 = 0x0102_1994;

/// `d_type`: the file system does not say; `stat` the entry.
pub const DT_UNKNOWN: u8 = 0;
/// `d_type`: fifo.
pub const DT_FIFO: u8 = 1;
/// `d_type`: character device.
pub const DT_CHR: u8 = 2;
/// `d_type`: directory.
pub const DT_DIR: u8 = 4;
/// `d_type`: block device.
pub const DT_BLK: u8 = 6;
/// `d_type`: regular file.
pub const DT_REG: u8 = 8;
/// `d_type`: symbolic link.
pub const DT_LNK: u8 = 10;
/// `d_type`: socket.
pub const DT_SOCK: u8 = 12;

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
/// `struct timespec`: a time or a duration in seconds and nanoseconds.
pub struct Timespec {
    /// Whole seconds (since the Unix epoch, for a time).
    pub tv_sec: i64,
    /// Nanoseconds past `tv_sec`, below 1_000_000_000 (`utimensat` also accepts the special
    /// values `UTIME_NOW` and `UTIME_OMIT` here).
    pub tv_nsec: i64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
/// `struct stat` of riscv64 (asm-generic), 128 bytes: what `fstat` / `newfstatat` fill.
pub struct Stat {
    /// Device number of the file system holding the file.
    pub st_dev: u64,
    /// Inode number, unique within that file system.
    pub st_ino: u64,
    /// File type bits (`S_IFMT`) and permission bits (`0o7777`).
    pub st_mode: u32,
    /// Number of hard links.
    pub st_nlink: u32,
    /// Owner user id.
    pub st_uid: u32,
    /// Owner group id.
    pub st_gid: u32,
    /// Device number a device node stands for (0 otherwise).
    pub st_rdev: u64,
    /// Padding (zero).
    pub __pad1: u64,
    /// Size in bytes (a symbolic link: its target's length).
    pub st_size: i64,
    /// Preferred I/O size in bytes.
    pub st_blksize: i32,
    /// Padding (zero).
    pub __pad2: i32,
    /// Space allocated, in 512-byte units.
    pub st_blocks: i64,
    /// Last access, seconds since the Unix epoch.
    pub st_atime: i64,
    /// Nanoseconds part of `st_atime`.
    pub st_atime_nsec: u64,
    /// Last data modification, seconds since the Unix epoch.
    pub st_mtime: i64,
    /// Nanoseconds part of `st_mtime`.
    pub st_mtime_nsec: u64,
    /// Last change of data or attributes, seconds since the Unix epoch.
    pub st_ctime: i64,
    /// Nanoseconds part of `st_ctime`.
    pub st_ctime_nsec: u64,
    /// Reserved (zero).
    pub __unused: [u32; 2],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
/// `struct statfs` of riscv64 (asm-generic), 120 bytes: what `statfs` / `fstatfs` fill.
pub struct Statfs {
    /// File-system type magic (`MSDOS_SUPER_MAGIC`, ...).
    pub f_type: i64,
    /// Size in bytes of the blocks counted below.
    pub f_bsize: i64,
    /// Total data blocks.
    pub f_blocks: u64,
    /// Free blocks.
    pub f_bfree: u64,
    /// Free blocks an unprivileged user may use.
    pub f_bavail: u64,
    /// Total inodes.
    pub f_files: u64,
    /// Free inodes.
    pub f_ffree: u64,
    /// File-system id (may be zero).
    pub f_fsid: [i32; 2],
    /// Longest file name, in bytes.
    pub f_namelen: i64,
    /// Fragment size in bytes (here the same as `f_bsize`).
    pub f_frsize: i64,
    /// Mount flags (`ST_RDONLY`, `ST_NOSUID`, ...).
    pub f_flags: i64,
    /// Reserved (zero).
    pub f_spare: [i64; 4],
}

/// Header of one `linux_dirent64` record; the NUL-terminated name follows, and the record is
/// padded to a multiple of 8 bytes (`d_reclen`).
pub const DIRENT64_HEADER: usize = 19;

/// Length of the `linux_dirent64` record holding a name of `name_len` bytes.
pub const fn dirent64_reclen(name_len: usize) -> usize {
    (DIRENT64_HEADER + name_len + 1 + 7) & !7
}

macro_rules! plain_bytes {
    ($($t:ty),*) => {$(
        impl $t {
            /// The structure's bytes in memory order, for copying to or from user space.
            pub fn as_bytes(&self) -> [u8; core::mem::size_of::<$t>()] {
                let mut out = [0u8; core::mem::size_of::<$t>()];
                let mut w = Writer { buf: &mut out, at: 0 };
                self.write_fields(&mut w);
                out
            }
            /// Parse the structure from its memory bytes (little-endian riscv64).
            pub fn from_bytes(bytes: &[u8; core::mem::size_of::<$t>()]) -> Self {
                let mut r = Reader { buf: bytes, at: 0 };
                Self::read_fields(&mut r)
            }
        }
    )*};
}

struct Writer<'a> {
    buf: &'a mut [u8],
    at: usize,
}
impl Writer<'_> {
    fn put(&mut self, b: &[u8]) {
        self.buf[self.at..self.at + b.len()].copy_from_slice(b);
        self.at += b.len();
    }
}
struct Reader<'a> {
    buf: &'a [u8],
    at: usize,
}
impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let mut a = [0u8; N];
        a.copy_from_slice(&self.buf[self.at..self.at + N]);
        self.at += N;
        a
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take())
    }
    fn i64(&mut self) -> i64 {
        i64::from_le_bytes(self.take())
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take())
    }
    fn i32(&mut self) -> i32 {
        i32::from_le_bytes(self.take())
    }
}

impl Timespec {
    fn write_fields(&self, w: &mut Writer) {
        w.put(&self.tv_sec.to_le_bytes());
        w.put(&self.tv_nsec.to_le_bytes());
    }
    fn read_fields(r: &mut Reader) -> Self {
        Timespec {
            tv_sec: r.i64(),
            tv_nsec: r.i64(),
        }
    }
}

impl Stat {
    fn write_fields(&self, w: &mut Writer) {
        w.put(&self.st_dev.to_le_bytes());
        w.put(&self.st_ino.to_le_bytes());
        w.put(&self.st_mode.to_le_bytes());
        w.put(&self.st_nlink.to_le_bytes());
        w.put(&self.st_uid.to_le_bytes());
        w.put(&self.st_gid.to_le_bytes());
        w.put(&self.st_rdev.to_le_bytes());
        w.put(&self.__pad1.to_le_bytes());
        w.put(&self.st_size.to_le_bytes());
        w.put(&self.st_blksize.to_le_bytes());
        w.put(&self.__pad2.to_le_bytes());
        w.put(&self.st_blocks.to_le_bytes());
        w.put(&self.st_atime.to_le_bytes());
        w.put(&self.st_atime_nsec.to_le_bytes());
        w.put(&self.st_mtime.to_le_bytes());
        w.put(&self.st_mtime_nsec.to_le_bytes());
        w.put(&self.st_ctime.to_le_bytes());
        w.put(&self.st_ctime_nsec.to_le_bytes());
        w.put(&self.__unused[0].to_le_bytes());
        w.put(&self.__unused[1].to_le_bytes());
    }
    fn read_fields(r: &mut Reader) -> Self {
        Stat {
            st_dev: r.u64(),
            st_ino: r.u64(),
            st_mode: r.u32(),
            st_nlink: r.u32(),
            st_uid: r.u32(),
            st_gid: r.u32(),
            st_rdev: r.u64(),
            __pad1: r.u64(),
            st_size: r.i64(),
            st_blksize: r.i32(),
            __pad2: r.i32(),
            st_blocks: r.i64(),
            st_atime: r.i64(),
            st_atime_nsec: r.u64(),
            st_mtime: r.i64(),
            st_mtime_nsec: r.u64(),
            st_ctime: r.i64(),
            st_ctime_nsec: r.u64(),
            __unused: [r.u32(), r.u32()],
        }
    }
}

impl Statfs {
    fn write_fields(&self, w: &mut Writer) {
        for v in [self.f_type, self.f_bsize] {
            w.put(&v.to_le_bytes());
        }
        for v in [
            self.f_blocks,
            self.f_bfree,
            self.f_bavail,
            self.f_files,
            self.f_ffree,
        ] {
            w.put(&v.to_le_bytes());
        }
        w.put(&self.f_fsid[0].to_le_bytes());
        w.put(&self.f_fsid[1].to_le_bytes());
        for v in [self.f_namelen, self.f_frsize, self.f_flags] {
            w.put(&v.to_le_bytes());
        }
        for v in self.f_spare {
            w.put(&v.to_le_bytes());
        }
    }
    fn read_fields(r: &mut Reader) -> Self {
        Statfs {
            f_type: r.i64(),
            f_bsize: r.i64(),
            f_blocks: r.u64(),
            f_bfree: r.u64(),
            f_bavail: r.u64(),
            f_files: r.u64(),
            f_ffree: r.u64(),
            f_fsid: [r.i32(), r.i32()],
            f_namelen: r.i64(),
            f_frsize: r.i64(),
            f_flags: r.i64(),
            f_spare: [r.i64(), r.i64(), r.i64(), r.i64()],
        }
    }
}

// statx(2): the `mask` bits saying which fields are asked for / filled in.
/// `stx_mode`'s file type.
pub const STATX_TYPE: u32 = 0x1;
/// `stx_mode`'s permission bits.
pub const STATX_MODE: u32 = 0x2;
/// `stx_nlink`.
pub const STATX_NLINK: u32 = 0x4;
/// `stx_uid`.
pub const STATX_UID: u32 = 0x8;
/// `stx_gid`.
pub const STATX_GID: u32 = 0x10;
/// `stx_atime`.
pub const STATX_ATIME: u32 = 0x20;
/// `stx_mtime`.
pub const STATX_MTIME: u32 = 0x40;
/// `stx_ctime`.
pub const STATX_CTIME: u32 = 0x80;
/// `stx_ino`.
pub const STATX_INO: u32 = 0x100;
/// `stx_size`.
pub const STATX_SIZE: u32 = 0x200;
/// `stx_blocks`.
pub const STATX_BLOCKS: u32 = 0x400;
/// Everything `struct stat` holds.
pub const STATX_BASIC_STATS: u32 = 0x7ff;
/// `stx_mnt_id`.
pub const STATX_MNT_ID: u32 = 0x1000;
/// Reserved for a larger `struct statx`: asking for it is EINVAL.
pub const STATX__RESERVED: u32 = 0x8000_0000;
/// statx flags: the sync mode bits (`AT_STATX_FORCE_SYNC` 0x2000, `AT_STATX_DONT_SYNC`
/// 0x4000; both at once is EINVAL).
pub const AT_STATX_SYNC_TYPE: u32 = 0x6000;

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
/// `struct statx_timestamp`, 16 bytes.
pub struct StatxTimestamp {
    /// Seconds since the Unix epoch.
    pub tv_sec: i64,
    /// Nanoseconds past `tv_sec`.
    pub tv_nsec: u32,
    /// Reserved (zero).
    pub __reserved: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
/// `struct statx` (linux/stat.h), 256 bytes: what `statx` fills.
pub struct Statx {
    /// Which fields are filled in (`STATX_*`).
    pub stx_mask: u32,
    /// Preferred I/O size in bytes.
    pub stx_blksize: u32,
    /// `STATX_ATTR_*` flags of the file.
    pub stx_attributes: u64,
    /// Number of hard links.
    pub stx_nlink: u32,
    /// Owner user id.
    pub stx_uid: u32,
    /// Owner group id.
    pub stx_gid: u32,
    /// File type and permission bits.
    pub stx_mode: u16,
    /// Padding (zero).
    pub __spare0: u16,
    /// Inode number.
    pub stx_ino: u64,
    /// Size in bytes.
    pub stx_size: u64,
    /// Space allocated, in 512-byte units.
    pub stx_blocks: u64,
    /// Which `stx_attributes` bits the file system supports.
    pub stx_attributes_mask: u64,
    /// Last access.
    pub stx_atime: StatxTimestamp,
    /// Creation (not filled here: `STATX_BTIME` stays clear).
    pub stx_btime: StatxTimestamp,
    /// Last change of data or attributes.
    pub stx_ctime: StatxTimestamp,
    /// Last data modification.
    pub stx_mtime: StatxTimestamp,
    /// Major and minor of the device a device node stands for.
    pub stx_rdev_major: u32,
    /// See `stx_rdev_major`.
    pub stx_rdev_minor: u32,
    /// Major and minor of the file system's device.
    pub stx_dev_major: u32,
    /// See `stx_dev_major`.
    pub stx_dev_minor: u32,
    /// Mount id.
    pub stx_mnt_id: u64,
    /// Direct I/O alignments (0: not supported).
    pub stx_dio_mem_align: u32,
    /// See `stx_dio_mem_align`.
    pub stx_dio_offset_align: u32,
    /// Reserved (zero).
    pub __spare3: [u64; 12],
}

/// Major number of a Linux `dev_t`.
pub const fn dev_major(dev: u64) -> u32 {
    (((dev >> 32) & 0xffff_f000) | ((dev >> 8) & 0xfff)) as u32
}

/// Minor number of a Linux `dev_t`.
pub const fn dev_minor(dev: u64) -> u32 {
    (((dev >> 12) & 0xffff_ff00) | (dev & 0xff)) as u32
}

impl Statx {
    /// The statx view of `st` (every basic field, `STATX_BASIC_STATS | STATX_MNT_ID`).
    pub fn from_stat(st: &Stat, mnt_id: u64) -> Self {
        let ts = |sec: i64, nsec: u64| StatxTimestamp {
            tv_sec: sec,
            tv_nsec: nsec as u32,
            __reserved: 0,
        };
        Statx {
            stx_mask: STATX_BASIC_STATS | STATX_MNT_ID,
            stx_blksize: st.st_blksize as u32,
            stx_nlink: st.st_nlink,
            stx_uid: st.st_uid,
            stx_gid: st.st_gid,
            stx_mode: st.st_mode as u16,
            stx_ino: st.st_ino,
            stx_size: st.st_size as u64,
            stx_blocks: st.st_blocks as u64,
            stx_atime: ts(st.st_atime, st.st_atime_nsec),
            stx_ctime: ts(st.st_ctime, st.st_ctime_nsec),
            stx_mtime: ts(st.st_mtime, st.st_mtime_nsec),
            stx_rdev_major: dev_major(st.st_rdev),
            stx_rdev_minor: dev_minor(st.st_rdev),
            stx_dev_major: dev_major(st.st_dev),
            stx_dev_minor: dev_minor(st.st_dev),
            stx_mnt_id: mnt_id,
            ..Default::default()
        }
    }

    fn write_fields(&self, w: &mut Writer) {
        w.put(&self.stx_mask.to_le_bytes());
        w.put(&self.stx_blksize.to_le_bytes());
        w.put(&self.stx_attributes.to_le_bytes());
        for v in [self.stx_nlink, self.stx_uid, self.stx_gid] {
            w.put(&v.to_le_bytes());
        }
        w.put(&self.stx_mode.to_le_bytes());
        w.put(&self.__spare0.to_le_bytes());
        for v in [
            self.stx_ino,
            self.stx_size,
            self.stx_blocks,
            self.stx_attributes_mask,
        ] {
            w.put(&v.to_le_bytes());
        }
        for t in [
            self.stx_atime,
            self.stx_btime,
            self.stx_ctime,
            self.stx_mtime,
        ] {
            w.put(&t.tv_sec.to_le_bytes());
            w.put(&t.tv_nsec.to_le_bytes());
            w.put(&t.__reserved.to_le_bytes());
        }
        for v in [
            self.stx_rdev_major,
            self.stx_rdev_minor,
            self.stx_dev_major,
            self.stx_dev_minor,
        ] {
            w.put(&v.to_le_bytes());
        }
        w.put(&self.stx_mnt_id.to_le_bytes());
        w.put(&self.stx_dio_mem_align.to_le_bytes());
        w.put(&self.stx_dio_offset_align.to_le_bytes());
        for v in self.__spare3 {
            w.put(&v.to_le_bytes());
        }
    }
    fn read_fields(r: &mut Reader) -> Self {
        let ts = |r: &mut Reader| StatxTimestamp {
            tv_sec: r.i64(),
            tv_nsec: r.u32(),
            __reserved: r.i32(),
        };
        Statx {
            stx_mask: r.u32(),
            stx_blksize: r.u32(),
            stx_attributes: r.u64(),
            stx_nlink: r.u32(),
            stx_uid: r.u32(),
            stx_gid: r.u32(),
            stx_mode: u16::from_le_bytes(r.take()),
            __spare0: u16::from_le_bytes(r.take()),
            stx_ino: r.u64(),
            stx_size: r.u64(),
            stx_blocks: r.u64(),
            stx_attributes_mask: r.u64(),
            stx_atime: ts(r),
            stx_btime: ts(r),
            stx_ctime: ts(r),
            stx_mtime: ts(r),
            stx_rdev_major: r.u32(),
            stx_rdev_minor: r.u32(),
            stx_dev_major: r.u32(),
            stx_dev_minor: r.u32(),
            stx_mnt_id: r.u64(),
            stx_dio_mem_align: r.u32(),
            stx_dio_offset_align: r.u32(),
            __spare3: core::array::from_fn(|_| r.u64()),
        }
    }
}

plain_bytes!(Timespec, Stat, Statfs, Statx);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_match_linux_riscv64() {
        assert_eq!(core::mem::size_of::<Stat>(), 128);
        assert_eq!(core::mem::size_of::<Statfs>(), 120);
        assert_eq!(core::mem::size_of::<Timespec>(), 16);
        assert_eq!(core::mem::size_of::<Statx>(), 256);
        assert_eq!(core::mem::offset_of!(Statx, stx_ino), 32);
        assert_eq!(core::mem::offset_of!(Statx, stx_atime), 64);
        assert_eq!(core::mem::offset_of!(Statx, stx_rdev_major), 128);
        assert_eq!(core::mem::offset_of!(Statx, stx_mnt_id), 144);
        let x = Statx {
            stx_mode: 0o100644,
            stx_size: 9,
            stx_mtime: StatxTimestamp {
                tv_sec: 3,
                tv_nsec: 4,
                __reserved: 0,
            },
            ..Default::default()
        };
        let b = x.as_bytes();
        assert_eq!(u16::from_le_bytes(b[28..30].try_into().unwrap()), 0o100644);
        assert_eq!(Statx::from_bytes(&b), x);
        assert_eq!(dirent64_reclen(1), 24);
        assert_eq!(dirent64_reclen(5), 32);
    }

    #[test]
    fn stat_round_trips_through_bytes() {
        let s = Stat {
            st_ino: 7,
            st_mode: S_IFREG | 0o644,
            st_size: 4096,
            st_mtime_nsec: 5,
            ..Default::default()
        };
        let b = s.as_bytes();
        assert_eq!(u64::from_le_bytes(b[8..16].try_into().unwrap()), 7);
        assert_eq!(i64::from_le_bytes(b[48..56].try_into().unwrap()), 4096);
        assert_eq!(Stat::from_bytes(&b), s);
    }
}
