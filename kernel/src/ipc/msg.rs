//! System V message queues (`msgget`, `msgsnd`, `msgrcv`, `msgctl`): the queues by id, each a
//! list of typed messages with Linux's limits (`msg_qbytes` bytes and as many messages per
//! queue, MSGMAX bytes per message, MSGMNI queues).
//!
//! A sender that finds no room and a receiver that finds no matching message sleep on the
//! queue's [`WaitQueue`] (the table lock dropped; kernel code is not preempted between the
//! check and the sleep, so no wake-up is lost). Every change that may let one proceed
//! (a message sent or taken, `IPC_SET` raising `msg_qbytes`, `IPC_RMID`) wakes them all; each
//! looks again. A sleeper whose queue was removed gets EIDRM, one with a signal EINTR.
//!
//! Keys, ids and permissions are `sysv`'s. Lock order: the table lock is a leaf.

use alloc::collections::VecDeque;
use alloc::sync::Arc;
use alloc::vec::Vec;

use abi::Errno;

use super::sysv::{IpcObject, Perm, Registry, IPC64_PERM_SIZE, IPC_NOWAIT};
use crate::sync::Mutex;
use crate::task::cred::{Cred, MAY_READ, MAY_WRITE};
use crate::task::wait::WaitQueue;

/// Largest message (bytes; /proc/sys/kernel/msgmax).
pub const MSGMAX: usize = 8192;
/// Default `msg_qbytes` of a new queue (/proc/sys/kernel/msgmnb).
pub const MSGMNB: usize = 16384;
/// Most queues at once, at boot (/proc/sys/kernel/msgmni changes it).
pub const MSGMNI: usize = 32000;
/// msgrcv flags: truncate a long message instead of E2BIG; take the first message of another
/// type; copy the message at an index (checkpoint/restore, not built here).
pub const MSG_NOERROR: u32 = 0o10000;
pub const MSG_EXCEPT: u32 = 0o20000;
pub const MSG_COPY: u32 = 0o40000;
const CAP_SYS_RESOURCE: u32 = 24;

struct Message {
    mtype: i64,
    data: Vec<u8>,
}

/// One queue: its messages and what `IPC_STAT` reports.
pub struct Queue {
    perm: Perm,
    messages: VecDeque<Message>,
    /// Bytes of all its messages (`msg_cbytes`).
    bytes: usize,
    /// Most bytes (and messages) it may hold (`msg_qbytes`).
    qbytes: usize,
    stime: u64,
    rtime: u64,
    ctime: u64,
    lspid: usize,
    lrpid: usize,
    waiters: Arc<WaitQueue>,
}

impl IpcObject for Queue {
    fn perm(&self) -> &Perm {
        &self.perm
    }
    fn perm_mut(&mut self) -> &mut Perm {
        &mut self.perm
    }
}

static TABLE: Mutex<Registry<Queue>> = Mutex::new(Registry::new(MSGMNI));

/// `msgget`: the id of the queue of `key`, made when the key is `IPC_PRIVATE` or `IPC_CREAT`
/// asks for it.
pub fn get(key: i32, flags: u32, cred: &Cred) -> Result<i32, Errno> {
    TABLE.lock().get_or_create(
        key,
        flags,
        cred,
        |_| Ok(()),
        |perm| {
            Ok(Queue {
                perm,
                messages: VecDeque::new(),
                bytes: 0,
                qbytes: MSGMNB,
                stime: 0,
                rtime: 0,
                ctime: super::sysv::now_secs(),
                lspid: 0,
                lrpid: 0,
                waiters: Arc::new(WaitQueue::new()),
            })
        },
    )
}

/// Run `attempt` on queue `id` until it returns `Some` (done) or fails, sleeping on the
/// queue between tries. `attempt` returns `None` when the call must wait; with `nowait` that
/// is `would_block` instead. A queue removed while the caller slept is EIDRM.
fn retry<R>(
    id: i32,
    nowait: bool,
    would_block: Errno,
    mut attempt: impl FnMut(&mut Queue) -> Result<Option<R>, Errno>,
) -> Result<R, Errno> {
    let mut slept = false;
    loop {
        let (waiters, done) = {
            let mut t = TABLE.lock();
            let q = match t.get_mut(id) {
                Err(_) if slept => return Err(Errno::EIDRM),
                r => r?,
            };
            (q.waiters.clone(), attempt(q)?)
        };
        if let Some(done) = done {
            waiters.wake_all();
            return Ok(done);
        }
        if nowait {
            return Err(would_block);
        }
        if crate::task::signal::pending() {
            return Err(Errno::EINTR);
        }
        waiters.sleep();
        slept = true;
    }
}

/// `msgsnd`: append a message of type `mtype` (at least 1), sleeping while the queue is full
/// (EAGAIN with IPC_NOWAIT).
pub fn send(
    id: i32,
    cred: &Cred,
    pid: usize,
    mtype: i64,
    data: Vec<u8>,
    flags: u32,
) -> Result<(), Errno> {
    let mut data = Some(data);
    let len = data.as_ref().map_or(0, Vec::len);
    retry(id, flags & IPC_NOWAIT != 0, Errno::EAGAIN, |q| {
        if !q.perm.allows(cred, MAY_WRITE) {
            return Err(Errno::EACCES);
        }
        if q.bytes + len > q.qbytes || q.messages.len() + 1 > q.qbytes {
            return Ok(None);
        }
        let data = data.take().unwrap_or_default();
        q.bytes += data.len();
        q.messages.push_back(Message { mtype, data });
        q.lspid = pid;
        q.stime = super::sysv::now_secs();
        Ok(Some(()))
    })
}

/// The place of the first message `msgrcv` takes for `msgtyp`: any (0), the first of that
/// type (> 0; with MSG_EXCEPT the first of another type), or the first of the lowest type at
/// most |msgtyp| (< 0).
fn pick(messages: &VecDeque<Message>, msgtyp: i64, except: bool) -> Option<usize> {
    match msgtyp {
        0 => (!messages.is_empty()).then_some(0),
        t if t > 0 => messages.iter().position(|m| (m.mtype == t) != except),
        t => {
            let limit = t.checked_neg().unwrap_or(i64::MAX);
            let mut best: Option<(usize, i64)> = None;
            for (i, m) in messages.iter().enumerate() {
                if m.mtype <= limit && best.is_none_or(|(_, b)| m.mtype < b) {
                    best = Some((i, m.mtype));
                }
            }
            best.map(|(i, _)| i)
        }
    }
}

/// `msgrcv`: take the message `msgtyp` selects (see [`pick`]), sleeping until there is one
/// (ENOMSG with IPC_NOWAIT). A message longer than `max` is E2BIG and stays queued, unless
/// MSG_NOERROR cuts it to `max` bytes.
pub fn receive(
    id: i32,
    cred: &Cred,
    pid: usize,
    max: usize,
    msgtyp: i64,
    flags: u32,
) -> Result<(i64, Vec<u8>), Errno> {
    retry(id, flags & IPC_NOWAIT != 0, Errno::ENOMSG, |q| {
        if !q.perm.allows(cred, MAY_READ) {
            return Err(Errno::EACCES);
        }
        let Some(at) = pick(&q.messages, msgtyp, flags & MSG_EXCEPT != 0) else {
            return Ok(None);
        };
        if q.messages[at].data.len() > max && flags & MSG_NOERROR == 0 {
            return Err(Errno::E2BIG);
        }
        let Some(mut m) = q.messages.remove(at) else {
            return Ok(None);
        };
        q.bytes -= m.data.len();
        m.data.truncate(max);
        q.lrpid = pid;
        q.rtime = super::sysv::now_secs();
        Ok(Some((m.mtype, m.data)))
    })
}

/// `msgctl(IPC_RMID)`: remove the queue; its sleepers wake with EIDRM.
pub fn remove(id: i32, cred: &Cred) -> Result<(), Errno> {
    let q = TABLE.lock().remove(id, cred)?;
    q.waiters.wake_all();
    Ok(())
}

/// `msgctl(IPC_SET)`: owner, mode and `msg_qbytes` (above MSGMNB only with
/// CAP_SYS_RESOURCE).
pub fn set(id: i32, cred: &Cred, perm: &[u8; IPC64_PERM_SIZE], qbytes: u64) -> Result<(), Errno> {
    let mut t = TABLE.lock();
    let q = t.owned_mut(id, cred)?;
    if qbytes > MSGMNB as u64 && !cred.caps.has(CAP_SYS_RESOURCE) {
        return Err(Errno::EPERM);
    }
    q.perm.set_from_ipc64(perm);
    q.qbytes = qbytes as usize;
    q.ctime = super::sysv::now_secs();
    let waiters = q.waiters.clone();
    drop(t);
    waiters.wake_all();
    Ok(())
}

/// `struct msqid64_ds` (asm-generic, 64-bit): perm, stime, rtime, ctime, cbytes, qnum,
/// qbytes, lspid, lrpid, 2 unused words.
pub const MSQID_DS_SIZE: usize = 120;

fn msqid_ds(q: &Queue) -> [u8; MSQID_DS_SIZE] {
    let mut b = [0u8; MSQID_DS_SIZE];
    b[..IPC64_PERM_SIZE].copy_from_slice(&q.perm.to_ipc64());
    let words = [
        q.stime,
        q.rtime,
        q.ctime,
        q.bytes as u64,
        q.messages.len() as u64,
        q.qbytes as u64,
    ];
    for (i, v) in words.into_iter().enumerate() {
        let at = IPC64_PERM_SIZE + i * 8;
        b[at..at + 8].copy_from_slice(&v.to_le_bytes());
    }
    b[96..100].copy_from_slice(&(q.lspid as u32).to_le_bytes());
    b[100..104].copy_from_slice(&(q.lrpid as u32).to_le_bytes());
    b
}

/// `msgctl(IPC_STAT)`: the queue's `msqid64_ds` (read permission needed).
pub fn stat(id: i32, cred: &Cred) -> Result<[u8; MSQID_DS_SIZE], Errno> {
    Ok(msqid_ds(TABLE.lock().checked(id, cred, MAY_READ)?))
}

/// `msgctl(MSG_STAT, MSG_STAT_ANY)`: the `msqid64_ds` of the queue in slot `index` and its
/// id; MSG_STAT needs read permission, MSG_STAT_ANY does not.
pub fn stat_index(
    index: usize,
    cred: &Cred,
    any: bool,
) -> Result<(i32, [u8; MSQID_DS_SIZE]), Errno> {
    let t = TABLE.lock();
    let (id, q) = t.by_index(index)?;
    if !any && !q.perm.allows(cred, MAY_READ) {
        return Err(Errno::EACCES);
    }
    Ok((id, msqid_ds(q)))
}

/// `msgctl(IPC_INFO, MSG_INFO)`: `struct msginfo` (msgpool, msgmap, msgmax, msgmnb, msgmni,
/// msgssz, msgtql as ints, msgseg a short) and the highest slot in use. IPC_INFO gives
/// Linux's limits; MSG_INFO puts the queues, messages and bytes in use in msgpool, msgmap
/// and msgtql.
pub fn info(in_use: bool) -> ([u8; 32], usize) {
    let t = TABLE.lock();
    let (pool, map, tql) = if in_use {
        let (mut msgs, mut bytes) = (0, 0);
        for (_, q) in t.iter() {
            msgs += q.messages.len();
            bytes += q.bytes;
        }
        (t.len(), msgs, bytes)
    } else {
        // Linux's MSGPOOL (KiB), MSGMAP and MSGTQL.
        (t.limit() * MSGMNB / 1024, MSGMNB, MSGMNB)
    };
    let ints = [pool, map, MSGMAX, MSGMNB, t.limit(), 16, tql];
    let mut b = [0u8; 32];
    for (i, v) in ints.into_iter().enumerate() {
        b[i * 4..i * 4 + 4].copy_from_slice(&(v as i32).to_le_bytes());
    }
    b[28..30].copy_from_slice(&0xffffu16.to_le_bytes());
    (b, t.max_index())
}

/// The most queues at once now (/proc/sys/kernel/msgmni).
pub fn msgmni() -> usize {
    TABLE.lock().limit()
}

/// Set /proc/sys/kernel/msgmni: at most IPCMNI (EINVAL); queues there already stay.
pub fn set_msgmni(n: usize) -> Result<(), Errno> {
    if n > super::sysv::IPCMNI {
        return Err(Errno::EINVAL);
    }
    TABLE.lock().set_limit(n);
    Ok(())
}

/// `/proc/sysvipc/msg`'s lines: one per queue.
pub fn proc_lines() -> alloc::string::String {
    use core::fmt::Write;
    let mut s = alloc::string::String::from(
        "       key      msqid perms      cbytes       qnum lspid lrpid   uid   gid  cuid  cgid      stime      rtime      ctime\n",
    );
    for (id, q) in TABLE.lock().iter() {
        let p = &q.perm;
        let _ = writeln!(
            s,
            "{:10} {:10} {:5o} {:11} {:10} {:5} {:5} {:5} {:5} {:5} {:5} {:10} {:10} {:10}",
            p.key,
            id,
            p.mode,
            q.bytes,
            q.messages.len(),
            q.lspid,
            q.lrpid,
            p.uid,
            p.gid,
            p.cuid,
            p.cgid,
            q.stime,
            q.rtime,
            q.ctime
        );
    }
    s
}
