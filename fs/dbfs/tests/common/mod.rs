//! Helpers shared by the dbfs integration tests.
#![allow(dead_code)]

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use dbfs::{DbFs, MkfsOptions};
use kvdb::MemPager;
use vfs::{Clock, FileType, NewNode, Timestamp};

/// A clock tests move by hand (starts at 1_700_000_000 s; each `now` adds 1 ns so times
/// taken at different calls are distinct).
pub struct TestClock {
    pub nanos: AtomicI64,
}

impl TestClock {
    pub fn new() -> Arc<TestClock> {
        Arc::new(TestClock {
            nanos: AtomicI64::new(1_700_000_000_000_000_000),
        })
    }
    pub fn advance_secs(&self, s: i64) {
        self.nanos.fetch_add(s * 1_000_000_000, Ordering::SeqCst);
    }
}

impl Clock for TestClock {
    fn now(&self) -> Timestamp {
        let n = self.nanos.fetch_add(1, Ordering::SeqCst);
        Timestamp {
            sec: n.div_euclid(1_000_000_000),
            nsec: n.rem_euclid(1_000_000_000) as u32,
        }
    }
}

pub fn fresh_with(opts: MkfsOptions) -> Arc<DbFs<MemPager>> {
    let pager = DbFs::mkfs(MemPager::new(), opts).expect("mkfs");
    DbFs::mount(pager, TestClock::new()).expect("mount")
}

pub fn fresh() -> Arc<DbFs<MemPager>> {
    fresh_with(MkfsOptions::default())
}

/// Unmount cleanly (sync) and mount the same bytes again.
pub fn remount(fs: Arc<DbFs<MemPager>>) -> Arc<DbFs<MemPager>> {
    vfs::FileSystem::sync(&*fs).expect("sync");
    let image = fs.pager().image();
    drop(fs);
    DbFs::mount(MemPager::from_image(image), TestClock::new()).expect("remount")
}

/// "Power cut": mount a copy of the bytes as they are now, without flushing anything.
pub fn crash_copy(fs: &DbFs<MemPager>) -> Arc<DbFs<MemPager>> {
    DbFs::mount(MemPager::from_image(fs.pager().image()), TestClock::new())
        .expect("mount after crash")
}

pub fn reg() -> NewNode {
    NewNode::new(FileType::Regular, 0o644)
}

pub fn dir() -> NewNode {
    NewNode::new(FileType::Directory, 0o755)
}

pub fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| ((i * 131 + i / 4099) as u8) ^ seed)
        .collect()
}

pub fn read_all(node: &vfs::NodeRef) -> Vec<u8> {
    let size = node.getattr().unwrap().size as usize;
    let mut buf = vec![0u8; size + 7];
    let n = node.read_at(0, &mut buf).unwrap();
    buf.truncate(n);
    buf
}

pub fn names(node: &vfs::NodeRef) -> Vec<String> {
    let mut out = Vec::new();
    node.readdir(0, &mut |e| {
        out.push(e.name.to_string());
        true
    })
    .unwrap();
    let mut rest = out.split_off(2);
    rest.sort();
    rest
}

/// The committed image (what a crash right now would leave) is consistent.
pub fn assert_clean<P: kvdb::Pager + Send + Sync + 'static>(fs: &DbFs<P>) {
    let problems = fs.fsck().expect("fsck");
    assert!(problems.is_empty(), "fsck: {problems:#?}");
}
