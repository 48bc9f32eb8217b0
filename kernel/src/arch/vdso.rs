//! The vDSO: one page the loader maps into every process (at [`BASE`]) and names in the
//! auxiliary vector (`AT_SYSINFO_EHDR`), so that glibc reads the clock without a system call.
//!
//! Why: fio times every I/O with `clock_gettime`, several times per request. As a system call
//! each of those is a trap, a save and restore of the registers and, under QEMU's TCG, a few
//! hundred host instructions; in a PC-sampled boot of fio's 4 KiB read loop over 80% of the
//! samples were in those calls (docs/BENCHMARKS.md). Linux answers them in user mode, from
//! its vDSO, and glibc (static binaries too) looks for one at start-up.
//!
//! What the page holds: a minimal ELF shared object, written below with assembler directives
//! (no toolchain beyond the kernel's own): the ELF header, a `PT_LOAD` and a `PT_DYNAMIC`
//! program header, a dynamic section, a SysV hash table, a symbol table with
//! `__vdso_clock_gettime` and `__vdso_gettimeofday`, their code, and 16 bytes of data the
//! loader fills in each copy (the `time` CSR's frequency and the wall clock's offset, both
//! fixed after boot: the kernel has no `settimeofday`). glibc's lookup accepts symbols
//! without version information. The code reads the `time` CSR with `rdtime` (allowed in user
//! mode by `scounteren.TM`, set in [`super::time::init`]) and does the kernel's arithmetic
//! ([`super::time::monotonic_ns`], `realtime_ns`), so a call gives the same figure as the
//! system call at that instant.
//!
//! What it leaves to the kernel: for a clock it does not know (CPU-time clocks, an unknown
//! id), a null `timespec`, and `gettimeofday` with a time zone, the function makes the system
//! call itself (`ecall`) and returns its answer (glibc 2.36 takes a vDSO's negative return as
//! the errno and does not retry), so those get EINVAL or EFAULT as before. Any other bad
//! pointer faults in user mode (SIGSEGV), as with Linux's vDSO. (glibc's own `gettimeofday`
//! on riscv64 calls `clock_gettime`; `__vdso_gettimeofday` is there for other C libraries, as
//! in Linux's riscv vDSO.)
//!
//! Each process gets its own copy of the page (private memory, read and execute), so a
//! process that makes it writable changes only its own copy.

use super::layout::{PAGE_SIZE, USER_END};

/// Where every address space has its signal-return trampoline (`li a7, 139; ecall`, the
/// return address of every signal handler): the last page of user space.
pub const SIGRETURN_TRAMPOLINE: usize = USER_END - PAGE_SIZE;
/// The trampoline's code: `addi a7, zero, 139` (rt_sigreturn), `ecall`.
pub const TRAMPOLINE_CODE: [u32; 2] = [0x08b0_0893, 0x0000_0073];

/// Where the loader maps the vDSO: the page below the signal trampoline, at the top of user
/// space.
pub const BASE: usize = SIGRETURN_TRAMPOLINE - PAGE_SIZE;

core::arch::global_asm!(
    r#"
    .section .rodata.vdso, "a"
    .option push
    .option norelax
    .p2align 3
    .globl dbfs_os_vdso_start
dbfs_os_vdso_start:
# --- ELF header (Elf64_Ehdr)
    .byte 0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0     # ELF, 64-bit, little-endian, v1, System V
    .byte 0, 0, 0, 0, 0, 0, 0, 0
    .2byte 3                                     # e_type: ET_DYN
    .2byte 243                                   # e_machine: EM_RISCV
    .4byte 1                                     # e_version
    .8byte 0                                     # e_entry
    .8byte .Lvdso_phdr - dbfs_os_vdso_start      # e_phoff
    .8byte 0                                     # e_shoff: no section headers
    .4byte 5                                     # e_flags: RVC, double-float ABI
    .2byte 64                                    # e_ehsize
    .2byte 56                                    # e_phentsize
    .2byte 2                                     # e_phnum
    .2byte 64                                    # e_shentsize
    .2byte 0                                     # e_shnum
    .2byte 0                                     # e_shstrndx
# --- program headers (Elf64_Phdr): the page, and the dynamic section in it
.Lvdso_phdr:
    .4byte 1                                     # PT_LOAD
    .4byte 5                                     # R | X
    .8byte 0, 0, 0                               # p_offset, p_vaddr, p_paddr
    .8byte 4096, 4096, 4096                      # p_filesz, p_memsz, p_align
    .4byte 2                                     # PT_DYNAMIC
    .4byte 4                                     # R
    .8byte .Lvdso_dyn - dbfs_os_vdso_start
    .8byte .Lvdso_dyn - dbfs_os_vdso_start
    .8byte .Lvdso_dyn - dbfs_os_vdso_start
    .8byte .Lvdso_dyn_end - .Lvdso_dyn
    .8byte .Lvdso_dyn_end - .Lvdso_dyn
    .8byte 8
# --- dynamic section (Elf64_Dyn): addresses are offsets in the page (the loader adds the base)
.Lvdso_dyn:
    .8byte 4, .Lvdso_hash - dbfs_os_vdso_start   # DT_HASH
    .8byte 5, .Lvdso_str - dbfs_os_vdso_start    # DT_STRTAB
    .8byte 6, .Lvdso_sym - dbfs_os_vdso_start    # DT_SYMTAB
    .8byte 10, .Lvdso_str_end - .Lvdso_str       # DT_STRSZ
    .8byte 11, 24                                # DT_SYMENT
    .8byte 14, .Lvdso_soname - .Lvdso_str        # DT_SONAME
    .8byte 0, 0                                  # DT_NULL
.Lvdso_dyn_end:
# --- SysV hash table: one bucket, the symbols chained 1 -> 2
.Lvdso_hash:
    .4byte 1, 3                                  # nbucket, nchain (symbols, null included)
    .4byte 1                                     # bucket 0: symbol 1
    .4byte 0, 2, 0                               # chain
# --- symbols (Elf64_Sym): global functions, in section 1 (any defined section will do)
    .p2align 3
.Lvdso_sym:
    .4byte 0
    .byte 0, 0
    .2byte 0
    .8byte 0, 0
    .4byte .Lvdso_name_cgt - .Lvdso_str
    .byte 0x12, 0                                # STB_GLOBAL | STT_FUNC, default visibility
    .2byte 1
    .8byte .Lvdso_clock_gettime - dbfs_os_vdso_start
    .8byte .Lvdso_clock_gettime_end - .Lvdso_clock_gettime
    .4byte .Lvdso_name_gtod - .Lvdso_str
    .byte 0x12, 0
    .2byte 1
    .8byte .Lvdso_gettimeofday - dbfs_os_vdso_start
    .8byte .Lvdso_gettimeofday_end - .Lvdso_gettimeofday
.Lvdso_str:
    .byte 0
.Lvdso_name_cgt:
    .asciz "__vdso_clock_gettime"
.Lvdso_name_gtod:
    .asciz "__vdso_gettimeofday"
.Lvdso_soname:
    .asciz "linux-vdso.so.1"
.Lvdso_str_end:
# --- data, filled in by the loader: time CSR ticks per second, wall clock at tick 0 (ns)
    .p2align 3
    .globl dbfs_os_vdso_data
dbfs_os_vdso_data:
    .8byte 0, 0
# --- code
    .p2align 2
# t6 = the clock in nanoseconds: since boot (the kernel's monotonic_ns), plus the wall clock's
# offset if t1 = 1 (realtime_ns); a3 = 1e9. Clobbers t2-t5, a2. Called with `jal t0`.
.Lvdso_now:
    lla     t3, dbfs_os_vdso_data
    ld      t4, 0(t3)
    li      t2, 0
    beqz    t1, 1f
    ld      t2, 8(t3)
1:  rdtime  t5
    li      a3, 1000000000
    divu    t6, t5, t4
    remu    a2, t5, t4
    mul     a2, a2, a3
    divu    a2, a2, t4
    mul     t6, t6, a3
    add     t6, t6, a2
    add     t6, t6, t2
    jr      t0
# int __vdso_clock_gettime(a0 = clockid, a1 = struct timespec *)
.Lvdso_clock_gettime:
    li      t0, 7
    bltu    t0, a0, 9f                  # id > 7: not ours
    li      t1, 0xf3                    # REALTIME 0, MONOTONIC 1, MONOTONIC_RAW 4,
    srl     t1, t1, a0                  # REALTIME_COARSE 5, MONOTONIC_COARSE 6, BOOTTIME 7
    andi    t1, t1, 1
    beqz    t1, 9f
    beqz    a1, 9f                      # null: the system call answers EFAULT
    li      t1, 0x21                    # the wall clocks: REALTIME 0, REALTIME_COARSE 5
    srl     t1, t1, a0
    andi    t1, t1, 1
    jal     t0, .Lvdso_now
    divu    a4, t6, a3
    remu    a5, t6, a3
    sd      a4, 0(a1)
    sd      a5, 8(a1)
    li      a0, 0
    ret
9:  li      a7, {sys_clock_gettime}     # not ours: the system call answers
    ecall
    ret
.Lvdso_clock_gettime_end:
# int __vdso_gettimeofday(a0 = struct timeval *, a1 = struct timezone *)
.Lvdso_gettimeofday:
    bnez    a1, 9f                      # a time zone: the system call answers
    beqz    a0, 8f
    li      t1, 1
    jal     t0, .Lvdso_now
    divu    a4, t6, a3
    remu    a5, t6, a3
    li      a3, 1000
    divu    a5, a5, a3
    sd      a4, 0(a0)
    sd      a5, 8(a0)
8:  li      a0, 0
    ret
9:  li      a7, {sys_gettimeofday}
    ecall
    ret
.Lvdso_gettimeofday_end:
    .globl dbfs_os_vdso_end
dbfs_os_vdso_end:
    .option pop
"#,
    sys_clock_gettime = const abi::syscall::SYS_CLOCK_GETTIME,
    sys_gettimeofday = const abi::syscall::SYS_GETTIMEOFDAY,
);

extern "C" {
    static dbfs_os_vdso_start: u8;
    static dbfs_os_vdso_data: u8;
    static dbfs_os_vdso_end: u8;
}

/// The page's bytes as linked (data still zero) and the offset of its data.
fn parts() -> (&'static [u8], usize) {
    // SAFETY: the three symbols delimit one block of the kernel's read-only data (above),
    // start <= data < end, and nothing writes it.
    unsafe {
        let start = &raw const dbfs_os_vdso_start;
        let len = (&raw const dbfs_os_vdso_end).offset_from(start) as usize;
        let data = (&raw const dbfs_os_vdso_data).offset_from(start) as usize;
        (core::slice::from_raw_parts(start, len), data)
    }
}

/// The vDSO image (at most one page) and, at the returned offset, the 16 bytes of data
/// every copy gets.
pub fn image() -> (&'static [u8], usize, [u8; 16]) {
    let (bytes, data_at) = parts();
    debug_assert!(bytes.len() <= PAGE_SIZE);
    let mut data = [0u8; 16];
    data[..8].copy_from_slice(&super::time::timebase_hz().to_le_bytes());
    data[8..].copy_from_slice(&super::time::epoch_offset_ns().to_le_bytes());
    (bytes, data_at, data)
}
