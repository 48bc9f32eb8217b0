//! Benchmark `randread` (shared/BENCH-PROTOCOL.md): `randread NAME:PATH... [reps=N] [size=MiB] [ops=N] [quick]`.
#![no_std]
#![no_main]

use user_tests::bench::{self, Spec, Workload};

const SPEC: Spec = Spec {
    name: "randread",
    workload: Workload::RandRead,
    bs: 1 << 20,
    size_mib: 16,
    ops: 1000,
    cold: false,
};

fn main(argv: &[&str]) -> i32 {
    bench::main_io(&SPEC, argv)
}

user_tests::entry!(main);
