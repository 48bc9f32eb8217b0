//! Process entry: `_start`, argv decoding, and the call into the program's `main`.
//!
//! Linux (and dbfs-os) start a process with `sp` pointing at
//! `argc, argv[0..argc], NULL, envp..., NULL, auxv pairs..., AT_NULL`, 16-byte aligned, all
//! other registers unspecified. `_start` passes `sp` to `start_rust`, which borrows the
//! argument strings (they live on the initial stack for the whole process, hence `'static`),
//! calls the `main` registered by [`crate::entry!`] and exits with its return value.

use alloc::vec::Vec;
use core::arch::global_asm;

global_asm!(
    ".section .text.entry, \"ax\"",
    ".globl _start",
    "_start:",
    // Terminate frame-pointer chains so backtraces stop here.
    "    li fp, 0",
    "    li ra, 0",
    "    mv a0, sp",
    "    andi sp, sp, -16",
    "    call {start}",
    "1:  j 1b",
    start = sym start_rust,
);

extern "Rust" {
    /// Defined by `user_tests::entry!(main)` in each binary.
    fn __user_tests_main(argv: &[&'static str]) -> i32;
}

/// Length of the NUL-terminated string at `p`.
///
/// # Safety
/// `p` must point at a NUL-terminated string that stays valid for the program's life.
unsafe fn c_str(p: *const u8) -> &'static str {
    let mut len = 0usize;
    // SAFETY: the string is NUL-terminated (caller's contract), so every byte up to and
    // including the NUL is readable.
    while unsafe { *p.add(len) } != 0 {
        len += 1;
    }
    // SAFETY: `len` readable bytes at `p`, alive for the whole process (initial stack).
    let bytes = unsafe { core::slice::from_raw_parts(p, len) };
    core::str::from_utf8(bytes).unwrap_or("<non-utf8 argument>")
}

/// # Safety
/// Called once, by `_start`, with the initial stack pointer laid out as above.
unsafe extern "C" fn start_rust(sp: *const usize) -> ! {
    // SAFETY: the kernel placed argc at sp and argc argv pointers after it.
    let argc = unsafe { *sp };
    let mut argv: Vec<&'static str> = Vec::with_capacity(argc);
    for i in 0..argc {
        // SAFETY: argv[i] for i < argc is a valid pointer slot on the initial stack.
        let p = unsafe { *sp.add(1 + i) } as *const u8;
        if p.is_null() {
            break;
        }
        // SAFETY: each argv pointer names a NUL-terminated string on the initial stack,
        // which is never freed or overwritten while the process runs.
        argv.push(unsafe { c_str(p) });
    }
    // SAFETY: every program defines this symbol through `entry!`, with this signature.
    let code = unsafe { __user_tests_main(&argv) };
    crate::io::flush_stdout();
    crate::sys::exit(code)
}
