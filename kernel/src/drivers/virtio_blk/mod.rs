//! virtio-blk disks: our own request layer over the `virtio-drivers` crate's split virtqueue
//! ([`VirtQueue`]) and MMIO transport; completions polled, or interrupt-driven for waiters
//! that sleep.
//!
//! Each disk is a [`VirtioDisk`] implementing `vfs::BlockDevice`. The crate's own `VirtIOBlk`
//! is not used: its queue has 16 descriptors and its requests carry ONE data buffer, so bytes
//! for one stretch of the disk that lie in several memory pieces had to be copied together or
//! sent as several requests. Here a request is the virtio-blk layout (virtio 1.1, 5.2.6): a
//! 16-byte header the device reads (type, reserved, sector), then the data pieces (device-read
//! for a write, device-written for a read), then one status byte the device writes. A write
//! run may have as many pieces as the device's `seg_max` allows (scatter-gather), so callers
//! hand over their frames as they are ([`BlockDevice::write_gather`]): no copy, one request per
//! contiguous disk run of up to [`MAX_REQUEST`] bytes.
//!
//! The part that needs no device is the `virtio-blk-req` crate, tested on the host: the header
//! and status types, the feature bits and config offsets, splitting runs into requests, and
//! what a status byte means ([`virtio_blk_req::status_result`]). This module is the MMIO side:
//! feature negotiation, the queue, and the engine that submits and completes requests.
//!
//! The queue has [`QUEUE_SIZE`] entries; with indirect descriptors (negotiated when offered:
//! the crate then puts each request's chain in its own table) every request takes one entry
//! whatever its piece count. All I/O (reads, writes, flushes) goes through one engine,
//! [`VirtioDisk::run`], that keeps the queue full: it submits requests without waiting,
//! notifies the device once per batch, and completes them in whatever order the device
//! finishes them. One `Mutex` owns the transport and the queue. Flushes, reads and dbfs's
//! direct writes whose caller may give the CPU away while it waits are *detached*: submitted,
//! then waited for with the lock released; whichever call holds the lock when one completes
//! takes it back.
//!
//! Completion interrupts: each disk's source is routed through the PLIC to the boot hart alone
//! (`arch::plic`), and the device is asked for interrupts only while a detached request has a
//! waiter (`VIRTQ_AVAIL_F_NO_INTERRUPT` otherwise: a polled [`VirtioDisk::run`] costs no trap). A
//! detached waiter that may give the CPU away sleeps on the disk's [`WaitQueue`]; the handler
//! ([`interrupts::interrupt`]) acknowledges the device and wakes them, taking no disk lock (the
//! waiters reap under it themselves), and the scheduler loop's [`interrupts::poll`] wakes them when
//! the hart that takes the interrupt stays in the kernel. A waiter sleeps at most [`BACKSTOP_NS`]
//! before it looks again, and a thread that may not give the CPU away (`task::keep_cpu`, boot)
//! polls. Detached reads serve large reads into a caller's pages
//! ([`BlockDevice::read_scatter_shared`]) and disk-window faults into their own frames
//! ([`BlockDevice::read_scatter_owned`]); [`VirtioDisk::run`]'s callers (which may hold spin locks)
//! still poll under the lock. A detached read whose hart has no other thread ready polls first, for
//! at most [`POLL_FIRST_NS`] (about a 1 MiB read's time here), and sleeps only then: a lone
//! reader's read completes without an interrupt, a wake-up and, on several harts, the big kernel
//! lock (docs/BENCHMARKS.md, "Reads that poll before they sleep").
//!
//! Buffers handed to the device are kernel memory in the direct map (heap, stacks, frames), so
//! their physical address is their kernel address less `mm::PHYS_OFFSET`. A request's header and
//! status live in a `Box` that stays alive, and its data stays borrowed, until the request has
//! completed (or the device has been reset).
//!
//! Counters: `add_dev_read` / `add_dev_write` / `add_dev_flush` count requests (and bytes) as
//! they are handed to the device.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

use super::virtio_hal::KernelHal;
use crate::arch::hart::MAX_HARTS;
use crate::arch::lockcheck::{rank, SpinLock};
use crate::task::wait::WaitQueue;
use vfs::{BlockDevice, VfsError, VfsResult, SECTOR_SIZE};
use virtio_blk_req::stats::{DiskStats, Op};
use virtio_blk_req::{
    buffers, config, status_result, Features, Limits, Request, RequestHead, RequestType,
};
use virtio_drivers::queue::VirtQueue;
use virtio_drivers::transport::mmio::MmioTransport;
use virtio_drivers::transport::{DeviceStatus, Transport};
use virtio_drivers::PAGE_SIZE;

pub mod interrupts;

pub use virtio_blk_req::MAX_REQUEST;
/// Entries of the request queue. With indirect descriptors this is also the most requests in
/// flight at once (512 MiB at [`MAX_REQUEST`]); the probe fails if the device offers fewer
/// (QEMU's virtio-mmio offers 1024). A request's chain may be as long as the queue, so this
/// also bounds the pieces per request: 510, enough for the 256 scattered pages of a 1 MiB
/// user buffer when the device allows it (QEMU's `seg_max` is its `queue-size` less 2: the
/// Makefile passes `queue-size=1024`; the default 256 gives 254, two requests per MiB; at 128
/// entries here it was 126, three).
pub const QUEUE_SIZE: usize = 512;
/// The only queue of a virtio-blk device without `VIRTIO_BLK_F_MQ`.
const QUEUE: u16 = 0;

/// What the lock of a disk protects: the transport and the one queue.
struct Device {
    transport: MmioTransport<'static>,
    queue: VirtQueue<KernelHal, QUEUE_SIZE>,
    /// The device broke the protocol (a completion we never submitted) and was reset so it
    /// stops touching memory; every later request fails with `Io`.
    broken: bool,
    /// Requests in flight that no [`VirtioDisk::run`] owns: background flushes
    /// ([`BlockDevice::flush_behind`]) and flushes and reads whose caller waits outside the
    /// lock ([`BlockDevice::flush_shared`], [`BlockDevice::read_scatter_shared`]). Each keeps
    /// its header/status buffer alive until the device hands its token back, which whoever
    /// holds the lock then notices.
    detached: Vec<Detached>,
    /// Results of waited-for detached requests that completed, by [`Detached::waiter`] id.
    finished: Vec<(u64, VfsResult<()>)>,
    /// The next waiter id.
    next_waiter: u64,
    /// A result went into `finished` since the disk's waiters were last woken. Any caller
    /// holding the lock reaps what the device finished, a sleeping waiter's request too;
    /// the sleepers are then woken by the next [`interrupts::poll`] (or by a waiter that
    /// reaped it), not left for an interrupt that a hart spinning in the kernel keeps the
    /// routed hart from taking. ([`VirtioDisk::run`]'s callers may hold spin locks that
    /// rank above the wait queue's, so they leave the wake-up to `poll`.)
    results_for_waiters: bool,
    /// What `/proc/diskstats` shows ([`interrupts::disk_stats`]).
    stats: DiskStats,
}

/// A request in flight outside any [`VirtioDisk::run`]: a flush, or one request of a read
/// or a write whose caller waits with the lock released ([`BlockDevice::read_scatter_shared`],
/// [`BlockDevice::write_gather_shared`]).
struct Detached {
    token: u16,
    head: Box<RequestHead>,
    /// A read's or a write's data pieces as (address, length) in the waiter's buffer; empty
    /// for a flush. The waiter does not return before it has learnt the result (or the device
    /// was reset and stopped touching memory), so the pieces stay valid while the request is
    /// detached.
    pieces: Vec<(usize, usize)>,
    /// A read, a write (the device reads the pieces) or a flush.
    op: Op,
    /// Its waiter wants the completion interrupt (it sleeps; see [`Wait`]).
    irq: bool,
    /// When it went to the device (`monotonic_ns`), for [`Device::stats`].
    started: u64,
    /// The id its waiter looks for in [`Device::finished`]; `None` for a background flush
    /// (its status is only logged: a later flush covers the same writes and reports its own
    /// failure).
    waiter: Option<u64>,
}

impl Device {
    /// Ask the device for completion interrupts exactly while a detached request has a
    /// waiter (virtio 1.1, 2.6.7: `VIRTQ_AVAIL_F_NO_INTERRUPT` otherwise). A polled
    /// [`VirtioDisk::run`] or a background flush needs none: each interrupt would only cost
    /// the routed hart a trap and the big kernel lock.
    fn update_notify(&mut self) {
        let wanted = self.detached.iter().any(|d| d.waiter.is_some() && d.irq);
        self.queue.set_dev_notify(wanted);
    }

    /// Waiter `id` is going to sleep: its requests want the completion interrupt.
    fn want_irq(&mut self, id: u64) {
        for d in self.detached.iter_mut().filter(|d| d.waiter == Some(id)) {
            d.irq = true;
        }
        self.update_notify();
    }

    /// A new waiter id for detached requests; `Io` once the device is broken.
    fn new_waiter(&mut self) -> VfsResult<u64> {
        if self.broken {
            return Err(VfsError::Io);
        }
        self.next_waiter += 1;
        Ok(self.next_waiter - 1)
    }

    /// Take back the detached request whose completion `token` is, if it is one: false if not.
    fn reap_detached(&mut self, token: u16, name: &str) -> bool {
        let Some(i) = self.detached.iter().position(|d| d.token == token) else {
            return false;
        };
        let Detached {
            token: t,
            mut head,
            pieces,
            op,
            waiter,
            started,
            ..
        } = self.detached.swap_remove(i);
        let bytes = pieces.iter().map(|p| p.1).sum();
        self.stats.completed(op, bytes, started, now_ns());
        let mut data = if op == Op::Flush {
            virtio_blk_req::Data::None
        } else if op == Op::Write {
            virtio_blk_req::Data::Out(
                pieces
                    .iter()
                    // SAFETY: the write's pieces, valid until its waiter learns the result
                    // ([`Detached::pieces`]); the device only reads them.
                    .map(|&(a, l)| unsafe { core::slice::from_raw_parts(a as *const u8, l) })
                    .collect(),
            )
        } else {
            virtio_blk_req::Data::In(
                pieces
                    .iter()
                    // SAFETY: the read's pieces, valid until its waiter learns the result
                    // ([`Detached::pieces`]); nothing else uses them while the device does.
                    .map(|&(a, l)| unsafe { core::slice::from_raw_parts_mut(a as *mut u8, l) })
                    .collect(),
            )
        };
        let popped = {
            let (device_reads, mut device_writes) = buffers(&mut head, &mut data);
            // SAFETY: the buffers that were added with `t`: header, the read's pieces, status.
            unsafe { self.queue.pop_used(t, &device_reads, &mut device_writes) }
        };
        let ok = popped.is_ok() && status_result(head.status).is_ok();
        match waiter {
            Some(id) => {
                if !ok {
                    log::error!(
                        "{}: {} failed ({:?}, status {})",
                        name,
                        op.name(),
                        popped.err(),
                        head.status
                    );
                }
                self.finished
                    .push((id, if ok { Ok(()) } else { Err(VfsError::Io) }));
                self.results_for_waiters = true;
            }
            None if !ok => log::warn!(
                "{}: background flush failed ({:?}, status {})",
                name,
                popped.err(),
                head.status
            ),
            None => {}
        }
        true
    }

    /// Take back every detached request the device has completed: false if a completion is
    /// not one of them (with the lock held no [`VirtioDisk::run`] is in progress, so that is
    /// a protocol error).
    fn reap_completed(&mut self, name: &str) -> bool {
        while let Some(token) = self.queue.peek_used() {
            if !self.reap_detached(token, name) {
                return false;
            }
        }
        self.update_notify();
        true
    }

    /// Put a flush in the queue as a detached request; its token, or `None` if the queue has
    /// no room.
    fn submit_detached_flush(&mut self, waiter: Option<u64>) -> Option<u16> {
        if waiter.is_some() {
            self.queue.set_dev_notify(true);
        }
        let mut req = Request::flush();
        let mut head = Box::new(req.head());
        let (device_reads, mut device_writes) = buffers(&mut head, &mut req.data);
        // SAFETY: the header/status box moves into `self.detached` and stays alive until the
        // token is popped by `reap_detached` (or the device is reset); a flush has no data.
        let added = unsafe { self.queue.add(&device_reads, &mut device_writes) };
        drop((device_reads, device_writes));
        let token = added.ok()?;
        crate::counters::add_dev_flush();
        let started = now_ns();
        self.stats.submitted(started);
        self.detached.push(Detached {
            token,
            head,
            pieces: Vec::new(),
            op: Op::Flush,
            started,
            irq: waiter.is_some(),
            waiter,
        });
        if self.queue.should_notify() {
            self.transport.notify(QUEUE);
        }
        Some(token)
    }

    /// Put read or write `req` in the queue as a detached request of `waiter` (without
    /// notifying the device), asking for its completion interrupt if `irq`; gives the request
    /// back if the queue has no room.
    ///
    /// # Safety
    /// The request's pieces must stay valid, and untouched by anyone but the device, until
    /// `waiter` finds its result in [`Device::finished`] (or the device is reset).
    unsafe fn submit_detached<'a>(
        &mut self,
        mut req: Request<'a>,
        waiter: u64,
        irq: bool,
    ) -> Result<(), Request<'a>> {
        if irq {
            self.queue.set_dev_notify(true);
        }
        let mut head = Box::new(req.head());
        let (device_reads, mut device_writes) = buffers(&mut head, &mut req.data);
        // SAFETY: the header/status box moves into `self.detached`; the pieces stay valid
        // (the caller's promise) until the token is popped by `reap_detached`.
        let added = unsafe { self.queue.add(&device_reads, &mut device_writes) };
        drop((device_reads, device_writes));
        let Ok(token) = added else {
            return Err(req);
        };
        let started = now_ns();
        self.stats.submitted(started);
        let op = Op::of(req.request_type);
        if op == Op::Write {
            crate::counters::add_dev_write(req.bytes());
        } else {
            crate::counters::add_dev_read(req.bytes());
            if self
                .detached
                .iter()
                .any(|d| d.waiter.is_some_and(|w| w != waiter))
            {
                crate::counters::add_dev_read_overlapped();
            }
        }
        let pieces = match &mut req.data {
            virtio_blk_req::Data::In(p) => p
                .iter_mut()
                .map(|p| (p.as_mut_ptr() as usize, p.len()))
                .collect(),
            virtio_blk_req::Data::Out(p) => {
                p.iter().map(|p| (p.as_ptr() as usize, p.len())).collect()
            }
            virtio_blk_req::Data::None => Vec::new(),
        };
        self.detached.push(Detached {
            token,
            head,
            pieces,
            op,
            started,
            irq,
            waiter: Some(waiter),
        });
        Ok(())
    }
}

/// A submitted request: what must stay alive until the device hands its token back.
struct InFlight<'a> {
    token: u16,
    head: Box<RequestHead>,
    req: Request<'a>,
    /// When it went to the device, for [`Device::stats`].
    started: u64,
}

/// One virtio-blk disk.
pub struct VirtioDisk {
    dev: SpinLock<Device, { rank::DISK }>,
    /// Size, pieces per request (the device's `seg_max`, and at most what one descriptor chain
    /// of our queue can hold: header and status take two entries), read-only.
    limits: Limits,
    has_flush: bool,
    pub name: String,
    /// The MMIO registers (direct map): the interrupt handler acknowledges through them
    /// without the lock.
    mmio: usize,
    /// The PLIC source of its completion interrupts; 0 if not routed (waits poll).
    irq: u32,
    /// Threads sleeping until a detached request of theirs completes ([`Self::wait_detached`]).
    waiters: WaitQueue,
    /// Completion interrupts taken, per hart slot (all on the routed one).
    interrupts: [AtomicU64; MAX_HARTS],
}

/// Every disk, for the interrupt handler ([`interrupts::interrupt`]) and the waiters' poll
/// ([`interrupts::poll`]).
pub(super) static DISKS: spin::Once<Vec<Arc<VirtioDisk>>> = spin::Once::new();
/// Threads in [`VirtioDisk::wait_detached`] asleep (or about to be), on any disk.
static SLEEPERS: AtomicUsize = AtomicUsize::new(0);

/// How a thread that may give the CPU away waits for its detached requests: asleep until the
/// completion interrupt, or polling while no other hart waits for the big kernel lock.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Wait {
    Sleep,
    WhenWanted,
    /// Poll first, for at most [`POLL_FIRST_NS`] and while no other hart waits for the big
    /// kernel lock if the caller holds it, then sleep (a caller without the lock takes it
    /// to sleep). For a read when no other thread is ready on its hart.
    PollFirst,
}

/// How long a read polls for its requests before it sleeps ([`Wait::PollFirst`]): about a
/// 1 MiB read's time on the emulated disk. Such a read then completes without a completion
/// interrupt and a wake-up, and one without the big kernel lock without taking it.
const POLL_FIRST_NS: u64 = 1_000_000;
/// How long a waiter sleeps at most before it looks at the used ring itself: the backstop
/// for a completion interrupt that never came (a misrouted source, a device that ignores
/// `NO_INTERRUPT`'s clearing).
const BACKSTOP_NS: u64 = 20_000_000;

/// The clock of [`Device::stats`].
fn now_ns() -> u64 {
    crate::arch::time::monotonic_ns()
}

impl VirtioDisk {
    /// Most data pieces one request carries (the device's `seg_max`, at most
    /// [`QUEUE_SIZE`] - 2).
    pub fn max_segments(&self) -> usize {
        self.limits.max_segments
    }

    fn io_err<E: core::fmt::Debug>(&self, what: &str, e: E) -> VfsError {
        log::error!("{}: {} failed: {:?}", self.name, what, e);
        VfsError::Io
    }

    /// Initialise the device behind `transport` (virtio 1.1, 3.1.1): negotiate features, read
    /// the capacity and `seg_max`, set up the queue.
    pub(super) fn new(
        mut transport: MmioTransport<'static>,
        mmio: usize,
        irq: u32,
        name: String,
    ) -> Result<VirtioDisk, String> {
        transport.set_status(DeviceStatus::empty()); // reset
        transport.set_status(DeviceStatus::ACKNOWLEDGE | DeviceStatus::DRIVER);
        let features =
            Features::from_bits_truncate(transport.read_device_features()) & Features::WANTED;
        transport.write_driver_features(features.bits());
        let negotiating =
            DeviceStatus::ACKNOWLEDGE | DeviceStatus::DRIVER | DeviceStatus::FEATURES_OK;
        transport.set_status(negotiating);
        let fail = |transport: &mut MmioTransport<'static>, why: String| {
            transport.set_status(negotiating | DeviceStatus::FAILED);
            Err(why)
        };
        // Only a virtio 1.x device may refuse the features by clearing FEATURES_OK.
        if features.contains(Features::VERSION_1)
            && !transport.get_status().contains(DeviceStatus::FEATURES_OK)
        {
            return fail(
                &mut transport,
                alloc::format!("device refused features {:#x}", features),
            );
        }
        transport.set_guest_page_size(PAGE_SIZE as u32);

        let offered = transport.max_queue_size(QUEUE);
        if offered < QUEUE_SIZE as u32 {
            return fail(
                &mut transport,
                alloc::format!(
                    "device offers a queue of {} entries; this driver needs {}",
                    offered,
                    QUEUE_SIZE
                ),
            );
        }
        let config = transport.read_consistent(|| {
            let low: u32 = transport.read_config_space(config::CAPACITY_LOW)?;
            let high: u32 = transport.read_config_space(config::CAPACITY_HIGH)?;
            let seg_max: u32 = if features.contains(Features::SEG_MAX) {
                transport.read_config_space(config::SEG_MAX)?
            } else {
                0
            };
            Ok((u64::from(low) | (u64::from(high) << 32), seg_max))
        });
        let (sectors, seg_max) = match config {
            Ok(c) => c,
            Err(e) => return fail(&mut transport, alloc::format!("config space: {:?}", e)),
        };
        let max_segments = virtio_blk_req::max_segments(features, seg_max, QUEUE_SIZE);
        let indirect = features.contains(Features::RING_INDIRECT_DESC);
        let mut queue = match VirtQueue::new(&mut transport, QUEUE, indirect, false) {
            Ok(q) => q,
            Err(e) => return fail(&mut transport, alloc::format!("queue setup: {:?}", e)),
        };
        // No completion interrupts until a request has a sleeping waiter (`update_notify`).
        queue.set_dev_notify(false);
        transport.finish_init();
        log::info!(
            "{}: {} MiB, features {:#x}, {} pieces per request{}",
            name,
            (sectors * SECTOR_SIZE as u64) >> 20,
            features.bits(),
            max_segments,
            if indirect { ", indirect" } else { "" }
        );
        Ok(VirtioDisk {
            dev: SpinLock::new(Device {
                transport,
                queue,
                broken: false,
                detached: Vec::new(),
                finished: Vec::new(),
                next_waiter: 0,
                results_for_waiters: false,
                stats: DiskStats::new(),
            }),
            limits: Limits {
                sectors,
                max_segments,
                read_only: features.contains(Features::RO),
            },
            has_flush: features.contains(Features::FLUSH),
            name,
            mmio,
            irq,
            waiters: WaitQueue::new(),
            interrupts: [const { AtomicU64::new(0) }; MAX_HARTS],
        })
    }

    /// Send `requests` to the device and wait until all have completed. The queue is kept
    /// full: requests are added until it has no room, the device is notified once for the
    /// batch, and each completion (in whatever order the device finishes them) makes room for
    /// more. After the first failure nothing more is submitted; what is in flight is drained
    /// (its buffers are borrowed from the caller and must not be given back while the device
    /// may still use them), then the error is returned.
    fn run(&self, what: &str, requests: Vec<Request<'_>>) -> VfsResult<()> {
        let mut guard = self.dev.lock();
        let dev = &mut *guard;
        if dev.broken {
            return Err(VfsError::Io);
        }
        let mut pending = requests.into_iter();
        let mut waiting: Option<Request<'_>> = None; // did not fit the queue last time
        let mut inflight: Vec<InFlight<'_>> = Vec::new();
        let mut result = Ok(());
        loop {
            let mut added = false;
            while result.is_ok() {
                let Some(mut req) = waiting.take().or_else(|| pending.next()) else {
                    break;
                };
                let mut head = Box::new(req.head());
                let (device_reads, mut device_writes) = buffers(&mut head, &mut req.data);
                // SAFETY: every buffer stays valid and untouched until its token is popped
                // below: the header and status are boxed (a stable address) and move into
                // `inflight` with the request, whose data is borrowed for this whole call,
                // which does not return while anything is in flight (or the device was reset).
                let added_token = unsafe { dev.queue.add(&device_reads, &mut device_writes) };
                drop((device_reads, device_writes));
                match added_token {
                    Ok(token) => {
                        match req.request_type {
                            RequestType::In => crate::counters::add_dev_read(req.bytes()),
                            RequestType::Out => crate::counters::add_dev_write(req.bytes()),
                            _ => crate::counters::add_dev_flush(),
                        }
                        let started = now_ns();
                        dev.stats.submitted(started);
                        inflight.push(InFlight {
                            token,
                            head,
                            req,
                            started,
                        });
                        added = true;
                    }
                    Err(virtio_drivers::Error::QueueFull)
                        if !inflight.is_empty() || !dev.detached.is_empty() =>
                    {
                        waiting = Some(req);
                        break;
                    }
                    Err(e) => result = Err(self.io_err(what, e)),
                }
            }
            if added && dev.queue.should_notify() {
                dev.transport.notify(QUEUE);
            }
            // Done when nothing is in flight and nothing waits for room (a request waits only
            // while something else, perhaps a background flush, holds the queue; after an
            // error it is not sent).
            if inflight.is_empty() && (waiting.is_none() || result.is_err()) {
                return result;
            }
            // Complete whatever the device has finished (spin until something has).
            let Some(token) = dev.queue.peek_used() else {
                core::hint::spin_loop();
                continue;
            };
            if dev.reap_detached(token, &self.name) {
                continue;
            }
            let Some(i) = inflight.iter().position(|f| f.token == token) else {
                self.reset(dev);
                return Err(self.io_err(what, "completion of a request never submitted"));
            };
            let mut done = inflight.swap_remove(i);
            let op = Op::of(done.req.request_type);
            dev.stats
                .completed(op, done.req.bytes(), done.started, now_ns());
            let popped = {
                let (device_reads, mut device_writes) = buffers(&mut done.head, &mut done.req.data);
                // SAFETY: the same buffers, built the same way, that were added with `token`.
                unsafe { dev.queue.pop_used(token, &device_reads, &mut device_writes) }
            };
            match popped.map(|_| status_result(done.head.status)) {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    log::error!(
                        "{}: {} failed: sector {}: status {}",
                        self.name,
                        what,
                        done.req.sector,
                        done.head.status
                    );
                    result = result.and(Err(e));
                }
                Err(e) => {
                    // Cannot happen after `peek_used` gave this token; if it does, the queue
                    // state is unknown: stop the device before the borrowed buffers go back.
                    self.reset(dev);
                    return Err(self.io_err(what, e));
                }
            }
        }
    }

    /// Read into `pieces` with detached requests and wait for them with the disk's lock
    /// released ([`Self::wait_detached`]: the thread sleeps when it may give the CPU away).
    /// Requests that find no room in the queue are sent the ordinary way once the others are
    /// done. The caller keeps `pieces` valid until this returns (it borrows them for the
    /// whole call).
    fn read_detached(&self, sector: u64, pieces: &mut [&mut [u8]]) -> VfsResult<()> {
        let requests = self.limits.read_requests(sector, pieces)?;
        self.detached("read", requests, Wait::Sleep)
    }

    /// Send `requests` (a read's or a write's, whose pieces are the caller's alone for the
    /// whole call) detached, then wait for them with the lock released; those that find no
    /// room in the queue are sent the ordinary way once the others are done.
    fn detached(&self, what: &str, requests: Vec<Request<'_>>, how: Wait) -> VfsResult<()> {
        let mut requests = requests.into_iter();
        let mut left: Vec<Request<'_>> = Vec::new();
        // A read with no other thread ready on its hart polls first. Another caller without
        // the big kernel lock (`task::may_wait_away_reading`), whose requests are built and
        // sent in parallel with other harts, sleeps under the lock like any other.
        let how = if how == Wait::Sleep && self.irq != 0 {
            if crate::task::others_ready_here() {
                crate::task::lock_kernel();
                Wait::Sleep
            } else {
                Wait::PollFirst
            }
        } else {
            how
        };
        let (id, sent) = {
            let mut guard = self.dev.lock();
            let dev = &mut *guard;
            let id = dev.new_waiter()?;
            let mut sent = 0;
            for req in requests.by_ref() {
                // SAFETY: the pieces are the caller's buffers, borrowed for this whole call,
                // which does not return before `wait_detached` has seen every one complete.
                match unsafe { dev.submit_detached(req, id, how == Wait::Sleep) } {
                    Ok(()) => sent += 1,
                    Err(req) => {
                        left.push(req);
                        break;
                    }
                }
            }
            if sent > 0 && dev.queue.should_notify() {
                dev.transport.notify(QUEUE);
            }
            (id, sent)
        };
        left.extend(requests);
        let waited = if sent > 0 {
            self.wait_detached(id, sent, how)
        } else {
            Ok(())
        };
        waited?;
        if left.is_empty() {
            Ok(())
        } else {
            self.run(what, left)
        }
    }

    /// Reset the device (status 0): it stops using the queue and every buffer in it, so the
    /// caller may give them back. The disk is unusable afterwards.
    fn reset(&self, dev: &mut Device) {
        dev.transport.set_status(DeviceStatus::empty());
        dev.broken = true;
        // Nothing is in flight any more: the device dropped it all.
        dev.stats = dev.stats.at(now_ns());
        dev.stats.in_flight = 0;
        // The device no longer touches their buffers; whoever waits for one learns it failed.
        for d in core::mem::take(&mut dev.detached) {
            if let Some(id) = d.waiter {
                dev.finished.push((id, Err(VfsError::Io)));
                dev.results_for_waiters = true;
            }
        }
        log::error!(
            "{}: device reset after a protocol error; further I/O fails",
            self.name
        );
    }

    /// Wait, with the lock released, until `count` detached requests of waiter `id` have completed:
    /// their first failure, if any. The wait is [`crate::task::away`] (the caller holds locks,
    /// kvdb's writer lock, meanwhile). A thread that may give the CPU away (with
    /// [`Wait::WhenWanted`], once another hart waits for the big kernel lock; with
    /// [`Wait::PollFirst`], after [`POLL_FIRST_NS`] too, a caller without the big kernel lock
    /// taking it to sleep and letting it go after, `task::lock_for_wait`) sleeps on the disk's wait
    /// queue (prepare to wait, look, sleep: [`WaitQueue`]) until the completion interrupt
    /// ([`interrupts::interrupt`]) or the scheduler's poll ([`interrupts::poll`]) wakes it, at most
    /// [`BACKSTOP_NS`] at a time; one that may not ([`crate::task::keep_cpu`], or boot before any
    /// thread) polls. Whoever holds the lock when a request completes takes it back and records its
    /// result in [`Device::finished`].
    fn wait_detached(&self, id: u64, count: usize, how: Wait) -> VfsResult<()> {
        let mut may_sleep = crate::task::may_give_cpu_away() && self.irq != 0;
        let mut sleep = may_sleep && how == Wait::Sleep;
        let poll_until = crate::arch::time::monotonic_ns() + POLL_FIRST_NS;
        let mut polled = false;
        let mut took = false;
        let mut left = count;
        let mut result = Ok(());
        if sleep {
            SLEEPERS.fetch_add(1, Relaxed);
        }
        let r = crate::task::away(|| loop {
            // Queued before the look: a wake-up after it (the interrupt, or a caller that
            // reaps this waiter's completion) takes the thread off the queue, and
            // `sleep_prepared` then does not block.
            if sleep {
                self.waiters.prepare_to_wait();
            }
            let mut guard = self.dev.lock();
            let dev = &mut *guard;
            if !dev.reap_completed(&self.name) {
                self.reset(dev);
            }
            dev.finished.retain(|&(w, r)| {
                if w == id {
                    left -= 1;
                    result = result.and(r);
                }
                w != id
            });
            // Other waiters' results reaped here: wake them (this thread too, which then
            // looks once more instead of sleeping). The caller holds no spin lock, so the
            // wake-up's locks are taken in order.
            let wake = core::mem::take(&mut dev.results_for_waiters) && !dev.finished.is_empty();
            drop(guard);
            if wake {
                self.waiters.wake_all();
            }
            // A reset gives every detached request's waiter its failure, so `left` reaches
            // 0 then too.
            if left == 0 {
                if sleep {
                    self.waiters.finish_wait();
                }
                return result;
            }
            if sleep {
                let deadline = crate::arch::time::monotonic_ns() + BACKSTOP_NS;
                self.waiters.sleep_prepared(Some(deadline));
                // The backstop must not wake the thread later, in some other sleep.
                crate::task::wait::drop_timers(crate::task::current_tid());
            } else {
                // Polled long enough (`PollFirst`): a caller without the big kernel lock takes
                // it, and one that may sleep then does, as when the lock is wanted.
                let polled_enough = how == Wait::PollFirst
                    && !polled
                    && crate::arch::time::monotonic_ns() > poll_until;
                if polled_enough {
                    polled = true;
                    took = crate::task::lock_for_wait();
                    may_sleep = crate::task::may_give_cpu_away() && self.irq != 0;
                }
                if may_sleep && (polled_enough || crate::arch::hart::others_wait_for_lock()) {
                    // Ask for the interrupt, look once more (queued), then sleep.
                    self.dev.lock().want_irq(id);
                    sleep = true;
                    SLEEPERS.fetch_add(1, Relaxed);
                } else {
                    core::hint::spin_loop();
                }
            }
        });
        if sleep {
            SLEEPERS.fetch_sub(1, Relaxed);
        }
        crate::task::end_wait(took);
        r
    }
}

impl BlockDevice for VirtioDisk {
    fn num_sectors(&self) -> u64 {
        self.limits.sectors
    }

    /// One request per [`MAX_REQUEST`] bytes, all in flight together.
    fn read_sectors(&self, sector: u64, buf: &mut [u8]) -> VfsResult<()> {
        self.read_scatter(sector, &mut [buf])
    }

    /// The run as one request whose data is the pieces (split only past `seg_max` pieces or
    /// [`MAX_REQUEST`] bytes), all in flight together: the device fills each piece in place.
    fn read_scatter(&self, sector: u64, pieces: &mut [&mut [u8]]) -> VfsResult<()> {
        let requests = self.limits.read_requests(sector, pieces)?;
        self.run("read", requests)
    }

    fn write_sectors(&self, sector: u64, buf: &[u8]) -> VfsResult<()> {
        self.write_gather(&[(sector, &[buf])])
    }

    /// Each run as its own request(s), all in flight together.
    fn write_runs(&self, runs: &[(u64, &[u8])]) -> VfsResult<()> {
        let pieces: Vec<(u64, &[&[u8]])> = runs
            .iter()
            .map(|(sector, bytes)| (*sector, core::slice::from_ref(bytes)))
            .collect();
        self.write_gather(&pieces)
    }

    /// Each run as one request whose data is its pieces (split only past `seg_max` pieces or
    /// [`MAX_REQUEST`] bytes), all in flight together; the pieces are not copied.
    fn write_gather(&self, runs: &[(u64, &[&[u8]])]) -> VfsResult<()> {
        let requests = self.limits.write_requests(runs)?;
        self.run("write", requests)
    }

    /// [`BlockDevice::write_gather`] sent detached when the caller's buffers cannot be
    /// unmapped meanwhile (as for `read_scatter_shared`) and several harts run: the caller
    /// polls until another hart waits for the big kernel lock, then sleeps
    /// ([`Wait::WhenWanted`]; always sleeping made a lone 1 MiB write about 0.3 ms slower).
    fn write_gather_shared(&self, runs: &[(u64, &[&[u8]])]) -> VfsResult<()> {
        if crate::arch::hart::count() < 2
            || !crate::task::may_wait_away_reading()
            || !crate::task::may_give_cpu_away()
            || self.irq == 0
        {
            return self.write_gather(runs);
        }
        let requests = self.limits.write_requests(runs)?;
        self.detached("write", requests, Wait::WhenWanted)
    }

    /// A FLUSH request when the device has a write cache; without `VIRTIO_BLK_F_FLUSH` a
    /// completed write is already durable and nothing is sent.
    fn flush(&self) -> VfsResult<()> {
        if !self.has_flush {
            return Ok(());
        }
        self.run("flush", vec![Request::flush()])
    }

    /// A flush whose wait lets other tasks run: submitted as a detached request, then the
    /// caller polls for it with the disk's lock released, giving the CPU away between polls
    /// ([`crate::task::relax`]; a thread in [`crate::task::keep_cpu`] polls instead). Any
    /// request layer call that holds the lock meanwhile reaps it if it completes then. The
    /// caller must hold no lock that another task may wait for by spinning (the kernel's own
    /// and kvdb's locks give the CPU away when held).
    fn flush_shared(&self) -> VfsResult<()> {
        if !self.has_flush {
            return Ok(());
        }
        let id = {
            let mut guard = self.dev.lock();
            let dev = &mut *guard;
            let id = dev.new_waiter()?;
            if dev.submit_detached_flush(Some(id)).is_none() {
                drop(guard);
                return self.flush(); // no room: wait as any request does
            }
            id
        };
        self.wait_detached(id, 1, Wait::Sleep)
    }

    /// A scattered read whose wait lets other tasks run, when the caller's buffers cannot be
    /// unmapped meanwhile ([`crate::task::may_wait_away_reading`]; else as `read_scatter`):
    /// its requests are submitted as detached ones, then the caller gives the CPU away until
    /// all have completed, as [`BlockDevice::flush_shared`] does. Requests that find no room
    /// in the queue are sent the ordinary way once the others are done.
    fn read_scatter_shared(&self, sector: u64, pieces: &mut [&mut [u8]]) -> VfsResult<()> {
        if !crate::task::may_wait_away_reading() {
            return self.read_scatter(sector, pieces);
        }
        self.read_detached(sector, pieces)
    }

    /// A scattered read into kernel memory the caller owns for the whole call (a disk
    /// window's fresh frames): its wait lets other tasks run whenever the thread may give the
    /// CPU away ([`crate::task::may_give_cpu_away`]; else as `read_scatter`), as
    /// [`BlockDevice::read_scatter_shared`]'s does.
    fn read_scatter_owned(&self, sector: u64, pieces: &mut [&mut [u8]]) -> VfsResult<()> {
        if !crate::task::may_give_cpu_away() {
            return self.read_scatter(sector, pieces);
        }
        self.read_detached(sector, pieces)
    }

    /// Submit a flush and return without waiting for it (at most one background flush in
    /// flight; none if one still is). The host makes the completed writes durable while the
    /// guest runs on, so a later `flush` finds little left to do.
    fn flush_behind(&self) {
        if !self.has_flush {
            return;
        }
        let mut guard = self.dev.lock();
        let dev = &mut *guard;
        if dev.broken {
            return;
        }
        if !dev.reap_completed(&self.name) || dev.detached.iter().any(|d| d.waiter.is_none()) {
            return;
        }
        dev.submit_detached_flush(None);
    }
}
