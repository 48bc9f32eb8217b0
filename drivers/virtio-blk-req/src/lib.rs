//! virtio-blk requests without a device: the part of the kernel's virtio-blk driver that needs
//! no MMIO, so that `cargo test` checks it on the host.
//!
//! Layer: below the kernel's `drivers/virtio_blk.rs` (which owns the transport, the queue and
//! the completion loop), above `vfs` (sector size, run checks, [`VfsError`]).
//!
//! # Contract
//! - The wire layout (virtio 1.1, 5.2.6) has one definition here: a request is a
//!   [`RequestHeader`] the device reads (type, reserved, sector; all little-endian), then the
//!   data pieces (device-read for a write, device-written for a read), then one status byte
//!   the device writes ([`Status`]). [`buffers`] lays a request out in that order.
//! - The feature bits the driver negotiates are [`Features::WANTED`]; the config-space offsets
//!   it reads are [`config`].
//! - A disk run is split into requests of at most [`MAX_REQUEST`] bytes and the device's
//!   `seg_max` pieces ([`split_run`]), each request whole sectors; every run is checked first
//!   (whole sectors in all, only its first and last piece may end or start inside a sector,
//!   inside the disk, writable), so a bad one sends nothing ([`Limits`]).
//! - A completion's status byte becomes a [`VfsError`] in one place ([`status_result`]).
//! - A disk's I/O statistics (`/proc/diskstats`) are counted by [`stats::DiskStats`].
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

extern crate alloc;

use alloc::vec;
use alloc::vec::Vec;

use vfs::{VfsError, VfsResult, SECTOR_SIZE};
use zerocopy::little_endian::{U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

pub mod stats;

/// Largest single request, in bytes: a longer run is split into several requests.
pub const MAX_REQUEST: usize = 1 << 20;

bitflags::bitflags! {
    /// The device feature bits this driver knows (virtio 1.1, 5.2.3 and 6).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Features: u64 {
        /// `seg_max` in the config space is the most data segments of one request.
        const SEG_MAX = 1 << 2;
        /// The device is read-only: writes would fail.
        const RO = 1 << 5;
        /// The device has a write cache and takes FLUSH requests; without it writes are
        /// durable on completion.
        const FLUSH = 1 << 9;
        /// Indirect descriptor tables: a request of any piece count takes one queue entry.
        const RING_INDIRECT_DESC = 1 << 28;
        /// A non-legacy device; a driver must accept it when offered.
        const VERSION_1 = 1 << 32;
    }
}

impl Features {
    /// What the driver accepts when the device offers it: every bit above.
    pub const WANTED: Features = Features::all();
}

/// Config-space offsets (virtio 1.1, 5.2.4): capacity (u64, read as two u32 because MMIO only
/// guarantees 4-byte alignment), size_max (u32), seg_max (u32), ...
pub mod config {
    /// Low half of the capacity in sectors.
    pub const CAPACITY_LOW: usize = 0;
    /// High half of the capacity in sectors.
    pub const CAPACITY_HIGH: usize = 4;
    /// Most data segments of one request (valid with [`crate::Features::SEG_MAX`]).
    pub const SEG_MAX: usize = 12;
}

/// Most data pieces one request may carry: the device's `seg_max` (when it offers
/// [`Features::SEG_MAX`]; a device claiming 0 gets 1, since a request needs a data piece), and
/// at most what one descriptor chain of a `queue_size` queue holds beside header and status.
pub fn max_segments(features: Features, seg_max: u32, queue_size: usize) -> usize {
    let chain_room = queue_size.saturating_sub(2).max(1);
    if features.contains(Features::SEG_MAX) {
        (seg_max as usize).clamp(1, chain_room)
    } else {
        chain_room
    }
}

/// The request types this driver sends (and `GetId`, named for completeness).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestType {
    /// Read sectors into the data pieces.
    In = 0,
    /// Write the data pieces to sectors.
    Out = 1,
    /// Make completed writes durable (with [`Features::FLUSH`]).
    Flush = 4,
    /// Read the device id string.
    GetId = 8,
}

impl RequestType {
    /// The type a header's wire value names, if it is one of ours.
    pub fn from_wire(value: u32) -> Option<RequestType> {
        [
            RequestType::In,
            RequestType::Out,
            RequestType::Flush,
            RequestType::GetId,
        ]
        .into_iter()
        .find(|t| *t as u32 == value)
    }
}

/// The 16-byte header the device reads first. The fields are little-endian on the wire
/// whatever the CPU (virtio 1.x; legacy devices use the guest's order, little-endian on
/// riscv64), so the type is kept as its `le32` value rather than the native-order enum.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct RequestHeader {
    request_type: U32,
    reserved: U32,
    sector: U64,
}

const _: () = assert!(core::mem::size_of::<RequestHeader>() == 16);

impl RequestHeader {
    /// A header for `request_type` at `sector` (0 for a flush).
    pub fn new(request_type: RequestType, sector: u64) -> RequestHeader {
        RequestHeader {
            request_type: U32::new(request_type as u32),
            reserved: U32::new(0),
            sector: U64::new(sector),
        }
    }

    /// The request type, if the wire value is one of [`RequestType`].
    pub fn request_type(&self) -> Option<RequestType> {
        RequestType::from_wire(self.request_type.get())
    }

    /// The first sector the request reads or writes.
    pub fn sector(&self) -> u64 {
        self.sector.get()
    }
}

/// The status byte the device writes last (virtio 1.1, 5.2.6), plus the value the driver puts
/// there before submitting, so that a completion whose status the device never wrote is not
/// taken for success.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// The request succeeded.
    Ok = 0,
    /// The device failed to carry it out.
    IoErr = 1,
    /// The device does not support the request type.
    Unsupp = 2,
    /// Not written by the device (never a device value).
    NotWritten = 0xff,
}

impl Status {
    /// The status a byte holds, or `None` for a value the spec does not define.
    pub fn from_byte(byte: u8) -> Option<Status> {
        [
            Status::Ok,
            Status::IoErr,
            Status::Unsupp,
            Status::NotWritten,
        ]
        .into_iter()
        .find(|s| *s as u8 == byte)
    }
}

/// What a completed request's status byte means to the file systems: `Ok` is success; any
/// other value, defined or not, is [`VfsError::Io`]. `Unsupp` is `Io` too (not
/// `Unsupported`): the driver only sends types the device offered, so it means a faulty
/// device, as a status the device never wrote does.
pub fn status_result(byte: u8) -> VfsResult<()> {
    match Status::from_byte(byte) {
        Some(Status::Ok) => Ok(()),
        _ => Err(VfsError::Io),
    }
}

/// Header and status of one request: what must stay at a fixed address until the device hands
/// the request back (the kernel boxes it).
#[derive(Debug)]
pub struct RequestHead {
    /// What the device reads first.
    pub header: RequestHeader,
    /// What the device writes last: [`Status::NotWritten`] until it does.
    pub status: u8,
}

/// The data of one request.
#[derive(Debug)]
pub enum Data<'a> {
    /// A flush: header and status only.
    None,
    /// A write: the device reads these pieces, in order.
    Out(Vec<&'a [u8]>),
    /// A read: the device fills these pieces, in order.
    In(Vec<&'a mut [u8]>),
}

/// One virtio-blk request before it is submitted.
#[derive(Debug)]
pub struct Request<'a> {
    /// What the device is asked to do.
    pub request_type: RequestType,
    /// The first sector.
    pub sector: u64,
    /// The data pieces (none for a flush).
    pub data: Data<'a>,
}

impl<'a> Request<'a> {
    /// A flush request.
    pub fn flush() -> Request<'a> {
        Request {
            request_type: RequestType::Flush,
            sector: 0,
            data: Data::None,
        }
    }

    /// Data bytes the request moves.
    pub fn bytes(&self) -> usize {
        match &self.data {
            Data::None => 0,
            Data::Out(pieces) => pieces.iter().map(|p| p.len()).sum(),
            Data::In(pieces) => pieces.iter().map(|p| p.len()).sum(),
        }
    }

    /// The header for this request and a status not yet written.
    pub fn head(&self) -> RequestHead {
        RequestHead {
            header: RequestHeader::new(self.request_type, self.sector),
            status: Status::NotWritten as u8,
        }
    }
}

/// The device-readable and device-writable buffer lists of a request, in the order the
/// virtio-blk layout wants them: header, [data out], | [data in], status. Built the same way
/// for adding a request to the queue and for taking it back, which must see the same buffers.
pub fn buffers<'r>(
    head: &'r mut RequestHead,
    data: &'r mut Data<'_>,
) -> (Vec<&'r [u8]>, Vec<&'r mut [u8]>) {
    let RequestHead { header, status } = head;
    let header = header.as_bytes();
    let status = core::slice::from_mut(status);
    match data {
        Data::None => (vec![header], vec![status]),
        Data::Out(pieces) => {
            let mut device_reads: Vec<&[u8]> = Vec::with_capacity(1 + pieces.len());
            device_reads.push(header);
            device_reads.extend(pieces.iter().copied());
            (device_reads, vec![status])
        }
        Data::In(pieces) => {
            let mut device_writes: Vec<&mut [u8]> = Vec::with_capacity(pieces.len() + 1);
            device_writes.extend(pieces.iter_mut().map(|p| &mut **p));
            device_writes.push(status);
            (vec![header], device_writes)
        }
    }
}

/// A data piece of a request: something that can be measured and cut in two.
pub trait Piece: Sized {
    /// Bytes in the piece.
    fn len(&self) -> usize;
    /// Whether the piece is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The first `at` bytes and the rest.
    fn split_at(self, at: usize) -> (Self, Self);
}

impl Piece for &[u8] {
    fn len(&self) -> usize {
        <[u8]>::len(self)
    }
    fn split_at(self, at: usize) -> (Self, Self) {
        <[u8]>::split_at(self, at)
    }
}

impl Piece for &mut [u8] {
    fn len(&self) -> usize {
        <[u8]>::len(self)
    }
    fn split_at(self, at: usize) -> (Self, Self) {
        <[u8]>::split_at_mut(self, at)
    }
}

/// Split one disk run (from `sector`, the concatenation of `pieces`) into requests, handed
/// to `emit(sector, pieces)`: pieces are taken in order until a request has `max_segments` of
/// them or [`MAX_REQUEST`] bytes (a piece crossing that limit is cut at it). Every request is
/// whole sectors: when the segment limit ends one inside a sector (the run's first piece did
/// not end on a sector, as the head of an unaligned user buffer), the bytes past its last
/// sector boundary are cut off its last pieces and start the next request. Empty pieces are
/// skipped (a descriptor may not be empty). The run must pass [`Limits::check_pieces`].
pub fn split_run<P: Piece>(
    sector: u64,
    pieces: impl Iterator<Item = P>,
    max_segments: usize,
    mut emit: impl FnMut(u64, Vec<P>),
) {
    let mut at = sector;
    let mut current: Vec<P> = Vec::new();
    let mut current_bytes = 0;
    for piece in pieces {
        let mut rest = piece;
        while !rest.is_empty() {
            if current.len() == max_segments || current_bytes == MAX_REQUEST {
                let carry = cut_at_sector(&mut current, current_bytes % SECTOR_SIZE);
                let carried: usize = carry.iter().map(|p| p.len()).sum();
                emit(at, core::mem::replace(&mut current, carry));
                at += ((current_bytes - carried) / SECTOR_SIZE) as u64;
                current_bytes = carried;
            }
            let take = rest.len().min(MAX_REQUEST - current_bytes);
            let (now, later) = rest.split_at(take);
            current.push(now);
            current_bytes += take;
            rest = later;
        }
    }
    if !current.is_empty() {
        emit(at, current);
    }
}

/// Cut the last `excess` bytes off `pieces` (fewer than a sector, fewer than the pieces hold)
/// and return them, in order.
fn cut_at_sector<P: Piece>(pieces: &mut Vec<P>, mut excess: usize) -> Vec<P> {
    let mut tail = Vec::new();
    while excess > 0 {
        let Some(last) = pieces.pop() else { break };
        if last.len() > excess {
            let keep = last.len() - excess;
            let (head, cut) = last.split_at(keep);
            pieces.push(head);
            tail.push(cut);
            break;
        }
        excess -= last.len();
        tail.push(last);
    }
    tail.reverse();
    tail
}

/// What a disk accepts: its size, how many pieces a request may carry, whether it is writable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Capacity in sectors.
    pub sectors: u64,
    /// Most data pieces in one request ([`max_segments`]).
    pub max_segments: usize,
    /// Writes are refused ([`Features::RO`]).
    pub read_only: bool,
}

impl Limits {
    /// Check a run of pieces from `sector`: whole sectors in all, every piece but the first and
    /// the last whole sectors (the pages of a user buffer that does not start on a page), the
    /// run inside the disk.
    pub fn check_pieces(&self, sector: u64, lens: impl Iterator<Item = usize>) -> VfsResult<()> {
        let (len, whole) = vfs::scatter_shape(lens).ok_or(VfsError::InvalidInput)?;
        // A piece that ends inside a sector needs room in a request for the head, the tail
        // and a whole piece between (`split_run` cuts requests on sector boundaries).
        if !whole && self.max_segments < 3 {
            return Err(VfsError::InvalidInput);
        }
        vfs::check_run(self.sectors, sector, len)
    }

    /// The read requests that fill `pieces` from `sector` (one run, split by [`split_run`]).
    pub fn read_requests<'a>(
        &self,
        sector: u64,
        pieces: &'a mut [&mut [u8]],
    ) -> VfsResult<Vec<Request<'a>>> {
        self.check_pieces(sector, pieces.iter().map(|p| p.len()))?;
        let mut requests = Vec::new();
        split_run(
            sector,
            pieces.iter_mut().map(|p| &mut **p),
            self.max_segments,
            |at, data| {
                requests.push(Request {
                    request_type: RequestType::In,
                    sector: at,
                    data: Data::In(data),
                })
            },
        );
        Ok(requests)
    }

    /// The write requests for gathered runs `(sector, pieces)`. Every run is checked before
    /// any request is built: a bad one writes nothing.
    pub fn write_requests<'a>(&self, runs: &[(u64, &[&'a [u8]])]) -> VfsResult<Vec<Request<'a>>> {
        if self.read_only {
            return Err(VfsError::ReadOnly);
        }
        for &(sector, pieces) in runs {
            self.check_pieces(sector, pieces.iter().map(|p| p.len()))?;
        }
        let mut requests = Vec::new();
        for &(sector, pieces) in runs {
            split_run(
                sector,
                pieces.iter().copied(),
                self.max_segments,
                |at, data| {
                    requests.push(Request {
                        request_type: RequestType::Out,
                        sector: at,
                        data: Data::Out(data),
                    })
                },
            );
        }
        Ok(requests)
    }
}

#[cfg(test)]
mod tests;
