//! `crashwriter [dir=/dbfs/crash] [seed=N] [boot=N] [ops=N] [writers=N] [check]`: the guest
//! side of the crash test (`make test-crash`, `tests/crash.sh`).
//!
//! With `writers=N` (N > 1), N processes do all of what follows at once, writer K in
//! `DIR/wK` with a seed of its own, pinned to hart K (modulo the harts there are), each of its
//! console lines beginning with `wK `; the host checks each writer's lines against its
//! directory.
//!
//! Every boot first checks what the previous boots committed, then writes until the host kills
//! QEMU (or `ops` operations are done; `check` stops after the check).
//!
//! # What is written
//! Sixteen file slots `f00`..`f15` in DIR. Each operation is one of:
//! - replace: write a new file `tmp.SEQ` (4 KiB .. 3 MiB of bytes derived from seed and SEQ),
//!   fsync it, rename it over `fNN`, fsync DIR;
//! - append / patch: one `write` (O_APPEND) or one `pwrite` into an existing slot, then fsync;
//! - rename `fA` over `fB`, fsync DIR; delete `fNN`, fsync DIR;
//! - mmap-patch: open a slot O_RDWR, map it `MAP_SHARED` (the whole file or just the pages to
//!   change), store 1..4 runs of up to 64 KiB at random places inside the file;
//! - mmap-extend: the same after `ftruncate` grew the slot by up to 256 KiB, with one run
//!   stored into the new part (the rest of it stays zero).
//!
//! An mmap operation makes its stores durable in one of three ways, chosen at random:
//! `msync(MS_SYNC)`; `fsync` of the descriptor while mapped; or munmap (the file's last
//! mapping goes, so its dirty pages are written back) then `fsync`. After msync or fsync the
//! mapping and the descriptor are kept, as a program that goes on working in its mapping
//! would, until the next mmap operation begins; meanwhile the other operations may write,
//! rename or delete that file. Keeping them matters to the test: were the munmap and close
//! right behind, their write-back and commit would make the stores durable at the next
//! barrier (the next operation's journal fsync) even if msync or fsync had not, and a kill
//! would have to land in that short gap to see it.
//!
//! Before it stores, an mmap operation reads the whole mapping and compares it with the
//! file's content (zeros past the end): a difference is an error (exit 126; the host fails on
//! the `crashwriter: ERROR` line). When the mapping covers the last page of a file whose size
//! is not a multiple of 4096, the bytes past the end in that page are stored to as well: they
//! must never reach the file (the expected content does not have them).
//!
//! Weights: append 20 %, patch 10 %, rename 15 %, delete 13 %, mmap-patch 12 %, mmap-extend
//! 8 %, replace the rest (and whenever no slot exists).
//!
//! dbfs commits a rename or unlink atomically but durably only at the next barrier (fsync of
//! any file or directory, sync, the write-back timer), so like a correct POSIX program the
//! writer fsyncs the directory before it counts such an operation as committed.
//!
//! # What is promised, and how it is checked
//! Before an operation, its kind is printed as `OP SEQ KIND details` and its effects
//! (`name=SIZE:CRC` or `name=-` for "absent"; CRC is the POSIX `cksum` CRC, so the host can
//! check with `cksum`) as `INTENT SEQ ...`, and the effects are appended to DIR/journal
//! (fsync'd); after it returned, they are printed as
//! `COMMITTED SEQ ...`, and a `C SEQ` line joins the journal with the next intent. The console is
//! synchronous: a `COMMITTED` line the host saw means the operation was durable. At the next
//! boot every slot must hold exactly its last committed state, except the slots of the last
//! operation journaled without its `C` line, which must all hold their old state or all
//! their new state (the host checks that operation exactly from the console).
//!
//! An mmap operation in flight at the kill is checked the same way, and that is what dbfs
//! really guarantees here: stores into a shared mapping reach dbfs only through `write_at` of
//! the dirty pages, all of them inside one system call (msync, fsync or munmap: the kernel is
//! not preempted inside a system call, and its write-back timer runs only between them),
//! into dbfs's write-back cache. An operation dirties at most 256 KiB plus its pages'
//! rounding, far below dbfs's dirty limit, so they all stay in the cache until the fsync
//! (of msync, of fsync, or after munmap) commits the cache in one transaction, made durable
//! by its closing barrier; nothing else commits them meanwhile (the timer commits buffered
//! data 5 s old). So mmap-patch is all old or all new, never page by page. (Past the dirty
//! limit, or with the kernel's `dbfs_dirty_mib=0`, the cache would commit part of the pages
//! on its own, deferred, and the barrier a durable fsync begins with could make that part
//! durable alone: the promise would then be each `write_at`, each page, all old or all new.)
//! mmap-extend has one durable halfway state besides: its `ftruncate` is a metadata
//! commit of its own, deferred (durable at the next barrier), and the next barrier comes
//! before the stores' commit: the fsync (or msync) that makes the stores durable begins with
//! the barrier its deferred predecessors need (`Db::begin_write_durable`), then commits the
//! buffered pages and ends with a second barrier (the write-back timer, 5 s after the
//! ftruncate, would do the same). A kill between the two finds the file grown with zeros and
//! none of the stores. Its effect is printed `name=NEW|MID` (MID: the old
//! content followed by zeros); the slot must hold OLD, MID or NEW. The `COMMITTED` line gives
//! NEW only.
//!
//! The result is printed as `STATE name SIZE CRC` per present slot and `CHECK N passed, N
//! failed`; then the journal is replaced (new file, fsync, rename) by the state found, and
//! `tmp.*` leftovers are removed.
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

/// Which writer this process is when `writers=N` runs several (`NO_WRITER`: the only one);
/// its console lines then begin with `wK ` (see [`say`]).
static WRITER: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(NO_WRITER);
const NO_WRITER: u32 = u32::MAX;

/// A console line of this writer: `println!`, after `wK ` when several writers run.
macro_rules! say {
    ($($arg:tt)*) => {{
        match WRITER.load(core::sync::atomic::Ordering::Relaxed) {
            NO_WRITER => println!($($arg)*),
            k => println!("w{} {}", k, format_args!($($arg)*)),
        }
    }};
}

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

/// What an operation does to one slot: its state once the operation returned, and for an
/// operation that may leave a durable halfway state (mmap-extend: grown, stores not yet
/// written back) that state too.
#[derive(Clone)]
struct Effect {
    name: String,
    new: State,
    mid: Option<State>,
}

fn effect(name: String, new: State) -> Effect {
    Effect {
        name,
        new,
        mid: None,
    }
}

/// ` name=NEW` per effect, or ` name=NEW|MID` with `with_mid` for one that has a halfway state
/// (INTENT lines and the journal's intents; COMMITTED lines give the new state only).
fn fmt_effects(effects: &[Effect], with_mid: bool) -> String {
    let mut s = String::new();
    for e in effects {
        s.push(' ');
        s.push_str(&e.name);
        s.push('=');
        s.push_str(&fmt_state(e.new));
        if let (true, Some(mid)) = (with_mid, e.mid) {
            s.push('|');
            s.push_str(&fmt_state(mid));
        }
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
    pending: Option<Vec<Effect>>,
    last_seq: u64,
}

fn replay(text: &str) -> Result<Replay, String> {
    let mut r = Replay {
        committed: BTreeMap::new(),
        pending: None,
        last_seq: 0,
    };
    let mut intents: BTreeMap<u64, Vec<Effect>> = BTreeMap::new();
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
                    let (new, mid) = match st.split_once('|') {
                        Some((new, mid)) => (new, Some(parse_state(mid).ok_or_else(bad)?)),
                        None => (st, None),
                    };
                    list.push(Effect {
                        name: String::from(name),
                        new: parse_state(new).ok_or_else(bad)?,
                        mid,
                    });
                }
                intents.insert(seq, list);
                r.last_seq = r.last_seq.max(seq);
            }
            ["C", seq] => {
                let seq = parse_u64(seq).map_err(|_| bad())?;
                for e in intents.remove(&seq).ok_or_else(bad)? {
                    r.committed.insert(e.name, e.new);
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
    let in_flight: Vec<&String> = r.pending.iter().flatten().map(|e| &e.name).collect();
    for (name, actual) in &found {
        if in_flight.contains(&name) {
            continue;
        }
        let want = r.committed.get(name).copied().flatten();
        if *actual == want {
            passed += 1;
        } else {
            failed += 1;
            say!(
                "CHECK FAILED {name}: found {} committed {}",
                fmt_state(*actual),
                fmt_state(want)
            );
        }
    }
    // The in-flight operation: all old, all new, or (an operation with a halfway state) all
    // halfway.
    if let Some(effects) = &r.pending {
        let holds = |e: &Effect| found.get(&e.name).copied().flatten();
        let old = effects
            .iter()
            .all(|e| holds(e) == r.committed.get(&e.name).copied().flatten());
        let new = effects.iter().all(|e| holds(e) == e.new);
        let mid = effects.iter().all(|e| e.mid == Some(holds(e)));
        if old || new || mid {
            passed += 1;
            say!(
                "CHECK in-flight operation:{} {}",
                fmt_effects(effects, true),
                if new {
                    "applied"
                } else if old {
                    "not applied"
                } else {
                    "halfway"
                }
            );
        } else {
            failed += 1;
            say!(
                "CHECK FAILED in-flight operation torn:{}",
                fmt_effects(effects, true)
            );
            for e in effects {
                say!("  {}: found {}", e.name, fmt_state(holds(e)));
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
            say!("CHECK FAILED unexpected file {dir}/{}", e.name);
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
    /// The mapping (and descriptor) of the last mmap operation synced by msync or fsync,
    /// kept until the next mmap operation begins.
    held: Option<(sys::Mapping, File)>,
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
        what: &str,
        effects: Vec<Effect>,
        op: impl FnOnce(&Self) -> Result<(), String>,
    ) -> Result<(), String> {
        let e = fmt_effects(&effects, true);
        let done = self
            .done
            .take()
            .map(|s| format!("C {s}\n"))
            .unwrap_or_default();
        self.journal.append(&format!("{done}I {}{e}\n", self.seq))?;
        say!("OP {} {what}", self.seq);
        say!("INTENT {}{e}", self.seq);
        op(self)?;
        say!("COMMITTED {}{}", self.seq, fmt_effects(&effects, false));
        self.done = Some(self.seq);
        for e in effects {
            self.state.insert(e.name, e.new);
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
                let effects = vec![effect(name, Some((data.len(), self.ck.of(&data))))];
                self.run("append", effects, |_| {
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
                let effects = vec![effect(name, Some((data.len(), self.ck.of(&data))))];
                self.run("patch", effects, |_| {
                    let f = io(&path, File::open(&path, O_WRONLY, 0))?;
                    io(&path, f.pwrite_all(&patch, at as u64))?;
                    io(&path, sys::fsync(f.fd()))
                })
            }
            // Rename an existing slot over another one.
            (30..=44, Some(from)) if from != slot => {
                let moved = self.state.get(&from).copied().flatten();
                let (a, b) = (self.path(&from), self.path(&slot));
                self.run(
                    "rename",
                    vec![effect(from, None), effect(slot, moved)],
                    |w| {
                        io("rename", sys::rename(&a, &b))?;
                        fsync_dir(w.dir)
                    },
                )
            }
            // Delete.
            (45..=57, Some(name)) => {
                let path = self.path(&name);
                self.run("delete", vec![effect(name, None)], |w| {
                    io(&path, sys::unlink(&path))?;
                    fsync_dir(w.dir)
                })
            }
            // Stores through a shared mapping, inside the file or (mmap-extend) into pages
            // ftruncate just added.
            (58..=77, Some(name)) => {
                // The last one's mapping goes first (its write-back rewrites what it synced).
                if let Some((m, f)) = self.held.take() {
                    unmap(m)?;
                    drop(f);
                }
                let path = self.path(&name);
                let data = read_file(&path)?.ok_or_else(|| format!("{path} vanished"))?;
                let grow = kind >= 70 || data.is_empty();
                let (plan, effects) = self.plan_mmap(seq, name, data, grow);
                let mut kept = None;
                self.run(&plan.describe(), effects, |_| {
                    kept = mmap_op(&path, &plan)?;
                    Ok(())
                })?;
                self.held = kept;
                Ok(())
            }
            // Replace (or create): new file, fsync, rename over the slot.
            _ => {
                let data = content(self.seed, seq, random_size(&mut self.rng));
                let tmp = self.path(&format!("tmp.{seq}"));
                let path = self.path(&slot);
                let effects = vec![effect(slot, Some((data.len(), self.ck.of(&data))))];
                self.run("replace", effects, |w| {
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

    /// An mmap operation on slot `name`, whose content is `data`: a few stores of up to 64 KiB
    /// at random places inside the file (mmap-patch), or, with `grow`, ftruncate by up to
    /// 256 KiB and one store into the new part (mmap-extend). The mapping covers the whole
    /// file or only the stored pages; when it covers the last page of a file whose size is
    /// not a multiple of the page, the bytes past the end are scribbled over too (they must
    /// never reach the file).
    fn plan_mmap(
        &mut self,
        seq: u64,
        name: String,
        mut data: Vec<u8>,
        grow: bool,
    ) -> (MmapPlan, Vec<Effect>) {
        let old_size = data.len();
        let (size, mid) = if grow {
            let size = old_size + 1 + self.rng.below(256 << 10) as usize;
            data.resize(size, 0);
            (size, Some(Some((size, self.ck.of(&data)))))
        } else {
            (old_size, None)
        };
        let before = data.clone();
        // Where the stores go: [from, size) is the new part, or the whole file.
        let from = if grow { old_size } else { 0 };
        let count = if grow { 1 } else { 1 + self.rng.below(4) };
        let mut stores = Vec::new();
        for _ in 0..count {
            let at = from + self.rng.below((size - from) as u64) as usize;
            let len = 1 + self.rng.below((size - at).min(64 << 10) as u64) as usize;
            stores.push((at, len));
        }
        let bytes = content(self.seed, seq, stores.iter().map(|s| s.1).sum());
        let mut taken = 0;
        let stores: Vec<(usize, Vec<u8>)> = stores
            .into_iter()
            .map(|(at, len)| {
                let b = bytes[taken..taken + len].to_vec();
                taken += len;
                data[at..at + len].copy_from_slice(&b);
                (at, b)
            })
            .collect();
        let whole = self.rng.below(2) == 0;
        let (map_off, map_end) = if whole {
            (0, page_ceil(size))
        } else {
            let lo = stores.iter().map(|s| s.0).min().unwrap_or(from);
            let hi = stores.iter().map(|s| s.0 + s.1.len()).max().unwrap_or(size);
            (lo / PAGE * PAGE, page_ceil(hi))
        };
        let scribble = (size % PAGE != 0 && map_end == page_ceil(size))
            .then(|| (size, page_ceil(size) - size));
        let durable = match self.rng.below(3) {
            0 => Durable::Msync,
            1 => Durable::Fsync,
            _ => Durable::Munmap,
        };
        let plan = MmapPlan {
            grow_to: grow.then_some(size),
            before,
            map_off,
            map_len: map_end - map_off,
            stores,
            scribble,
            durable,
        };
        let effects = vec![Effect {
            name,
            new: Some((size, self.ck.of(&data))),
            mid,
        }];
        (plan, effects)
    }
}

// ---------------------------------------------------------------- mmap operations

const PAGE: usize = 4096;

fn page_ceil(n: usize) -> usize {
    n.div_ceil(PAGE) * PAGE
}

/// How an mmap operation makes its stores durable before it counts as committed.
#[derive(Clone, Copy)]
enum Durable {
    /// msync(MS_SYNC) of the whole mapping; the mapping stays.
    Msync,
    /// fsync of the descriptor while the file is mapped; the mapping stays.
    Fsync,
    /// munmap (the last mapping of the file goes: its dirty pages are written back), then
    /// fsync of the descriptor.
    Munmap,
}

struct MmapPlan {
    /// ftruncate to this size first (mmap-extend).
    grow_to: Option<usize>,
    /// The file's content just before the stores (after the ftruncate): what the mapping
    /// must show first, zeros past the end.
    before: Vec<u8>,
    /// The mapping: file offset (page-aligned) and length.
    map_off: usize,
    map_len: usize,
    /// (file offset, bytes) stored through the mapping, in order.
    stores: Vec<(usize, Vec<u8>)>,
    /// (file offset, length) past the end of the file inside its last page, stored to.
    scribble: Option<(usize, usize)>,
    durable: Durable,
}

impl MmapPlan {
    /// The `OP` line's words after the sequence number.
    fn describe(&self) -> String {
        let kind = if self.grow_to.is_some() {
            "mmap-extend"
        } else {
            "mmap-patch"
        };
        let durable = match self.durable {
            Durable::Msync => "msync",
            Durable::Fsync => "fsync",
            Durable::Munmap => "munmap+fsync",
        };
        let bytes: usize = self.stores.iter().map(|s| s.1.len()).sum();
        format!(
            "{kind} sync={durable} map={}+{} stores={} bytes={bytes} past_eof={}",
            self.map_off,
            self.map_len,
            self.stores.len(),
            self.scribble.map_or(0, |s| s.1)
        )
    }
}

fn unmap(m: sys::Mapping) -> Result<(), String> {
    let r = sys::munmap(m.addr(), m.len());
    m.forget();
    io("munmap", r)
}

/// Do `plan`; returns the mapping and its descriptor when they are to be kept.
fn mmap_op(path: &str, plan: &MmapPlan) -> Result<Option<(sys::Mapping, File)>, String> {
    let f = io(path, File::open(path, O_RDWR, 0))?;
    if let Some(size) = plan.grow_to {
        io("ftruncate", sys::ftruncate(f.fd(), size as u64))?;
    }
    let m = io(
        "mmap",
        sys::mmap(
            0,
            plan.map_len,
            PROT_READ | PROT_WRITE,
            MAP_SHARED,
            f.fd(),
            plan.map_off as u64,
        ),
    )?;
    // Before storing, the mapping must show the file: loaded by page faults (clusters,
    // fault-around), not written through, zeros past the end in the last page.
    for i in 0..plan.map_len {
        let want = plan.before.get(plan.map_off + i).copied().unwrap_or(0);
        let got = m.get(i);
        if got != want {
            return Err(format!(
                "{path}: the mapping shows {got:#04x} at byte {}, the file holds {want:#04x}",
                plan.map_off + i
            ));
        }
    }
    for (at, bytes) in &plan.stores {
        m.write(at - plan.map_off, bytes);
    }
    if let Some((at, n)) = plan.scribble {
        for k in 0..n {
            m.set(at - plan.map_off + k, 0x80 | k as u8);
        }
    }
    match plan.durable {
        Durable::Msync => io("msync", sys::msync(m.addr(), m.len(), MS_SYNC))?,
        Durable::Fsync => io("fsync", sys::fsync(f.fd()))?,
        Durable::Munmap => {
            unmap(m)?;
            io("fsync", sys::fsync(f.fd()))?;
            return Ok(None);
        }
    }
    Ok(Some((m, f)))
}

/// Create `dir` (and make its name durable) unless it exists.
fn make_dir(dir: &str) -> Result<(), String> {
    match sys::mkdir(dir, 0o755) {
        Ok(()) => fsync_dir(
            dir.rsplit_once('/')
                .map(|(p, _)| p)
                .filter(|p| !p.is_empty())
                .unwrap_or("/"),
        ),
        Err(Errno::EEXIST) => Ok(()),
        Err(e) => Err(format!("mkdir {dir}: {}", e.name())),
    }
}

fn run(dir: &str, seed: u64, boot: u64, ops: u64, check_only: bool) -> Result<i32, String> {
    let ck = Cksum::new();
    make_dir(dir)?;
    let (passed, failed, found, last_seq) = check(&ck, dir)?;
    for (name, st) in &found {
        if let Some((size, crc)) = st {
            say!("STATE {name} {size} {crc}");
        }
    }
    say!("CHECK {passed} passed, {failed} failed");
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
        held: None,
    };
    for _ in 0..ops {
        w.step()?;
    }
    say!("crashwriter: {ops} operations done");
    Ok(0)
}

/// `writers` processes, each [`run`] in its own directory `DIR/wK` with its own seed, pinned
/// to hart K (modulo the harts it may use); the exit status is the first failing writer's.
fn run_writers(
    dir: &str,
    writers: u32,
    seed: u64,
    boot: u64,
    ops: u64,
    check_only: bool,
) -> Result<i32, String> {
    make_dir(dir)?;
    let harts = online_harts();
    let mut pids = Vec::new();
    for k in 0..writers {
        let pid = io("fork", sys::fork())?;
        if pid == 0 {
            WRITER.store(k, core::sync::atomic::Ordering::Relaxed);
            if let Some(&h) = harts.get(k as usize % harts.len().max(1)) {
                pin_to(h);
            }
            let sub = format!("{dir}/w{k}");
            let code = match run(
                &sub,
                seed ^ ((u64::from(k) + 1) << 40),
                boot,
                ops,
                check_only,
            ) {
                Ok(code) => code,
                Err(e) => {
                    say!("crashwriter: ERROR {e}");
                    126
                }
            };
            sys::exit(code);
        }
        pids.push(pid);
    }
    let mut status = 0;
    for pid in pids {
        let (_, st) = io("wait4", sys::waitpid(pid))?;
        let code = if st.exited() { st.exit_code() } else { 126 };
        if status == 0 {
            status = code;
        }
    }
    Ok(status)
}

/// The harts this process may run on (sched_getaffinity), in order.
fn online_harts() -> Vec<usize> {
    let mut mask = 0u64;
    // SAFETY: `mask` is an 8-byte cpu mask, the size passed.
    let r = unsafe {
        user_tests::raw::syscall3(
            user_tests::abi::syscall::SYS_SCHED_GETAFFINITY,
            0,
            8,
            &mut mask as *mut u64 as usize,
        )
    };
    if r < 0 {
        return Vec::new();
    }
    (0..64).filter(|h| mask & (1 << h) != 0).collect()
}

/// Run this process on hart `h` only (sched_setaffinity; a failure leaves it unpinned).
fn pin_to(h: usize) {
    let mask = 1u64 << h;
    // SAFETY: `mask` is an 8-byte cpu mask, the size passed.
    unsafe {
        user_tests::raw::syscall3(
            user_tests::abi::syscall::SYS_SCHED_SETAFFINITY,
            0,
            8,
            &mask as *const u64 as usize,
        );
    }
}

fn main(argv: &[&str]) -> i32 {
    let (mut dir, mut seed, mut boot, mut ops, mut check_only) =
        ("/dbfs/crash", 1u64, 0u64, u64::MAX, false);
    let mut writers = 1u32;
    for a in argv.iter().skip(1) {
        let parsed = match split_kv(a) {
            ("dir", Some(v)) => {
                dir = v;
                Ok(())
            }
            ("seed", Some(v)) => parse_u64(v).map(|v| seed = v),
            ("boot", Some(v)) => parse_u64(v).map(|v| boot = v),
            ("ops", Some(v)) => parse_u64(v).map(|v| ops = v),
            ("writers", Some(v)) => parse_u64(v)
                .ok()
                .filter(|&n| (1..=64).contains(&n))
                .map(|n| writers = n as u32)
                .ok_or(Errno::EINVAL),
            ("check", None) => {
                check_only = true;
                Ok(())
            }
            _ => Err(Errno::EINVAL),
        };
        if parsed.is_err() {
            say!("crashwriter: bad argument {a:?}");
            say!(
                "usage: crashwriter [dir=/dbfs/crash] [seed=N] [boot=N] [ops=N] [writers=N] [check]"
            );
            return 2;
        }
    }
    say!("CRASHWRITER dir={dir} seed={seed} boot={boot} writers={writers}");
    let r = if writers > 1 {
        run_writers(dir, writers, seed, boot, ops, check_only)
    } else {
        run(dir, seed, boot, ops, check_only)
    };
    match r {
        Ok(code) => code,
        Err(e) => {
            say!("crashwriter: ERROR {e}");
            126
        }
    }
}

user_tests::entry!(main);
