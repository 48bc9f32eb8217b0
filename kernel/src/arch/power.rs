//! Ending the machine: through QEMU's `sifive,test0` device when the device tree has one
//! (so the host sees our exit status), else the SBI system-reset call.

use core::sync::atomic::{AtomicUsize, Ordering};

static TEST_DEVICE: AtomicUsize = AtomicUsize::new(0);

pub fn init(test_device: Option<usize>) {
    TEST_DEVICE.store(test_device.unwrap_or(0), Ordering::Relaxed);
}

/// Power off; QEMU exits with status `code` (0..=255).
pub fn shutdown(code: u32) -> ! {
    let base = TEST_DEVICE.load(Ordering::Relaxed);
    if base != 0 {
        // 0x5555 = pass (exit 0); (code << 16) | 0x3333 = fail with exit status `code`.
        let value: u32 = if code == 0 {
            0x5555
        } else {
            ((code & 0xffff) << 16) | 0x3333
        };
        // SAFETY: `base` is the test device's MMIO address from the device tree, in the
        // direct map; the write ends the machine.
        unsafe { (base as *mut u32).write_volatile(value) };
    }
    if code == 0 {
        let _ = sbi_rt::system_reset(sbi_rt::Shutdown, sbi_rt::NoReason);
    } else {
        let _ = sbi_rt::system_reset(sbi_rt::Shutdown, sbi_rt::SystemFailure);
    }
    loop {
        core::hint::spin_loop();
    }
}
