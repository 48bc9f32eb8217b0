//! A small seeded PRNG (xorshift64*): the benchmarks' random offsets and orders are the same on
//! every run and every system, so results compare like with like. The generator is the tree's
//! one, in `fs/xrand` (host tools and tests use the same).

pub use xrand::XorShift64;
