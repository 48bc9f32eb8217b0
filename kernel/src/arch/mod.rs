//! RISC-V specifics: the boot entry, CSR access, the SBI calls, the console UART, the clock and
//! power-off. Everything that needs inline assembly outside trap entry and context switch
//! lives here.

pub mod console;
pub mod csr;
pub mod mem;
pub mod power;
pub mod time;

core::arch::global_asm!(
    r#"
    .section .text.entry
    .globl _start
_start:
    # a0 = hart id, a1 = device tree address (OpenSBI's convention)
    la sp, boot_stack_top
    call rust_main
1:  j 1b

    .section .bss.stack
    .align 12
    .globl boot_stack_lower
boot_stack_lower:
    .space 4096 * 32
    .globl boot_stack_top
boot_stack_top:
"#
);
