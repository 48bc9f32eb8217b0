//! Damaged dbfs images: shared by the regression test `tests/mutate_walk.rs` and the fuzz target
//! `fuzz/fuzz_targets/mount_walk.rs` (which includes this file by path).
//!
//! A valid seed image is built once ([`seed_image`]); each case applies a list of byte mutations
//! to a copy ([`apply`]), optionally re-sealing the meta pages' checksums so that damaged meta
//! fields (tree roots, freelist extent, page count) are accepted and reach the code behind them.
//! [`exercise`] then mounts it over a RAM pager, runs fsck, walks the whole tree (getattr,
//! readdir, lookup, read every file, readlink, list and get xattrs), writes (create, write,
//! truncate, xattrs, symlink, link, rename, unlink, rmdir), syncs, and mounts what is left again.
//! Every call may fail; none may panic or loop.
#![allow(dead_code)]

use std::sync::Arc;

use dbfs::{DbFs, MkfsOptions};
use kvdb::MemPager;
use vfs::conformance::{walk_bounded, Walked};
use vfs::{FileSystem, FileType, NewNode, NodeRef, RenameFlags, XattrMode, ZeroClock};

const PAGE: usize = 4096;
/// The RAM pager of a case may grow to this many bytes.
const CAPACITY: u64 = 16 << 20;

fn node(ftype: FileType, perm: u32) -> NewNode {
    NewNode::new(ftype, perm)
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| ((i * 31 + i / 509) as u8) ^ seed)
        .collect()
}

/// The seed image: 1 KiB chunks (many chunk keys, several tree levels in a small image), nested
/// directories, files from empty to many chunks with holes, symlinks, a hard link, small and
/// large (overflow) xattrs, and deleted files (a non-empty freelist).
pub fn seed_image() -> Vec<u8> {
    let opts = MkfsOptions {
        chunk_size: 1024,
        label: "seed".into(),
        ..MkfsOptions::default()
    };
    let pager = DbFs::mkfs(MemPager::new(), opts).expect("mkfs");
    let fs = DbFs::mount(pager, Arc::new(ZeroClock)).expect("mount");
    let root = fs.root().unwrap();
    let reg = node(FileType::Regular, 0o644);
    let dir = node(FileType::Directory, 0o755);
    root.create("hello.txt", &reg)
        .unwrap()
        .write_at(0, b"hello, world\n")
        .unwrap();
    root.create("empty", &reg).unwrap();
    let many = root.create("many", &dir).unwrap();
    for i in 0..30usize {
        let f = many
            .create(&format!("file-{i:02}-with-a-longer-name"), &reg)
            .unwrap();
        f.write_at((i as u64 % 3) * 700, &pattern(i * 211, i as u8))
            .unwrap();
        if i % 4 == 0 {
            f.setxattr("user.small", &[i as u8; 3], XattrMode::Any)
                .unwrap();
        }
    }
    for i in (0..30).step_by(6) {
        many.unlink(&format!("file-{i:02}-with-a-longer-name"))
            .unwrap();
    }
    let a = root.create("a", &dir).unwrap();
    let b = a.create("b", &dir).unwrap();
    let deep = b.create("deep.bin", &reg).unwrap();
    deep.write_at(0, &pattern(9000, 3)).unwrap();
    deep.write_at(40_000, b"after a hole").unwrap();
    deep.setxattr("user.big", &pattern(2000, 7), XattrMode::Any)
        .unwrap();
    let big = root.create("big.bin", &reg).unwrap();
    big.write_at(0, &pattern(60_000, 9)).unwrap();
    root.symlink("link", "a/b/deep.bin", &node(FileType::Symlink, 0o777))
        .unwrap();
    b.symlink("up", "../../hello.txt", &node(FileType::Symlink, 0o777))
        .unwrap();
    a.link("hard", &*big).unwrap();
    root.create("fifo", &node(FileType::Fifo, 0o600)).unwrap();
    fs.sync().unwrap();
    fs.pager().image()
}

/// Bytes per mutation record in a fuzz input (after the first byte, which holds flags).
pub const RECORD: usize = 6;
/// At most this many mutations per case.
pub const MAX_RECORDS: usize = 64;

/// Apply `input` to `image`: byte 0 is flags (bit 0: re-seal the meta checksums afterwards),
/// then records of [`RECORD`] bytes: kind, 24-bit offset, two value bytes, one more byte.
pub fn apply(input: &[u8], image: &mut [u8]) {
    let Some((&flags, records)) = input.split_first() else {
        return;
    };
    let len = image.len() as u64;
    if len == 0 {
        return;
    }
    for rec in records.chunks_exact(RECORD).take(MAX_RECORDS) {
        let kind = rec[0];
        let pos =
            ((u64::from(rec[1]) | u64::from(rec[2]) << 8 | u64::from(rec[3]) << 16) % len) as usize;
        let (v0, v1, v2) = (rec[4], rec[5], rec[1]);
        let word = u64::from(v0) | u64::from(v1) << 8;
        let old = image[pos];
        let put = |image: &mut [u8], at: usize, bytes: &[u8]| {
            for (i, &b) in bytes.iter().enumerate() {
                if let Some(x) = image.get_mut(at + i) {
                    *x = b;
                }
            }
        };
        match kind % 7 {
            0 => put(image, pos, &[old ^ (v0 | 1)]),
            1 => put(image, pos, &[v0]),
            2 => put(image, pos, &[v0, v1]),
            // Page ids, lengths, counts: small values at 8-byte alignment.
            3 => put(image, pos & !7, &word.to_le_bytes()),
            4 => put(image, pos & !3, &(word as u32).to_le_bytes()),
            // Huge or boundary values.
            5 => {
                let special = [
                    u64::MAX,
                    u64::MAX / 2,
                    u64::from(u32::MAX),
                    1 << 32,
                    0,
                    1,
                    PAGE as u64,
                    word << 32,
                ];
                put(image, pos & !7, &special[usize::from(v0 % 8)].to_le_bytes());
            }
            // Copy a 16-byte slot from elsewhere (duplicate keys, shared pages).
            _ => {
                let from = ((word << 8 | u64::from(v2)) * 16 % len) as usize;
                let mut slot = [0u8; 16];
                for (i, s) in slot.iter_mut().enumerate() {
                    *s = image.get(from + i).copied().unwrap_or(0);
                }
                put(image, pos & !15, &slot);
            }
        }
    }
    if flags & 1 != 0 {
        for meta in 0..2 {
            let at = meta * PAGE;
            if image.len() >= at + 80 {
                let sum = kvdb::page::checksum(&image[at..at + 72]);
                image[at + 72..at + 80].copy_from_slice(&sum.to_le_bytes());
            }
        }
    }
}

/// How deep the first walk of a case goes.
const MAX_DEPTH: usize = 8;

fn write_phase(fs: &DbFs<MemPager>, root: &NodeRef, seen: &Walked) {
    let reg = node(FileType::Regular, 0o644);
    if let Ok(f) = root.create("fuzz-new", &reg) {
        let _ = f.write_at(0, &pattern(3000, 1));
        let _ = f.write_at(100, b"overwrite inside");
        let _ = f.write_at(20_000, b"past the end");
        let _ = f.truncate(1000);
        let _ = f.setxattr("user.x", b"value", XattrMode::Create);
        let mut buf = [0u8; 2000];
        let _ = f.read_at(0, &mut buf);
        let _ = f.fsync(false);
    }
    if let Ok(d) = root.create("fuzz-dir", &node(FileType::Directory, 0o755)) {
        let _ = d.symlink("s", "target", &node(FileType::Symlink, 0o777));
    }
    let files: Vec<_> = seen
        .entries
        .iter()
        .filter(|e| e.2 == FileType::Regular)
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
            let _ = f.write_at(5000, &pattern(3000, 5));
            let _ = f.truncate(300);
            let _ = f.removexattr("user.small");
            let _ = root.link("fuzz-link", &*f);
        }
        let _ = parent.rename(name, &**root, "fuzz-renamed", RenameFlags::default());
    }
    if let Some((parent, name, _)) = files.get(1) {
        let _ = parent.unlink(name);
    }
    if let Some((parent, name, _)) = files.get(2) {
        let flags = RenameFlags {
            exchange: true,
            ..RenameFlags::default()
        };
        let _ = parent.rename(name, &**root, "fuzz-new", flags);
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

/// Mount `image`, fsck, walk, write, sync, fsck; then mount the bytes left and walk the top
/// level. Returns whether the first mount worked.
pub fn exercise(image: Vec<u8>) -> bool {
    let pager = MemPager::from_image(image).with_capacity_limit(CAPACITY);
    let Ok(fs) = DbFs::mount(pager, Arc::new(ZeroClock)) else {
        return false;
    };
    let _ = fs.fsck();
    let _ = fs.statfs();
    if let Ok(root) = fs.root() {
        let seen = walk_bounded(&root, MAX_DEPTH);
        write_phase(&fs, &root, &seen);
    }
    let _ = fs.fsck();
    let after = fs.pager().image();
    drop(fs);
    if let Ok(fs) = DbFs::mount(
        MemPager::from_image(after).with_capacity_limit(CAPACITY),
        Arc::new(ZeroClock),
    ) {
        if let Ok(root) = fs.root() {
            walk_bounded(&root, 1);
        }
        let _ = fs.fsck();
    }
    true
}

/// One whole case: a copy of the seed, `input`'s mutations, then [`exercise`].
pub fn run_case(seed: &[u8], input: &[u8]) -> bool {
    let mut image = seed.to_vec();
    apply(input, &mut image);
    exercise(image)
}
