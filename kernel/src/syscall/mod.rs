//! System calls: Linux riscv64 numbers and semantics.
//!
//! `dispatch` is the one place where `Result<usize, Errno>` becomes the user-visible return
//! value (`-errno` on error); an unknown number is `-ENOSYS`. Handlers are `sys_<name>`,
//! grouped by subsystem. Every user pointer goes through `mm::uaccess`.

mod fs;
mod misc;
mod process;
mod xattr;

use abi::syscall::*;
use abi::Errno;

use crate::trap::TrapFrame;

pub type SysResult = Result<usize, Errno>;

pub fn dispatch(num: usize, a: [usize; 6], tf: &mut TrapFrame) -> isize {
    let r: SysResult = match num {
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
        SYS_GETCWD => fs::sys_getcwd(a[0], a[1]),
        SYS_DUP => fs::sys_dup(a[0] as i32),
        SYS_DUP3 => fs::sys_dup3(a[0] as i32, a[1] as i32, a[2] as u32),
        SYS_FCNTL => fs::sys_fcntl(a[0] as i32, a[1] as u32, a[2]),
        SYS_IOCTL => fs::sys_ioctl(a[0] as i32),
        SYS_MKDIRAT => fs::sys_mkdirat(a[0] as i32, a[1], a[2] as u32),
        SYS_UNLINKAT => fs::sys_unlinkat(a[0] as i32, a[1], a[2] as u32),
        SYS_SYMLINKAT => fs::sys_symlinkat(a[0], a[1] as i32, a[2]),
        SYS_LINKAT => fs::sys_linkat(a[0] as i32, a[1], a[2] as i32, a[3], a[4] as u32),
        SYS_STATFS => fs::sys_statfs(a[0], a[1]),
        SYS_FSTATFS => fs::sys_fstatfs(a[0] as i32, a[1]),
        SYS_TRUNCATE => fs::sys_truncate(a[0], a[1] as i64),
        SYS_FTRUNCATE => fs::sys_ftruncate(a[0] as i32, a[1] as i64),
        SYS_FACCESSAT => fs::sys_faccessat(a[0] as i32, a[1], a[2] as u32),
        SYS_CHDIR => fs::sys_chdir(a[0]),
        SYS_FCHDIR => fs::sys_fchdir(a[0] as i32),
        SYS_FCHMOD => fs::sys_fchmod(a[0] as i32, a[1] as u32),
        SYS_FCHMODAT => fs::sys_fchmodat(a[0] as i32, a[1], a[2] as u32),
        SYS_OPENAT => fs::sys_openat(a[0] as i32, a[1], a[2] as u32, a[3] as u32),
        SYS_CLOSE => fs::sys_close(a[0] as i32),
        SYS_GETDENTS64 => fs::sys_getdents64(a[0] as i32, a[1], a[2]),
        SYS_LSEEK => fs::sys_lseek(a[0] as i32, a[1] as i64, a[2] as u32),
        SYS_READ => fs::sys_read(a[0] as i32, a[1], a[2]),
        SYS_WRITE => fs::sys_write(a[0] as i32, a[1], a[2]),
        SYS_READV => fs::sys_readv(a[0] as i32, a[1], a[2]),
        SYS_WRITEV => fs::sys_writev(a[0] as i32, a[1], a[2]),
        SYS_PREAD64 => fs::sys_pread(a[0] as i32, a[1], a[2], a[3] as i64),
        SYS_PWRITE64 => fs::sys_pwrite(a[0] as i32, a[1], a[2], a[3] as i64),
        SYS_READLINKAT => fs::sys_readlinkat(a[0] as i32, a[1], a[2], a[3] as isize),
        SYS_NEWFSTATAT => fs::sys_newfstatat(a[0] as i32, a[1], a[2], a[3] as u32),
        SYS_FSTAT => fs::sys_fstat(a[0] as i32, a[1]),
        SYS_SYNC => fs::sys_sync(),
        SYS_FSYNC => fs::sys_fsync(a[0] as i32, false),
        SYS_FDATASYNC => fs::sys_fsync(a[0] as i32, true),
        SYS_UTIMENSAT => fs::sys_utimensat(a[0] as i32, a[1], a[2], a[3] as u32),
        SYS_RENAMEAT2 => fs::sys_renameat2(a[0] as i32, a[1], a[2] as i32, a[3], a[4] as u32),
        SYS_UMASK => process::sys_umask(a[0] as u32),
        SYS_EXIT | SYS_EXIT_GROUP => process::sys_exit(a[0] as i32),
        SYS_SET_TID_ADDRESS | SYS_GETPID | SYS_GETTID => Ok(crate::task::current_pid()),
        SYS_GETPPID => process::sys_getppid(),
        SYS_GETUID | SYS_GETEUID | SYS_GETGID | SYS_GETEGID => Ok(0),
        SYS_SCHED_YIELD => {
            crate::task::yield_now();
            Ok(0)
        }
        SYS_CLONE => process::sys_clone(a[0], a[1], tf),
        SYS_EXECVE => process::sys_execve(a[0], a[1], a[2]),
        SYS_WAIT4 => process::sys_wait4(a[0] as isize, a[1], a[2] as u32),
        SYS_KILL => process::sys_kill(a[0] as isize, a[1] as i32),
        SYS_BRK => misc::sys_brk(a[0]),
        SYS_MMAP => misc::sys_mmap(a[0], a[1], a[2] as u32, a[3] as u32, a[4] as i32),
        SYS_MUNMAP => misc::sys_munmap(a[0], a[1]),
        SYS_MPROTECT => misc::sys_mprotect(a[0], a[1], a[2] as u32),
        SYS_CLOCK_GETTIME => misc::sys_clock_gettime(a[0] as u32, a[1]),
        SYS_GETTIMEOFDAY => misc::sys_gettimeofday(a[0]),
        SYS_NANOSLEEP => misc::sys_nanosleep(a[0]),
        SYS_UNAME => misc::sys_uname(a[0]),
        SYS_REBOOT => misc::sys_reboot(a[0], a[1], a[2]),
        SYS_DBFS_COUNTERS => misc::sys_counters(a[0]),
        SYS_DBFS_DROP_CACHES => misc::sys_drop_caches(),
        _ => {
            log::debug!("unknown syscall {}", num);
            Err(Errno::ENOSYS)
        }
    };
    match r {
        Ok(v) => v as isize,
        Err(e) => -(e.0 as isize),
    }
}

/// Run `f` on the current process's address space.
fn with_space<R>(f: impl FnOnce(&mut crate::mm::addr_space::AddrSpace) -> R) -> R {
    crate::task::with_current(|p| f(&mut p.space))
}

fn copy_out(va: usize, data: &[u8]) -> Result<(), Errno> {
    with_space(|s| crate::mm::uaccess::copy_out(s, va, data))
}

fn copy_in(va: usize, buf: &mut [u8]) -> Result<(), Errno> {
    with_space(|s| crate::mm::uaccess::copy_in(s, va, buf))
}

fn read_path(va: usize) -> Result<alloc::string::String, Errno> {
    with_space(|s| crate::mm::uaccess::read_cstr(s, va, abi::fcntl::PATH_MAX))
}
