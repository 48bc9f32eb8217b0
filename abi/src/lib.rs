//! The user/kernel boundary of dbfs-os, written once.
//!
//! Both the kernel (`kernel/src/syscall`) and the user library (`user-tests/src/lib`) import
//! these numbers and layouts, so they cannot drift apart. Every value is the Linux riscv64
//! value (asm-generic): our user programs also run unchanged under `qemu-riscv64` on Linux,
//! which is how their Linux semantics are checked.
#![no_std]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod aio;
pub mod bench;
pub mod errno;
pub mod fcntl;
pub mod stat;
pub mod syscall;

pub use errno::Errno;
