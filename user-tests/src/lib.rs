//! # user-tests: the user-space side of dbfs-os
//!
//! A tiny `no_std` library that every user program links, plus one binary per program
//! (`src/bin/<name>.rs` or `src/bin/<name>/main.rs`, installed on the root disk as `/bin/<name>`).
//! The programs use only Linux riscv64 syscalls with Linux numbers ([`abi`]), so each one also
//! runs unchanged on Linux under `qemu-riscv64` user-mode emulation: that is how we check that
//! what they expect is what Linux does, before asking our kernel to do the same.
//!
//! ## Layers (bottom to top)
//!
//! | module     | what it is                                                             | unsafe? |
//! |------------|------------------------------------------------------------------------|---------|
//! | [`raw`]    | `syscall0..6`: one `ecall`, result in `a0` (`-errno` on failure)       | yes     |
//! | [`sys`]    | one safe wrapper per syscall returning `Result<T, Errno>`; [`sys::File`] (closes on drop), [`sys::read_dir`] (getdents64 iterator), [`sys::AnonMap`] | inside only |
//! | [`start`]  | `_start`: reads `argc`/`argv` from the initial stack, calls your `main`, exits | yes |
//! | [`heap`]   | the global allocator over `brk`, so `Vec`, `String`, `format!` work    | yes     |
//! | [`probe`]  | deliberately bad syscalls (NULL / kernel / half-unmapped buffers) for the tests, made safe | inside only |
//! | [`io`]     | `print!`, `println!`, `eprintln!` (one `write` per call)               | no      |
//! | [`time`], [`rng`], [`args`] | monotonic clock, xorshift PRNG, `key=value` argument parsing | no |
//! | [`mod@bench`] | the benchmark harness shared by the benchmark programs (BENCH-PROTOCOL.md) | no  |
//!
//! A panic prints its message and location and exits with status 101.
//!
//! ## Programs and their arguments
//!
//! | program | arguments |
//! |---------|-----------|
//! | `init` | `bench=<name\|all> [fs=fat32\|raw\|dbfs\|all] [reps=N] [quick] [size=MiB] [ops=N] [n=S:E:STEP]`, or `test` (the default) |
//! | `testrunner` | `DIR [summary=FILE] [assume=fat\|nofat] [TEST...]`; closes with `N passed, N failed`, exit = failures |
//! | `badsys` | `DIR [summary=FILE] [qemu] [-v]`: bad pointers, paths, descriptors, flags and types for every implemented syscall, each against Linux's errno; same closing line |
//! | `seqwrite` `rewrite` `seqread` `seqread4k` `randwrite` `randread` `randread4k` `randwrite4k` | `NAME:PATH... [reps=N] [size=MiB] [ops=N] [quick]` |
//! | `createdel` | `NAME:DIR... [n=START:END:STEP] [reps=N] [quick]` |
//! | `crosscheck` | `verify DIR`, `gen DIR seed=N` or `workload DIR`: the guest side of `make test-cross` (tests/crosscheck) |
//! | `workloads` | `NAME:DIR... [reps=N] [workloads=all\|NAME,...] [quick]`: filebench-style fileserver / webserver / varmail, an mdtest tree, create_empty, delete_2m, createdel_ordered (the `workloads` crate, bench/workloads; `make bench-workloads`) |
//! | `syscost` | `[DIR...]` (default /dbfs /fat): ns per call of a bare syscall, a 0-byte and a 4 KiB `pread`; `SYSCOST` lines |
//!
//! Benchmarks print `RESULT bench=... fs=NAME ...` lines (see [`mod@bench`]); a target named `raw`
//! (or a device path) is used as a raw device. Every program exits 0 on success and non-zero on
//! any error, after printing the errno name.
//!
//! ## Linking
//!
//! `build.rs` links every binary with `user.ld`: a static, non-PIE ELF at base 0x1_0000_0000 with
//! page-aligned R-X / R / RW segments. Build all programs with
//! `CARGO_TARGET_DIR=target/user cargo build --release -p user-tests --target riscv64gc-unknown-none-elf`
//! and try one on Linux with `qemu-riscv64 target/user/riscv64gc-unknown-none-elf/release/testrunner /tmp`.
//!
//! ## Adding a program
//!
//! Create `src/bin/hello.rs`:
//!
//! ```ignore
//! #![no_std]
//! #![no_main]
//! use user_tests::prelude::*;
//!
//! fn main(argv: &[&str]) -> i32 {
//!     println!("hello from pid {}, args {:?}", sys::getpid(), argv);
//!     match sys::open("/fat/x", O_RDONLY, 0) {
//!         Ok(fd) => { let _ = sys::close(fd); 0 }
//!         Err(e) => { println!("open: {}", e.name()); 1 }   // e.g. "ENOENT"
//!     }
//! }
//! user_tests::entry!(main);
//! ```
//!
//! It is built with the others and ends up in `/bin/hello` on the next image. `main` returns
//! the exit status. To add a test instead, add a function and one line to the table in
//! `src/bin/testrunner/main.rs`.
#![no_std]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

#[cfg(not(target_arch = "riscv64"))]
compile_error!("user-tests is riscv64-only: build with --target riscv64gc-unknown-none-elf");

extern crate alloc;

pub mod args;
pub mod bench;
pub mod heap;
pub mod io;
pub mod probe;
pub mod raw;
pub mod rng;
pub mod start;
pub mod sys;
pub mod time;

pub use abi;
pub use abi::Errno;

/// The page size the linker script and the kernel agree on.
pub const PAGE_SIZE: usize = 4096;
/// One MiB (2^20 bytes).
pub const MIB: usize = 1 << 20;

#[global_allocator]
static HEAP: heap::BrkHeap = heap::BrkHeap::new();

/// What most programs want in scope.
pub mod prelude {
    pub use crate::abi::fcntl::*;
    pub use crate::abi::stat::*;
    pub use crate::abi::Errno;
    pub use crate::sys::{self, File, SysResult};
    pub use crate::{eprintln, print, println};
    pub use alloc::borrow::ToOwned;
    pub use alloc::boxed::Box;
    pub use alloc::string::{String, ToString};
    pub use alloc::vec::Vec;
    pub use alloc::{format, vec};
}

/// Register the program's `fn main(argv: &[&str]) -> i32` as its entry point.
/// `argv[0]` is the program path as given to `execve`.
#[macro_export]
macro_rules! entry {
    ($main:path) => {
        #[no_mangle]
        fn __user_tests_main(argv: &[&'static str]) -> i32 {
            let main: fn(&[&'static str]) -> i32 = $main;
            main(argv)
        }
    };
}

/// Counts of a program's checks, each printed as `ok    what` or `FAIL  what`; programs end
/// with `N passed, N failed` from these (the Makefile greps that line).
#[derive(Default)]
pub struct Report {
    pub passed: u32,
    pub failed: u32,
}

impl Report {
    /// Count and print one check.
    pub fn check(&mut self, ok: bool, what: &str) {
        if ok {
            self.passed += 1;
            println!("ok    {what}");
        } else {
            self.failed += 1;
            println!("FAIL  {what}");
        }
    }
}

/// `dir` + "/" + `name`, without doubling a trailing slash.
pub fn path_join(dir: &str, name: &str) -> alloc::string::String {
    let mut s = alloc::string::String::with_capacity(dir.len() + 1 + name.len());
    s.push_str(dir);
    if !dir.ends_with('/') {
        s.push('/');
    }
    s.push_str(name);
    s
}

/// The parent directory of `path` ("/" for "/x", "." for "x").
pub fn parent_dir(path: &str) -> &str {
    match path.trim_end_matches('/').rfind('/') {
        Some(0) => "/",
        Some(i) => &path[..i],
        None => ".",
    }
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    use core::fmt::Write;
    let mut w = io::StackWriter::<512>::new();
    let _ = write!(w, "panic: {}", info.message());
    if let Some(loc) = info.location() {
        let _ = write!(w, " at {}:{}", loc.file(), loc.line());
    }
    let _ = w.write_str("\n");
    let _ = sys::write_all(1, w.as_bytes());
    sys::exit(101)
}
