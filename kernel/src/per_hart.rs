//! Per-hart data, sized and laid out for every layer: the most harts the kernel drives, and
//! the cache line a hart's own slot of a per-hart array gets ([`Padded`]). `arch::hart`
//! re-exports both and says which hart runs (`hart::index`).

/// The most harts the kernel drives (QEMU `virt` with `-smp 8`).
pub const MAX_HARTS: usize = 8;

/// A value alone in its cache line (64 bytes): per-hart slots that their harts write on every
/// trap or system call, so that two harts never write one line. Under QEMU's multi-threaded
/// TCG a guest line is a host line, and two host cores storing into one line pass it back and
/// forth on every store (false sharing), which slows both.
#[repr(align(64))]
pub struct Padded<T>(pub T);

impl<T> core::ops::Deref for Padded<T> {
    type Target = T;
    #[inline(always)]
    fn deref(&self) -> &T {
        &self.0
    }
}
