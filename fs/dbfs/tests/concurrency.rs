//! Locking: a commit's device I/O does not hold dbfs's write-back lock, concurrent fsyncs share
//! commits, and nothing written while a commit runs is lost.
mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::Duration;

use common::*;
use dbfs::{DbFs, MkfsOptions};
use kvdb::{MemPager, Pager};
use vfs::FileSystem;

/// A pager whose `sync` can be held shut, to freeze a commit in the middle of its I/O.
#[derive(Default)]
struct GatedPager {
    inner: MemPager,
    armed: AtomicBool,
    in_sync: AtomicBool,
    open: Mutex<bool>,
    cv: Condvar,
    syncs: AtomicUsize,
}

impl GatedPager {
    fn arm(&self) {
        *self.open.lock().unwrap() = false;
        self.armed.store(true, Ordering::SeqCst);
    }
    fn release(&self) {
        self.armed.store(false, Ordering::SeqCst);
        *self.open.lock().unwrap() = true;
        self.cv.notify_all();
    }
}

impl Pager for GatedPager {
    type Page<'a> = <MemPager as Pager>::Page<'a>;

    fn read(&self, offset: u64, len: usize) -> kvdb::Result<Self::Page<'_>> {
        self.inner.read(offset, len)
    }
    fn write(&self, writes: &[(u64, &[u8])]) -> kvdb::Result<()> {
        self.inner.write(writes)
    }
    fn sync(&self) -> kvdb::Result<()> {
        self.syncs.fetch_add(1, Ordering::SeqCst);
        if self.armed.load(Ordering::SeqCst) {
            self.in_sync.store(true, Ordering::SeqCst);
            let mut open = self.open.lock().unwrap();
            while !*open {
                open = self.cv.wait(open).unwrap();
            }
            self.in_sync.store(false, Ordering::SeqCst);
        }
        self.inner.sync()
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
}

fn gated() -> Arc<DbFs<GatedPager>> {
    let pager = GatedPager::default();
    let formatted = DbFs::mkfs(pager, MkfsOptions::default()).expect("mkfs");
    DbFs::mount(formatted, TestClock::new()).expect("mount")
}

/// Run `f` on another thread; fail (instead of hanging) if it does not finish in time.
fn must_not_block<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(20))
        .unwrap_or_else(|_| panic!("{what} waited for a commit's I/O"))
}

fn wait_until(what: &str, cond: impl Fn() -> bool) {
    for _ in 0..2000 {
        if cond() {
            return;
        }
        thread::sleep(Duration::from_millis(10));
    }
    panic!("timed out waiting for {what}");
}

#[test]
fn commit_io_does_not_block_readers_or_buffered_writers() {
    let fs = gated();
    let root = fs.root().unwrap();
    let f = root.create("f", &reg()).unwrap();
    // Durable first, so the fsync below has no earlier barrier to make (Db::begin_write_durable)
    // and the gate stops its own commit.
    fs.sync().unwrap();
    let a = pattern(40_000, 1);
    f.write_at(0, &a).unwrap();

    // fsync on another thread; its commit stops inside the pager's first barrier.
    fs.pager().arm();
    let syncer = {
        let f = f.clone();
        thread::spawn(move || f.fsync(false))
    };
    wait_until("the commit to reach its barrier", || {
        fs.pager().in_sync.load(Ordering::SeqCst)
    });

    // Meanwhile: read the file, overwrite part of what is being committed, append, read again,
    // and look up names. None of it may wait for the commit.
    let b = pattern(10_000, 2);
    let (f2, root2, b2) = (f.clone(), root.clone(), b.clone());
    let seen = must_not_block("read/write during a commit", move || {
        let before = read_all(&f2);
        f2.write_at(5_000, &b2).unwrap();
        f2.write_at(40_000, &b2).unwrap();
        let after = read_all(&f2);
        let found = root2.lookup("f").is_ok();
        (before, after, found)
    });
    let mut expect = a.clone();
    expect[5_000..15_000].copy_from_slice(&b);
    expect.extend_from_slice(&b);
    assert_eq!(seen.0, a, "reader during the commit");
    assert_eq!(seen.1, expect, "reader after writing during the commit");
    assert!(seen.2);

    fs.pager().release();
    syncer.join().unwrap().unwrap();
    // The writes made during the commit are still buffered (not dropped with the folded entry)
    // and still visible.
    assert!(
        fs.dirty_bytes() > 0,
        "data written during a commit was dropped from the cache"
    );
    assert_eq!(read_all(&f), expect);
    f.fsync(false).unwrap();
    assert_eq!(fs.dirty_bytes(), 0);
    let image = fs.pager().inner.image();
    let after = DbFs::mount(MemPager::from_image(image), TestClock::new()).unwrap();
    assert_eq!(
        read_all(&after.root().unwrap().lookup("f").unwrap()),
        expect
    );
    assert_clean(&*after);
    assert_clean(&*fs);
}

#[test]
fn concurrent_fsyncs_lose_nothing_and_share_commits() {
    const THREADS: usize = 4;
    const ROUNDS: usize = 40;
    let fs = gated();
    let root = fs.root().unwrap();
    let files: Vec<_> = (0..THREADS)
        .map(|t| root.create(&format!("f{t}"), &reg()).unwrap())
        .collect();
    let syncs_before = fs.pager().syncs.load(Ordering::SeqCst);
    let workers: Vec<_> = files
        .iter()
        .enumerate()
        .map(|(t, f)| {
            let f = f.clone();
            let root = root.clone();
            thread::spawn(move || {
                for r in 0..ROUNDS {
                    let piece = pattern(3_000 + 17 * r, (t * 64 + r) as u8);
                    f.write_at((r * 5_000) as u64, &piece).unwrap();
                    f.fsync(false).unwrap();
                    // Metadata operations interleave with the data commits.
                    let name = format!("t{t}r{r}");
                    root.create(&name, &reg()).unwrap();
                    if r % 2 == 0 {
                        root.unlink(&name).unwrap();
                    }
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    // Metadata operations commit deferred: the directory's fsync makes the last ones durable
    // (each file fsync already covered every commit before it).
    root.fsync(false).unwrap();
    // Two syncs per barrier; barriers come from fsyncs only, never more than one per
    // operation (THREADS * ROUNDS creates + half as many unlinks, plus the fsyncs).
    let barriers = fs.pager().syncs.load(Ordering::SeqCst) - syncs_before;
    let metadata_commits = THREADS * ROUNDS + THREADS * ROUNDS / 2;
    assert!(
        barriers / 2 <= metadata_commits + THREADS * ROUNDS,
        "more commits than operations"
    );
    let image = fs.pager().inner.image();
    let after = DbFs::mount(MemPager::from_image(image), TestClock::new()).unwrap();
    let r2 = after.root().unwrap();
    for t in 0..THREADS {
        let mut expect = Vec::new();
        for r in 0..ROUNDS {
            let piece = pattern(3_000 + 17 * r, (t * 64 + r) as u8);
            let at = r * 5_000;
            if expect.len() < at + piece.len() {
                expect.resize(at + piece.len(), 0);
            }
            expect[at..at + piece.len()].copy_from_slice(&piece);
        }
        assert_eq!(
            read_all(&r2.lookup(&format!("f{t}")).unwrap()),
            expect,
            "file f{t} after crash"
        );
        for r in 0..ROUNDS {
            assert_eq!(r2.lookup(&format!("t{t}r{r}")).is_ok(), r % 2 == 1);
        }
    }
    assert_clean(&*after);
}

#[test]
fn reading_a_file_then_closing_it_commits_nothing() {
    let fs = gated();
    let root = fs.root().unwrap();
    let f = root.create("f", &reg()).unwrap();
    f.write_at(0, b"hello").unwrap();
    f.fsync(false).unwrap();
    let before = fs.pager().syncs.load(Ordering::SeqCst);
    f.open().unwrap();
    assert_eq!(read_all(&f), b"hello");
    f.release().unwrap();
    assert_eq!(
        fs.pager().syncs.load(Ordering::SeqCst),
        before,
        "a read-only open/close committed"
    );
    // The atime is still buffered and reaches the store with the next sync.
    fs.sync().unwrap();
    assert_eq!(fs.dirty_bytes(), 0);
}

/// A buffered write to a file whose record a metadata operation is committing (here: a
/// truncate frozen in its barrier) waits for that commit. Before, it started a write-back
/// entry from the record the truncate replaces, and its flush wrote the old size back and
/// brought the cut data back.
#[test]
fn a_write_during_a_commit_of_its_inode_builds_on_the_new_record() {
    let fs = gated();
    fs.set_sync_metadata(true);
    let root = fs.root().unwrap();
    let f = root.create("f", &reg()).unwrap();
    let a = pattern(40_000, 3);
    f.write_at(0, &a).unwrap();
    f.fsync(false).unwrap();

    fs.pager().arm();
    let truncater = {
        let f = f.clone();
        thread::spawn(move || f.truncate(1_000))
    };
    wait_until("the truncate to reach its barrier", || {
        fs.pager().in_sync.load(Ordering::SeqCst)
    });
    // A reader meanwhile sees the old contents and must not buffer an atime on the old record.
    assert_eq!(read_all(&f), a);
    let b = pattern(100, 4);
    let writer = {
        let (f, b) = (f.clone(), b.clone());
        thread::spawn(move || f.write_at(20_000, &b))
    };
    thread::sleep(Duration::from_millis(100));
    fs.pager().release();
    truncater.join().unwrap().unwrap();
    assert_eq!(writer.join().unwrap().unwrap(), 100);

    let mut expect = a[..1_000].to_vec();
    expect.resize(20_000, 0);
    expect.extend_from_slice(&b);
    assert_eq!(read_all(&f), expect);
    f.fsync(false).unwrap();
    let image = fs.pager().inner.image();
    let after = DbFs::mount(MemPager::from_image(image), TestClock::new()).unwrap();
    assert_eq!(
        read_all(&after.root().unwrap().lookup("f").unwrap()),
        expect
    );
    assert_clean(&*after);
    assert_clean(&*fs);
}

/// `got` equals `want`, or a failure naming the first byte that differs.
fn same(got: &[u8], want: &[u8], when: &str) {
    if got != want {
        let at = got.iter().zip(want).position(|(a, b)| a != b);
        panic!(
            "{when}: {} bytes against {}; first difference at {:?} ({:?} for {:?})",
            got.len(),
            want.len(),
            at,
            at.map(|i| got[i]),
            at.map(|i| want[i])
        );
    }
}

/// Run `change` on another thread while the file has buffered writes (so its transaction
/// folds them) and stop its commit at the barrier; meanwhile another thread writes 100 bytes
/// at `write_at` (as another process sharing the file would), then the commit goes on. Both
/// the change and the write must show, before and after a remount.
fn change_during_a_write(
    change: impl FnOnce(&vfs::NodeRef) -> vfs::VfsResult<()> + Send + 'static,
    write_at: u64,
    expect: impl Fn(&mut Vec<u8>),
) -> (Arc<DbFs<MemPager>>, vfs::NodeRef) {
    let fs = gated();
    fs.set_sync_metadata(true);
    let root = fs.root().unwrap();
    let f = root.create("f", &reg()).unwrap();
    let a = vec![0xffu8; 16_384];
    f.write_at(0, &a).unwrap();
    f.fsync(false).unwrap();
    // Buffered: the change's transaction folds this entry.
    f.write_at(0, &a[..4096]).unwrap();
    assert!(fs.dirty_bytes() > 0);

    fs.pager().arm();
    let changer = {
        let f = f.clone();
        thread::spawn(move || change(&f))
    };
    wait_until("the change to reach its barrier", || {
        fs.pager().in_sync.load(Ordering::SeqCst)
    });
    let b = vec![0xa5u8; 100];
    let writer = {
        let f = f.clone();
        thread::spawn(move || f.write_at(write_at, &b))
    };
    thread::sleep(Duration::from_millis(100));
    fs.pager().release();
    changer.join().unwrap().unwrap();
    assert_eq!(writer.join().unwrap().unwrap(), 100);

    let mut want = a.clone();
    want[write_at as usize..write_at as usize + 100].fill(0xa5);
    expect(&mut want);
    same(&read_all(&f), &want, "after the change and the write");
    f.fsync(false).unwrap();
    let image = fs.pager().inner.image();
    let after = DbFs::mount(MemPager::from_image(image), TestClock::new()).unwrap();
    let g = after.root().unwrap().lookup("f").unwrap();
    same(&read_all(&g), &want, "after a remount");
    assert_clean(&*after);
    assert_clean(&*fs);
    (after, g)
}

/// A hole punched in a file with buffered writes stays a hole when another thread writes
/// elsewhere in the file while the punch commits (stress-ng's fpunch found the punched bytes
/// back, with two harts: the write kept the folded entry, with the bytes from before the
/// punch, in the cache).
#[test]
fn a_punch_of_buffered_data_survives_a_write_during_its_commit() {
    change_during_a_write(
        |f| f.punch_hole(0x8ff, 512),
        10_000,
        |want| want[0x8ff..0x8ff + 512].fill(0),
    );
}

/// The same for a chmod and a truncate: the folded entry kept the record from before them.
#[test]
fn a_chmod_or_truncate_of_a_file_with_buffered_data_survives_a_write_during_its_commit() {
    let (_, g) = change_during_a_write(
        |f| {
            f.setattr(&vfs::SetAttr {
                perm: Some(0o600),
                ..Default::default()
            })
            .map(|_| ())
        },
        10_000,
        |_| {},
    );
    assert_eq!(g.getattr().unwrap().perm & 0o7777, 0o600);
    change_during_a_write(|f| f.truncate(8_192), 2_000, |want| want.truncate(8_192));
}
