//! sigaltstack and SA_ONSTACK: stress-ng's every stressor sets an alternate signal stack first
//! (and failed at once with the ENOMEM the kernel used to give every caller).

use core::sync::atomic::{AtomicI32, AtomicIsize, AtomicUsize, Ordering::SeqCst};

use user_tests::prelude::*;
use user_tests::raw::{syscall0, syscall2, syscall4};

use crate::{ensure, expect_errno, Check, Ctx, TestResult};

const SIGUSR1: usize = 10;
const SA_ONSTACK: u64 = 0x0800_0000;
const SS_ONSTACK: i32 = 1;
const SS_DISABLE: i32 = 2;
const SS_AUTODISARM: i32 = 1 << 31;
const STACK: usize = 64 * 1024;

/// A stack_t: ss_sp, ss_flags (and padding), ss_size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
struct StackT {
    sp: usize,
    flags: i32,
    pad: i32,
    size: usize,
}

fn stack_t(sp: usize, flags: i32, size: usize) -> StackT {
    StackT {
        sp,
        flags,
        pad: 0,
        size,
    }
}

fn sigaltstack_raw(ss: usize, old: usize) -> SysResult<()> {
    // SAFETY: `ss` and `old` are null, a stack_t, or a bad address the kernel must refuse.
    Errno::from_ret(unsafe { syscall2(abi::syscall::SYS_SIGALTSTACK, ss, old) }).map(|_| ())
}

fn sigaltstack(ss: Option<&StackT>) -> SysResult<StackT> {
    let mut old = stack_t(7, 7, 7);
    let ss = ss.map_or(0, |s| s as *const StackT as usize);
    sigaltstack_raw(ss, &mut old as *mut StackT as usize).map(|_| old)
}

/// What the handler saw: the address of one of its locals, the flags sigaltstack reported,
/// and the result of trying to change the stack while on it.
static SEEN_SP: AtomicUsize = AtomicUsize::new(0);
static SEEN_FLAGS: AtomicI32 = AtomicI32::new(0);
static SEEN_SET: AtomicIsize = AtomicIsize::new(0);

extern "C" fn handler(_sig: i32) {
    let local = 0u8;
    SEEN_SP.store(core::ptr::addr_of!(local) as usize, SeqCst);
    let mut old = stack_t(0, 0, 0);
    let r = sigaltstack_raw(0, &mut old as *mut StackT as usize);
    SEEN_FLAGS.store(if r.is_ok() { old.flags } else { -1 }, SeqCst);
    let other = stack_t(0, 0, 1 << 20);
    // SAFETY: both are readable/writable stack_t values.
    let set = unsafe {
        syscall2(
            abi::syscall::SYS_SIGALTSTACK,
            &other as *const StackT as usize,
            0,
        )
    };
    SEEN_SET.store(set, SeqCst);
}

/// Raise SIGUSR1 in this thread with `handler` installed (flags SA_ONSTACK).
fn raise_on_stack() -> SysResult<()> {
    let act: [u64; 3] = [handler as extern "C" fn(i32) as usize as u64, SA_ONSTACK, 0];
    // SAFETY: `act` is a 24-byte sigaction with a real handler; no old action.
    let r = unsafe {
        syscall4(
            abi::syscall::SYS_RT_SIGACTION,
            SIGUSR1,
            act.as_ptr() as usize,
            0,
            8,
        )
    };
    Errno::from_ret(r)?;
    // SAFETY: plain calls; the signal runs `handler`, which returns.
    let tid = unsafe { syscall0(abi::syscall::SYS_GETTID) } as usize;
    Errno::from_ret(unsafe { syscall2(abi::syscall::SYS_TKILL, tid, SIGUSR1) }).map(|_| ())
}

/// None at first (SS_DISABLE); ENOMEM below MINSIGSTKSZ, EINVAL for unknown flags, EFAULT for
/// a bad pointer; a handler with SA_ONSTACK runs on the stack, sees SS_ONSTACK and cannot
/// change it (EPERM); SS_AUTODISARM disables it while the handler runs and rt_sigreturn
/// brings it back; SS_DISABLE removes it.
pub fn sigaltstack_onstack(_cx: &Ctx) -> TestResult {
    let none = sigaltstack(None).what("sigaltstack(NULL, &old)")?;
    ensure!(
        none.flags == SS_DISABLE,
        "no stack yet: flags {:#x}, want SS_DISABLE",
        none.flags
    );
    let buf = vec![0u8; STACK];
    let base = buf.as_ptr() as usize;
    expect_errno(
        sigaltstack(Some(&stack_t(base, 0, 1024))),
        Errno::ENOMEM,
        "1 KiB stack",
    )?;
    expect_errno(
        sigaltstack(Some(&stack_t(base, 5, STACK))),
        Errno::EINVAL,
        "flags 5",
    )?;
    expect_errno(sigaltstack_raw(1, 0), Errno::EFAULT, "ss = 1")?;
    sigaltstack(Some(&stack_t(base, 0, STACK))).what("set the stack")?;
    let now = sigaltstack(None).what("read it back")?;
    ensure!(now == stack_t(base, 0, STACK), "read back {now:?}");

    raise_on_stack().what("raise SIGUSR1")?;
    let sp = SEEN_SP.load(SeqCst);
    ensure!(
        (base..base + STACK).contains(&sp),
        "the handler ran at {sp:#x}, not on the stack at {base:#x}"
    );
    ensure!(
        SEEN_FLAGS.load(SeqCst) == SS_ONSTACK,
        "in the handler: flags {:#x}, want SS_ONSTACK",
        SEEN_FLAGS.load(SeqCst)
    );
    ensure!(
        SEEN_SET.load(SeqCst) == -(Errno::EPERM.0 as isize),
        "changing the stack on it gave {}, want EPERM",
        SEEN_SET.load(SeqCst)
    );
    let after = sigaltstack(None).what("after the handler")?;
    ensure!(
        after.flags == 0,
        "after the handler: flags {:#x}, want 0",
        after.flags
    );

    sigaltstack(Some(&stack_t(base, SS_AUTODISARM, STACK))).what("SS_AUTODISARM")?;
    SEEN_SP.store(0, SeqCst);
    raise_on_stack().what("raise SIGUSR1 again")?;
    let sp = SEEN_SP.load(SeqCst);
    ensure!(
        (base..base + STACK).contains(&sp),
        "SS_AUTODISARM: the handler ran at {sp:#x}"
    );
    ensure!(
        SEEN_FLAGS.load(SeqCst) == SS_DISABLE,
        "SS_AUTODISARM: flags in the handler {:#x}, want SS_DISABLE",
        SEEN_FLAGS.load(SeqCst)
    );
    let back = sigaltstack(None).what("after the disarmed handler")?;
    ensure!(
        back == stack_t(base, SS_AUTODISARM, STACK),
        "rt_sigreturn restored {back:?}"
    );

    sigaltstack(Some(&stack_t(0, SS_DISABLE, 0))).what("SS_DISABLE")?;
    let off = sigaltstack(None).what("after SS_DISABLE")?;
    ensure!(
        off.flags == SS_DISABLE,
        "after SS_DISABLE: flags {:#x}",
        off.flags
    );
    let dfl: [u64; 3] = [0, 0, 0];
    // SAFETY: SIG_DFL back for SIGUSR1.
    unsafe {
        syscall4(
            abi::syscall::SYS_RT_SIGACTION,
            SIGUSR1,
            dfl.as_ptr() as usize,
            0,
            8,
        )
    };
    drop(buf);
    Ok(())
}
