//! `dbfs-fuse fsck` of sparse files: it reads a file's stored chunks and its last byte, not its
//! holes, so a file of terabytes with a few bytes in it (trinity makes such files) is checked
//! in the time its data takes, and a damaged chunk is still found by reading it.

mod common;

use std::fs::OpenOptions;
use std::io::{Seek, SeekFrom, Write};
use std::process::Command;
use std::time::Duration;

use common::{fresh_image, fuse_available, run, Mounted, BIN};

/// The "(N bytes of data read)" figure of fsck's summary line.
fn bytes_read(summary: &str) -> u64 {
    let at = summary.find(" bytes of data read").expect("summary line");
    let head = &summary[..at];
    let start = head.rfind('(').expect("'(' before the byte count") + 1;
    head[start..].parse().expect("a byte count")
}

#[test]
fn fsck_reads_the_stored_chunks_of_a_sparse_file_not_its_holes() {
    if !fuse_available() {
        return;
    }
    let (_tmp, image, mnt) = fresh_image("sparse", "64M");
    let m = Mounted::new(&image, &mnt, "", Duration::from_secs(60));
    {
        // 1 TiB long: 5 bytes at the start, 5 at 512 GiB, a hole everywhere else.
        let mut f = OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .open(m.path("sparse"))
            .unwrap();
        f.write_all(b"first").unwrap();
        f.seek(SeekFrom::Start(1 << 39)).unwrap();
        f.write_all(b"midst").unwrap();
        f.set_len(1 << 40).unwrap();
        f.sync_all().unwrap();
    }
    std::fs::write(m.path("dense"), vec![7u8; 100_000]).unwrap();
    assert!(m.unmount(), "clean unmount");

    let out = run(Command::new(BIN).arg("fsck").arg(&image));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "fsck: {text}");
    assert!(text.contains(": clean"), "fsck: {text}");
    // The dense file's 100000 bytes, the sparse file's two stored chunks (at most one chunk
    // each, 1 MiB at most) and its last byte: far below the 1 TiB a hole-reading fsck reads.
    let n = bytes_read(&text);
    assert!(n > 100_000 + 10, "fsck read {n} bytes: {text}");
    assert!(
        n <= 100_000 + 2 * (1 << 20) + 1,
        "fsck read {n} bytes: {text}"
    );
}
