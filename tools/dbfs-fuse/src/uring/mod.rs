//! FUSE over io_uring: requests taken from the kernel's per-CPU queues instead of `/dev/fuse`.
//!
//! # Why
//! Through `/dev/fuse` a request wakes whichever worker thread waits first, usually on the other
//! core (the caller is still running when it queues the request), and its reply wakes the caller
//! back across cores. On this project's machines (a nested VM, where waking an idle vCPU is an
//! exit to the host) such a round trip costs 20-60 us against 11 us when both stay on one core,
//! and an unlink is three round trips. Linux 6.14 added `FUSE_OVER_IO_URING`: the kernel keeps
//! one queue per CPU and puts a request on the queue of the CPU its caller runs on, so a worker
//! pinned to that CPU serves it there and the reply wakes the caller on the same core.
//!
//! # Status: on by default (`-o nouring` turns it off)
//! The rings were opt-in for a while: in two of four full runs of `cargo test -p dbfs-fuse`
//! with them, a test that fills a 12 MiB image through the write-back cache saw every write,
//! syncfs and close succeed. The cause was not the rings: under load (a CPU hog and a writer
//! of dirty pages beside the tests) the same tests lost the ENOSPC 1 to 3 times in 40 runs
//! through `/dev/fuse` too. The kernel had sent every dirty page, dbfs had refused some, and
//! still close(2) returned 0 (this kernel's syncfs on FUSE does not wait for write-back at
//! all). The adapter now keeps a refused write-back write's error and answers the file's
//! next flush or fsync with it (`DbFuse::set_close_errors`); 0 failures in 80 runs under the
//! same load after that.
//!
//! # How
//! - Unless mounted with `-o nouring`, the adapter asks for `FUSE_OVER_IO_URING` at `init`;
//!   the kernel offers it only when the `fuse` module's `enable_uring` parameter is on
//!   (`make deps` turns it on). Without it every request comes through `/dev/fuse`.
//! - After the handshake, [`start`] runs `per_cpu` threads on each possible CPU, each pinned to
//!   its CPU, with an io_uring of its own (128-byte SQEs, as the FUSE commands need) and one
//!   ring entry: a 288-byte header buffer (`fuse_uring_req_header`) and a payload buffer as
//!   large as the largest request. It registers the entry for its CPU's queue
//!   (`FUSE_IO_URING_CMD_REGISTER`); once every queue has an entry, the kernel routes requests
//!   to the rings. Until then, and for FORGET, BATCH_FORGET and INTERRUPT always, requests
//!   come through `/dev/fuse` to fuser's threads ([`crate::dev`]).
//! - A request arrives as a completion: the `fuse_in_header` in the header's first 128 bytes,
//!   the operation's fixed argument struct in the next 128, and everything after it (names,
//!   written data) in the payload. The thread decodes it, calls the same adapter operation
//!   fuser would, and the operation writes its reply body into the payload through a [`Slot`]
//!   (the [`crate::answer`] traits). The `fuse_out_header` goes into the header and one
//!   `FUSE_IO_URING_CMD_COMMIT_AND_FETCH` both answers and waits for the next request: one
//!   system call per request.
//! - An answer to a caller seen moving between CPUs is the exception (unless it is a large
//!   read): it is submitted on its own, with the thread `SCHED_IDLE` for that one call, so the
//!   woken caller stays on its CPU instead of moving to an idle one ([`wake`]); then the
//!   thread waits.
//!   `-o noidle_commits` turns that off.
//! - At unmount the kernel ends every waiting entry with an error; each thread then exits.
//!
//! If anything fails before the rings are ready (an old kernel, a refused registration), the
//! threads say so and stop, and the mount keeps working through `/dev/fuse`.

mod reply;
mod ring;
mod wake;

use std::ffi::OsStr;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fuser::{
    AccessFlags, CopyFileRangeFlags, Errno, FileHandle, INodeNo, LockOwner, OpenFlags, SessionACL,
    TimeOrNow, WriteFlags,
};

use crate::adapter::DbFuse;
use crate::answer::{AnsEmpty, AnsError, Caller};
use crate::split_read;
use reply::Slot;
use ring::{Ring, IORING_OP_URING_CMD, SQE_SIZE};

// FUSE over io_uring ABI (include/uapi/linux/fuse.h, 7.42).
const FUSE_IO_URING_CMD_REGISTER: u32 = 1;
const FUSE_IO_URING_CMD_COMMIT_AND_FETCH: u32 = 2;
/// `fuse_uring_req_header`: in_out[128], op_in[128], `fuse_uring_ent_in_out` (32 bytes).
const HEADER_LEN: usize = 288;
const OP_IN: usize = 128;
const ENT_IN_OUT: usize = 256;

// Opcodes (include/uapi/linux/fuse.h).
const LOOKUP: u32 = 1;
const GETATTR: u32 = 3;
const SETATTR: u32 = 4;
const READLINK: u32 = 5;
const SYMLINK: u32 = 6;
const MKNOD: u32 = 8;
const MKDIR: u32 = 9;
const UNLINK: u32 = 10;
const RMDIR: u32 = 11;
const RENAME: u32 = 12;
const LINK: u32 = 13;
const OPEN: u32 = 14;
const READ: u32 = 15;
const WRITE: u32 = 16;
const STATFS: u32 = 17;
const RELEASE: u32 = 18;
const FSYNC: u32 = 20;
const SETXATTR: u32 = 21;
const GETXATTR: u32 = 22;
const LISTXATTR: u32 = 23;
const REMOVEXATTR: u32 = 24;
const FLUSH: u32 = 25;
const OPENDIR: u32 = 27;
const READDIR: u32 = 28;
const RELEASEDIR: u32 = 29;
const FSYNCDIR: u32 = 30;
const ACCESS: u32 = 34;
const CREATE: u32 = 35;
const DESTROY: u32 = 38;
const FALLOCATE: u32 = 43;
const READDIRPLUS: u32 = 44;
const RENAME2: u32 = 45;
const LSEEK: u32 = 46;
const COPY_FILE_RANGE: u32 = 47;

const FUSE_GETATTR_FH: u32 = 1;
const FUSE_READ_LOCKOWNER: u32 = 2;
const FUSE_RELEASE_FLUSH: u32 = 1;
const FATTR_MODE: u32 = 1 << 0;
const FATTR_UID: u32 = 1 << 1;
const FATTR_GID: u32 = 1 << 2;
const FATTR_SIZE: u32 = 1 << 3;
const FATTR_ATIME: u32 = 1 << 4;
const FATTR_MTIME: u32 = 1 << 5;
const FATTR_FH: u32 = 1 << 6;
const FATTR_ATIME_NOW: u32 = 1 << 7;
const FATTR_MTIME_NOW: u32 = 1 << 8;
const FATTR_CTIME: u32 = 1 << 10;

/// The rings of a mount: wait for their threads with [`Rings::wait`].
pub struct Rings {
    state: Arc<(Mutex<usize>, Condvar)>,
}

impl Rings {
    /// Wait (at most `limit`) until every ring thread has ended: they end when the kernel ends
    /// their entries at unmount.
    pub fn wait(&self, limit: Duration) {
        let (m, cv) = &*self.state;
        let guard = m.lock().unwrap_or_else(|p| p.into_inner());
        let _ = cv.wait_timeout_while(guard, limit, |running| *running > 0);
    }
}

/// Everything a ring thread shares with the others.
struct Shared {
    fs: Arc<DbFuse>,
    dev: OwnedFd,
    payload_len: usize,
    /// `Some(owner)` when only the owner (and root, for `allow_root`) may use the mount.
    owner_only: Option<(u32, bool)>,
    /// A thread has failed (its error is reported once).
    failed: AtomicBool,
    /// Callers' last queues, for idle commits ([`wake::Callers`]).
    callers: wake::Callers,
}

/// The CPUs the kernel may run a caller on: one queue each (`/sys/devices/system/cpu/possible`,
/// as the kernel sizes its queue array by `nr_cpu_ids`).
pub fn cpus() -> usize {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/possible").unwrap_or_default();
    let mut max = None;
    for part in text.trim().split(',') {
        let last = part.rsplit('-').next().unwrap_or("");
        if let Ok(n) = last.parse::<usize>() {
            max = Some(max.map_or(n, |m: usize| m.max(n)));
        }
    }
    max.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        |m| m + 1,
    )
}

/// Start `per_cpu` ring threads on every CPU for the mount whose `/dev/fuse` is `dev`, after a
/// handshake that agreed to `FUSE_OVER_IO_URING`. `payload_len` must hold the largest request
/// or reply (the kernel refuses a smaller buffer).
pub fn start(
    fs: Arc<DbFuse>,
    dev: OwnedFd,
    per_cpu: usize,
    payload_len: usize,
    acl: SessionACL,
    idle_commits: bool,
) -> io::Result<Rings> {
    // SAFETY: geteuid has no arguments and cannot fail.
    let owner = unsafe { libc::geteuid() };
    let owner_only = match acl {
        SessionACL::All => None,
        SessionACL::RootAndOwner => Some((owner, true)),
        SessionACL::Owner => Some((owner, false)),
    };
    let shared = Arc::new(Shared {
        fs,
        dev,
        payload_len,
        owner_only,
        failed: AtomicBool::new(false),
        callers: wake::Callers::new(),
    });
    let cpus = cpus();
    let per_cpu = per_cpu.max(1);
    let idle_commits = idle_commits && wake::allowed();
    let state = Arc::new((Mutex::new(cpus * per_cpu), Condvar::new()));
    // Set before any thread runs, so a thread failing at once leaves it cleared.
    shared.fs.set_rings_serving(true);
    for cpu in 0..cpus {
        for k in 0..per_cpu {
            let thread_shared = shared.clone();
            let st = state.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("dbfs-ring-{cpu}.{k}"))
                .spawn(move || {
                    let shared = thread_shared;
                    if let Err(e) = ring_thread(&shared, cpu, idle_commits) {
                        shared.fs.set_rings_serving(false);
                        if !shared.failed.swap(true, Ordering::Relaxed) {
                            eprintln!(
                                "dbfs-fuse: io_uring queue {cpu}: {e}; requests go through /dev/fuse"
                            );
                        }
                    }
                    let (m, cv) = &*st;
                    *m.lock().unwrap_or_else(|p| p.into_inner()) -= 1;
                    cv.notify_all();
                });
            if let Err(e) = spawned {
                shared.fs.set_rings_serving(false);
                let (m, _) = &*state;
                *m.lock().unwrap_or_else(|p| p.into_inner()) -= 1;
                return Err(e);
            }
        }
    }
    // The rings serve a caller's requests on its own core; a large read's second half goes to
    // a helper free to run on another (see split_read.rs). Without helpers reads stay whole.
    if let Ok(h) = split_read::Helpers::new(cpus) {
        shared.fs.set_read_helpers(h);
    }
    Ok(Rings { state })
}

/// Pin the calling thread to `cpu`.
fn pin(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET writes inside it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        // Best effort: unpinned, requests are still served, only across cores.
        let _ = libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// One ring thread: register the entry for `cpu`'s queue, then serve requests until the
/// kernel ends the entry. With `idle_commits`, small reads are answered as
/// [`wake::Commits`] says.
fn ring_thread(shared: &Shared, cpu: usize, idle_commits: bool) -> io::Result<()> {
    pin(cpu);
    let mut commits = wake::Commits::new(idle_commits);
    let mut ring = Ring::new(4)?;
    // u64 words keep the header 8-byte aligned for the kernel's structs.
    let mut header = vec![0u64; HEADER_LEN / 8];
    let mut payload = vec![0u8; shared.payload_len];
    let mut scratch = vec![0u8; shared.payload_len];
    let iov = [
        libc::iovec {
            iov_base: header.as_mut_ptr().cast(),
            iov_len: HEADER_LEN,
        },
        libc::iovec {
            iov_base: payload.as_mut_ptr().cast(),
            iov_len: payload.len(),
        },
    ];
    let fd = shared.dev.as_raw_fd();
    let qid = cpu as u16;
    let mut sqe = uring_cmd(fd, FUSE_IO_URING_CMD_REGISTER, 0, qid);
    sqe[16..24].copy_from_slice(&(iov.as_ptr() as u64).to_ne_bytes());
    sqe[24..28].copy_from_slice(&2u32.to_ne_bytes());
    ring.push(&sqe);
    loop {
        let res = ring.submit_and_wait()?;
        if res < 0 {
            let e = io::Error::from_raw_os_error(-res);
            // The kernel ends the entries of a connection going away with one of these,
            // also an entry that never got a request (the other thread of its queue served
            // them all).
            let ending = matches!(
                -res,
                libc::ENOTCONN | libc::ECONNABORTED | libc::ENODEV | libc::ECANCELED
            );
            return if ending { Ok(()) } else { Err(e) };
        }
        // SAFETY: the kernel finished writing the header and payload before the completion;
        // views of plain bytes.
        let head: &mut [u8] =
            unsafe { std::slice::from_raw_parts_mut(header.as_mut_ptr().cast(), HEADER_LEN) };
        let commit_id =
            u64::from_ne_bytes(head[ENT_IN_OUT + 8..ENT_IN_OUT + 16].try_into().unwrap());
        let commit = uring_cmd(fd, FUSE_IO_URING_CMD_COMMIT_AND_FETCH, commit_id, qid);
        let idle = commits.wanted(&shared.callers, head, cpu);
        serve(shared, head, &mut payload, &mut scratch);
        ring.push(&commit);
        commits.submit(&mut ring, idle)?;
    }
}

/// An SQE of `IORING_OP_URING_CMD` on `/dev/fuse` with a `fuse_uring_cmd_req`.
fn uring_cmd(fd: i32, cmd: u32, commit_id: u64, qid: u16) -> [u8; SQE_SIZE] {
    let mut sqe = [0u8; SQE_SIZE];
    sqe[0] = IORING_OP_URING_CMD;
    sqe[4..8].copy_from_slice(&fd.to_ne_bytes());
    sqe[8..12].copy_from_slice(&cmd.to_ne_bytes());
    // sqe->cmd at 48: flags u64, commit_id u64, qid u16.
    sqe[56..64].copy_from_slice(&commit_id.to_ne_bytes());
    sqe[64..66].copy_from_slice(&qid.to_ne_bytes());
    sqe
}

/// Readers of the request's fixed struct (native byte order, as the kernel writes it).
fn u32_at(b: &[u8], off: usize) -> u32 {
    b.get(off..off + 4)
        .map_or(0, |s| u32::from_ne_bytes(s.try_into().unwrap()))
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    b.get(off..off + 8)
        .map_or(0, |s| u64::from_ne_bytes(s.try_into().unwrap()))
}

/// The NUL-terminated name at the start of `b`, and what follows it.
fn name(b: &[u8]) -> Result<(&OsStr, &[u8]), Errno> {
    let end = b.iter().position(|&c| c == 0).ok_or(Errno::EINVAL)?;
    Ok((OsStr::from_bytes(&b[..end]), &b[end + 1..]))
}

fn time(secs: u64, nsec: u32) -> SystemTime {
    let secs = secs as i64;
    let base = if secs >= 0 {
        UNIX_EPOCH + Duration::from_secs(secs as u64)
    } else {
        UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs())
    };
    base + Duration::from_nanos(u64::from(nsec.min(999_999_999)))
}

/// Serve the request in `head` and `payload`; write the reply and its header. Returns the
/// reply body's length.
fn serve(shared: &Shared, head: &mut [u8], payload: &mut [u8], scratch: &mut [u8]) -> usize {
    let opcode = u32_at(head, 4);
    let unique = u64_at(head, 8);
    let ino = INodeNo(u64_at(head, 16));
    let caller = Caller {
        uid: u32_at(head, 24),
        gid: u32_at(head, 28),
    };
    let in_payload = (u32_at(head, ENT_IN_OUT + 16) as usize).min(payload.len());
    // The operation's fixed struct, zero-padded to the area's 128 bytes (each is shorter).
    let mut arg = [0u8; OP_IN];
    arg.copy_from_slice(&head[OP_IN..OP_IN + OP_IN]);
    // A request with a payload (names, written data) is answered into `scratch` and the
    // reply copied over the payload afterwards; one without is answered in place.
    let (input, out): (&[u8], &mut [u8]) = if in_payload == 0 {
        (&[], &mut *payload)
    } else {
        (&payload[..in_payload], &mut *scratch)
    };
    let mut slot = Slot {
        buf: out,
        len: 0,
        error: None,
        answered: false,
        limit: usize::MAX,
    };
    let refused = match shared.owner_only {
        Some((owner, root_too)) if caller.uid != owner && !(root_too && caller.uid == 0) => {
            !matches!(
                opcode,
                DESTROY
                    | READ
                    | READDIR
                    | READDIRPLUS
                    | WRITE
                    | FSYNC
                    | FSYNCDIR
                    | RELEASE
                    | RELEASEDIR
            )
        }
        _ => false,
    };
    if refused {
        slot.error = Some(Errno::EACCES);
        slot.answered = true;
    } else {
        dispatch(&shared.fs, opcode, ino, &caller, &arg, input, &mut slot);
    }
    if !slot.answered {
        slot.error = Some(Errno::EIO);
    }
    let (error, body) = match slot.error {
        Some(e) => (-e.code(), 0),
        None => (0, slot.len),
    };
    if in_payload != 0 && body > 0 {
        payload[..body].copy_from_slice(&scratch[..body]);
    }
    head[0..4].copy_from_slice(&((16 + body) as u32).to_ne_bytes());
    head[4..8].copy_from_slice(&error.to_ne_bytes());
    head[8..16].copy_from_slice(&unique.to_ne_bytes());
    head[ENT_IN_OUT + 16..ENT_IN_OUT + 20].copy_from_slice(&(body as u32).to_ne_bytes());
    body
}

fn dispatch(
    fs: &DbFuse,
    opcode: u32,
    ino: INodeNo,
    req: &Caller,
    a: &[u8],
    p: &[u8],
    s: &mut Slot<'_>,
) {
    let fh = FileHandle(u64_at(a, 0));
    let r: Result<(), Errno> = (|| {
        match opcode {
            LOOKUP => fs.lookup(req, ino, name(p)?.0, &mut *s),
            GETATTR => {
                let fh = (u32_at(a, 0) & FUSE_GETATTR_FH != 0).then(|| FileHandle(u64_at(a, 8)));
                fs.getattr(req, ino, fh, &mut *s)
            }
            SETATTR => {
                let valid = u32_at(a, 0);
                let has = |bit: u32| valid & bit != 0;
                let at = |now: u32, secs: usize, nsec: usize| {
                    if valid & now != 0 {
                        TimeOrNow::Now
                    } else {
                        TimeOrNow::SpecificTime(time(u64_at(a, secs), u32_at(a, nsec)))
                    }
                };
                fs.setattr(
                    req,
                    ino,
                    has(FATTR_MODE).then(|| u32_at(a, 68)),
                    has(FATTR_UID).then(|| u32_at(a, 76)),
                    has(FATTR_GID).then(|| u32_at(a, 80)),
                    has(FATTR_SIZE).then(|| u64_at(a, 16)),
                    has(FATTR_ATIME).then(|| at(FATTR_ATIME_NOW, 32, 56)),
                    has(FATTR_MTIME).then(|| at(FATTR_MTIME_NOW, 40, 60)),
                    has(FATTR_CTIME).then(|| time(u64_at(a, 48), u32_at(a, 64))),
                    has(FATTR_FH).then(|| FileHandle(u64_at(a, 8))),
                    None,
                    None,
                    None,
                    None,
                    &mut *s,
                )
            }
            READLINK => fs.readlink(req, ino, &mut *s),
            SYMLINK => {
                let (link, rest) = name(p)?;
                let (target, _) = name(rest)?;
                fs.symlink(req, ino, link, Path::new(target), &mut *s)
            }
            MKNOD => fs.mknod(
                req,
                ino,
                name(p)?.0,
                u32_at(a, 0),
                u32_at(a, 8),
                u32_at(a, 4),
                &mut *s,
            ),
            MKDIR => fs.mkdir(req, ino, name(p)?.0, u32_at(a, 0), u32_at(a, 4), &mut *s),
            UNLINK => fs.unlink(req, ino, name(p)?.0, &mut *s),
            RMDIR => fs.rmdir(req, ino, name(p)?.0, &mut *s),
            RENAME | RENAME2 => {
                let flags = if opcode == RENAME2 {
                    fuser::RenameFlags::from_bits_retain(u32_at(a, 8))
                } else {
                    fuser::RenameFlags::empty()
                };
                let (old, rest) = name(p)?;
                let (new, _) = name(rest)?;
                fs.rename(req, ino, old, INodeNo(u64_at(a, 0)), new, flags, &mut *s)
            }
            LINK => fs.link(req, INodeNo(u64_at(a, 0)), ino, name(p)?.0, &mut *s),
            OPEN => fs.open(req, ino, OpenFlags(u32_at(a, 0) as i32), &mut *s),
            READ => {
                let lock =
                    (u32_at(a, 20) & FUSE_READ_LOCKOWNER != 0).then(|| LockOwner(u64_at(a, 24)));
                fs.read(
                    req,
                    ino,
                    fh,
                    u64_at(a, 8),
                    u32_at(a, 16),
                    OpenFlags(u32_at(a, 32) as i32),
                    lock,
                    &mut *s,
                )
            }
            WRITE => {
                let size = u32_at(a, 16) as usize;
                let data = p.get(..size).ok_or(Errno::EINVAL)?;
                fs.write(
                    req,
                    ino,
                    fh,
                    u64_at(a, 8),
                    data,
                    WriteFlags::from_bits_retain(u32_at(a, 20)),
                    OpenFlags(u32_at(a, 32) as i32),
                    None,
                    &mut *s,
                )
            }
            STATFS => fs.statfs(req, ino, &mut *s),
            RELEASE => fs.release(
                req,
                ino,
                fh,
                OpenFlags(u32_at(a, 8) as i32),
                None,
                u32_at(a, 12) & FUSE_RELEASE_FLUSH != 0,
                &mut *s,
            ),
            FSYNC => fs.fsync(req, ino, fh, u32_at(a, 8) & 1 != 0, &mut *s),
            SETXATTR => {
                // 16 bytes with FUSE_SETXATTR_EXT, 8 without; the length tells.
                let size = u32_at(a, 0) as usize;
                let (n, rest) = name(p)?;
                let value = rest.get(..size).ok_or(Errno::EINVAL)?;
                fs.setxattr(req, ino, n, value, u32_at(a, 4) as i32, 0, &mut *s)
            }
            GETXATTR => fs.getxattr(req, ino, name(p)?.0, u32_at(a, 0), &mut *s),
            LISTXATTR => fs.listxattr(req, ino, u32_at(a, 0), &mut *s),
            REMOVEXATTR => fs.removexattr(req, ino, name(p)?.0, &mut *s),
            FLUSH => fs.flush(req, ino, fh, LockOwner(u64_at(a, 16)), &mut *s),
            OPENDIR => fs.opendir(req, ino, OpenFlags(u32_at(a, 0) as i32), &mut *s),
            READDIR => {
                s.limit = u32_at(a, 16) as usize;
                fs.readdir(req, ino, fh, u64_at(a, 8), &mut *s)
            }
            READDIRPLUS => {
                s.limit = u32_at(a, 16) as usize;
                fs.readdirplus(req, ino, fh, u64_at(a, 8), &mut *s)
            }
            RELEASEDIR | DESTROY => AnsEmpty::ok(&mut *s),
            FSYNCDIR => fs.fsyncdir(req, ino, fh, u32_at(a, 8) & 1 != 0, &mut *s),
            ACCESS => fs.access(
                req,
                ino,
                AccessFlags::from_bits_retain(u32_at(a, 0) as i32),
                &mut *s,
            ),
            CREATE => fs.create(
                req,
                ino,
                name(p)?.0,
                u32_at(a, 4),
                u32_at(a, 8),
                u32_at(a, 0) as i32,
                &mut *s,
            ),
            FALLOCATE => fs.fallocate(
                req,
                ino,
                fh,
                u64_at(a, 8),
                u64_at(a, 16),
                u32_at(a, 24) as i32,
                &mut *s,
            ),
            LSEEK => fs.lseek(
                req,
                ino,
                fh,
                u64_at(a, 8) as i64,
                u32_at(a, 16) as i32,
                &mut *s,
            ),
            COPY_FILE_RANGE => fs.copy_file_range(
                req,
                ino,
                fh,
                u64_at(a, 8),
                INodeNo(u64_at(a, 16)),
                FileHandle(u64_at(a, 24)),
                u64_at(a, 32),
                u64_at(a, 40),
                CopyFileRangeFlags::from_bits_retain(u64_at(a, 48)),
                &mut *s,
            ),
            _ => AnsError::error(&mut *s, Errno::ENOSYS),
        }
        Ok(())
    })();
    if let Err(e) = r {
        AnsError::error(&mut *s, e);
    }
}
