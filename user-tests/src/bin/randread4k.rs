//! Benchmark `randread4k` (shared/BENCH-PROTOCOL.md): `randread4k NAME:PATH... [reps=N] [size=MiB] [ops=N] [quick]`.
#![no_std]
#![no_main]

use user_tests::bench::{self, Spec, Workload};

const SPEC: Spec = Spec {
    name: "randread4k",
    workload: Workload::RandRead,
    bs: 4096,
    size_mib: 16,
    ops: 10000,
    cold: false,
};

fn main(argv: &[&str]) -> i32 {
    bench::main_io(&SPEC, argv)
}

user_tests::entry!(main);
