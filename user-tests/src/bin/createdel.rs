//! Benchmark `createdel` (shared/BENCH-PROTOCOL.md): create N one-byte files `x%06d` in random
//! order, then unlink them in sorted order.
//! `createdel NAME:DIR... [n=START:END:STEP] [reps=N] [quick]`; raw devices are skipped.
#![no_std]
#![no_main]

fn main(argv: &[&str]) -> i32 {
    user_tests::bench::main_createdel(argv)
}

user_tests::entry!(main);
