//! Signal-driven I/O: whom an open file description tells that I/O has become possible or
//! that its lease is being broken, with which signal (fcntl F_SETOWN, F_SETOWN_EX,
//! F_SETSIG; F_SETFL's O_ASYNC turns the telling on for pipes and FIFOs), and the telling.
//!
//! As on Linux the owner belongs to the description (dup and fork share it) and is a thread,
//! a process or a process group. The signal is SIGIO unless F_SETSIG chose another; a chosen
//! one carries a siginfo naming the descriptor (`si_fd`) and the events (`si_band`), SIGIO
//! itself arrives plain. A signal goes only to processes the owner's setter could signal
//! (Linux's `sigio_perm`: root, or a real or effective uid matching the target's real or
//! saved one), read from the credentials it had at F_SETOWN.

use alloc::sync::Arc;

use abi::Errno;

use crate::task::siginfo::{SigInfo, SI_KERNEL};
use crate::task::{self, signal};

/// SIGIO (SIGPOLL): the default signal of signal-driven I/O.
pub const SIGIO: usize = 29;

/// Who is told (F_SETOWN_EX's `f_owner_ex.type`, in Linux's numbering).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Owner {
    #[default]
    None,
    /// F_OWNER_TID: one thread.
    Thread(usize),
    /// F_OWNER_PID: a process.
    Process(usize),
    /// F_OWNER_PGRP: every process of a group.
    Group(usize),
}

/// A description's signal-driven I/O settings.
#[derive(Clone, Copy, Debug, Default)]
pub struct SigIo {
    pub owner: Owner,
    /// F_SETSIG's signal; 0: SIGIO, without a siginfo of its own.
    pub sig: u32,
    /// The real and effective uids of whoever set the owner.
    uid: u32,
    euid: u32,
}

impl SigIo {
    /// F_SETOWN / F_SETOWN_EX by the current process: ESRCH for an owner that does not exist
    /// (0 clears it).
    pub fn set_owner(&mut self, owner: Owner) -> Result<(), Errno> {
        let exists = match owner {
            Owner::None => true,
            Owner::Thread(tid) => task::find_thread(tid).is_some(),
            Owner::Process(pid) => task::find(pid).is_some(),
            Owner::Group(pgid) => !task::processes_in_group(pgid).is_empty(),
        };
        if !exists {
            return Err(Errno::ESRCH);
        }
        let c = task::current_cred();
        self.owner = owner;
        self.uid = c.uid;
        self.euid = c.euid;
        Ok(())
    }

    /// Tell the owner: descriptor `fd`, why (`code`: a `siginfo::POLL_*`), the poll events
    /// (`band`). Nothing when there is no owner or it has gone.
    pub fn notify(&self, fd: i32, code: i32, band: i64) {
        let sig = if self.sig == 0 {
            SIGIO
        } else {
            self.sig as usize
        };
        let info = if self.sig == 0 {
            SigInfo::kill(SIGIO, SI_KERNEL, 0, 0)
        } else {
            SigInfo::poll(sig, code, fd, band)
        };
        match self.owner {
            Owner::None => {}
            Owner::Thread(tid) => {
                if let Some(t) = task::find_thread(tid) {
                    if self.may_signal(&t.process) {
                        let _ = signal::send_thread_info(&t, info);
                    }
                }
            }
            Owner::Process(pid) => {
                if let Some(p) = task::find(pid) {
                    self.tell(&p, info);
                }
            }
            Owner::Group(pgid) => {
                for p in task::processes_in_group(pgid) {
                    self.tell(&p, info);
                }
            }
        }
    }

    fn tell(&self, p: &Arc<task::Process>, info: SigInfo) {
        if self.may_signal(p) {
            let _ = signal::send_info(p, info);
        }
    }

    fn may_signal(&self, p: &task::Process) -> bool {
        let (uid, suid) = {
            let i = p.inner.lock();
            (i.cred.uid, i.cred.suid)
        };
        self.uid == 0
            || self.euid == 0
            || [self.uid, self.euid]
                .iter()
                .any(|&id| id == uid || id == suid)
    }
}
