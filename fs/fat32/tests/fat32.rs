//! Behaviour of fat32 over a RAM disk: contents, sizes, errors, persistence, corrupt images.

use std::sync::Arc;

use fat32::Fat32Fs;
use vfs::{
    BlockDevice, Clock, FileSystem, FileType, NewNode, NodeRef, RamDisk, RenameFlags, SetAttr,
    TimeSet, Timestamp, VfsError, ZeroClock,
};

const MIB: usize = 1024 * 1024;

/// A clock fixed at 2024-05-01 12:00:00 UTC.
struct FixedClock;
impl Clock for FixedClock {
    fn now(&self) -> Timestamp {
        Timestamp {
            sec: 1_714_564_800,
            nsec: 0,
        }
    }
}

fn fresh(bytes: usize) -> (Arc<RamDisk>, Arc<Fat32Fs>) {
    let disk = Arc::new(RamDisk::new(bytes));
    Fat32Fs::format(disk.clone(), "TEST").unwrap();
    let fs = Fat32Fs::mount(disk.clone(), Arc::new(FixedClock)).unwrap();
    (disk, fs)
}

fn file() -> NewNode {
    NewNode::new(FileType::Regular, 0o644)
}
fn dir() -> NewNode {
    NewNode::new(FileType::Directory, 0o755)
}

fn names(node: &NodeRef) -> Vec<String> {
    let mut out = Vec::new();
    node.readdir(0, &mut |e| {
        out.push(e.name.to_string());
        true
    })
    .unwrap();
    out
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

fn read_all(node: &NodeRef) -> Vec<u8> {
    let size = node.getattr().unwrap().size as usize;
    let mut buf = vec![0u8; size + 10];
    let n = node.read_at(0, &mut buf).unwrap();
    buf.truncate(n);
    buf
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| {
            (i as u32)
                .wrapping_mul(2_654_435_761)
                .rotate_left(seed as u32) as u8
                ^ seed
        })
        .collect()
}

#[test]
fn format_and_mount_give_an_empty_root() {
    let (_d, fs) = fresh(40 * MIB);
    assert_eq!(fs.fs_name(), "fat32");
    let root = fs.root().unwrap();
    assert_eq!(names(&root), [".", ".."]);
    let m = root.getattr().unwrap();
    assert_eq!(
        (m.ino, m.ftype, m.nlink, m.perm),
        (fat32::ROOT_INO, FileType::Directory, 2, 0o755)
    );
    let st = fs.statfs().unwrap();
    assert_eq!(st.fs_type, 0x4d44);
    assert_eq!(st.block_size, 512);
    assert!(
        st.blocks >= 65_525,
        "FAT32 needs at least 65525 clusters, got {}",
        st.blocks
    );
    assert_eq!(
        st.blocks_free,
        st.blocks - 1,
        "only the root directory's cluster is used"
    );
}

#[test]
fn cluster_size_follows_volume_size() {
    for (bytes, cluster) in [
        (300 * MIB, 4096),
        (140 * MIB, 2048),
        (70 * MIB, 1024),
        (40 * MIB, 512),
    ] {
        let (_d, fs) = fresh(bytes);
        assert_eq!(fs.cluster_size(), cluster, "{} MiB", bytes / MIB);
    }
    let small = Arc::new(RamDisk::new(16 * MIB));
    assert_eq!(Fat32Fs::format(small, "X"), Err(VfsError::InvalidInput));
    assert_eq!(
        Fat32Fs::format(Arc::new(RamDisk::new(40 * MIB)), "MUCH TOO LONG LABEL"),
        Err(VfsError::InvalidInput)
    );
}

#[test]
fn write_read_exact_contents_at_unaligned_offsets() {
    let (_d, fs) = fresh(40 * MIB);
    let root = fs.root().unwrap();
    let f = root.create("data.bin", &file()).unwrap();
    assert_eq!(f.getattr().unwrap().size, 0);
    // 3 MiB + a bit, written in odd-sized pieces.
    let data = pattern(3 * MIB + 1234, 3);
    let mut at = 0;
    for (i, chunk) in data.chunks(65_537).enumerate() {
        assert_eq!(
            f.write_at(at as u64, chunk).unwrap(),
            chunk.len(),
            "chunk {i}"
        );
        at += chunk.len();
    }
    assert_eq!(f.getattr().unwrap().size, data.len() as u64);
    // Read back in other odd pieces, starting at unaligned offsets.
    let mut back = vec![0u8; data.len()];
    let mut at = 0;
    while at < data.len() {
        let end = (at + 100_003).min(data.len());
        assert_eq!(f.read_at(at as u64, &mut back[at..end]).unwrap(), end - at);
        at = end;
    }
    assert!(back == data, "contents differ");
    // Overwrite a span straddling clusters, then a random-ish read.
    let patch = pattern(5000, 9);
    f.write_at(777, &patch).unwrap();
    let mut got = vec![0u8; 6000];
    assert_eq!(f.read_at(700, &mut got).unwrap(), 6000);
    assert_eq!(&got[..77], &data[700..777]);
    assert_eq!(&got[77..5077], &patch[..]);
    assert_eq!(&got[5077..], &data[5777..6700]);
    // Reads at and past EOF.
    assert_eq!(f.read_at(data.len() as u64, &mut got).unwrap(), 0);
    assert_eq!(f.read_at(u64::MAX, &mut got).unwrap(), 0);
    assert_eq!(f.read_at(data.len() as u64 - 10, &mut got).unwrap(), 10);
    // The size via a fresh lookup agrees.
    assert_eq!(
        root.lookup("data.bin").unwrap().getattr().unwrap().size,
        data.len() as u64
    );
}

#[test]
fn write_past_eof_fills_the_gap_with_zeros() {
    let (_d, fs) = fresh(40 * MIB);
    let f = fs.root().unwrap().create("sparse", &file()).unwrap();
    f.write_at(0, b"head").unwrap();
    f.write_at(10_000, b"tail").unwrap();
    let all = read_all(&f);
    assert_eq!(all.len(), 10_004);
    assert_eq!(&all[..4], b"head");
    assert!(all[4..10_000].iter().all(|&b| b == 0));
    assert_eq!(&all[10_000..], b"tail");
    assert_eq!(
        f.write_at(u32::MAX as u64, b"x"),
        Err(VfsError::FileTooLarge)
    );
}

#[test]
fn truncate_grows_with_zeros_and_shrinks_freeing_clusters() {
    let (_d, fs) = fresh(40 * MIB);
    let free0 = fs.statfs().unwrap().blocks_free;
    let f = fs.root().unwrap().create("t", &file()).unwrap();
    f.write_at(0, &pattern(100_000, 1)).unwrap();
    assert!(fs.statfs().unwrap().blocks_free < free0);
    f.truncate(10).unwrap();
    assert_eq!(f.getattr().unwrap().size, 10);
    assert_eq!(read_all(&f), pattern(100_000, 1)[..10]);
    assert_eq!(fs.statfs().unwrap().blocks_free, free0 - 1);
    f.truncate(3000).unwrap();
    let all = read_all(&f);
    assert_eq!(all.len(), 3000);
    assert_eq!(&all[..10], &pattern(100_000, 1)[..10]);
    assert!(all[10..].iter().all(|&b| b == 0));
    f.truncate(0).unwrap();
    assert_eq!(f.getattr().unwrap().size, 0);
    assert_eq!(fs.statfs().unwrap().blocks_free, free0);
    // setattr(size) is the same path.
    let m = f
        .setattr(&SetAttr {
            size: Some(512),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(m.size, 512);
    assert_eq!(fs.root().unwrap().truncate(0), Err(VfsError::IsADirectory));
}

#[test]
fn truncate_updates_the_modification_time() {
    let (_d, fs) = fresh(40 * MIB);
    let root = fs.root().unwrap();
    let f = root.create("f", &file()).unwrap();
    f.write_at(0, b"hello").unwrap();
    let old = Timestamp {
        sec: 1_600_000_000,
        nsec: 0,
    };
    let now = FixedClock.now();
    let age = |f: &NodeRef| {
        f.setattr(&SetAttr {
            mtime: Some(TimeSet::At(old)),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(f.getattr().unwrap().mtime, old);
    };
    // truncate(2)/ftruncate(2)/O_TRUNC (Node::truncate): shrink, the same size, growth.
    for size in [2, 2, 9000] {
        age(&f);
        f.truncate(size).unwrap();
        let m = f.getattr().unwrap();
        assert_eq!((m.size, m.mtime), (size, now), "truncate to {size}");
    }
    // A size change through setattr, with and without an explicit mtime.
    age(&f);
    let m = f
        .setattr(&SetAttr {
            size: Some(1),
            ..Default::default()
        })
        .unwrap();
    assert_eq!((m.size, m.mtime), (1, now));
    let m = f
        .setattr(&SetAttr {
            size: Some(0),
            mtime: Some(TimeSet::At(old)),
            ..Default::default()
        })
        .unwrap();
    assert_eq!((m.size, m.mtime), (0, old));
}

#[test]
fn directory_link_count_is_two_plus_subdirectories() {
    let (_d, fs) = fresh(40 * MIB);
    let root = fs.root().unwrap();
    let nlink = |n: &NodeRef| n.getattr().unwrap().nlink;
    let a = root.create("a", &dir()).unwrap();
    let b = root.create("b", &dir()).unwrap();
    a.create("f", &file()).unwrap();
    assert_eq!((nlink(&root), nlink(&a), nlink(&b)), (4, 2, 2));
    a.create("sub", &dir()).unwrap();
    assert_eq!((nlink(&root), nlink(&a), nlink(&b)), (4, 3, 2));
    // Moving the subdirectory moves its `..` link (Linux vfat, pjdfstest rename/24.t).
    a.rename("sub", &*b, "moved", RenameFlags::default())
        .unwrap();
    assert_eq!((nlink(&a), nlink(&b)), (2, 3));
    b.rmdir("moved").unwrap();
    assert_eq!((nlink(&root), nlink(&a), nlink(&b)), (4, 2, 2));
    // A file's count stays 1.
    assert_eq!(nlink(&a.lookup("f").unwrap()), 1);
}

#[test]
fn directory_times_can_be_set() {
    let (disk, fs) = fresh(40 * MIB);
    let root = fs.root().unwrap();
    let d = root.create("d", &dir()).unwrap();
    let t = Timestamp {
        sec: 1_900_000_000,
        nsec: 0,
    };
    let m = d
        .setattr(&SetAttr {
            mtime: Some(TimeSet::At(t)),
            atime: Some(TimeSet::At(t)),
            ..Default::default()
        })
        .unwrap();
    // atime is a date (midnight UTC of that day).
    assert_eq!((m.mtime.sec, m.atime.sec), (t.sec, t.sec - t.sec % 86_400));
    drop((d, root));
    drop(fs);
    let fs = Fat32Fs::mount(disk, Arc::new(FixedClock)).unwrap();
    let m = fs.root().unwrap().lookup("d").unwrap().getattr().unwrap();
    assert_eq!(m.mtime.sec, t.sec, "the time is on disk");
}

#[test]
fn mkdir_readdir_and_cookie_resumption() {
    let (_d, fs) = fresh(40 * MIB);
    let root = fs.root().unwrap();
    let sub = root.create("sub", &dir()).unwrap();
    assert_eq!(sub.getattr().unwrap().ftype, FileType::Directory);
    assert_eq!(names(&sub), [".", ".."]);
    let mut expected = vec![".".to_string(), "..".to_string()];
    for i in 0..40 {
        let name = format!("file-{i:02}.txt");
        sub.create(&name, &file()).unwrap();
        expected.push(name);
    }
    sub.create("Mixed Case Dir", &dir()).unwrap();
    expected.push("Mixed Case Dir".into());
    assert_eq!(names(&sub), expected);
    // Types, and `..` points at the root.
    let mut seen = Vec::new();
    sub.readdir(0, &mut |e| {
        seen.push((e.name.to_string(), e.ftype, e.ino));
        true
    })
    .unwrap();
    assert_eq!(seen[0].2, sub.getattr().unwrap().ino);
    assert_eq!(seen[1].2, fat32::ROOT_INO);
    assert_eq!(seen[2].1, FileType::Regular);
    assert_eq!(seen.last().unwrap().1, FileType::Directory);
    assert_eq!(
        seen[5].2,
        sub.lookup("file-03.txt").unwrap().getattr().unwrap().ino
    );
    // Resume three entries at a time.
    let mut resumed = Vec::new();
    let mut cookie = 0;
    loop {
        let mut batch = 0;
        sub.readdir(cookie, &mut |e| {
            if batch == 3 {
                return false;
            }
            batch += 1;
            resumed.push(e.name.to_string());
            cookie = e.next_cookie;
            true
        })
        .unwrap();
        if batch == 0 {
            break;
        }
    }
    assert_eq!(resumed, expected);
    // Nested lookup and case-insensitive names.
    assert_eq!(
        root.lookup("SUB").unwrap().getattr().unwrap().ino,
        sub.getattr().unwrap().ino
    );
    assert_eq!(
        root.lookup("sub")
            .unwrap()
            .lookup("FILE-07.TXT")
            .unwrap()
            .getattr()
            .unwrap()
            .ftype,
        FileType::Regular
    );
    assert_eq!(
        root.create("Sub", &file()).err(),
        Some(VfsError::AlreadyExists)
    );
    assert_eq!(root.lookup("nope").err(), Some(VfsError::NotFound));
    assert_eq!(root.lookup("a*b").err(), Some(VfsError::NotFound));
    assert_eq!(
        root.create("a*b", &file()).err(),
        Some(VfsError::InvalidInput)
    );
    assert_eq!(
        root.create(&"n".repeat(256), &file()).err(),
        Some(VfsError::NameTooLong)
    );
    let f = sub.lookup("file-00.txt").unwrap();
    assert_eq!(f.readdir(0, &mut |_| true), Err(VfsError::NotADirectory));
    assert_eq!(f.lookup("x").err(), Some(VfsError::NotADirectory));
    assert_eq!(sub.read_at(0, &mut [0; 4]), Err(VfsError::IsADirectory));
    assert_eq!(sub.write_at(0, b"x"), Err(VfsError::IsADirectory));
}

#[test]
fn unlink_and_rmdir_errors() {
    let (_d, fs) = fresh(40 * MIB);
    let free0 = fs.statfs().unwrap().blocks_free;
    let root = fs.root().unwrap();
    let d = root.create("d", &dir()).unwrap();
    let f = root.create("f", &file()).unwrap();
    f.write_at(0, &[7; 3000]).unwrap();
    d.create("inner", &file()).unwrap();
    assert_eq!(root.unlink("d"), Err(VfsError::IsADirectory));
    assert_eq!(root.rmdir("f"), Err(VfsError::NotADirectory));
    assert_eq!(root.rmdir("d"), Err(VfsError::DirectoryNotEmpty));
    assert_eq!(root.unlink("missing"), Err(VfsError::NotFound));
    assert_eq!(root.rmdir("missing"), Err(VfsError::NotFound));
    assert_eq!(f.unlink("x"), Err(VfsError::NotADirectory));
    d.unlink("INNER").unwrap();
    root.rmdir("d").unwrap();
    root.unlink("f").unwrap();
    assert_eq!(names(&root), [".", ".."]);
    assert_eq!(
        fs.statfs().unwrap().blocks_free,
        free0,
        "all clusters are freed"
    );
    // The removed nodes are gone.
    assert_eq!(f.getattr().err(), Some(VfsError::NotFound));
    assert_eq!(f.read_at(0, &mut [0; 4]), Err(VfsError::NotFound));
    assert_eq!(d.lookup("inner").err(), Some(VfsError::NotFound));
    // The name can be reused.
    let f2 = root.create("f", &file()).unwrap();
    assert_eq!(f2.getattr().unwrap().size, 0);
}

#[test]
fn rename_cases() {
    let (_d, fs) = fresh(40 * MIB);
    let root = fs.root().unwrap();
    let a = root.create("a", &dir()).unwrap();
    let b = root.create("b", &dir()).unwrap();
    let f = a.create("f", &file()).unwrap();
    f.write_at(0, b"first").unwrap();
    let ino = f.getattr().unwrap().ino;
    let plain = RenameFlags::default();

    // Move across directories: the open node follows, keeps its inode and its data.
    a.rename("f", &*b, "g", plain).unwrap();
    assert_eq!(a.lookup("f").err(), Some(VfsError::NotFound));
    assert_eq!(read_all(&f), b"first");
    assert_eq!(f.getattr().unwrap().ino, ino);
    assert_eq!(b.lookup("g").unwrap().getattr().unwrap().ino, ino);
    f.write_at(5, b"+more").unwrap();
    assert_eq!(read_all(&b.lookup("g").unwrap()), b"first+more");

    // Replace an existing file; NOREPLACE refuses.
    let h = b.create("h", &file()).unwrap();
    h.write_at(0, b"old").unwrap();
    let noreplace = RenameFlags {
        noreplace: true,
        ..Default::default()
    };
    assert_eq!(
        b.rename("g", &*b, "h", noreplace),
        Err(VfsError::AlreadyExists)
    );
    b.rename("g", &*b, "h", plain).unwrap();
    assert_eq!(names(&b), [".", "..", "h"]);
    assert_eq!(read_all(&b.lookup("h").unwrap()), b"first+more");
    assert_eq!(
        h.getattr().err(),
        Some(VfsError::NotFound),
        "the replaced node is gone"
    );

    // Type mismatches, missing source, exchange, moving a directory into itself.
    let d = root.create("d", &dir()).unwrap();
    assert_eq!(
        b.rename("h", &*root, "d", plain),
        Err(VfsError::IsADirectory)
    );
    assert_eq!(
        root.rename("d", &*b, "h", plain),
        Err(VfsError::NotADirectory)
    );
    assert_eq!(
        root.rename("nope", &*b, "x", plain),
        Err(VfsError::NotFound)
    );
    let exchange = RenameFlags {
        exchange: true,
        ..Default::default()
    };
    assert_eq!(
        root.rename("a", &*root, "b", exchange),
        Err(VfsError::Unsupported)
    );
    assert_eq!(
        root.rename("d", &*d, "x", plain),
        Err(VfsError::InvalidInput)
    );
    let deeper = d.create("deeper", &dir()).unwrap();
    assert_eq!(
        root.rename("d", &*deeper, "x", plain),
        Err(VfsError::InvalidInput)
    );

    // Directory over a non-empty directory, then over an empty one.
    assert_eq!(
        root.rename("a", &*root, "b", plain),
        Err(VfsError::DirectoryNotEmpty)
    );
    root.rename("b", &*root, "a", plain).unwrap();
    assert_eq!(sorted(names(&root)), [".", "..", "a", "d"]);
    assert_eq!(
        read_all(&root.lookup("a").unwrap().lookup("h").unwrap()),
        b"first+more"
    );
    // Nodes below a renamed directory follow it.
    assert_eq!(read_all(&f), b"first+more");
    assert_eq!(deeper.getattr().unwrap().ftype, FileType::Directory);
    root.rename("d", &*root, "e", plain).unwrap();
    deeper.create("z", &file()).unwrap();
    assert!(root
        .lookup("e")
        .unwrap()
        .lookup("deeper")
        .unwrap()
        .lookup("z")
        .is_ok());

    // Case-only rename, and rename onto itself.
    root.rename("e", &*root, "E", plain).unwrap();
    assert_eq!(sorted(names(&root)), [".", "..", "E", "a"]);
    root.rename("E", &*root, "E", plain).unwrap();
    assert_eq!(sorted(names(&root)), [".", "..", "E", "a"]);
}

#[test]
fn contents_survive_remount() {
    let disk = Arc::new(RamDisk::new(40 * MIB));
    Fat32Fs::format(disk.clone(), "PERSIST").unwrap();
    let big = pattern(2 * MIB + 17, 5);
    let ino_before;
    {
        let fs = Fat32Fs::mount(disk.clone(), Arc::new(FixedClock)).unwrap();
        let root = fs.root().unwrap();
        let d = root.create("docs", &dir()).unwrap();
        let f = d.create("Big File.bin", &file()).unwrap();
        f.write_at(0, &big).unwrap();
        ino_before = f.getattr().unwrap().ino;
        root.create("empty", &file()).unwrap();
        let t = root.create("trunc", &file()).unwrap();
        t.write_at(0, &[1; 9000]).unwrap();
        t.truncate(100).unwrap();
        fs.sync().unwrap();
        // `f` and `t` stay open until here: dropping the nodes and the fs writes everything back.
    }
    let fs = Fat32Fs::mount(disk.clone(), Arc::new(ZeroClock)).unwrap();
    let root = fs.root().unwrap();
    assert_eq!(names(&root), [".", "..", "docs", "empty", "trunc"]);
    let f = root.lookup("docs").unwrap().lookup("Big File.bin").unwrap();
    assert!(read_all(&f) == big);
    assert!(f.getattr().unwrap().ino >= ino_before.min(2));
    assert_eq!(root.lookup("empty").unwrap().getattr().unwrap().size, 0);
    assert_eq!(read_all(&root.lookup("trunc").unwrap()), vec![1; 100]);
    // Times come from the clock that was used when writing (2024-05-01 12:00:00 UTC).
    assert_eq!(f.getattr().unwrap().mtime.sec, 1_714_564_800);
}

#[test]
fn sync_without_drop_is_enough_for_another_mount() {
    let disk = Arc::new(RamDisk::new(40 * MIB));
    Fat32Fs::format(disk.clone(), "").unwrap();
    let fs = Fat32Fs::mount(disk.clone(), Arc::new(FixedClock)).unwrap();
    let f = fs.root().unwrap().create("kept", &file()).unwrap();
    f.write_at(0, &pattern(50_000, 2)).unwrap();
    fs.sync().unwrap();
    // A copy of the disk taken now (as after a crash) holds the file.
    let copy = Arc::new(RamDisk::from_vec(disk.to_vec()));
    let fs2 = Fat32Fs::mount(copy, Arc::new(ZeroClock)).unwrap();
    assert_eq!(
        read_all(&fs2.root().unwrap().lookup("kept").unwrap()),
        pattern(50_000, 2)
    );
    drop(f);
}

#[test]
fn corrupt_or_foreign_devices_fail_to_mount() {
    let clock: Arc<dyn Clock> = Arc::new(ZeroClock);
    // Random bytes.
    let mut noise = vec![0u8; 4 * MIB];
    xrand::XorShift64::new(0x9E37_79B9_7F4A_7C15).fill_bytes(&mut noise);
    assert!(Fat32Fs::mount(Arc::new(RamDisk::from_vec(noise)), clock.clone()).is_err());
    // All zeros.
    assert!(Fat32Fs::mount(Arc::new(RamDisk::new(4 * MIB)), clock.clone()).is_err());
    // Empty and tiny devices.
    assert!(Fat32Fs::mount(Arc::new(RamDisk::new(0)), clock.clone()).is_err());
    assert!(Fat32Fs::mount(Arc::new(RamDisk::new(512)), clock.clone()).is_err());
    // A good image with its boot sector zeroed.
    let disk = Arc::new(RamDisk::new(40 * MIB));
    Fat32Fs::format(disk.clone(), "").unwrap();
    let mut image = disk.to_vec();
    let good = image.clone();
    image[..512].fill(0);
    assert!(Fat32Fs::mount(Arc::new(RamDisk::from_vec(image)), clock.clone()).is_err());
    // Truncated to half, and to just the reserved area.
    for keep in [20 * MIB, 64 * 1024] {
        let r = Fat32Fs::mount(
            Arc::new(RamDisk::from_vec(good[..keep].to_vec())),
            clock.clone(),
        );
        assert!(r.is_err(), "truncated to {keep} bytes must not mount");
    }
    // A corrupt root-cluster field.
    let mut image = good.clone();
    image[44..48].copy_from_slice(&0u32.to_le_bytes());
    assert!(Fat32Fs::mount(Arc::new(RamDisk::from_vec(image)), clock.clone()).is_err());
    // The good image still mounts.
    assert!(Fat32Fs::mount(Arc::new(RamDisk::from_vec(good)), clock).is_ok());
}

#[test]
fn fat_cannot_do_links_special_files_or_owners() {
    let (_d, fs) = fresh(40 * MIB);
    let root = fs.root().unwrap();
    let f = root.create("f", &file()).unwrap();
    assert_eq!(
        root.symlink("l", "f", &file()).err(),
        Some(VfsError::NotPermitted)
    );
    assert_eq!(root.link("h", &*f).err(), Some(VfsError::NotPermitted));
    // An existing name (any case) is EEXIST before the refusal, as on Linux vfat.
    root.create("d", &NewNode::new(FileType::Directory, 0o755))
        .unwrap();
    for name in ["f", "F", "d"] {
        assert_eq!(
            root.symlink(name, "x", &file()).err(),
            Some(VfsError::AlreadyExists)
        );
        assert_eq!(root.link(name, &*f).err(), Some(VfsError::AlreadyExists));
        for t in [FileType::Fifo, FileType::Socket, FileType::CharDevice] {
            assert_eq!(
                root.create(name, &NewNode::new(t, 0o644)).err(),
                Some(VfsError::AlreadyExists)
            );
        }
    }
    for t in [
        FileType::Fifo,
        FileType::CharDevice,
        FileType::BlockDevice,
        FileType::Socket,
        FileType::Symlink,
    ] {
        assert_eq!(
            root.create("s", &NewNode::new(t, 0o644)).err(),
            Some(VfsError::NotPermitted)
        );
    }
    assert_eq!(
        f.setattr(&SetAttr {
            uid: Some(1000),
            ..Default::default()
        })
        .err(),
        Some(VfsError::NotPermitted)
    );
    assert_eq!(
        f.setattr(&SetAttr {
            perm: Some(0o4755),
            ..Default::default()
        })
        .err(),
        Some(VfsError::NotPermitted)
    );
    let m = f
        .setattr(&SetAttr {
            perm: Some(0o600),
            uid: Some(0),
            ..Default::default()
        })
        .unwrap();
    assert_eq!((m.perm, m.uid, m.gid, m.nlink), (0o755, 0, 0, 1));
    assert_eq!(f.getxattr("user.x").err(), Some(VfsError::Unsupported));
    // mtime can be set, at FAT's two-second granularity.
    let t = Timestamp {
        sec: 1_600_000_001,
        nsec: 0,
    };
    let m = f
        .setattr(&SetAttr {
            mtime: Some(TimeSet::At(t)),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(m.mtime.sec, 1_600_000_000);
    // A node of another mount is refused.
    let (_d2, other) = fresh(40 * MIB);
    let other_root = other.root().unwrap();
    assert_eq!(
        root.rename("f", &*other_root, "f", RenameFlags::default()),
        Err(VfsError::CrossDevice)
    );
}

#[test]
fn inode_numbers_are_stable_while_mounted() {
    let (_d, fs) = fresh(40 * MIB);
    let root = fs.root().unwrap();
    let a = root.create("a", &file()).unwrap().getattr().unwrap().ino;
    let b = root.create("b", &dir()).unwrap().getattr().unwrap().ino;
    assert_ne!(a, b);
    assert_ne!(a, fat32::ROOT_INO);
    for _ in 0..3 {
        assert_eq!(root.lookup("a").unwrap().getattr().unwrap().ino, a);
        assert_eq!(root.lookup("B").unwrap().getattr().unwrap().ino, b);
    }
}

#[test]
fn filling_the_volume_reports_no_space() {
    let (_d, fs) = fresh(34 * MIB);
    let f = fs.root().unwrap().create("fill", &file()).unwrap();
    let chunk = vec![0xAB; MIB];
    let mut written = 0u64;
    let err = loop {
        match f.write_at(written, &chunk) {
            Ok(n) => written += n as u64,
            Err(e) => break e,
        }
    };
    assert_eq!(err, VfsError::NoSpace);
    assert!(written >= 30 * MIB as u64);
    assert_eq!(fs.statfs().unwrap().blocks_free, 0);
    // The write that reached the end of the space was short, as on Linux: what it reported
    // is what the file holds, and the call after it wrote nothing.
    assert_eq!(f.getattr().unwrap().size, written);
    assert_ne!(
        written % MIB as u64,
        0,
        "the last write that fitted only partly was short"
    );
    let back = {
        let mut b = vec![0u8; 4096];
        let n = f.read_at(written - 4096, &mut b).unwrap();
        b.truncate(n);
        b
    };
    assert_eq!(back, vec![0xAB; 4096]);
    // Freeing the file gives the space back.
    fs.root().unwrap().unlink("fill").unwrap();
    assert!(fs.statfs().unwrap().blocks_free > 60_000);
}

#[test]
fn conformance_suite_with_fat_capabilities() {
    let factory = || -> Arc<dyn FileSystem> {
        let disk = Arc::new(RamDisk::new(40 * MIB));
        Fat32Fs::format(disk.clone(), "CONF").unwrap();
        Fat32Fs::mount(disk as Arc<dyn BlockDevice>, Arc::new(FixedClock)).unwrap()
    };
    vfs::conformance::run(&factory, &vfs::conformance::Capabilities::FAT);
}

/// Counts device requests, to check that file data moves in large requests.
struct Counting {
    disk: RamDisk,
    reads: std::sync::atomic::AtomicUsize,
    writes: std::sync::atomic::AtomicUsize,
    /// Bytes written by requests of 64 KiB or more.
    big_write_bytes: std::sync::atomic::AtomicUsize,
}

impl BlockDevice for Counting {
    fn num_sectors(&self) -> u64 {
        self.disk.num_sectors()
    }
    fn read_sectors(&self, sector: u64, buf: &mut [u8]) -> vfs::VfsResult<()> {
        self.reads
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.disk.read_sectors(sector, buf)
    }
    fn write_sectors(&self, sector: u64, buf: &[u8]) -> vfs::VfsResult<()> {
        self.writes
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if buf.len() >= 64 * 1024 {
            self.big_write_bytes
                .fetch_add(buf.len(), std::sync::atomic::Ordering::Relaxed);
        }
        self.disk.write_sectors(sector, buf)
    }
    fn flush(&self) -> vfs::VfsResult<()> {
        Ok(())
    }
}

#[test]
fn reads_and_overwrites_of_contiguous_data_are_single_requests() {
    use std::sync::atomic::Ordering::Relaxed;
    let dev = Arc::new(Counting {
        disk: RamDisk::new(40 * MIB),
        reads: 0.into(),
        writes: 0.into(),
        big_write_bytes: 0.into(),
    });
    Fat32Fs::format(dev.clone(), "").unwrap();
    let fs = Fat32Fs::mount(dev.clone(), Arc::new(ZeroClock)).unwrap();
    let f = fs.root().unwrap().create("seq", &file()).unwrap();
    let data = pattern(4 * MIB, 4);
    for (i, chunk) in data.chunks(MIB).enumerate() {
        f.write_at((i * MIB) as u64, chunk).unwrap();
    }
    // The first read walks the cluster chain once; later 1 MiB reads are one request each.
    let mut buf = vec![0u8; MIB];
    f.read_at(0, &mut buf).unwrap();
    let before = dev.reads.load(Relaxed);
    for i in 0..4 {
        f.read_at((i * MIB) as u64, &mut buf).unwrap();
        assert!(buf == data[i * MIB..(i + 1) * MIB]);
    }
    assert_eq!(dev.reads.load(Relaxed) - before, 4);
    // Unaligned: at most head + middle + tail.
    let before = dev.reads.load(Relaxed);
    f.read_at(1000, &mut buf[..100_000]).unwrap();
    assert!(dev.reads.load(Relaxed) - before <= 3);
    assert!(buf[..100_000] == data[1000..101_000]);
    // Rewriting 1 MiB in place is one write request.
    let before = dev.writes.load(Relaxed);
    let new = pattern(MIB, 8);
    f.write_at(MIB as u64, &new).unwrap();
    assert_eq!(dev.writes.load(Relaxed) - before, 1);
    f.read_at(MIB as u64, &mut buf).unwrap();
    assert!(buf == new);
}

#[test]
fn growing_writes_reach_the_device_as_large_requests() {
    use std::sync::atomic::Ordering::Relaxed;
    let dev = Arc::new(Counting {
        disk: RamDisk::new(40 * MIB),
        reads: 0.into(),
        writes: 0.into(),
        big_write_bytes: 0.into(),
    });
    Fat32Fs::format(dev.clone(), "").unwrap();
    let fs = Fat32Fs::mount(dev.clone(), Arc::new(ZeroClock)).unwrap();
    let f = fs.root().unwrap().create("grow", &file()).unwrap();
    let data = pattern(4 * MIB, 5);
    for (i, chunk) in data.chunks(MIB).enumerate() {
        f.write_at((i * MIB) as u64, chunk).unwrap();
    }
    // Read back before any flush: the gathered run must be visible.
    let mut back = vec![0u8; 4 * MIB];
    assert_eq!(f.read_at(0, &mut back).unwrap(), 4 * MIB);
    assert!(back == data);
    f.fsync(false).unwrap();
    // fatfs writes one cluster at a time; nearly all file data must have reached the device
    // in requests of 64 KiB or more.
    assert!(dev.big_write_bytes.load(Relaxed) >= 4 * MIB - 64 * 1024);
    drop(f);
    drop(fs);
    let fs = Fat32Fs::mount(dev.clone(), Arc::new(ZeroClock)).unwrap();
    let f = fs.root().unwrap().lookup("grow").unwrap();
    back.fill(0);
    assert_eq!(f.read_at(0, &mut back).unwrap(), 4 * MIB);
    assert!(back == data);
}

#[test]
fn random_operations_match_a_model() {
    let (_d, fs) = fresh(40 * MIB);
    let root = fs.root().unwrap();
    let f = root.create("model", &file()).unwrap();
    // A second file interleaves its allocations so the first one is fragmented.
    let other = root.create("other", &file()).unwrap();
    let mut model: Vec<u8> = Vec::new();
    let mut x: u64 = 12345;
    let mut next = |n: u64| {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (x >> 33) % n
    };
    for step in 0..300 {
        match next(10) {
            0..=4 => {
                let off = next(600_000) as usize;
                let len = next(70_000) as usize + 1;
                let data = pattern(len, step as u8);
                f.write_at(off as u64, &data).unwrap();
                if model.len() < off + len {
                    model.resize(off + len, 0);
                }
                model[off..off + len].copy_from_slice(&data);
                other
                    .write_at(other.getattr().unwrap().size, &[1; 3000])
                    .unwrap();
            }
            5..=6 => {
                let size = next(650_000) as usize;
                f.truncate(size as u64).unwrap();
                model.resize(size, 0);
            }
            7 => {
                f.release().unwrap();
            }
            _ => {
                let off = next(700_000) as usize;
                let len = next(200_000) as usize;
                let mut buf = vec![0u8; len];
                let n = f.read_at(off as u64, &mut buf).unwrap();
                let expect = model.len().saturating_sub(off).min(len);
                assert_eq!(n, expect, "step {step}: read length at {off}");
                assert!(
                    buf[..n] == *model.get(off..off + n).unwrap_or(&[]),
                    "step {step}: contents at {off}"
                );
            }
        }
        assert_eq!(
            f.getattr().unwrap().size,
            model.len() as u64,
            "step {step}: size"
        );
    }
    assert!(read_all(&f) == model);
}

/// `fsck.fat -n` (dosfstools) finds nothing to fix after renames, moves and removals. Skipped
/// when dosfstools is not installed.
#[test]
fn images_pass_fsck_fat_when_available() {
    let Ok(probe) = std::process::Command::new("fsck.fat")
        .arg("--help")
        .output()
    else {
        eprintln!("fsck.fat not installed: skipped");
        return;
    };
    let _ = probe;
    let disk = Arc::new(RamDisk::new(40 * MIB));
    Fat32Fs::format(disk.clone(), "FSCK").unwrap();
    {
        let fs = Fat32Fs::mount(disk.clone(), Arc::new(FixedClock)).unwrap();
        let root = fs.root().unwrap();
        let plain = RenameFlags::default();
        let a = root.create("a", &dir()).unwrap();
        let b = a.create("b", &dir()).unwrap();
        b.create("f", &file())
            .unwrap()
            .write_at(0, &[5; 10_000])
            .unwrap();
        let c = root.create("c", &dir()).unwrap();
        a.rename("b", &*c, "b2", plain).unwrap();
        c.rename("b2", &*root, "top", plain).unwrap();
        root.rename("top", &*c, "back", plain).unwrap();
        a.create("d", &dir()).unwrap();
        a.rename("d", &*root, "d at root", plain).unwrap();
        for i in 0..60 {
            root.create(&format!("file number {i}"), &file())
                .unwrap()
                .write_at(0, &[1; 5000])
                .unwrap();
        }
        for i in (0..60).step_by(2) {
            root.unlink(&format!("file number {i}")).unwrap();
        }
        root.rename("file number 1", &*c, "moved", plain).unwrap();
        let t = c.lookup("moved").unwrap();
        t.truncate(100_000).unwrap();
        t.truncate(10).unwrap();
        fs.sync().unwrap();
    }
    let path = std::env::temp_dir().join(format!("fat32-fsck-{}.img", std::process::id()));
    std::fs::write(&path, disk.to_vec()).unwrap();
    let out = std::process::Command::new("fsck.fat")
        .arg("-n")
        .arg(&path)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&path);
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "fsck.fat found problems:\n{text}");
    assert!(
        !text.contains("Fixing") && !text.contains("Invalid"),
        "fsck.fat found problems:\n{text}"
    );
}
