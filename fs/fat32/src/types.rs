//! The crate's shared vocabulary: the fatfs types instantiated over the device cursor and
//! the clock, and the constants of FAT as this crate reports it. Every other module uses these;
//! this one uses none of them.

use crate::device::{DeviceCursor, DeviceError};
use crate::time::ClockTime;

pub(crate) type FatFs = fatfs::FileSystem<DeviceCursor, ClockTime, fatfs::LossyOemCpConverter>;
pub(crate) type FatFile<'a> = fatfs::File<'a, DeviceCursor, ClockTime, fatfs::LossyOemCpConverter>;
pub(crate) type FatDir<'a> = fatfs::Dir<'a, DeviceCursor, ClockTime, fatfs::LossyOemCpConverter>;
pub(crate) type FatDirEntry<'a> =
    fatfs::DirEntry<'a, DeviceCursor, ClockTime, fatfs::LossyOemCpConverter>;
pub(crate) type FatError = fatfs::Error<DeviceError>;

/// `f_type` of `statfs` for FAT (Linux `MSDOS_SUPER_MAGIC`).
pub const MSDOS_SUPER_MAGIC: u64 = 0x4d44;
/// Inode number of the root directory (as Linux vfat).
pub const ROOT_INO: u64 = 1;
/// Longest name, in UTF-16 units.
pub const NAME_MAX: usize = 255;
/// The permission bits every node reports.
pub const FAT_PERM: u32 = 0o755;
/// Largest file size FAT can record.
pub const MAX_FILE_SIZE: u64 = u32::MAX as u64;

/// FAT32 needs at least this many clusters.
pub(crate) const FAT32_MIN_CLUSTERS: u64 = 65_525;
