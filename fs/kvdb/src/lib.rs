//! kvdb: a copy-on-write B+tree key-value store (the BoltDB / jammdb model), `no_std` + `alloc`.
//!
//! Layer: below dbfs (which keeps every inode, directory entry and data chunk here), above a
//! [`Pager`] (the kernel's page-fault-driven disk window, a host file, or RAM). kvdb knows nothing
//! about files or devices.
//!
//! # Contract
//! - A [`Db`] holds named buckets (nestable); a bucket maps byte-string keys to byte-string values
//!   or nested buckets, in key order. Keys are 1..=page_size/8 bytes; values up to 4 GiB (those
//!   longer than page_size/6 live in contiguous overflow pages).
//! - Any number of read transactions ([`Db::begin_read`]) each see the snapshot of the last
//!   commit when they began; beginning one is O(1) (copy the meta, count the reader). One write
//!   transaction at a time ([`Db::begin_write`]); [`Tx::commit`] makes it durable,
//!   [`Tx::commit_deferred`] publishes it without a barrier (durable at the next [`Db::sync`]),
//!   dropping it rolls it back. Values from [`Bucket::get`] and cursors borrow the pager's page when the pager
//!   allows it ([`Bytes`] derefs to the slice): for a memory-window pager, no copy at all.
//! - Image bytes are untrusted: a corrupt or truncated image gives [`Error::Corrupted`] (at open,
//!   or when the damaged page is reached), never a panic.
//!
//! # On-disk layout (all little-endian; see [`page`] for the byte offsets)
//! - Pages of a fixed size (1 KiB..=64 KiB, default 4 KiB). Pages 0 and 1: meta pages (magic,
//!   version, page size, txid, root bucket's tree root and sequence, freelist extent, page count,
//!   FNV-1a checksum). Each barrier writes the slot not holding the newest durable meta; open
//!   takes the valid meta with the highest txid.
//! - Node pages: a 16-byte header (kind, slot count, own page id), then 16-byte slots, then key and
//!   value bytes. Leaf slots carry a flag: inline value, nested bucket (root page + sequence), or
//!   overflow value (first page + length; the value fills contiguous raw pages, no header, so a
//!   reader gets it as one slice). Branch slots carry a key and a child page; child `i` holds keys
//!   from key `i` up to key `i+1`.
//! - Freelist: one extent of pages listing the free pages as runs (start, length; 16 bytes
//!   each; extents of earlier versions, one page id per free page, are still read), written
//!   by every durable commit and
//!   by every barrier that follows deferred commits (a deferred commit writes none: its meta
//!   keeps the old extent's place, which nothing reads before the next barrier).
//!
//! # Durability contract
//! A commit writes all its new pages (nodes, overflow values; a durable one the freelist too).
//! A *barrier* then makes the newest commit durable: (the current freelist, if deferred commits
//! left it unwritten) -> `sync` -> the meta page into the slot not holding the durable
//! meta -> `sync`. [`Tx::commit`] is a commit plus a barrier; [`Tx::commit_deferred`] skips the
//! barrier (readers and later writers see its state at once); [`Db::sync`] is the barrier
//! alone (no-op when nothing is pending), and a deferred commit forces one when more than
//! [`Db::set_barrier_bound`] pages wait for it. Nothing the durable meta references is
//! overwritten before a newer meta is durable (pages freed since the last barrier that it may
//! reference are *held* until the next one; pages both taken and freed since then are reused
//! at once, subject to readers), so a power cut at any point leaves exactly the state of the
//! last barrier whose meta write reached the disk. A commit that fails before its meta write
//! returns the error and leaves the store as it was; one that fails during the meta write
//! poisons the `Db` (further writes return [`Error::Poisoned`]; reopen).
//!
//! # Locks
//! - `Db::writer` (spin mutex): held by the write transaction for its whole life; guards the
//!   freelist.
//! - `Db::snapshot` (spin mutex, held for a few instructions): the last committed meta and the
//!   count of open readers per snapshot txid. Lock order: writer, then snapshot.
//! - Pages freed by commit `t` are reused only once no reader with a snapshot older than `t` is
//!   open (checked when a write transaction begins), and, if the durable meta may reference
//!   them, once the next barrier completed.
//! - A transaction's own state is a `RefCell` (transactions are used from one thread).
//!
//! # Modules
//! Layers run one way (each imports only those before it): `error`, `sync` < `page`, `node`,
//! `freelist` (on-disk formats) < `pager`, `file` (storage) < `bytes`, `source` (the page
//! source the tree reads through) < `tree`, `cursor` (B+tree algorithms, generic over the
//! source) < `store` (state shared by transactions, the barrier) < `page_alloc` (where new
//! pages come from) < `tx` (the transaction and its state) < `bucket`, `overflow`, `commit` <
//! `db` (open, begin).
#![cfg_attr(not(any(test, feature = "std")), no_std)]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;

mod bucket;
mod bytes;
mod commit;
mod cursor;
mod db;
mod error;
#[cfg(feature = "std")]
mod file;
mod freelist;
mod node;
mod overflow;
pub mod page;
mod page_alloc;
mod pager;
mod placed;
mod source;
mod store;
pub mod sync;
mod tree;
mod tx;

pub use bucket::{Bucket, Cursor};
pub use bytes::Bytes;
pub use cursor::{Entry, EntryRef};
pub use db::{Options, Stats};
pub use error::{Error, Result};
#[cfg(feature = "std")]
pub use file::{open_store_file, FilePager};
pub use page::PageId;
pub use page_alloc::reserve_pages;
pub use pager::{direct_writes_well_formed, MemPager, Pager, PagerEvent, SlicePager};
pub use placed::Placed;
pub use store::{Db, DEFAULT_BARRIER_BOUND_BYTES, RECORD_CHURN_BYTES, RECORD_MAX_BYTES};

pub use tx::Tx;
