//! Host benchmark of kvdb against jammdb 0.11 and redb (see benches/kv.rs). The library is empty:
//! it exists so the bench dependencies stay out of `fs/kvdb`'s own build and tests.
