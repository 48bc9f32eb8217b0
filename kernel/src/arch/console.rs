//! The console: an NS16550A UART found in the device tree (QEMU `virt` has one at
//! 0x1000_0000), with the SBI console as fallback before the device tree is read.

use core::fmt::{self, Write};
use core::sync::atomic::{AtomicUsize, Ordering};

use super::lockcheck::{rank, SpinLock};

static UART_BASE: AtomicUsize = AtomicUsize::new(0);
static LOCK: SpinLock<(), { rank::CONSOLE }> = SpinLock::new(());

/// Use the UART at `base` from now on.
pub fn init_uart(base: usize) {
    UART_BASE.store(base, Ordering::Relaxed);
}

fn putc(c: u8) {
    let base = UART_BASE.load(Ordering::Relaxed);
    if base == 0 {
        #[allow(deprecated)]
        sbi_rt::legacy::console_putchar(c as usize);
        return;
    }
    // SAFETY: `base` is the UART's MMIO address from the device tree, in the direct map of every
    // page table; LSR (offset 5) bit 5 says the transmit holding register (offset 0) is empty.
    unsafe {
        let lsr = (base + 5) as *const u8;
        while lsr.read_volatile() & 0x20 == 0 {}
        (base as *mut u8).write_volatile(c);
    }
}

/// One byte from the console if one is waiting.
pub fn getc() -> Option<u8> {
    let base = UART_BASE.load(Ordering::Relaxed);
    if base == 0 {
        #[allow(deprecated)]
        let c = sbi_rt::legacy::console_getchar();
        return if c == usize::MAX { None } else { Some(c as u8) };
    }
    // SAFETY: as in `putc`; LSR bit 0 says the receive buffer (offset 0) holds a byte.
    unsafe {
        if ((base + 5) as *const u8).read_volatile() & 1 == 0 {
            None
        } else {
            Some((base as *const u8).read_volatile())
        }
    }
}

/// Write bytes to the console exactly as given (the terminal's output processing is `tty`'s).
pub fn write_raw(bytes: &[u8]) {
    let _guard = LOCK.lock();
    for &b in bytes {
        putc(b);
    }
}

/// Write bytes to the console, translating `\n` to `\r\n`.
pub fn write_bytes(bytes: &[u8]) {
    let _guard = LOCK.lock();
    for &b in bytes {
        if b == b'\n' {
            putc(b'\r');
        }
        putc(b);
    }
}

struct Console;
impl Write for Console {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        write_bytes(s.as_bytes());
        Ok(())
    }
}

pub fn print(args: fmt::Arguments) {
    let _ = Console.write_fmt(args);
}

#[macro_export]
macro_rules! print {
    ($($arg:tt)*) => { $crate::arch::console::print(format_args!($($arg)*)) };
}

#[macro_export]
macro_rules! println {
    () => { $crate::print!("\n") };
    ($($arg:tt)*) => { $crate::arch::console::print(format_args!("{}\n", format_args!($($arg)*))) };
}

/// The `log` crate's sink: `[LEVEL] message` on the console.
struct Logger;
impl log::Log for Logger {
    fn enabled(&self, _: &log::Metadata) -> bool {
        true
    }
    fn log(&self, record: &log::Record) {
        if self.enabled(record.metadata()) {
            crate::println!("[{:5}] {}", record.level(), record.args());
        }
    }
    fn flush(&self) {}
}

pub fn init_logger(level: log::LevelFilter) {
    static LOGGER: Logger = Logger;
    let _ = log::set_logger(&LOGGER);
    log::set_max_level(level);
}
