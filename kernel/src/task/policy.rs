//! What a process keeps of its own besides credentials (task layer): the resource limits the
//! kernel enforces per process ([`Limits`]) and its scheduling policy ([`SchedPolicy`]).
//! Both are inherited by fork and kept by execve, as on Linux.

/// The default RLIMIT_SIGPENDING (Linux's for a 1 GiB machine: half its thread limit).
pub const SIGPENDING_DEFAULT: u64 = 4096;

/// `RLIM_INFINITY`.
pub const RLIM_INFINITY: u64 = u64::MAX;

/// The resource limits each process has, (soft, hard), and that the kernel enforces:
/// RLIMIT_CPU (SIGXCPU, then SIGKILL), RLIMIT_FSIZE (writes and truncates past the soft limit:
/// EFBIG and SIGXFSZ), RLIMIT_MEMLOCK (mlock, mlockall and MAP_LOCKED past it: ENOMEM, or
/// EPERM when it is 0), RLIMIT_NICE (how far a process without CAP_SYS_NICE may lower its
/// nice value: `20 - nice` up to the limit), RLIMIT_RTPRIO (the highest real-time priority it
/// may set without CAP_SYS_NICE) and RLIMIT_SIGPENDING (queued siginfos past it: EAGAIN).
/// RLIMIT_NOFILE is enforced by the descriptor table (the file layer's, which keeps a copy of
/// the soft limit), RLIMIT_CORE by the core dump. The other limits are kept as set, so
/// getrlimit reads back what setrlimit gave (`other`), but the kernel does not act on them:
/// no address-space, data or stack caps beyond the kernel's own, no process-count limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// RLIMIT_CPU, in seconds of CPU time: SIGXCPU at the soft limit and every second past
    /// it, SIGKILL at the hard one ([`super::run::check_cpu_limit`]).
    pub cpu: (u64, u64),
    pub fsize: (u64, u64),
    pub memlock: (u64, u64),
    pub nice: (u64, u64),
    pub rtprio: (u64, u64),
    /// RLIMIT_SIGPENDING: the most siginfos that may be queued for the process's real user
    /// (`siginfo`).
    pub sigpending: (u64, u64),
    /// The limits set by setrlimit that are not enforced here, by resource number; `None`:
    /// never set (the system call layer's default holds).
    pub other: [Option<(u64, u64)>; 16],
}

impl Default for Limits {
    /// Linux's defaults for the first process: no file size limit, 8 MiB of locked memory
    /// (Linux 5.16's MLOCK_LIMIT), no raising of the nice value or real-time priority.
    fn default() -> Self {
        Limits {
            cpu: (RLIM_INFINITY, RLIM_INFINITY),
            fsize: (RLIM_INFINITY, RLIM_INFINITY),
            memlock: (8 << 20, 8 << 20),
            nice: (0, 0),
            rtprio: (0, 0),
            sigpending: (SIGPENDING_DEFAULT, SIGPENDING_DEFAULT),
            other: [None; 16],
        }
    }
}

impl Limits {
    /// The limit of `resource` (RLIMIT_*) when it is one kept here.
    pub fn get_mut(&mut self, resource: usize) -> Option<&mut (u64, u64)> {
        match resource {
            0 => Some(&mut self.cpu),
            1 => Some(&mut self.fsize),
            8 => Some(&mut self.memlock),
            13 => Some(&mut self.nice),
            11 => Some(&mut self.sigpending),
            14 => Some(&mut self.rtprio),
            _ => None,
        }
    }
}

pub const SCHED_OTHER: u32 = 0;
pub const SCHED_FIFO: u32 = 1;
pub const SCHED_RR: u32 = 2;
pub const SCHED_BATCH: u32 = 3;
pub const SCHED_IDLE: u32 = 5;
/// The highest real-time priority (SCHED_FIFO and SCHED_RR take 1..=99).
pub const MAX_RT_PRIO: u32 = 99;

/// A process's scheduling policy as sched_setscheduler(2) sets it: the policy, its static
/// real-time priority (0 for the normal policies), and SCHED_RESET_ON_FORK. The scheduler
/// is round-robin for every policy: it records them with Linux's checks and reports them
/// back, but does not yet run real-time processes first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedPolicy {
    pub policy: u32,
    pub priority: u32,
    pub reset_on_fork: bool,
}

impl SchedPolicy {
    pub fn is_rt(policy: u32) -> bool {
        policy == SCHED_FIFO || policy == SCHED_RR
    }

    /// The policy a child starts with (fork): the parent's, or with SCHED_RESET_ON_FORK a
    /// normal one (a real-time policy becomes SCHED_OTHER) without the flag.
    pub fn for_child(self) -> SchedPolicy {
        if !self.reset_on_fork {
            return self;
        }
        let policy = if Self::is_rt(self.policy) {
            SCHED_OTHER
        } else {
            self.policy
        };
        SchedPolicy {
            policy,
            priority: 0,
            reset_on_fork: false,
        }
    }
}
