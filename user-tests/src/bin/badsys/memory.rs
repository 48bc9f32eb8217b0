//! Memory calls with bad lengths, addresses, flags and descriptors: `mmap`, `munmap`,
//! `mprotect`, and a `brk` that cannot be granted.

use user_tests::abi::syscall::*;
use user_tests::prelude::*;

use crate::case::{run, sys, Runner, Want};
use crate::fixture::{Fixture, Mem, KERNEL_LOW};

pub fn cases(r: &mut Runner, m: &mut Mem, fx: &Fixture) {
    let b = m.map.addr();
    let hole = m.hole();
    let (max, inval) = (usize::MAX, Errno::EINVAL);
    let (rd, rw) = (PROT_READ as usize, (PROT_READ | PROT_WRITE) as usize);
    let (private, anon) = (MAP_PRIVATE as usize, (MAP_PRIVATE | MAP_ANONYMOUS) as usize);
    let anon_fixed = anon | MAP_FIXED as usize;
    let shared_nor_private = MAP_ANONYMOUS as usize;
    let dfd = fx.dir_fd as usize;
    r.run(&[
        sys("mmap length 0", SYS_MMAP, &[0, 0, rw, anon, max, 0], inval),
        sys("mmap length 2^64-4096", SYS_MMAP, &[0, max - 4095, rw, anon, max, 0], Errno::ENOMEM),
        sys(
            "mmap neither shared nor private",
            SYS_MMAP,
            &[0, 4096, rw, shared_nor_private, max, 0],
            inval,
        ),
        sys(
            "mmap MAP_FIXED at an unaligned address",
            SYS_MMAP,
            &[b + 1, 4096, rw, anon_fixed, max, 0],
            inval,
        ),
        sys("mmap of a bad fd", SYS_MMAP, &[0, 4096, rw, private, 999, 0], Errno::EBADF),
        sys("mmap of a directory fd", SYS_MMAP, &[0, 4096, rd, private, dfd, 0], Errno::ENODEV),
        sys("munmap an unaligned address", SYS_MUNMAP, &[b + 1, 4096], inval),
        sys("munmap length 0", SYS_MUNMAP, &[b, 0], inval),
        sys("munmap a range wrapping the top", SYS_MUNMAP, &[max - 4095, 8192], inval),
        sys("munmap an unmapped page", SYS_MUNMAP, &[hole, 4096], Want::Val(0)),
        sys("mprotect an unaligned address", SYS_MPROTECT, &[b + 1, 4096, rd], inval),
        sys("mprotect an unmapped page", SYS_MPROTECT, &[hole, 4096, rd], Errno::ENOMEM),
        sys("mprotect prot 0x1000", SYS_MPROTECT, &[b, 4096, 0x1000], inval),
    ]);
    // The break is read last thing before the rows: the allocator moves it too.
    let cur = sys::brk(0);
    let brk_huge = || Ok(sys::brk(1 << 63));
    let brk_kernel = || Ok(sys::brk(KERNEL_LOW));
    r.run(&[
        run("brk to 2^63 answers the old break", &brk_huge, Want::Val(cur)),
        run("brk to the kernel image answers the old break", &brk_kernel, Want::Val(cur)),
    ]);
}
