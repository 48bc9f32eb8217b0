//! Finding processes and threads (task layer): by pid or tid, by process group, all of them,
//! and the two walks over every address space that mm's `SpaceAccess` calls.

use alloc::sync::Arc;
use alloc::vec::Vec;

use super::away::keep_cpu;
use super::process::{Process, Thread};
use super::sched::SCHED;
use crate::mm::file_pages::FileKey;

/// Every live process with process group `pgid`.
pub fn processes_in_group(pgid: usize) -> Vec<Arc<Process>> {
    let all: Vec<Arc<Process>> = SCHED.lock().all.values().cloned().collect();
    all.into_iter()
        .filter(|p| {
            let i = p.inner.lock();
            i.pgid == pgid && i.zombie.is_none()
        })
        .collect()
}

/// Every live process.
pub fn all_processes() -> Vec<Arc<Process>> {
    SCHED.lock().all.values().cloned().collect()
}

/// mm's `SpaceAccess::unmap_file_pages`: in every process, inside [`keep_cpu`].
pub fn unmap_file_pages_everywhere(key: FileKey, first_gone: u64) {
    keep_cpu(|| {
        for p in all_processes() {
            p.inner.lock().space.unmap_file_pages(key, first_gone);
        }
    });
}

/// mm's `SpaceAccess::write_protect_file_pages`: in every process.
pub fn write_protect_file_pages_everywhere(key: FileKey, first: u64, end: u64) {
    for p in all_processes() {
        p.inner
            .lock()
            .space
            .write_protect_file_pages(key, first, end);
    }
}

/// The process with this pid, if it exists (zombies included).
pub fn find(pid: usize) -> Option<Arc<Process>> {
    SCHED.lock().all.get(&pid).cloned()
}

/// The live thread with this tid.
pub fn find_thread(tid: usize) -> Option<Arc<Thread>> {
    SCHED.lock().threads.get(&tid).cloned()
}
