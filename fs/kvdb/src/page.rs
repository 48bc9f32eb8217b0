//! On-disk layout: page header, meta page, node (branch / leaf) pages, freelist pages.
//!
//! All integers are little-endian. Every accessor bounds-checks offsets and lengths read from a
//! page and returns [`Error::Corrupted`] instead of panicking: image bytes are untrusted.

use alloc::vec::Vec;
use core::ops::Range;

use crate::error::{Error, Result};

/// Index of a page in the store; page `i` starts at byte `i * page_size`. Pages 0 and 1 are the
/// meta pages, so 0 doubles as "no page" in tree roots and the freelist pointer.
pub type PageId = u64;

/// Size of the page header of node and freelist pages.
pub const HEADER_SIZE: usize = 16;
/// Size of one slot (leaf or branch) in a node page.
pub const SLOT_SIZE: usize = 16;
/// Bytes of a meta page that carry data (the rest of the page is zero).
pub const META_SIZE: usize = 80;
/// "KVDB" little-endian.
pub const MAGIC: u32 = 0x4244_564B;
/// On-disk format version.
pub const VERSION: u32 = 1;
/// Meta pages with a txid at or above this are corrupt (see [`Meta::decode`]).
pub const MAX_TXID: u64 = 1 << 63;
/// Smallest and largest supported page sizes.
pub const MIN_PAGE_SIZE: usize = 1024;
/// See [`MIN_PAGE_SIZE`].
pub const MAX_PAGE_SIZE: usize = 65536;

/// Page kinds, first field of the header.
pub const KIND_BRANCH: u16 = 1;
/// Leaf node page.
pub const KIND_LEAF: u16 = 2;
/// Freelist page (first page of the freelist extent), one page id per free page: what
/// earlier versions wrote; still read.
pub const KIND_FREELIST: u16 = 3;
/// Freelist page (first page of the freelist extent), one `(start, length)` run per 16 bytes.
pub const KIND_FREELIST_RUNS: u16 = 4;

/// Leaf slot flag: the value bytes are stored in the page.
pub const FLAG_INLINE: u32 = 0;
/// Leaf slot flag: the value is a bucket header (`root: u64, sequence: u64`).
pub const FLAG_BUCKET: u32 = 1;
/// Leaf slot flag: the value is an overflow reference (`first page: u64, length: u64`).
pub const FLAG_OVERFLOW: u32 = 2;

/// Size of the in-page part of bucket and overflow values.
pub const REF_SIZE: usize = 16;

/// Longest key for a page size: small enough that any node splits into halves that fit a page.
pub fn max_key_len(page_size: usize) -> usize {
    page_size / 8
}

/// Longest value stored inline in a leaf; longer values go to contiguous overflow pages.
pub fn max_inline_len(page_size: usize) -> usize {
    page_size / 6
}

/// Whether `page_size` is supported.
pub fn valid_page_size(page_size: usize) -> bool {
    page_size.is_power_of_two() && (MIN_PAGE_SIZE..=MAX_PAGE_SIZE).contains(&page_size)
}

pub(crate) fn get_u32(buf: &[u8], at: usize) -> Result<u32> {
    let b = buf
        .get(at..at.wrapping_add(4))
        .ok_or(Error::Corrupted("field out of page"))?;
    Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

pub(crate) fn get_u64(buf: &[u8], at: usize) -> Result<u64> {
    let b = buf
        .get(at..at.wrapping_add(8))
        .ok_or(Error::Corrupted("field out of page"))?;
    let mut a = [0u8; 8];
    a.copy_from_slice(b);
    Ok(u64::from_le_bytes(a))
}

pub(crate) fn put_u16(buf: &mut [u8], at: usize, v: u16) {
    buf[at..at + 2].copy_from_slice(&v.to_le_bytes());
}
pub(crate) fn put_u32(buf: &mut [u8], at: usize, v: u32) {
    buf[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
pub(crate) fn put_u64(buf: &mut [u8], at: usize, v: u64) {
    buf[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// FNV-1a, 64 bit: enough to tell a torn or stale meta page from a good one.
pub fn checksum(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Flag of a meta page (offset 12) that carries a commit record: see [`Meta::encode_record`].
pub const FLAG_RECORD: u32 = 1;
/// Bytes of one commit record entry: store offset (u64), length (u32), [`range_sum`] (u64).
pub const RECORD_ENTRY: usize = 20;
/// Where a meta page's commit record starts: its entry count (u32), then the entries.
const RECORD_AT: usize = META_SIZE;

/// Entries a meta page of `page_size` bytes has room for.
pub fn record_capacity(page_size: usize) -> usize {
    page_size.saturating_sub(RECORD_AT + 4) / RECORD_ENTRY
}

/// One entry of a commit record: `len` bytes at store offset `offset` whose [`range_sum`] is
/// `sum`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordEntry {
    /// Store offset of the range (a page boundary).
    pub offset: u64,
    /// Bytes in the range.
    pub len: u32,
    /// [`range_sum`] of the bytes written there.
    pub sum: u64,
}

/// A checksum of written bytes for commit records, eight bytes at a step (FNV-1a byte by byte
/// costs a multiply per byte, too much for every page a barrier writes): tells a page that
/// reached the disk from one that did not (stale or torn), not a defence against tampering.
pub fn range_sum(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut h = K ^ bytes.len() as u64;
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        h = (h ^ u64::from_le_bytes(b)).wrapping_mul(K);
        h ^= h >> 29;
    }
    for &b in words.remainder() {
        h = (h ^ b as u64).wrapping_mul(K);
        h ^= h >> 29;
    }
    h
}

/// The meta page: which tree and freelist make up committed transaction `txid`.
///
/// ```text
/// off size field
///   0   4  magic "KVDB"         24   8  root      (root bucket's tree, 0 = empty)
///   4   4  version              32   8  root_seq  (root bucket's sequence)
///   8   4  page_size            40   8  freelist  (first page, 0 = none)
///  12   4  flags (0)            48   8  freelist_pages
///  16   8  txid                 56   8  page_count (high-water mark)
///  64   8  record sum (0)       72   8  checksum  (FNV-1a of bytes 0..72)
///  80   4  record entries n     84  20n  entries: offset u64, length u32, range_sum u64
/// ```
/// Each barrier writes its meta to the page (0 or 1) not holding the newest durable meta, so that
/// one survives a torn write; open takes the valid meta with the highest txid.
///
/// Flags bit 0 ([`FLAG_RECORD`]): the page carries a commit record (from offset 80; its
/// [`range_sum`] at 64), the ranges the barrier wrote with their sums. Such a meta was written
/// together with those pages and one device flush covered them all (not a flush before the meta
/// as well), so the device may have kept the meta and lost some of the pages: open trusts it only
/// if every range still has its sum, and otherwise takes the other meta.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Meta {
    /// Bytes per page of this store, a power of two in [`MIN_PAGE_SIZE`]..=[`MAX_PAGE_SIZE`].
    pub page_size: u32,
    /// Id of the transaction this meta commits; the valid meta with the highest txid is current.
    pub txid: u64,
    /// Root page of the root bucket's B+tree (0: the store is empty).
    pub root: PageId,
    /// The root bucket's sequence counter (the one `Bucket::next_sequence` increments).
    pub root_seq: u64,
    /// First page of the freelist extent, which lists the pages free for reuse (0: none).
    pub freelist: PageId,
    /// Length of the freelist extent, in pages.
    pub freelist_pages: u64,
    /// Pages allocated so far (the high-water mark): every page id in use is below it.
    pub page_count: u64,
}

impl Meta {
    /// Serialise into the first [`META_SIZE`] bytes of `buf`.
    pub fn encode(&self, buf: &mut [u8]) {
        put_u32(buf, 0, MAGIC);
        put_u32(buf, 4, VERSION);
        put_u32(buf, 8, self.page_size);
        put_u32(buf, 12, 0);
        put_u64(buf, 16, self.txid);
        put_u64(buf, 24, self.root);
        put_u64(buf, 32, self.root_seq);
        put_u64(buf, 40, self.freelist);
        put_u64(buf, 48, self.freelist_pages);
        put_u64(buf, 56, self.page_count);
        put_u64(buf, 64, 0);
        let sum = checksum(&buf[..72]);
        put_u64(buf, 72, sum);
    }

    /// [`Meta::encode`] into a whole meta page `buf` with the commit record `record` (which
    /// fits: at most [`record_capacity`] entries).
    pub fn encode_record(&self, buf: &mut [u8], record: &[RecordEntry]) {
        let mut at = RECORD_AT + 4;
        for e in record {
            put_u64(buf, at, e.offset);
            put_u32(buf, at + 8, e.len);
            put_u64(buf, at + 12, e.sum);
            at += RECORD_ENTRY;
        }
        put_u32(buf, RECORD_AT, record.len() as u32);
        let sum = range_sum(&buf[RECORD_AT..at]);
        self.encode(buf);
        put_u32(buf, 12, FLAG_RECORD);
        put_u64(buf, 64, sum);
        let check = checksum(&buf[..72]);
        put_u64(buf, 72, check);
    }

    /// Whether the meta page `buf` (its first [`META_SIZE`] bytes, already decoded) carries a
    /// commit record.
    pub fn has_record(buf: &[u8]) -> bool {
        get_u32(buf, 12).is_ok_and(|f| f & FLAG_RECORD != 0)
    }

    /// The commit record of a whole meta page `buf` that has one ([`Meta::has_record`]).
    pub fn decode_record(buf: &[u8]) -> Result<Vec<RecordEntry>> {
        let n = get_u32(buf, RECORD_AT)? as usize;
        if n > record_capacity(buf.len()) {
            return Err(Error::Corrupted("bad commit record length"));
        }
        let end = RECORD_AT + 4 + n * RECORD_ENTRY;
        if get_u64(buf, 64)? != range_sum(&buf[RECORD_AT..end]) {
            return Err(Error::Corrupted("bad commit record checksum"));
        }
        (0..n)
            .map(|i| {
                let at = RECORD_AT + 4 + i * RECORD_ENTRY;
                Ok(RecordEntry {
                    offset: get_u64(buf, at)?,
                    len: get_u32(buf, at + 8)?,
                    sum: get_u64(buf, at + 12)?,
                })
            })
            .collect()
    }

    /// Parse and validate a meta page; every field is checked against the others.
    pub fn decode(buf: &[u8]) -> Result<Meta> {
        if buf.len() < META_SIZE {
            return Err(Error::Corrupted("meta page truncated"));
        }
        if get_u32(buf, 0)? != MAGIC {
            return Err(Error::Corrupted("bad meta magic"));
        }
        if get_u64(buf, 72)? != checksum(&buf[..72]) {
            return Err(Error::Corrupted("bad meta checksum"));
        }
        if get_u32(buf, 4)? != VERSION {
            return Err(Error::Corrupted("unsupported format version"));
        }
        let meta = Meta {
            page_size: get_u32(buf, 8)?,
            txid: get_u64(buf, 16)?,
            root: get_u64(buf, 24)?,
            root_seq: get_u64(buf, 32)?,
            freelist: get_u64(buf, 40)?,
            freelist_pages: get_u64(buf, 48)?,
            page_count: get_u64(buf, 56)?,
        };
        if !valid_page_size(meta.page_size as usize) {
            return Err(Error::Corrupted("bad page size"));
        }
        // Every write transaction takes txid + 1: a txid no store can reach by committing (one
        // commit per nanosecond would take 292 years to get to 2^63) is damage, and leaves room
        // for the commits of this mount.
        if meta.txid >= MAX_TXID {
            return Err(Error::Corrupted("bad txid"));
        }
        if meta.page_count < 2 || meta.page_count > u64::MAX / MAX_PAGE_SIZE as u64 {
            return Err(Error::Corrupted("bad page count"));
        }
        if meta.root == 1 || meta.root >= meta.page_count {
            return Err(Error::Corrupted("root page out of range"));
        }
        if meta.freelist != 0 {
            let end = meta.freelist.checked_add(meta.freelist_pages);
            if meta.freelist < 2
                || meta.freelist_pages == 0
                || end.is_none_or(|e| e > meta.page_count)
            {
                return Err(Error::Corrupted("freelist out of range"));
            }
        }
        Ok(meta)
    }
}

/// Node and freelist page header.
///
/// ```text
/// off size field
///   0   2  kind (1 branch, 2 leaf, 3 freelist)
///   2   2  reserved (0)
///   4   4  count (slots in a node page; page ids in a freelist)
///   8   8  id of this page (catches misdirected and stale pages)
/// ```
/// A node page then holds `count` slots of [`SLOT_SIZE`] bytes, then the key/value bytes the slots
/// point at (offsets are from the start of the page). Leaf slot: `flags u32, key_off u32,
/// key_len u32, val_len u32`, value bytes right after the key. Branch slot: `key_off u32,
/// key_len u32, child u64`; child `i` holds keys `>= key i` and `< key i+1` (key 0 is not compared).
/// A freelist page holds `count` page ids (u64) after the header, running on into the next pages
/// of its extent.
pub fn check_header(buf: &[u8], id: PageId, kind: u16) -> Result<usize> {
    if buf.len() < HEADER_SIZE {
        return Err(Error::Corrupted("page truncated"));
    }
    let found = u16::from_le_bytes([buf[0], buf[1]]);
    if found != kind {
        return Err(Error::Corrupted("unexpected page kind"));
    }
    if get_u64(buf, 8)? != id {
        return Err(Error::Corrupted("page id mismatch"));
    }
    Ok(get_u32(buf, 4)? as usize)
}

/// The kind of a node page and its slot count, validated so that every slot lies in the page.
pub fn node_header(buf: &[u8], id: PageId) -> Result<(bool, usize)> {
    if buf.len() < HEADER_SIZE {
        return Err(Error::Corrupted("page truncated"));
    }
    let kind = u16::from_le_bytes([buf[0], buf[1]]);
    let leaf = match kind {
        KIND_LEAF => true,
        KIND_BRANCH => false,
        _ => return Err(Error::Corrupted("not a node page")),
    };
    let count = check_header(buf, id, kind)?;
    if count > (buf.len() - HEADER_SIZE) / SLOT_SIZE {
        return Err(Error::Corrupted("slot count exceeds page"));
    }
    if !leaf && count == 0 {
        return Err(Error::Corrupted("empty branch page"));
    }
    Ok((leaf, count))
}

fn range_in(buf: &[u8], off: u32, len: u32) -> Result<Range<usize>> {
    let start = off as usize;
    let end = start
        .checked_add(len as usize)
        .ok_or(Error::Corrupted("slot overflows"))?;
    if start < HEADER_SIZE || end > buf.len() {
        return Err(Error::Corrupted("slot points outside page"));
    }
    Ok(start..end)
}

/// A decoded leaf slot: where its key and value bytes are in the page.
#[derive(Clone, Debug)]
pub struct LeafSlot {
    /// Where the value is: [`FLAG_INLINE`], [`FLAG_BUCKET`] or [`FLAG_OVERFLOW`].
    pub flags: u32,
    /// Byte range of the key in the page.
    pub key: Range<usize>,
    /// Byte range of the value (or of its [`REF_SIZE`]-byte reference) in the page.
    pub value: Range<usize>,
}

/// Slot `i` of a leaf page whose header was validated by [`node_header`] (`i < count`).
pub fn leaf_slot(buf: &[u8], i: usize) -> Result<LeafSlot> {
    let at = HEADER_SIZE + i * SLOT_SIZE;
    let flags = get_u32(buf, at)?;
    let key = range_in(buf, get_u32(buf, at + 4)?, get_u32(buf, at + 8)?)?;
    let value = range_in(buf, key.end as u32, get_u32(buf, at + 12)?)?;
    if flags > FLAG_OVERFLOW || (flags != FLAG_INLINE && value.len() != REF_SIZE) {
        return Err(Error::Corrupted("bad leaf slot flags"));
    }
    Ok(LeafSlot { flags, key, value })
}

/// Slot `i` of a branch page: the key range and the child page.
pub fn branch_slot(buf: &[u8], i: usize) -> Result<(Range<usize>, PageId)> {
    let at = HEADER_SIZE + i * SLOT_SIZE;
    let key = range_in(buf, get_u32(buf, at)?, get_u32(buf, at + 4)?)?;
    let child = get_u64(buf, at + 8)?;
    Ok((key, child))
}

/// The order of two keys, as `a.cmp(b)` gives it (bytes compared unsigned, then lengths), read
/// eight bytes at a time as big-endian words. Every B+tree search compares keys this way. A
/// slice comparison calls `memcmp`, whose generic version (the kernel's before it had its own)
/// loops byte by byte: dbfs's keys are mostly 16 bytes with equal first halves (one inode's
/// chunks), and the key searches of a 1 MiB write's tree inserts were a sixth of its work in
/// the guest. Here a 16-byte key is two word compares and no call of `memcmp`.
#[inline]
pub fn key_cmp(a: &[u8], b: &[u8]) -> core::cmp::Ordering {
    let n = a.len().min(b.len());
    // Eight bytes at `at` as a big-endian word (LLVM turns the copy into loads: no call).
    let word = |s: &[u8], at: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&s[at..at + 8]);
        u64::from_be_bytes(w)
    };
    let mut i = 0;
    while i + 8 <= n {
        let (x, y) = (word(a, i), word(b, i));
        if x != y {
            return x.cmp(&y);
        }
        i += 8;
    }
    while i < n {
        if a[i] != b[i] {
            return a[i].cmp(&b[i]);
        }
        i += 1;
    }
    a.len().cmp(&b.len())
}

/// Binary search of a leaf: `Ok(i)` if slot `i` holds `key`, `Err(i)` for the insertion point.
pub fn leaf_search(
    buf: &[u8],
    count: usize,
    key: &[u8],
) -> Result<core::result::Result<usize, usize>> {
    let (mut lo, mut hi) = (0usize, count);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let slot = leaf_slot(buf, mid)?;
        match key_cmp(&buf[slot.key], key) {
            core::cmp::Ordering::Less => lo = mid + 1,
            core::cmp::Ordering::Greater => hi = mid,
            core::cmp::Ordering::Equal => return Ok(Ok(mid)),
        }
    }
    Ok(Err(lo))
}

/// The child of a branch page to descend into for `key`: the last slot whose key is `<= key`,
/// or slot 0.
pub fn branch_search(buf: &[u8], count: usize, key: &[u8]) -> Result<usize> {
    // Find the first slot in 1..count whose key is > key; the child is the one before it.
    let (mut lo, mut hi) = (1usize, count);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let (k, _) = branch_slot(buf, mid)?;
        if key_cmp(&buf[k], key).is_le() {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    Ok(lo - 1)
}

/// Decode a 16-byte bucket or overflow reference.
pub fn decode_ref(bytes: &[u8]) -> Result<(u64, u64)> {
    Ok((get_u64(bytes, 0)?, get_u64(bytes, 8)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_cmp_orders_as_slices_do() {
        // Keys of every length to 20 over a small alphabet (0, 1, 0x7f, 0x80, 0xff: signedness
        // and word-boundary cases), many sharing long prefixes, all pairs compared.
        let alphabet = [0u8, 1, 0x7f, 0x80, 0xff];
        let mut keys: Vec<Vec<u8>> = Vec::new();
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for len in 0..=20usize {
            for _ in 0..12 {
                let key = (0..len)
                    .map(|_| {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        // Mostly zeros: long shared prefixes.
                        if seed.is_multiple_of(3) {
                            alphabet[(seed >> 8) as usize % alphabet.len()]
                        } else {
                            0
                        }
                    })
                    .collect();
                keys.push(key);
            }
        }
        for a in &keys {
            for b in &keys {
                assert_eq!(key_cmp(a, b), a.cmp(b), "{a:?} against {b:?}");
            }
        }
    }

    fn meta() -> Meta {
        Meta {
            page_size: 4096,
            txid: 7,
            root: 5,
            root_seq: 3,
            freelist: 9,
            freelist_pages: 1,
            page_count: 12,
        }
    }

    #[test]
    fn meta_roundtrip_and_checks() {
        let mut buf = [0u8; META_SIZE];
        meta().encode(&mut buf);
        assert_eq!(Meta::decode(&buf), Ok(meta()));
        for at in 0..META_SIZE {
            let mut bad = buf;
            bad[at] ^= 0x10;
            assert!(
                matches!(Meta::decode(&bad), Err(Error::Corrupted(_))),
                "byte {at}"
            );
        }
        let mut m = meta();
        m.root = 12;
        m.encode(&mut buf);
        assert_eq!(
            Meta::decode(&buf),
            Err(Error::Corrupted("root page out of range"))
        );
        m = meta();
        m.freelist_pages = 4;
        m.encode(&mut buf);
        assert_eq!(
            Meta::decode(&buf),
            Err(Error::Corrupted("freelist out of range"))
        );
        assert!(Meta::decode(&buf[..40]).is_err());
    }

    /// Found by fuzzing dbfs: a sealed meta with txid u64::MAX (or just below it, then a commit)
    /// opened, and a write transaction's `txid + 1` overflowed (a panic with overflow checks).
    #[test]
    fn unreachable_txids_are_rejected() {
        let mut buf = [0u8; META_SIZE];
        let mut m = meta();
        for txid in [u64::MAX, u64::MAX - 1, MAX_TXID] {
            m.txid = txid;
            m.encode(&mut buf);
            assert_eq!(Meta::decode(&buf), Err(Error::Corrupted("bad txid")));
        }
        m.txid = MAX_TXID - 1;
        m.encode(&mut buf);
        assert_eq!(Meta::decode(&buf), Ok(m));
    }

    #[test]
    fn node_slots_are_bounds_checked() {
        let mut page = [0u8; 1024];
        page[0] = KIND_LEAF as u8;
        put_u32(&mut page, 4, 1);
        put_u64(&mut page, 8, 3);
        // Slot 0: key at 1000, length 100 (runs off the page).
        put_u32(&mut page, 16 + 4, 1000);
        put_u32(&mut page, 16 + 8, 100);
        assert_eq!(node_header(&page, 3), Ok((true, 1)));
        assert!(leaf_slot(&page, 0).is_err());
        assert_eq!(
            node_header(&page, 4),
            Err(Error::Corrupted("page id mismatch"))
        );
        put_u32(&mut page, 4, 1000);
        assert_eq!(
            node_header(&page, 3),
            Err(Error::Corrupted("slot count exceeds page"))
        );
    }

    #[test]
    fn size_limits_let_halves_fit() {
        for ps in [MIN_PAGE_SIZE, 4096, MAX_PAGE_SIZE] {
            let largest_entry = SLOT_SIZE + max_key_len(ps) + max_inline_len(ps);
            assert!(HEADER_SIZE + 3 * largest_entry <= ps, "page size {ps}");
        }
    }
}
