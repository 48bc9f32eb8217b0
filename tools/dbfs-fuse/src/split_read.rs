//! Large reads in two halves at once: the thread serving the request reads the first half while
//! a helper thread, free to run on another core, reads the second.
//!
//! Through `/dev/fuse` a 1 MiB O_DIRECT read is two 512 KiB requests (`max_read`,
//! `FUSE_ASYNC_DIO`) that two worker threads, usually on both cores, serve at once. Through the
//! io_uring queues ([`crate::uring`]) both requests land on the queue of the caller's CPU, whose
//! threads are pinned there, so they are served on one core. A read of at least [`SPLIT_MIN`]
//! bytes therefore hands its second half to an idle helper (none idle: it reads it all
//! itself). The result is what one thread reading the whole range would return: the first
//! half's bytes, and the second's only when the first half was read whole (a short first half
//! means the end of the file); an error in either is the read's error.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use vfs::{NodeRef, VfsError};

/// Reads smaller than this are not split (the hand-off costs two thread wake-ups).
pub const SPLIT_MIN: usize = 256 << 10;

/// The result slot of one half handed to a helper.
type Done = Arc<(Mutex<Option<Result<usize, VfsError>>>, Condvar)>;

/// One half handed to a helper: where to read it into, and the result slot.
struct Job {
    node: NodeRef,
    offset: u64,
    buf: *mut u8,
    len: usize,
    done: Done,
}

// SAFETY: `buf` points into a buffer the submitting thread keeps alive, and does not touch,
// until it has seen `done` filled (see `Helpers::read`).
unsafe impl Send for Job {}

struct Queue {
    jobs: Vec<Job>,
    idle: usize,
    stop: bool,
}

/// A few helper threads that read second halves; they end when this is dropped.
pub struct Helpers {
    q: Arc<(Mutex<Queue>, Condvar)>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Helpers {
    /// Start `n` helper threads.
    pub fn new(n: usize) -> std::io::Result<Helpers> {
        let q = Arc::new((
            Mutex::new(Queue {
                jobs: Vec::new(),
                idle: 0,
                stop: false,
            }),
            Condvar::new(),
        ));
        for i in 0..n {
            let q = q.clone();
            std::thread::Builder::new()
                .name(format!("dbfs-read-{i}"))
                .spawn(move || helper(&q))?;
        }
        Ok(Helpers { q })
    }

    /// Read `buf` at `offset` of `node` as [`vfs::read_fully`] does, the second half by a
    /// helper when the read is large and a helper is idle.
    pub fn read(&self, node: &NodeRef, offset: u64, buf: &mut [u8]) -> Result<usize, VfsError> {
        if buf.len() < SPLIT_MIN {
            return vfs::read_fully(&**node, offset, buf);
        }
        let half = (buf.len() / 2 + 4095) & !4095;
        let (first, second) = buf.split_at_mut(half);
        let done: Done = Arc::new((Mutex::new(None), Condvar::new()));
        {
            let (m, cv) = &*self.q;
            let mut q = lock(m);
            if q.idle == 0 || q.stop {
                drop(q);
                return vfs::read_fully(&**node, offset, buf);
            }
            q.idle -= 1;
            q.jobs.push(Job {
                node: node.clone(),
                offset: offset + half as u64,
                buf: second.as_mut_ptr(),
                len: second.len(),
                done: done.clone(),
            });
            cv.notify_one();
        }
        let a = vfs::read_fully(&**node, offset, first);
        // Wait for the helper before `second` may be touched or freed, whatever `a` was.
        let b = {
            let (m, cv) = &*done;
            let mut slot = lock(m);
            loop {
                if let Some(r) = slot.take() {
                    break r;
                }
                slot = cv.wait(slot).unwrap_or_else(|p| p.into_inner());
            }
        };
        let a = a?;
        if a < half {
            return Ok(a);
        }
        Ok(half + b?)
    }
}

impl Drop for Helpers {
    fn drop(&mut self) {
        let (m, cv) = &*self.q;
        lock(m).stop = true;
        cv.notify_all();
    }
}

fn helper(q: &(Mutex<Queue>, Condvar)) {
    let (m, cv) = q;
    let mut g = lock(m);
    g.idle += 1;
    loop {
        if let Some(job) = g.jobs.pop() {
            drop(g);
            // SAFETY: see `Job`: the buffer stays valid and untouched until `done` is set.
            let buf = unsafe { std::slice::from_raw_parts_mut(job.buf, job.len) };
            let r = vfs::read_fully(&*job.node, job.offset, buf);
            let (dm, dcv) = &*job.done;
            *lock(dm) = Some(r);
            dcv.notify_one();
            g = lock(m);
            g.idle += 1;
            continue;
        }
        if g.stop {
            return;
        }
        g = cv.wait(g).unwrap_or_else(|p| p.into_inner());
    }
}
