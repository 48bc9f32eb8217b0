//! Signal numbers, actions and masks (task layer): Linux's numbers and default actions, a
//! process's actions ([`SigState`]) and a thread's mask ([`SigMask`]). Data only: generating a
//! signal is `signal`, delivering one is `sigframe`.

use abi::Errno;

pub const NSIG: usize = 64;

pub const SIGINT: usize = 2;

pub const SIGQUIT: usize = 3;

pub const SIGILL: usize = 4;

pub const SIGTRAP: usize = 5;

pub const SIGBUS: usize = 7;

pub const SIGKILL: usize = 9;

pub const SIGSEGV: usize = 11;

pub const SIGPIPE: usize = 13;

pub const SIGCHLD: usize = 17;

pub const SIGCONT: usize = 18;

pub const SIGSTOP: usize = 19;

pub const SIGTSTP: usize = 20;

pub const SIGTTIN: usize = 21;

pub const SIGTTOU: usize = 22;

pub const SIGURG: usize = 23;

pub const SIGWINCH: usize = 28;

pub const SIG_DFL: usize = 0;

pub const SIG_IGN: usize = 1;
/// sigaction flag of SIGCHLD: no SIGCHLD when a child stops or continues.
pub const SA_NOCLDSTOP: u64 = 1;
/// sigaction flag of SIGCHLD: children of the process leave no zombie when they exit.
pub const SA_NOCLDWAIT: u64 = 2;

pub const SA_ONSTACK: u64 = 0x0800_0000;

pub const SA_RESTART: u64 = 0x1000_0000;

pub const SA_NODEFER: u64 = 0x4000_0000;

pub const SA_RESETHAND: u64 = 0x8000_0000;

/// Kernel-internal: "interrupted, restart unless a handler without SA_RESTART runs".
pub const ERESTARTSYS: Errno = Errno(512);

/// The bit of signal `sig` (1..=64) in a mask.
pub const fn bit(sig: usize) -> u64 {
    1u64 << (sig - 1)
}

/// Signals that can be neither blocked, caught nor ignored.
pub(super) const UNBLOCKABLE: u64 = bit(SIGKILL) | bit(SIGSTOP);

/// One signal's disposition (`struct sigaction` of asm-generic: handler, flags, mask).
#[derive(Clone, Copy, Debug, Default)]
pub struct SigAction {
    pub handler: usize,
    pub flags: u64,
    pub mask: u64,
}

/// What the default action of `sig` does.
#[derive(PartialEq, Eq)]
pub(super) enum Default_ {
    Terminate,
    Ignore,
    /// Stop the process (`jobctl`).
    Stop,
}

/// Whether `sig`'s default action also dumps core (signal(7)'s "Core").
pub(super) fn dumps_core(sig: usize) -> bool {
    // SIGQUIT, SIGILL, SIGTRAP, SIGABRT, SIGBUS, SIGFPE, SIGSEGV, SIGXCPU, SIGXFSZ, SIGSYS.
    matches!(sig, 3 | 4 | 5 | 6 | 7 | 8 | 11 | 24 | 25 | 31)
}

pub(super) fn default_action(sig: usize) -> Default_ {
    match sig {
        SIGCHLD | SIGCONT | SIGURG | SIGWINCH => Default_::Ignore,
        SIGSTOP | SIGTSTP | SIGTTIN | SIGTTOU => Default_::Stop,
        _ => Default_::Terminate,
    }
}

/// A process's signal actions, under its lock (shared by its threads).
#[derive(Clone)]
pub struct SigState {
    pub actions: [SigAction; NSIG],
}

impl Default for SigState {
    fn default() -> Self {
        SigState {
            actions: [SigAction::default(); NSIG],
        }
    }
}

/// A thread's signal mask, under the thread's lock.
#[derive(Clone, Default)]
pub struct SigMask {
    pub blocked: u64,
    /// The mask to restore after the handler that ends an `rt_sigsuspend`.
    pub saved_mask: Option<u64>,
    /// While in rt_sigtimedwait: the mask before it unblocked the signals it waits for
    /// (they still count as blocked for the ignore test at generation); 0 otherwise.
    pub real_blocked: u64,
    /// The alternate signal stack (sigaltstack): kept by fork, none in a new thread or after
    /// execve.
    pub alt: AltStack,
}

/// `stack_t`'s flags.
pub const SS_ONSTACK: i32 = 1;
pub const SS_DISABLE: i32 = 2;
pub const SS_AUTODISARM: i32 = 1 << 31;
/// The smallest alternate stack sigaltstack accepts (riscv64's MINSIGSTKSZ).
pub const MINSIGSTKSZ: usize = 2048;

/// An alternate signal stack: `size` 0 when there is none.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct AltStack {
    pub sp: usize,
    pub size: usize,
    /// SS_AUTODISARM: disabled while a handler runs on it (restored by rt_sigreturn).
    pub autodisarm: bool,
}

impl AltStack {
    /// Whether the user stack pointer `sp` is on this stack (Linux's `on_sig_stack`).
    pub fn on(&self, sp: usize) -> bool {
        self.size != 0 && sp.wrapping_sub(self.sp) < self.size
    }

    /// `stack_t.ss_flags` as Linux reports it for a thread whose stack pointer is `sp`.
    pub fn flags(&self, sp: usize) -> i32 {
        let mode = if self.size == 0 {
            SS_DISABLE
        } else if self.on(sp) {
            SS_ONSTACK
        } else {
            0
        };
        mode | if self.autodisarm { SS_AUTODISARM } else { 0 }
    }

    /// The 24-byte `stack_t` (ss_sp, ss_flags, ss_size) for a thread whose `sp` is that.
    pub fn to_user(self, sp: usize) -> [u8; 24] {
        let mut b = [0u8; 24];
        b[0..8].copy_from_slice(&self.sp.to_le_bytes());
        b[8..12].copy_from_slice(&self.flags(sp).to_le_bytes());
        b[16..24].copy_from_slice(&self.size.to_le_bytes());
        b
    }

    /// The stack a `stack_t` asks for (Linux's `do_sigaltstack` checks, but not the one that
    /// the caller is not running on the current stack): EINVAL for unknown flags, ENOMEM for
    /// a stack smaller than MINSIGSTKSZ.
    pub fn from_user(b: &[u8; 24]) -> Result<AltStack, abi::Errno> {
        let sp = usize::from_le_bytes(b[0..8].try_into().unwrap_or([0; 8]));
        let flags = i32::from_le_bytes(b[8..12].try_into().unwrap_or([0; 4]));
        let size = usize::from_le_bytes(b[16..24].try_into().unwrap_or([0; 8]));
        let mode = flags & !SS_AUTODISARM;
        if mode != 0 && mode != SS_ONSTACK && mode != SS_DISABLE {
            return Err(abi::Errno::EINVAL);
        }
        if mode == SS_DISABLE {
            return Ok(AltStack::default());
        }
        if size < MINSIGSTKSZ {
            return Err(abi::Errno::ENOMEM);
        }
        Ok(AltStack {
            sp,
            size,
            autodisarm: flags & SS_AUTODISARM != 0,
        })
    }
}

impl SigMask {
    /// Set the blocked mask (SIGKILL and SIGSTOP can never be blocked).
    pub fn set_blocked(&mut self, mask: u64) {
        self.blocked = mask & !UNBLOCKABLE;
    }
}

impl SigState {
    /// Whether `sig` would be dropped at generation (ignored, explicitly or by default).
    pub(super) fn ignores(&self, sig: usize) -> bool {
        let a = &self.actions[sig - 1];
        a.handler == SIG_IGN || (a.handler == SIG_DFL && default_action(sig) == Default_::Ignore)
    }

    /// Whether a child's exit leaves no zombie for this process to wait for: SIGCHLD set to
    /// SIG_IGN, or its action has SA_NOCLDWAIT (Linux's rule; the default action, ignore,
    /// does not count).
    pub(super) fn reaps_children_itself(&self) -> bool {
        let a = &self.actions[SIGCHLD - 1];
        a.handler == SIG_IGN || a.flags & SA_NOCLDWAIT != 0
    }

    /// execve: caught signals go back to their default action; ignored ones stay ignored;
    /// the mask stays.
    pub fn reset_for_exec(&mut self) {
        for a in self.actions.iter_mut() {
            if a.handler != SIG_IGN {
                *a = SigAction::default();
            }
        }
    }
}
