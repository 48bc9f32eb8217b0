//! Instruction profile of dbfs's write path (run under `valgrind --tool=callgrind`): 1 MiB
//! writes over a pager that behaves like the kernel's disk window: reads are borrowed slices of
//! one big buffer (zero copy), writes copy the pages into it.
//!
//!     cargo build --release -p dbfs --example writepath
//!     valgrind --tool=callgrind target/release/examples/writepath seq     # 10 MiB, fsync
//!     valgrind --tool=callgrind target/release/examples/writepath rewrite # then again
//!     valgrind --tool=callgrind target/release/examples/writepath seqnew  # unlink+create, 3x
//!     valgrind --tool=callgrind target/release/examples/writepath rand    # 200 x 1 MiB in 16 MiB
//!     valgrind --tool=callgrind target/release/examples/writepath rand 64 # ... in 64 MiB
//!     target/release/examples/writepath randfiles 4 96 # 768 x 1 MiB, 4 files of 24 MiB in turn
use std::cell::UnsafeCell;
use std::sync::Arc;

use dbfs::{DbFs, MkfsOptions};
use kvdb::{Error, Pager};
use vfs::{Clock, FileSystem, FileType, NewNode, Timestamp};

struct Fixed;
impl Clock for Fixed {
    fn now(&self) -> Timestamp {
        Timestamp {
            sec: 1_700_000_000,
            nsec: 0,
        }
    }
}

/// A fixed-size store in one buffer, like the kernel's window: `read` borrows, `write` copies.
struct WindowLike {
    bytes: UnsafeCell<Box<[u8]>>,
}

// SAFETY: the example is single-threaded; the type is Sync only to sit in an `Arc<DbFs>`.
unsafe impl Sync for WindowLike {}
unsafe impl Send for WindowLike {}

impl Pager for WindowLike {
    type Page<'a>
        = &'a [u8]
    where
        Self: 'a;

    fn read(&self, offset: u64, len: usize) -> kvdb::Result<&[u8]> {
        let start = usize::try_from(offset).map_err(|_| Error::Io)?;
        let end = start.checked_add(len).ok_or(Error::Io)?;
        // SAFETY: kvdb never writes a range a live reader can reach (the pager contract), as
        // the kernel's window relies on too.
        let all: &[u8] = unsafe { &*self.bytes.get() };
        all.get(start..end).ok_or(Error::Io)
    }

    fn write(&self, writes: &[(u64, &[u8])]) -> kvdb::Result<()> {
        for &(offset, data) in writes {
            let start = usize::try_from(offset).map_err(|_| Error::Io)?;
            // SAFETY: as in `read`: the written ranges are not borrowed by any reader.
            let all: &mut [u8] = unsafe { &mut *self.bytes.get() };
            let end = start.checked_add(data.len()).ok_or(Error::Io)?;
            all.get_mut(start..end)
                .ok_or(Error::NoSpace)?
                .copy_from_slice(data);
        }
        Ok(())
    }

    fn sync(&self) -> kvdb::Result<()> {
        Ok(())
    }

    fn len(&self) -> u64 {
        // SAFETY: only the length is read.
        unsafe { (&*self.bytes.get()).len() as u64 }
    }

    fn capacity(&self) -> u64 {
        self.len()
    }
}

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_else(|| "seq".into());
    // The number given as argument `i`, or `default`.
    let arg = |i: usize, default: u64| {
        std::env::args()
            .nth(i)
            .and_then(|a| a.parse().ok())
            .unwrap_or(default)
    };
    let pager = WindowLike {
        bytes: UnsafeCell::new(vec![0u8; 256 << 20].into_boxed_slice()),
    };
    let pager = DbFs::mkfs(pager, MkfsOptions::default()).unwrap();
    let fs = DbFs::mount(pager, Arc::new(Fixed)).unwrap();
    let f = fs
        .root()
        .unwrap()
        .create("f", &NewNode::new(FileType::Regular, 0o644))
        .unwrap();
    let bs = 1 << 20;
    let data: Vec<u8> = (0..bs).map(|i| (i * 7) as u8).collect();
    let seq = |f: &Arc<dyn vfs::Node>| {
        for k in 0..10u64 {
            f.write_at(k * bs as u64, &data).unwrap();
        }
        f.fsync(false).unwrap();
    };
    let t = std::time::Instant::now();
    let total = match mode.as_str() {
        "seq" => {
            seq(&f);
            10 * bs
        }
        "rewrite" => {
            seq(&f);
            seq(&f);
            20 * bs
        }
        "seqnew" => {
            // The seqwrite benchmark: unlink, create, write 10 MiB, fsync, three times.
            let root = fs.root().unwrap();
            drop(f);
            for _ in 0..3 {
                let _ = root.unlink("g");
                let g = root
                    .create("g", &NewNode::new(FileType::Regular, 0o644))
                    .unwrap();
                seq(&g);
            }
            30 * bs
        }
        "rand" => {
            let mib = arg(2, 16);
            let mut rng = xrand::XorShift64::new(0x9e37_79b9_7f4a_7c15);
            for _ in 0..200 {
                f.write_at(rng.below(mib.max(1)) * bs as u64, &data)
                    .unwrap();
            }
            f.fsync(false).unwrap();
            200 * bs
        }
        "randfiles" => {
            // fio's randwrite line with N jobs, one after the other: N files sharing MIB MiB,
            // written in turn (file i gets writes i, i + N, ...), 8 passes' worth of writes.
            let (n, mib) = (arg(2, 4).max(1), arg(3, 96));
            let per = (mib / n).max(1);
            let root = fs.root().unwrap();
            drop(f);
            let files: Vec<_> = (0..n)
                .map(|i| {
                    let g = root
                        .create(&format!("r{i}"), &NewNode::new(FileType::Regular, 0o644))
                        .unwrap();
                    for k in 0..per {
                        g.write_at(k * bs as u64, &data).unwrap();
                    }
                    g
                })
                .collect();
            files[0].fsync(false).unwrap();
            let t = std::time::Instant::now();
            let mut rng = xrand::XorShift64::new(0x9e37_79b9_7f4a_7c15);
            let writes = 8 * per * n;
            for w in 0..writes {
                let g = &files[(w % n) as usize];
                g.write_at(rng.below(per) * bs as u64, &data).unwrap();
            }
            for g in &files {
                g.fsync(false).unwrap();
            }
            let secs = t.elapsed().as_secs_f64();
            println!(
                "randfiles {n} x {per} MiB: {:.1} MB/s",
                (writes * bs as u64) as f64 / secs / 1e6
            );
            return;
        }
        m => panic!("unknown mode {m:?}: seq, rewrite, seqnew, rand or randfiles"),
    };
    let secs = t.elapsed().as_secs_f64();
    println!("{mode}: {:.1} MB/s", total as f64 / secs / 1e6);
}
