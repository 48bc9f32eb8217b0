//! A benchmark's failure ([`Failure`]: what failed, on which target, with which errno) and the
//! `context` that attaches it to a system call's error.

use alloc::string::String;

use abi::Errno;

/// Why a target failed: what was being done and the errno, or a data mismatch.
#[derive(Clone, Debug)]
pub struct Failure {
    pub what: String,
    pub errno: Option<Errno>,
}

impl core::fmt::Display for Failure {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.errno {
            Some(e) => write!(f, "{}: {} ({})", self.what, e.name(), e.description()),
            None => write!(f, "{}", self.what),
        }
    }
}

pub(super) type BenchResult<T> = Result<T, Failure>;

pub(super) trait Context<T> {
    fn ctx(self, what: impl FnOnce() -> String) -> BenchResult<T>;
}

impl<T> Context<T> for Result<T, Errno> {
    fn ctx(self, what: impl FnOnce() -> String) -> BenchResult<T> {
        self.map_err(|e| Failure {
            what: what(),
            errno: Some(e),
        })
    }
}
