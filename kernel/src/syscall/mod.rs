//! System calls: Linux riscv64 numbers and semantics.
//!
//! `dispatch` is the one place where `Result<usize, Errno>` becomes the user-visible return
//! value (`-errno` on error); an unknown number is `-ENOSYS`. Handlers are `sys_<name>`,
//! grouped by subsystem. Every user pointer goes through `mm::uaccess`.

mod adjtimex;
mod aio;
mod aio_workers;
mod args;
mod attr;
mod caps;
pub mod coredump;
mod epoll;
mod eventfd;
mod fcntl;
mod fd;
mod fs;
mod futex;
mod hwprobe;
mod io;
mod memfd;
mod memlock;
pub(crate) mod misc;
mod mount;
mod msg;
mod namespace;
mod openat2;
mod pidfd;
mod poll;
mod process;
mod ptimer;
mod sched;
mod sem;
mod shm;
mod signal;
mod socket;
mod splice;
mod stream;
mod system;
mod timerfd;
pub mod unlocked;
mod xattr;

use abi::syscall::*;
use abi::Errno;

use crate::arch::trap::TrapFrame;
use crate::task::changing_space;
use args::SysResult;

pub use aio_workers::set_async as set_aio_async;

pub fn dispatch(num: usize, a: [usize; 6], tf: &mut TrapFrame) -> isize {
    crate::counters::add_syscall(crate::arch::hart::index());
    let r: SysResult = match num {
        SYS_IO_SETUP => changing_space(|| aio::sys_io_setup(a[0] as u32, a[1])),
        SYS_IO_DESTROY => aio::sys_io_destroy(a[0]),
        SYS_IO_SUBMIT => aio::sys_io_submit(a[0], a[1] as isize, a[2]),
        SYS_IO_CANCEL => aio::sys_io_cancel(a[0], a[1], a[2]),
        SYS_IO_GETEVENTS => aio::sys_io_getevents(a[0], a[1] as isize, a[2] as isize, a[3], a[4]),
        SYS_IO_PGETEVENTS => {
            aio::sys_io_pgetevents(a[0], a[1] as isize, a[2] as isize, a[3], a[4], a[5])
        }
        SYS_SETXATTR => xattr::sys_setxattr(a[0], a[1], a[2], a[3], a[4] as u32, true),
        SYS_LSETXATTR => xattr::sys_setxattr(a[0], a[1], a[2], a[3], a[4] as u32, false),
        SYS_FSETXATTR => xattr::sys_fsetxattr(a[0] as i32, a[1], a[2], a[3], a[4] as u32),
        SYS_GETXATTR => xattr::sys_getxattr(a[0], a[1], a[2], a[3], true),
        SYS_LGETXATTR => xattr::sys_getxattr(a[0], a[1], a[2], a[3], false),
        SYS_FGETXATTR => xattr::sys_fgetxattr(a[0] as i32, a[1], a[2], a[3]),
        SYS_LISTXATTR => xattr::sys_listxattr(a[0], a[1], a[2], true),
        SYS_LLISTXATTR => xattr::sys_listxattr(a[0], a[1], a[2], false),
        SYS_FLISTXATTR => xattr::sys_flistxattr(a[0] as i32, a[1], a[2]),
        SYS_REMOVEXATTR => xattr::sys_removexattr(a[0], a[1], true),
        SYS_LREMOVEXATTR => xattr::sys_removexattr(a[0], a[1], false),
        SYS_FREMOVEXATTR => xattr::sys_fremovexattr(a[0] as i32, a[1]),
        SYS_CAPGET => caps::sys_capget(a[0], a[1]),
        SYS_CAPSET => caps::sys_capset(a[0], a[1]),
        SYS_PRCTL => caps::sys_prctl(a[0], a[1]),
        SYS_GETCWD => namespace::sys_getcwd(a[0], a[1]),
        SYS_DUP => fs::sys_dup(a[0] as i32),
        SYS_DUP3 => fs::sys_dup3(a[0] as i32, a[1] as i32, a[2] as u32),
        SYS_FCNTL => fcntl::sys_fcntl(a[0] as i32, a[1] as u32, a[2]),
        SYS_FLOCK => fs::sys_flock(a[0] as i32, a[1] as u32),
        SYS_IOCTL => stream::sys_ioctl(a[0] as i32, a[1], a[2]),
        SYS_SOCKET => socket::sys_socket(a[0], a[1], a[2]),
        SYS_BIND => socket::sys_bind(a[0] as i32, a[1], a[2]),
        SYS_SOCKETPAIR => socket::sys_socketpair(a[0], a[1], a[2], a[3]),
        SYS_LISTEN => socket::sys_listen(a[0] as i32, a[1]),
        SYS_CONNECT => socket::sys_connect(a[0] as i32, a[1], a[2]),
        SYS_GETSOCKNAME => socket::sys_getsockname(a[0] as i32, a[1], a[2]),
        SYS_GETPEERNAME => socket::sys_getpeername(a[0] as i32, a[1], a[2]),
        SYS_RISCV_HWPROBE => hwprobe::sys_riscv_hwprobe(a[0], a[1], a[2], a[3], a[4]),
        SYS_ACCEPT => socket::sys_accept4(a[0] as i32, a[1], a[2], 0),
        SYS_ACCEPT4 => socket::sys_accept4(a[0] as i32, a[1], a[2], a[3]),
        SYS_SENDTO => socket::sys_sendto(a[0] as i32, a[1], a[2], a[3], a[4], a[5]),
        SYS_RECVFROM => socket::sys_recvfrom(a[0] as i32, a[1], a[2], a[3], a[4], a[5]),
        SYS_SENDMSG => socket::sys_sendmsg(a[0] as i32, a[1], a[2]),
        SYS_RECVMSG => socket::sys_recvmsg(a[0] as i32, a[1], a[2]),
        SYS_SHUTDOWN => socket::sys_shutdown(a[0] as i32, a[1]),
        SYS_SETSOCKOPT => socket::sys_setsockopt(a[0] as i32, a[1], a[2], a[3], a[4]),
        SYS_GETSOCKOPT => socket::sys_getsockopt(a[0] as i32, a[1], a[2], a[3], a[4]),
        SYS_PIDFD_OPEN => pidfd::sys_pidfd_open(a[0] as isize, a[1] as u32),
        SYS_PIDFD_SEND_SIGNAL => {
            pidfd::sys_pidfd_send_signal(a[0] as i32, a[1] as i32, a[2], a[3] as u32)
        }
        SYS_TIMER_CREATE => ptimer::sys_timer_create(a[0], a[1], a[2]),
        SYS_TIMER_SETTIME => ptimer::sys_timer_settime(a[0], a[1] as u32, a[2], a[3]),
        SYS_TIMER_GETTIME => ptimer::sys_timer_gettime(a[0], a[1]),
        SYS_TIMER_GETOVERRUN => ptimer::sys_timer_getoverrun(a[0]),
        SYS_TIMER_DELETE => ptimer::sys_timer_delete(a[0]),
        SYS_SIGNALFD4 => eventfd::sys_signalfd4(a[0] as i32, a[1], a[2], a[3] as u32),
        SYS_EVENTFD2 => eventfd::sys_eventfd2(a[0] as u32, a[1] as u32),
        SYS_MEMFD_CREATE => memfd::sys_memfd_create(a[0], a[1] as u32),
        SYS_TIMERFD_CREATE => timerfd::sys_timerfd_create(a[0], a[1] as u32),
        SYS_TIMERFD_SETTIME => timerfd::sys_timerfd_settime(a[0] as i32, a[1] as u32, a[2], a[3]),
        SYS_TIMERFD_GETTIME => timerfd::sys_timerfd_gettime(a[0] as i32, a[1]),
        SYS_PIPE2 => stream::sys_pipe2(a[0], a[1] as u32),
        SYS_PPOLL => poll::sys_ppoll(a[0], a[1], a[2], a[3], a[4]),
        SYS_EPOLL_CREATE1 => epoll::sys_epoll_create1(a[0] as u32),
        SYS_EPOLL_CTL => epoll::sys_epoll_ctl(a[0] as i32, a[1] as u32, a[2] as i32, a[3]),
        SYS_EPOLL_PWAIT => {
            epoll::sys_epoll_pwait(a[0] as i32, a[1], a[2] as i32, a[3] as i32, a[4], a[5])
        }
        SYS_EPOLL_PWAIT2 => {
            epoll::sys_epoll_pwait2(a[0] as i32, a[1], a[2] as i32, a[3], a[4], a[5])
        }
        SYS_PSELECT6 => poll::sys_pselect6(a[0], a[1], a[2], a[3], a[4], a[5]),
        SYS_MKDIRAT => namespace::sys_mkdirat(a[0] as i32, a[1], a[2] as u32),
        SYS_UNLINKAT => namespace::sys_unlinkat(a[0] as i32, a[1], a[2] as u32),
        SYS_SYMLINKAT => namespace::sys_symlinkat(a[0], a[1] as i32, a[2]),
        SYS_LINKAT => namespace::sys_linkat(a[0] as i32, a[1], a[2] as i32, a[3], a[4] as u32),
        SYS_STATFS => attr::sys_statfs(a[0], a[1]),
        SYS_FSTATFS => attr::sys_fstatfs(a[0] as i32, a[1]),
        SYS_TRUNCATE => attr::sys_truncate(a[0], a[1] as i64),
        SYS_FTRUNCATE => attr::sys_ftruncate(a[0] as i32, a[1] as i64),
        SYS_FACCESSAT => attr::sys_faccessat(a[0] as i32, a[1], a[2] as u32, 0),
        SYS_FACCESSAT2 => attr::sys_faccessat(a[0] as i32, a[1], a[2] as u32, a[3] as u32),
        SYS_FCHOWN => attr::sys_fchown(a[0] as i32, a[1], a[2]),
        SYS_FCHOWNAT => attr::sys_fchownat(a[0] as i32, a[1], a[2], a[3], a[4] as u32),
        SYS_MKNODAT => namespace::sys_mknodat(a[0] as i32, a[1], a[2] as u32, a[3]),
        SYS_MOUNT => mount::sys_mount(a[0], a[1], a[2], a[3], a[4]),
        SYS_UMOUNT2 => mount::sys_umount2(a[0], a[1] as u32),
        SYS_CHDIR => namespace::sys_chdir(a[0]),
        SYS_CHROOT => namespace::sys_chroot(a[0]),
        SYS_FCHDIR => namespace::sys_fchdir(a[0] as i32),
        SYS_FCHMOD => attr::sys_fchmod(a[0] as i32, a[1] as u32),
        SYS_FCHMODAT => attr::sys_fchmodat(a[0] as i32, a[1], a[2] as u32),
        SYS_FCHMODAT2 => attr::sys_fchmodat2(a[0] as i32, a[1], a[2] as u32, a[3] as u32),
        SYS_OPENAT => fs::sys_openat(a[0] as i32, a[1], a[2] as u32, a[3] as u32),
        SYS_CLOSE => fs::sys_close(a[0] as i32),
        SYS_CLOSE_RANGE => fs::sys_close_range(a[0] as u32, a[1] as u32, a[2] as u32),
        SYS_OPENAT2 => openat2::sys_openat2(a[0] as i32, a[1], a[2], a[3]),
        SYS_SYNC_FILE_RANGE => {
            fs::sys_sync_file_range(a[0] as i32, a[1] as i64, a[2] as i64, a[3] as u32)
        }
        SYS_GETDENTS64 => fs::sys_getdents64(a[0] as i32, a[1], a[2]),
        SYS_LSEEK => fs::sys_lseek(a[0] as i32, a[1] as i64, a[2] as u32),
        SYS_READ => io::sys_read(a[0] as i32, a[1], a[2]),
        SYS_WRITE => io::as_writer(|| io::sys_write(a[0] as i32, a[1], a[2])),
        SYS_READV => io::sys_readv(a[0] as i32, a[1], a[2]),
        SYS_WRITEV => io::as_writer(|| io::sys_writev(a[0] as i32, a[1], a[2])),
        SYS_PREAD64 => io::sys_pread(a[0] as i32, a[1], a[2], a[3] as i64),
        SYS_PWRITE64 => io::as_writer(|| io::sys_pwrite(a[0] as i32, a[1], a[2], a[3] as i64)),
        SYS_PREADV => io::sys_preadv(a[0] as i32, a[1], a[2], a[3] as i64, None),
        SYS_PWRITEV => {
            io::as_writer(|| io::sys_pwritev(a[0] as i32, a[1], a[2], a[3] as i64, None))
        }
        SYS_PREADV2 => io::sys_preadv(a[0] as i32, a[1], a[2], a[3] as i64, Some(a[5] as u32)),
        SYS_PWRITEV2 => io::as_writer(|| {
            io::sys_pwritev(a[0] as i32, a[1], a[2], a[3] as i64, Some(a[5] as u32))
        }),
        SYS_SENDFILE => {
            io::as_writer(|| splice::sys_sendfile(a[0] as i32, a[1] as i32, a[2], a[3]))
        }
        SYS_SPLICE => io::as_writer(|| {
            splice::sys_splice(a[0] as i32, a[1], a[2] as i32, a[3], a[4], a[5] as u32)
        }),
        SYS_TEE => splice::sys_tee(a[0] as i32, a[1] as i32, a[2], a[3] as u32),
        SYS_VMSPLICE => splice::sys_vmsplice(a[0] as i32, a[1], a[2], a[3] as u32),
        SYS_COPY_FILE_RANGE => io::as_writer(|| {
            splice::sys_copy_file_range(a[0] as i32, a[1], a[2] as i32, a[3], a[4], a[5] as u32)
        }),
        SYS_READLINKAT => namespace::sys_readlinkat(a[0] as i32, a[1], a[2], a[3] as isize),
        SYS_NEWFSTATAT => attr::sys_newfstatat(a[0] as i32, a[1], a[2], a[3] as u32),
        SYS_STATX => attr::sys_statx(a[0] as i32, a[1], a[2] as u32, a[3] as u32, a[4]),
        SYS_FSTAT => attr::sys_fstat(a[0] as i32, a[1]),
        SYS_SYNC => fs::sys_sync(),
        SYS_SYNCFS => fs::sys_syncfs(a[0] as i32),
        SYS_FADVISE64 => fs::sys_fadvise64(a[0] as i32, a[1] as i64, a[2] as i64, a[3] as u32),
        SYS_READAHEAD => fs::sys_readahead(a[0] as i32),
        SYS_FALLOCATE => fs::sys_fallocate(a[0] as i32, a[1] as u32, a[2] as i64, a[3] as i64),
        SYS_FSYNC => fs::sys_fsync(a[0] as i32, false),
        SYS_FDATASYNC => fs::sys_fsync(a[0] as i32, true),
        SYS_UTIMENSAT => attr::sys_utimensat(a[0] as i32, a[1], a[2], a[3] as u32),
        SYS_RENAMEAT2 => {
            namespace::sys_renameat2(a[0] as i32, a[1], a[2] as i32, a[3], a[4] as u32)
        }
        SYS_UMASK => process::sys_umask(a[0] as u32),
        SYS_EXIT => process::sys_exit(a[0] as i32),
        SYS_EXIT_GROUP => process::sys_exit_group(a[0] as i32),
        SYS_GETPID => Ok(crate::task::current_pid()),
        SYS_GETTID => Ok(crate::task::current_tid()),
        SYS_SET_TID_ADDRESS => process::sys_set_tid_address(a[0]),
        SYS_SET_ROBUST_LIST => process::sys_set_robust_list(a[0], a[1]),
        SYS_GETPPID => process::sys_getppid(),
        SYS_GETUID | SYS_GETEUID | SYS_GETGID | SYS_GETEGID => process::sys_getid(num),
        SYS_SETUID => process::sys_setuid(a[0]),
        SYS_SETGID => process::sys_setgid(a[0]),
        SYS_SETREUID => process::sys_setreuid(a[0], a[1]),
        SYS_SETREGID => process::sys_setregid(a[0], a[1]),
        SYS_SETRESUID => process::sys_setresuid(a[0], a[1], a[2]),
        SYS_SETRESGID => process::sys_setresgid(a[0], a[1], a[2]),
        SYS_GETRESUID => process::sys_getresuid(a[0], a[1], a[2]),
        SYS_GETRESGID => process::sys_getresgid(a[0], a[1], a[2]),
        SYS_SETFSUID => process::sys_setfsid(a[0], false),
        SYS_SETFSGID => process::sys_setfsid(a[0], true),
        SYS_GETGROUPS => process::sys_getgroups(a[0], a[1]),
        SYS_SETGROUPS => process::sys_setgroups(a[0], a[1]),
        SYS_SETPGID => process::sys_setpgid(a[0] as isize, a[1] as isize),
        SYS_GETPGID => process::sys_getpgid(a[0] as isize),
        SYS_GETSID => process::sys_getsid(a[0] as isize),
        SYS_GETPRIORITY => process::sys_getpriority(a[0], a[1]),
        SYS_IOPRIO_SET => process::sys_ioprio_set(a[0], a[1], a[2]),
        SYS_IOPRIO_GET => process::sys_ioprio_get(a[0], a[1]),
        SYS_SETPRIORITY => process::sys_setpriority(a[0], a[1], a[2]),
        SYS_SETSID => process::sys_setsid(),
        SYS_PRLIMIT64 => process::sys_prlimit64(a[0], a[1], a[2], a[3]),
        SYS_GETRLIMIT => process::sys_getrlimit(a[0], a[1]),
        SYS_SETRLIMIT => process::sys_setrlimit(a[0], a[1]),
        SYS_RT_SIGACTION => signal::sys_rt_sigaction(a[0], a[1], a[2], a[3]),
        SYS_RT_SIGPROCMASK => signal::sys_rt_sigprocmask(a[0], a[1], a[2], a[3]),
        SYS_RT_SIGPENDING => signal::sys_rt_sigpending(a[0], a[1]),
        SYS_RT_SIGRETURN => signal::sys_rt_sigreturn(tf),
        SYS_RT_SIGSUSPEND => signal::sys_rt_sigsuspend(a[0], a[1]),
        SYS_RT_SIGTIMEDWAIT => signal::sys_rt_sigtimedwait(a[0], a[1], a[2], a[3]),
        SYS_RT_SIGQUEUEINFO => signal::sys_rt_sigqueueinfo(a[0] as isize, a[1] as i32, a[2]),
        SYS_RT_TGSIGQUEUEINFO => {
            signal::sys_rt_tgsigqueueinfo(a[0] as isize, a[1] as isize, a[2] as i32, a[3])
        }
        SYS_SIGALTSTACK => signal::sys_sigaltstack(a[0], a[1], tf),
        SYS_TKILL => signal::sys_tkill(a[0] as isize, a[1] as i32),
        SYS_TGKILL => signal::sys_tgkill(a[0] as isize, a[1] as isize, a[2] as i32),
        // Restartable sequences are declined, as a kernel without them would.
        SYS_RSEQ => Err(Errno::ENOSYS),
        SYS_GETRANDOM => misc::sys_getrandom(a[0], a[1], a[2] as u32),
        SYS_SYSINFO => misc::sys_sysinfo(a[0]),
        SYS_TIMES => misc::sys_times(a[0]),
        SYS_GETRUSAGE => misc::sys_getrusage(a[0] as isize, a[1]),
        SYS_CLOCK_NANOSLEEP => misc::sys_clock_nanosleep(a[0] as u32, a[1] as u32, a[2], a[3]),
        SYS_CLOCK_GETRES => misc::sys_clock_getres(a[0] as u32, a[1]),
        SYS_MADVISE => changing_space(|| misc::sys_madvise(a[0], a[1], a[2] as u32)),
        SYS_SCHED_GETAFFINITY => misc::sys_sched_getaffinity(a[0], a[1], a[2]),
        SYS_SCHED_SETAFFINITY => misc::sys_sched_setaffinity(a[0], a[1], a[2]),
        SYS_SCHED_YIELD => {
            crate::task::yield_now();
            Ok(0)
        }
        // A fork shares every private page copy-on-write: not while a sibling reads into one.
        SYS_CLONE if a[0] & abi::fcntl::CLONE_THREAD as usize == 0 => {
            let cloned = changing_space(|| process::sys_clone(a[0], a[1], a[2], a[3], a[4], tf));
            process::finish_vfork(a[0], cloned)
        }
        SYS_CLONE => process::sys_clone(a[0], a[1], a[2], a[3], a[4], tf),
        SYS_CLONE3 => process::sys_clone3(a[0], a[1], tf),
        SYS_EXECVE => process::sys_execve(a[0], a[1], a[2]),
        SYS_WAITID => process::sys_waitid(a[0], a[1], a[2], a[3] as u32, a[4]),
        SYS_WAIT4 => process::sys_wait4(a[0] as isize, a[1], a[2] as u32, a[3]),
        SYS_KILL => signal::sys_kill(a[0] as isize, a[1] as i32),
        SYS_BRK => changing_space(|| misc::sys_brk(a[0])),
        SYS_MMAP => changing_space(|| {
            misc::sys_mmap(a[0], a[1], a[2] as u32, a[3] as u32, a[4] as i32, a[5])
        }),
        SYS_MINCORE => misc::sys_mincore(a[0], a[1], a[2]),
        SYS_MLOCK => changing_space(|| memlock::sys_mlock(a[0], a[1])),
        SYS_MLOCK2 => changing_space(|| memlock::sys_mlock2(a[0], a[1], a[2])),
        SYS_MUNLOCK => changing_space(|| memlock::sys_munlock(a[0], a[1])),
        SYS_MLOCKALL => changing_space(|| memlock::sys_mlockall(a[0])),
        SYS_MUNLOCKALL => changing_space(memlock::sys_munlockall),
        SYS_MSYNC => misc::sys_msync(a[0], a[1], a[2] as u32),
        SYS_MUNMAP => changing_space(|| misc::sys_munmap(a[0], a[1])),
        SYS_MREMAP => changing_space(|| misc::sys_mremap(a[0], a[1], a[2], a[3] as u32, a[4])),
        SYS_MPROTECT => changing_space(|| misc::sys_mprotect(a[0], a[1], a[2] as u32)),
        SYS_FUTEX => futex::sys_futex(a[0], a[1], a[2], a[3], a[4], a[5]),
        SYS_SHMGET => shm::sys_shmget(a[0], a[1], a[2]),
        SYS_SHMAT => changing_space(|| shm::sys_shmat(a[0], a[1], a[2])),
        SYS_SHMDT => changing_space(|| shm::sys_shmdt(a[0])),
        SYS_SHMCTL => shm::sys_shmctl(a[0], a[1], a[2]),
        SYS_MSGGET => msg::sys_msgget(a[0], a[1]),
        SYS_MSGSND => msg::sys_msgsnd(a[0], a[1], a[2], a[3]),
        SYS_MSGRCV => msg::sys_msgrcv(a[0], a[1], a[2], a[3], a[4]),
        SYS_MSGCTL => msg::sys_msgctl(a[0], a[1], a[2]),
        SYS_SEMGET => sem::sys_semget(a[0], a[1], a[2]),
        SYS_SEMOP => sem::sys_semop(a[0], a[1], a[2]),
        SYS_SEMTIMEDOP => sem::sys_semtimedop(a[0], a[1], a[2], a[3]),
        SYS_SEMCTL => sem::sys_semctl(a[0], a[1], a[2], a[3]),
        SYS_CLOCK_GETTIME => misc::sys_clock_gettime(a[0] as u32, a[1]),
        SYS_GETTIMEOFDAY => misc::sys_gettimeofday(a[0], a[1]),
        SYS_NANOSLEEP => misc::sys_nanosleep(a[0], a[1]),
        SYS_GETITIMER => misc::sys_getitimer(a[0], a[1]),
        SYS_SETITIMER => misc::sys_setitimer(a[0], a[1], a[2]),
        SYS_UNAME => system::sys_uname(a[0]),
        SYS_ADJTIMEX => adjtimex::sys_adjtimex(a[0]),
        SYS_CLOCK_ADJTIME => adjtimex::sys_clock_adjtime(a[0], a[1]),
        SYS_SETHOSTNAME => system::sys_setname(false, a[0], a[1]),
        SYS_SETDOMAINNAME => system::sys_setname(true, a[0], a[1]),
        SYS_PERSONALITY => system::sys_personality(a[0]),
        SYS_GETCPU => system::sys_getcpu(a[0], a[1]),
        SYS_SCHED_SETSCHEDULER => sched::sys_sched_setscheduler(a[0], a[1], a[2]),
        SYS_SCHED_GETSCHEDULER => sched::sys_sched_getscheduler(a[0]),
        SYS_SCHED_SETPARAM => sched::sys_sched_setparam(a[0], a[1]),
        SYS_SCHED_GETPARAM => sched::sys_sched_getparam(a[0], a[1]),
        SYS_SCHED_GET_PRIORITY_MAX => sched::sys_sched_get_priority_max(a[0]),
        SYS_SCHED_GET_PRIORITY_MIN => sched::sys_sched_get_priority_min(a[0]),
        SYS_SCHED_RR_GET_INTERVAL => sched::sys_sched_rr_get_interval(a[0], a[1]),
        SYS_SCHED_SETATTR => sched::sys_sched_setattr(a[0], a[1], a[2]),
        SYS_SCHED_GETATTR => sched::sys_sched_getattr(a[0], a[1], a[2], a[3]),
        SYS_REBOOT => misc::sys_reboot(a[0], a[1], a[2]),
        SYS_DBFS_COUNTERS => misc::sys_counters(a[0]),
        SYS_DBFS_DROP_CACHES => misc::sys_drop_caches(),
        _ => {
            log::debug!("unknown syscall {}", num);
            Err(Errno::ENOSYS)
        }
    };
    args::to_return(r)
}
