//! How io_submit's requests complete ([`complete`]: the event in the ring, the eventfd, and
//! [`AIO_WAITERS`], the threads in io_getevents), shared by `aio` and the kernel workers
//! that carry out its reads: a pool of kernel threads per hart
//! (`task::spawn_kernel_thread`, at most [`MAX_WORKERS`] each, made as reads find none idle,
//! pinned to their hart), each taking the oldest read queued on its hart. A worker reads
//! through pread's path (`io::read_file_at`) into a kernel buffer, its device waits asleep
//! (`task::reading_kernel_buffer`: dbfs's window faults and a disk's reads of several workers
//! are at the disk together), then copies the bytes into the submitter's address space,
//! holding its `inner`, and completes the request ([`complete`]). It copies only while
//! the request's context is still in that space's table: after execve, exit or io_destroy's
//! removal the bytes are dropped, never written into a new program's memory. The buffer is
//! looked up at completion, not pinned at submission: memory unmapped meanwhile makes the
//! event's result EFAULT (Linux would have filled the pages it pinned).

use alloc::collections::VecDeque;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};

use abi::aio::{IoEvent, Iocb};
use abi::Errno;
use vfs::FileType;

use super::args::SysResult;
use super::fd::MAX_RW;
use super::io::read_file_at;
use super::stream::stream_of;
use crate::arch::hart::{self, MAX_HARTS};
use crate::arch::lockcheck::{rank, SpinLock};
use crate::fs::file::OpenFile;
use crate::ipc::eventfd::EventFd;
use crate::mm::aio_ring::AioRing;
use crate::mm::uaccess;
use crate::task::wait::WaitQueue;
use crate::task::Process;

/// Threads in io_getevents waiting for events (every context: each looks at its own again).
pub(super) static AIO_WAITERS: WaitQueue = WaitQueue::new();

/// Request `user_iocb` (whose `aio_data` is `data`) ended with `res`: its event goes in the
/// ring, then its eventfd (`IOCB_FLAG_RESFD`), if it named one, counts 1 more. The caller
/// wakes [`AIO_WAITERS`].
pub(super) fn complete(
    ring: &AioRing,
    data: u64,
    user_iocb: usize,
    resfd: Option<&OpenFile>,
    res: SysResult,
) -> Result<(), Errno> {
    let r = ring.complete(&IoEvent {
        data,
        obj: user_iocb as u64,
        res: match res {
            Ok(n) => n as i64,
            Err(e) => -(e.0 as i64),
        },
        res2: 0,
    });
    if let Some(e) = resfd.and_then(|f| f.loc.node.as_any().downcast_ref::<EventFd>()) {
        e.signal(1);
    }
    r
}

/// Move `pieces` one after another through `op(offset into the request, address, length)`:
/// stops at a short transfer; an error after some bytes moved ends the request with those bytes.
pub(super) fn each_piece(
    pieces: &[(usize, usize)],
    mut op: impl FnMut(u64, usize, usize) -> SysResult,
) -> SysResult {
    let mut done = 0;
    for &(va, len) in pieces {
        match op(done as u64, va, len) {
            Ok(n) => {
                done += n;
                if n < len {
                    break;
                }
            }
            Err(_) if done > 0 => break,
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// Whether reads go to the workers (boot parameter `aio_async`).
static ASYNC: AtomicBool = AtomicBool::new(true);

/// Hand reads of files and disks to the workers (the default), or complete every request at
/// submission.
pub fn set_async(on: bool) {
    ASYNC.store(on, Relaxed);
}

/// Whether a read of `f` goes to a worker: a regular file's or a disk's (a stream's read may
/// wait for another program, and completes at submission as Linux's does).
pub(super) fn asynchronous(f: &OpenFile) -> bool {
    ASYNC.load(Relaxed)
        && stream_of(f).is_none()
        && matches!(f.ftype, FileType::Regular | FileType::BlockDevice)
}

/// Most kernel workers each hart has (the whole pool's size when it was one for every hart).
pub const MAX_WORKERS: usize = 32;

/// A read waiting for a worker, or being done by one.
struct Job {
    process: Arc<Process>,
    ring: Arc<AioRing>,
    file: Arc<OpenFile>,
    at: u64,
    /// The user's buffers: (address, length), one after another in the file.
    pieces: Vec<(usize, usize)>,
    /// The eventfd a completion adds 1 to (`IOCB_FLAG_RESFD`).
    resfd: Option<Arc<OpenFile>>,
    data: u64,
    user_iocb: usize,
}

/// One hart's workers: they run only there, and take the reads submitted there. A read then
/// never crosses harts (a hand-over under the big kernel lock, an IPI and a wake-up each way),
/// and submitters on different harts have workers of their own.
struct Pool {
    /// Reads waiting for a worker, oldest first.
    jobs: SpinLock<VecDeque<Job>, { rank::AIO_QUEUE }>,
    /// Idle workers, asleep until a read is queued.
    idle: WaitQueue,
    /// Workers made so far (they never exit).
    workers: AtomicUsize,
}

static POOLS: [Pool; MAX_HARTS] = [const {
    Pool {
        jobs: SpinLock::new(VecDeque::new()),
        idle: WaitQueue::new(),
        workers: AtomicUsize::new(0),
    }
}; MAX_HARTS];

/// Queue a read for a worker of this hart (its slot in `ring` is taken): an idle one is
/// woken, or a new one made while the hart has fewer than [`MAX_WORKERS`]. When none exists
/// and none can be made, the read completes here.
pub(super) fn queue(
    ring: &Arc<AioRing>,
    file: Arc<OpenFile>,
    resfd: Option<Arc<OpenFile>>,
    cb: &Iocb,
    user_iocb: usize,
    pieces: Vec<(usize, usize)>,
) -> Result<(), Errno> {
    let job = Job {
        process: crate::task::current_process(),
        ring: ring.clone(),
        file,
        at: cb.aio_offset as u64,
        pieces,
        resfd,
        data: cb.aio_data,
        user_iocb,
    };
    let here = hart::index();
    let pool = &POOLS[here];
    if !pool.idle.wake_one() {
        let made = pool.workers.load(Relaxed) < MAX_WORKERS
            && crate::task::spawn_kernel_thread(worker, 1 << here).is_ok();
        if made {
            pool.workers.fetch_add(1, Relaxed);
        } else if pool.workers.load(Relaxed) == 0 {
            let res = read_job(&job);
            return finish(&job, res);
        }
    }
    pool.jobs.lock().push_back(job);
    Ok(())
}

/// A worker (pinned to one hart): take the oldest read queued on its hart, do it, complete
/// it; sleep while there is none.
extern "C" fn worker() -> ! {
    let pool = &POOLS[hart::index()];
    loop {
        pool.idle.prepare_to_wait();
        let next = pool.jobs.lock().pop_front();
        match next {
            Some(job) => {
                pool.idle.finish_wait();
                let res = read_job(&job);
                let _ = complete_job(&job, res);
                // The reaper runs here once this worker sleeps (its next read's device wait,
                // or no read left): not on another hart, where its system calls would take
                // turns with this one's at the big kernel lock.
                AIO_WAITERS.wake_all_sync();
            }
            None => pool.idle.sleep_prepared(None),
        }
    }
}

/// Complete `job` with `res` and wake the reapers.
fn finish(job: &Job, res: SysResult) -> Result<(), Errno> {
    let r = complete_job(job, res);
    AIO_WAITERS.wake_all();
    r
}

/// Complete `job` with `res` (the reapers not woken).
fn complete_job(job: &Job, res: SysResult) -> Result<(), Errno> {
    complete(
        &job.ring,
        job.data,
        job.user_iocb,
        job.resfd.as_deref(),
        res,
    )
}

/// Bytes a worker reads into its own buffer before it copies them to the user's memory.
const JOB_CHUNK: usize = 1 << 20;

/// Do the read of `job` as a synchronous preadv's (`each_piece`), its buffers cut into
/// chunks of at most [`JOB_CHUNK`]: each chunk read into a kernel buffer, then copied into
/// the submitter's memory.
fn read_job(job: &Job) -> SysResult {
    let mut chunks = Vec::new();
    for &(va, len) in &job.pieces {
        let len = len.min(MAX_RW);
        chunks.extend(
            (0..len)
                .step_by(JOB_CHUNK)
                .map(|k| (va + k, (len - k).min(JOB_CHUNK))),
        );
    }
    let mut buf: Vec<u8> = Vec::new();
    each_piece(&chunks, |off, va, n| {
        if buf.len() < n {
            buf.try_reserve_exact(n - buf.len())
                .map_err(|_| Errno::ENOMEM)?;
            buf.resize(n, 0);
        }
        let got = crate::task::reading_kernel_buffer(|| {
            read_file_at(&job.file, job.at + off, &mut buf[..n])
        })?;
        deliver(job, va, &buf[..got])?;
        Ok(got)
    })
}

/// Copy `bytes` to `va` in the submitter's address space, if the request's context is still
/// in it (else the process has exec'd, exited or destroyed the context: EINVAL, dropped).
fn deliver(job: &Job, va: usize, bytes: &[u8]) -> Result<(), Errno> {
    let mut inner = job.process.inner.lock();
    let space = &mut inner.space;
    match space.aio.get(job.ring.base) {
        Some(r) if Arc::ptr_eq(&r, &job.ring) => uaccess::copy_out(space, va, bytes),
        _ => Err(Errno::EINVAL),
    }
}
