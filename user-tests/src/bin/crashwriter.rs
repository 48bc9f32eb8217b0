//! `crashwriter [dir=/dbfs/crash] [seed=N] [boot=N] [ops=N] [check]`: the guest side of the
//! crash test (`make test-crash`, `tests/crash.sh`).
//!
//! Every boot first checks what the previous boots committed, then writes until the host kills
//! QEMU (or `ops` operations are done; `check` stops after the check).
//!
//! # What is written
//! Sixteen file slots `f00`..`f15` in DIR. Each operation is one of:
//! - replace: write a new file `tmp.SEQ` (4 KiB .. 3 MiB of bytes derived from seed and SEQ),
//!   fsync it, rename it over `fNN`, fsync DIR;
//! - append / patch: one `write` (O_APPEND) or one `pwrite` into an existing slot, then fsync;
//! - rename `fA` over `fB`, fsync DIR; delete `fNN`, fsync DIR.
//!
//! dbfs commits a rename or unlink atomically but durably only at the next barrier (fsync of
//! any file or directory, sync, the write-back timer), so like a correct POSIX program the
//! writer fsyncs the directory before it counts such an operation as committed.
//!
//! # What is promised, and how it is checked
//! Before an operation, its effects (`name=SIZE:CRC` or `name=-` for "absent"; CRC is the
//! POSIX `cksum` CRC, so the host can check with `cksum`) are printed as `INTENT SEQ ...` and
//! appended to DIR/journal (fsync'd); after it returned, they are printed as
//! `COMMITTED SEQ ...`, and a `C SEQ` line joins the journal with the next intent. The console is
//! synchronous: a `COMMITTED` line the host saw means the operation was durable. At the next
//! boot every slot must hold exactly its last committed state, except the slots of the last
//! operation journaled without its `C` line, which must all hold their old state or all
//! their new state (the host checks that operation exactly from the console). The
//! result is printed as `STATE name SIZE CRC` per present slot and `CHECK N passed, N failed`;
//! then the journal is replaced (new file, fsync, rename) by the state found, and `tmp.*`
//! leftovers are removed.
//!
//! Exit status: 0 after `ops` operations or `check`; the number of failed checks (at most
//! 125) when the check failed; 126 on an I/O error.
#![no_std]
#![no_main]

extern crate alloc;

use alloc::collections::BTreeMap;
use user_tests::args::{parse_u64, split_kv};
use user_tests::prelude::*;
use user_tests::rng::XorShift64;

const SLOTS: usize = 16;
const MIN_SIZE: usize = 4096;
const MAX_SIZE: usize = 3 << 20;

/// A slot's content as far as the check is concerned: `None` = the file does not exist.
type State = Option<(usize, u32)>;

// ---------------------------------------------------------------- POSIX cksum

/// CRC-32 of POSIX `cksum` (polynomial 0x04C11DB7, MSB first, length appended, inverted).
struct Cksum {
    table: [u32; 256],
}

impl Cksum {
    fn new() -> Self {
        let mut table = [0u32; 256];
        for (i, t) in table.iter_mut().enumerate() {
            let mut c = (i as u32) << 24;
            for _ in 0..8 {
                c = if c & 0x8000_0000 != 0 {
                    (c << 1) ^ 0x04C1_1DB7
                } else {
                    c << 1
                };
            }
            *t = c;
        }
        Cksum { table }
    }

    fn update(&self, mut crc: u32, bytes: &[u8]) -> u32 {
        for &b in bytes {
            crc = (crc << 8) ^ self.table[((crc >> 24) as u8 ^ b) as usize];
        }
        crc
    }

    fn of(&self, data: &[u8]) -> u32 {
        let mut crc = self.update(0, data);
        let mut len = data.len() as u64;
        while len != 0 {
            crc = self.update(crc, &[len as u8]);
            len >>= 8;
        }
        !crc
    }
}

// ---------------------------------------------------------------- content and names

/// `size` bytes that depend on `seed` and `seq` (every write of the test is distinct).
fn content(seed: u64, seq: u64, size: usize) -> Vec<u8> {
    let mut rng =
        XorShift64::new(seed ^ seq.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5851_F42D_4C95_7F2D);
    let mut out = Vec::with_capacity(size + 8);
    while out.len() < size {
        out.extend_from_slice(&rng.next_u64().to_le_bytes());
    }
    out.truncate(size);
    out
}

fn random_size(rng: &mut XorShift64) -> usize {
    let bound = match rng.below(10) {
        0..=4 => 64 << 10,
        5..=8 => 512 << 10,
        _ => MAX_SIZE,
    };
    MIN_SIZE + rng.below((bound - MIN_SIZE) as u64 + 1) as usize
}

fn slot_name(i: usize) -> String {
    format!("f{i:02}")
}

fn fmt_state(s: State) -> String {
    match s {
        Some((size, crc)) => format!("{size}:{crc}"),
        None => "-".into(),
    }
}

fn parse_state(s: &str) -> Option<State> {
    if s == "-" {
        return Some(None);
    }
    let (size, crc) = s.split_once(':')?;
    Some(Some((
        parse_u64(size).ok()? as usize,
        parse_u64(crc).ok()?.try_into().ok()?,
    )))
}

fn fmt_effects(effects: &[(String, State)]) -> String {
    let mut s = String::new();
    for (name, st) in effects {
        s.push(' ');
        s.push_str(name);
        s.push('=');
        s.push_str(&fmt_state(*st));
    }
    s
}

fn io<T>(what: &str, r: SysResult<T>) -> Result<T, String> {
    r.map_err(|e| format!("{what}: {}", e.name()))
}

// ---------------------------------------------------------------- the file system side

/// The content of `path`, or `None` when it does not exist.
fn read_file(path: &str) -> Result<Option<Vec<u8>>, String> {
    match File::open_read(path) {
        Ok(f) => io(path, f.read_to_end()).map(Some),
        Err(Errno::ENOENT) => Ok(None),
        Err(e) => Err(format!("open {path}: {}", e.name())),
    }
}

fn actual_state(ck: &Cksum, path: &str) -> Result<State, String> {
    Ok(read_file(path)?.map(|d| (d.len(), ck.of(&d))))
}

fn fsync_dir(dir: &str) -> Result<(), String> {
    let d = io(dir, File::open(dir, O_RDONLY | O_DIRECTORY, 0))?;
    io(dir, sys::fsync(d.fd()))
}

/// The journal: `S name SIZE CRC` (state at the last check), `I SEQ effects` (intent),
/// `C SEQ` (that intent returned).
struct Journal {
    file: File,
}

impl Journal {
    fn append(&self, line: &str) -> Result<(), String> {
        // One write: a record is in the file whole or not at all.
        io("journal write", self.file.write_all(line.as_bytes()))?;
        io("journal fsync", sys::fsync(self.file.fd()))
    }
}

struct Replay {
    committed: BTreeMap<String, State>,
    /// The last intent without its `C` line.
    pending: Option<Vec<(String, State)>>,
    last_seq: u64,
}

fn replay(text: &str) -> Result<Replay, String> {
    let mut r = Replay {
        committed: BTreeMap::new(),
        pending: None,
        last_seq: 0,
    };
    let mut intents: BTreeMap<u64, Vec<(String, State)>> = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let bad = || format!("journal line {}: {line:?}", n + 1);
        let w: Vec<&str> = line.split_whitespace().collect();
        match w.as_slice() {
            ["S", name, size, crc] => {
                let st = parse_state(&format!("{size}:{crc}")).ok_or_else(bad)?;
                r.committed.insert(String::from(*name), st);
            }
            ["I", seq, effects @ ..] => {
                let seq = parse_u64(seq).map_err(|_| bad())?;
                let mut list = Vec::new();
                for e in effects {
                    let (name, st) = e.split_once('=').ok_or_else(bad)?;
                    list.push((String::from(name), parse_state(st).ok_or_else(bad)?));
                }
                intents.insert(seq, list);
                r.last_seq = r.last_seq.max(seq);
            }
            ["C", seq] => {
                let seq = parse_u64(seq).map_err(|_| bad())?;
                for (name, st) in intents.remove(&seq).ok_or_else(bad)? {
                    r.committed.insert(name, st);
                }
            }
            [] => {}
            _ => return Err(bad()),
        }
    }
    // Intents are appended one at a time: at most one can be left open.
    if intents.len() > 1 {
        return Err(format!("{} intents without a commit record", intents.len()));
    }
    r.pending = intents.into_values().next();
    Ok(r)
}

/// Check DIR against the journal; returns (passed, failed, state found).
fn check(ck: &Cksum, dir: &str) -> Result<(u32, u32, BTreeMap<String, State>, u64), String> {
    let journal = read_file(&format!("{dir}/journal"))?.unwrap_or_default();
    let text = core::str::from_utf8(&journal).map_err(|_| String::from("journal is not UTF-8"))?;
    let r = replay(text)?;
    let (mut passed, mut failed) = (0u32, 0u32);
    let mut found = BTreeMap::new();
    for i in 0..SLOTS {
        let name = slot_name(i);
        found.insert(name.clone(), actual_state(ck, &format!("{dir}/{name}"))?);
    }
    // Slots outside the in-flight operation: exactly the committed state.
    let in_flight: Vec<&String> = r.pending.iter().flatten().map(|(n, _)| n).collect();
    for (name, actual) in &found {
        if in_flight.contains(&name) {
            continue;
        }
        let want = r.committed.get(name).copied().flatten();
        if *actual == want {
            passed += 1;
        } else {
            failed += 1;
            println!(
                "CHECK FAILED {name}: found {} committed {}",
                fmt_state(*actual),
                fmt_state(want)
            );
        }
    }
    // The in-flight operation: all old or all new.
    if let Some(effects) = &r.pending {
        let old = effects
            .iter()
            .all(|(n, _)| found.get(n).copied().flatten() == r.committed.get(n).copied().flatten());
        let new = effects
            .iter()
            .all(|(n, st)| found.get(n).copied().flatten() == *st);
        if old || new {
            passed += 1;
            println!(
                "CHECK in-flight operation:{} {}",
                fmt_effects(effects),
                if new { "applied" } else { "not applied" }
            );
        } else {
            failed += 1;
            println!(
                "CHECK FAILED in-flight operation torn:{}",
                fmt_effects(effects)
            );
            for (n, _) in effects {
                println!(
                    "  {n}: found {}",
                    fmt_state(found.get(n).copied().flatten())
                );
            }
        }
    }
    // Nothing else but the journal and leftovers of an interrupted replace.
    for e in io(dir, sys::read_dir(dir))? {
        let e = io(dir, e)?;
        let known = e.name == "."
            || e.name == ".."
            || e.name.starts_with("journal")
            || e.name.starts_with("tmp.");
        if !known && !found.contains_key(&e.name) {
            failed += 1;
            println!("CHECK FAILED unexpected file {dir}/{}", e.name);
        }
    }
    Ok((passed, failed, found, r.last_seq))
}

/// Remove `tmp.*`, then replace the journal by the state found (new file, fsync, rename).
fn restart_journal(dir: &str, found: &BTreeMap<String, State>) -> Result<Journal, String> {
    let mut tmps = Vec::new();
    for e in io(dir, sys::read_dir(dir))? {
        let e = io(dir, e)?;
        if e.name.starts_with("tmp.") || e.name == "journal.new" {
            tmps.push(format!("{dir}/{}", e.name));
        }
    }
    for t in tmps {
        io(&t, sys::unlink(&t))?;
    }
    let mut text = String::new();
    for (name, st) in found {
        if let Some((size, crc)) = st {
            text.push_str(&format!("S {name} {size} {crc}\n"));
        }
    }
    let new = format!("{dir}/journal.new");
    let f = io(&new, File::open(&new, O_WRONLY | O_CREAT | O_TRUNC, 0o644))?;
    io(&new, f.write_all(text.as_bytes()))?;
    io(&new, sys::fsync(f.fd()))?;
    drop(f);
    let path = format!("{dir}/journal");
    io("rename journal", sys::rename(&new, &path))?;
    fsync_dir(dir)?;
    let file = io(&path, File::open(&path, O_WRONLY | O_APPEND, 0))?;
    Ok(Journal { file })
}

struct Writer<'a> {
    ck: &'a Cksum,
    dir: &'a str,
    seed: u64,
    rng: XorShift64,
    journal: Journal,
    state: BTreeMap<String, State>,
    seq: u64,
    /// The operation whose `C` journal line is not written yet.
    done: Option<u64>,
}

impl Writer<'_> {
    fn path(&self, name: &str) -> String {
        format!("{}/{name}", self.dir)
    }

    /// Announce, do, confirm: the protocol every operation follows. The journal's `C` line
    /// of an operation goes out with the next intent (one fsync per operation, not two): until
    /// then the next boot accepts that operation's old state too, and the host, which saw the
    /// `COMMITTED` line, checks it exactly.
    fn run(
        &mut self,
        effects: Vec<(String, State)>,
        op: impl FnOnce(&Self) -> Result<(), String>,
    ) -> Result<(), String> {
        let e = fmt_effects(&effects);
        let done = self
            .done
            .take()
            .map(|s| format!("C {s}\n"))
            .unwrap_or_default();
        self.journal.append(&format!("{done}I {}{e}\n", self.seq))?;
        println!("INTENT {}{e}", self.seq);
        op(self)?;
        println!("COMMITTED {}{e}", self.seq);
        self.done = Some(self.seq);
        for (name, st) in effects {
            self.state.insert(name, st);
        }
        Ok(())
    }

    fn present(&mut self) -> Option<String> {
        let names: Vec<String> = self
            .state
            .iter()
            .filter(|(_, s)| s.is_some())
            .map(|(n, _)| n.clone())
            .collect();
        if names.is_empty() {
            None
        } else {
            Some(names[self.rng.below(names.len() as u64) as usize].clone())
        }
    }

    fn step(&mut self) -> Result<(), String> {
        self.seq += 1;
        let seq = self.seq;
        let slot = slot_name(self.rng.below(SLOTS as u64) as usize);
        let kind = self.rng.below(100);
        match (kind, self.present()) {
            // Append: one O_APPEND write, then fsync.
            (0..=19, Some(name)) => {
                let path = self.path(&name);
                let mut data = read_file(&path)?.ok_or_else(|| format!("{path} vanished"))?;
                let extra = content(self.seed, seq, 1 + self.rng.below(256 << 10) as usize);
                data.extend_from_slice(&extra);
                let effects = vec![(name, Some((data.len(), self.ck.of(&data))))];
                self.run(effects, |_| {
                    let f = io(&path, File::open(&path, O_WRONLY | O_APPEND, 0))?;
                    io(&path, f.write_all(&extra))?;
                    io(&path, sys::fsync(f.fd()))
                })
            }
            // Patch: one pwrite inside (possibly past the end of) an existing file, then fsync.
            (20..=29, Some(name)) => {
                let path = self.path(&name);
                let mut data = read_file(&path)?.ok_or_else(|| format!("{path} vanished"))?;
                let at = self.rng.below(data.len() as u64) as usize;
                let patch = content(self.seed, seq, 1 + self.rng.below(128 << 10) as usize);
                if at + patch.len() > data.len() {
                    data.resize(at + patch.len(), 0);
                }
                data[at..at + patch.len()].copy_from_slice(&patch);
                let effects = vec![(name, Some((data.len(), self.ck.of(&data))))];
                self.run(effects, |_| {
                    let f = io(&path, File::open(&path, O_WRONLY, 0))?;
                    io(&path, f.pwrite_all(&patch, at as u64))?;
                    io(&path, sys::fsync(f.fd()))
                })
            }
            // Rename an existing slot over another one.
            (30..=44, Some(from)) if from != slot => {
                let moved = self.state.get(&from).copied().flatten();
                let (a, b) = (self.path(&from), self.path(&slot));
                self.run(vec![(from, None), (slot, moved)], |w| {
                    io("rename", sys::rename(&a, &b))?;
                    fsync_dir(w.dir)
                })
            }
            // Delete.
            (45..=57, Some(name)) => {
                let path = self.path(&name);
                self.run(vec![(name, None)], |w| {
                    io(&path, sys::unlink(&path))?;
                    fsync_dir(w.dir)
                })
            }
            // Replace (or create): new file, fsync, rename over the slot.
            _ => {
                let data = content(self.seed, seq, random_size(&mut self.rng));
                let tmp = self.path(&format!("tmp.{seq}"));
                let path = self.path(&slot);
                let effects = vec![(slot, Some((data.len(), self.ck.of(&data))))];
                self.run(effects, |w| {
                    let f = io(&tmp, File::open(&tmp, O_WRONLY | O_CREAT | O_EXCL, 0o644))?;
                    io(&tmp, f.write_all(&data))?;
                    io(&tmp, sys::fsync(f.fd()))?;
                    drop(f);
                    io("rename", sys::rename(&tmp, &path))?;
                    fsync_dir(w.dir)
                })
            }
        }
    }
}

fn run(dir: &str, seed: u64, boot: u64, ops: u64, check_only: bool) -> Result<i32, String> {
    let ck = Cksum::new();
    match sys::mkdir(dir, 0o755) {
        Ok(()) => fsync_dir(
            dir.rsplit_once('/')
                .map(|(p, _)| p)
                .filter(|p| !p.is_empty())
                .unwrap_or("/"),
        )?,
        Err(Errno::EEXIST) => {}
        Err(e) => return Err(format!("mkdir {dir}: {}", e.name())),
    }
    let (passed, failed, found, last_seq) = check(&ck, dir)?;
    for (name, st) in &found {
        if let Some((size, crc)) = st {
            println!("STATE {name} {size} {crc}");
        }
    }
    println!("CHECK {passed} passed, {failed} failed");
    if failed > 0 {
        return Ok(failed.min(125) as i32);
    }
    if check_only {
        return Ok(0);
    }
    let journal = restart_journal(dir, &found)?;
    let mut w = Writer {
        ck: &ck,
        dir,
        seed,
        rng: XorShift64::new(seed.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ boot.wrapping_add(1)),
        journal,
        state: found,
        // Sequence numbers keep growing across boots, so every write has distinct content.
        seq: last_seq.max(boot * 1_000_000),
        done: None,
    };
    for _ in 0..ops {
        w.step()?;
    }
    println!("crashwriter: {ops} operations done");
    Ok(0)
}

fn main(argv: &[&str]) -> i32 {
    let (mut dir, mut seed, mut boot, mut ops, mut check_only) =
        ("/dbfs/crash", 1u64, 0u64, u64::MAX, false);
    for a in argv.iter().skip(1) {
        let parsed = match split_kv(a) {
            ("dir", Some(v)) => {
                dir = v;
                Ok(())
            }
            ("seed", Some(v)) => parse_u64(v).map(|v| seed = v),
            ("boot", Some(v)) => parse_u64(v).map(|v| boot = v),
            ("ops", Some(v)) => parse_u64(v).map(|v| ops = v),
            ("check", None) => {
                check_only = true;
                Ok(())
            }
            _ => Err(Errno::EINVAL),
        };
        if parsed.is_err() {
            println!("crashwriter: bad argument {a:?}");
            println!("usage: crashwriter [dir=/dbfs/crash] [seed=N] [boot=N] [ops=N] [check]");
            return 2;
        }
    }
    println!("CRASHWRITER dir={dir} seed={seed} boot={boot}");
    match run(dir, seed, boot, ops, check_only) {
        Ok(code) => code,
        Err(e) => {
            println!("crashwriter: ERROR {e}");
            126
        }
    }
}

user_tests::entry!(main);
