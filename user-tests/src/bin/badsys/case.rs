//! The case table and its runner: every module lists its cases as rows of [`Case`] (a name,
//! one call, the answer Linux gives) and hands them to [`Runner::run`], which makes the calls
//! in row order and counts the answers.

use alloc::borrow::Cow;
use user_tests::prelude::*;
use user_tests::raw::syscall6;

/// One raw syscall; the arguments may be anything (that is the point).
pub fn sc(n: usize, a: &[usize]) -> SysResult<usize> {
    let mut r = [0usize; 6];
    r[..a.len()].copy_from_slice(a);
    // SAFETY: every pointer passed is either valid memory of ours for the call, or an address
    // this process never uses (see `fixture`); the kernel must reject the latter.
    Errno::from_ret(unsafe { syscall6(n, r[0], r[1], r[2], r[3], r[4], r[5]) })
}

/// What a case expects.
#[derive(Clone, Copy)]
pub enum Want {
    Err(Errno),
    /// Either errno (Linux versions or file systems differ; both are Linux answers).
    Either(Errno, Errno),
    /// Success with exactly this value.
    Val(usize),
    /// Success, any value.
    Ok,
}

impl From<Errno> for Want {
    fn from(e: Errno) -> Want {
        Want::Err(e)
    }
}

/// How a case asks.
pub enum Call<'a> {
    /// One raw syscall: its number and up to six arguments.
    Sys(usize, [usize; 6]),
    /// Anything else (a wrapper from `user_tests::sys`, a fork and wait), made in its turn.
    Run(&'a dyn Fn() -> SysResult<usize>),
}

/// One row of a table.
pub struct Case<'a> {
    name: Cow<'a, str>,
    call: Call<'a>,
    want: Want,
    /// What qemu-user answers instead of `want`, where it differs from a Linux kernel.
    qemu: Option<Want>,
    /// False: the row does not apply here (it is neither made nor counted).
    applies: bool,
}

/// A row: syscall `nr` with `args` must answer `want`.
pub fn sys<'a>(
    name: impl Into<Cow<'a, str>>,
    nr: usize,
    args: &[usize],
    want: impl Into<Want>,
) -> Case<'a> {
    let mut a = [0usize; 6];
    a[..args.len()].copy_from_slice(args);
    Case { name: name.into(), call: Call::Sys(nr, a), want: want.into(), qemu: None, applies: true }
}

/// A row whose call is not one raw syscall: `call` runs when the row's turn comes.
pub fn run<'a>(
    name: impl Into<Cow<'a, str>>,
    call: &'a dyn Fn() -> SysResult<usize>,
    want: impl Into<Want>,
) -> Case<'a> {
    Case { name: name.into(), call: Call::Run(call), want: want.into(), qemu: None, applies: true }
}

impl Case<'_> {
    /// qemu-user answers `answer` here instead of Linux's (accepted with the `qemu` argument).
    pub fn qemu(mut self, answer: impl Into<Want>) -> Self {
        self.qemu = Some(answer.into());
        self
    }

    /// The row is made only when `cond` holds (e.g. only where symbolic links exist).
    pub fn when(mut self, cond: bool) -> Self {
        self.applies &= cond;
        self
    }
}

/// Counts the answers and prints the failures (every answer with `-v`).
pub struct Runner {
    pub passed: u32,
    pub failed: u32,
    pub verbose: bool,
    /// Running under qemu-user: rows marked [`Case::qemu`] accept qemu-user's answer.
    pub qemu: bool,
    /// The scratch directory is on FAT (no symbolic links, no mode bits).
    pub fat: bool,
}

impl Runner {
    /// Make each applicable row's call, in order, and check its answer.
    pub fn run(&mut self, cases: &[Case]) {
        for c in cases.iter().filter(|c| c.applies) {
            let got = match c.call {
                Call::Sys(nr, a) => sc(nr, &a),
                Call::Run(f) => f(),
            };
            let want = match c.qemu {
                Some(q) if self.qemu => q,
                _ => c.want,
            };
            self.check(&c.name, got, want);
        }
    }

    /// Count one answer `got` against `want`.
    pub fn check(&mut self, name: &str, got: SysResult<usize>, want: Want) {
        let ok = match (want, got) {
            (Want::Err(e), Err(g)) => e == g,
            (Want::Either(a, b), Err(g)) => g == a || g == b,
            (Want::Val(v), Ok(g)) => v == g,
            (Want::Ok, Ok(_)) => true,
            _ => false,
        };
        let show = |r: SysResult<usize>| match r {
            Ok(v) => format!("{v}"),
            Err(e) => String::from(e.name()),
        };
        let wanted = match want {
            Want::Err(e) => String::from(e.name()),
            Want::Either(a, b) => format!("{} or {}", a.name(), b.name()),
            Want::Val(v) => format!("{v}"),
            Want::Ok => String::from("success"),
        };
        if ok {
            self.passed += 1;
            if self.verbose {
                println!("ok   {name}: {}", show(got));
            }
        } else {
            self.failed += 1;
            println!("FAIL {name}: got {}, want {wanted}", show(got));
        }
    }
}
