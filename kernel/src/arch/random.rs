//! Random bytes for `getrandom`, `/dev/urandom` and AT_RANDOM: the workspace's xorshift64*
//! generator (`xrand`), seeded from the `time` CSR at first use and reseeded with it on every
//! call, so two boots (and two calls) differ. Unpredictable enough for hash seeds and
//! temporary names, not for cryptography.

use super::lockcheck::{rank, SpinLock};
use xrand::XorShift64;

static GEN: SpinLock<Option<XorShift64>, { rank::RANDOM }> = SpinLock::new(None);

/// Fill `buf` with random bytes.
pub fn fill(buf: &mut [u8]) {
    let mut g = GEN.lock();
    let gen = g.get_or_insert_with(|| XorShift64::new(super::csr::time()));
    // Stir in the clock: the generator's next state depends on when it was asked.
    let stir = gen.next_u64() ^ super::csr::time().wrapping_mul(0x9e37_79b9_7f4a_7c15);
    *gen = XorShift64::new(stir);
    gen.fill_bytes(buf);
}
