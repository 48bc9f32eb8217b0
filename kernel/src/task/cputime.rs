//! CPU times of other threads and processes (task layer): the CPU clocks clock_gettime
//! reads through a negative clock id.

use alloc::sync::Arc;
use core::sync::atomic::Ordering::Relaxed;

/// CPU time so far (ns) of thread `id` of the current process (`thread`) or of process
/// `id` (0: the caller's own), and of it the part spent in the kernel for a process (None
/// for a thread: a thread's system time is not kept apart): the CPU clocks of
/// clock_gettime (pthread_getcpuclockid, clock_getcpuclockid). The caller's running slice
/// is included; that of a thread running on another hart is added when it leaves the hart.
/// None: no such process, or no such thread in the caller's process (Linux: EINVAL).
pub fn cpu_time_of(id: usize, thread: bool) -> Option<(u64, Option<u64>)> {
    let me = super::sched::current_thread();
    if thread {
        let thread_ns = super::run::cpu_times().1;
        if id == 0 || id == me.tid {
            return Some((thread_ns, None));
        }
        let t = super::lookup::find_thread(id)?;
        if !Arc::ptr_eq(&t.process, &me.process) {
            return None;
        }
        return Some((t.cpu_ns.load(Relaxed), None));
    }
    if id == 0 || id == me.process.pid {
        let cpu = super::run::process_cpu();
        return Some((cpu.total_ns, Some(cpu.sys_ns)));
    }
    let p = super::lookup::find(id)?;
    let cpu = p.cpu();
    Some((cpu.total_ns, Some(cpu.sys_ns)))
}
