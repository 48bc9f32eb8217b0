//! Linux riscv64 syscall numbers (asm-generic unistd.h) that dbfs-os implements or knows of.
//! A number not handled by the kernel returns -ENOSYS.

/// `io_setup`: make a native AIO context (a completion ring mapped into the caller).
pub const SYS_IO_SETUP: usize = 0;
/// `io_destroy`: tear an AIO context down (its ring is unmapped).
pub const SYS_IO_DESTROY: usize = 1;
/// `io_submit`: start an array of AIO requests (`struct iocb`).
pub const SYS_IO_SUBMIT: usize = 2;
/// `io_cancel`: cancel a request still in flight.
pub const SYS_IO_CANCEL: usize = 3;
/// `io_getevents`: reap completions, waiting for at least `min_nr` until a timeout.
pub const SYS_IO_GETEVENTS: usize = 4;
/// `io_pgetevents`: `io_getevents` with a signal mask for the wait.
pub const SYS_IO_PGETEVENTS: usize = 292;
/// `getsockname`: the address a socket is bound to.
pub const SYS_GETSOCKNAME: usize = 204;
/// `getpeername`: the address of a connected socket's peer.
pub const SYS_GETPEERNAME: usize = 205;
/// `socketpair`: two connected sockets.
pub const SYS_SOCKETPAIR: usize = 199;
/// `setsockopt`: set a socket option.
pub const SYS_SETSOCKOPT: usize = 208;
/// `getsockopt`: read a socket option.
pub const SYS_GETSOCKOPT: usize = 209;
/// `shutdown`: shut down a socket's reading and/or writing side.
pub const SYS_SHUTDOWN: usize = 210;
/// `mincore`: which pages of a mapped range are in memory.
pub const SYS_MINCORE: usize = 232;
/// `riscv_hwprobe`: what the RISC-V harts implement (ISA extensions, clock, address space).
pub const SYS_RISCV_HWPROBE: usize = 258;
/// `clone3`: clone with a `struct clone_args` (glibc's posix_spawn and pthread_create try it first).
pub const SYS_CLONE3: usize = 435;
/// `setxattr`: set an extended attribute of a path (following symlinks).
pub const SYS_SETXATTR: usize = 5;
/// `lsetxattr`: set an extended attribute of a path itself (a symlink is not followed).
pub const SYS_LSETXATTR: usize = 6;
/// `fsetxattr`: set an extended attribute of an open file.
pub const SYS_FSETXATTR: usize = 7;
/// `getxattr`: read an extended attribute of a path (following symlinks).
pub const SYS_GETXATTR: usize = 8;
/// `lgetxattr`: read an extended attribute of a path itself (no symlink following).
pub const SYS_LGETXATTR: usize = 9;
/// `fgetxattr`: read an extended attribute of an open file.
pub const SYS_FGETXATTR: usize = 10;
/// `listxattr`: list the extended attribute names of a path (following symlinks).
pub const SYS_LISTXATTR: usize = 11;
/// `llistxattr`: list the extended attribute names of a path itself.
pub const SYS_LLISTXATTR: usize = 12;
/// `flistxattr`: list the extended attribute names of an open file.
pub const SYS_FLISTXATTR: usize = 13;
/// `removexattr`: remove an extended attribute of a path (following symlinks).
pub const SYS_REMOVEXATTR: usize = 14;
/// `lremovexattr`: remove an extended attribute of a path itself.
pub const SYS_LREMOVEXATTR: usize = 15;
/// `fremovexattr`: remove an extended attribute of an open file.
pub const SYS_FREMOVEXATTR: usize = 16;
/// `getcwd`: copy the current directory's absolute path into a buffer.
pub const SYS_GETCWD: usize = 17;
/// `dup`: a new descriptor (the lowest free) for the same open file.
pub const SYS_DUP: usize = 23;
/// `dup3`: make a chosen descriptor number refer to the same open file.
pub const SYS_DUP3: usize = 24;
/// `fcntl`: descriptor commands: duplicate, get/set descriptor and status flags, locks.
pub const SYS_FCNTL: usize = 25;
/// `ioctl`: device-specific requests on a descriptor (terminal modes, window size).
pub const SYS_IOCTL: usize = 29;
/// `mkdirat`: create a directory.
pub const SYS_MKDIRAT: usize = 34;
/// `unlinkat`: remove a name, or an empty directory with `AT_REMOVEDIR`.
pub const SYS_UNLINKAT: usize = 35;
/// `symlinkat`: create a symbolic link holding a target string.
pub const SYS_SYMLINKAT: usize = 36;
/// `linkat`: add another name (a hard link) for an existing file.
pub const SYS_LINKAT: usize = 37;
/// `statfs`: space and inode figures of the file system holding a path.
pub const SYS_STATFS: usize = 43;
/// `fstatfs`: space and inode figures of the file system holding an open file.
pub const SYS_FSTATFS: usize = 44;
/// `truncate`: set the size of the file at a path.
pub const SYS_TRUNCATE: usize = 45;
/// `ftruncate`: set the size of an open file.
pub const SYS_FTRUNCATE: usize = 46;
/// `faccessat`: check whether a path may be read, written or executed.
pub const SYS_FACCESSAT: usize = 48;
/// `chdir`: change the current directory to a path.
pub const SYS_CHDIR: usize = 49;
/// `fchmodat`: change the permission bits of a path.
pub const SYS_FCHMODAT: usize = 53;
/// `fchmodat2`: fchmodat with flags (AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH), Linux 6.6.
pub const SYS_FCHMODAT2: usize = 452;
/// `openat`: open (or create) a file and answer a new descriptor.
pub const SYS_OPENAT: usize = 56;
/// `close`: release a descriptor.
pub const SYS_CLOSE: usize = 57;
/// `getdents64`: read directory entries (`linux_dirent64` records) from a directory descriptor.
pub const SYS_GETDENTS64: usize = 61;
/// `lseek`: move a descriptor's file offset.
pub const SYS_LSEEK: usize = 62;
/// `read`: read from a descriptor at its offset, advancing it.
pub const SYS_READ: usize = 63;
/// `write`: write to a descriptor at its offset (or the end with `O_APPEND`), advancing it.
pub const SYS_WRITE: usize = 64;
/// `readv`: read into several buffers in turn (scatter).
pub const SYS_READV: usize = 65;
/// `writev`: write from several buffers in turn (gather).
pub const SYS_WRITEV: usize = 66;
/// `pread64`: read at an explicit offset, leaving the descriptor's offset alone.
pub const SYS_PREAD64: usize = 67;
/// `pwrite64`: write at an explicit offset, leaving the descriptor's offset alone.
pub const SYS_PWRITE64: usize = 68;
/// `preadv`: read into several buffers from an explicit offset (the offset's low and high
/// halves are two arguments; on 64-bit the low one holds all of it).
pub const SYS_PREADV: usize = 69;
/// `pwritev`: write several buffers at an explicit offset.
pub const SYS_PWRITEV: usize = 70;
/// `preadv2`: `preadv` with `RWF_*` flags; offset -1 reads at the descriptor's offset.
pub const SYS_PREADV2: usize = 286;
/// `pwritev2`: `pwritev` with `RWF_*` flags; offset -1 writes at the descriptor's offset.
pub const SYS_PWRITEV2: usize = 287;
/// `sendfile`: copy from a file into another descriptor inside the kernel.
pub const SYS_SENDFILE: usize = 71;
/// `vmsplice`: user memory into a pipe (write end) or a pipe into user memory (read end).
pub const SYS_VMSPLICE: usize = 75;
/// `splice`: move data between a pipe and another descriptor (or two pipes).
pub const SYS_SPLICE: usize = 76;
/// `tee`: copy what one pipe holds into another without consuming it.
pub const SYS_TEE: usize = 77;
/// `sync_file_range`: write back a byte range of a file.
pub const SYS_SYNC_FILE_RANGE: usize = 84;
/// `copy_file_range`: copy a byte range between two regular files inside the kernel.
pub const SYS_COPY_FILE_RANGE: usize = 285;
/// `close_range`: close (or mark close-on-exec) every descriptor of a range.
pub const SYS_CLOSE_RANGE: usize = 436;
/// `openat2`: `openat` with a `struct open_how` (flags, mode, `RESOLVE_*`).
pub const SYS_OPENAT2: usize = 437;
/// `readlinkat`: copy a symbolic link's target into a buffer (no NUL added).
pub const SYS_READLINKAT: usize = 78;
/// `newfstatat`: `struct stat` of a path, or of a descriptor with `AT_EMPTY_PATH`.
pub const SYS_NEWFSTATAT: usize = 79;
/// `fstat`: `struct stat` of an open file.
pub const SYS_FSTAT: usize = 80;
/// statx(dirfd, path, flags, mask, buf).
pub const SYS_STATX: usize = 291;
/// `sync`: write every file system's buffered data and metadata to its disk.
pub const SYS_SYNC: usize = 81;
/// `syncfs`: write back the file system a descriptor is on.
pub const SYS_SYNCFS: usize = 267;
/// `fsync`: make one file's data and metadata durable.
pub const SYS_FSYNC: usize = 82;
/// `fdatasync`: make one file's data (and the metadata needed to read it back) durable.
pub const SYS_FDATASYNC: usize = 83;
/// `exit`: end the calling thread with a status.
pub const SYS_EXIT: usize = 93;
/// `exit_group`: end every thread of the process with a status.
pub const SYS_EXIT_GROUP: usize = 94;
/// `set_tid_address`: where to clear the thread id (and wake a futex) when the thread exits.
pub const SYS_SET_TID_ADDRESS: usize = 96;
/// `nanosleep`: sleep for a relative `struct timespec`.
pub const SYS_NANOSLEEP: usize = 101;
/// `clock_gettime`: read a clock (`CLOCK_REALTIME`, `CLOCK_MONOTONIC`, ...) as a timespec.
pub const SYS_CLOCK_GETTIME: usize = 113;
/// `sched_yield`: give the CPU to another runnable process.
pub const SYS_SCHED_YIELD: usize = 124;
/// `kill`: send a signal to a process (or a process group).
pub const SYS_KILL: usize = 129;
/// `reboot`: power off or restart the machine (needs the magic numbers).
pub const SYS_REBOOT: usize = 142;
/// `uname`: system name, release, version and machine (`struct utsname`).
pub const SYS_UNAME: usize = 160;
/// `getpid`: the calling process's id.
pub const SYS_GETPID: usize = 172;
/// `getppid`: the parent process's id.
pub const SYS_GETPPID: usize = 173;
/// `getuid`: the real user id.
pub const SYS_GETUID: usize = 174;
/// `geteuid`: the effective user id.
pub const SYS_GETEUID: usize = 175;
/// `getgid`: the real group id.
pub const SYS_GETGID: usize = 176;
/// `getegid`: the effective group id.
pub const SYS_GETEGID: usize = 177;
/// `gettid`: the calling thread's id.
pub const SYS_GETTID: usize = 178;
/// `brk`: move the program break (end of the heap); answers the break after the call.
pub const SYS_BRK: usize = 214;
/// `munmap`: remove the mappings in an address range.
pub const SYS_MUNMAP: usize = 215;
/// `clone`: create a process or thread (`clone(SIGCHLD, 0)` is fork).
pub const SYS_CLONE: usize = 220;
/// `execve`: replace the process image with a program, given argv and envp.
pub const SYS_EXECVE: usize = 221;
/// `mmap`: map anonymous memory or a file into the address space.
pub const SYS_MMAP: usize = 222;
/// `mprotect`: change the access permissions of mapped pages.
pub const SYS_MPROTECT: usize = 226;
/// `msync`: write the dirty pages of shared file mappings in a range back to their files.
pub const SYS_MSYNC: usize = 227;
/// `mremap`: grow, shrink or move a mapping (not implemented: ENOSYS).
pub const SYS_MREMAP: usize = 216;
/// `wait4`: wait for a child to change state; its status and resource usage.
pub const SYS_WAIT4: usize = 260;
/// `renameat2`: rename a path, with `RENAME_NOREPLACE` / `RENAME_EXCHANGE` flags.
pub const SYS_RENAMEAT2: usize = 276;

/// dbfs-os extension (outside Linux's range): copy the kernel's I/O counters
/// (`KernelCounters`) to user memory. Benchmarks print them beside each figure.
pub const SYS_DBFS_COUNTERS: usize = 1000;

/// dbfs-os extension: write back every file system, then empty the block caches and the dbfs
/// disk windows, so the next reads come from the disk (the `cold` benchmarks). Root only in
/// spirit; everything runs as root here.
pub const SYS_DBFS_DROP_CACHES: usize = 1001;

/// `setxattr` flag: fail with EEXIST if the attribute exists already (create only).
pub const XATTR_CREATE: u32 = 1;
/// `setxattr` flag: fail with ENODATA if the attribute does not exist (replace only).
pub const XATTR_REPLACE: u32 = 2;
/// Longest attribute name, in bytes (without the NUL).
pub const XATTR_NAME_MAX: usize = 255;
/// Largest attribute value, in bytes (larger: E2BIG).
pub const XATTR_SIZE_MAX: usize = 65536;
/// Largest name list `listxattr` returns, in bytes (NUL-separated names).
pub const XATTR_LIST_MAX: usize = 65536;

/// `reboot`'s first argument: without it the call fails with EINVAL.
pub const LINUX_REBOOT_MAGIC1: usize = 0xfee1dead;
/// `reboot`'s second argument (one of Linux's accepted second magic values).
pub const LINUX_REBOOT_MAGIC2: usize = 672274793;
/// `reboot` command: power the machine off (QEMU exits).
pub const LINUX_REBOOT_CMD_POWER_OFF: usize = 0x4321fedc;

/// Kernel counters returned by `SYS_DBFS_COUNTERS`, all monotonically increasing since boot.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KernelCounters {
    /// Block-device read requests issued to the driver.
    pub dev_read_requests: u64,
    /// Bytes read from block devices.
    pub dev_read_bytes: u64,
    /// Block-device write requests issued to the driver.
    pub dev_write_requests: u64,
    /// Bytes written to block devices.
    pub dev_write_bytes: u64,
    /// Device flushes (cache barriers).
    pub dev_flushes: u64,
    /// Block-cache lookups answered from memory (4 KiB blocks).
    pub cache_hits: u64,
    /// Block-cache lookups that had to read the disk (4 KiB blocks).
    pub cache_misses: u64,
    /// Page faults served by the kernel (user lazy pages and the dbfs window).
    pub page_faults: u64,
    /// Bytes copied between user and kernel memory by syscalls.
    pub user_copy_bytes: u64,
    /// dbfs disk window: pages read from the disk by page faults.
    pub window_pages_read: u64,
    /// dbfs disk window: dirty pages written back to the disk by commits.
    pub window_pages_written: u64,
    /// kvdb transactions committed (each writes one meta page) on dbfs disk windows.
    pub transactions: u64,
    /// dbfs file bytes read from the disk straight into the caller's buffer (large reads),
    /// bypassing the window.
    pub window_direct_bytes: u64,
    /// System calls entered (clock reads glibc answers from the vDSO are not among them).
    pub syscalls: u64,
    /// dbfs disk window: faults that read their cluster with the window unlocked, their
    /// thread asleep until the disk was done (other threads ran meanwhile).
    pub window_fault_sleeps: u64,
    /// dbfs disk window: such reads thrown away because a write reached their pages first.
    pub window_stale_loads: u64,
    /// System calls that ran without the big kernel lock (reads of dbfs files, several harts).
    pub unlocked_syscalls: u64,
    /// Of those, the ones that took the big kernel lock before returning to user mode (a lock
    /// found held for long, or a signal to deliver).
    pub unlocked_took_lock: u64,
    /// Device reads sent while another waiter's read of the same disk was in flight (reads
    /// whose threads sleep: dbfs window faults, large reads; what asynchronous io_submit and
    /// several threads give a disk).
    pub dev_reads_overlapped: u64,
    /// dbfs disk window: bytes of large reads copied from resident pages (a file read again),
    /// no device request.
    pub window_cached_bytes: u64,
    /// dbfs disk window: pages a large read of a stretch read before kept in the window.
    pub window_kept_pages: u64,
}

impl KernelCounters {
    /// Number of counters, the length of the `u64` array the syscall copies out.
    pub const WORDS: usize = 21;
    /// The counters as the syscall copies them: in field order, one `u64` each.
    pub fn to_words(&self) -> [u64; Self::WORDS] {
        [
            self.dev_read_requests,
            self.dev_read_bytes,
            self.dev_write_requests,
            self.dev_write_bytes,
            self.dev_flushes,
            self.cache_hits,
            self.cache_misses,
            self.page_faults,
            self.user_copy_bytes,
            self.window_pages_read,
            self.window_pages_written,
            self.transactions,
            self.window_direct_bytes,
            self.syscalls,
            self.window_fault_sleeps,
            self.window_stale_loads,
            self.unlocked_syscalls,
            self.unlocked_took_lock,
            self.dev_reads_overlapped,
            self.window_cached_bytes,
            self.window_kept_pages,
        ]
    }
    /// The counters from the array [`KernelCounters::to_words`] makes.
    pub fn from_words(w: &[u64; Self::WORDS]) -> Self {
        KernelCounters {
            dev_read_requests: w[0],
            dev_read_bytes: w[1],
            dev_write_requests: w[2],
            dev_write_bytes: w[3],
            dev_flushes: w[4],
            cache_hits: w[5],
            cache_misses: w[6],
            page_faults: w[7],
            user_copy_bytes: w[8],
            window_pages_read: w[9],
            window_pages_written: w[10],
            transactions: w[11],
            window_direct_bytes: w[12],
            syscalls: w[13],
            window_fault_sleeps: w[14],
            window_stale_loads: w[15],
            unlocked_syscalls: w[16],
            unlocked_took_lock: w[17],
            dev_reads_overlapped: w[18],
            window_cached_bytes: w[19],
            window_kept_pages: w[20],
        }
    }
}

/// `fchdir`: change the current directory to an open directory.
pub const SYS_FCHDIR: usize = 50;
/// `chroot`: change the root directory of absolute paths.
pub const SYS_CHROOT: usize = 51;
/// `umount2`: unmount the file system mounted at a path.
pub const SYS_UMOUNT2: usize = 39;
/// `mount`: attach a file system (here: one on a block device) to a directory.
pub const SYS_MOUNT: usize = 40;
/// `fchmod`: change the permission bits of an open file.
pub const SYS_FCHMOD: usize = 52;
/// `utimensat`: set a path's (or descriptor's) access and modification times, in nanoseconds.
pub const SYS_UTIMENSAT: usize = 88;
/// `umask`: set the permission bits masked off newly created files; answers the old mask.
pub const SYS_UMASK: usize = 166;
/// `gettimeofday`: wall-clock time as a `struct timeval` (seconds and microseconds).
pub const SYS_GETTIMEOFDAY: usize = 169;

// Signals, pipes, polling, sessions, credentials, limits: what glibc's static start-up and
// busybox use (issue 16).
/// `mknodat`: create a device node, fifo or socket name.
pub const SYS_MKNODAT: usize = 33;
/// `fallocate`: reserve (or punch out) space for a byte range of a file.
pub const SYS_FALLOCATE: usize = 47;
/// `fchownat`: change the owner and group of a path.
pub const SYS_FCHOWNAT: usize = 54;
/// `fchown`: change the owner and group of an open file.
pub const SYS_FCHOWN: usize = 55;
/// `pipe2`: create a pipe: a read descriptor and a write descriptor.
pub const SYS_PIPE2: usize = 59;
/// `pselect6`: wait until one of some descriptors is ready (`fd_set` bitmaps), with a signal mask.
pub const SYS_PSELECT6: usize = 72;
/// `timerfd_create`: a descriptor that becomes readable when a timer expires.
pub const SYS_TIMERFD_CREATE: usize = 85;
/// `timerfd_settime`: arm or disarm a timer descriptor.
pub const SYS_TIMERFD_SETTIME: usize = 86;
/// `timerfd_gettime`: a timer descriptor's time left and interval.
pub const SYS_TIMERFD_GETTIME: usize = 87;
/// `epoll_create1`: a new epoll instance.
pub const SYS_EPOLL_CREATE1: usize = 20;
/// `epoll_ctl`: add, change or remove a descriptor of an epoll instance's interest list.
pub const SYS_EPOLL_CTL: usize = 21;
/// `epoll_pwait`: wait for events of an epoll instance (millisecond timeout, signal mask).
pub const SYS_EPOLL_PWAIT: usize = 22;
/// `epoll_pwait2`: `epoll_pwait` with a `struct timespec` timeout.
pub const SYS_EPOLL_PWAIT2: usize = 441;
/// `ppoll`: wait until one of some descriptors is ready (`struct pollfd` list), with a signal mask.
pub const SYS_PPOLL: usize = 73;
/// `waitid`: wait for a child to change state; a `siginfo_t` describes it.
pub const SYS_WAITID: usize = 95;
/// `futex`: wait on or wake waiters of a 32-bit word in user memory.
pub const SYS_FUTEX: usize = 98;
/// `set_robust_list`: register the thread's list of held robust futexes.
pub const SYS_SET_ROBUST_LIST: usize = 99;
/// `get_robust_list`: read a thread's registered robust futex list.
pub const SYS_GET_ROBUST_LIST: usize = 100;
/// `flock`: take or drop a whole-file lock (shared or exclusive) of an open file description.
pub const SYS_FLOCK: usize = 32;
/// `getitimer`: read an interval timer (`ITIMER_REAL`, ...).
pub const SYS_GETITIMER: usize = 102;
/// `setitimer`: arm or disarm an interval timer that signals the process.
pub const SYS_SETITIMER: usize = 103;
/// `clock_getres`: the resolution of a clock.
pub const SYS_CLOCK_GETRES: usize = 114;
/// `clock_nanosleep`: sleep on a chosen clock, for a relative or until an absolute time.
pub const SYS_CLOCK_NANOSLEEP: usize = 115;
/// `sched_setaffinity`: set the CPUs a thread may run on.
pub const SYS_SCHED_SETAFFINITY: usize = 122;
/// `sched_getaffinity`: the CPUs a thread may run on (a bitmap).
pub const SYS_SCHED_GETAFFINITY: usize = 123;
/// `tkill`: send a signal to one thread.
pub const SYS_TKILL: usize = 130;
/// `tgkill`: send a signal to one thread of a given thread group.
pub const SYS_TGKILL: usize = 131;
/// `sigaltstack`: set or read the alternate stack signal handlers may run on.
pub const SYS_SIGALTSTACK: usize = 132;
/// `rt_sigsuspend`: replace the signal mask and sleep until a signal arrives.
pub const SYS_RT_SIGSUSPEND: usize = 133;
/// `rt_sigaction`: set or read the action taken on a signal.
pub const SYS_RT_SIGACTION: usize = 134;
/// `rt_sigprocmask`: change or read the set of blocked signals.
pub const SYS_RT_SIGPROCMASK: usize = 135;
/// `rt_sigpending`: the set of signals raised while blocked.
pub const SYS_RT_SIGPENDING: usize = 136;
/// `rt_sigtimedwait`: wait for one of a set of signals and take it with its siginfo.
pub const SYS_RT_SIGTIMEDWAIT: usize = 137;
/// `rt_sigqueueinfo`: send a signal with a siginfo (and its value) to a process.
pub const SYS_RT_SIGQUEUEINFO: usize = 138;
/// `rt_sigreturn`: return from a signal handler, restoring the interrupted context.
pub const SYS_RT_SIGRETURN: usize = 139;
/// `rt_tgsigqueueinfo`: send a signal with a siginfo to one thread of a thread group.
pub const SYS_RT_TGSIGQUEUEINFO: usize = 240;
/// `process_vm_readv`: copy from another process's memory into the caller's.
pub const SYS_PROCESS_VM_READV: usize = 270;
/// `process_vm_writev`: copy from the caller's memory into another process's.
pub const SYS_PROCESS_VM_WRITEV: usize = 271;
/// `setregid`: set the real and effective group ids.
pub const SYS_SETREGID: usize = 143;
/// `setgid`: set the group id.
pub const SYS_SETGID: usize = 144;
/// `setreuid`: set the real and effective user ids.
pub const SYS_SETREUID: usize = 145;
/// `setuid`: set the user id.
pub const SYS_SETUID: usize = 146;
/// `setresuid`: set the real, effective and saved user ids.
pub const SYS_SETRESUID: usize = 147;
/// `getresuid`: the real, effective and saved user ids.
pub const SYS_GETRESUID: usize = 148;
/// `setresgid`: set the real, effective and saved group ids.
pub const SYS_SETRESGID: usize = 149;
/// `getresgid`: the real, effective and saved group ids.
pub const SYS_GETRESGID: usize = 150;
/// `setfsuid`: set the user id used for file-system access checks.
pub const SYS_SETFSUID: usize = 151;
/// `setfsgid`: set the group id used for file-system access checks.
pub const SYS_SETFSGID: usize = 152;
/// `times`: CPU time used by the process and its children, in clock ticks.
pub const SYS_TIMES: usize = 153;
/// `setpgid`: move a process into a process group.
pub const SYS_SETPGID: usize = 154;
/// `getpgid`: a process's process group id.
pub const SYS_GETPGID: usize = 155;
/// `setpriority`: set the nice value of processes (by process, group or user).
pub const SYS_SETPRIORITY: usize = 140;
/// `getpriority`: the nice value of processes, as `20 - nice`.
pub const SYS_GETPRIORITY: usize = 141;
/// `getsid`: a process's session id.
pub const SYS_GETSID: usize = 156;
/// `setsid`: start a new session (and process group) led by the caller.
pub const SYS_SETSID: usize = 157;
/// `getgroups`: the supplementary group ids.
pub const SYS_GETGROUPS: usize = 158;
/// `setgroups`: set the supplementary group ids.
pub const SYS_SETGROUPS: usize = 159;
/// `getrlimit`: read a resource limit (open files, stack size, ...).
pub const SYS_GETRLIMIT: usize = 163;
/// `setrlimit`: set a resource limit.
pub const SYS_SETRLIMIT: usize = 164;
/// `getrusage`: resource usage (CPU time, faults, ...) of the process or its children.
pub const SYS_GETRUSAGE: usize = 165;
/// `ioprio_set`: a process's I/O scheduling class and level.
pub const SYS_IOPRIO_SET: usize = 30;
/// `ioprio_get`: a process's I/O scheduling class and level.
pub const SYS_IOPRIO_GET: usize = 31;
/// `pidfd_send_signal`: signal the process a pidfd names.
pub const SYS_PIDFD_SEND_SIGNAL: usize = 424;
/// `pidfd_open`: a descriptor naming a process.
pub const SYS_PIDFD_OPEN: usize = 434;
/// `timer_create`: a POSIX per-process timer.
pub const SYS_TIMER_CREATE: usize = 107;
/// `timer_gettime`: a POSIX timer's time left and interval.
pub const SYS_TIMER_GETTIME: usize = 108;
/// `timer_getoverrun`: expirations a POSIX timer's last signal stands for, beyond one.
pub const SYS_TIMER_GETOVERRUN: usize = 109;
/// `timer_settime`: arm or disarm a POSIX timer.
pub const SYS_TIMER_SETTIME: usize = 110;
/// `timer_delete`: delete a POSIX timer.
pub const SYS_TIMER_DELETE: usize = 111;
/// `signalfd4`: a descriptor that reads the caller's pending signals of a set.
pub const SYS_SIGNALFD4: usize = 74;
/// `eventfd2`: a descriptor on a 64-bit event counter.
pub const SYS_EVENTFD2: usize = 19;
/// `capget`: a thread's capability sets.
pub const SYS_CAPGET: usize = 90;
/// `capset`: set the caller's capability sets.
pub const SYS_CAPSET: usize = 91;
/// `prctl`: process settings by option (name, death signal, ...).
pub const SYS_PRCTL: usize = 167;
/// `msgget`: the id of a System V message queue (created with IPC_CREAT/IPC_PRIVATE).
pub const SYS_MSGGET: usize = 186;
/// `msgctl`: describe, change or remove a message queue.
pub const SYS_MSGCTL: usize = 187;
/// `msgrcv`: take a message off a queue.
pub const SYS_MSGRCV: usize = 188;
/// `msgsnd`: put a message on a queue.
pub const SYS_MSGSND: usize = 189;
/// `semget`: the id of a System V semaphore set.
pub const SYS_SEMGET: usize = 190;
/// `semctl`: read, set, describe or remove a semaphore set.
pub const SYS_SEMCTL: usize = 191;
/// `semtimedop`: `semop` with a timeout.
pub const SYS_SEMTIMEDOP: usize = 192;
/// `semop`: apply a list of semaphore operations atomically.
pub const SYS_SEMOP: usize = 193;
/// `shmget`: the id of a System V shared memory segment (created with IPC_CREAT/IPC_PRIVATE).
pub const SYS_SHMGET: usize = 194;
/// `shmctl`: remove (IPC_RMID) or describe (IPC_STAT) a shared memory segment.
pub const SYS_SHMCTL: usize = 195;
/// `shmat`: map a shared memory segment into the caller's address space.
pub const SYS_SHMAT: usize = 196;
/// `shmdt`: unmap a segment attached at an address.
pub const SYS_SHMDT: usize = 197;
/// `sysinfo`: uptime, load, memory and process counts (`struct sysinfo`).
pub const SYS_SYSINFO: usize = 179;
/// `fadvise64`: declare how a file range will be accessed (advice may be ignored).
pub const SYS_FADVISE64: usize = 223;
/// `readahead`: ask for a file range to be read into the cache ahead of use.
pub const SYS_READAHEAD: usize = 213;
/// `madvise`: hint how a memory range will be used (advice may be ignored).
pub const SYS_MADVISE: usize = 233;
/// `sched_setparam`: set a process's real-time priority under its policy.
pub const SYS_SCHED_SETPARAM: usize = 118;
/// `sched_setscheduler`: set a process's scheduling policy and priority.
pub const SYS_SCHED_SETSCHEDULER: usize = 119;
/// `sched_getscheduler`: a process's scheduling policy.
pub const SYS_SCHED_GETSCHEDULER: usize = 120;
/// `sched_getparam`: a process's real-time priority.
pub const SYS_SCHED_GETPARAM: usize = 121;
/// `sched_get_priority_max`: the highest priority of a policy.
pub const SYS_SCHED_GET_PRIORITY_MAX: usize = 125;
/// `sched_get_priority_min`: the lowest priority of a policy.
pub const SYS_SCHED_GET_PRIORITY_MIN: usize = 126;
/// `sched_rr_get_interval`: the time slice a process gets.
pub const SYS_SCHED_RR_GET_INTERVAL: usize = 127;
/// `sched_setattr`: set policy, flags, nice value and priority (`struct sched_attr`).
pub const SYS_SCHED_SETATTR: usize = 274;
/// `sched_getattr`: read them back.
pub const SYS_SCHED_GETATTR: usize = 275;
/// `sethostname`: set the node name uname reports.
pub const SYS_SETHOSTNAME: usize = 161;
/// `setdomainname`: set the NIS domain name uname reports.
pub const SYS_SETDOMAINNAME: usize = 162;
/// `personality`: set the process's execution domain.
pub const SYS_PERSONALITY: usize = 92;
/// `getcpu`: the CPU (hart) and NUMA node the caller runs on.
pub const SYS_GETCPU: usize = 168;
/// `mlock`: lock a range of pages in memory (faulted in now).
pub const SYS_MLOCK: usize = 228;
/// `munlock`: unlock a range of pages.
pub const SYS_MUNLOCK: usize = 229;
/// `mlockall`: lock every mapping (MCL_CURRENT) and those made later (MCL_FUTURE).
pub const SYS_MLOCKALL: usize = 230;
/// `munlockall`: unlock every mapping.
pub const SYS_MUNLOCKALL: usize = 231;
/// `mlock2`: mlock with flags (MLOCK_ONFAULT).
pub const SYS_MLOCK2: usize = 284;
/// `prlimit64`: read and set a resource limit of any process.
pub const SYS_PRLIMIT64: usize = 261;
/// `getrandom`: fill a buffer with random bytes.
pub const SYS_GETRANDOM: usize = 278;
/// `rseq`: register restartable sequences for the thread.
pub const SYS_RSEQ: usize = 293;
/// `faccessat2`: faccessat with flags (AT_EACCESS: check with the effective ids).
pub const SYS_FACCESSAT2: usize = 439;
/// `socket`: a new socket descriptor (only AF_UNIX here).
pub const SYS_SOCKET: usize = 198;
/// `bind`: give a socket a name (for AF_UNIX: create its node in the file system).
pub const SYS_BIND: usize = 200;
/// `listen`: mark a socket as accepting connections.
pub const SYS_LISTEN: usize = 201;
/// `accept`: take a connection waiting on a listening socket.
pub const SYS_ACCEPT: usize = 202;
/// `connect`: connect a socket to a named peer.
pub const SYS_CONNECT: usize = 203;
/// `sendto`: send a message on a socket.
pub const SYS_SENDTO: usize = 206;
/// `recvfrom`: receive a message from a socket.
pub const SYS_RECVFROM: usize = 207;
/// `sendmsg`: send a message with ancillary data.
pub const SYS_SENDMSG: usize = 211;
/// `recvmsg`: receive a message with ancillary data.
pub const SYS_RECVMSG: usize = 212;
/// `accept4`: accept with SOCK_CLOEXEC / SOCK_NONBLOCK flags.
pub const SYS_ACCEPT4: usize = 242;
/// `memfd_create`: a regular file in memory that no directory names, with seals.
pub const SYS_MEMFD_CREATE: usize = 279;
/// `adjtimex`: read (and, with CAP_SYS_TIME, set) the clock's NTP parameters.
pub const SYS_ADJTIMEX: usize = 171;
/// `clock_adjtime`: adjtimex of one clock.
pub const SYS_CLOCK_ADJTIME: usize = 266;
