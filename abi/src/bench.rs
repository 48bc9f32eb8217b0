//! The benchmark programs, in the order of ../shared/BENCH-PROTOCOL.md's table followed by the
//! cold runs: `/bin/init bench=all` runs them in this order and the host's `bench-report`
//! lists them in this order. One list, so the two cannot disagree.

/// Benchmark program names (each is `/bin/<name>` and a `bench=` value), in run order.
pub const BENCHMARKS: &[&str] = &[
    "seqwrite",
    "rewrite",
    "seqread",
    "seqread4k",
    "randwrite",
    "randread",
    "randread4k",
    "randwrite4k",
    "createdel",
    "coldseqread",
    "coldrandread",
];
