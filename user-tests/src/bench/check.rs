//! The data check: every 4 KiB block written carries its own file offset in its first and last
//! 8 bytes, and reads check both words of every block.

use alloc::format;
use alloc::vec::Vec;

use super::failure::Failure;
use super::options::Target;

/// The block size of the data check.
pub(super) const CHECK_BLOCK: usize = 4096;

pub(super) const STAMP_KEY: u64 = 0xD8F5_0FF5_E700_0000;

/// Stamp every 4 KiB block of `buf` (which will land at file offset `off`) with its offset.
pub fn stamp(buf: &mut [u8], off: u64) {
    for (i, block) in buf.chunks_mut(CHECK_BLOCK).enumerate() {
        let tag = (off + (i * CHECK_BLOCK) as u64) ^ STAMP_KEY;
        let n = block.len();
        if n >= 16 {
            block[..8].copy_from_slice(&tag.to_le_bytes());
            block[n - 8..].copy_from_slice(&(!tag).to_le_bytes());
        }
    }
}

/// Check the stamps of `buf`, read from file offset `off`; the first bad offset on mismatch.
pub fn verify(buf: &[u8], off: u64) -> Result<(), u64> {
    for (i, block) in buf.chunks(CHECK_BLOCK).enumerate() {
        let at = off + (i * CHECK_BLOCK) as u64;
        let tag = at ^ STAMP_KEY;
        let n = block.len();
        if n >= 16 && (block[..8] != tag.to_le_bytes() || block[n - 8..] != (!tag).to_le_bytes()) {
            return Err(at);
        }
    }
    Ok(())
}

/// A buffer of `len` bytes with a recognisable fill, stamped for offset 0.
pub(super) fn pattern_buffer(len: usize) -> Vec<u8> {
    let mut buf: Vec<u8> = (0..len).map(|i| (i / 8) as u8 ^ 0xA5).collect();
    stamp(&mut buf, 0);
    buf
}

pub(super) fn mismatch(target: &Target, at: u64) -> Failure {
    Failure {
        what: format!("DATA MISMATCH in {} at offset {at}", target.path),
        errno: None,
    }
}
