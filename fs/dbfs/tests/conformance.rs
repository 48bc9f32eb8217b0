//! The shared vfs conformance suite, with full POSIX capabilities, over RAM and with the
//! write-back cache disabled (every write commits).
mod common;

use std::sync::Arc;

use vfs::conformance::{run, Capabilities};
use vfs::FileSystem;

#[test]
fn conformance_posix() {
    let factory = || -> Arc<dyn FileSystem> { common::fresh() };
    run(&factory, &Capabilities::POSIX);
}

#[test]
fn conformance_posix_write_through() {
    let factory = || -> Arc<dyn FileSystem> {
        let fs = common::fresh();
        fs.set_dirty_limit(0);
        fs
    };
    run(&factory, &Capabilities::POSIX);
}

#[test]
fn conformance_posix_small_chunks() {
    let factory = || -> Arc<dyn FileSystem> {
        common::fresh_with(dbfs::MkfsOptions {
            chunk_size: 4096,
            ..Default::default()
        })
    };
    run(&factory, &Capabilities::POSIX);
}
