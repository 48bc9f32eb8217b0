//! eventfd2 and signalfd4 (riscv64 has neither plain eventfd nor signalfd): descriptors on
//! an `ipc::eventfd` counter or an `ipc::signalfd` signal set; read, write and poll go
//! through `stream`.

use abi::Errno;

use super::args::SysResult;
use crate::fs::file::OpenFile;
use crate::fs::path::Loc;
use crate::ipc::eventfd::EventFd;
use crate::ipc::signalfd::SignalFd;
use crate::task::with_current;

const EFD_SEMAPHORE: u32 = 1;
const EFD_NONBLOCK: u32 = abi::fcntl::O_NONBLOCK;
const EFD_CLOEXEC: u32 = abi::fcntl::O_CLOEXEC;

pub fn sys_eventfd2(initval: u32, flags: u32) -> SysResult {
    if flags & !(EFD_SEMAPHORE | EFD_NONBLOCK | EFD_CLOEXEC) != 0 {
        return Err(Errno::EINVAL);
    }
    let root = Loc::root()?;
    let loc = Loc {
        node: EventFd::new(initval as u64, flags & EFD_SEMAPHORE != 0),
        path: alloc::string::String::from("anon_inode:[eventfd]"),
        mount: root.mount,
    };
    let f = OpenFile::new(loc, true, true, flags & EFD_NONBLOCK)?;
    with_current(|p| p.files.fds().install(f, flags & EFD_CLOEXEC != 0)).map(|fd| fd as usize)
}

const SFD_NONBLOCK: u32 = abi::fcntl::O_NONBLOCK;
const SFD_CLOEXEC: u32 = abi::fcntl::O_CLOEXEC;

/// signalfd4: a new signal descriptor for the set at `mask` (`fd` -1), or a new set for the
/// signal descriptor `fd` (EBADF if it is not open, EINVAL if it is not one).
pub fn sys_signalfd4(fd: i32, mask: usize, size: usize, flags: u32) -> SysResult {
    if size != 8 || flags & !(SFD_NONBLOCK | SFD_CLOEXEC) != 0 {
        return Err(Errno::EINVAL);
    }
    let mut m = [0u8; 8];
    super::args::copy_in(mask, &mut m)?;
    let mask = u64::from_le_bytes(m);
    if fd != -1 {
        let f = with_current(|p| p.files.fds().get(fd))?;
        let s = f
            .loc
            .node
            .as_any()
            .downcast_ref::<SignalFd>()
            .ok_or(Errno::EINVAL)?;
        s.set_mask(mask);
        return Ok(fd as usize);
    }
    let root = Loc::root()?;
    let loc = Loc {
        node: SignalFd::new(mask),
        path: alloc::string::String::from("anon_inode:[signalfd]"),
        mount: root.mount,
    };
    let f = OpenFile::new(loc, true, false, flags & SFD_NONBLOCK)?;
    with_current(|p| p.files.fds().install(f, flags & SFD_CLOEXEC != 0)).map(|fd| fd as usize)
}
