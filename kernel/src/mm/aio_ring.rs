//! Native AIO contexts as memory (mm layer): each context is a completion ring of pages
//! shared between the kernel and the process, mapped into its address space by `io_setup`
//! (the mapping's address is the context's id, `aio_context_t`), and the table of a space's
//! contexts ([`AioContexts`], a field of `AddrSpace`, as Linux keeps `ioctx_table` in the
//! `mm_struct`).
//!
//! Contract: the ring's layout is Linux's (`abi::aio`: a 32-byte header with `nr`, `head`,
//! `tail` and `magic`, then `nr` 32-byte `struct io_event`s), so libaio's user-space checks
//! of `head` and `tail` and fio's user-space reaping read what the kernel wrote. The kernel
//! reaches the ring through the frames it holds ([`SharedAnon`]), never through the user's
//! mapping: a program that unmaps or write-protects its ring cannot make a completion fault.
//! User space may move `head` (reaping by itself); the kernel reads it back modulo `nr` and
//! keeps `tail` itself.
//!
//! Slots: as Linux does, `io_setup(n)` gets a ring of at least `2 * max(n, 4)` events (whole
//! pages) and at most `nr - 1` requests may be submitted and not yet reaped
//! ([`AioRing::reserve`]); the requested `n` of every live context counts against the
//! system-wide [`AIO_MAX_NR`] (EAGAIN past it).
//!
//! Lifetime: a context ends at `io_destroy`, when its space is cleared (exit) or dropped
//! (execve), and is never copied by fork (Linux marks the ring `VM_DONTCOPY`; the child has
//! neither the ring nor the context). [`AioRing::kill`] releases its share of the limit once.

use alloc::collections::BTreeMap;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use abi::aio::*;
use abi::Errno;

use super::area::SharedAnon;
use super::PAGE_SIZE;
use crate::sync::Mutex;

/// Events requested by the live contexts of every process (Linux's `aio_nr`).
static AIO_NR: Mutex<u32> = Mutex::new(0);
/// The ring id Linux stores in the header (its index in the table); only informative.
static NEXT_ID: AtomicU32 = AtomicU32::new(0);

/// One context: its ring pages, where they are mapped, and the slot accounting.
pub struct AioRing {
    pages: Arc<SharedAnon>,
    /// The user address of the ring: the context's id.
    pub base: usize,
    /// Bytes of the ring mapping (whole pages).
    pub len: usize,
    /// Events the ring holds.
    nr: u32,
    /// Events `io_setup` asked for (its share of [`AIO_MAX_NR`]).
    max_reqs: u32,
    /// `tail` (the kernel's copy) and the requests reserved but not completed.
    slots: Mutex<Slots>,
    dead: AtomicBool,
}

struct Slots {
    tail: u32,
    in_flight: u32,
}

impl AioRing {
    /// `io_setup(nr_events)`: a new context, not mapped yet ([`Self::place`]), or Linux's
    /// errno (EINVAL: an event count whose ring would be too large; EAGAIN: past the
    /// system-wide limit). Its share of the limit is taken; dropping it gives it back.
    pub(super) fn new(nr_events: u32) -> Result<AioRing, Errno> {
        let max_reqs = nr_events;
        // Linux doubles the count (and takes at least four events per CPU, one CPU here); the
        // product is an unsigned int there, so a huge count wraps around to EAGAIN below.
        let doubled = nr_events.max(4).wrapping_mul(2);
        if doubled > 0x1000_0000 / IO_EVENT_SIZE as u32 {
            return Err(Errno::EINVAL);
        }
        if doubled == 0 || max_reqs > AIO_MAX_NR {
            return Err(Errno::EAGAIN);
        }
        let bytes = AIO_RING_HEADER + doubled as usize * IO_EVENT_SIZE;
        let len = bytes.div_ceil(PAGE_SIZE) * PAGE_SIZE;
        let nr = ((len - AIO_RING_HEADER) / IO_EVENT_SIZE) as u32;
        {
            let mut total = AIO_NR.lock();
            match total.checked_add(max_reqs) {
                Some(t) if t <= AIO_MAX_NR => *total = t,
                _ => return Err(Errno::EAGAIN),
            }
        }
        Ok(AioRing {
            pages: Arc::new(SharedAnon::default()),
            base: 0,
            len,
            nr,
            max_reqs,
            slots: Mutex::new(Slots {
                tail: 0,
                in_flight: 0,
            }),
            dead: AtomicBool::new(false),
        })
    }

    /// The ring's pages, to be mapped (`AddrSpace::aio_setup`).
    pub(super) fn pages(&self) -> Arc<SharedAnon> {
        self.pages.clone()
    }

    /// The ring is mapped at `base` (its id from now on): write its header.
    pub(super) fn place(&mut self, base: usize) -> Result<(), Errno> {
        self.base = base;
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let header: [(usize, u32); 8] = [
            (RING_ID, id),
            (RING_NR, self.nr),
            (RING_HEAD, 0),
            (RING_TAIL, 0),
            (RING_MAGIC, AIO_RING_MAGIC),
            (RING_COMPAT, AIO_RING_COMPAT_FEATURES),
            (RING_INCOMPAT, AIO_RING_INCOMPAT_FEATURES),
            (RING_HEADER_LENGTH, AIO_RING_HEADER as u32),
        ];
        for (at, v) in header {
            self.put(at, &v.to_le_bytes())?;
        }
        Ok(())
    }

    /// Write `data` at byte `at` of the ring.
    fn put(&self, at: usize, data: &[u8]) -> Result<(), Errno> {
        let f = self.pages.page(at / PAGE_SIZE).ok_or(Errno::ENOMEM)?;
        f.write_shared(at % PAGE_SIZE, data);
        Ok(())
    }

    /// Read the u32 at byte `at` of the header.
    fn header_u32(&self, at: usize) -> Result<u32, Errno> {
        let f = self.pages.page(0).ok_or(Errno::ENOMEM)?;
        let b = f.bytes();
        Ok(u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]))
    }

    /// `head` as user space left it, inside the ring.
    fn head(&self) -> Result<u32, Errno> {
        Ok(self.header_u32(RING_HEAD)? % self.nr)
    }

    /// Events in the ring not yet reaped.
    fn unreaped(&self, tail: u32) -> Result<u32, Errno> {
        Ok((tail + self.nr - self.head()?) % self.nr)
    }

    /// Take a slot for one request (`io_submit`): false when `nr - 1` requests are in
    /// flight or completed and not reaped (EAGAIN), or the context is gone.
    pub fn reserve(&self) -> Result<bool, Errno> {
        if self.is_dead() {
            return Ok(false);
        }
        let mut s = self.slots.lock();
        if self.unreaped(s.tail)? + s.in_flight >= self.nr - 1 {
            return Ok(false);
        }
        s.in_flight += 1;
        Ok(true)
    }

    /// Requests submitted and not yet completed.
    pub fn in_flight(&self) -> u32 {
        self.slots.lock().in_flight
    }

    /// Give back a slot taken by [`Self::reserve`] for a request that failed at submission.
    pub fn unreserve(&self) {
        let mut s = self.slots.lock();
        s.in_flight = s.in_flight.saturating_sub(1);
    }

    /// Complete a request that holds a slot: its event goes in at `tail`.
    pub fn complete(&self, event: &IoEvent) -> Result<(), Errno> {
        let mut s = self.slots.lock();
        s.in_flight = s.in_flight.saturating_sub(1);
        let at = AIO_RING_HEADER + s.tail as usize * IO_EVENT_SIZE;
        self.put(at, &event.to_bytes())?;
        s.tail = (s.tail + 1) % self.nr;
        self.put(RING_TAIL, &s.tail.to_le_bytes())
    }

    /// Reap up to `max` events (in order): `deliver` gets their bytes (one or two runs, the
    /// ring may wrap) and copies them out; the events it took are consumed (`head` moves),
    /// and their count is returned. An error of `deliver` leaves the events in the ring.
    pub fn reap(
        &self,
        max: usize,
        mut deliver: impl FnMut(usize, &[u8]) -> Result<(), Errno>,
    ) -> Result<usize, Errno> {
        let s = self.slots.lock();
        let mut head = self.head()?;
        let mut done = 0;
        while done < max && head != s.tail {
            // The run from head to the tail or the ring's end, one page at most per copy.
            let end = if head < s.tail { s.tail } else { self.nr };
            let at = AIO_RING_HEADER + head as usize * IO_EVENT_SIZE;
            let in_page = (PAGE_SIZE - at % PAGE_SIZE) / IO_EVENT_SIZE;
            let n = ((end - head) as usize).min(max - done).min(in_page);
            let f = self.pages.page(at / PAGE_SIZE).ok_or(Errno::ENOMEM)?;
            let bytes = &f.bytes()[at % PAGE_SIZE..at % PAGE_SIZE + n * IO_EVENT_SIZE];
            if let Err(e) = deliver(done, bytes) {
                if done == 0 {
                    return Err(e);
                }
                break;
            }
            done += n;
            head = (head + n as u32) % self.nr;
            self.put(RING_HEAD, &head.to_le_bytes())?;
        }
        Ok(done)
    }

    /// Events the ring holds (io_submit takes at most this many iocbs per call).
    pub fn nr(&self) -> usize {
        self.nr as usize
    }

    /// Whether the context has been destroyed.
    pub fn is_dead(&self) -> bool {
        self.dead.load(Ordering::Relaxed)
    }

    /// End the context: no more submissions, and its events leave the system-wide count.
    pub fn kill(&self) {
        if !self.dead.swap(true, Ordering::Relaxed) {
            let mut total = AIO_NR.lock();
            *total = total.saturating_sub(self.max_reqs);
        }
    }

    /// Whether `pages` are this ring's (an area of the ring, for fork).
    pub(super) fn holds(&self, pages: &Arc<SharedAnon>) -> bool {
        Arc::ptr_eq(&self.pages, pages)
    }
}

impl Drop for AioRing {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The contexts of one address space, by id (the ring's user address).
#[derive(Default)]
pub struct AioContexts {
    rings: BTreeMap<usize, Arc<AioRing>>,
}

impl AioContexts {
    /// The context `id` (EINVAL for `io_*` calls when there is none).
    pub fn get(&self, id: usize) -> Option<Arc<AioRing>> {
        self.rings.get(&id).cloned()
    }

    /// Add a context (mapped: its `base` is its id).
    pub(super) fn insert(&mut self, ring: Arc<AioRing>) {
        self.rings.insert(ring.base, ring);
    }

    /// Take context `id` out of the table (`io_destroy`); the caller unmaps its ring.
    pub fn remove(&mut self, id: usize) -> Option<Arc<AioRing>> {
        let r = self.rings.remove(&id)?;
        r.kill();
        Some(r)
    }

    /// End every context (exit), allocating nothing.
    pub fn clear(&mut self) {
        for r in self.rings.values() {
            r.kill();
        }
        self.rings.clear();
    }

    /// Whether `pages` belong to one of these rings.
    pub(super) fn holds(&self, pages: &Arc<SharedAnon>) -> bool {
        self.rings.values().any(|r| r.holds(pages))
    }
}

impl Drop for AioContexts {
    fn drop(&mut self) {
        self.clear();
    }
}
