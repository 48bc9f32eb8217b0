//! Changing an open file's size: shrinking frees clusters, growing writes zeros.

use fatfs::{Seek, SeekFrom, Write};
use vfs::{Timestamp, VfsError, VfsResult};

use crate::error::vfs_error;
use crate::time;
use crate::types::{FatFile, MAX_FILE_SIZE};

pub(crate) fn write_zeros(file: &mut FatFile<'_>, mut count: u64) -> VfsResult<()> {
    let zeros = [0u8; 4096];
    while count > 0 {
        let n = count.min(zeros.len() as u64) as usize;
        file.write_all(&zeros[..n]).map_err(vfs_error)?;
        count -= n as u64;
    }
    Ok(())
}

/// Resize an open file: shrink frees clusters, growth writes zeros; the modification time
/// becomes `now` whether or not the size changed (truncate(2), ftruncate(2) and O_TRUNC update
/// it, as Linux vfat's truncate does).
pub(crate) fn resize(file: &mut FatFile<'_>, size: u64, now: Timestamp) -> VfsResult<()> {
    resize_data(file, size)?;
    #[allow(deprecated)]
    file.set_modified(time::to_fat(now));
    Ok(())
}

pub(crate) fn resize_data(file: &mut FatFile<'_>, size: u64) -> VfsResult<()> {
    if size > MAX_FILE_SIZE {
        return Err(VfsError::FileTooLarge);
    }
    let current = u64::from(file.size().unwrap_or(0));
    if size < current {
        file.seek(SeekFrom::Start(size)).map_err(vfs_error)?;
        file.truncate().map_err(vfs_error)?;
    } else if size > current {
        file.seek(SeekFrom::End(0)).map_err(vfs_error)?;
        write_zeros(file, size - current)?;
    }
    Ok(())
}
