//! What the three System V IPC kinds (shared memory `shm`, message queues `msg`, semaphore
//! sets `sem`) share: keys, ids, the `ipc_perm` an object carries, Linux's permission rules,
//! and a [`Registry`] of objects by id.
//!
//! Ids follow Linux's layout: the low 15 bits are the object's slot in its table (the index
//! `MSG_STAT`/`SEM_STAT`/`SHM_STAT` take, the lowest free one), the bits above a sequence
//! number that grows with every object made, so a removed object's id does not name the next
//! object in the same slot (EINVAL, or EIDRM to a sleeper that held it).
//!
//! Each kind keeps its registry behind its own lock, taken with no other kernel lock held.

use alloc::collections::{BTreeMap, BTreeSet};

use abi::Errno;

use crate::task::cred::Cred;

/// Key asking for a new object nobody else can look up.
pub const IPC_PRIVATE: i32 = 0;
/// `*get` flag: create the object if the key has none.
pub const IPC_CREAT: u32 = 0o1000;
/// `*get` flag with `IPC_CREAT`: fail with EEXIST if the key has one.
pub const IPC_EXCL: u32 = 0o2000;
/// Operation flag: fail with EAGAIN (ENOMSG for msgrcv) instead of sleeping.
pub const IPC_NOWAIT: u32 = 0o4000;
/// `*ctl` commands every kind has.
pub const IPC_RMID: u32 = 0;
pub const IPC_SET: u32 = 1;
pub const IPC_STAT: u32 = 2;
pub const IPC_INFO: u32 = 3;
/// glibc may add this to the command (the "new" `*id64_ds` layout, the only one here).
pub const IPC_64: u32 = 0x100;
/// Slots per kind (Linux's IPCMNI): an id's low bits.
pub const IPCMNI: usize = 1 << SEQ_SHIFT;
const SEQ_SHIFT: u32 = 15;
/// Size of `struct ipc64_perm` (asm-generic): key, uid, gid, cuid, cgid, mode, seq, padding.
pub const IPC64_PERM_SIZE: usize = 48;

const CAP_IPC_OWNER: u32 = 15;
const CAP_SYS_ADMIN: u32 = 21;

/// `struct ipc_perm`: who owns and made an object, and its mode bits.
#[derive(Clone, Debug)]
pub struct Perm {
    pub key: i32,
    pub uid: u32,
    pub gid: u32,
    pub cuid: u32,
    pub cgid: u32,
    /// The 9 permission bits (and, for shm, SHM_DEST/SHM_LOCKED above them).
    pub mode: u32,
    pub seq: u16,
}

impl Perm {
    /// A new object's: owned and made by the caller's effective ids.
    fn new(key: i32, mode: u32, cred: &Cred, seq: u16) -> Perm {
        Perm {
            key,
            uid: cred.euid,
            gid: cred.egid,
            cuid: cred.euid,
            cgid: cred.egid,
            mode: mode & 0o777,
            seq,
        }
    }

    /// Linux's `ipcperms`: the owner or the creator gets the owner bits, a member of the
    /// owner's or the creator's group the group bits; CAP_IPC_OWNER passes.
    pub fn allows(&self, cred: &Cred, want: u32) -> bool {
        let granted = if cred.euid == self.cuid || cred.euid == self.uid {
            self.mode >> 6
        } else if cred.in_group(self.cgid) || cred.in_group(self.gid) {
            self.mode >> 3
        } else {
            self.mode
        };
        want & !granted & 7 == 0 || cred.caps.has(CAP_IPC_OWNER)
    }

    /// May `cred` change or remove the object (IPC_SET, IPC_RMID)? Its owner, its creator,
    /// or CAP_SYS_ADMIN.
    pub fn may_change(&self, cred: &Cred) -> bool {
        cred.euid == self.uid || cred.euid == self.cuid || cred.caps.has(CAP_SYS_ADMIN)
    }

    /// `struct ipc64_perm` as `*ctl(IPC_STAT)` copies it out.
    pub fn to_ipc64(&self) -> [u8; IPC64_PERM_SIZE] {
        let mut b = [0u8; IPC64_PERM_SIZE];
        for (i, v) in [self.key as u32, self.uid, self.gid, self.cuid, self.cgid]
            .into_iter()
            .enumerate()
        {
            b[i * 4..i * 4 + 4].copy_from_slice(&v.to_le_bytes());
        }
        b[20..24].copy_from_slice(&self.mode.to_le_bytes());
        b[24..26].copy_from_slice(&self.seq.to_le_bytes());
        b
    }

    /// `IPC_SET`: the owner's uid and gid and the permission bits from a `struct ipc64_perm`.
    pub fn set_from_ipc64(&mut self, b: &[u8; IPC64_PERM_SIZE]) {
        let word = |at: usize| u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
        self.uid = word(4);
        self.gid = word(8);
        self.mode = (self.mode & !0o777) | (word(20) & 0o777);
    }
}

/// What a registry holds: an object that carries its [`Perm`].
pub trait IpcObject {
    fn perm(&self) -> &Perm;
    fn perm_mut(&mut self) -> &mut Perm;
}

/// The objects of one kind by slot, with Linux's `*get` and id rules.
pub struct Registry<T> {
    objects: BTreeMap<usize, T>,
    /// The slot of each key but IPC_PRIVATE's.
    keys: BTreeMap<i32, usize>,
    /// Free slots below `high`; every slot from `high` up is free.
    free: BTreeSet<usize>,
    high: usize,
    /// The next object's sequence number.
    seq: u16,
    /// Most objects at once (msgmni, semmni, shmmni).
    limit: usize,
}

/// The id of the object with sequence number `seq` in `slot`.
fn make_id(seq: u16, slot: usize) -> i32 {
    (seq as i32) << SEQ_SHIFT | slot as i32
}

/// The slot an id names.
fn slot_of(id: i32) -> Option<usize> {
    (id >= 0).then_some(id as usize & (IPCMNI - 1))
}

impl<T: IpcObject> Registry<T> {
    pub const fn new(limit: usize) -> Self {
        Registry {
            objects: BTreeMap::new(),
            keys: BTreeMap::new(),
            free: BTreeSet::new(),
            high: 0,
            seq: 0,
            limit,
        }
    }

    /// `*get`: the id of the object of `key`, or of a new one `make` builds (given its new
    /// [`Perm`]) when the key is `IPC_PRIVATE` or `IPC_CREAT` asks for one. `check` vets an
    /// existing object for this call (a size or count too large: EINVAL) after the
    /// permission check that `flags`' mode bits ask for (EACCES).
    pub fn get_or_create(
        &mut self,
        key: i32,
        flags: u32,
        cred: &Cred,
        check: impl FnOnce(&T) -> Result<(), Errno>,
        make: impl FnOnce(Perm) -> Result<T, Errno>,
    ) -> Result<i32, Errno> {
        if key != IPC_PRIVATE {
            if let Some((&slot, obj)) = self
                .keys
                .get(&key)
                .and_then(|s| self.objects.get_key_value(s))
            {
                if flags & IPC_CREAT != 0 && flags & IPC_EXCL != 0 {
                    return Err(Errno::EEXIST);
                }
                if !obj.perm().allows(cred, (flags >> 6) & 7) {
                    return Err(Errno::EACCES);
                }
                check(obj)?;
                return Ok(make_id(obj.perm().seq, slot));
            }
            if flags & IPC_CREAT == 0 {
                return Err(Errno::ENOENT);
            }
        }
        if self.objects.len() >= self.limit {
            return Err(Errno::ENOSPC);
        }
        let slot = match self.free.first() {
            Some(&s) => s,
            None if self.high < IPCMNI => self.high,
            None => return Err(Errno::ENOSPC),
        };
        let seq = self.seq;
        let obj = make(Perm::new(key, flags, cred, seq))?;
        if !self.free.remove(&slot) {
            self.high += 1;
        }
        self.seq = (seq + 1) & (u16::MAX >> 1);
        self.objects.insert(slot, obj);
        if key != IPC_PRIVATE {
            self.keys.insert(key, slot);
        }
        Ok(make_id(seq, slot))
    }

    /// The object `id` names (EINVAL if none: never made, or removed).
    pub fn get(&self, id: i32) -> Result<&T, Errno> {
        let slot = slot_of(id).ok_or(Errno::EINVAL)?;
        match self.objects.get(&slot) {
            Some(o) if o.perm().seq as i32 == id >> SEQ_SHIFT => Ok(o),
            _ => Err(Errno::EINVAL),
        }
    }

    pub fn get_mut(&mut self, id: i32) -> Result<&mut T, Errno> {
        self.get(id)?;
        let slot = slot_of(id).ok_or(Errno::EINVAL)?;
        self.objects.get_mut(&slot).ok_or(Errno::EINVAL)
    }

    /// [`Self::get`], if `cred` may access the object for `want` (MAY_* bits; EACCES).
    pub fn checked(&self, id: i32, cred: &Cred, want: u32) -> Result<&T, Errno> {
        let obj = self.get(id)?;
        if !obj.perm().allows(cred, want) {
            return Err(Errno::EACCES);
        }
        Ok(obj)
    }

    /// [`Self::get_mut`], if `cred` may change the object ([`Perm::may_change`]; EPERM).
    pub fn owned_mut(&mut self, id: i32, cred: &Cred) -> Result<&mut T, Errno> {
        let obj = self.get_mut(id)?;
        if !obj.perm().may_change(cred) {
            return Err(Errno::EPERM);
        }
        Ok(obj)
    }

    /// `IPC_RMID`: take the object out (its owner, creator or CAP_SYS_ADMIN; EPERM). Its id
    /// and key name nothing from now on.
    pub fn remove(&mut self, id: i32, cred: &Cred) -> Result<T, Errno> {
        self.owned_mut(id, cred)?;
        let slot = slot_of(id).ok_or(Errno::EINVAL)?;
        let obj = self.objects.remove(&slot).ok_or(Errno::EINVAL)?;
        if obj.perm().key != IPC_PRIVATE {
            self.keys.remove(&obj.perm().key);
        }
        self.free.insert(slot);
        Ok(obj)
    }

    /// `IPC_SET`'s part common to every kind: owner and mode (the caller must be allowed to
    /// change the object).
    pub fn set_perm(
        &mut self,
        id: i32,
        cred: &Cred,
        b: &[u8; IPC64_PERM_SIZE],
    ) -> Result<(), Errno> {
        self.owned_mut(id, cred)?.perm_mut().set_from_ipc64(b);
        Ok(())
    }

    /// `*_STAT` and `*_STAT_ANY`: the object in slot `index` and its id (EINVAL if the slot is
    /// free).
    pub fn by_index(&self, index: usize) -> Result<(i32, &T), Errno> {
        let obj = self.objects.get(&index).ok_or(Errno::EINVAL)?;
        Ok((make_id(obj.perm().seq, index), obj))
    }

    /// The highest slot in use (0 with none), what `IPC_INFO` and `*_INFO` return.
    pub fn max_index(&self) -> usize {
        self.objects.keys().next_back().copied().unwrap_or(0)
    }

    /// Most objects at once.
    pub fn limit(&self) -> usize {
        self.limit
    }

    pub fn set_limit(&mut self, limit: usize) {
        self.limit = limit;
    }

    pub fn len(&self) -> usize {
        self.objects.len()
    }

    pub fn iter(&self) -> impl Iterator<Item = (i32, &T)> {
        self.objects
            .iter()
            .map(|(&slot, o)| (make_id(o.perm().seq, slot), o))
    }
}

/// Seconds since the epoch, for the `*_time` fields.
pub fn now_secs() -> u64 {
    crate::arch::time::realtime_ns() / 1_000_000_000
}
