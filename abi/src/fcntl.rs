//! Flags of openat, *at calls, lseek, renameat2, mmap, clone, wait4 and clocks (asm-generic values).

/// The `dirfd` meaning "relative to the current directory".
pub const AT_FDCWD: i32 = -100;
/// *at flag: act on a final symbolic link itself, not on its target.
pub const AT_SYMLINK_NOFOLLOW: u32 = 0x100;
/// `unlinkat` flag: remove an empty directory (as `rmdir`).
pub const AT_REMOVEDIR: u32 = 0x200;
/// `linkat` flag: link the target of a final symbolic link.
pub const AT_SYMLINK_FOLLOW: u32 = 0x400;
/// *at flag: an empty path means `dirfd` itself.
pub const AT_EMPTY_PATH: u32 = 0x1000;

/// Mask of the access-mode bits (`O_RDONLY`, `O_WRONLY`, `O_RDWR`).
pub const O_ACCMODE: u32 = 0o3;
/// Open for reading only.
pub const O_RDONLY: u32 = 0o0;
/// Open for writing only.
pub const O_WRONLY: u32 = 0o1;
/// Open for reading and writing.
pub const O_RDWR: u32 = 0o2;
/// Create the file if it does not exist (with the given mode, less the umask).
pub const O_CREAT: u32 = 0o100;
/// With `O_CREAT`: fail with EEXIST if the name exists.
pub const O_EXCL: u32 = 0o200;
/// Do not make a terminal the controlling terminal.
pub const O_NOCTTY: u32 = 0o400;
/// Truncate a regular file opened for writing to size 0.
pub const O_TRUNC: u32 = 0o1000;
/// Every write goes to the end of the file.
pub const O_APPEND: u32 = 0o2000;
/// Calls that would wait fail with EAGAIN instead.
pub const O_NONBLOCK: u32 = 0o4000;
/// Each write returns only once its data is durable.
pub const O_DSYNC: u32 = 0o10000;
/// Signal-driven I/O (set with fcntl F_SETFL): the owner gets SIGIO when I/O is possible.
pub const O_ASYNC: u32 = 0o20000;
/// Ask for I/O that bypasses the page cache.
pub const O_DIRECT: u32 = 0o40000;
/// Allow offsets past 2^31 (always so on 64-bit; accepted and ignored).
pub const O_LARGEFILE: u32 = 0o100000;
/// Fail with ENOTDIR unless the path is a directory.
pub const O_DIRECTORY: u32 = 0o200000;
/// Fail with ELOOP if the final component is a symbolic link.
pub const O_NOFOLLOW: u32 = 0o400000;
/// Do not update the access time on reads.
pub const O_NOATIME: u32 = 0o1000000;
/// Close the new descriptor on `execve`.
pub const O_CLOEXEC: u32 = 0o2000000;
/// Each write returns only once its data and metadata are durable (includes `O_DSYNC`).
pub const O_SYNC: u32 = 0o4010000;
/// A descriptor that only names a file (for *at calls and `fstat`); no reads or writes.
pub const O_PATH: u32 = 0o10000000;
/// Create an unnamed file in the given directory (includes `O_DIRECTORY`).
pub const O_TMPFILE: u32 = 0o20200000;
/// Every open flag the kernel understands; others are rejected with EINVAL.
pub const O_KNOWN: u32 = O_ACCMODE
    | O_CREAT
    | O_EXCL
    | O_NOCTTY
    | O_TRUNC
    | O_APPEND
    | O_NONBLOCK
    | O_SYNC
    | O_DIRECT
    | O_LARGEFILE
    | O_DIRECTORY
    | O_NOFOLLOW
    | O_NOATIME
    | O_CLOEXEC
    | O_PATH;

/// `preadv2`/`pwritev2` flags (`RWF_*`).
/// High priority request (polled I/O where a device has it; accepted, served as usual).
pub const RWF_HIPRI: u32 = 0x1;
/// This write is durable when the call returns, as with `O_DSYNC`.
pub const RWF_DSYNC: u32 = 0x2;
/// This write and the metadata it changed are durable when the call returns (`O_SYNC`).
pub const RWF_SYNC: u32 = 0x4;
/// Fail with EAGAIN instead of waiting (for data not cached, a full pipe...).
pub const RWF_NOWAIT: u32 = 0x8;
/// Append this write to the end of the file, as `O_APPEND` does.
pub const RWF_APPEND: u32 = 0x10;
/// Write at the given offset even on an `O_APPEND` descriptor.
pub const RWF_NOAPPEND: u32 = 0x20;
/// The `RWF_*` flags the kernel knows; others are EOPNOTSUPP.
pub const RWF_SUPPORTED: u32 =
    RWF_HIPRI | RWF_DSYNC | RWF_SYNC | RWF_NOWAIT | RWF_APPEND | RWF_NOAPPEND;

/// splice/tee/vmsplice flags (`SPLICE_F_*`).
/// Move pages instead of copying (a hint).
pub const SPLICE_F_MOVE: u32 = 0x1;
/// Do not wait on the pipe (the other descriptor may still wait).
pub const SPLICE_F_NONBLOCK: u32 = 0x2;
/// More data will follow (a hint for sockets).
pub const SPLICE_F_MORE: u32 = 0x4;
/// vmsplice: the user pages are a gift (a hint).
pub const SPLICE_F_GIFT: u32 = 0x8;
/// Every `SPLICE_F_*` flag; others are EINVAL.
pub const SPLICE_F_ALL: u32 = SPLICE_F_MOVE | SPLICE_F_NONBLOCK | SPLICE_F_MORE | SPLICE_F_GIFT;

/// `close_range` flags.
/// Unshare the descriptor table first (it is never shared across processes here).
pub const CLOSE_RANGE_UNSHARE: u32 = 1 << 1;
/// Mark the descriptors close-on-exec instead of closing them.
pub const CLOSE_RANGE_CLOEXEC: u32 = 1 << 2;

/// `openat2`'s `struct open_how` `resolve` flags (`RESOLVE_*`).
/// No mount point crossing on the way (bind mounts included).
pub const RESOLVE_NO_XDEV: u64 = 0x01;
/// No magic links (`/proc/PID/fd/N`) on the way.
pub const RESOLVE_NO_MAGICLINKS: u64 = 0x02;
/// No symbolic link on the way (magic links included).
pub const RESOLVE_NO_SYMLINKS: u64 = 0x04;
/// The walk must stay under the starting directory (EXDEV otherwise).
pub const RESOLVE_BENEATH: u64 = 0x08;
/// The starting directory is the root for this walk (`..` and `/` stay in it).
pub const RESOLVE_IN_ROOT: u64 = 0x10;
/// Only a walk the dcache could serve (EAGAIN otherwise).
pub const RESOLVE_CACHED: u64 = 0x20;

/// `lseek`: the offset is from the start of the file.
pub const SEEK_SET: u32 = 0;
/// `lseek`: the offset is from the current offset.
pub const SEEK_CUR: u32 = 1;
/// `lseek`: the offset is from the end of the file.
pub const SEEK_END: u32 = 2;
/// `lseek`: the next offset at or after the given one that holds data.
pub const SEEK_DATA: u32 = 3;
/// `lseek`: the next offset at or after the given one inside a hole (or the end).
pub const SEEK_HOLE: u32 = 4;

/// `renameat2`: fail with EEXIST if the new name exists.
pub const RENAME_NOREPLACE: u32 = 1;
/// `renameat2`: swap the two names atomically (both must exist).
pub const RENAME_EXCHANGE: u32 = 2;
/// `renameat2`: leave a whiteout at the old name (overlay file systems).
pub const RENAME_WHITEOUT: u32 = 4;

/// `mmap` / `mprotect`: no access at all.
pub const PROT_NONE: u32 = 0;
/// `mmap` / `mprotect`: pages may be read.
pub const PROT_READ: u32 = 1;
/// `mmap` / `mprotect`: pages may be written.
pub const PROT_WRITE: u32 = 2;
/// `mmap` / `mprotect`: pages may be executed.
pub const PROT_EXEC: u32 = 4;
/// `mmap`: writes reach the file and other mappings of it.
pub const MAP_SHARED: u32 = 0x01;
/// `mmap`: a copy-on-write mapping private to this process.
pub const MAP_PRIVATE: u32 = 0x02;
/// `mmap`: map exactly at the given address, replacing what is there.
pub const MAP_FIXED: u32 = 0x10;
/// `mmap`: `MAP_SHARED`, with every other flag checked (an unknown one is EOPNOTSUPP).
pub const MAP_SHARED_VALIDATE: u32 = 0x03;
/// `mmap`: map exactly at the given address, EEXIST if anything is mapped there.
pub const MAP_FIXED_NOREPLACE: u32 = 0x10_0000;
/// `mmap`: the flags Linux knows besides `MAP_SYNC` (`LEGACY_MAP_MASK`): the sharing types,
/// FIXED, ANONYMOUS, GROWSDOWN, DENYWRITE, EXECUTABLE, LOCKED, NORESERVE, POPULATE,
/// NONBLOCK, STACK, HUGETLB, FIXED_NOREPLACE and UNINITIALIZED. `MAP_SHARED_VALIDATE`
/// refuses any other bit, `MAP_SYNC` included (no file here is DAX).
pub const MAP_KNOWN: u32 = 0x03
    | MAP_FIXED
    | MAP_ANONYMOUS
    | 0x0100
    | 0x0800
    | 0x1000
    | MAP_LOCKED
    | 0x4000
    | 0x8000
    | 0x1_0000
    | 0x2_0000
    | 0x4_0000
    | MAP_FIXED_NOREPLACE
    | 0x400_0000;
/// `mmap`: zeroed memory, not backed by a file (the descriptor is ignored).
pub const MAP_ANONYMOUS: u32 = 0x20;
/// `mmap` flag: lock the mapping's pages in memory (as mlock).
pub const MAP_LOCKED: u32 = 0x2000;
/// `msync`: start writing back, do not wait.
pub const MS_ASYNC: u32 = 1;
/// `msync`: drop cached copies (nothing to do: one copy of each file page exists).
pub const MS_INVALIDATE: u32 = 2;
/// `msync`: write back and wait until the data is on disk.
pub const MS_SYNC: u32 = 4;
/// `madvise`: no special treatment.
pub const MADV_NORMAL: u32 = 0;
/// `madvise`: pages will be touched in random order (a hint).
pub const MADV_RANDOM: u32 = 1;
/// `madvise`: pages will be touched in order (a hint).
pub const MADV_SEQUENTIAL: u32 = 2;
/// `madvise`: pages will be needed soon (a hint).
pub const MADV_WILLNEED: u32 = 3;
/// `madvise`: the pages' contents may be dropped: private ones read back as zero or from the
/// file, shared ones keep their data.
pub const MADV_DONTNEED: u32 = 4;
/// `madvise`: as `MADV_DONTNEED`, for private anonymous memory only (lazily, on Linux).
pub const MADV_FREE: u32 = 8;
/// `madvise`: free what backs a shared mapping (a hole punched in its file).
pub const MADV_REMOVE: u32 = 9;
/// `madvise`: a forked child gets no mapping of the range.
pub const MADV_DONTFORK: u32 = 10;
/// `madvise`: undo `MADV_DONTFORK`.
pub const MADV_DOFORK: u32 = 11;
/// `madvise`: huge pages wanted (a hint).
pub const MADV_HUGEPAGE: u32 = 14;
/// `madvise`: no huge pages (a hint).
pub const MADV_NOHUGEPAGE: u32 = 15;
/// `madvise`: leave the range out of core dumps (a hint here).
pub const MADV_DONTDUMP: u32 = 16;
/// `madvise`: undo `MADV_DONTDUMP`.
pub const MADV_DODUMP: u32 = 17;
/// `madvise`: a forked child's copy of this private anonymous memory starts zeroed.
pub const MADV_WIPEONFORK: u32 = 18;
/// `madvise`: undo `MADV_WIPEONFORK`.
pub const MADV_KEEPONFORK: u32 = 19;
/// `madvise`: the pages may be reclaimed first (a hint).
pub const MADV_COLD: u32 = 20;
/// `madvise`: reclaim the pages now (a hint here: nothing is swapped).
pub const MADV_PAGEOUT: u32 = 21;
/// `madvise`: fault the pages in for reading (a hint here).
pub const MADV_POPULATE_READ: u32 = 22;
/// `madvise`: fault the pages in for writing (a hint here).
pub const MADV_POPULATE_WRITE: u32 = 23;
/// `madvise`: as `MADV_DONTNEED`, locked pages too.
pub const MADV_DONTNEED_LOCKED: u32 = 24;
/// `madvise`: make huge pages of the range (a hint).
pub const MADV_COLLAPSE: u32 = 25;

/// The signal a child sends its parent at exit; `clone(SIGCHLD, 0)` is fork.
pub const SIGCHLD: u64 = 17;
/// `clone`: the child shares the parent's address space.
pub const CLONE_VM: u64 = 0x100;
/// `clone`: put a pidfd of the child in the parent (at `parent_tid` for `clone`, at
/// `clone_args.pidfd` for `clone3`).
pub const CLONE_PIDFD: u64 = 0x1000;
/// `clone`: the parent waits until the child execs or exits.
pub const CLONE_VFORK: u64 = 0x4000;
/// `clone`: the child shares cwd and umask.
pub const CLONE_FS: u64 = 0x0200;
/// `clone`: the child shares the descriptor table.
pub const CLONE_FILES: u64 = 0x0400;
/// `clone`: the child shares the signal actions.
pub const CLONE_SIGHAND: u64 = 0x0800;
/// `clone`: the child is a thread of the caller's process (thread group).
pub const CLONE_THREAD: u64 = 0x0001_0000;
/// `clone`: the child shares System V semaphore undo lists.
pub const CLONE_SYSVSEM: u64 = 0x0004_0000;
/// `clone`: the child's thread pointer (`tp`) is the `tls` argument.
pub const CLONE_SETTLS: u64 = 0x0008_0000;
/// `clone`: the child's id is stored at `ptid` in the parent.
pub const CLONE_PARENT_SETTID: u64 = 0x0010_0000;
/// `clone`: at the child's exit 0 is stored at `ctid` and a futex wake sent there.
pub const CLONE_CHILD_CLEARTID: u64 = 0x0020_0000;
/// `clone`: ignored (historic).
pub const CLONE_DETACHED: u64 = 0x0040_0000;
/// `clone`: the child's id is stored at `ctid` in the child.
pub const CLONE_CHILD_SETTID: u64 = 0x0100_0000;
/// `wait4`: answer 0 at once if no child has changed state.
pub const WNOHANG: u32 = 1;

/// Wall-clock time since the Unix epoch (settable).
pub const CLOCK_REALTIME: u32 = 0;
/// Time since boot, never set back: for measuring intervals.
pub const CLOCK_MONOTONIC: u32 = 1;

/// `PATH_MAX` including the terminating NUL.
pub const PATH_MAX: usize = 4096;
/// Longest single path component.
pub const NAME_MAX: usize = 255;

/// `fcntl`: test for a conflicting record lock (`struct flock` in and out).
pub const F_GETLK: u32 = 5;
/// `fcntl`: take or release a record lock; EAGAIN if another process holds a conflicting one.
pub const F_SETLK: u32 = 6;
/// `fcntl`: as `F_SETLK`, but wait for a conflicting lock to go away.
pub const F_SETLKW: u32 = 7;
/// `fcntl`: `F_GETLK` for an open file description lock (Linux's OFD locks).
pub const F_OFD_GETLK: u32 = 36;
/// `fcntl`: `F_SETLK` for a lock owned by the open file description, not the process.
pub const F_OFD_SETLK: u32 = 37;
/// `fcntl`: as `F_OFD_SETLK`, but wait for a conflicting lock to go away.
pub const F_OFD_SETLKW: u32 = 38;
/// `flock.l_type`: a shared (read) lock.
pub const F_RDLCK: i16 = 0;
/// `flock.l_type`: an exclusive (write) lock.
pub const F_WRLCK: i16 = 1;
/// `flock.l_type`: no lock (release; `F_GETLK`'s answer when nothing conflicts).
pub const F_UNLCK: i16 = 2;

/// Linux's `struct flock` on riscv64 (32 bytes): a byte range of a file and a lock type.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flock {
    /// `F_RDLCK`, `F_WRLCK` or `F_UNLCK`.
    pub l_type: i16,
    /// What `l_start` counts from: `SEEK_SET`, `SEEK_CUR` or `SEEK_END`.
    pub l_whence: i16,
    /// First byte of the range, relative to `l_whence`.
    pub l_start: i64,
    /// Bytes in the range; 0 means "to the end of the file, however far it grows"; a negative
    /// length covers the bytes before `l_start`.
    pub l_len: i64,
    /// `F_GETLK`: the process holding the conflicting lock.
    pub l_pid: i32,
}

impl Flock {
    /// Size of the structure in user memory.
    pub const SIZE: usize = 32;

    /// Parse the user's bytes (little-endian, with Linux's padding).
    pub fn from_bytes(b: &[u8; Self::SIZE]) -> Flock {
        let i64_at = |o: usize| i64::from_le_bytes(b[o..o + 8].try_into().unwrap_or([0; 8]));
        Flock {
            l_type: i16::from_le_bytes([b[0], b[1]]),
            l_whence: i16::from_le_bytes([b[2], b[3]]),
            l_start: i64_at(8),
            l_len: i64_at(16),
            l_pid: i32::from_le_bytes([b[24], b[25], b[26], b[27]]),
        }
    }

    /// The structure's bytes as user memory holds them (padding zeroed).
    pub fn as_bytes(&self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        b[0..2].copy_from_slice(&self.l_type.to_le_bytes());
        b[2..4].copy_from_slice(&self.l_whence.to_le_bytes());
        b[8..16].copy_from_slice(&self.l_start.to_le_bytes());
        b[16..24].copy_from_slice(&self.l_len.to_le_bytes());
        b[24..28].copy_from_slice(&self.l_pid.to_le_bytes());
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flock_layout_is_linux_riscv64() {
        let l = Flock {
            l_type: F_WRLCK,
            l_whence: SEEK_END as i16,
            l_start: -5,
            l_len: 1 << 40,
            l_pid: 77,
        };
        let b = l.as_bytes();
        assert_eq!(&b[0..2], &1i16.to_le_bytes());
        assert_eq!(&b[2..4], &2i16.to_le_bytes());
        assert_eq!(&b[4..8], &[0; 4]);
        assert_eq!(&b[8..16], &(-5i64).to_le_bytes());
        assert_eq!(&b[16..24], &(1i64 << 40).to_le_bytes());
        assert_eq!(&b[24..28], &77i32.to_le_bytes());
        assert_eq!(Flock::from_bytes(&b), l);
    }
}
