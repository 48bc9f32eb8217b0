//! Benchmark `coldseqread` (the protocol's `cold` run of seqread: caches dropped before each timed
//! repetition, so every byte is read from the disk): `coldseqread NAME:PATH... [reps=N] [size=MiB] [ops=N] [quick]`.
#![no_std]
#![no_main]

use user_tests::bench::{self, Spec, Workload};

const SPEC: Spec = Spec {
    name: "coldseqread",
    workload: Workload::SeqRead,
    bs: 1 << 20,
    size_mib: 10,
    ops: 0,
    cold: true,
};

fn main(argv: &[&str]) -> i32 {
    bench::main_io(&SPEC, argv)
}

user_tests::entry!(main);
