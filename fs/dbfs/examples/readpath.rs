//! Instruction profile of dbfs's read path (run under `valgrind --tool=callgrind`): a 10 MiB
//! file read in 4 KiB and in 1 MiB calls over a zero-copy pager, as the kernel's window is.
//!
//!     cargo build --release -p dbfs --example readpath
//!     valgrind --tool=callgrind target/release/examples/readpath 4096
use std::sync::Arc;

use dbfs::{DbFs, MkfsOptions};
use kvdb::{MemPager, SlicePager};
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

fn main() {
    let bs: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(4096);
    let size = 10 << 20;
    let image = {
        let pager = DbFs::mkfs(MemPager::new(), MkfsOptions::default()).unwrap();
        let fs = DbFs::mount(pager, Arc::new(Fixed)).unwrap();
        let f = fs
            .root()
            .unwrap()
            .create("f", &NewNode::new(FileType::Regular, 0o644))
            .unwrap();
        let data: Vec<u8> = (0..size).map(|i| (i * 7) as u8).collect();
        f.write_at(0, &data).unwrap();
        fs.sync().unwrap();
        let img = fs.pager().image();
        drop(f);
        drop(fs);
        img
    };
    let image: &'static [u8] = Box::leak(image.into_boxed_slice());
    let fs = DbFs::mount(SlicePager(image), Arc::new(Fixed)).unwrap();
    fs.set_noatime(true);
    let f = fs.root().unwrap().lookup("f").unwrap();
    let mut buf = vec![0u8; bs];
    let mut sum = 0u64;
    let t = std::time::Instant::now();
    for _ in 0..3 {
        let mut off = 0u64;
        while off < size as u64 {
            let n = f.read_at(off, &mut buf).unwrap();
            sum = sum.wrapping_add(buf[n / 2] as u64);
            off += n as u64;
        }
    }
    let secs = t.elapsed().as_secs_f64();
    println!(
        "bs={bs} {:.1} MB/s ({} calls/pass) checksum {sum}",
        3.0 * size as f64 / secs / 1e6,
        size / bs
    );
}
