//! System V semaphore sets (`semget`, `semop`/`semtimedop`, `semctl`): the sets by id, each an
//! array of counters (0..=SEMVMX), and the processes' `SEM_UNDO` adjustments.
//!
//! `semop` applies its whole list of operations or none: a list that cannot complete now
//! (a decrement below zero, a wait for zero on a counter that is not) sleeps on the set's
//! [`WaitQueue`] with the table lock dropped (no wake-up is lost: kernel code is not
//! preempted between the check and the sleep) and tries again when anything changes the set;
//! while it sleeps it counts in the `semncnt`/`semzcnt` of the counter that stopped it. A
//! removed set wakes its sleepers with EIDRM, a signal with EINTR, the deadline of
//! `semtimedop` with EAGAIN.
//!
//! `SEM_UNDO` keeps, per process and set, what to add to each counter when the process exits
//! (the opposite of its operations); `SETVAL`/`SETALL` clear it for the counters they set, as
//! Linux does. A forked child starts with none.
//!
//! Keys, ids and permissions are `sysv`'s. Lock order: the table lock is a leaf.

use alloc::collections::BTreeMap;
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;

use abi::Errno;

use super::sysv::{IpcObject, Perm, Registry, IPC64_PERM_SIZE, IPC_NOWAIT};
use crate::sync::Mutex;
use crate::task::cred::{Cred, MAY_READ, MAY_WRITE};
use crate::task::wait::WaitQueue;

/// Most counters per set (/proc/sys/kernel/sem, first field).
pub const SEMMSL: usize = 32000;
/// Most counters of all sets (second field).
pub const SEMMNS: usize = 1_024_000_000;
/// Most operations per semop (third field).
pub const SEMOPM: usize = 500;
/// Most sets (fourth field).
pub const SEMMNI: usize = 32000;
/// Largest counter value.
pub const SEMVMX: i32 = 32767;
/// semop flag: undo the operation when the process exits.
pub const SEM_UNDO: i16 = 0x1000;

#[derive(Clone, Copy, Default)]
struct Counter {
    value: i32,
    /// The last process that changed it (GETPID).
    pid: usize,
    /// Sleepers waiting for it to grow / to be zero (GETNCNT / GETZCNT).
    ncnt: usize,
    zcnt: usize,
}

/// One set: its counters and what `IPC_STAT` reports.
pub struct SemSet {
    perm: Perm,
    counters: Vec<Counter>,
    otime: u64,
    ctime: u64,
    waiters: Arc<WaitQueue>,
}

impl IpcObject for SemSet {
    fn perm(&self) -> &Perm {
        &self.perm
    }
    fn perm_mut(&mut self) -> &mut Perm {
        &mut self.perm
    }
}

/// One operation of a semop list (`struct sembuf`).
#[derive(Clone, Copy, Debug)]
pub struct SemOp {
    pub num: u16,
    pub op: i16,
    pub flags: i16,
}

struct Table {
    sets: Registry<SemSet>,
    /// Counters in all sets (at most SEMMNS).
    counters: usize,
    /// SEM_UNDO adjustments: pid -> set id -> one per counter.
    undo: BTreeMap<usize, BTreeMap<i32, Vec<i32>>>,
}

static TABLE: Mutex<Table> = Mutex::new(Table {
    sets: Registry::new(SEMMNI),
    counters: 0,
    undo: BTreeMap::new(),
});

/// `semget`: the id of the set of `key`, made with `nsems` counters (all 0) when the key is
/// `IPC_PRIVATE` or `IPC_CREAT` asks for it.
pub fn get(key: i32, nsems: i32, flags: u32, cred: &Cred) -> Result<i32, Errno> {
    let nsems = usize::try_from(nsems).map_err(|_| Errno::EINVAL)?;
    if nsems > SEMMSL {
        return Err(Errno::EINVAL);
    }
    let mut t = TABLE.lock();
    let room = SEMMNS - t.counters;
    let before = t.sets.len();
    let id = t.sets.get_or_create(
        key,
        flags,
        cred,
        |set| {
            if nsems > set.counters.len() {
                return Err(Errno::EINVAL);
            }
            Ok(())
        },
        |perm| {
            if nsems == 0 {
                return Err(Errno::EINVAL);
            }
            if nsems > room {
                return Err(Errno::ENOSPC);
            }
            Ok(SemSet {
                perm,
                counters: vec![Counter::default(); nsems],
                otime: 0,
                ctime: super::sysv::now_secs(),
                waiters: Arc::new(WaitQueue::new()),
            })
        },
    )?;
    if t.sets.len() > before {
        t.counters += nsems;
    }
    Ok(id)
}

/// What one try of a semop list found.
enum Try {
    Done,
    /// Blocked by counter `num`: waiting for it to grow (`zero` false) or to be zero.
    Blocked {
        num: usize,
        zero: bool,
    },
}

/// Apply `ops` to `set` if all of them can be applied now; record SEM_UNDO in `undo`.
fn try_ops(set: &mut SemSet, ops: &[SemOp], undo: &mut Vec<i32>, pid: usize) -> Result<Try, Errno> {
    let mut values: Vec<i32> = set.counters.iter().map(|c| c.value).collect();
    let mut adjust = undo.clone();
    for o in ops {
        let n = o.num as usize;
        let v = values[n];
        let op = o.op as i32;
        if op == 0 {
            if v != 0 {
                return Ok(Try::Blocked { num: n, zero: true });
            }
            continue;
        }
        if v + op < 0 {
            return Ok(Try::Blocked {
                num: n,
                zero: false,
            });
        }
        if v + op > SEMVMX {
            return Err(Errno::ERANGE);
        }
        if o.flags & SEM_UNDO != 0 {
            let a = adjust[n] - op;
            if !(-SEMVMX - 1..=SEMVMX).contains(&a) {
                return Err(Errno::ERANGE);
            }
            adjust[n] = a;
        }
        values[n] = v + op;
    }
    for o in ops {
        set.counters[o.num as usize].pid = pid;
    }
    for (c, v) in set.counters.iter_mut().zip(values) {
        c.value = v;
    }
    *undo = adjust;
    set.otime = super::sysv::now_secs();
    Ok(Try::Done)
}

/// `semop`/`semtimedop`: apply `ops` (each `num` checked against the set: EFBIG) atomically,
/// sleeping until they can be applied, at most until `deadline` (monotonic ns; EAGAIN).
pub fn semop(
    id: i32,
    cred: &Cred,
    pid: usize,
    ops: &[SemOp],
    deadline: Option<u64>,
) -> Result<(), Errno> {
    let alter = ops.iter().any(|o| o.op != 0);
    let nowait = ops.iter().any(|o| o.flags as u32 & IPC_NOWAIT != 0);
    let wants_undo = ops.iter().any(|o| o.flags & SEM_UNDO != 0);
    let mut sleeping_on: Option<(usize, bool)> = None;
    loop {
        let (waiters, outcome) = {
            let mut t = TABLE.lock();
            let t = &mut *t;
            let set = match t.sets.get_mut(id) {
                Err(_) if sleeping_on.is_some() => return Err(Errno::EIDRM),
                r => r?,
            };
            if let Some(on) = sleeping_on.take() {
                uncount(set, on);
            }
            let nsems = set.counters.len();
            if ops.iter().any(|o| o.num as usize >= nsems) {
                return Err(Errno::EFBIG);
            }
            if !set
                .perm
                .allows(cred, if alter { MAY_WRITE } else { MAY_READ })
            {
                return Err(Errno::EACCES);
            }
            let mut undo = if wants_undo {
                t.undo
                    .get(&pid)
                    .and_then(|u| u.get(&id))
                    .cloned()
                    .unwrap_or_else(|| vec![0; nsems])
            } else {
                vec![0; nsems]
            };
            let outcome = try_ops(set, ops, &mut undo, pid)?;
            match outcome {
                Try::Done => {
                    if wants_undo {
                        t.undo.entry(pid).or_default().insert(id, undo);
                    }
                }
                Try::Blocked { num, zero } if !nowait => {
                    let c = &mut set.counters[num];
                    if zero {
                        c.zcnt += 1;
                    } else {
                        c.ncnt += 1;
                    }
                    sleeping_on = Some((num, zero));
                }
                Try::Blocked { .. } => {}
            }
            (set.waiters.clone(), outcome)
        };
        match outcome {
            Try::Done => {
                if alter {
                    waiters.wake_all();
                }
                return Ok(());
            }
            Try::Blocked { .. } if nowait => return Err(Errno::EAGAIN),
            Try::Blocked { .. } => {}
        }
        let stop = if crate::task::signal::pending() {
            Some(Errno::EINTR)
        } else if deadline.is_some_and(|d| crate::arch::time::monotonic_ns() >= d) {
            Some(Errno::EAGAIN)
        } else {
            waiters.sleep_until(deadline);
            None
        };
        if let Some(e) = stop {
            leave_wait(id, sleeping_on.take());
            return Err(e);
        }
    }
}

/// A sleeper gives up: take it out of the `semncnt`/`semzcnt` it counted in.
fn leave_wait(id: i32, on: Option<(usize, bool)>) {
    let Some((num, zero)) = on else { return };
    if let Ok(set) = TABLE.lock().sets.get_mut(id) {
        uncount(set, (num, zero));
    }
}

/// Take a sleeper that waited on counter `num` (for zero, or to grow) out of its count.
fn uncount(set: &mut SemSet, (num, zero): (usize, bool)) {
    if let Some(c) = set.counters.get_mut(num) {
        let n = if zero { &mut c.zcnt } else { &mut c.ncnt };
        *n = n.saturating_sub(1);
    }
}

/// Process `pid` exits: apply its SEM_UNDO adjustments (each counter kept within
/// 0..=SEMVMX, as Linux does) and wake the sets' sleepers.
pub fn exit(pid: usize) {
    let mut wake = Vec::new();
    {
        let mut t = TABLE.lock();
        let Some(undo) = t.undo.remove(&pid) else {
            return;
        };
        for (id, adjust) in undo {
            let Ok(set) = t.sets.get_mut(id) else {
                continue;
            };
            for (c, a) in set.counters.iter_mut().zip(adjust) {
                if a != 0 {
                    c.value = (c.value + a).clamp(0, SEMVMX);
                    c.pid = pid;
                }
            }
            set.otime = super::sysv::now_secs();
            wake.push(set.waiters.clone());
        }
    }
    for w in wake {
        w.wake_all();
    }
}

/// Forget the SEM_UNDO adjustments of set `id` for counter `num` (all with `None`).
fn clear_undo(t: &mut Table, id: i32, num: Option<usize>) {
    for sets in t.undo.values_mut() {
        match num {
            None => {
                sets.remove(&id);
            }
            Some(n) => {
                if let Some(a) = sets.get_mut(&id).and_then(|a| a.get_mut(n)) {
                    *a = 0;
                }
            }
        }
    }
}

/// `semctl(IPC_RMID)`: remove the set; its sleepers wake with EIDRM.
pub fn remove(id: i32, cred: &Cred) -> Result<(), Errno> {
    let waiters = {
        let mut t = TABLE.lock();
        let set = t.sets.remove(id, cred)?;
        t.counters -= set.counters.len();
        clear_undo(&mut t, id, None);
        set.waiters
    };
    waiters.wake_all();
    Ok(())
}

/// `semctl(IPC_SET)`: owner and mode.
pub fn set_perm(id: i32, cred: &Cred, perm: &[u8; IPC64_PERM_SIZE]) -> Result<(), Errno> {
    let mut t = TABLE.lock();
    t.sets.set_perm(id, cred, perm)?;
    t.sets.get_mut(id)?.ctime = super::sysv::now_secs();
    Ok(())
}

/// What `semctl` reads of one counter.
#[derive(Clone, Copy)]
pub enum Field {
    Value,
    Pid,
    Ncnt,
    Zcnt,
}

/// `semctl(GETVAL, GETPID, GETNCNT, GETZCNT)` (read permission; EINVAL past the set's end).
pub fn get_field(id: i32, num: usize, cred: &Cred, field: Field) -> Result<usize, Errno> {
    let t = TABLE.lock();
    let set = t.sets.checked(id, cred, MAY_READ)?;
    let c = set.counters.get(num).ok_or(Errno::EINVAL)?;
    Ok(match field {
        Field::Value => c.value as usize,
        Field::Pid => c.pid,
        Field::Ncnt => c.ncnt,
        Field::Zcnt => c.zcnt,
    })
}

/// `semctl(GETALL)`: every counter's value.
pub fn get_all(id: i32, cred: &Cred) -> Result<Vec<u16>, Errno> {
    let t = TABLE.lock();
    let set = t.sets.checked(id, cred, MAY_READ)?;
    Ok(set.counters.iter().map(|c| c.value as u16).collect())
}

/// The number of counters of set `id` (for GETALL/SETALL's buffer), permission unchecked.
pub fn nsems(id: i32) -> Result<usize, Errno> {
    Ok(TABLE.lock().sets.get(id)?.counters.len())
}

/// `semctl(SETVAL)` (`num` Some) or `semctl(SETALL)`: set counters (alter permission;
/// ERANGE past SEMVMX), clear their SEM_UNDO adjustments and wake the set's sleepers.
pub fn set_values(
    id: i32,
    num: Option<usize>,
    values: &[i32],
    cred: &Cred,
    pid: usize,
) -> Result<(), Errno> {
    let waiters = {
        let mut t = TABLE.lock();
        let set = t.sets.checked(id, cred, MAY_WRITE)?;
        if let Some(n) = num {
            if n >= set.counters.len() {
                return Err(Errno::EINVAL);
            }
        }
        if values.iter().any(|v| !(0..=SEMVMX).contains(v)) {
            return Err(Errno::ERANGE);
        }
        let set = t.sets.get_mut(id)?;
        match num {
            Some(n) => {
                set.counters[n].value = values[0];
                set.counters[n].pid = pid;
            }
            None => {
                for (c, &v) in set.counters.iter_mut().zip(values) {
                    c.value = v;
                    c.pid = pid;
                }
            }
        }
        set.ctime = super::sysv::now_secs();
        let waiters = set.waiters.clone();
        clear_undo(&mut t, id, num);
        waiters
    };
    waiters.wake_all();
    Ok(())
}

/// `struct semid64_ds` (asm-generic, 64-bit): perm, otime, ctime, nsems, 2 unused words.
pub const SEMID_DS_SIZE: usize = 88;

fn semid_ds(set: &SemSet) -> [u8; SEMID_DS_SIZE] {
    let mut b = [0u8; SEMID_DS_SIZE];
    b[..IPC64_PERM_SIZE].copy_from_slice(&set.perm.to_ipc64());
    for (i, v) in [set.otime, set.ctime, set.counters.len() as u64]
        .into_iter()
        .enumerate()
    {
        let at = IPC64_PERM_SIZE + i * 8;
        b[at..at + 8].copy_from_slice(&v.to_le_bytes());
    }
    b
}

/// `semctl(IPC_STAT)`: the set's `semid64_ds` (read permission).
pub fn stat(id: i32, cred: &Cred) -> Result<[u8; SEMID_DS_SIZE], Errno> {
    Ok(semid_ds(TABLE.lock().sets.checked(id, cred, MAY_READ)?))
}

/// `semctl(SEM_STAT, SEM_STAT_ANY)`: the set in slot `index` and its id; SEM_STAT needs read
/// permission, SEM_STAT_ANY does not.
pub fn stat_index(
    index: usize,
    cred: &Cred,
    any: bool,
) -> Result<(i32, [u8; SEMID_DS_SIZE]), Errno> {
    let t = TABLE.lock();
    let (id, set) = t.sets.by_index(index)?;
    if !any && !set.perm.allows(cred, MAY_READ) {
        return Err(Errno::EACCES);
    }
    Ok((id, semid_ds(set)))
}

/// `semctl(IPC_INFO, SEM_INFO)`: `struct seminfo` (10 ints: semmap, semmni, semmns, semmnu,
/// semmsl, semopm, semume, semusz, semvmx, semaem) and the highest slot in use. SEM_INFO
/// puts the sets and the counters in use in semusz and semaem.
pub fn info(in_use: bool) -> ([u8; 40], usize) {
    let t = TABLE.lock();
    let (usz, aem) = if in_use {
        (t.sets.len(), t.counters)
    } else {
        (20, SEMVMX as usize)
    };
    let ints = [
        SEMMNS,
        SEMMNI,
        SEMMNS,
        SEMMNS,
        SEMMSL,
        SEMOPM,
        SEMOPM,
        usz,
        SEMVMX as usize,
        aem,
    ];
    let mut b = [0u8; 40];
    for (i, v) in ints.into_iter().enumerate() {
        b[i * 4..i * 4 + 4].copy_from_slice(&(v as i32).to_le_bytes());
    }
    (b, t.sets.max_index())
}

/// `/proc/sysvipc/sem`'s lines: one per set.
pub fn proc_lines() -> alloc::string::String {
    use core::fmt::Write;
    let mut s = alloc::string::String::from(
        "       key      semid perms      nsems   uid   gid  cuid  cgid      otime      ctime\n",
    );
    for (id, set) in TABLE.lock().sets.iter() {
        let p = &set.perm;
        let _ = writeln!(
            s,
            "{:10} {:10} {:5o} {:10} {:5} {:5} {:5} {:5} {:10} {:10}",
            p.key,
            id,
            p.mode,
            set.counters.len(),
            p.uid,
            p.gid,
            p.cuid,
            p.cgid,
            set.otime,
            set.ctime
        );
    }
    s
}
