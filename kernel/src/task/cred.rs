//! Credentials: real, effective and saved user and group ids, the file-system ids and the
//! supplementary groups, with Linux's rules for changing them (`setuid` family) and the
//! permission check every file access makes ([`Cred::may`]).
//!
//! A process starts as root (uid 0); fork copies the credentials, execve keeps them (no
//! set-user-id execution yet).

use alloc::vec::Vec;

use abi::Errno;

#[derive(Clone, Debug, Default)]
pub struct Cred {
    pub uid: u32,
    pub euid: u32,
    pub suid: u32,
    pub fsuid: u32,
    pub gid: u32,
    pub egid: u32,
    pub sgid: u32,
    pub fsgid: u32,
    pub groups: Vec<u32>,
}

/// What an access wants (the `rwx` bits of a mode).
pub const MAY_READ: u32 = 4;
pub const MAY_WRITE: u32 = 2;
pub const MAY_EXEC: u32 = 1;

impl Cred {
    /// Root: every capability (CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_CHOWN, CAP_SETUID ...).
    pub fn is_root(&self) -> bool {
        self.fsuid == 0
    }

    pub fn in_group(&self, gid: u32) -> bool {
        self.fsgid == gid || self.groups.contains(&gid)
    }

    /// Linux's `generic_permission`: may these credentials access a file of `mode` (the
    /// 12 permission bits), owner `uid`, group `gid`, as `want` (MAY_* bits)? Root may do
    /// anything except execute a file nobody may execute (directories excepted).
    pub fn may(&self, mode: u32, uid: u32, gid: u32, want: u32, is_dir: bool) -> bool {
        if self.is_root() {
            if want & MAY_EXEC == 0 || is_dir {
                return true;
            }
            return mode & 0o111 != 0;
        }
        let bits = if self.fsuid == uid {
            (mode >> 6) & 7
        } else if self.in_group(gid) {
            (mode >> 3) & 7
        } else {
            mode & 7
        };
        bits & want == want
    }

    /// setresuid with Linux's rule: an unprivileged process may set each id only to one of
    /// its current real, effective or saved ids. `u32::MAX` (-1) leaves an id alone.
    pub fn setresuid(&mut self, r: u32, e: u32, s: u32) -> Result<(), Errno> {
        let privileged = self.euid == 0;
        let ok = |id: u32| {
            id == u32::MAX || privileged || [self.uid, self.euid, self.suid].contains(&id)
        };
        if !(ok(r) && ok(e) && ok(s)) {
            return Err(Errno::EPERM);
        }
        if r != u32::MAX {
            self.uid = r;
        }
        if e != u32::MAX {
            self.euid = e;
        }
        if s != u32::MAX {
            self.suid = s;
        }
        self.fsuid = self.euid;
        Ok(())
    }

    pub fn setresgid(&mut self, r: u32, e: u32, s: u32) -> Result<(), Errno> {
        let privileged = self.euid == 0;
        let ok = |id: u32| {
            id == u32::MAX || privileged || [self.gid, self.egid, self.sgid].contains(&id)
        };
        if !(ok(r) && ok(e) && ok(s)) {
            return Err(Errno::EPERM);
        }
        if r != u32::MAX {
            self.gid = r;
        }
        if e != u32::MAX {
            self.egid = e;
        }
        if s != u32::MAX {
            self.sgid = s;
        }
        self.fsgid = self.egid;
        Ok(())
    }

    /// setuid: root sets all three ids; others only the effective one, to the real or saved.
    pub fn setuid(&mut self, id: u32) -> Result<(), Errno> {
        if self.euid == 0 {
            self.setresuid(id, id, id)
        } else if id == self.uid || id == self.suid {
            self.setresuid(u32::MAX, id, u32::MAX)
        } else {
            Err(Errno::EPERM)
        }
    }

    pub fn setgid(&mut self, id: u32) -> Result<(), Errno> {
        if self.euid == 0 {
            self.setresgid(id, id, id)
        } else if id == self.gid || id == self.sgid {
            self.setresgid(u32::MAX, id, u32::MAX)
        } else {
            Err(Errno::EPERM)
        }
    }

    /// setreuid: as Linux, the saved id follows the new effective id when the real id is set
    /// or the effective id differs from the old real id.
    pub fn setreuid(&mut self, r: u32, e: u32) -> Result<(), Errno> {
        let old_r = self.uid;
        let privileged = self.euid == 0;
        if r != u32::MAX && !privileged && r != self.uid && r != self.euid {
            return Err(Errno::EPERM);
        }
        if e != u32::MAX && !privileged && ![self.uid, self.euid, self.suid].contains(&e) {
            return Err(Errno::EPERM);
        }
        if r != u32::MAX {
            self.uid = r;
        }
        if e != u32::MAX {
            self.euid = e;
        }
        if r != u32::MAX || (e != u32::MAX && e != old_r) {
            self.suid = self.euid;
        }
        self.fsuid = self.euid;
        Ok(())
    }

    pub fn setregid(&mut self, r: u32, e: u32) -> Result<(), Errno> {
        let old_r = self.gid;
        let privileged = self.euid == 0;
        if r != u32::MAX && !privileged && r != self.gid && r != self.egid {
            return Err(Errno::EPERM);
        }
        if e != u32::MAX && !privileged && ![self.gid, self.egid, self.sgid].contains(&e) {
            return Err(Errno::EPERM);
        }
        if r != u32::MAX {
            self.gid = r;
        }
        if e != u32::MAX {
            self.egid = e;
        }
        if r != u32::MAX || (e != u32::MAX && e != old_r) {
            self.sgid = self.egid;
        }
        self.fsgid = self.egid;
        Ok(())
    }
}
