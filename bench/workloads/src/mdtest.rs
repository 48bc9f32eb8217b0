//! `mdtest`: a directory tree (depth, fan-out, files per directory), each file written and
//! read back; phases mkdir, create, stat, read, remove, rmdir.

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use crate::fs::{Fs, Open};
use crate::params::{Params, KIB};
use crate::timing::{err, fill, read_whole, write_file, Failed, Outcome, Timer};

// ------------------------------------------------------------------ mdtest tree

/// The tree's directories, parents before children: `root/tree`, `root/tree/d0`, ...
pub(crate) fn tree(root: &str, depth: u32, fanout: u32) -> Vec<String> {
    let mut out = vec![format!("{root}/tree")];
    let mut level = out.clone();
    for _ in 0..depth {
        let mut next = Vec::new();
        for d in &level {
            for c in 0..fanout {
                next.push(format!("{d}/d{c}"));
            }
        }
        out.extend(next.iter().cloned());
        level = next;
    }
    out
}

/// mdtest -z DEPTH -b FANOUT -I ITEMS -w BYTES -e BYTES: phases mkdir (the tree), create
/// (create + write + close each file), stat, read (open + read + close), remove (unlink),
/// rmdir (the tree, deepest first).
pub(crate) fn mdtest<F: Fs>(fs: &mut F, root: &str, p: &Params) -> Result<Outcome, Failed> {
    let dirs = tree(root, p.mdtest_depth, p.mdtest_fanout);
    let mut files = Vec::with_capacity(dirs.len() * p.mdtest_items as usize);
    for d in &dirs {
        for i in 0..p.mdtest_items {
            files.push(format!("{d}/file.mdtest.{i}"));
        }
    }
    let mut buf = vec![0u8; p.mdtest_bytes as usize];
    fill(&mut buf, 11);
    let mut rbuf = vec![0u8; 64 * KIB as usize];
    let mut phases = Vec::new();

    let mut t = Timer::new(fs, dirs.len() as u64);
    for d in &dirs {
        t.op(fs, |fs| fs.mkdir(d).map_err(|e| err("mkdir", d, e)))?;
    }
    phases.push(t.finish(fs, "mdtest_mkdir"));

    let mut t = Timer::new(fs, files.len() as u64);
    for path in &files {
        t.op(fs, |fs| {
            let mut f = fs
                .open(path, Open::CreateNew)
                .map_err(|e| err("create", path, e))?;
            write_file(fs, &mut f, path, p.mdtest_bytes, &buf)?;
            fs.close(f).map_err(|e| err("close", path, e))
        })?;
        t.bytes += p.mdtest_bytes;
    }
    phases.push(t.finish(fs, "mdtest_create"));

    let mut t = Timer::new(fs, files.len() as u64);
    for path in &files {
        let got = t.op(fs, |fs| {
            fs.stat_size(path).map_err(|e| err("stat", path, e))
        })?;
        if got != p.mdtest_bytes {
            return Err(format!(
                "stat {path}: size {got}, expected {}",
                p.mdtest_bytes
            ));
        }
    }
    phases.push(t.finish(fs, "mdtest_stat"));

    let mut t = Timer::new(fs, files.len() as u64);
    for path in &files {
        t.bytes += t.op(fs, |fs| {
            let mut f = fs
                .open(path, Open::Read)
                .map_err(|e| err("open", path, e))?;
            let n = read_whole(fs, &mut f, path, p.mdtest_bytes, &mut rbuf)?;
            fs.close(f).map_err(|e| err("close", path, e))?;
            Ok(n)
        })?;
    }
    phases.push(t.finish(fs, "mdtest_read"));

    let mut t = Timer::new(fs, files.len() as u64);
    for path in &files {
        t.op(fs, |fs| fs.unlink(path).map_err(|e| err("unlink", path, e)))?;
    }
    phases.push(t.finish(fs, "mdtest_remove"));

    let mut t = Timer::new(fs, dirs.len() as u64);
    for d in dirs.iter().rev() {
        t.op(fs, |fs| fs.rmdir(d).map_err(|e| err("rmdir", d, e)))?;
    }
    phases.push(t.finish(fs, "mdtest_rmdir"));
    Ok(Outcome {
        phases,
        files_left: 0,
    })
}
