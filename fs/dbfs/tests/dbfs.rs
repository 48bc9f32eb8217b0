//! dbfs behaviour beyond the shared suite: persistence across remounts and crashes, orphans,
//! statfs, rename edge cases, xattrs, large sparse files, readdir stability, timestamps,
//! mkfs/mount checks, error mapping, concurrency.
mod common;

use std::sync::Arc;

use common::*;
use dbfs::{DbFs, MkfsOptions, MountError};
use kvdb::MemPager;
use vfs::{
    FileSystem, FileType, NewNode, Node, RenameFlags, SetAttr, TimeSet, Timestamp, VfsError,
    XattrMode,
};

const PLAIN: RenameFlags = RenameFlags {
    noreplace: false,
    exchange: false,
};
const NOREPLACE: RenameFlags = RenameFlags {
    noreplace: true,
    exchange: false,
};
const EXCHANGE: RenameFlags = RenameFlags {
    noreplace: false,
    exchange: true,
};

#[test]
fn every_operation_survives_remount() {
    let fs = fresh();
    let root = fs.root().unwrap();
    let d = root.create("d", &dir()).unwrap();
    let f = d.create("f", &reg()).unwrap();
    let data = pattern(300_000, 5);
    f.write_at(0, &data).unwrap();
    root.symlink("l", "d/f", &NewNode::new(FileType::Symlink, 0o777))
        .unwrap();
    root.link("hard", &*f).unwrap();
    root.create("fifo", &NewNode::new(FileType::Fifo, 0o600))
        .unwrap();
    root.create(
        "blk",
        &NewNode {
            ftype: FileType::BlockDevice,
            perm: 0o660,
            uid: 3,
            gid: 4,
            rdev: 0x0801,
        },
    )
    .unwrap();
    f.setxattr("user.k", b"v", XattrMode::Create).unwrap();
    let t = Timestamp {
        sec: 1_234_567_890,
        nsec: 123_456_789,
    };
    f.setattr(&SetAttr {
        perm: Some(0o600),
        uid: Some(10),
        gid: Some(20),
        mtime: Some(TimeSet::At(t)),
        ..Default::default()
    })
    .unwrap();
    root.create("gone", &reg()).unwrap();
    root.unlink("gone").unwrap();
    root.create("e", &dir()).unwrap();
    root.rename("e", &*d, "e2", PLAIN).unwrap();
    let g = root.create("g", &reg()).unwrap();
    g.write_at(0, &pattern(50_000, 1)).unwrap();
    g.truncate(10_001).unwrap();
    let before_root = root.getattr().unwrap();
    let before_f = f.getattr().unwrap();
    let before_d = d.getattr().unwrap();

    let fs = remount(fs);
    let root = fs.root().unwrap();
    assert_eq!(names(&root), ["blk", "d", "fifo", "g", "hard", "l"]);
    let d = root.lookup("d").unwrap();
    assert_eq!(names(&d), ["e2", "f"]);
    assert_eq!(d.getattr().unwrap(), before_d);
    assert_eq!(root.getattr().unwrap(), before_root);
    let f = d.lookup("f").unwrap();
    let m = f.getattr().unwrap();
    assert_eq!(m, before_f);
    assert_eq!(
        (m.perm, m.uid, m.gid, m.nlink, m.mtime),
        (0o600, 10, 20, 2, t)
    );
    assert_eq!(read_all(&f), data);
    assert_eq!(f.getxattr("user.k").unwrap(), b"v");
    assert_eq!(root.lookup("l").unwrap().readlink().unwrap(), "d/f");
    assert_eq!(
        root.lookup("fifo").unwrap().getattr().unwrap().ftype,
        FileType::Fifo
    );
    let b = root.lookup("blk").unwrap().getattr().unwrap();
    assert_eq!(
        (b.ftype, b.rdev, b.uid, b.gid),
        (FileType::BlockDevice, 0x0801, 3, 4)
    );
    assert_eq!(
        d.lookup("e2").unwrap().getattr().unwrap().ftype,
        FileType::Directory
    );
    assert_eq!(
        read_all(&root.lookup("g").unwrap()),
        pattern(50_000, 1)[..10_001].to_vec()
    );
    // The inode counter survives: a new file gets a number never used before.
    let n = root.create("new", &reg()).unwrap().getattr().unwrap().ino;
    assert!(n > before_f.ino && n > b.ino);
    assert_clean(&fs);
}

#[test]
fn crash_keeps_metadata_and_fsynced_data_only() {
    let fs = fresh();
    let root = fs.root().unwrap();
    let a = root.create("a", &reg()).unwrap();
    a.write_at(0, b"durable").unwrap();
    a.fsync(false).unwrap();
    let b = root.create("b", &reg()).unwrap();
    b.open().unwrap(); // still open at the directory's fsync below
    b.write_at(0, b"buffered").unwrap();
    assert!(fs.dirty_bytes() > 0);
    // Power cut now: b's create committed deferred, not durably yet.
    let after = crash_copy(&fs);
    assert!(matches!(
        after.root().unwrap().lookup("b"),
        Err(vfs::VfsError::NotFound)
    ));
    // fsync of the directory makes its entries durable (not the buffered data of b, which is
    // open).
    root.fsync(false).unwrap();
    assert!(fs.dirty_bytes() > 0);
    let after = crash_copy(&fs);
    let r2 = after.root().unwrap();
    assert_eq!(read_all(&r2.lookup("a").unwrap()), b"durable");
    assert_eq!(r2.lookup("b").unwrap().getattr().unwrap().size, 0);
    // After sync everything is there.
    fs.sync().unwrap();
    assert_eq!(fs.dirty_bytes(), 0);
    let after = crash_copy(&fs);
    assert_eq!(
        read_all(&after.root().unwrap().lookup("b").unwrap()),
        b"buffered"
    );
    // The last release commits nothing: a closed file's data waits for the next durable
    // commit, whatever it is for (here the directory's fsync), or the timer.
    let c = root.create("c", &reg()).unwrap();
    c.open().unwrap();
    c.write_at(0, b"closed").unwrap();
    c.release().unwrap();
    assert!(fs.dirty_bytes() > 0, "the last close committed");
    assert!(crash_copy(&fs).root().unwrap().lookup("c").is_err());
    root.fsync(false).unwrap();
    assert_eq!(fs.dirty_bytes(), 0);
    let after = crash_copy(&fs);
    assert_eq!(
        read_all(&after.root().unwrap().lookup("c").unwrap()),
        b"closed"
    );
    // b, still open, stays buffered through the fsync of another file...
    let d = root.create("d", &reg()).unwrap();
    b.write_at(0, b"again").unwrap();
    d.fsync(false).unwrap();
    assert!(fs.dirty_bytes() > 0);
    // ...and its last close leaves it to the timer or the next durable commit.
    b.release().unwrap();
    assert!(fs.dirty_bytes() > 0);
    d.fsync(false).unwrap();
    assert_eq!(fs.dirty_bytes(), 0);
    assert_eq!(
        read_all(&crash_copy(&fs).root().unwrap().lookup("b").unwrap()),
        b"againred"
    );
    assert_clean(&fs);
}

#[test]
fn writeback_timer_makes_deferred_commits_durable() {
    let clock = TestClock::new();
    let pager = DbFs::mkfs(MemPager::new(), dbfs::MkfsOptions::default()).unwrap();
    let fs = DbFs::mount(pager, clock.clone()).unwrap();
    let root = fs.root().unwrap();
    root.create("x", &reg()).unwrap();
    fs.writeback_tick().unwrap();
    assert!(
        crash_copy(&fs).root().unwrap().lookup("x").is_err(),
        "not durable at once"
    );
    clock.advance_secs(dbfs::WRITEBACK_SECS - 1);
    fs.writeback_tick().unwrap();
    assert!(
        crash_copy(&fs).root().unwrap().lookup("x").is_err(),
        "nor before the delay"
    );
    clock.advance_secs(1);
    fs.writeback_tick().unwrap();
    assert!(
        crash_copy(&fs).root().unwrap().lookup("x").is_ok(),
        "durable after the delay"
    );
    // Buffered data: flushed and made durable by the same tick once it is old enough.
    let f = root.lookup("x").unwrap();
    f.write_at(0, b"late").unwrap();
    clock.advance_secs(dbfs::WRITEBACK_SECS);
    fs.writeback_tick().unwrap();
    assert_eq!(fs.dirty_bytes(), 0);
    assert_eq!(
        read_all(&crash_copy(&fs).root().unwrap().lookup("x").unwrap()),
        b"late"
    );
    assert_clean(&fs);
}

#[test]
fn sync_metadata_makes_every_operation_durable() {
    let fs = fresh();
    fs.set_sync_metadata(true);
    let root = fs.root().unwrap();
    let d = root.create("d", &dir()).unwrap();
    d.create("f", &reg()).unwrap();
    root.rename("d", &*root, "e", PLAIN).unwrap();
    let after = crash_copy(&fs);
    assert!(after
        .root()
        .unwrap()
        .lookup("e")
        .unwrap()
        .lookup("f")
        .is_ok());
    // Back to deferred commits: the next operation is not durable by itself.
    fs.set_sync_metadata(false);
    root.create("g", &reg()).unwrap();
    assert!(crash_copy(&fs).root().unwrap().lookup("g").is_err());
    fs.sync().unwrap();
    assert!(crash_copy(&fs).root().unwrap().lookup("g").is_ok());
}

#[test]
fn metadata_operation_folds_buffered_data() {
    let fs = fresh();
    let root = fs.root().unwrap();
    let f = root.create("f", &reg()).unwrap();
    f.write_at(0, &pattern(100_000, 2)).unwrap();
    // A rename is one transaction; it carries the file's buffered data with it.
    root.rename("f", &*root, "g", PLAIN).unwrap();
    f.setxattr("user.x", b"1", XattrMode::Any).unwrap();
    // The directory's fsync is a barrier only: the data is there because the rename carried it.
    root.fsync(false).unwrap();
    let after = crash_copy(&fs);
    let g = after.root().unwrap().lookup("g").unwrap();
    assert_eq!(read_all(&g), pattern(100_000, 2));
}

#[test]
fn unlinked_open_file_lives_until_last_release_and_crash_frees_it() {
    let fs = fresh();
    let root = fs.root().unwrap();
    let files_before = fs.statfs().unwrap().files - fs.statfs().unwrap().files_free;
    let f = root.create("f", &reg()).unwrap();
    f.open().unwrap();
    f.open().unwrap();
    f.write_at(0, &pattern(200_000, 3)).unwrap();
    root.unlink("f").unwrap();
    assert_eq!(f.getattr().unwrap().nlink, 0);
    f.release().unwrap();
    assert_eq!(read_all(&f), pattern(200_000, 3));
    // Crash while still open: the next mount frees the orphan.
    fs.sync().unwrap();
    let ino = f.getattr().unwrap().ino;
    assert_clean(&fs);
    let after = crash_copy(&fs);
    assert_clean(&after);
    let s = after.statfs().unwrap();
    assert_eq!(s.files - s.files_free, files_before);
    let _ = ino;
    // Last release frees it here.
    f.release().unwrap();
    assert_eq!(f.getattr(), Err(VfsError::NotFound));
    let s = fs.statfs().unwrap();
    assert_eq!(s.files - s.files_free, files_before);
    // Unlinked while not open: freed at once.
    let g = root.create("g", &reg()).unwrap();
    root.unlink("g").unwrap();
    assert_eq!(g.getattr(), Err(VfsError::NotFound));
    // An open directory that is removed stays listable (empty) until released.
    let d = root.create("d", &dir()).unwrap();
    d.open().unwrap();
    root.rmdir("d").unwrap();
    assert_eq!(d.getattr().unwrap().nlink, 0);
    assert_eq!(names(&d), Vec::<String>::new());
    assert_eq!(d.create("x", &reg()).err(), Some(VfsError::NotFound));
    assert_clean(&fs);
    d.release().unwrap();
    assert_eq!(d.getattr(), Err(VfsError::NotFound));
    assert_clean(&fs);
}

#[test]
fn statfs_counts_blocks_and_inodes() {
    let fs = fresh_with(MkfsOptions::default());
    let s0 = fs.statfs().unwrap();
    assert_eq!(s0.fs_type, dbfs::DBFS_MAGIC);
    assert_eq!(s0.name_max, 255);
    assert_eq!(s0.block_size, 4096);
    assert_eq!(s0.files - s0.files_free, 1);
    let root = fs.root().unwrap();
    for i in 0..10 {
        root.create(&format!("f{i}"), &reg()).unwrap();
    }
    let s1 = fs.statfs().unwrap();
    assert_eq!(s1.files - s1.files_free, 11);
    let f = root.lookup("f0").unwrap();
    f.write_at(0, &vec![7u8; 4 << 20]).unwrap();
    fs.sync().unwrap();
    let s2 = fs.statfs().unwrap();
    assert!(s1.blocks_free - s2.blocks_free >= (4 << 20) / 4096);
    assert_eq!(f.getattr().unwrap().blocks, (4 << 20) / 512);
    root.unlink("f0").unwrap();
    fs.sync().unwrap();
    let s3 = fs.statfs().unwrap();
    assert!(s3.blocks_free >= s2.blocks_free + (4 << 20) / 4096);
    assert_eq!(s3.files - s3.files_free, 10);
    // A capped pager reports its real size.
    let pager = DbFs::mkfs(
        MemPager::new().with_capacity_limit(8 << 20),
        MkfsOptions::default(),
    )
    .unwrap();
    let small = DbFs::mount(pager, TestClock::new()).unwrap();
    assert_eq!(small.statfs().unwrap().blocks, (8 << 20) / 4096);
}

#[test]
fn out_of_space_is_enospc_and_the_fs_stays_usable() {
    let pager = DbFs::mkfs(
        MemPager::new().with_capacity_limit(2 << 20),
        MkfsOptions::default(),
    )
    .unwrap();
    let fs = DbFs::mount(pager, TestClock::new()).unwrap();
    let root = fs.root().unwrap();
    let f = root.create("big", &reg()).unwrap();
    // A write the store cannot hold fails when it is made, buffering nothing.
    assert_eq!(f.write_at(0, &vec![1u8; 4 << 20]), Err(VfsError::NoSpace));
    assert_eq!(f.getattr().unwrap().size, 0);
    f.fsync(false).unwrap();
    // A write that fits still works, and commits.
    f.write_at(0, &[2u8; 4096]).unwrap();
    f.fsync(false).unwrap();
    let fs = remount(fs);
    let big = fs.root().unwrap().lookup("big").unwrap();
    assert_eq!(read_all(&big), vec![2u8; 4096]);
}

#[test]
fn io_errors_leave_the_cache_and_store_intact() {
    let fs = fresh();
    let root = fs.root().unwrap();
    let f = root.create("f", &reg()).unwrap();
    f.write_at(0, b"hello").unwrap();
    fs.pager().fail_writes_after(Some(0));
    assert_eq!(f.fsync(false), Err(VfsError::Io));
    assert_eq!(root.create("x", &reg()).err(), Some(VfsError::Io));
    fs.pager().fail_writes_after(None);
    assert_eq!(read_all(&f), b"hello");
    assert_eq!(root.lookup("x").err(), Some(VfsError::NotFound));
}

#[test]
fn rename_edge_cases() {
    let fs = fresh();
    let root = fs.root().unwrap();
    let a = root.create("a", &dir()).unwrap();
    let b = root.create("b", &dir()).unwrap();
    let sub = a.create("sub", &dir()).unwrap();
    let deep = sub.create("deep", &dir()).unwrap();
    // Into own subtree (also into itself): EINVAL.
    assert_eq!(
        root.rename("a", &*deep, "x", PLAIN),
        Err(VfsError::InvalidInput)
    );
    assert_eq!(
        root.rename("a", &*a, "x", PLAIN),
        Err(VfsError::InvalidInput)
    );
    // Onto an ancestor of the source: ENOTEMPTY.
    assert_eq!(
        sub.rename("deep", &*root, "a", PLAIN),
        Err(VfsError::DirectoryNotEmpty)
    );
    // Exchange of directories in different parents fixes `..` and link counts.
    let f = b.create("file", &reg()).unwrap();
    let (ra, rb) = (a.getattr().unwrap().nlink, b.getattr().unwrap().nlink);
    assert_eq!((ra, rb), (3, 2));
    a.rename("sub", &*b, "file", EXCHANGE).unwrap();
    assert_eq!(
        b.lookup("file").unwrap().getattr().unwrap().ftype,
        FileType::Directory
    );
    assert_eq!(
        a.lookup("sub").unwrap().getattr().unwrap().ino,
        f.getattr().unwrap().ino
    );
    assert_eq!(
        (a.getattr().unwrap().nlink, b.getattr().unwrap().nlink),
        (2, 3)
    );
    let mut dotdot = 0;
    sub.readdir(0, &mut |e| {
        if e.name == ".." {
            dotdot = e.ino;
        }
        true
    })
    .unwrap();
    assert_eq!(dotdot, b.getattr().unwrap().ino);
    // Exchange with a missing target; both flags.
    assert_eq!(
        root.rename("a", &*root, "zz", EXCHANGE),
        Err(VfsError::NotFound)
    );
    assert_eq!(
        root.rename(
            "a",
            &*root,
            "b",
            RenameFlags {
                noreplace: true,
                exchange: true
            }
        ),
        Err(VfsError::InvalidInput)
    );
    // Two links to one inode: rename is a no-op that keeps both names.
    let x = root.create("x", &reg()).unwrap();
    root.link("y", &*x).unwrap();
    root.rename("x", &*root, "y", PLAIN).unwrap();
    assert!(root.lookup("x").is_ok() && root.lookup("y").is_ok());
    assert_eq!(x.getattr().unwrap().nlink, 2);
    // NOREPLACE onto itself is EEXIST; plain onto itself is fine.
    assert_eq!(
        root.rename("x", &*root, "x", NOREPLACE),
        Err(VfsError::AlreadyExists)
    );
    // Replacing a file drops its link count; the replaced inode is freed.
    let victim = root.create("victim", &reg()).unwrap();
    root.rename("x", &*root, "victim", PLAIN).unwrap();
    assert_eq!(victim.getattr(), Err(VfsError::NotFound));
    assert_eq!(x.getattr().unwrap().nlink, 2);
    // Replacing an empty directory across parents.
    let c = root.create("c", &dir()).unwrap();
    c.create("empty", &dir()).unwrap();
    let root_links = root.getattr().unwrap().nlink;
    root.rename("b", &*c, "empty", PLAIN).unwrap();
    assert_eq!(c.getattr().unwrap().nlink, 3);
    assert_eq!(root.getattr().unwrap().nlink, root_links - 1);
    // Another file system's node is EXDEV.
    let other = fresh();
    let oroot = other.root().unwrap();
    assert_eq!(
        root.rename("c", &*oroot, "c", PLAIN),
        Err(VfsError::CrossDevice)
    );
    assert_eq!(oroot.link("l", &*x).err(), Some(VfsError::CrossDevice));
    // Rename updates ctime of the moved inode and both directories' mtime.
    let t0 = x.getattr().unwrap().ctime;
    let m0 = c.getattr().unwrap().mtime;
    root.rename("y", &*c, "moved", PLAIN).unwrap();
    assert!(x.getattr().unwrap().ctime > t0);
    assert!(c.getattr().unwrap().mtime > m0);
    let fs = remount(fs);
    let root = fs.root().unwrap();
    assert_eq!(names(&root), ["a", "c", "victim"]);
    assert_eq!(names(&root.lookup("c").unwrap()), ["empty", "moved"]);
    assert_clean(&fs);
}

#[test]
fn xattr_flags_and_namespaces() {
    let fs = fresh();
    let root = fs.root().unwrap();
    let f = root.create("f", &reg()).unwrap();
    for ns in ["user.a", "trusted.b", "security.c"] {
        f.setxattr(ns, ns.as_bytes(), XattrMode::Create).unwrap();
        assert_eq!(
            f.setxattr(ns, b"", XattrMode::Create),
            Err(VfsError::AlreadyExists)
        );
        f.setxattr(ns, b"second", XattrMode::Replace).unwrap();
    }
    assert_eq!(
        f.setxattr("user.none", b"", XattrMode::Replace),
        Err(VfsError::NoData)
    );
    assert_eq!(
        f.setxattr("bogus.a", b"", XattrMode::Any),
        Err(VfsError::Unsupported)
    );
    assert_eq!(
        f.setxattr("system.posix_acl_access", b"", XattrMode::Any),
        Err(VfsError::Unsupported)
    );
    assert_eq!(
        f.setxattr(&format!("user.{}", "n".repeat(251)), b"", XattrMode::Any),
        Err(VfsError::Range)
    );
    let big = vec![9u8; 65536];
    f.setxattr("user.big", &big, XattrMode::Any).unwrap();
    assert_eq!(f.getxattr("user.big").unwrap(), big);
    let mut l = f.listxattr().unwrap();
    l.sort();
    assert_eq!(l, ["security.c", "trusted.b", "user.a", "user.big"]);
    let l = root
        .symlink("l", "f", &NewNode::new(FileType::Symlink, 0o777))
        .unwrap();
    assert_eq!(
        l.setxattr("user.a", b"", XattrMode::Any),
        Err(VfsError::NotPermitted)
    );
    l.setxattr("trusted.a", b"ok", XattrMode::Any).unwrap();
    let c0 = f.getattr().unwrap().ctime;
    f.removexattr("user.a").unwrap();
    assert!(f.getattr().unwrap().ctime > c0);
    // xattrs go with the inode.
    root.unlink("f").unwrap();
    let g = root.create("f", &reg()).unwrap();
    assert_eq!(g.listxattr().unwrap(), Vec::<String>::new());
    let fs = remount(fs);
    assert_eq!(
        fs.root()
            .unwrap()
            .lookup("l")
            .unwrap()
            .getxattr("trusted.a")
            .unwrap(),
        b"ok"
    );
    assert_clean(&fs);
}

#[test]
fn large_sparse_files() {
    let fs = fresh();
    let root = fs.root().unwrap();
    let f = root.create("sparse", &reg()).unwrap();
    let mib = 1u64 << 20;
    let block = pattern(300_000, 9);
    for at in [0, 3 * mib + 17, 7 * mib - 5] {
        f.write_at(at, &block).unwrap();
    }
    let size = 7 * mib - 5 + block.len() as u64;
    let check = |f: &vfs::NodeRef| {
        assert_eq!(f.getattr().unwrap().size, size);
        let all = read_all(f);
        let mut expect = vec![0u8; size as usize];
        for at in [0, 3 * mib + 17, 7 * mib - 5] {
            expect[at as usize..at as usize + block.len()].copy_from_slice(&block);
        }
        assert!(all == expect, "sparse contents differ");
        // Odd-sized reads across chunk and hole boundaries.
        let mut buf = vec![1u8; 123_457];
        let mut at = 0u64;
        while at < size {
            let n = f.read_at(at, &mut buf).unwrap();
            assert!(buf[..n] == expect[at as usize..at as usize + n]);
            at += n as u64;
        }
    };
    check(&f);
    fs.sync().unwrap();
    check(&f);
    // Holes take no space.
    let blocks = f.getattr().unwrap().blocks;
    assert!(blocks * 512 < 2 * mib, "blocks {blocks}");
    let fs = remount(fs);
    let f = fs.root().unwrap().lookup("sparse").unwrap();
    check(&f);
    // Shrink into a chunk, grow: zeros.
    f.truncate(3 * mib + 20).unwrap();
    f.truncate(5 * mib).unwrap();
    let all = read_all(&f);
    assert_eq!(
        &all[3 * mib as usize + 17..3 * mib as usize + 20],
        &block[..3]
    );
    assert!(all[3 * mib as usize + 20..].iter().all(|&b| b == 0));
    // fallocate fills holes and grows the file.
    let node = f.as_any().downcast_ref::<dbfs::DbNode<MemPager>>().unwrap();
    let before = f.getattr().unwrap().blocks;
    node.fallocate(4 * mib, 2 * mib).unwrap();
    let m = f.getattr().unwrap();
    assert_eq!(m.size, 6 * mib);
    assert!(m.blocks >= before + (mib / 512));
    assert!(read_all(&f)[3 * mib as usize + 20..]
        .iter()
        .all(|&b| b == 0));
    assert_eq!(
        f.write_at(dbfs::MAX_FILE_SIZE, b"x"),
        Err(VfsError::FileTooLarge)
    );
    assert_clean(&fs);
}

#[test]
fn readdir_resumes_while_entries_change() {
    let fs = fresh();
    let root = fs.root().unwrap();
    let d = root.create("d", &dir()).unwrap();
    for i in 0..100 {
        d.create(&format!("n{i:03}"), &reg()).unwrap();
    }
    // List 10 at a time; between batches remove an entry already seen and one not yet seen,
    // and add a new one. No surviving entry repeats or goes missing.
    let mut seen: Vec<String> = Vec::new();
    let mut cookie = 0;
    let mut round = 0;
    loop {
        let mut batch = Vec::new();
        d.readdir(cookie, &mut |e| {
            if batch.len() == 10 {
                return false;
            }
            batch.push(e.name.to_string());
            cookie = e.next_cookie;
            true
        })
        .unwrap();
        if batch.is_empty() {
            break;
        }
        seen.extend(batch);
        round += 1;
        let _ = d.unlink(&format!("n{:03}", round * 2));
        let _ = d.unlink(&format!("n{:03}", 99 - round));
        if round <= 5 {
            d.create(&format!("new{round}"), &reg()).unwrap();
        }
        assert!(round < 100, "listing does not end");
    }
    let mut dedup = seen.clone();
    dedup.sort();
    dedup.dedup();
    assert_eq!(dedup.len(), seen.len(), "an entry repeated");
    let now = names(&d);
    for name in &now {
        if !name.starts_with("new") {
            assert!(seen.contains(name), "{name} was skipped");
        }
    }
    // A cookie past the end yields nothing; cookies of removed entries still resume.
    let mut any = false;
    d.readdir(u64::MAX, &mut |_| {
        any = true;
        true
    })
    .unwrap();
    assert!(!any);
}

#[test]
fn relatime_on_the_small_read_path_of_a_stored_file() {
    // Small sequential reads of a file with nothing buffered take the remembered-chunk path,
    // which looks at the stored record in place: it must still update atime when relatime says
    // so (a day later), and only then.
    let clock = TestClock::new();
    let pager = DbFs::mkfs(MemPager::new(), MkfsOptions::default()).unwrap();
    let fs = DbFs::mount(pager, clock.clone()).unwrap();
    let root = fs.root().unwrap();
    let f = root.create("f", &reg()).unwrap();
    f.write_at(0, &[7u8; 256 << 10]).unwrap();
    f.fsync(false).unwrap();
    let mut buf = [0u8; 4096];
    let mut read_some = |f: &vfs::NodeRef| {
        for k in 0..8u64 {
            assert_eq!(f.read_at(k * 4096, &mut buf).unwrap(), 4096);
            assert!(buf.iter().all(|&b| b == 7));
        }
    };
    // First reads: atime <= mtime, so one update; stored by the fsync.
    read_some(&f);
    f.fsync(false).unwrap();
    let first = f.getattr().unwrap().atime;
    assert!(first > f.getattr().unwrap().mtime);
    // The same day: no update, however many reads.
    clock.advance_secs(3600);
    read_some(&f);
    read_some(&f);
    assert_eq!(f.getattr().unwrap().atime, first);
    // A day later: the next read updates it.
    clock.advance_secs(2 * 24 * 3600);
    read_some(&f);
    let later = f.getattr().unwrap().atime;
    assert!(
        later > first,
        "atime not updated a day later: {later:?} vs {first:?}"
    );
    f.fsync(false).unwrap();
    assert_eq!(f.getattr().unwrap().atime, later);
}

#[test]
fn repeated_small_reads_see_every_change_to_the_file() {
    // Repeated 4 KiB reads of stored files take the remembered-chunk path, which remembers what
    // the write-back cache held for the last file read and the size of the stored record: a
    // buffered write, a truncate, an extension, a commit, or reads of another file in between
    // must all show in the next read.
    let fs = fresh();
    let root = fs.root().unwrap();
    let f = root.create("f", &reg()).unwrap();
    let g = root.create("g", &reg()).unwrap();
    f.write_at(0, &[1u8; 64 << 10]).unwrap();
    g.write_at(0, &[9u8; 64 << 10]).unwrap();
    f.fsync(false).unwrap();
    g.fsync(false).unwrap();
    let mut buf = [0u8; 4096];
    let read = |n: &vfs::NodeRef, at: u64, buf: &mut [u8; 4096]| n.read_at(at, buf).unwrap();
    for _ in 0..3 {
        for k in 0..4u64 {
            assert_eq!(read(&f, k * 4096, &mut buf), 4096);
            assert!(buf.iter().all(|&b| b == 1));
            assert_eq!(read(&g, k * 4096, &mut buf), 4096);
            assert!(buf.iter().all(|&b| b == 9));
        }
    }
    // A buffered write inside the chunk read.
    f.write_at(8192 + 10, &[2u8; 100]).unwrap();
    assert_eq!(read(&f, 8192, &mut buf), 4096);
    assert!(buf[..10].iter().all(|&b| b == 1));
    assert!(buf[10..110].iter().all(|&b| b == 2));
    assert!(buf[110..].iter().all(|&b| b == 1));
    f.fsync(false).unwrap();
    assert_eq!(read(&f, 8192, &mut buf), 4096);
    assert!(buf[10..110].iter().all(|&b| b == 2));
    assert_eq!(read(&g, 8192, &mut buf), 4096);
    assert!(buf.iter().all(|&b| b == 9));
    // Shorter, then longer again (the bytes between are zeros).
    f.truncate(10_000).unwrap();
    assert_eq!(read(&f, 8192, &mut buf), 10_000 - 8192);
    assert_eq!(read(&f, 8192, &mut buf), 10_000 - 8192);
    f.write_at(20_000, &[3]).unwrap();
    assert_eq!(read(&f, 8192, &mut buf), 4096);
    assert!(buf[..10].iter().all(|&b| b == 1));
    assert!(buf[10_000 - 8192..].iter().all(|&b| b == 0));
    f.fsync(false).unwrap();
    for _ in 0..2 {
        assert_eq!(read(&f, 8192, &mut buf), 4096);
        assert!(buf[10_000 - 8192..].iter().all(|&b| b == 0));
        assert_eq!(read(&f, 16384, &mut buf), 20_001 - 16384);
        assert_eq!(buf[20_000 - 16384], 3);
    }
    // The other file, read in between, was never touched.
    for k in 0..4u64 {
        assert_eq!(read(&g, k * 4096, &mut buf), 4096);
        assert!(buf.iter().all(|&b| b == 9));
    }
}

#[test]
fn timestamps_move_exactly_when_posix_says() {
    let clock = TestClock::new();
    let pager = DbFs::mkfs(MemPager::new(), MkfsOptions::default()).unwrap();
    let fs = DbFs::mount(pager, clock.clone()).unwrap();
    let root = fs.root().unwrap();
    let f = root.create("f", &reg()).unwrap();
    let c = f.getattr().unwrap();
    assert!(c.atime == c.mtime && c.mtime == c.ctime);
    let r0 = root.getattr().unwrap();
    assert_eq!(r0.mtime, r0.ctime);
    // write: mtime + ctime, not atime.
    f.write_at(0, b"abc").unwrap();
    let w = f.getattr().unwrap();
    assert!(w.mtime > c.mtime && w.ctime == w.mtime && w.atime == c.atime);
    // read: relatime updates atime (atime <= mtime) once, then not again the same day.
    let mut buf = [0u8; 3];
    f.read_at(0, &mut buf).unwrap();
    let r = f.getattr().unwrap();
    assert!(r.atime > w.mtime && r.mtime == w.mtime && r.ctime == w.ctime);
    f.read_at(0, &mut buf).unwrap();
    assert_eq!(f.getattr().unwrap().atime, r.atime);
    clock.advance_secs(2 * 24 * 3600);
    f.read_at(0, &mut buf).unwrap();
    assert!(f.getattr().unwrap().atime > r.atime);
    // chmod / chown: ctime only.
    let before = f.getattr().unwrap();
    f.setattr(&SetAttr {
        perm: Some(0o640),
        ..Default::default()
    })
    .unwrap();
    let after = f.getattr().unwrap();
    assert!(
        after.ctime > before.ctime && after.mtime == before.mtime && after.atime == before.atime
    );
    // truncate to the same size: nothing; to another size: mtime + ctime.
    f.truncate(3).unwrap();
    assert_eq!(f.getattr().unwrap(), after);
    f.truncate(1).unwrap();
    let t = f.getattr().unwrap();
    assert!(t.mtime > after.mtime && t.ctime == t.mtime);
    // utimens with explicit times sets them, ctime to now.
    let at = Timestamp { sec: 5, nsec: 6 };
    let m = f
        .setattr(&SetAttr {
            atime: Some(TimeSet::At(at)),
            mtime: Some(TimeSet::Now),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(m.atime, at);
    assert!(m.mtime > t.mtime && m.ctime >= m.mtime);
    // link: target ctime, dir mtime + ctime; unlink the same.
    let r1 = root.getattr().unwrap();
    root.link("g", &*f).unwrap();
    let (r2, f2) = (root.getattr().unwrap(), f.getattr().unwrap());
    assert!(
        r2.mtime > r1.mtime && r2.ctime == r2.mtime && f2.ctime > m.ctime && f2.mtime == m.mtime
    );
    root.unlink("g").unwrap();
    assert!(f.getattr().unwrap().ctime > f2.ctime);
    // A zero-length write changes nothing.
    let z = f.getattr().unwrap();
    f.write_at(100, b"").unwrap();
    assert_eq!(f.getattr().unwrap(), z);
    // Times survive remount with nanoseconds.
    let fs = remount(fs);
    assert_eq!(
        fs.root().unwrap().lookup("f").unwrap().getattr().unwrap(),
        z
    );
}

#[test]
fn ownership_rules_that_need_no_credentials() {
    let fs = fresh();
    let root = fs.root().unwrap();
    // setgid directory: group inherited, subdirectories inherit the bit.
    let sg = root
        .create(
            "sg",
            &NewNode {
                ftype: FileType::Directory,
                perm: 0o2775,
                uid: 1,
                gid: 50,
                rdev: 0,
            },
        )
        .unwrap();
    let f = sg
        .create(
            "f",
            &NewNode {
                ftype: FileType::Regular,
                perm: 0o644,
                uid: 2,
                gid: 7,
                rdev: 0,
            },
        )
        .unwrap();
    assert_eq!(
        (f.getattr().unwrap().gid, f.getattr().unwrap().perm),
        (50, 0o644)
    );
    let sub = sg
        .create(
            "sub",
            &NewNode {
                ftype: FileType::Directory,
                perm: 0o755,
                uid: 2,
                gid: 7,
                rdev: 0,
            },
        )
        .unwrap();
    assert_eq!(
        (sub.getattr().unwrap().gid, sub.getattr().unwrap().perm),
        (50, 0o2755)
    );
    // chown of a regular file clears set-user-ID, and set-group-ID if group-executable.
    f.setattr(&SetAttr {
        perm: Some(0o6755),
        ..Default::default()
    })
    .unwrap();
    let m = f
        .setattr(&SetAttr {
            uid: Some(9),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(m.perm, 0o0755);
    f.setattr(&SetAttr {
        perm: Some(0o6745),
        ..Default::default()
    })
    .unwrap();
    let m = f
        .setattr(&SetAttr {
            gid: Some(9),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(m.perm, 0o2745);
    // Directories keep theirs.
    let m = sub
        .setattr(&SetAttr {
            uid: Some(9),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(m.perm, 0o2755);
    // Sticky bit is stored.
    let t = root
        .create("tmp", &NewNode::new(FileType::Directory, 0o1777))
        .unwrap();
    assert_eq!(t.getattr().unwrap().perm, 0o1777);
}

#[test]
fn name_and_type_errors_match_linux() {
    let fs = fresh();
    let root = fs.root().unwrap();
    let f = root.create("f", &reg()).unwrap();
    let long = "x".repeat(256);
    assert_eq!(root.lookup(&long).err(), Some(VfsError::NameTooLong));
    assert_eq!(
        root.create(&long, &reg()).err(),
        Some(VfsError::NameTooLong)
    );
    root.create(&"y".repeat(255), &reg()).unwrap();
    assert_eq!(
        root.symlink("s", "", &reg()).err(),
        Some(VfsError::NotFound)
    );
    assert_eq!(
        root.symlink("s", &"t".repeat(4096), &reg()).err(),
        Some(VfsError::NameTooLong)
    );
    assert_eq!(
        f.symlink("s", "t", &reg()).err(),
        Some(VfsError::NotADirectory)
    );
    let l = root.symlink("s", "t", &reg()).unwrap();
    assert_eq!(l.read_at(0, &mut [0; 4]), Err(VfsError::InvalidInput));
    assert_eq!(l.getattr().unwrap().perm, 0o777);
    assert_eq!(
        root.create("bad", &NewNode::new(FileType::Symlink, 0o777))
            .err(),
        Some(VfsError::InvalidInput)
    );
    let d = root.create("d", &dir()).unwrap();
    assert_eq!(root.link("dl", &*d), Err(VfsError::NotPermitted));
    assert_eq!(d.truncate(0), Err(VfsError::IsADirectory));
    let p = root
        .create("p", &NewNode::new(FileType::Fifo, 0o644))
        .unwrap();
    assert_eq!(p.truncate(0), Err(VfsError::InvalidInput));
    assert_eq!(f.readdir(0, &mut |_| true), Err(VfsError::NotADirectory));
    assert_eq!(
        root.rename("f", &*f, "g", PLAIN),
        Err(VfsError::NotADirectory)
    );
}

#[test]
fn mkfs_parameters_and_mount_refusals() {
    let opts = MkfsOptions {
        page_size: 8192,
        chunk_size: 65536,
        label: "students".into(),
        uuid: [0xab; 16],
        root_perm: 0o1777,
        root_uid: 4,
        root_gid: 5,
        time: Timestamp { sec: 99, nsec: 0 },
    };
    let pager = DbFs::mkfs(MemPager::new(), opts).unwrap();
    let fs = DbFs::mount(pager, TestClock::new()).unwrap();
    let sb = fs.superblock();
    assert_eq!(
        (sb.page_size, sb.chunk_size, sb.label.as_str(), sb.uuid),
        (8192, 65536, "students", [0xab; 16])
    );
    let r = fs.root().unwrap().getattr().unwrap();
    assert_eq!(
        (r.perm, r.uid, r.gid, r.mtime.sec, r.blksize),
        (0o1777, 4, 5, 99, 65536)
    );
    for bad in [
        MkfsOptions {
            page_size: 1024,
            ..Default::default()
        },
        MkfsOptions {
            page_size: 5000,
            ..Default::default()
        },
        MkfsOptions {
            chunk_size: 3000,
            ..Default::default()
        },
        MkfsOptions {
            chunk_size: 256,
            ..Default::default()
        },
        MkfsOptions {
            label: "l".repeat(65),
            ..Default::default()
        },
    ] {
        assert_eq!(
            DbFs::mkfs(MemPager::new(), bad).err(),
            Some(VfsError::InvalidInput)
        );
    }
    // Not a kvdb image at all.
    let e = DbFs::mount_checked(MemPager::from_image(vec![0x5a; 65536]), TestClock::new())
        .err()
        .unwrap();
    assert!(
        matches!(e, MountError::Store(kvdb::Error::Corrupted(_))),
        "{e}"
    );
    // A kvdb store that is not dbfs.
    let db = kvdb::Db::create(MemPager::new(), kvdb::Options::default()).unwrap();
    let e = DbFs::mount_checked(db.into_pager(), TestClock::new())
        .err()
        .unwrap();
    assert_eq!(e, MountError::NotDbfs);
    assert_eq!(VfsError::from(e), VfsError::InvalidInput);
    // A newer format version, unknown features, a bad chunk size.
    for (at, value, expect) in [
        (8usize, 2u32, MountError::UnsupportedVersion(2)),
        (20, 1, MountError::UnknownFeatures(1)),
        (16, 1000, MountError::BadChunkSize(1000)),
        (
            12,
            16384,
            MountError::PageSizeMismatch {
                superblock: 16384,
                store: 4096,
            },
        ),
    ] {
        let pager = DbFs::mkfs(MemPager::new(), MkfsOptions::default()).unwrap();
        let db = kvdb::Db::open(pager).unwrap();
        {
            let tx = db.begin_write().unwrap();
            let meta = tx.get_bucket(b"meta").unwrap();
            let mut sb = meta.get(b"superblock").unwrap().unwrap().to_vec();
            sb[at..at + 4].copy_from_slice(&value.to_le_bytes());
            meta.put(b"superblock", &sb).unwrap();
            tx.commit().unwrap();
        }
        let e = DbFs::mount_checked(db.into_pager(), TestClock::new())
            .err()
            .unwrap();
        assert_eq!(e, expect);
        assert!(!e.to_string().is_empty());
    }
}

#[test]
fn damaged_records_are_corrupted_not_panics() {
    let fs = fresh();
    let root = fs.root().unwrap();
    let f = root.create("f", &reg()).unwrap();
    f.write_at(0, &pattern(40_000, 4)).unwrap();
    root.create("d", &dir()).unwrap();
    fs.sync().unwrap();
    let ino = f.getattr().unwrap().ino;
    let image = fs.pager().image();
    drop(fs);
    // Overwrite the file's inode record and a chunk with junk of the wrong length.
    let db = kvdb::Db::open(MemPager::from_image(image)).unwrap();
    {
        let tx = db.begin_write().unwrap();
        tx.get_bucket(b"inodes")
            .unwrap()
            .put(&ino.to_be_bytes(), b"junk")
            .unwrap();
        let mut k = ino.to_be_bytes().to_vec();
        k.extend_from_slice(&0u64.to_be_bytes());
        tx.get_bucket(b"data")
            .unwrap()
            .put(&k, &vec![1u8; 100_000])
            .unwrap();
        tx.get_bucket(b"cookies")
            .unwrap()
            .put(&[0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 99], b"x")
            .unwrap();
        tx.commit().unwrap();
    }
    let fs = DbFs::mount(db.into_pager(), TestClock::new()).unwrap();
    let root = fs.root().unwrap();
    let f = root.lookup("f").unwrap();
    assert_eq!(f.getattr(), Err(VfsError::Corrupted));
    assert_eq!(f.read_at(0, &mut [0; 10]), Err(VfsError::Corrupted));
    assert_eq!(root.readdir(0, &mut |_| true), Err(VfsError::Corrupted));
    let problems = fs.fsck().unwrap();
    assert!(problems.len() >= 3, "{problems:?}");
}

#[test]
fn file_pager_round_trip() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("img");
    let pager = DbFs::mkfs(
        kvdb::FilePager::open(&path).unwrap(),
        MkfsOptions::default(),
    )
    .unwrap();
    drop(pager);
    {
        let fs = DbFs::mount(kvdb::FilePager::open(&path).unwrap(), TestClock::new()).unwrap();
        let root = fs.root().unwrap();
        let f = root.create("f", &reg()).unwrap();
        f.write_at(0, &pattern(1 << 20, 8)).unwrap();
        root.create("d", &dir())
            .unwrap()
            .create("inner", &reg())
            .unwrap();
        // Dropping the mount commits the cache.
    }
    let fs = DbFs::mount(kvdb::FilePager::open(&path).unwrap(), TestClock::new()).unwrap();
    let root = fs.root().unwrap();
    assert_eq!(read_all(&root.lookup("f").unwrap()), pattern(1 << 20, 8));
    assert_eq!(names(&root.lookup("d").unwrap()), ["inner"]);
}

#[test]
fn writeback_limit_and_timer() {
    let clock = TestClock::new();
    let pager = DbFs::mkfs(MemPager::new(), MkfsOptions::default()).unwrap();
    let fs = DbFs::mount(pager, clock.clone()).unwrap();
    fs.set_dirty_limit(1 << 20);
    let root = fs.root().unwrap();
    let f = root.create("f", &reg()).unwrap();
    f.write_at(0, &vec![3u8; 512 << 10]).unwrap();
    assert_eq!(fs.dirty_bytes(), 512 << 10);
    f.write_at(512 << 10, &vec![3u8; 512 << 10]).unwrap();
    assert_eq!(fs.dirty_bytes(), 0, "crossing the limit commits");
    f.write_at(0, b"x").unwrap();
    fs.writeback_tick().unwrap();
    assert!(fs.dirty_bytes() > 0, "young data stays buffered");
    clock.advance_secs(dbfs::WRITEBACK_SECS);
    fs.writeback_tick().unwrap();
    assert_eq!(fs.dirty_bytes(), 0);
    assert_eq!(
        read_all(&crash_copy(&fs).root().unwrap().lookup("f").unwrap())[..2],
        *b"x\x03"
    );
}

#[test]
fn concurrent_readers_and_a_writer() {
    let fs = fresh();
    let root = fs.root().unwrap();
    let f = root.create("f", &reg()).unwrap();
    let data = pattern(1 << 20, 6);
    f.write_at(0, &data).unwrap();
    fs.sync().unwrap();
    let f = Arc::new(f);
    let mut threads = Vec::new();
    for t in 0..3 {
        let f = f.clone();
        let root = root.clone();
        let data = data.clone();
        threads.push(std::thread::spawn(move || {
            for i in 0..50 {
                if t == 0 {
                    root.create(&format!("c{i}"), &reg()).unwrap();
                    f.write_at((1 << 20) + i * 10, b"0123456789").unwrap();
                } else {
                    let mut buf = vec![0u8; 65536];
                    let at = (i as usize * 7919) % ((1 << 20) - 65536);
                    f.read_at(at as u64, &mut buf).unwrap();
                    assert!(buf == data[at..at + 65536]);
                }
            }
        }));
    }
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(names(&root).len(), 51);
    assert_eq!(f.getattr().unwrap().size, (1 << 20) + 500);
}

#[test]
fn two_mounts_share_nothing() {
    let a = fresh();
    let b = fresh();
    a.root()
        .unwrap()
        .create("only-a", &reg())
        .unwrap()
        .write_at(0, b"a")
        .unwrap();
    assert_eq!(b.dirty_bytes(), 0);
    assert_eq!(names(&b.root().unwrap()), Vec::<String>::new());
}

#[test]
fn hard_links_and_symlinks_persist_counts() {
    let fs = fresh();
    let root = fs.root().unwrap();
    let f = root.create("f", &reg()).unwrap();
    let d = root.create("d", &dir()).unwrap();
    d.link("g", &*f).unwrap();
    root.link("h", &*f).unwrap();
    assert_eq!(f.getattr().unwrap().nlink, 3);
    root.unlink("f").unwrap();
    let fs = remount(fs);
    let root = fs.root().unwrap();
    let h = root.lookup("h").unwrap();
    assert_eq!(h.getattr().unwrap().nlink, 2);
    root.lookup("d").unwrap().unlink("g").unwrap();
    assert_eq!(h.getattr().unwrap().nlink, 1);
    let _ = Node::getattr(&*h);
}

#[test]
fn read_only_zero_copy_mount_with_noatime() {
    let fs = fresh();
    let root = fs.root().unwrap();
    let f = root.create("f", &reg()).unwrap();
    f.write_at(0, &pattern(100_000, 2)).unwrap();
    let image: &'static [u8] = Box::leak(remount(fs).pager().image().into_boxed_slice());
    let ro = DbFs::mount(kvdb::SlicePager(image), TestClock::new()).unwrap();
    ro.set_noatime(true);
    let f = ro.root().unwrap().lookup("f").unwrap();
    let before = f.getattr().unwrap();
    assert_eq!(read_all(&f), pattern(100_000, 2));
    assert_eq!(
        f.getattr().unwrap(),
        before,
        "noatime: reads change nothing"
    );
    assert_eq!(ro.dirty_bytes(), 0);
    assert_clean(&*ro);
    ro.sync().unwrap_err();
    assert_eq!(
        ro.root().unwrap().create("x", &reg()).err(),
        Some(VfsError::Io)
    );
    // With relatime on, the first read buffers an atime; reads stay lock-free and correct.
    let fs = fresh();
    let f = fs.root().unwrap().create("g", &reg()).unwrap();
    f.write_at(0, b"data").unwrap();
    f.fsync(false).unwrap();
    let mut buf = [0u8; 4];
    f.read_at(0, &mut buf).unwrap();
    let a = f.getattr().unwrap().atime;
    assert!(a > f.getattr().unwrap().mtime);
    f.read_at(1, &mut buf).unwrap();
    assert_eq!(&buf[..3], b"ata");
    fs.sync().unwrap();
    assert_eq!(
        crash_copy(&fs)
            .root()
            .unwrap()
            .lookup("g")
            .unwrap()
            .getattr()
            .unwrap()
            .atime,
        a
    );
}

/// A background commit (the write-back timer) that fails leaves its error with the file until
/// someone is told: close (FUSE flush, `take_write_error`) reports it once; the data stays
/// buffered, readable, and commits once the device works again.
#[test]
fn a_failed_background_commit_is_reported_at_close() {
    let clock = TestClock::new();
    let pager = DbFs::mkfs(MemPager::new(), MkfsOptions::default()).unwrap();
    let fs = DbFs::mount(pager, clock.clone()).unwrap();
    let root = fs.root().unwrap();
    let f = root.create("f", &reg()).unwrap();
    let db = f.as_any().downcast_ref::<dbfs::DbNode<MemPager>>().unwrap();
    db.take_write_error().unwrap();
    f.write_at(0, b"not yet stored").unwrap();
    fs.pager().fail_writes_after(Some(0));
    clock.advance_secs(dbfs::WRITEBACK_SECS);
    assert_eq!(fs.writeback_tick(), Err(VfsError::Io));
    assert_eq!(db.take_write_error(), Err(VfsError::Io));
    // Reported once.
    db.take_write_error().unwrap();
    assert_eq!(read_all(&f), b"not yet stored");
    // Fails again: reported again; then the device heals and the data commits.
    assert_eq!(fs.writeback_tick(), Err(VfsError::Io));
    fs.pager().fail_writes_after(None);
    f.fsync(false).unwrap();
    // Committed since: nothing left to report.
    db.take_write_error().unwrap();
    let fs = remount(fs);
    let f = fs.root().unwrap().lookup("f").unwrap();
    assert_eq!(read_all(&f), b"not yet stored");
}

#[test]
fn a_file_times_setattr_is_buffered_with_its_data() {
    let fs = fresh();
    let root = fs.root().unwrap();
    let f = root.create("f", &reg()).unwrap();
    f.open().unwrap();
    f.write_at(0, b"data").unwrap();
    f.fsync(false).unwrap();
    let before = f.getattr().unwrap();
    let t = Timestamp {
        sec: 1_000_000_000,
        nsec: 5,
    };
    fs.pager().record();
    let m = f
        .setattr(&SetAttr {
            atime: Some(TimeSet::At(t)),
            mtime: Some(TimeSet::At(t)),
            ..Default::default()
        })
        .unwrap();
    assert!(fs.pager().take_log().is_empty(), "a commit wrote pages");
    assert_eq!((m.atime, m.mtime, m.size), (t, t, 4));
    assert!(m.ctime >= before.ctime);
    assert_eq!(f.getattr().unwrap().mtime, t);
    // What a power cut now would leave of f.
    let after_crash = || {
        let fs = crash_copy(&fs);
        let f = fs.root().unwrap().lookup("f").unwrap();
        f.getattr().unwrap()
    };
    // No transaction: a power cut now finds the times of the last fsync, and the file whole.
    let g = after_crash();
    assert_eq!((g.mtime, g.size), (before.mtime, 4));
    // They commit with the file's data: fsync makes them durable.
    f.fsync(false).unwrap();
    let g = after_crash();
    assert_eq!((g.atime, g.mtime, g.ctime), (t, t, m.ctime));
    // A directory's times still commit at once (no write-back entry for directories).
    fs.pager().record();
    root.setattr(&SetAttr {
        mtime: Some(TimeSet::At(t)),
        ..Default::default()
    })
    .unwrap();
    assert!(!fs.pager().take_log().is_empty());
    f.release().unwrap();
    assert_clean(&fs);
}
