//! A full dbfs: ENOSPC on write (when the cache is at its limit) or fsync, nothing committed
//! lost, failed commits leave the store as it was (fsck clean, no page leaked), deletions
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

    // Writes only: the write that finds the cache at its limit retries the flush and fails.
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
    assert_eq!(filler.fsync(false), Err(VfsError::NoSpace));
    assert_clean(&fs);
    // Failed commits leak nothing: the free count does not move while they keep failing.
    let free_now = free(&fs);
    for _ in 0..3 {
        assert_eq!(filler.write_at(off, &piece), Err(VfsError::NoSpace));
        assert_eq!(fs.sync(), Err(VfsError::NoSpace));
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
