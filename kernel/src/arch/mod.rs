//! RISC-V specifics: the boot entry, CSR access, the SBI calls, the console UART, the clock and
//! power-off. Everything that needs inline assembly outside trap entry and context switch
//! lives here.
//!
//! Boot: OpenSBI enters `_start` at the kernel's physical load address (0x8020_0000) with
//! paging off, but the kernel is linked in the upper half, at `mm::PHYS_OFFSET + 0x8020_0000`
//! (`linker.ld`). `_start` turns on Sv39 with `BOOT_PAGE_TABLE`, which maps the first 4 GiB of
//! physical memory twice with 1 GiB pages: at `mm::PHYS_OFFSET` (the direct map) and, for the
//! RAM gigabyte the code runs in, at its own address (so the instruction after the `satp`
//! write still executes). It then jumps to `rust_main` at its linked address with the boot
//! stack's linked address in `sp`; from there on no code runs at a physical address, and
//! `mm::init` replaces the boot table with the kernel table (no identity mapping at all).

pub mod console;
pub mod csr;
pub mod hart;
pub mod layout;
pub mod lockcheck;
pub mod lockstat;
pub mod mem;
pub mod plic;
pub mod power;
pub mod random;
pub mod time;
pub mod trap;
pub mod vdso;

core::arch::global_asm!(
    r#"
    .section .text.entry
    .globl _start
_start:
    # a0 = hart id, a1 = device tree's physical address (OpenSBI's convention).
    # Paging is off: `lla` gives physical addresses here.
    # Only the first hart here boots. OpenSBI v1.1 can send a secondary hart that the kernel
    # starts through HSM here too, with the previous boot's arguments (see `hart.rs`,
    # `_start_late`): it would clear .bss under the running kernel and boot it a second time.
    lla t0, boot_claimed
    li t1, 1
    amoswap.w.aqrl t1, t1, (t0)
    beqz t1, 1f
    lla t0, _start_late
    jr t0
1:
    lla t0, {boot_pt}
    srli t0, t0, 12
    li t1, 8 << 60
    or t0, t0, t1
    csrw satp, t0
    sfence.vma
    li t1, {phys_offset}
    lla sp, boot_stack_top
    add sp, sp, t1
    lla t0, rust_main
    add t0, t0, t1
    jr t0

    .section .data
    .align 2
    # 0 until the first hart enters `_start` (in .data, not .bss: clearing .bss must not reset it).
boot_claimed:
    .word 0

    .section .bss.stack
    .align 12
    .globl boot_stack_lower
boot_stack_lower:
    .space 4096 * 32
    .globl boot_stack_top
boot_stack_top:
"#,
    boot_pt = sym BOOT_PAGE_TABLE,
    phys_offset = const layout::PHYS_OFFSET,
);

/// A root page table with 512 entries, page-aligned as `satp` requires.
#[repr(C, align(4096))]
struct RootTable([usize; 512]);

/// The page table `_start` runs `rust_main` with (see the module docs): physical 0..4 GiB at
/// `PHYS_OFFSET` (root entries 256..260), and the gigabyte at 0x8000_0000 also at its own
/// address (entry 2). Read-write-execute, global, accessed and dirty gigapages.
#[no_mangle]
static BOOT_PAGE_TABLE: RootTable = {
    const FLAGS: usize = 0xef; // V R W X G A D
    const fn gigapage(pa: usize) -> usize {
        ((pa >> 12) << 10) | FLAGS
    }
    let mut t = [0usize; 512];
    t[2] = gigapage(0x8000_0000);
    let first = (layout::PHYS_OFFSET >> 30) & 0x1ff;
    let mut g = 0;
    while g < 4 {
        t[first + g] = gigapage(g << 30);
        g += 1;
    }
    RootTable(t)
};

extern "C" {
    fn boot_stack_lower();
    fn boot_stack_top();
}

/// What [`paint_boot_stack`] fills the boot stack's unused part with.
const STACK_PAINT: u64 = 0x5354_4b5f_5041_494e;
/// The lowest bytes of the boot stack that must stay painted: [`check_boot_stack`] panics
/// when they were written (the stack ran into them, and a few bytes more would have run into
/// `.data`, which the linker places right below it with no guard page).
const STACK_RED_ZONE: usize = 1024;

/// Fill the boot stack below the caller's frame with [`STACK_PAINT`] (first thing at boot),
/// so [`boot_stack_used`] can tell how deep it went and [`check_boot_stack`] whether it
/// overflowed.
#[inline(never)]
pub fn paint_boot_stack() {
    let sp: usize;
    // SAFETY: reading `sp`.
    unsafe { core::arch::asm!("mv {}, sp", out(reg) sp) };
    let lower = boot_stack_lower as *const () as usize;
    let mut p = lower;
    // Leave 512 bytes below `sp` alone: this function's own calls run there.
    while p + 8 <= sp - 512 {
        // SAFETY: [lower, sp - 512) is the boot stack's unused part (the stack grows down
        // from `boot_stack_top`, and this hart runs nothing below `sp` but this loop).
        unsafe { core::ptr::write_volatile(p as *mut u64, STACK_PAINT) };
        p += 8;
    }
}

/// The most of the boot stack used since [`paint_boot_stack`], in bytes.
pub fn boot_stack_used() -> usize {
    let lower = boot_stack_lower as *const () as usize;
    let top = boot_stack_top as *const () as usize;
    let mut p = lower;
    // SAFETY: reading the boot stack's painted words, which only this hart's stack writes.
    while p < top && unsafe { core::ptr::read_volatile(p as *const u64) } == STACK_PAINT {
        p += 8;
    }
    top - p
}

/// Panic if the boot stack reached its lowest [`STACK_RED_ZONE`] bytes (an overflow into
/// `.data` would corrupt statics silently). Called at boot after mounting and by the boot
/// hart's scheduler loop at every switch.
pub fn check_boot_stack() {
    let lower = boot_stack_lower as *const () as usize;
    let touched = (lower..lower + STACK_RED_ZONE)
        .step_by(8)
        // SAFETY: reading the boot stack's lowest words, which only this hart's stack writes.
        .any(|p| unsafe { core::ptr::read_volatile(p as *const u64) } != STACK_PAINT);
    assert!(
        !touched,
        "the boot stack ran into its last {} bytes ({} bytes used)",
        STACK_RED_ZONE,
        boot_stack_used()
    );
}

/// After a panic's message: the words near the top of the stack that point into the kernel's
/// code, innermost first: return addresses of the functions on the stack, and stale ones of
/// functions that were (a scan, not an unwinder). `addr2line -f -i -e KERNEL ADDR...` names
/// them. The scan reads 2 KiB above `sp`: a kernel stack is 16 KiB or more and sits in the
/// direct map, so the words past its top are readable memory, whatever they hold.
pub fn print_return_addresses() {
    extern "C" {
        fn skernel();
        fn etext();
    }
    let text = skernel as *const () as usize..etext as *const () as usize;
    let sp: usize;
    // SAFETY: reads the stack pointer.
    unsafe { core::arch::asm!("mv {}, sp", out(reg) sp) };
    crate::print!("[kernel] code addresses on the stack:");
    let mut shown = 0;
    for i in 0..256 {
        // SAFETY: `sp` is 8-aligned and the 2 KiB above it are mapped (above).
        let w = unsafe { core::ptr::read_volatile((sp as *const usize).add(i)) };
        if text.contains(&w) && shown < 32 {
            crate::print!(" {:#x}", w);
            shown += 1;
        }
    }
    crate::println!();
}
