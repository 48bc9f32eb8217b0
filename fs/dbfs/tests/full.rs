//! A full dbfs: ENOSPC on the write that cannot be stored (space is reserved for buffered
//! writes when they are accepted), every accepted byte committed, nothing committed lost, failed commits leave the store as it was (fsck clean, no page leaked), deletions
//! succeed on the full store (kvdb's reserve), and the space comes back.

mod common;

use common::*;
use dbfs::{DbFs, MkfsOptions};
use kvdb::MemPager;
use vfs::{FileSystem, VfsError};

const MIB: usize = 1 << 20;

fn avail(fs: &DbFs<MemPager>) -> u64 {
    let s = fs.statfs().unwrap();
    s.blocks_available * s.block_size
}

fn free(fs: &DbFs<MemPager>) -> u64 {
    fs.statfs().unwrap().blocks_free
}

#[test]
fn full_store_enospc_then_delete_and_write_again() {
    let pager = DbFs::mkfs(
        MemPager::new().with_capacity_limit(8 << 20),
        MkfsOptions::default(),
    )
    .unwrap();
    let fs = DbFs::mount(pager, TestClock::new()).unwrap();
    fs.set_dirty_limit(MIB);
    let root = fs.root().unwrap();
    let keep: Vec<_> = (0..3u8)
        .map(|i| (format!("keep{i}"), pattern(7000 + i as usize * 100_000, i)))
        .collect();
    for (name, data) in &keep {
        let f = root.create(name, &reg()).unwrap();
        f.write_at(0, data).unwrap();
        f.fsync(false).unwrap();
    }
    root.create("emptydir", &dir()).unwrap();
    let before = avail(&fs);
    let s = fs.statfs().unwrap();
    assert!(
        s.blocks_free > s.blocks_available,
        "the reserve is not reported"
    );

    // Writes only: the write whose space cannot be reserved fails.
    let filler = root.create("filler", &reg()).unwrap();
    let piece = pattern(64 << 10, 9);
    let mut off = 0u64;
    let err = loop {
        match filler.write_at(off, &piece) {
            Ok(n) => off += n as u64,
            Err(e) => break e,
        }
        assert!(off < 64 << 20, "no ENOSPC");
    };
    assert_eq!(err, VfsError::NoSpace);
    let accepted = off;
    // The failed write buffered nothing: the file's size is what the accepted writes made.
    assert_eq!(filler.getattr().unwrap().size, accepted);
    // Every accepted byte had its space reserved: it commits.
    filler.fsync(false).unwrap();
    assert_clean(&fs);
    // Refused writes leak nothing: the free count does not move while they keep failing.
    let free_now = free(&fs);
    for _ in 0..3 {
        assert_eq!(filler.write_at(off, &piece), Err(VfsError::NoSpace));
        fs.sync().unwrap();
        assert_eq!(free(&fs), free_now);
    }
    // What committed is intact, also in a copy of the image as it is (a crash now).
    let copy = crash_copy(&fs);
    for (name, data) in &keep {
        assert_eq!(&read_all(&root.lookup(name).unwrap()), data);
        assert_eq!(&read_all(&copy.root().unwrap().lookup(name).unwrap()), data);
    }
    assert_clean(&copy);
    drop(copy);

    // Fill what is left with committed data (small flushes) and metadata.
    filler.truncate(0).unwrap();
    let mut committed = 0u64;
    let err = loop {
        match filler
            .write_at(committed, &piece)
            .and_then(|_| filler.fsync(false))
        {
            Ok(()) => committed += piece.len() as u64,
            Err(e) => break e,
        }
    };
    assert_eq!(err, VfsError::NoSpace);
    assert!(
        committed <= before,
        "{committed} committed > {before} available"
    );
    assert!(
        committed + before / 20 + 2 * piece.len() as u64 >= before,
        "{committed} of {before}"
    );
    let mut made = 0;
    let err = loop {
        match root.create(&format!("m{made}"), &reg()) {
            Ok(_) => made += 1,
            Err(e) => break e,
        }
    };
    assert_eq!(err, VfsError::NoSpace);
    assert!(
        avail(&fs) < 64 << 10,
        "{} available on a full store",
        avail(&fs)
    );
    assert_clean(&fs);

    // Deletions work on the full store.
    for i in 0..made {
        root.unlink(&format!("m{i}"))
            .unwrap_or_else(|e| panic!("unlink m{i} on a full store: {e:?}"));
    }
    root.rmdir("emptydir").unwrap();
    filler.truncate(4096).unwrap();
    drop(filler);
    root.unlink("filler").unwrap();
    fs.sync().unwrap();
    assert!(
        avail(&fs) + before / 20 >= before,
        "deleting freed too little"
    );
    let again = pattern(3 * MIB, 42);
    let f = root.create("again", &reg()).unwrap();
    f.write_at(0, &again).unwrap();
    f.fsync(false).unwrap();
    assert_clean(&fs);
    let fs = remount(fs);
    let root = fs.root().unwrap();
    assert_eq!(read_all(&root.lookup("again").unwrap()), again);
    for (name, data) in &keep {
        assert_eq!(&read_all(&root.lookup(name).unwrap()), data);
    }
}

/// The bug this guards against: with the write-back cache larger than the free space, buffered
/// writes were all accepted, then the commit (at sync or unmount) failed with ENOSPC and every
/// one of them was lost. Now each accepted write has its pages reserved: the write that does
/// not fit fails, and everything accepted commits (sync succeeds) and survives a remount.
#[test]
fn accepted_buffered_writes_all_commit_on_a_nearly_full_store() {
    for chunk_size in [4096u32, 16 << 10] {
        let pager = DbFs::mkfs(
            MemPager::new().with_capacity_limit(6 << 20),
            MkfsOptions {
                chunk_size,
                ..MkfsOptions::default()
            },
        )
        .unwrap();
        let fs = DbFs::mount(pager, TestClock::new()).unwrap();
        // The cache can hold more than the store: nothing commits until the sync.
        fs.set_dirty_limit(64 * MIB);
        let root = fs.root().unwrap();
        // Fill with committed data first, leaving a little room.
        let base = root.create("base", &reg()).unwrap();
        let room = avail(&fs) as usize;
        let base_data = pattern(room - room / 8, 1);
        base.write_at(0, &base_data).unwrap();
        base.fsync(false).unwrap();
        // Then buffered writes to several files, odd sizes and offsets, until one fails.
        let mut written: Vec<(String, Vec<u8>)> = Vec::new();
        let mut refused = None;
        'fill: for i in 0..64u8 {
            let name = format!("f{i}");
            let f = root.create(&name, &reg()).unwrap();
            let mut data = Vec::new();
            for piece in 0..8usize {
                let bytes = pattern(3000 + piece * 5000 + i as usize, i.wrapping_add(2));
                match f.write_at(data.len() as u64, &bytes) {
                    Ok(n) => {
                        assert_eq!(n, bytes.len());
                        data.extend_from_slice(&bytes);
                    }
                    Err(e) => {
                        refused = Some(e);
                        written.push((name, data));
                        break 'fill;
                    }
                }
            }
            written.push((name, data));
        }
        assert_eq!(refused, Some(VfsError::NoSpace), "chunk size {chunk_size}");
        let accepted: usize = written.iter().map(|(_, d)| d.len()).sum();
        assert!(accepted > 0, "nothing accepted (chunk size {chunk_size})");
        // Reserved space is not reported as available.
        assert!(avail(&fs) < 128 << 10, "{} available", avail(&fs));
        // The sync (syncfs) commits everything that was accepted.
        fs.sync().unwrap_or_else(|e| {
            panic!("sync after accepted writes: {e:?} (chunk size {chunk_size})")
        });
        assert_eq!(fs.dirty_bytes(), 0);
        assert_clean(&fs);
        let fs = remount(fs);
        let root = fs.root().unwrap();
        assert_eq!(read_all(&root.lookup("base").unwrap()), base_data);
        for (name, data) in &written {
            assert_eq!(
                &read_all(&root.lookup(name).unwrap()),
                data,
                "{name} after remount (chunk size {chunk_size})"
            );
        }
    }
}

/// Space reserved for buffered data is not given to later metadata operations or to other
/// files' fsyncs: after the cache took the last free pages, a create fails with ENOSPC (or
/// succeeds), and the sync of unmount still commits every accepted byte.
#[test]
fn reservations_survive_other_commits_and_unmount() {
    let pager = DbFs::mkfs(
        MemPager::new().with_capacity_limit(4 << 20),
        MkfsOptions::default(),
    )
    .unwrap();
    let fs = DbFs::mount(pager, TestClock::new()).unwrap();
    fs.set_dirty_limit(64 * MIB);
    let root = fs.root().unwrap();
    let a = root.create("a", &reg()).unwrap();
    let piece = pattern(32 << 10, 5);
    let mut a_len = 0u64;
    while a.write_at(a_len, &piece).is_ok() {
        a_len += piece.len() as u64;
        assert!(a_len < 64 << 20, "no ENOSPC");
    }
    // Other work meanwhile: creates until ENOSPC, and a small file written and fsynced if it
    // still fits; neither may take a's space.
    for i in 0..2000 {
        match root.create(&format!("n{i}"), &reg()) {
            Ok(_) => {}
            Err(e) => {
                assert_eq!(e, VfsError::NoSpace);
                break;
            }
        }
    }
    if let Ok(b) = root.create("b", &reg()) {
        if b.write_at(0, &[9u8; 100]).is_ok() {
            b.fsync(false).unwrap();
        }
    }
    drop(a);
    drop(root);
    // Unmount (its sync must commit a's buffered data) and mount again.
    let fs = remount(fs);
    let a = fs.root().unwrap().lookup("a").unwrap();
    assert_eq!(a.getattr().unwrap().size, a_len);
    let data = read_all(&a);
    for (i, c) in data.chunks(piece.len()).enumerate() {
        assert_eq!(c, &piece[..], "piece {i} of a after unmount");
    }
    assert_clean(&fs);
}
