//! Random bytes for `getrandom`, `/dev/urandom` and AT_RANDOM: a xorshift64* generator
//! seeded from the cycle-accurate `time` CSR at first use and stirred with it on every call.
//! Unpredictable enough for hash seeds and temporary names, not for cryptography.

use core::sync::atomic::{AtomicU64, Ordering};

static STATE: AtomicU64 = AtomicU64::new(0);

fn next() -> u64 {
    let mut x = STATE.load(Ordering::Relaxed);
    x ^= super::csr::time().wrapping_mul(0x9e37_79b9_7f4a_7c15);
    if x == 0 {
        x = 0x853c_49e6_748f_ea9b;
    }
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    STATE.store(x, Ordering::Relaxed);
    x.wrapping_mul(0x2545_f491_4f6c_dd1d)
}

/// Fill `buf` with random bytes.
pub fn fill(buf: &mut [u8]) {
    for chunk in buf.chunks_mut(8) {
        let v = next().to_le_bytes();
        chunk.copy_from_slice(&v[..chunk.len()]);
    }
}
