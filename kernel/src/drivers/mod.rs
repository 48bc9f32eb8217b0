//! The block layer (above task, below fs): virtio-blk over the MMIO transport, and the two
//! block caches file systems read and write through, FAT32's per-device `block_cache` and
//! dbfs's disk `window` (disk blocks mapped as kernel pages, built on mm's frames and page
//! tables). A device wait gives the CPU away through the task layer (`task::relax`,
//! `task::away`); the heap and the frame pool reach the caches only through the shrinker
//! and reclaimers boot registers with them.

pub mod blk_selftest;
pub mod block_cache;
pub mod virtio_blk;
pub mod window;
