//! dbfs-fuse killed with SIGKILL in the middle of writes: what fsync returned for must be there
//! after a remount, and the image must pass fsck. dbfs commits metadata operations deferred
//! (durable at the next barrier), so like a correct POSIX program the writer fsyncs the
//! directory after a rename or delete before it counts the operation as committed.
//!
//! Each round mounts the image, checks every slot file against what earlier rounds recorded,
//! starts a writer thread (replace a slot by a new file + fsync + rename, append + fsync,
//! rename a slot over another, delete), SIGKILLs the dbfs-fuse process after a random delay,
//! detaches the dead mount (`fusermount3 -u -z`) and runs `dbfs-fuse fsck`. The writer records
//! an operation as committed only once it returned; the one in flight at the kill may have
//! happened or not, atomically (an append may also be cut: FUSE splits a large write, and a
//! prefix of it may have been committed by the tool's write-back timer). `CRASH_SEED=N`
//! replays a run's operations (not its timing); `FUSE_CRASH_ROUNDS` sets the number of kills.

mod common;

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use xrand::XorShift64;

const SLOTS: u64 = 12;

/// A slot: its exact bytes, or `None` for "absent".
type Content = Option<Arc<Vec<u8>>>;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Replace,
    Append,
    Rename,
    Delete,
}

#[derive(Default)]
struct Record {
    committed: BTreeMap<String, Content>,
    /// The operation in flight: its kind and effects.
    pending: Option<(Kind, Vec<(String, Content)>)>,
    commits: usize,
    /// Every operation that returned, for the failure message.
    history: Vec<String>,
}

impl Record {
    /// The operations that touched `name`, newest last.
    fn history_of(&self, name: &str) -> String {
        let hit: Vec<&String> = self
            .history
            .iter()
            .filter(|h| h.contains(&format!(" {name}=")))
            .collect();
        hit[hit.len().saturating_sub(6)..]
            .iter()
            .map(|h| format!("\n  {h}"))
            .collect()
    }
}

fn slot(i: u64) -> String {
    format!("f{i:02}")
}

fn read_slot(dir: &Path, name: &str) -> Content {
    match fs::read(dir.join(name)) {
        Ok(d) => Some(Arc::new(d)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => panic!("read {name}: {e}"),
    }
}

fn describe(c: &Content) -> String {
    match c {
        Some(d) => format!("{} bytes, checksum {:x}", d.len(), checksum(d)),
        None => "absent".into(),
    }
}

/// Check `dir` against `rec`; afterwards `rec` holds the state found (nothing pending).
fn verify(dir: &Path, rec: &mut Record, seed: u64) {
    let found: BTreeMap<String, Content> = (0..SLOTS)
        .map(|i| (slot(i), read_slot(dir, &slot(i))))
        .collect();
    let get = |m: &BTreeMap<String, Content>, n: &str| m.get(n).cloned().flatten();
    let pending = rec.pending.take();
    let in_flight: Vec<&String> = pending
        .iter()
        .flat_map(|(_, e)| e.iter().map(|(n, _)| n))
        .collect();
    let wrong: Vec<String> = found
        .iter()
        .filter(|(name, have)| !in_flight.contains(name) && **have != get(&rec.committed, name))
        .map(|(name, have)| {
            format!(
                "{name}: found {} want {}",
                describe(have),
                describe(&get(&rec.committed, name))
            )
        })
        .collect();
    if !wrong.is_empty() {
        eprintln!(
            "seed {seed}: {} slots differ from what was committed:\n  {}",
            wrong.len(),
            wrong.join("\n  ")
        );
        if let Some(h) = rec.history.len().checked_sub(12) {
            eprintln!("last operations:\n  {}", rec.history[h..].join("\n  "));
        }
    }
    for (name, have) in &found {
        if !in_flight.contains(&name) {
            let want = get(&rec.committed, name);
            assert!(
                *have == want,
                "seed {seed}: {name} is {}, committed {}; last operations on it:{}",
                describe(have),
                describe(&want),
                rec.history_of(name)
            );
        }
    }
    if let Some((kind, effects)) = &pending {
        let old = effects
            .iter()
            .all(|(n, _)| get(&found, n) == get(&rec.committed, n));
        let new = effects.iter().all(|(n, c)| get(&found, n) == *c);
        // An append cut by the kill: a prefix of the new content, at least the old one.
        let cut_append = *kind == Kind::Append
            && effects
                .iter()
                .all(|(n, c)| match (get(&found, n), get(&rec.committed, n), c) {
                    (Some(have), Some(old), Some(new)) => {
                        have.len() >= old.len()
                            && have.len() <= new.len()
                            && have[..] == new[..have.len()]
                    }
                    _ => false,
                });
        assert!(
            old || new || cut_append,
            "seed {seed}: {kind:?} in flight is torn: {}",
            effects
                .iter()
                .map(|(n, c)| format!(
                    "{n}: found {}, new {}",
                    describe(&get(&found, n)),
                    describe(c)
                ))
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    for e in fs::read_dir(dir).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        if name.starts_with("tmp.") {
            fs::remove_file(dir.join(&name)).unwrap();
        } else {
            assert!(
                found.contains_key(&name),
                "seed {seed}: unexpected file {name}"
            );
        }
    }
    rec.committed = found;
}

/// One writer operation; `Err` once the mount is gone.
/// fsync of a directory: makes its entries durable (FUSE `fsyncdir`).
fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

fn step(dir: &Path, rec: &Mutex<Record>, rng: &mut XorShift64, seq: u64) -> std::io::Result<()> {
    let target = slot(rng.below(SLOTS));
    let present: Vec<(String, Arc<Vec<u8>>)> = {
        let r = rec.lock().unwrap();
        r.committed
            .iter()
            .filter_map(|(n, c)| c.clone().map(|c| (n.clone(), c)))
            .collect()
    };
    let pick =
        (!present.is_empty()).then(|| present[rng.below(present.len() as u64) as usize].clone());
    let roll = rng.below(100);
    let (kind, effects) = match (roll, pick) {
        (0..=19, Some((name, old))) => {
            let mut data = (*old).clone();
            data.extend(pattern(seq, 1 + rng.below(300_000) as usize));
            (Kind::Append, vec![(name, Some(Arc::new(data)))])
        }
        (20..=29, Some((name, old))) if name != target => {
            (Kind::Rename, vec![(name, None), (target, Some(old))])
        }
        (30..=39, Some((name, _))) => (Kind::Delete, vec![(name, None)]),
        _ => {
            let bound = if rng.below(4) == 0 { 3 << 20 } else { 200_000 };
            let size = 4096 + rng.below(bound) as usize;
            (
                Kind::Replace,
                vec![(target, Some(Arc::new(pattern(seq, size))))],
            )
        }
    };
    rec.lock().unwrap().pending = Some((kind, effects.clone()));
    match kind {
        Kind::Replace => {
            let tmp = dir.join(format!("tmp.{seq}"));
            let mut f = File::create(&tmp)?;
            f.write_all(effects[0].1.as_ref().unwrap())?;
            f.sync_all()?;
            drop(f);
            fs::rename(&tmp, dir.join(&effects[0].0))?;
            sync_dir(dir)?;
        }
        Kind::Append => {
            let path = dir.join(&effects[0].0);
            let old_len = rec.lock().unwrap().committed[&effects[0].0]
                .as_ref()
                .map_or(0, |d| d.len());
            let mut f = OpenOptions::new().append(true).open(&path)?;
            f.write_all(&effects[0].1.as_ref().unwrap()[old_len..])?;
            f.sync_all()?;
        }
        Kind::Rename => {
            fs::rename(dir.join(&effects[0].0), dir.join(&effects[1].0))?;
            sync_dir(dir)?;
        }
        Kind::Delete => {
            fs::remove_file(dir.join(&effects[0].0))?;
            sync_dir(dir)?;
        }
    }
    let mut r = rec.lock().unwrap();
    r.pending = None;
    r.commits += 1;
    let what: String = effects
        .iter()
        .map(|(n, c)| format!(" {n}={}", describe(c)))
        .collect();
    r.history.push(format!("{seq} {kind:?}{what}"));
    for (n, c) in effects {
        r.committed.insert(n, c);
    }
    Ok(())
}

fn fsck(image: &Path, seed: u64) {
    let out = run(Command::new(BIN).arg("fsck").arg(image));
    assert!(
        out.status.success(),
        "seed {seed}: fsck after the kill: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn sigkill_during_writes_keeps_what_fsync_returned_for() {
    if !fuse_available() {
        return;
    }
    let seed = std::env::var("CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .subsec_nanos() as u64
                | 1
        });
    let rounds: u64 = std::env::var("FUSE_CRASH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(40);
    eprintln!("fuse crash test: seed {seed} (replay with CRASH_SEED={seed}), {rounds} kills");
    let tmp = tempfile::Builder::new()
        .prefix("dbfs-fuse-crash-")
        .tempdir()
        .unwrap();
    let image = tmp.path().join("dbfs.img");
    mkfs(&image, "256M");
    let mnt: PathBuf = tmp.path().join("mnt");
    let mut rng = XorShift64::new(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut rec = Record::default();
    let (mut in_flight, mut seq) = (0, 0u64);
    let start = Instant::now();
    for round in 0..rounds {
        let m = Mounted::new(&image, &mnt, "", Duration::from_secs(60));
        let dir = m.path("");
        verify(&dir, &mut rec, seed);
        let shared = Arc::new(Mutex::new(std::mem::take(&mut rec)));
        let stop = Arc::new(AtomicBool::new(false));
        // The writer reaches the mount through an open directory descriptor: once the dead
        // mount is detached (`fusermount3 -u -z` below), a path under the mountpoint would
        // resolve to the empty directory underneath, where a whole replace could "succeed"
        // after the kill; through the descriptor every call fails with ENOTCONN instead.
        let dir_handle = File::open(&dir).expect("open the mount's root directory");
        let via_fd = PathBuf::from(format!("/proc/self/fd/{}", dir_handle.as_raw_fd()));
        let writer = {
            let (shared, stop, dir) = (shared.clone(), stop.clone(), via_fd.clone());
            let mut wrng = XorShift64::new(rng.below(u64::MAX) | 1);
            let first = seq;
            std::thread::spawn(move || {
                let mut s = first;
                while !stop.load(Ordering::Relaxed) {
                    s += 1;
                    if step(&dir, &shared, &mut wrng, s).is_err() {
                        break;
                    }
                }
                s
            })
        };
        std::thread::sleep(Duration::from_millis(20 + rng.below(1200)));
        let pid = m.pid();
        assert!(pid != 0);
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
        let _ = Command::new("fusermount3")
            .arg("-u")
            .arg("-z")
            .arg(&m.mnt)
            .status();
        // The writer sees ENOTCONN and stops; stop it anyway if it is between operations.
        stop.store(true, Ordering::Relaxed);
        seq = writer.join().expect("writer thread");
        drop(dir_handle);
        drop(m);
        rec = Arc::try_unwrap(shared)
            .ok()
            .expect("writer gone")
            .into_inner()
            .unwrap();
        in_flight += usize::from(rec.pending.is_some());
        fsck(&image, seed);
        eprintln!(
            "round {round}: {} commits so far, in flight at the kill: {}",
            rec.commits,
            rec.pending.is_some()
        );
    }
    // A last mount checks the final state and unmounts cleanly.
    let m = Mounted::new(&image, &mnt, "", Duration::from_secs(60));
    verify(&m.path(""), &mut rec, seed);
    assert!(m.unmount(), "clean unmount");
    fsck(&image, seed);
    assert!(rec.commits > 0, "the writer committed nothing");
    eprintln!(
        "fuse crash test: {rounds} kills ({in_flight} with an operation in flight), {} commits, {:?}",
        rec.commits,
        start.elapsed()
    );
}
