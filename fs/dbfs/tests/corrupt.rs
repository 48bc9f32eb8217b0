//! Damaged images: mount and a full walk return errors, never panic.
mod common;

use common::*;
use dbfs::DbFs;
use kvdb::MemPager;
use proptest::prelude::*;
use vfs::{FileSystem, FileType, NewNode, NodeRef};

fn image() -> Vec<u8> {
    let fs = fresh();
    let root = fs.root().unwrap();
    let d = root.create("d", &dir()).unwrap();
    for i in 0..40 {
        let f = d.create(&format!("file{i}"), &reg()).unwrap();
        f.write_at(i * 1000, &pattern(5000 + i as usize * 300, i as u8))
            .unwrap();
        f.setxattr("user.i", &[i as u8], vfs::XattrMode::Any)
            .unwrap();
    }
    root.symlink("l", "d/file1", &NewNode::new(FileType::Symlink, 0o777))
        .unwrap();
    fs.sync().unwrap();
    fs.pager().image()
}

fn walk(node: &NodeRef, depth: usize) {
    if depth > 8 {
        return;
    }
    let _ = node.getattr();
    let mut buf = vec![0u8; 70_000];
    let _ = node.read_at(0, &mut buf);
    let _ = node.readlink();
    let _ = node.listxattr();
    let mut names = Vec::new();
    let _ = node.readdir(0, &mut |e| {
        if e.name != "." && e.name != ".." {
            names.push(e.name.to_string());
        }
        names.len() < 100
    });
    for n in names {
        if let Ok(child) = node.lookup(&n) {
            walk(&child, depth + 1);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn damaged_images_never_panic(flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..20)) {
        let mut img = image();
        let len = img.len();
        for (at, byte) in flips {
            let i = at.index(len);
            img[i] ^= byte | 1;
        }
        if let Ok(fs) = DbFs::mount(MemPager::from_image(img), TestClock::new()) {
            let _ = fs.fsck();
            if let Ok(root) = fs.root() {
                walk(&root, 0);
                let _ = root.create("new", &reg()).map(|f| f.write_at(0, b"x"));
                let _ = root.unlink("l");
            }
            let _ = fs.sync();
            let _ = fs.statfs();
        }
    }
}
