//! The small-file metadata workloads: `create_empty`, `delete_2m` and `createdel_ordered`.

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use crate::fs::{Fs, Open};
use crate::params::{Params, MIB};
use crate::timing::{err, fill, write_file, Failed, Outcome, Timer};

// ------------------------------------------------------------------ small-file metadata

/// Create an empty file, close it, fsync the directory: N times.
pub(crate) fn create_empty<F: Fs>(fs: &mut F, root: &str, p: &Params) -> Result<Outcome, Failed> {
    let mut t = Timer::new(fs, p.create_empty_n);
    for i in 0..p.create_empty_n {
        let path = format!("{root}/e{i:06}");
        t.op(fs, |fs| {
            let f = fs
                .open(&path, Open::CreateNew)
                .map_err(|e| err("create", &path, e))?;
            fs.close(f).map_err(|e| err("close", &path, e))?;
            fs.fsync_dir(root).map_err(|e| err("fsync dir", root, e))
        })?;
    }
    Ok(Outcome {
        phases: vec![t.finish(fs, "create_empty")],
        files_left: p.create_empty_n,
    })
}

/// N files of 2 MiB written and fsync'd (untimed), then each unlinked (timed per file), with
/// a final fsync of the directory inside the timed part.
pub(crate) fn delete_2m<F: Fs>(fs: &mut F, root: &str, p: &Params) -> Result<Outcome, Failed> {
    let mut buf = vec![0u8; MIB as usize];
    fill(&mut buf, 13);
    let paths: Vec<String> = (0..p.delete_2m_n)
        .map(|i| format!("{root}/big{i:04}"))
        .collect();
    for path in &paths {
        let mut f = fs
            .open(path, Open::CreateNew)
            .map_err(|e| err("create", path, e))?;
        write_file(fs, &mut f, path, 2 * MIB, &buf)?;
        fs.fsync(&mut f).map_err(|e| err("fsync", path, e))?;
        fs.close(f).map_err(|e| err("close", path, e))?;
    }
    fs.fsync_dir(root).map_err(|e| err("fsync dir", root, e))?;
    let mut t = Timer::new(fs, p.delete_2m_n);
    for path in &paths {
        t.op(fs, |fs| fs.unlink(path).map_err(|e| err("unlink", path, e)))?;
    }
    fs.fsync_dir(root).map_err(|e| err("fsync dir", root, e))?;
    Ok(Outcome {
        phases: vec![t.finish(fs, "delete_2m")],
        files_left: 0,
    })
}

/// createdel with both phases in name order: create x000000.. (one byte each), then unlink
/// in the same order.
pub(crate) fn createdel_ordered<F: Fs>(
    fs: &mut F,
    root: &str,
    p: &Params,
) -> Result<Outcome, Failed> {
    let paths: Vec<String> = (0..p.createdel_n)
        .map(|i| format!("{root}/x{i:06}"))
        .collect();
    let mut t = Timer::new(fs, p.createdel_n);
    for path in &paths {
        t.op(fs, |fs| {
            let mut f = fs
                .open(path, Open::CreateNew)
                .map_err(|e| err("create", path, e))?;
            fs.write(&mut f, b"x").map_err(|e| err("write", path, e))?;
            fs.close(f).map_err(|e| err("close", path, e))
        })?;
    }
    let create = t.finish(fs, "createdel_ordered_create");
    let mut t = Timer::new(fs, p.createdel_n);
    for path in &paths {
        t.op(fs, |fs| fs.unlink(path).map_err(|e| err("unlink", path, e)))?;
    }
    Ok(Outcome {
        phases: vec![create, t.finish(fs, "createdel_ordered_delete")],
        files_left: 0,
    })
}
