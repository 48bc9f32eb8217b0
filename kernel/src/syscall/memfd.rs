//! memfd_create and fcntl's F_ADD_SEALS / F_GET_SEALS: a descriptor on a new file in memory
//! (`fs::memfd`), and its seals.

use abi::Errno;

use super::args::SysResult;
use crate::fs::file::OpenFile;
use crate::fs::memfd::{self, MemFile, ALL_SEALS, F_SEAL_EXEC, F_SEAL_SEAL};
use crate::fs::path::Loc;
use crate::task::with_current;

const MFD_CLOEXEC: u32 = 0x01;
const MFD_ALLOW_SEALING: u32 = 0x02;
const MFD_HUGETLB: u32 = 0x04;
const MFD_NOEXEC_SEAL: u32 = 0x08;
const MFD_EXEC: u32 = 0x10;
/// The longest name (Linux's MFD_NAME_MAX_LEN: NAME_MAX less the "memfd:" prefix).
const NAME_MAX: usize = 255 - 6;

/// memfd_create(name, flags): EINVAL for unknown flags, MFD_EXEC with MFD_NOEXEC_SEAL, a
/// name longer than 249 bytes, and MFD_HUGETLB (no huge pages here, as a Linux built
/// without hugetlbfs); EFAULT for a bad name. The file is 0777 (0666 and sealed against
/// chmod of the execute bits with MFD_NOEXEC_SEAL), owned by the caller's fsuid and fsgid,
/// opened read-write; without MFD_ALLOW_SEALING (or MFD_NOEXEC_SEAL) it is sealed with
/// F_SEAL_SEAL, so no seal can be added.
pub fn sys_memfd_create(name_ptr: usize, flags: u32) -> SysResult {
    if flags & !(MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_NOEXEC_SEAL | MFD_EXEC) != 0
        || flags & MFD_HUGETLB != 0
        || flags & MFD_EXEC != 0 && flags & MFD_NOEXEC_SEAL != 0
    {
        return Err(Errno::EINVAL);
    }
    let name =
        super::args::with_space(|s| crate::mm::uaccess::read_cstr(s, name_ptr, NAME_MAX + 1))
            .map_err(|e| match e {
                Errno::ENAMETOOLONG => Errno::EINVAL,
                e => e,
            })?;
    let (perm, seals) = if flags & MFD_NOEXEC_SEAL != 0 {
        (0o666, F_SEAL_EXEC)
    } else if flags & MFD_ALLOW_SEALING != 0 {
        (0o777, 0)
    } else {
        (0o777, F_SEAL_SEAL)
    };
    let cred = crate::task::current_cred();
    let loc = Loc {
        node: MemFile::new(perm, cred.fsuid, cred.fsgid, seals),
        path: alloc::format!("/memfd:{} (deleted)", name),
        mount: memfd::mount(),
    };
    let status = abi::fcntl::O_RDWR | abi::fcntl::O_LARGEFILE;
    let f = OpenFile::new(loc, true, true, status)?;
    with_current(|p| p.files.fds().install(f, flags & MFD_CLOEXEC != 0)).map(|fd| fd as usize)
}

fn memfile(f: &OpenFile) -> Result<&MemFile, Errno> {
    f.loc
        .node
        .as_any()
        .downcast_ref::<MemFile>()
        .ok_or(Errno::EINVAL)
}

/// fcntl(F_GET_SEALS): EINVAL for a file that is not a memfd (Linux: one without seals).
pub(super) fn get_seals(f: &OpenFile) -> SysResult {
    Ok(memfile(f)?.seals() as usize)
}

/// fcntl(F_ADD_SEALS): EINVAL for a file that is not a memfd, then EPERM unless open for
/// writing, EINVAL for unknown seals, EPERM once F_SEAL_SEAL is set, EBUSY for F_SEAL_WRITE while a shared
/// mapping of the file may still store into it (in any process).
pub(super) fn add_seals(f: &OpenFile, seals: usize) -> SysResult {
    let m = memfile(f)?;
    if !f.writable {
        return Err(Errno::EPERM);
    }
    // The argument is an unsigned int.
    let seals = seals as u32;
    if seals & !ALL_SEALS != 0 {
        return Err(Errno::EINVAL);
    }
    let key = f.lock_key()?;
    m.add_seals(seals, || {
        crate::task::all_processes()
            .iter()
            .any(|p| p.inner.lock().space.maps_file_writably(key))
    })?;
    Ok(0)
}
