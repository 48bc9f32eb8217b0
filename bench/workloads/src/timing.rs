//! What every workload shares: timed operations ([`Timer`] records each operation's latency
//! into a preallocated buffer), the phase and outcome a workload returns, and whole-file
//! write/read helpers that check what they read.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use abi::Errno;

use crate::fs::{Fs, Open};

/// One timed phase of one repetition.
#[derive(Clone, Debug)]
pub struct Phase {
    /// The RESULT line's `bench=` name, e.g. `mdtest_create`.
    pub bench: &'static str,
    pub ops: u64,
    /// File data read and written (0: a metadata phase, no MBps).
    pub bytes: u64,
    pub ns: u64,
    /// Per-operation latency, ns (saturating at u32::MAX, 4.3 s).
    pub lat: Vec<u32>,
}

impl Phase {
    pub fn ops_per_sec(&self) -> f64 {
        self.ops as f64 * 1e9 / self.ns.max(1) as f64
    }
}

/// What a workload run returns: its phases, and the regular files it left in its directory
/// by its own bookkeeping (the host test counts them on disk).
#[derive(Clone, Debug)]
pub struct Outcome {
    pub phases: Vec<Phase>,
    pub files_left: u64,
}

/// A failure with the operation and path it happened on.
pub type Failed = String;

pub(crate) fn err(what: &str, path: &str, e: Errno) -> Failed {
    format!("{what} {path}: {}", e.name())
}

/// Per-operation timing into a preallocated buffer, so recording does not allocate.
pub(crate) struct Timer {
    pub(crate) start: u64,
    pub(crate) lat: Vec<u32>,
    pub(crate) ops: u64,
    pub(crate) bytes: u64,
}

impl Timer {
    pub(crate) fn new<F: Fs>(fs: &mut F, expected_ops: u64) -> Timer {
        let lat = Vec::with_capacity(expected_ops as usize);
        Timer {
            start: fs.now_ns(),
            lat,
            ops: 0,
            bytes: 0,
        }
    }

    /// Run one operation, timed.
    pub(crate) fn op<F: Fs, T>(
        &mut self,
        fs: &mut F,
        f: impl FnOnce(&mut F) -> Result<T, Failed>,
    ) -> Result<T, Failed> {
        let t0 = fs.now_ns();
        let r = f(fs)?;
        let d = fs.now_ns().saturating_sub(t0);
        self.lat.push(d.min(u32::MAX as u64) as u32);
        self.ops += 1;
        Ok(r)
    }

    /// Open `path`, read it whole (it must hold `want` bytes) and close it: three timed
    /// operations; the bytes read are counted.
    pub(crate) fn read_file<F: Fs>(
        &mut self,
        fs: &mut F,
        path: &str,
        want: u64,
        buf: &mut [u8],
    ) -> Result<(), Failed> {
        let mut f = self.op(fs, |fs| {
            fs.open(path, Open::Read).map_err(|e| err("open", path, e))
        })?;
        self.bytes += self.op(fs, |fs| read_whole(fs, &mut f, path, want, buf))?;
        self.op(fs, |fs| fs.close(f).map_err(|e| err("close", path, e)))
    }

    /// Write `data` to the open file `f` of `path`, fsync it if `fsync`, and close it: each
    /// a timed operation; the bytes written are counted.
    pub(crate) fn append_and_close<F: Fs>(
        &mut self,
        fs: &mut F,
        mut f: F::File,
        path: &str,
        data: &[u8],
        fsync: bool,
    ) -> Result<(), Failed> {
        self.op(fs, |fs| {
            fs.write(&mut f, data).map_err(|e| err("append", path, e))
        })?;
        if fsync {
            self.op(fs, |fs| fs.fsync(&mut f).map_err(|e| err("fsync", path, e)))?;
        }
        self.op(fs, |fs| fs.close(f).map_err(|e| err("close", path, e)))?;
        self.bytes += data.len() as u64;
        Ok(())
    }

    pub(crate) fn finish<F: Fs>(self, fs: &mut F, bench: &'static str) -> Phase {
        Phase {
            bench,
            ops: self.ops,
            bytes: self.bytes,
            ns: fs.now_ns().saturating_sub(self.start),
            lat: self.lat,
        }
    }
}

/// Deterministic file content: byte i of a file is a function of its index and i, so a read
/// can be checked without keeping the data.
pub(crate) fn fill(buf: &mut [u8], tag: u64) {
    for (i, b) in buf.iter_mut().enumerate() {
        *b = (tag as u8).wrapping_mul(31).wrapping_add(i as u8);
    }
}

pub(crate) fn write_file<F: Fs>(
    fs: &mut F,
    f: &mut F::File,
    path: &str,
    len: u64,
    buf: &[u8],
) -> Result<(), Failed> {
    let mut left = len;
    while left > 0 {
        let n = left.min(buf.len() as u64) as usize;
        fs.write(f, &buf[..n]).map_err(|e| err("write", path, e))?;
        left -= n as u64;
    }
    Ok(())
}

/// Read the whole file; fail unless it holds exactly `expect` bytes.
pub(crate) fn read_whole<F: Fs>(
    fs: &mut F,
    f: &mut F::File,
    path: &str,
    expect: u64,
    buf: &mut [u8],
) -> Result<u64, Failed> {
    let mut got = 0u64;
    loop {
        let n = fs.read(f, buf).map_err(|e| err("read", path, e))?;
        if n == 0 {
            break;
        }
        got += n as u64;
    }
    if got != expect {
        return Err(format!("read {path}: {got} bytes, expected {expect}"));
    }
    Ok(got)
}
