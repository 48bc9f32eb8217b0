//! `key=value` command-line arguments, as the kernel command line and `init` pass them.

use abi::Errno;

/// Split `arg` at the first `=`: `("reps", Some("3"))`, or `(arg, None)` for a bare word.
pub fn split_kv(arg: &str) -> (&str, Option<&str>) {
    match arg.split_once('=') {
        Some((k, v)) => (k, Some(v)),
        None => (arg, None),
    }
}

/// Parse a decimal unsigned integer; anything else is `EINVAL`.
pub fn parse_u64(s: &str) -> Result<u64, Errno> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Errno::EINVAL);
    }
    s.bytes().try_fold(0u64, |acc, b| {
        acc.checked_mul(10)
            .and_then(|v| v.checked_add((b - b'0') as u64))
            .ok_or(Errno::ERANGE)
    })
}
