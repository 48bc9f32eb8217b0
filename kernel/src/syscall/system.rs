//! The system's identity and a process's view of it: uname, sethostname, setdomainname,
//! personality and getcpu.

use abi::Errno;

use super::args::{copy_in, copy_out, SysResult};
use crate::task::uts::{self, UTS_LEN};

/// CAP_SYS_ADMIN: sethostname and setdomainname need it.
const CAP_SYS_ADMIN: u32 = 21;
/// personality(2)'s UNAME26: uname reports a 2.6 release.
const UNAME26: u32 = 0x0002_0000;
/// personality(0xffffffff) only asks for the current value.
const PER_QUERY: u32 = 0xffff_ffff;

use crate::task::uts::{RELEASE, VERSION};

/// uname: the system name is "Linux", because the kernel implements Linux's system-call
/// interface and programs (pjdfstest's `conf`, configure scripts) choose their code paths by
/// it; the release and version say what it really is. With the UNAME26 personality the
/// release reads "2.6.(60 + minor)" and the rest, as Linux's `override_release`.
pub fn sys_uname(buf: usize) -> SysResult {
    let mut release = alloc::string::String::from(RELEASE);
    if crate::task::with_current(|p| p.personality) & UNAME26 != 0 {
        let minor: u32 = RELEASE
            .split('.')
            .nth(1)
            .and_then(|m| m.parse().ok())
            .unwrap_or(0);
        let rest = RELEASE.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
        release = alloc::format!("2.6.{}{}", 60 + minor, rest);
    }
    let (node, domain) = (uts::nodename(), uts::domainname());
    let fields = [
        "Linux",
        node.as_str(),
        release.as_str(),
        VERSION,
        "riscv64",
        domain.as_str(),
    ];
    let mut out = [0u8; 65 * 6];
    for (i, f) in fields.iter().enumerate() {
        let n = f.len().min(UTS_LEN);
        out[i * 65..i * 65 + n].copy_from_slice(&f.as_bytes()[..n]);
    }
    copy_out(buf, &out)?;
    Ok(0)
}

/// sethostname / setdomainname: EPERM without CAP_SYS_ADMIN, EINVAL for a length (an
/// `int`) past 64 or negative, EFAULT for a bad name.
pub fn sys_setname(domain: bool, name: usize, len: usize) -> SysResult {
    if !crate::task::current_cred().caps.has(CAP_SYS_ADMIN) {
        return Err(Errno::EPERM);
    }
    let len = usize::try_from(len as i32).map_err(|_| Errno::EINVAL)?;
    if len > UTS_LEN {
        return Err(Errno::EINVAL);
    }
    let mut b = alloc::vec![0u8; len];
    copy_in(name, &mut b)?;
    uts::set(domain, &b);
    Ok(0)
}

/// personality: set the execution domain (any value but 0xffffffff, which only asks);
/// returns the previous one.
pub fn sys_personality(persona: usize) -> SysResult {
    let persona = persona as u32;
    let old = crate::task::with_current(|p| {
        let old = p.personality;
        if persona != PER_QUERY {
            p.personality = persona;
        }
        old
    });
    Ok(old as usize)
}

/// getcpu: the hart the caller runs on and its NUMA node (0: one node); either pointer may
/// be null. The third argument (a cache) is unused since Linux 2.6.24.
pub fn sys_getcpu(cpu: usize, node: usize) -> SysResult {
    let hart = crate::arch::hart::index() as u32;
    if cpu != 0 {
        copy_out(cpu, &hart.to_le_bytes())?;
    }
    if node != 0 {
        copy_out(node, &0u32.to_le_bytes())?;
    }
    Ok(0)
}
