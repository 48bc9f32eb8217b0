//! Capabilities: the effective, permitted, inheritable and bounding sets Linux keeps beside
//! the user ids (capabilities(7)), with the rules that change them: capset's, the set*uid
//! transitions (`cap_emulate_setxuid`), setfsuid's file-system subset, execve's (root gets
//! its permitted set back, others lose theirs: this kernel has no file capabilities), and
//! prctl's bounding-set drop and keep-capabilities flag.
//!
//! The sets are kept per process (this kernel's credentials are the process's, shared by its
//! threads). The permission checks of the rest of the kernel still go by the ids (`Cred`'s
//! file-system uid 0, the effective uid 0 for set*id); these sets are what capget reports,
//! what capset and prctl may change, and what a process hands on across set*uid and execve.

/// The highest capability number Linux 6.x knows (CAP_CHECKPOINT_RESTORE).
pub const CAP_LAST_CAP: u32 = 40;
/// Every capability.
pub const CAP_FULL: u64 = (1 << (CAP_LAST_CAP + 1)) - 1;
pub const CAP_SETPCAP: u32 = 8;
/// The capabilities that follow the file-system uid (Linux's CAP_FS_MASK): CHOWN,
/// DAC_OVERRIDE, DAC_READ_SEARCH, FOWNER, FSETID, LINUX_IMMUTABLE, MAC_OVERRIDE.
const CAP_FS_MASK: u64 = 0x1f | 1 << 9 | 1 << 32;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caps {
    pub effective: u64,
    pub permitted: u64,
    pub inheritable: u64,
    pub bounding: u64,
    /// PR_SET_KEEPCAPS: keep the permitted set when every uid leaves 0 (cleared by execve).
    pub keep: bool,
}

impl Caps {
    /// Root's sets at boot: everything but inheritable.
    pub const fn root() -> Caps {
        Caps {
            effective: CAP_FULL,
            permitted: CAP_FULL,
            inheritable: 0,
            bounding: CAP_FULL,
            keep: false,
        }
    }

    pub fn has(&self, cap: u32) -> bool {
        cap <= CAP_LAST_CAP && self.effective & (1 << cap) != 0
    }

    /// capset's checks (Linux's `cap_capset`): the new inheritable set within the old
    /// inheritable and permitted sets (unless CAP_SETPCAP) and within the bounding set; the
    /// new permitted set within the old; the new effective set within the new permitted.
    pub fn set(&mut self, effective: u64, permitted: u64, inheritable: u64) -> bool {
        let (e, p, i) = (
            effective & CAP_FULL,
            permitted & CAP_FULL,
            inheritable & CAP_FULL,
        );
        let inh_room = self.inheritable | self.permitted;
        if !self.has(CAP_SETPCAP) && i & !inh_room != 0 {
            return false;
        }
        if i & !(self.inheritable | self.bounding) != 0 || p & !self.permitted != 0 || e & !p != 0 {
            return false;
        }
        self.effective = e;
        self.permitted = p;
        self.inheritable = i;
        true
    }

    /// After setuid, setreuid or setresuid: `old` and `new` are (real, effective, saved).
    /// Leaving uid 0 everywhere drops the permitted and effective sets (unless keep is
    /// set); leaving effective uid 0 drops the effective set; regaining it restores the
    /// effective set from the permitted one.
    pub fn fix_setuid(&mut self, old: [u32; 3], new: [u32; 3]) {
        let was_root = old.contains(&0);
        if was_root && !new.contains(&0) && !self.keep {
            self.permitted = 0;
            self.effective = 0;
        }
        if old[1] == 0 && new[1] != 0 {
            self.effective = 0;
        }
        if old[1] != 0 && new[1] == 0 {
            self.effective = self.permitted;
        }
    }

    /// After setfsuid: the file-system capabilities follow the file-system uid.
    pub fn fix_setfsuid(&mut self, old: u32, new: u32) {
        if old == 0 && new != 0 {
            self.effective &= !CAP_FS_MASK;
        }
        if old != 0 && new == 0 {
            self.effective |= self.permitted & CAP_FS_MASK;
        }
    }

    /// execve with real uid `uid` and effective uid `euid` (no file capabilities, no
    /// set-user-id execution here): a root process gets its inheritable and bounding sets
    /// as permitted, effective when the effective uid is 0; any other loses both.
    pub fn on_exec(&mut self, uid: u32, euid: u32) {
        if uid == 0 || euid == 0 {
            self.permitted = (self.inheritable | self.bounding) & CAP_FULL;
            self.effective = if euid == 0 { self.permitted } else { 0 };
        } else {
            self.permitted = 0;
            self.effective = 0;
        }
        self.keep = false;
    }
}
