//! `persist write DIR` / `persist check DIR`: does data survive a reboot?
//!
//! `write` creates DIR and a fixed set of files in it (sizes from 0 bytes to several MiB,
//! including sizes that straddle 4 KiB pages and a file with a hole), a subdirectory, and,
//! where the file system supports them, a symlink and a hard link; every file is fsync'd, but
//! one written through a shared mapping and made durable by `msync(MS_SYNC)` only.
//! `check` (run after a reboot) verifies every size and byte, then prints
//! `N passed, N failed` and exits with the number of failures. `make test-persist` runs the
//! two in consecutive boots on the same disk image.
#![no_std]
#![no_main]

use user_tests::prelude::*;

/// (name, size, offset where writing starts: bytes before it are a hole)
const FILES: &[(&str, usize, usize)] = &[
    ("empty", 0, 0),
    ("one", 1, 0),
    ("page-1", 4095, 0),
    ("page", 4096, 0),
    ("page+1", 4097, 0),
    ("odd", 100_003, 0),
    ("mib", 1 << 20, 0),
    ("big", 5 * (1 << 20) + 123, 0),
    ("holey", 3 * (1 << 20), 2 * (1 << 20)),
    // Written through a shared mapping (after ftruncate to its size), made durable by
    // msync(MS_SYNC) alone.
    (MAPPED, 3 * 4096 + 77, 0),
];

const MAPPED: &str = "mapped";

/// Fill the file `f` (already `size` bytes long) with `data` through a shared mapping.
fn write_mapped(f: &File, data: &[u8]) -> SysResult<()> {
    let m = sys::mmap(0, data.len(), PROT_READ | PROT_WRITE, MAP_SHARED, f.fd(), 0)?;
    m.write(0, data);
    sys::msync(m.addr(), data.len(), MS_SYNC)
}

/// The byte at `pos` of file number `file`: depends on both, so misplaced data is caught.
fn byte(file: usize, pos: usize) -> u8 {
    let x = (pos as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ ((file as u64 + 1) << 56);
    (x >> 56) as u8 ^ (pos as u8)
}

fn expected(file: usize, size: usize, hole: usize) -> Vec<u8> {
    (0..size)
        .map(|p| if p < hole { 0 } else { byte(file, p) })
        .collect()
}

fn write(dir: &str) -> Result<(), String> {
    match sys::mkdir(dir, 0o755) {
        Ok(()) | Err(Errno::EEXIST) => {}
        Err(e) => return Err(format!("mkdir {dir}: {}", e.name())),
    }
    for (i, &(name, size, hole)) in FILES.iter().enumerate() {
        let path = format!("{dir}/{name}");
        // A file to be mapped shared and written must be open for reading and writing.
        let flags = if name == MAPPED { O_RDWR } else { O_WRONLY };
        let f = File::open(&path, flags | O_CREAT | O_TRUNC, 0o644)
            .map_err(|e| format!("create {path}: {}", e.name()))?;
        let data = expected(i, size, hole);
        if name == MAPPED {
            sys::ftruncate(f.fd(), size as u64)
                .and_then(|()| write_mapped(&f, &data))
                .map_err(|e| format!("write {path} through a mapping: {}", e.name()))?;
            continue;
        }
        f.pwrite_all(&data[hole..], hole as u64)
            .map_err(|e| format!("write {path}: {}", e.name()))?;
        if size == hole && size > 0 {
            sys::ftruncate(f.fd(), size as u64)
                .map_err(|e| format!("truncate {path}: {}", e.name()))?;
        }
        sys::fsync(f.fd()).map_err(|e| format!("fsync {path}: {}", e.name()))?;
    }
    let sub = format!("{dir}/sub");
    match sys::mkdir(&sub, 0o755) {
        Ok(()) | Err(Errno::EEXIST) => {}
        Err(e) => return Err(format!("mkdir {sub}: {}", e.name())),
    }
    // Symlinks and hard links where the file system has them (FAT has neither).
    let _ = sys::symlink("one", &format!("{dir}/link-to-one"));
    let _ = sys::link(&format!("{dir}/page"), &format!("{dir}/page-again"));
    let d = File::open(dir, O_RDONLY | O_DIRECTORY, 0)
        .map_err(|e| format!("open {dir}: {}", e.name()))?;
    sys::fsync(d.fd()).map_err(|e| format!("fsync {dir}: {}", e.name()))?;
    Ok(())
}

fn check(dir: &str) -> (u32, u32) {
    let (mut passed, mut failed) = (0, 0);
    let mut verdict = |what: String, ok: Result<(), String>| match ok {
        Ok(()) => {
            println!("check {what:<28} ok");
            passed += 1;
        }
        Err(e) => {
            println!("check {what:<28} FAILED: {e}");
            failed += 1;
        }
    };
    for (i, &(name, size, hole)) in FILES.iter().enumerate() {
        let path = format!("{dir}/{name}");
        let r = (|| {
            let f = File::open_read(&path).map_err(|e| format!("open: {}", e.name()))?;
            let st = f.stat().map_err(|e| format!("fstat: {}", e.name()))?;
            if st.st_size as usize != size {
                return Err(format!("size {} != {}", st.st_size, size));
            }
            let mut back = vec![0u8; size + 1];
            let n = f
                .pread_full(&mut back, 0)
                .map_err(|e| format!("read: {}", e.name()))?;
            if n != size {
                return Err(format!("read {n} bytes of {size}"));
            }
            let want = expected(i, size, hole);
            match back[..size].iter().zip(&want).position(|(a, b)| a != b) {
                Some(p) => Err(format!("byte {p} differs")),
                None => Ok(()),
            }
        })();
        verdict(path, r);
    }
    let sub = format!("{dir}/sub");
    verdict(
        sub.clone(),
        match sys::stat(&sub) {
            Ok(st) if st.st_mode & S_IFMT == S_IFDIR => Ok(()),
            Ok(_) => Err("not a directory".into()),
            Err(e) => Err(e.name().into()),
        },
    );
    // Present only where the file system supports them; if present they must be right.
    if let Ok(t) = sys::readlink(&format!("{dir}/link-to-one")) {
        verdict(
            "symlink".into(),
            if t == "one" {
                Ok(())
            } else {
                Err(format!("target {t:?}"))
            },
        );
    }
    if let Ok(st) = sys::stat(&format!("{dir}/page-again")) {
        verdict(
            "hard link".into(),
            if st.st_nlink == 2 && st.st_size == 4096 {
                Ok(())
            } else {
                Err(format!("nlink {}", st.st_nlink))
            },
        );
    }
    (passed, failed)
}

fn main(argv: &[&str]) -> i32 {
    match argv {
        [_, "write", dir, ..] => match write(dir) {
            Ok(()) => {
                println!("persist: wrote {} files in {dir}", FILES.len());
                0
            }
            Err(e) => {
                println!("persist: {e}");
                1
            }
        },
        [_, "check", dir, ..] => {
            let (p, f) = check(dir);
            println!("{p} passed, {f} failed");
            f.min(125) as i32
        }
        _ => {
            println!("usage: persist write|check DIR");
            2
        }
    }
}

user_tests::entry!(main);
