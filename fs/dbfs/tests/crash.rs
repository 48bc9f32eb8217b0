//! Power cuts at every point of a sequence of operations: replay every prefix of the pager's
//! write log (and a torn version of the last write) onto the image before the sequence, mount
//! it, and require a consistent file system (fsck clean) equal to the state after some prefix of
//! the operations: no operation is ever half done.
mod common;

use common::*;
use dbfs::DbFs;
use kvdb::{MemPager, PagerEvent};
use vfs::{FileSystem, FileType, NewNode, NodeRef, RenameFlags, XattrMode};

/// Everything observable about a tree: (path, type, size, nlink, contents or target).
fn snapshot(root: &NodeRef) -> State {
    let mut out = Vec::new();
    let mut stack = vec![(String::new(), root.clone())];
    while let Some((path, node)) = stack.pop() {
        let mut names = Vec::new();
        node.readdir(0, &mut |e| {
            if e.name != "." && e.name != ".." {
                names.push(e.name.to_string());
            }
            true
        })
        .unwrap();
        names.sort();
        for n in names {
            let child = node.lookup(&n).unwrap();
            let m = child.getattr().unwrap();
            let p = format!("{path}/{n}");
            let body = match m.ftype {
                FileType::Regular => read_all(&child),
                FileType::Symlink => child.readlink().unwrap().into_bytes(),
                _ => Vec::new(),
            };
            let mut xattrs = child.listxattr().unwrap();
            xattrs.sort();
            out.push((format!("{p} {xattrs:?}"), m.ftype, m.size, m.nlink, body));
            if m.ftype == FileType::Directory {
                stack.push((p, child));
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn apply(image: &mut Vec<u8>, off: u64, bytes: &[u8]) {
    let end = off as usize + bytes.len();
    if image.len() < end {
        image.resize(end, 0);
    }
    image[off as usize..end].copy_from_slice(bytes);
}

type State = Vec<(String, FileType, u64, u32, Vec<u8>)>;

/// Crash after every write of `log` applied to `base`, whole and torn (only its first half on
/// the disk): each image must mount clean and show one of `states`, the same or a later one
/// than at the previous crash point, ending at the last. `what` names the states for failures.
fn replay(base: &[u8], log: &[PagerEvent], states: &[State], what: &str) {
    let mut image = base.to_vec();
    let mut last_state = 0;
    for (i, ev) in log.iter().enumerate() {
        if let PagerEvent::Write(off, bytes) = ev {
            let mut torn = image.clone();
            apply(&mut torn, *off, &bytes[..bytes.len() / 2]);
            for candidate in [torn, {
                apply(&mut image, *off, bytes);
                image.clone()
            }] {
                let crashed = DbFs::mount(MemPager::from_image(candidate), TestClock::new())
                    .unwrap_or_else(|e| panic!("event {i}: mount failed: {e:?}"));
                assert_clean(&crashed);
                let snap = snapshot(&crashed.root().unwrap());
                last_state = states[last_state..]
                    .iter()
                    .position(|s| *s == snap)
                    .map(|k| k + last_state)
                    .unwrap_or_else(|| {
                        panic!("event {i}: state after crash is {what} at or after {last_state}")
                    });
            }
        }
    }
    assert_eq!(last_state, states.len() - 1);
}

#[test]
fn every_crash_point_leaves_a_whole_prefix_of_operations() {
    let fs = fresh();
    let root = fs.root().unwrap();
    let d = root.create("d", &dir()).unwrap();
    let f = d.create("f", &reg()).unwrap();
    f.write_at(0, &pattern(40_000, 1)).unwrap();
    fs.sync().unwrap();
    let base = fs.pager().image();
    let mut states = vec![snapshot(&root)];
    fs.pager().record();
    let plain = RenameFlags::default();
    // Each step commits exactly one transaction (then `sync` commits an empty one), so the
    // states after the steps are all the states a crash may leave.
    let ops: Vec<Box<dyn Fn()>> = vec![
        Box::new(|| {
            root.create("a", &reg()).unwrap();
        }),
        Box::new(|| {
            root.lookup("a").unwrap().write_at(0, b"alpha").unwrap();
        }),
        Box::new(|| fs.sync().unwrap()),
        Box::new(|| {
            f.write_at(35_000, &pattern(30_000, 2)).unwrap();
            f.fsync(false).unwrap();
        }),
        Box::new(|| d.rename("f", &*root, "g", plain).unwrap()),
        Box::new(|| root.link("h", &*root.lookup("g").unwrap()).unwrap()),
        Box::new(|| {
            root.symlink("s", "g", &NewNode::new(FileType::Symlink, 0o777))
                .unwrap();
        }),
        Box::new(|| {
            root.lookup("g")
                .unwrap()
                .setxattr("user.k", b"v", XattrMode::Create)
                .unwrap()
        }),
        Box::new(|| root.lookup("g").unwrap().truncate(1234).unwrap()),
        Box::new(|| {
            root.rename(
                "d",
                &*root,
                "a",
                RenameFlags {
                    exchange: true,
                    ..Default::default()
                },
            )
            .unwrap()
        }),
        Box::new(|| root.unlink("h").unwrap()),
        Box::new(|| {
            root.create("e", &dir()).unwrap();
        }),
        Box::new(|| {
            root.lookup("e")
                .unwrap()
                .create("x", &NewNode::new(FileType::Fifo, 0o600))
                .unwrap();
        }),
        Box::new(|| root.lookup("e").unwrap().unlink("x").unwrap()),
        Box::new(|| root.rmdir("e").unwrap()),
        Box::new(|| root.unlink("g").unwrap()),
    ];
    for op in &ops {
        op();
        fs.sync().unwrap();
        states.push(snapshot(&root));
    }
    let log = fs.pager().take_log();
    assert!(log.len() > 40, "{} events", log.len());
    replay(&base, &log, &states, "no prefix of the operations");
}

/// Deferred commits: operations run without a barrier between them, and the barriers are the
/// durability points a program has (fsync of a file or a directory, sync). A crash at any
/// point must leave exactly the state of a barrier, never one in between, and never an older
/// one than a barrier already completed.
#[test]
fn deferred_commits_crash_to_the_last_barrier() {
    let fs = fresh();
    let root = fs.root().unwrap();
    fs.sync().unwrap();
    let base = fs.pager().image();
    let mut states = vec![snapshot(&root)];
    fs.pager().record();
    let plain = RenameFlags::default();
    for round in 0..6u8 {
        let d = root.create(&format!("d{round}"), &dir()).unwrap();
        for i in 0..5u8 {
            let f = d.create(&format!("f{i}"), &reg()).unwrap();
            f.write_at(0, &pattern(3_000 + 997 * usize::from(i), round * 8 + i))
                .unwrap();
            f.release().unwrap(); // the last close commits the data, deferred
        }
        d.rename("f0", &*root, &format!("moved{round}"), plain)
            .unwrap();
        d.unlink("f1").unwrap();
        if round > 0 {
            root.rmdir(&format!("gone{}", round - 1)).unwrap();
        }
        root.create(&format!("gone{round}"), &dir()).unwrap();
        // A barrier, one of three kinds.
        match round % 3 {
            0 => root.fsync(false).unwrap(),
            1 => d.lookup("f2").unwrap().fsync(false).unwrap(),
            _ => fs.sync().unwrap(),
        }
        states.push(snapshot(&root));
    }
    let log = fs.pager().take_log();
    replay(&base, &log, &states, "no barrier's");
}
