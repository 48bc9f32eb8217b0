//! `/proc/config.gz`: the kernel's configuration (`kernel/kconfig`, Linux's `CONFIG_` names
//! for what this kernel has and lacks) as a gzip file, as Linux's `CONFIG_IKCONFIG_PROC`
//! serves it; `zcat /proc/config.gz` prints it. LTP's `tst_kconfig` reads it to decide
//! which cases apply.
//!
//! The text is stored in the kernel image and wrapped at each read in gzip's framing with
//! deflate's uncompressed ("stored") blocks: a valid gzip stream every reader accepts,
//! without a compressor in the kernel (the file is a few KiB).

use alloc::vec::Vec;

/// The configuration, in `.config` format.
pub const KCONFIG: &str = include_str!("../../kconfig");

/// CRC-32 (IEEE 802.3, reflected, as gzip's trailer has it), bit by bit.
fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= b as u32;
        for _ in 0..8 {
            let mask = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (0xEDB8_8320 & mask);
        }
    }
    !crc
}

/// `data` as a gzip stream (RFC 1952) of stored deflate blocks (RFC 1951, BTYPE 00).
pub fn gzip_stored(data: &[u8]) -> Vec<u8> {
    const MAX_BLOCK: usize = 0xffff;
    let mut out = Vec::with_capacity(data.len() + data.len() / MAX_BLOCK * 5 + 32);
    // ID1 ID2, CM = deflate, no flags, no mtime, XFL 0, OS = Unix.
    out.extend_from_slice(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3]);
    let mut chunks = data.chunks(MAX_BLOCK).peekable();
    if chunks.peek().is_none() {
        // One final empty block.
        out.extend_from_slice(&[1, 0, 0, 0xff, 0xff]);
    }
    while let Some(chunk) = chunks.next() {
        let last = chunks.peek().is_none();
        let len = chunk.len() as u16;
        out.push(last as u8); // BFINAL, BTYPE 00; the rest of the byte is padding
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(chunk);
    }
    out.extend_from_slice(&crc32(data).to_le_bytes());
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out
}

/// The bytes of `/proc/config.gz`.
pub fn config_gz() -> Vec<u8> {
    gzip_stored(KCONFIG.as_bytes())
}
