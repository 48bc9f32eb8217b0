//! A file's data layout: its runs of contiguous clusters, computed once from the cluster chain
//! and cached per inode, and the copy between a buffer and the device one request per run.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use vfs::{VfsError, VfsResult};

use crate::device::DeviceIo;
use crate::error::vfs_error;
use crate::types::FatFile;

/// Forget the cached data layout of files once this many are cached.
pub(crate) const MAX_CACHED_LAYOUTS: usize = 256;

/// File bytes `[file_start, file_start + len)` are the contiguous device bytes starting at
/// `disk_start`. A file's runs cover its size; they change only when a write grows the file
/// past its size or a truncate runs, and are recomputed after either.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Run {
    pub(crate) file_start: u64,
    pub(crate) disk_start: u64,
    pub(crate) len: u64,
}

/// The runs of `file` (size `size`), walking its cluster chain once.
pub(crate) fn file_runs(file: &mut FatFile<'_>, size: u64) -> VfsResult<Vec<Run>> {
    let mut runs: Vec<Run> = Vec::new();
    let mut at = 0u64;
    for extent in file.extents() {
        // The chain may be longer than the size says (or loop, if corrupt): stop at the size.
        if at >= size {
            break;
        }
        let e = extent.map_err(vfs_error)?;
        let len = u64::from(e.size);
        match runs.last_mut() {
            Some(r) if r.disk_start + r.len == e.offset => r.len += len,
            _ => runs.push(Run {
                file_start: at,
                disk_start: e.offset,
                len,
            }),
        }
        at += len;
    }
    if at < size {
        // The chain ends before the size: the entry or the FAT is corrupt.
        return Err(VfsError::Corrupted);
    }
    Ok(runs)
}

/// The cached runs of `ino`, computing them if needed.
pub(crate) fn runs_of<'r>(
    cache: &'r mut BTreeMap<u64, Vec<Run>>,
    ino: u64,
    file: &mut FatFile<'_>,
    size: u64,
) -> VfsResult<&'r [Run]> {
    if !cache.contains_key(&ino) {
        if cache.len() >= MAX_CACHED_LAYOUTS {
            cache.clear();
        }
        cache.insert(ino, file_runs(file, size)?);
    }
    Ok(cache.get(&ino).map_or(&[][..], |r| r.as_slice()))
}

/// Copy file bytes `[offset, offset + len)` between `buf` and the device, one device request per
/// contiguous run (plus sector read-modify-write at unaligned ends).
pub(crate) fn transfer(
    io: &DeviceIo,
    runs: &[Run],
    offset: u64,
    len: usize,
    mut step: impl FnMut(&DeviceIo, u64, core::ops::Range<usize>) -> VfsResult<()>,
) -> VfsResult<()> {
    let mut done = 0usize;
    while done < len {
        let at = offset + done as u64;
        let i = runs.partition_point(|r| r.file_start <= at);
        let run = match i.checked_sub(1).map(|i| runs[i]) {
            Some(r) if at < r.file_start + r.len => r,
            _ => return Err(VfsError::Corrupted),
        };
        let n = ((run.file_start + run.len - at) as usize).min(len - done);
        step(io, run.disk_start + (at - run.file_start), done..done + n)?;
        done += n;
    }
    Ok(())
}
