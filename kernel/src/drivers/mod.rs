//! Device drivers: virtio-blk over the MMIO transport, and the per-device block cache that
//! file systems read and write through.

pub mod blk_selftest;
pub mod block_cache;
pub mod virtio_blk;
