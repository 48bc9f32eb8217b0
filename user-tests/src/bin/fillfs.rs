//! `fillfs DIR... [summary=FILE]`: fill each file system until ENOSPC and check that nothing
//! committed is lost and that deleting gives the space back.
//!
//! For each DIR (use small disks: it writes until the disk is full):
//! 1. writes three files of known contents (fsync'd), an empty directory, and notes `statfs`;
//! 2. fills a file with 256 KiB writes, fsync after every MiB, until a call fails: it must be
//!    ENOSPC (on write or on fsync: which one is printed), then fsync and close the filler
//!    (each must succeed or be ENOSPC; a buffering file system reports it there);
//! 3. creates empty files until that fails too (ENOSPC; or stops after 2000);
//! 4. checks `statfs` agrees: what committed is close to what it called available, and little
//!    is available now;
//! 5. verifies the three files byte for byte;
//! 6. deletes on the full disk: truncates the filler to 0, unlinks it and the empty files,
//!    removes the directory (each must succeed);
//! 7. checks `statfs` shows the space again, writes a new file (fsync, close), verifies it and
//!    the three files again, and removes everything.
//!
//! Prints one line per check and closes with `N passed, N failed` (also to FILE); exit status
//! = failures. Runs unchanged on Linux under `qemu-riscv64` (e.g. on a small loop-mounted fs).
#![no_std]
#![no_main]

use user_tests::prelude::*;
use user_tests::Report;
use user_tests::MIB;

const PIECE: usize = 256 << 10;
const KEEP: [(&str, usize); 3] = [
    ("keep-small", 4096 + 17),
    ("keep-mid", 300_000),
    ("keep-big", MIB),
];

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| ((i * 131 + i / 4099) as u8) ^ seed)
        .collect()
}

fn avail_bytes(dir: &str) -> SysResult<u64> {
    sys::statfs(dir).map(|s| s.f_bavail * s.f_bsize as u64)
}

fn write_file(path: &str, data: &[u8]) -> SysResult<()> {
    let f = File::open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)?;
    f.write_all(data)?;
    f.sync()?;
    f.close()
}

fn same_file(path: &str, want: &[u8]) -> bool {
    File::open_read(path)
        .and_then(|f| f.read_to_end())
        .is_ok_and(|got| got == want)
}

fn show(r: SysResult<()>) -> &'static str {
    match r {
        Ok(()) => "ok",
        Err(e) => e.name(),
    }
}

fn run(dir: &str, r: &mut Report) -> SysResult<()> {
    let base = user_tests::path_join(dir, &format!("fill.{}", sys::getpid()));
    let _ = sys::remove_tree(&base);
    sys::mkdir(&base, 0o755)?;
    let p = |n: &str| user_tests::path_join(&base, n);
    println!("---- {dir}");
    for (i, (name, len)) in KEEP.iter().enumerate() {
        write_file(&p(name), &pattern(*len, i as u8))?;
    }
    sys::mkdir(&p("emptydir"), 0o755)?;
    let total = sys::statfs(dir).map(|s| s.f_blocks * s.f_bsize as u64)?;
    let before = avail_bytes(dir)?;
    println!(
        "statfs: {} KiB total, {} KiB available",
        total >> 10,
        before >> 10
    );

    // Fill.
    let filler = p("filler");
    let f = File::open(&filler, O_WRONLY | O_CREAT | O_TRUNC, 0o644)?;
    let piece = pattern(PIECE, 0x5a);
    let (mut acked, mut committed) = (0u64, 0u64);
    let limit = 2 * total + 64 * MIB as u64;
    let (failed_call, err) = loop {
        match f.write(&piece) {
            Ok(n) => acked += n as u64,
            Err(e) => break ("write", e),
        }
        if acked % MIB as u64 == 0 {
            match f.sync() {
                Ok(()) => committed = acked,
                Err(e) => break ("fsync", e),
            }
        }
        if acked > limit {
            break ("nothing", Errno::EIO);
        }
    };
    println!(
        "filled: {} KiB accepted by write, {} KiB committed by fsync; {failed_call} failed with {}",
        acked >> 10,
        committed >> 10,
        err.name()
    );
    r.check(
        err == Errno::ENOSPC,
        &format!("filling ends with ENOSPC (on {failed_call})"),
    );
    let fsync_after = f.sync();
    let close_after = f.close();
    println!(
        "then: fsync {}, close {}",
        show(fsync_after),
        show(close_after)
    );
    let fine = |x: SysResult<()>| matches!(x, Ok(()) | Err(Errno::ENOSPC));
    r.check(
        fine(fsync_after) && fine(close_after),
        "fsync and close of the filler: ok or ENOSPC",
    );

    let mut names = 0;
    let meta_err = loop {
        if names >= 2000 {
            break None;
        }
        match File::open(
            &p(&format!("m{names:05}")),
            O_WRONLY | O_CREAT | O_EXCL,
            0o644,
        ) {
            Ok(f) => match f.close() {
                Ok(()) => names += 1,
                Err(e) => break Some(e),
            },
            Err(e) => break Some(e),
        }
    };
    println!(
        "created {names} empty files, then {}",
        meta_err.map_or("stopped", |e| e.name())
    );
    r.check(
        meta_err.is_none_or(|e| e == Errno::ENOSPC),
        "creating files on the full disk: ENOSPC",
    );

    let after = avail_bytes(dir)?;
    println!("statfs now: {} KiB available", after >> 10);
    // What committed is what statfs promised, within metadata overhead (5%) and one MiB.
    r.check(
        committed <= before + MIB as u64 && committed + before / 20 + MIB as u64 >= before,
        "bytes committed agree with statfs's available before the fill",
    );
    r.check(
        after <= total / 32 + 2 * MIB as u64,
        "statfs shows the disk (nearly) full",
    );

    for (i, (name, len)) in KEEP.iter().enumerate() {
        r.check(
            same_file(&p(name), &pattern(*len, i as u8)),
            &format!("{name} intact on the full disk"),
        );
    }

    // Delete on the full disk.
    let trunc = sys::open(&filler, O_WRONLY, 0).and_then(|fd| {
        let t = sys::ftruncate(fd, 0);
        sys::close(fd).and(t)
    });
    r.check(
        trunc.is_ok(),
        &format!("truncate the filler to 0 on the full disk: {}", show(trunc)),
    );
    let unlinked = sys::unlink(&filler);
    r.check(
        unlinked.is_ok(),
        &format!("unlink the filler: {}", show(unlinked)),
    );
    let mut bad = None;
    for i in 0..names {
        if let Err(e) = sys::unlink(&p(&format!("m{i:05}"))) {
            bad.get_or_insert((i, e));
        }
    }
    r.check(
        bad.is_none(),
        &format!("unlink the {names} empty files: {bad:?}"),
    );
    let rmdir = sys::rmdir(&p("emptydir"));
    r.check(
        rmdir.is_ok(),
        &format!("rmdir on the full disk: {}", show(rmdir)),
    );
    let _ = sys::sync();

    let freed = avail_bytes(dir)?;
    println!("statfs after deleting: {} KiB available", freed >> 10);
    r.check(
        freed + before / 20 + MIB as u64 >= before,
        "deleting gave the space back",
    );
    let again = pattern((before / 2).min(8 * MIB as u64) as usize, 0x33);
    let w = write_file(&p("again"), &again);
    r.check(
        w.is_ok(),
        &format!(
            "write {} KiB after deleting: {}",
            again.len() >> 10,
            show(w)
        ),
    );
    r.check(same_file(&p("again"), &again), "the new file reads back");
    for (i, (name, len)) in KEEP.iter().enumerate() {
        r.check(
            same_file(&p(name), &pattern(*len, i as u8)),
            &format!("{name} still intact"),
        );
    }
    let rm = sys::remove_tree(&base);
    r.check(rm.is_ok(), &format!("remove everything: {}", show(rm)));
    Ok(())
}

fn main(argv: &[&str]) -> i32 {
    let mut summary = None;
    let mut dirs = Vec::new();
    for &a in argv.iter().skip(1) {
        match a.strip_prefix("summary=") {
            Some(f) => summary = Some(f),
            None => dirs.push(a),
        }
    }
    if dirs.is_empty() {
        println!("usage: fillfs DIR... [summary=FILE]");
        return 2;
    }
    let mut r = Report::default();
    for d in dirs {
        if let Err(e) = run(d, &mut r) {
            r.check(
                false,
                &format!("{d}: setting up or statfs failed: {}", e.name()),
            );
        }
    }
    let line = format!("{} passed, {} failed", r.passed, r.failed);
    println!("{line}");
    if let Some(path) = summary {
        let _ = write_file(path, line.as_bytes());
    }
    r.failed.min(125) as i32
}

user_tests::entry!(main);
