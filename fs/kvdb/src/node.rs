//! Nodes being modified by a write transaction ("dirty" nodes), held in memory until commit.
//!
//! A write transaction copies each page it changes into a [`Node`] (the page itself is then freed,
//! copy-on-write); branch entries point either at a clean page or at another dirty node. Nodes are
//! split as soon as they outgrow a page and merged when they fall under a quarter page, so at
//! commit every node fits one page (the limits on key and inline value sizes guarantee that the
//! halves of a split fit).

use alloc::vec::Vec;
use core::ops::Range;

use smallvec::SmallVec;

use crate::error::Result;
use crate::page::{
    self, put_u16, put_u32, put_u64, PageId, FLAG_BUCKET, FLAG_INLINE, FLAG_OVERFLOW, HEADER_SIZE,
    KIND_BRANCH, KIND_LEAF, REF_SIZE, SLOT_SIZE,
};

/// The key of a dirty node's entry: inline up to 24 bytes (dbfs's keys are 8 or 16 bytes, or
/// a directory's id and a short name), so copying a page into a node allocates for the
/// entries' list, not twice per entry. With one heap key and value per entry, a dbfs unlink
/// on the host spent about a quarter of its CPU in malloc and free.
pub type KeyBytes = SmallVec<[u8; 24]>;

/// Value bytes stored in a leaf: inline up to 24 bytes (directory entries), else on the heap.
pub type ValueBytes = SmallVec<[u8; 24]>;

/// What a leaf entry holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LeafValue {
    /// Value bytes stored in the leaf.
    Inline(ValueBytes),
    /// A nested bucket: its tree root (0 = empty) and sequence counter.
    Bucket { root: PageId, seq: u64 },
    /// A large value in `ceil(len / page_size)` contiguous pages starting at `page`.
    Overflow { page: PageId, len: u64 },
}

impl LeafValue {
    fn stored_len(&self) -> usize {
        match self {
            LeafValue::Inline(v) => v.len(),
            _ => REF_SIZE,
        }
    }

    /// Decode from a leaf slot's flags and value bytes.
    pub fn decode(flags: u32, bytes: &[u8]) -> Result<LeafValue> {
        Ok(match flags {
            FLAG_BUCKET => {
                let (root, seq) = page::decode_ref(bytes)?;
                LeafValue::Bucket { root, seq }
            }
            FLAG_OVERFLOW => {
                let (page, len) = page::decode_ref(bytes)?;
                LeafValue::Overflow { page, len }
            }
            _ => LeafValue::Inline(ValueBytes::from_slice(bytes)),
        })
    }
}

// Slots of a corrupt page may overlap; the size limits keep every split able to fit a page,
// so every reader of a node page (`Node::from_page`, and a range delete freeing a subtree
// as it stands) checks its entries with these two.

/// Entry `i` of a leaf page: where its key is in `buf`, and its value.
pub(crate) fn leaf_entry(buf: &[u8], i: usize) -> Result<(Range<usize>, LeafValue)> {
    let slot = page::leaf_slot(buf, i)?;
    if slot.key.len() > page::max_key_len(buf.len())
        || slot.value.len() > page::max_inline_len(buf.len())
    {
        return Err(crate::Error::Corrupted("leaf entry too large"));
    }
    Ok((slot.key, LeafValue::decode(slot.flags, &buf[slot.value])?))
}

/// Entry `i` of a branch page: where its key is in `buf`, and its child's page.
pub(crate) fn branch_entry(buf: &[u8], i: usize) -> Result<(Range<usize>, PageId)> {
    let (key, child) = page::branch_slot(buf, i)?;
    if key.len() > page::max_key_len(buf.len()) {
        return Err(crate::Error::Corrupted("branch key too large"));
    }
    if child < 2 {
        return Err(crate::Error::Corrupted("branch child is a meta page"));
    }
    Ok((key, child))
}

/// Where a branch entry's child lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Child {
    /// A clean page of the snapshot.
    Page(PageId),
    /// Index of a dirty node in the tree's arena.
    Dirty(usize),
}

/// Entries of a node: sorted by key.
#[derive(Clone, Debug)]
pub enum Entries {
    Leaf(Vec<(KeyBytes, LeafValue)>),
    Branch(Vec<(KeyBytes, Child)>),
}

/// A dirty node and its serialised size.
#[derive(Clone, Debug)]
pub struct Node {
    pub entries: Entries,
    /// Bytes the node takes as a page: header, slots, keys and in-page values.
    pub size: usize,
}

impl Node {
    pub fn empty_leaf() -> Node {
        Node {
            entries: Entries::Leaf(Vec::new()),
            size: HEADER_SIZE,
        }
    }

    pub fn leaf(entries: Vec<(KeyBytes, LeafValue)>) -> Node {
        let size = HEADER_SIZE
            + entries
                .iter()
                .map(|(k, v)| leaf_entry_size(k, v))
                .sum::<usize>();
        Node {
            entries: Entries::Leaf(entries),
            size,
        }
    }

    pub fn branch(entries: Vec<(KeyBytes, Child)>) -> Node {
        let size = HEADER_SIZE
            + entries
                .iter()
                .map(|(k, _)| branch_entry_size(k))
                .sum::<usize>();
        Node {
            entries: Entries::Branch(entries),
            size,
        }
    }

    pub fn len(&self) -> usize {
        match &self.entries {
            Entries::Leaf(e) => e.len(),
            Entries::Branch(e) => e.len(),
        }
    }

    pub fn is_leaf(&self) -> bool {
        matches!(self.entries, Entries::Leaf(_))
    }

    /// Copy a validated node page into memory.
    pub fn from_page(buf: &[u8], id: PageId) -> Result<Node> {
        let (leaf, count) = page::node_header(buf, id)?;
        if leaf {
            let mut entries = Vec::with_capacity(count);
            for i in 0..count {
                let (key, value) = leaf_entry(buf, i)?;
                entries.push((KeyBytes::from_slice(&buf[key]), value));
            }
            Ok(Node::leaf(entries))
        } else {
            let mut entries = Vec::with_capacity(count);
            for i in 0..count {
                let (key, child) = branch_entry(buf, i)?;
                entries.push((KeyBytes::from_slice(&buf[key]), Child::Page(child)));
            }
            Ok(Node::branch(entries))
        }
    }

    /// Split into two nodes at entry `at` (both sides non-empty); returns the right half.
    pub fn split_off(&mut self, at: usize) -> Node {
        match &mut self.entries {
            Entries::Leaf(e) => {
                let right = Node::leaf(e.split_off(at));
                self.size -= right.size - HEADER_SIZE;
                right
            }
            Entries::Branch(e) => {
                let right = Node::branch(e.split_off(at));
                self.size -= right.size - HEADER_SIZE;
                right
            }
        }
    }

    /// Where to split an oversized node. Appends (the last entry just inserted) keep the left
    /// node full, so sequential inserts fill pages; otherwise split at the byte midpoint, which
    /// leaves both halves within a page given the key/value size limits.
    pub fn split_point(&self, appended: bool) -> usize {
        let n = self.len();
        if appended && n >= 2 {
            return n - 1;
        }
        let half = (self.size - HEADER_SIZE) / 2;
        let mut acc = 0;
        for i in 0..n {
            let s = self.entry_size(i);
            if i > 0 && acc + s > half {
                return i;
            }
            acc += s;
        }
        n.saturating_sub(1).max(1)
    }

    pub fn entry_size(&self, i: usize) -> usize {
        match &self.entries {
            Entries::Leaf(e) => leaf_entry_size(&e[i].0, &e[i].1),
            Entries::Branch(e) => branch_entry_size(&e[i].0),
        }
    }

    pub fn first_key(&self) -> &[u8] {
        match &self.entries {
            Entries::Leaf(e) => e.first().map(|(k, _)| k.as_slice()).unwrap_or(&[]),
            Entries::Branch(e) => e.first().map(|(k, _)| k.as_slice()).unwrap_or(&[]),
        }
    }

    /// Serialise into `buf` (one page, zeroed by the caller) as page `id`. Branch children must
    /// all be clean pages by now.
    pub fn write_page(&self, buf: &mut [u8], id: PageId) {
        let count = self.len();
        let mut data = HEADER_SIZE + count * SLOT_SIZE;
        put_u32(buf, 4, count as u32);
        put_u64(buf, 8, id);
        match &self.entries {
            Entries::Leaf(e) => {
                put_u16(buf, 0, KIND_LEAF);
                for (i, (key, value)) in e.iter().enumerate() {
                    let at = HEADER_SIZE + i * SLOT_SIZE;
                    let flags = match value {
                        LeafValue::Inline(_) => FLAG_INLINE,
                        LeafValue::Bucket { .. } => FLAG_BUCKET,
                        LeafValue::Overflow { .. } => FLAG_OVERFLOW,
                    };
                    put_u32(buf, at, flags);
                    put_u32(buf, at + 4, data as u32);
                    put_u32(buf, at + 8, key.len() as u32);
                    put_u32(buf, at + 12, value.stored_len() as u32);
                    buf[data..data + key.len()].copy_from_slice(key);
                    data += key.len();
                    match value {
                        LeafValue::Inline(v) => buf[data..data + v.len()].copy_from_slice(v),
                        LeafValue::Bucket { root: a, seq: b }
                        | LeafValue::Overflow { page: a, len: b } => {
                            put_u64(buf, data, *a);
                            put_u64(buf, data + 8, *b);
                        }
                    }
                    data += value.stored_len();
                }
            }
            Entries::Branch(e) => {
                put_u16(buf, 0, KIND_BRANCH);
                for (i, (key, child)) in e.iter().enumerate() {
                    let at = HEADER_SIZE + i * SLOT_SIZE;
                    let child = match child {
                        Child::Page(p) => *p,
                        // Spill replaces every dirty child before writing its parent.
                        Child::Dirty(_) => 0,
                    };
                    put_u32(buf, at, data as u32);
                    put_u32(buf, at + 4, key.len() as u32);
                    put_u64(buf, at + 8, child);
                    buf[data..data + key.len()].copy_from_slice(key);
                    data += key.len();
                }
            }
        }
    }
}

pub fn leaf_entry_size(key: &[u8], value: &LeafValue) -> usize {
    SLOT_SIZE + key.len() + value.stored_len()
}

pub fn branch_entry_size(key: &[u8]) -> usize {
    SLOT_SIZE + key.len()
}
