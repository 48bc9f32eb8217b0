//! Console output: `print!` / `println!` / `eprintln!` write whole lines to fd 1 / fd 2.
//!
//! Each macro call formats into one heap string and issues one `write`, so lines of parallel
//! processes do not interleave mid-line. The panic path uses [`StackWriter`] instead, which never
//! allocates (a panic may come from an exhausted heap).

use alloc::string::String;
use core::fmt::{self, Write};

/// Format `args` and write them to `fd` with as few `write` calls as possible.
pub fn write_fmt_to(fd: i32, args: fmt::Arguments) {
    let mut s = String::new();
    let _ = s.write_fmt(args);
    let _ = crate::sys::write_all(fd, s.as_bytes());
}

/// Nothing is buffered across calls today; kept so programs need not change if that changes.
pub fn flush_stdout() {}

/// A fixed-size, non-allocating formatter: output beyond its capacity is dropped.
pub struct StackWriter<const N: usize> {
    buf: [u8; N],
    len: usize,
}

impl<const N: usize> StackWriter<N> {
    pub const fn new() -> Self {
        StackWriter {
            buf: [0; N],
            len: 0,
        }
    }
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl<const N: usize> Default for StackWriter<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> Write for StackWriter<N> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let n = s.len().min(N - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

/// Print to standard output (fd 1).
#[macro_export]
macro_rules! print {
    ($($arg:tt)*) => { $crate::io::write_fmt_to(1, format_args!($($arg)*)) };
}

/// Print a line to standard output (fd 1).
#[macro_export]
macro_rules! println {
    () => { $crate::print!("\n") };
    ($($arg:tt)*) => { $crate::io::write_fmt_to(1, format_args!("{}\n", format_args!($($arg)*))) };
}

/// Print a line to standard error (fd 2).
#[macro_export]
macro_rules! eprintln {
    ($($arg:tt)*) => { $crate::io::write_fmt_to(2, format_args!("{}\n", format_args!($($arg)*))) };
}
