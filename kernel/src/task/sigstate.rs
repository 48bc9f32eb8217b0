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
}

pub(super) fn default_action(sig: usize) -> Default_ {
    match sig {
        SIGCHLD | SIGCONT | SIGURG | SIGWINCH => Default_::Ignore,
        // Stopping is not implemented: treated as ignored (see the module docs).
        SIGSTOP | SIGTSTP | SIGTTIN | SIGTTOU => Default_::Ignore,
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
