//! eventfd2 (riscv64 has no plain eventfd): a descriptor on an `ipc::eventfd` counter; read,
//! write and poll go through `stream`.

use abi::Errno;

use super::args::SysResult;
use crate::fs::file::OpenFile;
use crate::fs::path::Loc;
use crate::ipc::eventfd::EventFd;
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
