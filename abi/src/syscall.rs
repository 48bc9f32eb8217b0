//! Linux riscv64 syscall numbers (asm-generic unistd.h) that dbfs-os implements or knows of.
//! A number not handled by the kernel returns -ENOSYS.

pub const SYS_SETXATTR: usize = 5;
pub const SYS_LSETXATTR: usize = 6;
pub const SYS_FSETXATTR: usize = 7;
pub const SYS_GETXATTR: usize = 8;
pub const SYS_LGETXATTR: usize = 9;
pub const SYS_FGETXATTR: usize = 10;
pub const SYS_LISTXATTR: usize = 11;
pub const SYS_LLISTXATTR: usize = 12;
pub const SYS_FLISTXATTR: usize = 13;
pub const SYS_REMOVEXATTR: usize = 14;
pub const SYS_LREMOVEXATTR: usize = 15;
pub const SYS_FREMOVEXATTR: usize = 16;
pub const SYS_GETCWD: usize = 17;
pub const SYS_DUP: usize = 23;
pub const SYS_DUP3: usize = 24;
pub const SYS_FCNTL: usize = 25;
pub const SYS_IOCTL: usize = 29;
pub const SYS_MKDIRAT: usize = 34;
pub const SYS_UNLINKAT: usize = 35;
pub const SYS_SYMLINKAT: usize = 36;
pub const SYS_LINKAT: usize = 37;
pub const SYS_STATFS: usize = 43;
pub const SYS_FSTATFS: usize = 44;
pub const SYS_TRUNCATE: usize = 45;
pub const SYS_FTRUNCATE: usize = 46;
pub const SYS_FACCESSAT: usize = 48;
pub const SYS_CHDIR: usize = 49;
pub const SYS_FCHMODAT: usize = 53;
pub const SYS_OPENAT: usize = 56;
pub const SYS_CLOSE: usize = 57;
pub const SYS_GETDENTS64: usize = 61;
pub const SYS_LSEEK: usize = 62;
pub const SYS_READ: usize = 63;
pub const SYS_WRITE: usize = 64;
pub const SYS_READV: usize = 65;
pub const SYS_WRITEV: usize = 66;
pub const SYS_PREAD64: usize = 67;
pub const SYS_PWRITE64: usize = 68;
pub const SYS_READLINKAT: usize = 78;
pub const SYS_NEWFSTATAT: usize = 79;
pub const SYS_FSTAT: usize = 80;
pub const SYS_SYNC: usize = 81;
pub const SYS_FSYNC: usize = 82;
pub const SYS_FDATASYNC: usize = 83;
pub const SYS_EXIT: usize = 93;
pub const SYS_EXIT_GROUP: usize = 94;
pub const SYS_SET_TID_ADDRESS: usize = 96;
pub const SYS_NANOSLEEP: usize = 101;
pub const SYS_CLOCK_GETTIME: usize = 113;
pub const SYS_SCHED_YIELD: usize = 124;
pub const SYS_KILL: usize = 129;
pub const SYS_REBOOT: usize = 142;
pub const SYS_UNAME: usize = 160;
pub const SYS_GETPID: usize = 172;
pub const SYS_GETPPID: usize = 173;
pub const SYS_GETUID: usize = 174;
pub const SYS_GETEUID: usize = 175;
pub const SYS_GETGID: usize = 176;
pub const SYS_GETEGID: usize = 177;
pub const SYS_GETTID: usize = 178;
pub const SYS_BRK: usize = 214;
pub const SYS_MUNMAP: usize = 215;
pub const SYS_CLONE: usize = 220;
pub const SYS_EXECVE: usize = 221;
pub const SYS_MMAP: usize = 222;
pub const SYS_MPROTECT: usize = 226;
pub const SYS_WAIT4: usize = 260;
pub const SYS_RENAMEAT2: usize = 276;

/// dbfs-os extension (outside Linux's range): copy the kernel's I/O counters
/// (`KernelCounters`) to user memory. Benchmarks print them beside each figure.
pub const SYS_DBFS_COUNTERS: usize = 1000;

/// dbfs-os extension: write back every file system, then empty the block caches and the dbfs
/// disk windows, so the next reads come from the disk (the `cold` benchmarks). Root only in
/// spirit; everything runs as root here.
pub const SYS_DBFS_DROP_CACHES: usize = 1001;

/// `setxattr` flags (Linux's `XATTR_CREATE` / `XATTR_REPLACE`) and size limits.
pub const XATTR_CREATE: u32 = 1;
pub const XATTR_REPLACE: u32 = 2;
/// Longest attribute name, in bytes (without the NUL).
pub const XATTR_NAME_MAX: usize = 255;
/// Largest attribute value, and largest name list `listxattr` returns.
pub const XATTR_SIZE_MAX: usize = 65536;
pub const XATTR_LIST_MAX: usize = 65536;

/// `reboot` magic values and the power-off command (Linux's).
pub const LINUX_REBOOT_MAGIC1: usize = 0xfee1dead;
pub const LINUX_REBOOT_MAGIC2: usize = 672274793;
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
    /// Block-cache hits and misses (4 KiB blocks).
    pub cache_hits: u64,
    pub cache_misses: u64,
    /// Page faults served by the kernel (user lazy pages and the dbfs window).
    pub page_faults: u64,
    /// Bytes copied between user and kernel memory by syscalls.
    pub user_copy_bytes: u64,
    /// dbfs disk window: pages read from the disk by page faults, and dirty pages written
    /// back by commits.
    pub window_pages_read: u64,
    pub window_pages_written: u64,
    /// kvdb transactions committed (each writes one meta page) on dbfs disk windows.
    pub transactions: u64,
    /// dbfs file bytes read from the disk straight into the caller's buffer (large reads),
    /// bypassing the window.
    pub window_direct_bytes: u64,
}

impl KernelCounters {
    pub const WORDS: usize = 13;
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
        ]
    }
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
        }
    }
}

pub const SYS_FCHDIR: usize = 50;
pub const SYS_FCHMOD: usize = 52;
pub const SYS_UTIMENSAT: usize = 88;
pub const SYS_UMASK: usize = 166;
pub const SYS_GETTIMEOFDAY: usize = 169;

// Signals, pipes, polling, sessions, credentials, limits: what glibc's static start-up and
// busybox use (issue 16).
pub const SYS_MKNODAT: usize = 33;
pub const SYS_FALLOCATE: usize = 47;
pub const SYS_FCHOWNAT: usize = 54;
pub const SYS_FCHOWN: usize = 55;
pub const SYS_PIPE2: usize = 59;
pub const SYS_PSELECT6: usize = 72;
pub const SYS_PPOLL: usize = 73;
pub const SYS_WAITID: usize = 95;
pub const SYS_FUTEX: usize = 98;
pub const SYS_SET_ROBUST_LIST: usize = 99;
pub const SYS_GET_ROBUST_LIST: usize = 100;
pub const SYS_GETITIMER: usize = 102;
pub const SYS_SETITIMER: usize = 103;
pub const SYS_CLOCK_GETRES: usize = 114;
pub const SYS_CLOCK_NANOSLEEP: usize = 115;
pub const SYS_SCHED_SETAFFINITY: usize = 122;
pub const SYS_SCHED_GETAFFINITY: usize = 123;
pub const SYS_TKILL: usize = 130;
pub const SYS_TGKILL: usize = 131;
pub const SYS_SIGALTSTACK: usize = 132;
pub const SYS_RT_SIGSUSPEND: usize = 133;
pub const SYS_RT_SIGACTION: usize = 134;
pub const SYS_RT_SIGPROCMASK: usize = 135;
pub const SYS_RT_SIGPENDING: usize = 136;
pub const SYS_RT_SIGRETURN: usize = 139;
pub const SYS_SETREGID: usize = 143;
pub const SYS_SETGID: usize = 144;
pub const SYS_SETREUID: usize = 145;
pub const SYS_SETUID: usize = 146;
pub const SYS_SETRESUID: usize = 147;
pub const SYS_GETRESUID: usize = 148;
pub const SYS_SETRESGID: usize = 149;
pub const SYS_GETRESGID: usize = 150;
pub const SYS_SETFSUID: usize = 151;
pub const SYS_SETFSGID: usize = 152;
pub const SYS_TIMES: usize = 153;
pub const SYS_SETPGID: usize = 154;
pub const SYS_GETPGID: usize = 155;
pub const SYS_GETSID: usize = 156;
pub const SYS_SETSID: usize = 157;
pub const SYS_GETGROUPS: usize = 158;
pub const SYS_SETGROUPS: usize = 159;
pub const SYS_GETRLIMIT: usize = 163;
pub const SYS_SETRLIMIT: usize = 164;
pub const SYS_GETRUSAGE: usize = 165;
pub const SYS_PRCTL: usize = 167;
pub const SYS_SYSINFO: usize = 179;
pub const SYS_MADVISE: usize = 233;
pub const SYS_PRLIMIT64: usize = 261;
pub const SYS_GETRANDOM: usize = 278;
pub const SYS_RSEQ: usize = 293;
pub const SYS_FACCESSAT2: usize = 439;
pub const SYS_SOCKET: usize = 198;
pub const SYS_BIND: usize = 200;
pub const SYS_LISTEN: usize = 201;
pub const SYS_ACCEPT: usize = 202;
pub const SYS_CONNECT: usize = 203;
pub const SYS_SENDTO: usize = 206;
pub const SYS_RECVFROM: usize = 207;
pub const SYS_SENDMSG: usize = 211;
pub const SYS_RECVMSG: usize = 212;
pub const SYS_ACCEPT4: usize = 242;
