//! The file system object: formatting a device, mounting a volume (with the checks that keep
//! a non-FAT or truncated device from being used), statfs and sync.

use alloc::collections::BTreeMap;
use alloc::sync::Arc;

use spin::Mutex;
use vfs::{
    BlockDevice, Clock, FileSystem, FileType, FsStats, NodeRef, VfsError, VfsResult, SECTOR_SIZE,
};

use crate::device::{DeviceCursor, DeviceError, DeviceIo};
use crate::dir::check_dir_chain;
use crate::error::vfs_error;
use crate::mount::{Mount, State};
use crate::names::Names;
use crate::node::FatNode;
use crate::time::ClockTime;
use crate::types::{FatFs, FAT32_MIN_CLUSTERS, MSDOS_SUPER_MAGIC, NAME_MAX, ROOT_INO};
use crate::volume::Volume;

/// A mounted FAT32 volume.
pub struct Fat32Fs {
    mount: Arc<Mount>,
}

impl Fat32Fs {
    /// Write a fresh, empty FAT32 volume over the whole device.
    ///
    /// Clusters are 4 KiB when the device holds at least 65525 of them (about 260 MiB), else
    /// the largest of 2 KiB, 1 KiB and 512 bytes that still gives FAT32 enough clusters; a
    /// device too small for FAT32 even with 512-byte clusters (about 33 MiB) is `InvalidInput`.
    /// `label` is the volume label (at most 11 ASCII characters; stored upper-case).
    pub fn format(dev: Arc<dyn BlockDevice>, label: &str) -> VfsResult<()> {
        if label.len() > 11 || !label.bytes().all(|b| b.is_ascii_graphic() || b == b' ') {
            return Err(VfsError::InvalidInput);
        }
        let mut volume_label = [b' '; 11];
        for (dst, src) in volume_label.iter_mut().zip(label.bytes()) {
            *dst = src.to_ascii_uppercase();
        }
        let bytes = dev.size_bytes();
        if bytes / SECTOR_SIZE as u64 > u64::from(u32::MAX) {
            return Err(VfsError::InvalidInput);
        }
        let io = Arc::new(DeviceIo::new(dev));
        for cluster in [4096u32, 2048, 1024, 512] {
            // Leave room for the reserved sectors and the two FATs before asking fatfs.
            if bytes / u64::from(cluster) < FAT32_MIN_CLUSTERS + FAT32_MIN_CLUSTERS / 64 {
                continue;
            }
            let options = fatfs::FormatVolumeOptions::new()
                .fat_type(fatfs::FatType::Fat32)
                .bytes_per_cluster(cluster)
                .volume_label(volume_label);
            let mut cursor = DeviceCursor::new(io.clone());
            match fatfs::format_volume(&mut cursor, options) {
                Ok(()) => return io.flush(),
                // Layout rejected (too few clusters for FAT32): try smaller clusters.
                Err(fatfs::Error::InvalidInput) => continue,
                Err(e) => return Err(vfs_error(e)),
            }
        }
        Err(VfsError::InvalidInput)
    }

    /// Mount the FAT volume on `dev`. `clock` stamps new and modified entries.
    pub fn mount(dev: Arc<dyn BlockDevice>, clock: Arc<dyn Clock>) -> VfsResult<Arc<Fat32Fs>> {
        let io = Arc::new(DeviceIo::new(dev));
        if io.size() < SECTOR_SIZE as u64 {
            return Err(VfsError::InvalidInput);
        }
        let mut boot = [0u8; SECTOR_SIZE];
        io.read_bytes(0, &mut boot)?;
        let options = fatfs::FsOptions::new()
            .update_accessed_date(false)
            .time_provider(ClockTime(clock.clone()));
        let fs = FatFs::new(DeviceCursor::new(io.clone()), options).map_err(|e| match e {
            // A device shorter than its boot sector says reads past its end.
            fatfs::Error::UnexpectedEof | fatfs::Error::Io(DeviceError(VfsError::InvalidInput)) => {
                VfsError::Corrupted
            }
            e => vfs_error(e),
        })?;
        let stats = fs.stats().map_err(vfs_error)?;
        let cluster_size = fs.cluster_size();
        // The data area alone is total_clusters * cluster_size: a truncated image is corrupt.
        if u64::from(stats.total_clusters()) * u64::from(cluster_size) > io.size() {
            return Err(VfsError::Corrupted);
        }
        if fs.fat_type() == fatfs::FatType::Fat32 {
            let root_cluster = u32::from_le_bytes([boot[44], boot[45], boot[46], boot[47]]);
            if root_cluster < 2 || root_cluster >= stats.total_clusters().saturating_add(2) {
                return Err(VfsError::Corrupted);
            }
        }
        // The root directory must be readable (and its chain must end).
        check_dir_chain(&fs, &fs.root_dir())?;
        for entry in fs.root_dir().iter() {
            entry.map_err(vfs_error)?;
        }
        crate::orphan::remove_leftovers(&fs)?;
        let state = State {
            vol: Volume::new(fs),
            names: Names::new(),
            runs: BTreeMap::new(),
            opens: BTreeMap::new(),
            orphans: alloc::collections::BTreeSet::new(),
        };
        Ok(Arc::new(Fat32Fs {
            mount: Arc::new(Mount {
                state: Mutex::new(state),
                io,
                clock,
                cluster_size,
            }),
        }))
    }

    /// Bytes per cluster of this volume.
    pub fn cluster_size(&self) -> u32 {
        self.mount.cluster_size
    }
}

impl FileSystem for Fat32Fs {
    fn fs_name(&self) -> &'static str {
        "fat32"
    }

    fn root(&self) -> VfsResult<NodeRef> {
        Ok(Arc::new(FatNode {
            mount: self.mount.clone(),
            ino: ROOT_INO,
            ftype: FileType::Directory,
        }))
    }

    fn statfs(&self) -> VfsResult<FsStats> {
        let st = self.mount.state.lock();
        let stats = st.vol.fs().stats().map_err(vfs_error)?;
        Ok(FsStats {
            fs_type: MSDOS_SUPER_MAGIC,
            block_size: u64::from(stats.cluster_size()),
            blocks: u64::from(stats.total_clusters()),
            blocks_free: u64::from(stats.free_clusters()),
            blocks_available: u64::from(stats.free_clusters()),
            files: 0,
            files_free: 0,
            name_max: NAME_MAX as u64,
        })
    }

    fn sync(&self) -> VfsResult<()> {
        let mut st = self.mount.state.lock();
        st.vol.flush_all().map_err(vfs_error)?;
        self.mount.io.flush()
    }

    fn unmount(&self) -> VfsResult<()> {
        let mut st = self.mount.state.lock();
        st.vol.unmount().map_err(vfs_error)?;
        self.mount.io.flush()
    }
}
