//! virtio-blk disks through the `virtio-drivers` crate (MMIO transport, polled completion).
//!
//! Each disk is a [`VirtioDisk`] implementing `vfs::BlockDevice`. A run of sectors is sent as
//! one request of up to [`MAX_REQUEST`] bytes; larger runs are split. Buffers handed to the
//! device are kernel memory, identity-mapped, so their kernel address is their physical one.

use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::alloc::Layout;
use core::ptr::NonNull;

use spin::Mutex;
use vfs::{BlockDevice, VfsError, VfsResult, SECTOR_SIZE};
use virtio_drivers::device::blk::{BlkReq, BlkResp, VirtIOBlk};
use virtio_drivers::transport::mmio::{MmioTransport, VirtIOHeader};
use virtio_drivers::transport::{DeviceType, Transport};
use virtio_drivers::{BufferDirection, Hal, PhysAddr, PAGE_SIZE};

/// Largest single request.
pub const MAX_REQUEST: usize = 1 << 20;

pub struct KernelHal;

// SAFETY: `dma_alloc` returns zeroed, page-aligned, exclusively owned heap memory whose
// physical address equals its (identity-mapped) virtual address; `share` returns that address
// for kernel buffers, which are all identity-mapped.
unsafe impl Hal for KernelHal {
    fn dma_alloc(pages: usize, _direction: BufferDirection) -> (PhysAddr, NonNull<u8>) {
        let layout = Layout::from_size_align(pages * PAGE_SIZE, PAGE_SIZE).expect("DMA layout");
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { alloc::alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(ptr).expect("out of memory for virtio DMA");
        (ptr.as_ptr() as PhysAddr, ptr)
    }

    unsafe fn dma_dealloc(_paddr: PhysAddr, vaddr: NonNull<u8>, pages: usize) -> i32 {
        let layout = Layout::from_size_align(pages * PAGE_SIZE, PAGE_SIZE).expect("DMA layout");
        // SAFETY: the caller passes back exactly what `dma_alloc` returned.
        unsafe { alloc::alloc::dealloc(vaddr.as_ptr(), layout) };
        0
    }

    unsafe fn mmio_phys_to_virt(paddr: PhysAddr, _size: usize) -> NonNull<u8> {
        NonNull::new(paddr as *mut u8).expect("null MMIO address")
    }

    unsafe fn share(buffer: NonNull<[u8]>, _direction: BufferDirection) -> PhysAddr {
        buffer.as_ptr() as *mut u8 as PhysAddr
    }

    unsafe fn unshare(_paddr: PhysAddr, _buffer: NonNull<[u8]>, _direction: BufferDirection) {}
}

type Blk = VirtIOBlk<KernelHal, MmioTransport<'static>>;

/// One virtio-blk disk.
pub struct VirtioDisk {
    blk: Mutex<Blk>,
    sectors: u64,
    pub name: alloc::string::String,
}

impl VirtioDisk {
    fn io_err<E: core::fmt::Debug>(&self, what: &str, e: E) -> VfsError {
        log::error!("{}: {} failed: {:?}", self.name, what, e);
        VfsError::Io
    }
}

impl BlockDevice for VirtioDisk {
    fn num_sectors(&self) -> u64 {
        self.sectors
    }

    fn read_sectors(&self, sector: u64, buf: &mut [u8]) -> VfsResult<()> {
        vfs::check_run(self.sectors, sector, buf.len())?;
        let mut blk = self.blk.lock();
        for (i, chunk) in buf.chunks_mut(MAX_REQUEST).enumerate() {
            let at = sector + (i * MAX_REQUEST / SECTOR_SIZE) as u64;
            blk.read_blocks(at as usize, chunk).map_err(|e| self.io_err("read", e))?;
            crate::counters::add_dev_read(chunk.len());
        }
        Ok(())
    }

    fn write_sectors(&self, sector: u64, buf: &[u8]) -> VfsResult<()> {
        vfs::check_run(self.sectors, sector, buf.len())?;
        let mut blk = self.blk.lock();
        for (i, chunk) in buf.chunks(MAX_REQUEST).enumerate() {
            let at = sector + (i * MAX_REQUEST / SECTOR_SIZE) as u64;
            blk.write_blocks(at as usize, chunk).map_err(|e| self.io_err("write", e))?;
            crate::counters::add_dev_write(chunk.len());
        }
        Ok(())
    }

    /// Keep the queue full: submit runs without waiting, complete them as the device finishes
    /// them (in any order), submit more. One round trip per queue-full instead of per run.
    fn write_runs(&self, runs: &[(u64, &[u8])]) -> VfsResult<()> {
        struct InFlight<'a> {
            token: u16,
            req: Box<BlkReq>,
            resp: Box<BlkResp>,
            buf: &'a [u8],
        }
        // Split runs longer than one request.
        let mut pieces: Vec<(u64, &[u8])> = Vec::new();
        for &(sector, bytes) in runs {
            vfs::check_run(self.sectors, sector, bytes.len())?;
            for (i, chunk) in bytes.chunks(MAX_REQUEST).enumerate() {
                if !chunk.is_empty() {
                    pieces.push((sector + (i * MAX_REQUEST / SECTOR_SIZE) as u64, chunk));
                }
            }
        }
        let mut blk = self.blk.lock();
        let mut inflight: Vec<InFlight> = Vec::new();
        let mut result = Ok(());
        let mut next = 0;
        while next < pieces.len() || !inflight.is_empty() {
            // Submit while the queue has room (and nothing failed).
            while next < pieces.len() && result.is_ok() {
                let (sector, buf) = pieces[next];
                let mut req = Box::new(BlkReq::default());
                let mut resp = Box::new(BlkResp::default());
                // SAFETY: `req`, `resp` (boxed: stable addresses) and `buf` (borrowed for this
                // call) are not touched until the request completes below.
                match unsafe { blk.write_blocks_nb(sector as usize, &mut req, buf, &mut resp) } {
                    Ok(token) => {
                        inflight.push(InFlight { token, req, resp, buf });
                        crate::counters::add_dev_write(buf.len());
                        next += 1;
                    }
                    Err(virtio_drivers::Error::QueueFull) if !inflight.is_empty() => break,
                    Err(e) => result = Err(self.io_err("write", e)),
                }
            }
            if result.is_err() && inflight.is_empty() {
                break;
            }
            // Complete whatever the device has finished (spin until something has).
            let Some(token) = blk.peek_used() else {
                core::hint::spin_loop();
                continue;
            };
            let Some(i) = inflight.iter().position(|f| f.token == token) else {
                return Err(self.io_err("write", "unknown completion token"));
            };
            let mut f = inflight.swap_remove(i);
            // SAFETY: the same request, buffer and response that were submitted with `token`.
            let r = unsafe { blk.complete_write_blocks(token, &f.req, f.buf, &mut f.resp) };
            if let Err(e) = r {
                result = Err(self.io_err("write", e));
            }
            if result.is_err() {
                next = pieces.len(); // stop submitting; drain what is in flight
            }
        }
        result
    }

    fn flush(&self) -> VfsResult<()> {
        crate::counters::add_dev_flush();
        self.blk.lock().flush().map_err(|e| self.io_err("flush", e))
    }
}

/// Probe the virtio MMIO slots `(base, size)` and return the block devices found, named
/// vda, vdb, ... in the order QEMU's command line created them.
pub fn probe(mut slots: Vec<(usize, usize)>) -> Vec<Arc<VirtioDisk>> {
    // QEMU `virt` fills the MMIO slots from the highest address down, so the first `-device`
    // on the command line sits at the highest address: walk them downwards.
    slots.sort_unstable_by_key(|s| core::cmp::Reverse(s.0));
    let mut disks = Vec::new();
    for (base, size) in slots {
        let Some(header) = NonNull::new(base as *mut VirtIOHeader) else { continue };
        // SAFETY: `base`/`size` describe a virtio MMIO region from the device tree, identity
        // mapped and used by nothing else for the life of the kernel.
        let transport = match unsafe { MmioTransport::new(header, size) } {
            Ok(t) => t,
            Err(_) => continue, // empty slot
        };
        if transport.device_type() != DeviceType::Block {
            continue;
        }
        match VirtIOBlk::<KernelHal, _>::new(transport) {
            Ok(blk) => {
                let name = alloc::format!("vd{}", (b'a' + disks.len() as u8) as char);
                let sectors = blk.capacity();
                log::info!("{}: virtio-blk at {:#x}, {} MiB", name, base, (sectors * SECTOR_SIZE as u64) >> 20);
                disks.push(Arc::new(VirtioDisk { blk: Mutex::new(blk), sectors, name }));
            }
            Err(e) => log::warn!("virtio-blk at {:#x}: {:?}", base, e),
        }
    }
    disks
}
