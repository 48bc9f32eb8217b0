//! Benchmark `createdel` (shared/BENCH-PROTOCOL.md): create N one-byte files `x%06d` in random
//! order, then unlink them in sorted order.
//! `createdel NAME:DIR... [n=START:END:STEP|n=A,B,C] [max_secs=S] [reps=N] [quick]`; raw devices
//! are skipped. `max_secs` stops a file system growing N once one N took longer than S seconds.
#![no_std]
#![no_main]

fn main(argv: &[&str]) -> i32 {
    user_tests::bench::main_createdel(argv)
}

user_tests::entry!(main);
