//! A file unlinked while open stays readable and writable until its last release, as on
//! Linux: stress-ng's hdd stressor on /fat writes to its file after unlinking it, and the
//! kernel answered ENOENT (the FAT driver found the file by its path, which the unlink had
//! removed). The entry waits in the root under a hidden orphan name, invisible to readdir
//! and lookup; the last release frees it, and a mount removes one left by a power cut.

use std::sync::Arc;

use fat32::Fat32Fs;
use vfs::{FileSystem, FileType, NewNode, RamDisk, ZeroClock};

fn names(fs: &Fat32Fs) -> Vec<String> {
    let mut out = Vec::new();
    fs.root()
        .unwrap()
        .readdir(0, &mut |e| {
            out.push(e.name.to_string());
            true
        })
        .unwrap();
    out
}

#[test]
fn unlinked_open_file_lives_until_its_last_release() {
    let disk = Arc::new(RamDisk::new(64 * 1024 * 1024));
    Fat32Fs::format(disk.clone(), "TEST").unwrap();
    let fs = Fat32Fs::mount(disk.clone(), Arc::new(ZeroClock)).unwrap();
    let root = fs.root().unwrap();
    let dir = root
        .create("d", &NewNode::new(FileType::Directory, 0o755))
        .unwrap();
    let f = dir
        .create("f", &NewNode::new(FileType::Regular, 0o644))
        .unwrap();
    let free0 = fs.statfs().unwrap().blocks_free;
    f.open().unwrap();
    f.write_at(0, &vec![3u8; 100_000]).unwrap();
    dir.unlink("f").unwrap();
    assert!(dir.lookup("f").is_err(), "the name is gone");
    // Still open: written, grown and read back through the node.
    f.write_at(100_000, &vec![4u8; 50_000]).unwrap();
    let mut buf = vec![0u8; 150_000];
    assert_eq!(f.read_at(0, &mut buf).unwrap(), 150_000);
    assert!(buf[..100_000].iter().all(|&b| b == 3) && buf[100_000..].iter().all(|&b| b == 4));
    let m = f.getattr().unwrap();
    assert_eq!((m.size, m.nlink), (150_000, 0), "size, and no link left");
    assert_eq!(names(&fs), [".", "..", "d"], "the orphan is hidden");
    assert!(
        fs.statfs().unwrap().blocks_free < free0,
        "its data still takes space"
    );
    f.release().unwrap();
    assert_eq!(
        fs.statfs().unwrap().blocks_free,
        free0,
        "freed at the last release"
    );
    assert!(f.read_at(0, &mut buf).is_err(), "the released node is gone");

    // Not open: freed at once.
    let g = dir
        .create("g", &NewNode::new(FileType::Regular, 0o644))
        .unwrap();
    g.write_at(0, &[1u8; 5000]).unwrap();
    dir.unlink("g").unwrap();
    assert_eq!(fs.statfs().unwrap().blocks_free, free0);
}

#[test]
fn a_mount_removes_orphans_left_by_a_power_cut() {
    let disk = Arc::new(RamDisk::new(64 * 1024 * 1024));
    Fat32Fs::format(disk.clone(), "TEST").unwrap();
    let free0;
    {
        let fs = Fat32Fs::mount(disk.clone(), Arc::new(ZeroClock)).unwrap();
        free0 = fs.statfs().unwrap().blocks_free;
        let root = fs.root().unwrap();
        let f = root
            .create("f", &NewNode::new(FileType::Regular, 0o644))
            .unwrap();
        f.open().unwrap();
        f.write_at(0, &vec![9u8; 64 * 1024]).unwrap();
        root.unlink("f").unwrap();
        fs.sync().unwrap();
        // No release: the power goes.
    }
    let fs = Fat32Fs::mount(disk.clone(), Arc::new(ZeroClock)).unwrap();
    assert_eq!(names(&fs), [".", ".."]);
    fs.sync().unwrap();
    assert_eq!(
        fs.statfs().unwrap().blocks_free,
        free0,
        "the orphan's clusters are free again"
    );
}
