//! A dbfs image damaged by the fuzz input: mount over a RAM pager, fsck, walk the whole tree
//! (getattr, readdir, lookup, read every file, readlink, list and get xattrs), write (create,
//! write, truncate, xattrs, symlink, link, rename, unlink, rmdir), sync, fsck, and mount what is
//! left again. Errors are fine; panics and hangs are bugs.
//!
//! The input is a flags byte and a list of 6-byte mutation records applied to a valid seed
//! image built once (see `fs/dbfs/tests/mutate/mod.rs`, shared with the regression test
//! `tests/mutate_walk.rs`); flag bit 0 re-seals the meta page checksums after the mutations.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/mutate/mod.rs"]
mod mutate;

fuzz_target!(|data: &[u8]| {
    static SEED: OnceLock<Vec<u8>> = OnceLock::new();
    let seed = SEED.get_or_init(mutate::seed_image);
    mutate::run_case(seed, data);
});
