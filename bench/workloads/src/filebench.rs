//! filebench's personalities `fileserver`, `webserver` and `varmail`: their flowops in their
//! order on a scaled-down fileset, one loop after another.

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use xrand::XorShift64;

use crate::fs::{Fs, Open};
use crate::params::{Params, MIB, SEED};
use crate::timing::{err, fill, read_whole, write_file, Failed, Outcome, Timer};

// ------------------------------------------------------------------ filebench personalities

/// A filebench fileset: which files exist and their sizes, so reads can be checked.
pub(crate) struct Fileset {
    paths: Vec<String>,
    size: Vec<Option<u64>>,
    rng: XorShift64,
}

impl Fileset {
    /// `n` files spread over `dirs` subdirectories of `root` (`dirs == 0`: flat in `root`).
    fn new<F: Fs>(fs: &mut F, root: &str, n: u64, dirs: u64, seed: u64) -> Result<Fileset, Failed> {
        let mut paths = Vec::with_capacity(n as usize);
        for d in 0..dirs {
            let p = format!("{root}/d{d:02}");
            fs.mkdir(&p).map_err(|e| err("mkdir", &p, e))?;
        }
        for i in 0..n {
            paths.push(if dirs == 0 {
                format!("{root}/f{i:05}")
            } else {
                format!("{root}/d{:02}/f{i:05}", i % dirs)
            });
        }
        Ok(Fileset {
            size: vec![None; n as usize],
            paths,
            rng: XorShift64::new(seed),
        })
    }

    /// Untimed: create `percent`% of the files (filebench's `prealloc`), each `len` bytes.
    fn prealloc<F: Fs>(
        &mut self,
        fs: &mut F,
        percent: u64,
        len: u64,
        buf: &[u8],
    ) -> Result<(), Failed> {
        let n = self.paths.len() as u64 * percent / 100;
        for i in 0..n as usize {
            let path = &self.paths[i];
            let mut f = fs
                .open(path, Open::CreateNew)
                .map_err(|e| err("create", path, e))?;
            write_file(fs, &mut f, path, len, buf)?;
            fs.close(f).map_err(|e| err("close", path, e))?;
            self.size[i] = Some(len);
        }
        Ok(())
    }

    /// A random file that exists (`want == true`) or not; None if there is none.
    fn pick(&mut self, want: bool) -> Option<usize> {
        let n = self.paths.len();
        let start = self.rng.below(n as u64) as usize;
        (0..n)
            .map(|k| (start + k) % n)
            .find(|&i| self.size[i].is_some() == want)
    }

    /// Delete a random existing file (one timed operation); nothing if none exists.
    fn delete_one<F: Fs>(&mut self, fs: &mut F, t: &mut Timer) -> Result<(), Failed> {
        if let Some(i) = self.pick(true) {
            let path = &self.paths[i];
            t.op(fs, |fs| fs.unlink(path).map_err(|e| err("unlink", path, e)))?;
            self.size[i] = None;
        }
        Ok(())
    }

    fn existing(&self) -> u64 {
        self.size.iter().filter(|s| s.is_some()).count() as u64
    }
}

pub(crate) fn append_len(rng: &mut XorShift64, max: u64) -> u64 {
    1 + rng.below(max)
}

/// filebench fileserver.f: createfile, writewholefile, closefile, openfile, appendfilerand,
/// closefile, openfile, readwholefile, closefile, deletefile, statfile.
pub(crate) fn fileserver<F: Fs>(fs: &mut F, root: &str, p: &Params) -> Result<Outcome, Failed> {
    let mut buf = vec![0u8; MIB as usize];
    fill(&mut buf, 7);
    let mut rbuf = vec![0u8; MIB as usize];
    let mut set = Fileset::new(fs, root, p.fileserver_files, p.fileserver_dirs, SEED)?;
    set.prealloc(fs, 80, p.fileserver_size, &buf)?;
    let mut rng = XorShift64::new(SEED ^ 1);
    let mut t = Timer::new(fs, p.fileserver_loops * 11);
    for _ in 0..p.fileserver_loops {
        if let Some(i) = set.pick(false) {
            let path = set.paths[i].clone();
            let mut f = t.op(fs, |fs| {
                fs.open(&path, Open::CreateNew)
                    .map_err(|e| err("create", &path, e))
            })?;
            t.op(fs, |fs| {
                write_file(fs, &mut f, &path, p.fileserver_size, &buf)
            })?;
            t.op(fs, |fs| fs.close(f).map_err(|e| err("close", &path, e)))?;
            t.bytes += p.fileserver_size;
            set.size[i] = Some(p.fileserver_size);
        }
        if let Some(i) = set.pick(true) {
            let path = set.paths[i].clone();
            let n = append_len(&mut rng, p.append_max);
            let f = t.op(fs, |fs| {
                fs.open(&path, Open::Append)
                    .map_err(|e| err("open", &path, e))
            })?;
            t.append_and_close(fs, f, &path, &buf[..n as usize], false)?;
            set.size[i] = set.size[i].map(|s| s + n);
        }
        if let Some(i) = set.pick(true) {
            let path = set.paths[i].clone();
            let want = set.size[i].unwrap_or(0);
            t.read_file(fs, &path, want, &mut rbuf)?;
        }
        set.delete_one(fs, &mut t)?;
        if let Some(i) = set.pick(true) {
            let path = set.paths[i].clone();
            let want = set.size[i].unwrap_or(0);
            let got = t.op(fs, |fs| {
                fs.stat_size(&path).map_err(|e| err("stat", &path, e))
            })?;
            if got != want {
                return Err(format!("stat {path}: size {got}, expected {want}"));
            }
        }
    }
    let phase = t.finish(fs, "fileserver");
    Ok(Outcome {
        phases: vec![phase],
        files_left: set.existing(),
    })
}

/// filebench webserver.f: ten times openfile, readwholefile, closefile; then appendfilerand
/// of up to 16 KiB to the log (kept open, as filebench's `fd=1`).
pub(crate) fn webserver<F: Fs>(fs: &mut F, root: &str, p: &Params) -> Result<Outcome, Failed> {
    let mut buf = vec![0u8; MIB as usize];
    fill(&mut buf, 3);
    let mut rbuf = vec![0u8; MIB as usize];
    let mut set = Fileset::new(fs, root, p.webserver_files, p.webserver_dirs, SEED ^ 2)?;
    set.prealloc(fs, 100, p.webserver_size, &buf)?;
    let log = format!("{root}/log");
    let f = fs
        .open(&log, Open::CreateNew)
        .map_err(|e| err("create", &log, e))?;
    fs.close(f).map_err(|e| err("close", &log, e))?;
    let mut logf = fs
        .open(&log, Open::Append)
        .map_err(|e| err("open", &log, e))?;
    let mut rng = XorShift64::new(SEED ^ 3);
    let mut t = Timer::new(fs, p.webserver_loops * 31);
    for _ in 0..p.webserver_loops {
        for _ in 0..10 {
            let Some(i) = set.pick(true) else { break };
            let path = set.paths[i].clone();
            let want = set.size[i].unwrap_or(0);
            t.read_file(fs, &path, want, &mut rbuf)?;
        }
        let n = append_len(&mut rng, p.append_max);
        t.op(fs, |fs| {
            fs.write(&mut logf, &buf[..n as usize])
                .map_err(|e| err("append", &log, e))
        })?;
        t.bytes += n;
    }
    let phase = t.finish(fs, "webserver");
    fs.close(logf).map_err(|e| err("close", &log, e))?;
    Ok(Outcome {
        phases: vec![phase],
        files_left: set.existing() + 1,
    })
}

/// filebench varmail.f: deletefile; createfile, appendfilerand, fsyncfile, closefile;
/// openfile, readwholefile, appendfilerand, fsyncfile, closefile; openfile, readwholefile,
/// closefile. One flat directory.
pub(crate) fn varmail<F: Fs>(fs: &mut F, root: &str, p: &Params) -> Result<Outcome, Failed> {
    let mut buf = vec![0u8; MIB as usize];
    fill(&mut buf, 5);
    let mut rbuf = vec![0u8; MIB as usize];
    let mut set = Fileset::new(fs, root, p.varmail_files, 0, SEED ^ 4)?;
    set.prealloc(fs, 80, p.varmail_size, &buf)?;
    let mut rng = XorShift64::new(SEED ^ 5);
    let mut t = Timer::new(fs, p.varmail_loops * 13);
    for _ in 0..p.varmail_loops {
        set.delete_one(fs, &mut t)?;
        if let Some(i) = set.pick(false) {
            let path = set.paths[i].clone();
            let n = append_len(&mut rng, p.append_max);
            let f = t.op(fs, |fs| {
                fs.open(&path, Open::CreateNew)
                    .map_err(|e| err("create", &path, e))
            })?;
            t.append_and_close(fs, f, &path, &buf[..n as usize], true)?;
            set.size[i] = Some(n);
        }
        if let Some(i) = set.pick(true) {
            let path = set.paths[i].clone();
            let want = set.size[i].unwrap_or(0);
            let n = append_len(&mut rng, p.append_max);
            let mut f = t.op(fs, |fs| {
                fs.open(&path, Open::Read)
                    .map_err(|e| err("open", &path, e))
            })?;
            t.bytes += t.op(fs, |fs| read_whole(fs, &mut f, &path, want, &mut rbuf))?;
            fs.close(f).map_err(|e| err("close", &path, e))?;
            // filebench appends through the descriptor it read with (opened read-write);
            // here the append goes through a second, O_APPEND descriptor, opened untimed.
            let f = fs
                .open(&path, Open::Append)
                .map_err(|e| err("open", &path, e))?;
            t.append_and_close(fs, f, &path, &buf[..n as usize], true)?;
            set.size[i] = Some(want + n);
        }
        if let Some(i) = set.pick(true) {
            let path = set.paths[i].clone();
            let want = set.size[i].unwrap_or(0);
            t.read_file(fs, &path, want, &mut rbuf)?;
        }
    }
    let phase = t.finish(fs, "varmail");
    Ok(Outcome {
        phases: vec![phase],
        files_left: set.existing(),
    })
}
