//! `badsys DIR [summary=FILE] [qemu] [-v]`: throw bad arguments at every syscall the kernel
//! implements and check each answer is the errno Linux gives, and that the kernel keeps going.
//!
//! The cases are table rows ([`case::Case`]: a name, one call, the expected answer), one
//! module per kind of bad argument, each kind tried on every syscall it applies to:
//!
//! | module | bad arguments |
//! |--------|---------------|
//! | [`pointers`] | NULL, an address in the kernel image (0x8020_0000), a high kernel-half address, a page we unmapped ourselves, a range that starts mapped and runs into the unmapped page, a read-only page as an output buffer, a length that wraps the address space |
//! | [`paths`] | not NUL-terminated before the end of the mapping (EFAULT), `PATH_MAX` bytes with no NUL (ENAMETOOLONG), one component longer than `NAME_MAX` (ENAMETOOLONG), empty (ENOENT), and a 4095-byte path that is merely missing (ENOENT: the limit is exact) |
//! | [`fds`] | descriptors never opened, negative, huge, closed, of the wrong kind (a file where a directory is needed and the reverse), of the wrong access mode |
//! | [`flags`] | flags, whence, offsets, clocks, times, wait options, signals outside what Linux accepts; an unknown syscall number |
//! | [`memory`] | `mmap`, `munmap`, `mprotect` and `brk` with bad lengths, addresses, flags and descriptors |
//! | [`types`] | a directory where a file is expected and the reverse, for every call that cares |
//! | [`processes`] | `execve` with a bad `argv` / `envp`, `wait4` storing through a bad pointer (in children) |
//!
//! They run in that order, each table top to bottom; later rows may rely on what earlier ones
//! left (the fixture in [`fixture`] is shared, and a failed call must have changed nothing).
//! A program that is still alive then checks the fixture file reads back intact.
//!
//! Every expectation is Linux's: the program runs unchanged under `qemu-riscv64` on a Linux
//! directory (`qemu-riscv64 badsys /tmp/x qemu`). The `qemu` argument accepts the few answers
//! where qemu-user itself differs from a Linux kernel (it checks whole buffers up front); each
//! such row is marked `.qemu(...)` in the tables. The closing line is `N passed, N failed`
//! (also written to FILE); the exit status is the number of failures (capped at 125).
#![no_std]
#![no_main]

extern crate alloc;

mod case;
mod fds;
mod fixture;
mod flags;
mod memory;
mod paths;
mod pointers;
mod processes;
mod types;

use user_tests::abi::stat::MSDOS_SUPER_MAGIC;
use user_tests::prelude::*;

use case::{run, Runner, Want};
use fixture::Mem;

fn main(argv: &[&str]) -> i32 {
    let mut dir = None;
    let mut summary = None;
    let mut r = Runner { passed: 0, failed: 0, verbose: false, qemu: false, fat: false };
    for &a in argv.iter().skip(1) {
        match a.split_once('=') {
            Some(("summary", v)) => summary = Some(v),
            _ if a == "qemu" => r.qemu = true,
            _ if a == "-v" => r.verbose = true,
            _ => dir = Some(a),
        }
    }
    let Some(dir) = dir else {
        println!("usage: badsys DIR [summary=FILE] [qemu] [-v]");
        return 2;
    };
    r.fat = sys::statfs(dir).is_ok_and(|s| s.f_type == MSDOS_SUPER_MAGIC);
    let fx = match fixture::setup(dir, r.fat) {
        Ok(fx) => fx,
        Err(e) => {
            println!("badsys: setting up in {dir}: {}", e.name());
            return 1;
        }
    };
    let mut m = match Mem::new() {
        Ok(m) => m,
        Err(e) => {
            println!("badsys: mmap: {}", e.name());
            return 1;
        }
    };
    println!("badsys: {dir}{}", if r.fat { " (FAT)" } else { "" });
    pointers::cases(&mut r, &mut m, &fx);
    paths::cases(&mut r, &mut m, &fx);
    fds::cases(&mut r, &mut m, &fx);
    flags::cases(&mut r, &mut m, &fx);
    memory::cases(&mut r, &mut m, &fx);
    flags::unknown_number(&mut r);
    types::cases(&mut r, &fx);
    processes::cases(&mut r, &mut m, argv[0]);

    // Still alive and still able to do real work.
    let data: Vec<u8> = (0..100u8).collect();
    let reads_back = || sys::pread(fx.fd, &mut [0u8; 100], 0);
    let same_contents = || {
        let mut buf = [0u8; 100];
        let _ = sys::pread(fx.fd, &mut buf, 0);
        Ok(usize::from(buf[..] == data[..]))
    };
    r.run(&[
        run("the fixture file reads back", &reads_back, Want::Val(100)),
        run("with its contents", &same_contents, Want::Val(1)),
    ]);
    for fd in [fx.fd, fx.ro_fd, fx.dir_fd] {
        let _ = sys::close(fd);
    }
    let cleanup = sys::remove_tree(&fx.dir).map(|_| 0);
    r.check("remove the scratch directory", cleanup, Want::Val(0));
    let line = format!("{} passed, {} failed", r.passed, r.failed);
    println!("{line}");
    if let Some(path) = summary {
        if let Ok(f) = File::create(path) {
            let _ = f.write_all(line.as_bytes());
        }
    }
    r.failed.min(125) as i32
}

user_tests::entry!(main);
