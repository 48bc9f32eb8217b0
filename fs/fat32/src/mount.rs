//! The per-mount state shared by [`crate::Fat32Fs`] and its nodes, and the one lock that
//! guards it (`Mount::state`: the fatfs file system, the open-file table, the path/inode table
//! and the cached file layouts; see the crate docs for the lock rules).

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::sync::Arc;
use alloc::vec::Vec;

use spin::Mutex;
use vfs::Clock;

use crate::device::DeviceIo;
use crate::layout::Run;
use crate::names::Names;
use crate::volume::Volume;

/// Per-mount state shared by the file system and its nodes.
pub(crate) struct Mount {
    pub(crate) state: Mutex<State>,
    pub(crate) io: Arc<DeviceIo>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) cluster_size: u32,
}

pub(crate) struct State {
    pub(crate) vol: Volume,
    pub(crate) names: Names,
    /// Where the data of recently used files lives on disk, by inode number.
    pub(crate) runs: BTreeMap<u64, Vec<Run>>,
    /// Open file descriptions of each inode (`Node::open` / `release`; crate::orphan).
    pub(crate) opens: BTreeMap<u64, usize>,
    /// Inodes unlinked while open: their entries wait in the root as orphans.
    pub(crate) orphans: BTreeSet<u64>,
}
