//! Credentials: real, effective and saved user and group ids, the file-system ids and the
//! supplementary groups, with Linux's rules for changing them (`setuid` family) and the
//! permission check every file access makes ([`Cred::may`]).
//!
//! A process starts as root (uid 0, every capability); fork copies the credentials, execve
//! keeps the ids (no set-user-id execution yet) and recomputes the capability sets
//! (`caps`, which the set*uid calls also adjust as Linux does).

use alloc::vec::Vec;

use abi::Errno;

use super::caps::Caps;

#[derive(Clone, Debug)]
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
    pub caps: Caps,
}

impl Default for Cred {
    /// Root: all ids 0, the full capability sets.
    fn default() -> Cred {
        Cred {
            uid: 0,
            euid: 0,
            suid: 0,
            fsuid: 0,
            gid: 0,
            egid: 0,
            sgid: 0,
            fsgid: 0,
            groups: Vec::new(),
            caps: Caps::root(),
        }
    }
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

    /// The user ids, for the `set*uid` rules (privileged: the caller's effective uid is 0).
    fn users(&mut self) -> (bool, Ids<'_>) {
        (
            self.euid == 0,
            Ids {
                real: &mut self.uid,
                eff: &mut self.euid,
                saved: &mut self.suid,
                fs: &mut self.fsuid,
            },
        )
    }

    /// The group ids, for the `set*gid` rules (privilege is still the effective uid's).
    fn groups_ids(&mut self) -> (bool, Ids<'_>) {
        (
            self.euid == 0,
            Ids {
                real: &mut self.gid,
                eff: &mut self.egid,
                saved: &mut self.sgid,
                fs: &mut self.fsgid,
            },
        )
    }

    /// setresuid with Linux's rule: an unprivileged process may set each id only to one of
    /// its current real, effective or saved ids. `u32::MAX` (-1) leaves an id alone.
    pub fn setresuid(&mut self, r: u32, e: u32, s: u32) -> Result<(), Errno> {
        self.changing_uids(|c| {
            let (privileged, ids) = c.users();
            ids.set_res(privileged, r, e, s)
        })
    }

    /// Run a set*uid change, then adjust the capability sets to the new ids.
    fn changing_uids(
        &mut self,
        change: impl FnOnce(&mut Cred) -> Result<(), Errno>,
    ) -> Result<(), Errno> {
        let old = [self.uid, self.euid, self.suid];
        change(self)?;
        let new = [self.uid, self.euid, self.suid];
        self.caps.fix_setuid(old, new);
        Ok(())
    }

    pub fn setresgid(&mut self, r: u32, e: u32, s: u32) -> Result<(), Errno> {
        let (privileged, ids) = self.groups_ids();
        ids.set_res(privileged, r, e, s)
    }

    /// setuid: root sets all three ids; others only the effective one, to the real or saved.
    pub fn setuid(&mut self, id: u32) -> Result<(), Errno> {
        self.changing_uids(|c| {
            let (privileged, ids) = c.users();
            ids.set_one(privileged, id)
        })
    }

    pub fn setgid(&mut self, id: u32) -> Result<(), Errno> {
        let (privileged, ids) = self.groups_ids();
        ids.set_one(privileged, id)
    }

    /// setreuid: as Linux, the saved id follows the new effective id when the real id is set
    /// or the effective id differs from the old real id.
    pub fn setreuid(&mut self, r: u32, e: u32) -> Result<(), Errno> {
        self.changing_uids(|c| {
            let (privileged, ids) = c.users();
            ids.set_re(privileged, r, e)
        })
    }

    pub fn setregid(&mut self, r: u32, e: u32) -> Result<(), Errno> {
        let (privileged, ids) = self.groups_ids();
        ids.set_re(privileged, r, e)
    }
}

/// One kind of id (user or group): real, effective, saved and file-system, with the rules
/// the `set*id` calls share. `u32::MAX` (-1) leaves an id alone.
struct Ids<'a> {
    real: &'a mut u32,
    eff: &'a mut u32,
    saved: &'a mut u32,
    fs: &'a mut u32,
}

impl Ids<'_> {
    fn is_current(&self, id: u32) -> bool {
        [*self.real, *self.eff, *self.saved].contains(&id)
    }

    fn set_res(self, privileged: bool, r: u32, e: u32, s: u32) -> Result<(), Errno> {
        let ok = |id: u32| id == u32::MAX || privileged || self.is_current(id);
        if !(ok(r) && ok(e) && ok(s)) {
            return Err(Errno::EPERM);
        }
        for (slot, v) in [(self.real, r), (self.eff, e), (self.saved, s)] {
            if v != u32::MAX {
                *slot = v;
            }
        }
        *self.fs = *self.eff;
        Ok(())
    }

    fn set_one(self, privileged: bool, id: u32) -> Result<(), Errno> {
        if privileged {
            self.set_res(true, id, id, id)
        } else if id == *self.real || id == *self.saved {
            self.set_res(false, u32::MAX, id, u32::MAX)
        } else {
            Err(Errno::EPERM)
        }
    }

    fn set_re(self, privileged: bool, r: u32, e: u32) -> Result<(), Errno> {
        let old_r = *self.real;
        if r != u32::MAX && !privileged && r != *self.real && r != *self.eff {
            return Err(Errno::EPERM);
        }
        if e != u32::MAX && !privileged && !self.is_current(e) {
            return Err(Errno::EPERM);
        }
        if r != u32::MAX {
            *self.real = r;
        }
        if e != u32::MAX {
            *self.eff = e;
        }
        if r != u32::MAX || (e != u32::MAX && e != old_r) {
            *self.saved = *self.eff;
        }
        *self.fs = *self.eff;
        Ok(())
    }
}
