//! System calls that run without the big kernel lock: read(2) of a device whose reads need no
//! lock (`vfs::Node::parallel_read`: /dev/zero, /dev/null, /dev/urandom); read(2) and
//! pread64(2) of a regular file whose file system reads in parallel (dbfs; a read that
//! goes from the disk into the user's pages polls for its requests, and takes the lock only
//! to sleep on them, then lets it go: `drivers::virtio_blk`'s `Wait::PollFirst`), into a
//! buffer whose pages are all mapped writable already; unless the boot parameter
//! `unlocked_writes=0` turns it off ([`WRITES`]), write(2) and pwrite64(2)
//! of a regular file whose file system keeps the write in memory
//! (`vfs::Node::parallel_write`: dbfs, writes into its write-back cache that neither go to
//! the disk directly nor fill the cache to its limit), from a buffer whose pages are all
//! mapped readable, on a description without O_APPEND, by a process without an
//! RLIMIT_FSIZE, of a file no process maps. With several harts, two processes reading or
//! writing dbfs files then run at once (dbfs takes its state lock briefly, reads a snapshot,
//! and copies a write's whole chunks outside the lock); with one hart nothing changes.
//!
//! The trap handler asks [`dispatch`] first, before it takes the big kernel lock; `None` means
//! "not here" (another call, another file, a buffer not mapped yet, the boot parameter
//! `unlocked_reads=0`, a write with `unlocked_writes=0`, a `task::keep_cpu` or a change to
//! the address space under way), and nothing has been done but perhaps one thing: a lock found
//! held on the way (the process's state, dbfs's) made the call wait as kernel code does
//! (`task::relax`), which takes the big kernel lock. The call then goes the usual way, with
//! the lock if it has it. A call taken
//! runs inside `task::unlocked` (see there for what holds its user pages and what it does when
//! it finds a lock held) and returns to user mode without the lock unless it had to take it.

use core::sync::atomic::AtomicBool;
use core::sync::atomic::Ordering::Relaxed;

use abi::syscall::{SYS_PREAD64, SYS_PWRITE64, SYS_READ, SYS_WRITE};
use vfs::FileType;

use super::io::{
    drop_suid_of, read_advancing, read_into_run, read_into_user, write_from_user, IO_CHUNK,
};
use crate::mm::area::Access;
use crate::mm::uaccess::UserRun;

/// Whether reads may run without the big kernel lock (boot parameter `unlocked_reads`).
static READS: AtomicBool = AtomicBool::new(true);
/// Whether writes may (boot parameter `unlocked_writes`).
static WRITES: AtomicBool = AtomicBool::new(true);

/// Let reads and writes (both on by default) of dbfs files run without the big
/// kernel lock on several harts, or send those system calls through the lock.
pub fn set_enabled(reads: bool, writes: bool) {
    READS.store(reads, Relaxed);
    WRITES.store(writes, Relaxed);
}

/// System call `num` with arguments `a`, run without the big kernel lock if it is one that
/// may be: its return value; `None` (nothing done) for the locked path.
#[inline]
pub fn dispatch(num: usize, a: &[usize; 6]) -> Option<isize> {
    let write = match num {
        SYS_READ | SYS_PREAD64 if READS.load(Relaxed) => false,
        SYS_WRITE | SYS_PWRITE64 if WRITES.load(Relaxed) => true,
        _ => return None,
    };
    if crate::arch::hart::count() < 2 {
        return None;
    }
    if write {
        crate::task::unlocked(|| self::write(num, a)).flatten()
    } else {
        crate::task::unlocked(|| read(num, a)).flatten()
    }
}

/// The offset argument of a positioned call (`positioned`: pread64 or pwrite64), `Some(None)`
/// for the others; `None` for a negative one (its EINVAL is the locked path's). Counts the call
/// as taken: the caller's checks are all done.
fn positioned_offset(positioned: bool, a: &[usize; 6]) -> Option<Option<u64>> {
    let offset = u64::try_from(a[3] as i64).ok();
    if positioned && offset.is_none() {
        return None;
    }
    let hart = crate::arch::hart::index();
    crate::counters::add_syscall(hart);
    crate::counters::add_unlocked_syscall(hart);
    Some(offset)
}

/// read(fd, va, len) or pread64(fd, va, len, offset), or `None` before anything is done.
fn read(num: usize, a: &[usize; 6]) -> Option<isize> {
    let (fd, va, len) = (a[0] as i32, a[1], a[2]);
    if len == 0 || len > IO_CHUNK || !crate::mm::uaccess::range_ok(va, len) {
        return None;
    }
    // A shared mapping of a file would need its pages overlaid on what the file system reads
    // (`io::see_mapped_writes`), and write-protecting them goes by the page table alone.
    if !crate::mm::file_pages::none_shared() {
        return None;
    }
    // The descriptor and the buffer under one lock of the process: a buffer inside one page
    // as a run (what the read then fills, as sys_pread's), else every page checked mapped.
    let (f, run) = crate::task::with_current(|p| {
        let f = p.files.fds().get(fd).ok()?;
        match UserRun::mapped(&mut p.space, va, len, Access::Write) {
            Some(run) => Some((f, Some(run))),
            None => p
                .space
                .all_mapped(va, len, Access::Write)
                .then_some((f, None)),
        }
    })?;
    // A device whose reads need no lock (/dev/zero, /dev/null, /dev/urandom): read(2) only,
    // at offset 0 as sys_read reads every device that is not seekable.
    let device = f.ftype == FileType::CharDevice;
    if !(f.ftype == FileType::Regular || device && num == SYS_READ)
        || !f.readable
        || !f.loc.node.parallel_read(len)
    {
        return None;
    }
    let offset = positioned_offset(num == SYS_PREAD64, a)?;
    let r = match (num, offset, run) {
        (_, _, Some(run)) if device => read_into_run(&f, 0, va, len, run),
        _ if device => read_into_user(&f, 0, va, len),
        (SYS_PREAD64, Some(offset), Some(run)) => read_into_run(&f, offset, va, len, run),
        (SYS_PREAD64, Some(offset), None) => read_into_user(&f, offset, va, len),
        (_, _, run) => read_advancing(&f, va, len, run),
    };
    Some(super::args::to_return(r))
}

/// write(fd, va, len) or pwrite64(fd, va, len, offset), or `None` before anything is done.
fn write(num: usize, a: &[usize; 6]) -> Option<isize> {
    let (fd, va, len) = (a[0] as i32, a[1], a[2]);
    if len == 0 || len > IO_CHUNK || !crate::mm::uaccess::range_ok(va, len) {
        return None;
    }
    // The descriptor, the limit and the buffer under one lock of the process. RLIMIT_FSIZE
    // (a signal to send) and O_APPEND (the size read and the write as one step, which the big
    // kernel lock gives) go the locked way.
    let f = crate::task::with_current(|p| {
        let f = p.files.fds().get(fd).ok()?;
        (f.ftype == FileType::Regular
            && f.writable
            && p.limits.fsize.0 == u64::MAX
            && p.space.all_mapped(va, len, Access::Read))
        .then_some(f)
    })?;
    if f.append() || !f.loc.node.parallel_write(len) {
        return None;
    }
    // A file with pages in a table (mapped, or a program exec ran): its pages are refreshed
    // under the lock.
    if crate::mm::file_pages::has_table(&*f) {
        return None;
    }
    let offset = positioned_offset(num == SYS_PWRITE64, a)?;
    let r = drop_suid_of(&f).and_then(|()| match (num, offset) {
        (SYS_PWRITE64, Some(offset)) => write_from_user(&f, offset, va, len),
        _ => {
            let mut off = f.offset.lock();
            let n = write_from_user(&f, *off, va, len)?;
            *off += n as u64;
            Ok(n)
        }
    });
    Some(super::args::to_return(r))
}
