//! The kernel's `memcpy`, `memset` and `memcmp` (also `bcmp`), in assembly.
//!
//! Every copy of file data in the kernel ends here: a small read copies from the disk window
//! into the caller's frame, FAT32 copies through its bounce buffer, a page fault zeroes a
//! frame. The versions `compiler_builtins` provides move one 8-byte word per loop turn (five
//! instructions per word); under QEMU's TCG every guest instruction costs host time, so these
//! move 64 bytes per turn (sixteen loads and stores, three bookkeeping instructions). They
//! are strong symbols and replace the weak ones of `compiler_builtins` at link time.
//!
//! Layout of both: copies shorter than 16 bytes go byte by byte; otherwise bytes up to the
//! first 8-byte-aligned destination address, then 64-byte blocks, then words, then bytes.
//! When source and destination are not aligned alike, `memcpy` loads aligned source words and
//! joins neighbours with shifts (each load holds at least one byte that is copied, so no load
//! strays outside the source range's words, nor onto another page).
//!
//! `memcmp` (every slice comparison: B+tree key searches, names) compares 8-byte words where
//! `compiler_builtins`' compares byte by byte; a 1 MiB write to a dbfs file spent a sixth of
//! its translated blocks there, in the key searches of its tree inserts. Same layout: bytes up
//! to an aligned first address, then words (the second address's words joined with shifts
//! when it is aligned otherwise), a differing word compared again byte by byte.
//!
//! `memmove` stays `compiler_builtins`' (it is used for short shifts inside B+tree pages).
//! Checked at boot by [`selftest`] (kernel parameter `mem_selftest=1`, set by `make test-guest`)
//! against a byte-by-byte reference, for every length up to 300 and every alignment pair.

core::arch::global_asm!(
    r#"
    .section .text.memcpy
    .globl memcpy
    .type memcpy, @function
    .p2align 2
# memcpy(a0 = dst, a1 = src, a2 = n) -> a0; a3 = running dst
memcpy:
    mv      a3, a0
    li      t0, 16
    bltu    a2, t0, .Lcpy_bytes
    xor     t1, a0, a1
    andi    t1, t1, 7
    andi    t2, a3, 7
    beqz    t2, .Lcpy_dst_aligned
.Lcpy_head:
    lb      t3, 0(a1)
    sb      t3, 0(a3)
    addi    a1, a1, 1
    addi    a3, a3, 1
    addi    a2, a2, -1
    andi    t2, a3, 7
    bnez    t2, .Lcpy_head
.Lcpy_dst_aligned:
    bnez    t1, .Lcpy_shift
    andi    a5, a2, -64
    beqz    a5, .Lcpy_words
    add     a5, a5, a3
.Lcpy_block:
    ld      t0, 0(a1)
    ld      t1, 8(a1)
    ld      t2, 16(a1)
    ld      t3, 24(a1)
    ld      t4, 32(a1)
    ld      t5, 40(a1)
    ld      t6, 48(a1)
    ld      a4, 56(a1)
    sd      t0, 0(a3)
    sd      t1, 8(a3)
    sd      t2, 16(a3)
    sd      t3, 24(a3)
    sd      t4, 32(a3)
    sd      t5, 40(a3)
    sd      t6, 48(a3)
    sd      a4, 56(a3)
    addi    a1, a1, 64
    addi    a3, a3, 64
    bltu    a3, a5, .Lcpy_block
    andi    a2, a2, 63
.Lcpy_words:
    andi    a5, a2, -8
    beqz    a5, .Lcpy_bytes
    add     a5, a5, a3
.Lcpy_word:
    ld      t0, 0(a1)
    sd      t0, 0(a3)
    addi    a1, a1, 8
    addi    a3, a3, 8
    bltu    a3, a5, .Lcpy_word
    andi    a2, a2, 7
.Lcpy_bytes:
    beqz    a2, .Lcpy_done
    add     a5, a3, a2
.Lcpy_byte:
    lb      t0, 0(a1)
    sb      t0, 0(a3)
    addi    a1, a1, 1
    addi    a3, a3, 1
    bltu    a3, a5, .Lcpy_byte
.Lcpy_done:
    ret
# dst is 8-aligned, src is not (k = src & 7 > 0), at least 9 bytes left: every destination
# word is (previous aligned source word >> 8k) | (next one << (64 - 8k)).
.Lcpy_shift:
    andi    a4, a2, -8
    add     a5, a4, a3
    andi    t1, a1, 7
    slli    t1, t1, 3
    neg     t2, t1
    andi    t3, a1, -8
    ld      t4, 0(t3)
.Lcpy_shift_word:
    ld      t5, 8(t3)
    srl     t0, t4, t1
    sll     t6, t5, t2
    or      t0, t0, t6
    sd      t0, 0(a3)
    mv      t4, t5
    addi    t3, t3, 8
    addi    a3, a3, 8
    bltu    a3, a5, .Lcpy_shift_word
    add     a1, a1, a4
    andi    a2, a2, 7
    j       .Lcpy_bytes
    .size memcpy, . - memcpy

    .section .text.memset
    .globl memset
    .type memset, @function
    .p2align 2
# memset(a0 = dst, a1 = byte, a2 = n) -> a0; a3 = running dst
memset:
    mv      a3, a0
    li      t0, 16
    bltu    a2, t0, .Lset_bytes
    andi    a1, a1, 0xff
    slli    t0, a1, 8
    or      a1, a1, t0
    slli    t0, a1, 16
    or      a1, a1, t0
    slli    t0, a1, 32
    or      a1, a1, t0
    andi    t2, a3, 7
    beqz    t2, .Lset_dst_aligned
.Lset_head:
    sb      a1, 0(a3)
    addi    a3, a3, 1
    addi    a2, a2, -1
    andi    t2, a3, 7
    bnez    t2, .Lset_head
.Lset_dst_aligned:
    andi    a5, a2, -64
    beqz    a5, .Lset_words
    add     a5, a5, a3
.Lset_block:
    sd      a1, 0(a3)
    sd      a1, 8(a3)
    sd      a1, 16(a3)
    sd      a1, 24(a3)
    sd      a1, 32(a3)
    sd      a1, 40(a3)
    sd      a1, 48(a3)
    sd      a1, 56(a3)
    addi    a3, a3, 64
    bltu    a3, a5, .Lset_block
    andi    a2, a2, 63
.Lset_words:
    andi    a5, a2, -8
    beqz    a5, .Lset_bytes
    add     a5, a5, a3
.Lset_word:
    sd      a1, 0(a3)
    addi    a3, a3, 8
    bltu    a3, a5, .Lset_word
    andi    a2, a2, 7
.Lset_bytes:
    beqz    a2, .Lset_done
    add     a5, a3, a2
.Lset_byte:
    sb      a1, 0(a3)
    addi    a3, a3, 1
    bltu    a3, a5, .Lset_byte
.Lset_done:
    ret
    .size memset, . - memset

    .section .text.memcmp
    .globl memcmp
    .type memcmp, @function
    .globl bcmp
    .type bcmp, @function
    .p2align 2
# memcmp(a0 = s1, a1 = s2, a2 = n) -> a0: the first differing bytes' difference (as unsigned
# bytes), 0 if the ranges are equal. bcmp (equal or not) is the same routine.
memcmp:
bcmp:
    li      t0, 16
    bltu    a2, t0, .Lcmp_bytes
    andi    t2, a0, 7
    beqz    t2, .Lcmp_s1_aligned
.Lcmp_head:
    lbu     t3, 0(a0)
    lbu     t4, 0(a1)
    bne     t3, t4, .Lcmp_diff
    addi    a0, a0, 1
    addi    a1, a1, 1
    addi    a2, a2, -1
    andi    t2, a0, 7
    bnez    t2, .Lcmp_head
# s1 is 8-aligned and at least 9 bytes are left: whole words while they are equal; a word
# that differs is compared again byte by byte (little-endian: its first byte in memory is
# its lowest), which finds the first difference.
.Lcmp_s1_aligned:
    andi    a4, a2, -8
    add     a5, a0, a4
    andi    t1, a1, 7
    bnez    t1, .Lcmp_shift
.Lcmp_word:
    ld      t3, 0(a0)
    ld      t4, 0(a1)
    bne     t3, t4, .Lcmp_last_word
    addi    a0, a0, 8
    addi    a1, a1, 8
    bltu    a0, a5, .Lcmp_word
    andi    a2, a2, 7
    j       .Lcmp_bytes
# s2 is not aligned (k = s2 & 7 > 0): each s2 word is (previous aligned word >> 8k) | (next
# one << (64 - 8k)), as in memcpy; every load holds a byte that is compared.
.Lcmp_shift:
    slli    t1, t1, 3
    neg     t2, t1
    andi    t5, a1, -8
    ld      t4, 0(t5)
.Lcmp_shift_word:
    ld      t6, 8(t5)
    srl     t3, t4, t1
    sll     a6, t6, t2
    or      t3, t3, a6
    ld      a7, 0(a0)
    bne     a7, t3, .Lcmp_last_word
    mv      t4, t6
    addi    t5, t5, 8
    addi    a0, a0, 8
    addi    a1, a1, 8
    bltu    a0, a5, .Lcmp_shift_word
    andi    a2, a2, 7
    j       .Lcmp_bytes
.Lcmp_last_word:
    li      a2, 8
.Lcmp_bytes:
    beqz    a2, .Lcmp_equal
    add     a5, a0, a2
.Lcmp_byte:
    lbu     t3, 0(a0)
    lbu     t4, 0(a1)
    bne     t3, t4, .Lcmp_diff
    addi    a0, a0, 1
    addi    a1, a1, 1
    bltu    a0, a5, .Lcmp_byte
.Lcmp_equal:
    li      a0, 0
    ret
.Lcmp_diff:
    sub     a0, t3, t4
    ret
    .size memcmp, . - memcmp
    .size bcmp, . - bcmp
"#
);

use alloc::format;
use alloc::string::String;

extern "C" {
    fn memcpy(dst: *mut u8, src: *const u8, n: usize) -> *mut u8;
    fn memset(dst: *mut u8, c: i32, n: usize) -> *mut u8;
    fn memcmp(a: *const u8, b: *const u8, n: usize) -> i32;
    fn bcmp(a: *const u8, b: *const u8, n: usize) -> i32;
}

/// Longest length [`selftest`] tries: past several 64-byte blocks, with every remainder.
const MAX_LEN: usize = 300;
/// Bytes around the destination range that must stay untouched.
const GUARD: usize = 16;
const FILL: u8 = 0xEE;

/// Run `memcpy` and `memset` for every length 0..=[`MAX_LEN`], every source and destination
/// offset mod 8, and compare each byte (and the guard bytes around the range) with what a
/// byte loop would leave. Reference values are written and read with volatile accesses, so
/// the compiler cannot turn the checks themselves into calls of the routines under test.
pub fn selftest() -> Result<(), String> {
    let mut src = [0u8; MAX_LEN + 8];
    let mut dst = [0u8; MAX_LEN + 8 + 2 * GUARD];
    let pattern = |i: usize| (i.wrapping_mul(7) ^ (i >> 3)) as u8 ^ 0x5A;
    for (i, b) in src.iter_mut().enumerate() {
        // SAFETY: `b` is a valid, exclusive reference.
        unsafe { core::ptr::write_volatile(b, pattern(i)) };
    }
    let sp = src.as_ptr();
    for d in 0..8 {
        for len in 0..=MAX_LEN {
            for so in 0..8 {
                // SAFETY: `check` passes a destination with `len` bytes of room; [so, so + len)
                // lies inside `src`, which does not overlap `dst`.
                check(
                    &mut dst,
                    d,
                    len,
                    || format!("memcpy(dst+{d}, src+{so}, {len})"),
                    |p| unsafe { memcpy(p, sp.add(so), len) },
                    |k| pattern(so + k),
                )?;
            }
            // Only the low byte of the value counts (0xA5), as C's memset says.
            // SAFETY: as above.
            check(
                &mut dst,
                d,
                len,
                || format!("memset(dst+{d}, 0xa5, {len})"),
                |p| unsafe { memset(p, 0x1A5, len) },
                |_| 0xA5,
            )?;
        }
    }
    compare_selftest(&src)
}

/// `memcmp` and `bcmp` of ranges of `src` against copies of them at every offset mod 8 from
/// each other, for every length 0..=[`MAX_LEN`]: equal, then with one byte changed (first,
/// middle, last; up and down), each sign checked against a byte loop's answer.
fn compare_selftest(src: &[u8]) -> Result<(), String> {
    let mut other = [0u8; MAX_LEN + 16];
    let op = other.as_mut_ptr();
    for len in 0..=MAX_LEN {
        for so in 0..8 {
            for oo in 0..8 {
                // A copy of src[so..so + len] at other[oo..], written byte by byte.
                for k in 0..len {
                    // SAFETY: oo + k < MAX_LEN + 8 and so + k < src.len().
                    unsafe { core::ptr::write_volatile(op.add(oo + k), src[so + k]) };
                }
                let a = src[so..].as_ptr();
                // SAFETY: oo + len <= MAX_LEN + 7 < other.len().
                let b = unsafe { op.add(oo) };
                let what = |at: Option<(usize, u8)>| {
                    format!("memcmp(src+{so}, other+{oo}, {len}) with byte {at:?} changed")
                };
                compare_once(a, b, len, 0, || what(None))?;
                let spots = [0, len / 2, len.saturating_sub(1)];
                for at in spots.into_iter().filter(|_| len > 0) {
                    // SAFETY: at < len, inside the copy.
                    let keep = unsafe { core::ptr::read_volatile(b.add(at)) };
                    for new in [keep.wrapping_add(1), keep.wrapping_sub(1)] {
                        // SAFETY: as above.
                        unsafe { core::ptr::write_volatile(b.add(at), new) };
                        let want = i32::from(src[so + at]) - i32::from(new);
                        compare_once(a, b, len, want, || what(Some((at, new))))?;
                        // SAFETY: as above.
                        unsafe { core::ptr::write_volatile(b.add(at), keep) };
                    }
                }
            }
        }
    }
    Ok(())
}

/// `memcmp(a, b, len)` must have `want`'s sign and `bcmp` must be zero exactly when it is.
fn compare_once(
    a: *const u8,
    b: *const u8,
    len: usize,
    want: i32,
    what: impl Fn() -> String,
) -> Result<(), String> {
    // SAFETY: the callers pass `len` readable bytes at both addresses.
    let (got, eq) = unsafe { (memcmp(a, b, len), bcmp(a, b, len)) };
    if got.signum() != want.signum() || (eq == 0) != (want == 0) {
        return Err(format!(
            "{}: memcmp {got}, bcmp {eq}, expected the sign of {want}",
            what()
        ));
    }
    Ok(())
}

/// Fill `dst` with [`FILL`], run `op` on the `len` bytes at [`GUARD`]` + d`, and check that it
/// returned that address, left byte `k` of the range equal to `want(k)` and every byte around
/// the range untouched.
fn check(
    dst: &mut [u8],
    d: usize,
    len: usize,
    what: impl Fn() -> String,
    op: impl FnOnce(*mut u8) -> *mut u8,
    want: impl Fn(usize) -> u8,
) -> Result<(), String> {
    let dp = dst.as_mut_ptr();
    let start = GUARD + d;
    for i in 0..dst.len() {
        // SAFETY: i < dst.len().
        unsafe { core::ptr::write_volatile(dp.add(i), FILL) };
    }
    // SAFETY: start + len <= MAX_LEN + 8 + GUARD < dst.len().
    let at = unsafe { dp.add(start) };
    if op(at) != at {
        return Err(format!("{} returned another pointer", what()));
    }
    for i in 0..dst.len() {
        // SAFETY: i < dst.len().
        let got = unsafe { core::ptr::read_volatile(dp.add(i)) };
        let expect = if (start..start + len).contains(&i) {
            want(i - start)
        } else {
            FILL
        };
        if got != expect {
            return Err(format!(
                "{}: byte {} is {got:#x}, not {expect:#x}",
                what(),
                i as isize - start as isize
            ));
        }
    }
    Ok(())
}

/// The size of the buffers [`copy_cost`] copies (a page).
pub const PAGE: usize = super::layout::PAGE_SIZE;

/// Copies [`copy_cost`] times.
const COST_COPIES: u64 = 10_000;

/// Nanoseconds per `memcpy` of one 4 KiB page into another (both page-aligned, through
/// their direct-map addresses, as `copy_out` writes a user frame), the average of
/// [`COST_COPIES`] copies of `src` (a page-aligned page, as the caller's frames are) into
/// `dst`. Under QEMU's `-icount shift=0`
/// a nanosecond is one instruction, so this is the copy half of the floor a 4 KiB `pread`
/// is measured against (`make syscost-icount`, docs/BENCHMARKS.md): the other half, a
/// null system call, is `getppid` timed by `/bin/syscost`. Measured in the kernel because
/// no existing system call copies 4 KiB to the user with nothing else around it.
pub fn copy_cost(src: &[u8; PAGE], dst: &mut [u8; PAGE]) -> u64 {
    let (s, d) = (src.as_ptr(), dst.as_mut_ptr());
    let start = super::time::monotonic_ns();
    for _ in 0..COST_COPIES {
        // SAFETY: two distinct buffers (one borrowed shared, one exclusive) of PAGE bytes.
        unsafe { memcpy(d, s, PAGE) };
    }
    (super::time::monotonic_ns() - start) / COST_COPIES
}
