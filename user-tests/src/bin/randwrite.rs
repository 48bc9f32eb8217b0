//! Benchmark `randwrite` (shared/BENCH-PROTOCOL.md): `randwrite NAME:PATH... [reps=N] [size=MiB] [ops=N] [quick]`.
#![no_std]
#![no_main]

use user_tests::bench::{self, Spec, Workload};

const SPEC: Spec = Spec {
    name: "randwrite",
    workload: Workload::RandWrite,
    bs: 1 << 20,
    size_mib: 16,
    ops: 1000,
    cold: false,
};

fn main(argv: &[&str]) -> i32 {
    bench::main_io(&SPEC, argv)
}

user_tests::entry!(main);
