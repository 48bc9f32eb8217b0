//! What `/proc` shows of processes (`fs::procfs`): a copy of one process's figures, taken
//! under its lock and handed over, so procfs never holds a process lock while it formats.

use alloc::string::String;
use alloc::vec::Vec;

use crate::fs::procfs::PsInfo;

use super::{State, SCHED};

/// Every process's pid, in order (zombies included until reaped, as on Linux).
pub fn pids() -> Vec<usize> {
    SCHED.lock().all.keys().copied().collect()
}

/// The figures of process `pid`, if it exists.
pub fn info(pid: usize) -> Option<PsInfo> {
    let p = super::find(pid)?;
    let i = p.inner.lock();
    // A process runs while one of its threads can; a zombie has none left.
    let runnable = i
        .threads
        .iter()
        .any(|t| matches!(t.inner.lock().state, State::Running | State::Ready));
    let state = match (i.zombie, runnable) {
        (Some(_), _) => 'Z',
        (None, true) => 'R',
        (None, false) => 'S',
    };
    Some(PsInfo {
        pid,
        ppid: i.ppid,
        pgid: i.pgid,
        sid: i.sid,
        state,
        comm: String::from(i.comm.as_str()),
        cmdline: i.cmdline.clone(),
        cwd: i.cwd.clone(),
        uid: i.cred.uid,
        gid: i.cred.gid,
        threads: i.threads.len().max(1),
        cpu_ns: p.cpu_ns(),
        children_cpu_ns: i.children_cpu_ns,
        nice: i.nice,
        vsize: i.space.mapped_bytes() as u64,
        rss_pages: i.space.resident_pages() as u64,
    })
}
