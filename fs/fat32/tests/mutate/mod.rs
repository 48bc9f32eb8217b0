//! Damaged FAT images through the adapter: shared by the regression test `tests/corrupt.rs` and
//! the fuzz target `fuzz/fuzz_targets/mount_walk.rs` (which includes this file by path).
//!
//! A valid seed volume is built once ([`seed_image`]); each case lays a list of byte mutations
//! ([`apply`]) over it in a copy-on-write device ([`Overlay`], so a case does not copy the
//! 36 MiB image), then [`exercise`] mounts it, walks the whole tree (getattr, readdir, lookup,
//! read every file), writes, creates, renames and unlinks, syncs, unmounts and mounts again.
//! Every call may fail; none may panic or loop.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use fat32::Fat32Fs;
use vfs::conformance::{walk_bounded, Walked};
use vfs::{
    BlockDevice, Clock, FileSystem, FileType, NewNode, NodeRef, RamDisk, RenameFlags, Timestamp,
    VfsResult, SECTOR_SIZE,
};

/// Seed volume size: just above the FAT32 minimum with 512-byte clusters (65525 clusters), so
/// directories and files span many clusters and chains are long.
pub const SEED_BYTES: usize = 36 * 1024 * 1024;

/// A clock fixed at 2024-05-01 12:00:00 UTC.
pub struct FixedClock;
impl Clock for FixedClock {
    fn now(&self) -> Timestamp {
        Timestamp {
            sec: 1_714_564_800,
            nsec: 0,
        }
    }
}

/// Sectors of `base`, with the sectors written or mutated since kept aside.
pub struct Overlay {
    base: Arc<Vec<u8>>,
    changed: Mutex<BTreeMap<u64, Box<[u8; SECTOR_SIZE]>>>,
}

impl Overlay {
    pub fn new(base: Arc<Vec<u8>>) -> Self {
        Overlay {
            base,
            changed: Mutex::new(BTreeMap::new()),
        }
    }

    fn sector(&self, changed: &BTreeMap<u64, Box<[u8; SECTOR_SIZE]>>, s: u64) -> [u8; SECTOR_SIZE] {
        match changed.get(&s) {
            Some(d) => **d,
            None => {
                let at = s as usize * SECTOR_SIZE;
                self.base[at..at + SECTOR_SIZE].try_into().unwrap()
            }
        }
    }

    /// Overwrite bytes at `pos` (clipped to the device).
    pub fn poke(&self, pos: u64, bytes: &[u8]) {
        let mut changed = self.changed.lock().unwrap();
        for (i, &b) in bytes.iter().enumerate() {
            let p = pos + i as u64;
            if p >= self.base.len() as u64 {
                break;
            }
            let s = p / SECTOR_SIZE as u64;
            let mut data = self.sector(&changed, s);
            data[(p % SECTOR_SIZE as u64) as usize] = b;
            changed.insert(s, Box::new(data));
        }
    }

    /// Read bytes at `pos` (zeros past the end).
    pub fn peek(&self, pos: u64, out: &mut [u8]) {
        let changed = self.changed.lock().unwrap();
        for (i, o) in out.iter_mut().enumerate() {
            let p = pos + i as u64;
            *o = if p < self.base.len() as u64 {
                self.sector(&changed, p / SECTOR_SIZE as u64)[(p % SECTOR_SIZE as u64) as usize]
            } else {
                0
            };
        }
    }
}

impl BlockDevice for Overlay {
    fn num_sectors(&self) -> u64 {
        (self.base.len() / SECTOR_SIZE) as u64
    }
    fn read_sectors(&self, sector: u64, buf: &mut [u8]) -> VfsResult<()> {
        vfs::check_run(self.num_sectors(), sector, buf.len())?;
        let changed = self.changed.lock().unwrap();
        for (i, chunk) in buf.chunks_mut(SECTOR_SIZE).enumerate() {
            chunk.copy_from_slice(&self.sector(&changed, sector + i as u64));
        }
        Ok(())
    }
    fn write_sectors(&self, sector: u64, buf: &[u8]) -> VfsResult<()> {
        vfs::check_run(self.num_sectors(), sector, buf.len())?;
        let mut changed = self.changed.lock().unwrap();
        for (i, chunk) in buf.chunks(SECTOR_SIZE).enumerate() {
            changed.insert(sector + i as u64, Box::new(chunk.try_into().unwrap()));
        }
        Ok(())
    }
    fn flush(&self) -> VfsResult<()> {
        Ok(())
    }
}

fn reg() -> NewNode {
    NewNode::new(FileType::Regular, 0o644)
}

fn dir() -> NewNode {
    NewNode::new(FileType::Directory, 0o755)
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| ((i * 31 + i / 509) as u8) ^ seed)
        .collect()
}

/// The seed volume: nested directories, a directory of many long names (several clusters), files
/// from empty to many clusters, two files with interleaved (fragmented) chains, deleted entries.
pub fn seed_image() -> Vec<u8> {
    let disk = Arc::new(RamDisk::new(SEED_BYTES));
    Fat32Fs::format(disk.clone(), "SEED").expect("format");
    {
        let fs = Fat32Fs::mount(disk.clone(), Arc::new(FixedClock)).expect("mount");
        let root = fs.root().unwrap();
        root.create("hello.txt", &reg())
            .unwrap()
            .write_at(0, b"hello, world\n")
            .unwrap();
        root.create("empty", &reg()).unwrap();
        let many = root.create("Many Long Names", &dir()).unwrap();
        for i in 0..20 {
            let f = many
                .create(&format!("a rather long file name number {i}.data"), &reg())
                .unwrap();
            f.write_at(0, &pattern(i * 97, i as u8)).unwrap();
        }
        for i in (0..20).step_by(7) {
            many.unlink(&format!("a rather long file name number {i}.data"))
                .unwrap();
        }
        let a = root.create("a", &dir()).unwrap();
        let b = a.create("b", &dir()).unwrap();
        let c = b.create("c", &dir()).unwrap();
        c.create("deep.bin", &reg())
            .unwrap()
            .write_at(0, &pattern(5000, 3))
            .unwrap();
        let big = root.create("big.bin", &reg()).unwrap();
        big.write_at(0, &pattern(70_000, 9)).unwrap();
        // Interleaved growth: the two chains alternate clusters.
        let x = a.create("frag1", &reg()).unwrap();
        let y = a.create("frag2", &reg()).unwrap();
        for i in 0..12u64 {
            x.write_at(i * 512, &pattern(512, i as u8)).unwrap();
            y.write_at(i * 512, &pattern(512, 100 + i as u8)).unwrap();
        }
        root.create("gone", &dir()).unwrap();
        root.rmdir("gone").unwrap();
        fs.sync().unwrap();
    }
    disk.to_vec()
}

/// Where the interesting bytes of the seed volume are.
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    pub fat_start: u64,
    pub fat_bytes: u64,
    pub data_start: u64,
    pub size: u64,
}

impl Layout {
    pub fn of(image: &[u8]) -> Layout {
        let u16_at = |i: usize| u64::from(u16::from_le_bytes([image[i], image[i + 1]]));
        let u32_at = |i: usize| {
            u64::from(u32::from_le_bytes([
                image[i],
                image[i + 1],
                image[i + 2],
                image[i + 3],
            ]))
        };
        let sector = u16_at(11);
        let fat_start = u16_at(14) * sector;
        let fat_bytes = u32_at(36) * sector;
        let fats = u64::from(image[16]);
        Layout {
            fat_start,
            fat_bytes,
            data_start: fat_start + fats * fat_bytes,
            size: image.len() as u64,
        }
    }

    /// Region `r` as (start, length): the reserved sectors (boot sector, FSInfo, backup), the
    /// first 8 KiB of each FAT copy (the entries the seed's files use), the first 256 KiB of the
    /// data area (directories and files), or the whole device.
    fn region(&self, r: u8) -> (u64, u64) {
        match r % 5 {
            0 => (0, self.fat_start),
            1 => (self.fat_start, 8192.min(self.fat_bytes)),
            2 => (self.fat_start + self.fat_bytes, 8192.min(self.fat_bytes)),
            3 => (self.data_start, 256 * 1024),
            _ => (0, self.size),
        }
    }
}

/// Bytes per mutation record in a fuzz input.
pub const RECORD: usize = 7;
/// At most this many mutations per case.
pub const MAX_RECORDS: usize = 64;

/// Apply the mutations encoded in `input` (records of [`RECORD`] bytes: kind, region, 24-bit
/// offset, two value bytes) to `dev`.
pub fn apply(input: &[u8], layout: &Layout, dev: &Overlay) {
    for rec in input.chunks_exact(RECORD).take(MAX_RECORDS) {
        let (kind, region) = (rec[0], rec[1]);
        let off = u64::from(rec[2]) | u64::from(rec[3]) << 8 | u64::from(rec[4]) << 16;
        let (v0, v1) = (rec[5], rec[6]);
        let (start, len) = layout.region(region);
        if len == 0 {
            continue;
        }
        let pos = start + off % len;
        let word = u32::from(v0) | u32::from(v1) << 8;
        match kind % 6 {
            0 => {
                let mut b = [0u8];
                dev.peek(pos, &mut b);
                dev.poke(pos, &[b[0] ^ (v0 | 1)]);
            }
            1 => dev.poke(pos, &[v0]),
            2 => dev.poke(pos, &[v0, v1]),
            // A cluster number (aligned as a FAT32 entry): makes loops and cross-links.
            3 => dev.poke(pos & !3, &word.to_le_bytes()),
            4 => {
                let special = [
                    0,
                    1,
                    0x0FFF_FFF7,
                    0x0FFF_FFF8,
                    0x0FFF_FFFF,
                    0xFFFF_FFFF,
                    0x1000_0000 | word,
                    word << 16,
                ];
                dev.poke(pos & !3, &special[usize::from(v1 % 8)].to_le_bytes());
            }
            // Copy a 32-byte directory entry from elsewhere in the region (duplicate entries,
            // shared chains).
            _ => {
                let from = start + (u64::from(word) * 32) % len;
                let mut entry = [0u8; 32];
                dev.peek(from, &mut entry);
                dev.poke(pos & !31, &entry);
            }
        }
    }
}

/// How deep the first walk of a case goes.
const MAX_DEPTH: usize = 8;

/// Writes on a damaged volume: new files and directories, overwrite, growth, truncate, rename,
/// unlink and rmdir of existing entries.
fn write_phase(fs: &Fat32Fs, root: &NodeRef, seen: &Walked) {
    if let Ok(f) = root.create("fuzz-new.txt", &reg()) {
        let _ = f.write_at(0, &pattern(3000, 1));
        let _ = f.write_at(100, b"overwrite inside");
        let _ = f.write_at(10_000, b"past the end");
        let _ = f.truncate(1000);
        let mut buf = [0u8; 2000];
        let _ = f.read_at(0, &mut buf);
        let _ = f.fsync(false);
    }
    if let Ok(d) = root.create("fuzz-dir", &dir()) {
        let _ = d
            .create("inner", &reg())
            .map(|f| f.write_at(0, &pattern(1500, 2)));
    }
    let files: Vec<_> = seen
        .entries
        .iter()
        .filter(|e| e.2 != FileType::Directory)
        .take(3)
        .collect();
    let dirs: Vec<_> = seen
        .entries
        .iter()
        .filter(|e| e.2 == FileType::Directory)
        .take(2)
        .collect();
    if let Some((parent, name, _)) = files.first() {
        if let Ok(f) = parent.lookup(name) {
            let _ = f.write_at(0, b"rewritten");
            let _ = f.write_at(600, &pattern(2000, 5));
            let _ = f.truncate(300);
        }
        let _ = parent.rename(name, &**root, "fuzz-renamed", RenameFlags::default());
    }
    if let Some((parent, name, _)) = files.get(1) {
        let _ = parent.unlink(name);
    }
    if let Some((parent, name, _)) = files.get(2) {
        let _ = parent.rename(name, &**root, "fuzz-new.txt", RenameFlags::default());
    }
    if let Some((parent, name, _)) = dirs.first() {
        let _ = parent.rmdir(name);
    }
    if let Some((parent, name, _)) = dirs.get(1) {
        if let Ok(sub) = root.lookup("fuzz-dir") {
            let _ = parent.rename(name, &*sub, "moved", RenameFlags::default());
        }
    }
    let _ = root.unlink("hello.txt");
    let _ = fs.sync();
    let _ = fs.statfs();
}

/// Mount, walk, write, unmount, mount again and walk. Returns whether the first mount worked.
pub fn exercise(dev: Arc<Overlay>) -> bool {
    let clock = Arc::new(FixedClock);
    let Ok(fs) = Fat32Fs::mount(dev.clone(), clock.clone()) else {
        return false;
    };
    let _ = fs.statfs();
    if let Ok(root) = fs.root() {
        let seen = walk_bounded(&root, MAX_DEPTH);
        write_phase(&fs, &root, &seen);
    }
    drop(fs);
    // What the writes left must mount and list again (the top level only: the first walk
    // covered the rest).
    if let Ok(fs) = Fat32Fs::mount(dev, clock) {
        if let Ok(root) = fs.root() {
            walk_bounded(&root, 1);
        }
    }
    true
}

/// One whole case: the seed volume, `input`'s mutations, then [`exercise`].
pub fn run_case(seed: &Arc<Vec<u8>>, layout: &Layout, input: &[u8]) -> bool {
    let dev = Arc::new(Overlay::new(seed.clone()));
    apply(input, layout, &dev);
    exercise(dev)
}
