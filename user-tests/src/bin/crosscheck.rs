//! `crosscheck`: the guest side of `make test-cross` (guest and host agree on dbfs).
//!
//! ```text
//! crosscheck verify DIR          check DIR against DIR/MANIFEST (written on the host by
//!                                `dbfs-fuse gen-tree`); prints `N passed, N failed`
//! crosscheck gen DIR seed=N      write the generated tree for seed N and its manifest in DIR
//!                                (for `dbfs-fuse verify-tree` / `verify-dir` on the host)
//! crosscheck workload DIR        run tests/crosscheck/workload.txt in DIR, print the final
//!                                listing between markers, then `N passed, N failed`
//! ```
//!
//! The logic (tree plan, manifest, scan, comparison, workload) is the `crosscheck` crate, the
//! same code `dbfs-fuse` runs on the host; this file only maps its two traits to syscalls.
//! Exit status: 0 when everything passed, else the number of failures (at most 125).
#![no_std]
#![no_main]

use crosscheck::manifest::{format_manifest, parse_manifest, Report};
use crosscheck::{Attr, FsOps, FsView, Kind, MANIFEST_NAME};
use user_tests::prelude::*;

/// The tree under `root`, through Linux syscalls.
struct Guest {
    root: String,
}

impl Guest {
    fn full(&self, path: &str) -> String {
        if path.is_empty() {
            self.root.clone()
        } else {
            user_tests::path_join(&self.root, path)
        }
    }
}

impl FsView for Guest {
    fn lstat(&mut self, path: &str) -> Result<Attr, Errno> {
        let st = sys::lstat(&self.full(path))?;
        let kind = Kind::from_mode(st.st_mode).ok_or(Errno::EIO)?;
        Ok(Attr {
            kind,
            size: st.st_size as u64,
            mode: st.st_mode,
            nlink: st.st_nlink,
        })
    }

    fn read_all(&mut self, path: &str, sink: &mut dyn FnMut(&[u8])) -> Result<(), Errno> {
        let f = File::open(&self.full(path), O_RDONLY | O_NOFOLLOW, 0)?;
        let mut buf = vec![0u8; 256 << 10];
        loop {
            let n = f.read(&mut buf)?;
            if n == 0 {
                return Ok(());
            }
            sink(&buf[..n]);
        }
    }

    fn readlink(&mut self, path: &str) -> Result<String, Errno> {
        sys::readlink(&self.full(path))
    }

    fn read_dir(&mut self, path: &str) -> Result<Vec<String>, Errno> {
        let mut names = Vec::new();
        for e in sys::read_dir(&self.full(path))? {
            let e = e?;
            if e.name != "." && e.name != ".." {
                names.push(e.name);
            }
        }
        Ok(names)
    }

    fn list_xattrs(&mut self, path: &str) -> Result<Vec<String>, Errno> {
        sys::llistxattr(&self.full(path))
    }

    fn get_xattr(&mut self, path: &str, name: &str) -> Result<Vec<u8>, Errno> {
        sys::lgetxattr(&self.full(path), name)
    }
}

impl FsOps for Guest {
    fn mkdir(&mut self, path: &str, mode: u32) -> Result<(), Errno> {
        sys::mkdir(&self.full(path), mode)
    }

    fn create(&mut self, path: &str, mode: u32) -> Result<(), Errno> {
        let fd = sys::open(&self.full(path), O_CREAT | O_EXCL | O_WRONLY, mode)?;
        sys::close(fd)
    }

    fn write_at(&mut self, path: &str, offset: u64, data: &[u8]) -> Result<(), Errno> {
        let f = File::open(&self.full(path), O_WRONLY, 0)?;
        f.pwrite_all(data, offset)?;
        f.close()
    }

    fn truncate(&mut self, path: &str, size: u64) -> Result<(), Errno> {
        let f = File::open(&self.full(path), O_WRONLY, 0)?;
        f.set_len(size)?;
        f.close()
    }

    fn symlink(&mut self, target: &str, path: &str) -> Result<(), Errno> {
        sys::symlink(target, &self.full(path))
    }

    fn link(&mut self, existing: &str, path: &str) -> Result<(), Errno> {
        sys::link(&self.full(existing), &self.full(path))
    }

    fn rename(&mut self, from: &str, to: &str) -> Result<(), Errno> {
        sys::rename(&self.full(from), &self.full(to))
    }

    fn unlink(&mut self, path: &str) -> Result<(), Errno> {
        sys::unlink(&self.full(path))
    }

    fn rmdir(&mut self, path: &str) -> Result<(), Errno> {
        sys::rmdir(&self.full(path))
    }

    fn chmod(&mut self, path: &str, mode: u32) -> Result<(), Errno> {
        sys::chmod(&self.full(path), mode)
    }

    fn set_xattr(&mut self, path: &str, name: &str, value: &[u8]) -> Result<(), Errno> {
        sys::lsetxattr(&self.full(path), name, value, 0)
    }

    fn sync(&mut self) -> Result<(), Errno> {
        sys::sync()
    }
}

fn finish(what: &str, r: &Report) -> i32 {
    for f in &r.failures {
        println!("crosscheck {what}: FAILED {f}");
    }
    println!("{} passed, {} failed", r.passed, r.failed);
    r.failed.min(125) as i32
}

fn verify(dir: &str) -> i32 {
    let mut g = Guest {
        root: dir.to_string(),
    };
    let mut text = Vec::new();
    if let Err(e) = g.read_all(MANIFEST_NAME, &mut |b| text.extend_from_slice(b)) {
        println!("crosscheck verify: {dir}/{MANIFEST_NAME}: {}", e.name());
        return 1;
    }
    let expected = match core::str::from_utf8(&text)
        .map_err(|_| "not UTF-8".to_string())
        .and_then(parse_manifest)
    {
        Ok(e) => e,
        Err(e) => {
            println!("crosscheck verify: {dir}/{MANIFEST_NAME}: {e}");
            return 1;
        }
    };
    let t = user_tests::time::Stopwatch::start();
    let scan = crosscheck::scan(&mut g, &[MANIFEST_NAME]);
    let r = crosscheck::compare(&expected, &scan);
    println!(
        "crosscheck verify: {} entries listed, {} found, scanned in {:.2} s",
        expected.len(),
        scan.entries.len(),
        t.elapsed_secs()
    );
    finish("verify", &r)
}

fn gen(dir: &str, seed: u64) -> i32 {
    let plan = crosscheck::plan::Plan::generate(seed);
    let mut g = Guest {
        root: dir.to_string(),
    };
    let t = user_tests::time::Stopwatch::start();
    let r = sys::mkdir(dir, 0o755)
        .map_err(|e| format!("mkdir {dir}: {}", e.name()))
        .and_then(|()| plan.apply(&mut g, &mut |msg| println!("crosscheck gen: {msg}")));
    match r {
        Ok(()) => {
            println!(
                "crosscheck gen: seed {seed} written in {dir} in {:.2} s",
                t.elapsed_secs()
            );
            0
        }
        Err(e) => {
            println!("crosscheck gen: FAILED {e}");
            1
        }
    }
}

fn workload(dir: &str) -> i32 {
    let steps = match crosscheck::workload::parse(crosscheck::WORKLOAD) {
        Ok(s) => s,
        Err(e) => {
            println!("crosscheck workload: {e}");
            return 1;
        }
    };
    if let Err(e) = sys::mkdir(dir, 0o755) {
        println!("crosscheck workload: mkdir {dir}: {}", e.name());
        return 1;
    }
    let mut g = Guest {
        root: dir.to_string(),
    };
    let mut r = crosscheck::workload::run(&steps, &mut g);
    let scan = crosscheck::scan(&mut g, &[]);
    for (path, msg) in &scan.errors {
        r.fail(format!("listing {path}: {msg}"));
    }
    println!("{}", crosscheck::LISTING_BEGIN);
    print!("{}", format_manifest(&scan.entries));
    println!("{}", crosscheck::LISTING_END);
    finish("workload", &r)
}

fn main(argv: &[&str]) -> i32 {
    // Modes in the plan and the script are exact.
    sys::umask(0);
    match argv {
        [_, "verify", dir] => verify(dir),
        [_, "gen", dir, seed] => {
            match seed.strip_prefix("seed=").map(user_tests::args::parse_u64) {
                Some(Ok(s)) => gen(dir, s),
                _ => {
                    println!("crosscheck gen: bad seed {seed:?} (seed=N)");
                    2
                }
            }
        }
        [_, "workload", dir] => workload(dir),
        _ => {
            println!("usage: crosscheck verify DIR | gen DIR seed=N | workload DIR");
            2
        }
    }
}

user_tests::entry!(main);
