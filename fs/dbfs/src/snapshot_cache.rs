//! Small caches of what recent read snapshots hold, so sequential small reads skip work: the
//! inode records ([`SnapshotInodes`]) and where runs of a file's chunks lie ([`ChunkLocs`]).
//! A snapshot never changes, so an entry keyed by its transaction id is right for as long as
//! readers see that transaction; nothing is ever invalidated, entries just stop matching.
//!
//! Both live in `DbFs::state` and are only touched under it. A copy from a remembered chunk
//! location must also hold kvdb's snapshot lock ([`kvdb::Db::with_committed`]), so the pages
//! cannot be reused meanwhile (see `DbFs::read_remembered`).

use alloc::vec::Vec;

use kvdb::{Pager, Tx};
use vfs::{Timestamp, VfsError, VfsResult};

use crate::atime::{relatime_due, RELATIME_SECS};
use crate::error::kv;
use crate::format::{bucket, pair_key};
use crate::format::{Inode, NameEntry};

/// Directory entries as recent snapshots hold them: `(txid, dir, name) -> entry`, or `None`
/// for a name the directory did not have. A path walk looks each component up, and the same
/// directories again and again (every `stat` of `/usr/lib/...` walks `usr` and `lib`), so a
/// lookup repeated within one commit reads no tree. Entries are replaced round-robin.
#[derive(Default)]
pub(crate) struct SnapshotNames {
    slots: Vec<(u64, u64, alloc::string::String, Option<NameEntry>)>,
    next: usize,
}

/// How many entries [`SnapshotNames`] keeps.
const NAME_SLOTS: usize = 64;

impl SnapshotNames {
    /// What snapshot `txid` says `dir` holds under `name`, if remembered: `Some(None)` for
    /// a name it does not hold.
    pub(crate) fn get(&self, txid: u64, dir: u64, name: &str) -> Option<Option<NameEntry>> {
        self.slots
            .iter()
            .find(|s| s.0 == txid && s.1 == dir && s.2 == name)
            .map(|s| s.3)
    }

    /// Remember what snapshot `txid` says `dir` holds under `name`.
    pub(crate) fn put(&mut self, txid: u64, dir: u64, name: &str, entry: Option<NameEntry>) {
        let slot = (txid, dir, alloc::string::String::from(name), entry);
        if self.slots.len() < NAME_SLOTS {
            self.slots.push(slot);
        } else {
            self.slots[self.next] = slot;
            self.next = (self.next + 1) % NAME_SLOTS;
        }
    }
}

/// A few inode records as stored in given snapshots: `(txid, ino) -> record`. A snapshot
/// never changes, so an entry is right for as long as its txid is the one a reader sees; a
/// sequential reader of one file then looks its inode up once per commit, not once per call.
#[derive(Default)]
pub(crate) struct SnapshotInodes {
    slots: [(u64, u64, Option<Inode>); 8],
    next: usize,
}

impl SnapshotInodes {
    pub(crate) fn get(&self, txid: u64, ino: u64) -> Option<&Inode> {
        self.slots
            .iter()
            .find(|s| s.0 == txid && s.1 == ino)
            .and_then(|s| s.2.as_ref())
    }
    pub(crate) fn put(&mut self, txid: u64, ino: u64, inode: Inode) {
        self.slots[self.next] = (txid, ino, Some(inode));
        self.next = (self.next + 1) % self.slots.len();
    }
}

/// The first second at which a read of `i` is due a `relatime` update
/// ([`crate::atime::relatime_due`]): at once (`i64::MIN`) if its atime is not after its mtime
/// or ctime, else a day after the atime.
pub(crate) fn atime_due_at(i: &Inode) -> i64 {
    // At the earliest time only the mtime and ctime rules can make it due.
    const EARLIEST: Timestamp = Timestamp {
        sec: i64::MIN,
        nsec: 0,
    };
    if relatime_due(i, EARLIEST) {
        i64::MIN
    } else {
        i.atime.sec.saturating_add(RELATIME_SECS)
    }
}

/// Chunks one [`ChunkLocs`] run remembers: a sequential 4 KiB reader walks the tree once per
/// this many chunks (per commit).
pub(crate) const CHUNK_RUN: usize = 32;

/// Where a few runs of consecutive stored chunks lie, as committed in given snapshots:
/// `(txid, ino)` -> chunk `first + k` is an overflow value of `locs[k].1` bytes at store offset
/// `locs[k].0`. Like [`SnapshotInodes`], a run is right for as long as its txid is the newest
/// commit, so a small read of a remembered chunk copies it under [`kvdb::Db::with_committed`]
/// with neither a read transaction nor a tree walk ([`crate::DbFs::read_remembered`]). A run
/// also holds what that read needs of the inode's record in the same snapshot (its size, and
/// the second its `relatime` update falls due), so it looks nothing else up. Runs are only
/// walked for readers that look sequential (or re-read a chunk), so random reads pay nothing.
#[derive(Default)]
pub(crate) struct ChunkLocs {
    slots: [ChunkRun; 4],
    next: usize,
}

#[derive(Default, Clone, Copy)]
struct ChunkRun {
    /// `ino` 0 (no inode has it): an empty slot.
    ino: u64,
    txid: u64,
    first: u64,
    len: usize,
    locs: [(u64, u32); CHUNK_RUN],
    /// The last chunk of `ino` a small read did not find here (or the last of the run).
    last_miss: u64,
    /// The size in `ino`'s record of snapshot `txid`.
    size: u64,
    /// When a read of that record is due a `relatime` update ([`atime_due_at`]).
    atime_due_at: i64,
}

/// What [`ChunkLocs::at`] knows of a remembered chunk.
pub(crate) struct ChunkAt {
    /// Store offset and stored length of the chunk.
    pub loc: (u64, u32),
    /// The file's size in the same snapshot.
    pub size: u64,
    /// [`atime_due_at`] of the file's record in the same snapshot.
    pub atime_due_at: i64,
}

impl ChunkLocs {
    /// The run of `ino` (of any snapshot) that holds chunk `idx`, if one does: the read then
    /// asks it for the chunk ([`ChunkLocs::at`]) under the snapshot lock, without a second
    /// search of the slots.
    #[inline]
    pub(crate) fn covering(&self, ino: u64, idx: u64) -> Option<usize> {
        self.slots
            .iter()
            .position(|r| r.ino == ino && idx >= r.first && idx - r.first < r.len as u64)
    }

    /// Where chunk `idx` lies in snapshot `txid`, from the run [`ChunkLocs::covering`] found
    /// (`None` if that run is of another snapshot), with the file's size and atime deadline.
    #[inline]
    pub(crate) fn at(&self, run: usize, txid: u64, idx: u64) -> Option<ChunkAt> {
        let r = self.slots.get(run).filter(|r| r.txid == txid)?;
        let k = usize::try_from(idx.wrapping_sub(r.first)).ok()?;
        let loc = *r.locs[..r.len.min(CHUNK_RUN)].get(k)?;
        Some(ChunkAt {
            loc,
            size: r.size,
            atime_due_at: r.atime_due_at,
        })
    }

    /// A small read of chunk `idx` of `ino` found no location: whether the reader looks
    /// sequential (this chunk or the next one after the last miss), so a run is worth walking.
    pub(crate) fn missed(&mut self, ino: u64, idx: u64) -> bool {
        if let Some(r) = self.slots.iter_mut().find(|r| r.ino == ino) {
            let sequential = idx == r.last_miss || Some(idx) == r.last_miss.checked_add(1);
            r.last_miss = idx;
            return sequential;
        }
        self.slots[self.next] = ChunkRun {
            ino,
            last_miss: idx,
            ..ChunkRun::default()
        };
        self.next = (self.next + 1) % self.slots.len();
        false
    }

    /// Remember `locs` (chunks `first..`) of `ino` in snapshot `txid`, where its record is
    /// `inode`.
    pub(crate) fn put(
        &mut self,
        txid: u64,
        ino: u64,
        inode: &Inode,
        first: u64,
        locs: &[(u64, u32)],
    ) {
        let at = match self.slots.iter().position(|r| r.ino == ino) {
            Some(at) => at,
            None => {
                let at = self.next;
                self.next = (self.next + 1) % self.slots.len();
                at
            }
        };
        let r = &mut self.slots[at];
        let len = locs.len().min(CHUNK_RUN);
        *r = ChunkRun {
            ino,
            txid,
            first,
            len,
            last_miss: first + len.saturating_sub(1) as u64,
            size: inode.size,
            atime_due_at: atime_due_at(inode),
            ..ChunkRun::default()
        };
        r.locs[..len].copy_from_slice(&locs[..len]);
    }
}

/// Where the stored chunks of `ino` from `idx` on lie: up to [`CHUNK_RUN`] consecutive chunks
/// held as overflow values (store offset, length), stopping at a hole or an inline value.
pub(crate) fn chunk_run<P: Pager>(
    tx: &Tx<'_, P>,
    ino: u64,
    idx: u64,
    cs: u64,
    locs: &mut Vec<(u64, u32)>,
) -> VfsResult<()> {
    let data = tx.get_bucket(bucket::DATA).map_err(kv)?;
    let mut cursor = data.cursor();
    let mut entry = cursor.seek(&pair_key(ino, idx)).map_err(kv)?;
    while let Some(e) = entry {
        let want = idx
            .checked_add(locs.len() as u64)
            .ok_or(VfsError::Corrupted)?;
        if e.key() != pair_key(ino, want).as_slice() {
            break;
        }
        match e.overflow_location() {
            Some((at, len)) if len <= cs => locs.push((at, len as u32)),
            _ => break,
        }
        if locs.len() == CHUNK_RUN {
            break;
        }
        entry = cursor.next().map_err(kv)?;
    }
    Ok(())
}
