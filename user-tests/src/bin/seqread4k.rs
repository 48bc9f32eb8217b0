//! Benchmark `seqread4k` (shared/BENCH-PROTOCOL.md): `seqread4k NAME:PATH... [reps=N] [size=MiB] [ops=N] [quick]`.
#![no_std]
#![no_main]

use user_tests::bench::{self, Spec, Workload};

const SPEC: Spec = Spec {
    name: "seqread4k",
    workload: Workload::SeqRead,
    bs: 4096,
    size_mib: 10,
    ops: 0,
    cold: false,
};

fn main(argv: &[&str]) -> i32 {
    bench::main_io(&SPEC, argv)
}

user_tests::entry!(main);
