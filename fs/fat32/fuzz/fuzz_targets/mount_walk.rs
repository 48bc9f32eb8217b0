//! A FAT32 volume damaged by the fuzz input, through our adapter: mount, walk the whole tree
//! (getattr, readdir, lookup, read every file), write, create, rename, unlink, sync, unmount,
//! mount again. Errors are fine; panics and hangs are bugs.
//!
//! The input is a list of 7-byte mutation records applied to a valid seed volume built once
//! (see `fs/fat32/tests/mutate/mod.rs`, shared with the regression test `tests/corrupt.rs`), so
//! the fuzzer starts past the boot-sector checks.
#![no_main]

use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/mutate/mod.rs"]
mod mutate;

fn seed() -> &'static (Arc<Vec<u8>>, mutate::Layout) {
    static SEED: OnceLock<(Arc<Vec<u8>>, mutate::Layout)> = OnceLock::new();
    SEED.get_or_init(|| {
        let image = mutate::seed_image();
        let layout = mutate::Layout::of(&image);
        (Arc::new(image), layout)
    })
}

fuzz_target!(|data: &[u8]| {
    let (image, layout) = seed();
    mutate::run_case(image, layout, data);
});
