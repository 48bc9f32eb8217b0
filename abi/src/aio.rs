//! Linux native AIO (`io_setup`, `io_submit`, `io_getevents`, ...): the `struct iocb` and
//! `struct io_event` layouts, the request codes and the ring header the kernel maps into the
//! caller (`include/uapi/linux/aio_abi.h`, `fs/aio.c`). libaio reads that header: its
//! `io_getevents` looks at `magic`, `head` and `tail` before it makes the system call.

/// `IOCB_CMD_PREAD`: read `aio_nbytes` bytes at `aio_offset` into `aio_buf`.
pub const IOCB_CMD_PREAD: u16 = 0;
/// `IOCB_CMD_PWRITE`: write `aio_nbytes` bytes from `aio_buf` at `aio_offset`.
pub const IOCB_CMD_PWRITE: u16 = 1;
/// `IOCB_CMD_FSYNC`: fsync the file (buffer, length and offset must be 0).
pub const IOCB_CMD_FSYNC: u16 = 2;
/// `IOCB_CMD_FDSYNC`: fdatasync the file.
pub const IOCB_CMD_FDSYNC: u16 = 3;
/// `IOCB_CMD_POLL`: wait for poll events (not supported here: EINVAL).
pub const IOCB_CMD_POLL: u16 = 5;
/// `IOCB_CMD_NOOP`: reserved; Linux refuses it with EINVAL.
pub const IOCB_CMD_NOOP: u16 = 6;
/// `IOCB_CMD_PREADV`: `aio_buf` is an iovec array of `aio_nbytes` entries.
pub const IOCB_CMD_PREADV: u16 = 7;
/// `IOCB_CMD_PWRITEV`: the vectored write.
pub const IOCB_CMD_PWRITEV: u16 = 8;

/// `aio_flags`: signal the eventfd `aio_resfd` at completion.
pub const IOCB_FLAG_RESFD: u32 = 1;
/// `aio_flags`: `aio_reqprio` holds an I/O priority class and level.
pub const IOCB_FLAG_IOPRIO: u32 = 2;

/// What the kernel stores in `aio_key` at submission (`KIOCB_KEY`); `io_cancel` checks it.
pub const KIOCB_KEY: u32 = 0;
/// The ring header's `magic`.
pub const AIO_RING_MAGIC: u32 = 0xa10a_10a1;
/// The ring header's `compat_features`.
pub const AIO_RING_COMPAT_FEATURES: u32 = 1;
/// The ring header's `incompat_features`.
pub const AIO_RING_INCOMPAT_FEATURES: u32 = 0;
/// Bytes of the ring header (`struct aio_ring` without its events).
pub const AIO_RING_HEADER: usize = 32;
/// Byte offsets of the ring header's fields (each a little-endian u32).
pub const RING_ID: usize = 0;
/// `nr`: how many events the ring holds.
pub const RING_NR: usize = 4;
/// `head`: the next event to reap (user space may advance it).
pub const RING_HEAD: usize = 8;
/// `tail`: where the kernel puts the next event.
pub const RING_TAIL: usize = 12;
/// `magic`.
pub const RING_MAGIC: usize = 16;
/// `compat_features`.
pub const RING_COMPAT: usize = 20;
/// `incompat_features`.
pub const RING_INCOMPAT: usize = 24;
/// `header_length`.
pub const RING_HEADER_LENGTH: usize = 28;

/// The system-wide limit on requested events (`/proc/sys/fs/aio-max-nr`'s default).
pub const AIO_MAX_NR: u32 = 65536;

/// Bytes of a `struct iocb`.
pub const IOCB_SIZE: usize = 64;
/// Bytes of a `struct io_event`.
pub const IO_EVENT_SIZE: usize = 32;
/// Byte offset of `aio_key` in a `struct iocb` (little-endian: before `aio_rw_flags`).
pub const IOCB_KEY_OFFSET: usize = 8;

/// `struct iocb`, decoded from its 64 little-endian bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Iocb {
    /// Returned in the completion event's `data`.
    pub aio_data: u64,
    /// Set to [`KIOCB_KEY`] by the kernel.
    pub aio_key: u32,
    /// `RWF_*` flags of the read or write.
    pub aio_rw_flags: u32,
    /// `IOCB_CMD_*`.
    pub aio_lio_opcode: u16,
    /// I/O priority.
    pub aio_reqprio: i16,
    /// The file.
    pub aio_fildes: u32,
    /// The buffer (or the iovec array).
    pub aio_buf: u64,
    /// Bytes (or iovec entries).
    pub aio_nbytes: u64,
    /// File offset.
    pub aio_offset: i64,
    /// Must be 0.
    pub aio_reserved2: u64,
    /// `IOCB_FLAG_*`.
    pub aio_flags: u32,
    /// The eventfd of `IOCB_FLAG_RESFD`.
    pub aio_resfd: u32,
}

fn u64_at(b: &[u8; IOCB_SIZE], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

fn u32_at(b: &[u8; IOCB_SIZE], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

impl Iocb {
    /// Decode the user's bytes.
    pub fn from_bytes(b: &[u8; IOCB_SIZE]) -> Iocb {
        Iocb {
            aio_data: u64_at(b, 0),
            aio_key: u32_at(b, 8),
            aio_rw_flags: u32_at(b, 12),
            aio_lio_opcode: u16::from_le_bytes([b[16], b[17]]),
            aio_reqprio: i16::from_le_bytes([b[18], b[19]]),
            aio_fildes: u32_at(b, 20),
            aio_buf: u64_at(b, 24),
            aio_nbytes: u64_at(b, 32),
            aio_offset: u64_at(b, 40) as i64,
            aio_reserved2: u64_at(b, 48),
            aio_flags: u32_at(b, 56),
            aio_resfd: u32_at(b, 60),
        }
    }

    /// Encode for user memory.
    pub fn to_bytes(&self) -> [u8; IOCB_SIZE] {
        let mut b = [0u8; IOCB_SIZE];
        b[0..8].copy_from_slice(&self.aio_data.to_le_bytes());
        b[8..12].copy_from_slice(&self.aio_key.to_le_bytes());
        b[12..16].copy_from_slice(&self.aio_rw_flags.to_le_bytes());
        b[16..18].copy_from_slice(&self.aio_lio_opcode.to_le_bytes());
        b[18..20].copy_from_slice(&self.aio_reqprio.to_le_bytes());
        b[20..24].copy_from_slice(&self.aio_fildes.to_le_bytes());
        b[24..32].copy_from_slice(&self.aio_buf.to_le_bytes());
        b[32..40].copy_from_slice(&self.aio_nbytes.to_le_bytes());
        b[40..48].copy_from_slice(&self.aio_offset.to_le_bytes());
        b[48..56].copy_from_slice(&self.aio_reserved2.to_le_bytes());
        b[56..60].copy_from_slice(&self.aio_flags.to_le_bytes());
        b[60..64].copy_from_slice(&self.aio_resfd.to_le_bytes());
        b
    }
}

/// `struct io_event`: one completion.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoEvent {
    /// The request's `aio_data`.
    pub data: u64,
    /// The user address of the request's iocb.
    pub obj: u64,
    /// Bytes moved, or a negative errno.
    pub res: i64,
    /// Secondary result (0).
    pub res2: i64,
}

impl IoEvent {
    /// Encode for the ring or user memory.
    pub fn to_bytes(&self) -> [u8; IO_EVENT_SIZE] {
        let mut b = [0u8; IO_EVENT_SIZE];
        b[0..8].copy_from_slice(&self.data.to_le_bytes());
        b[8..16].copy_from_slice(&self.obj.to_le_bytes());
        b[16..24].copy_from_slice(&self.res.to_le_bytes());
        b[24..32].copy_from_slice(&self.res2.to_le_bytes());
        b
    }

    /// Decode from user memory.
    pub fn from_bytes(b: &[u8; IO_EVENT_SIZE]) -> IoEvent {
        let w = |at: usize| {
            let mut x = [0u8; 8];
            x.copy_from_slice(&b[at..at + 8]);
            u64::from_le_bytes(x)
        };
        IoEvent {
            data: w(0),
            obj: w(8),
            res: w(16) as i64,
            res2: w(24) as i64,
        }
    }
}
