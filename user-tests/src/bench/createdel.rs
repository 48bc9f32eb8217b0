//! The `createdel` benchmark (`bench::main_createdel`): N one-byte files
//! created in a random order, then unlinked in name order, in a fresh directory per point.

use alloc::string::String;
use alloc::vec::Vec;
use alloc::{format, vec};

use abi::fcntl::*;

use crate::println;
use crate::rng::XorShift64;
use crate::sys;
use crate::time::Stopwatch;

use super::failure::{BenchResult, Context, Failure};
use super::options::{available_targets, parse_options, SEED};
use super::report::{print_table, us, ResultLine};
use super::timing::CallTimes;

pub(super) fn file_name(i: u64) -> String {
    format!("x{i:06}")
}

/// One createdel repetition: seconds and per-file (p50, p99) latency of each phase.
#[derive(Clone, Copy, Debug)]
pub(super) struct CreateDel {
    create: f64,
    delete: f64,
    create_lat: (u32, u32),
    delete_lat: (u32, u32),
}

/// Create (random order) then delete (sorted order) `n` one-byte files in `dir`.
pub(super) fn createdel_once(dir: &str, n: u64) -> BenchResult<CreateDel> {
    let mut order: Vec<u64> = (0..n).collect();
    XorShift64::new(SEED ^ n).shuffle(&mut order);
    let paths: Vec<String> = order
        .iter()
        .map(|&i| crate::path_join(dir, &file_name(i)))
        .collect();
    let mut calls = CallTimes::for_calls(n);
    let watch = Stopwatch::start();
    calls.start();
    for p in &paths {
        calls.begin();
        let fd = sys::open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
            .ctx(|| format!("create {p}"))?;
        let w = sys::write(fd, b"x").ctx(|| format!("write {p}"));
        sys::close(fd).ctx(|| format!("close {p}"))?;
        calls.end();
        if w? != 1 {
            return Err(Failure {
                what: format!("short write to {p}"),
                errno: None,
            });
        }
    }
    let create = watch.elapsed_secs();
    let create_lat = calls.percentiles();
    let sorted: Vec<String> = (0..n)
        .map(|i| crate::path_join(dir, &file_name(i)))
        .collect();
    let watch = Stopwatch::start();
    calls.start();
    for p in &sorted {
        calls.begin();
        sys::unlink(p).ctx(|| format!("unlink {p}"))?;
        calls.end();
    }
    let delete = watch.elapsed_secs();
    Ok(CreateDel {
        create,
        delete,
        create_lat,
        delete_lat: calls.percentiles(),
    })
}

/// Make `dir` an empty directory (removing what a previous run left).
pub(super) fn fresh_dir(dir: &str) -> BenchResult<()> {
    sys::remove_tree(dir).ctx(|| format!("remove {dir}"))?;
    sys::mkdir(dir, 0o755).ctx(|| format!("mkdir {dir}"))
}

/// Main of the `createdel` program.
pub fn main_createdel(argv: &[&str]) -> i32 {
    let opts = match parse_options(argv) {
        Ok(o) => o,
        Err(msg) => {
            println!("createdel: {msg}");
            println!(
                "usage: createdel NAME:DIR... [n=START:END:STEP|n=A,B,C] [max_secs=S] [reps=N] [quick]"
            );
            return 2;
        }
    };
    let ns = opts.n_list.clone().unwrap_or(if opts.quick {
        vec![100, 200, 300]
    } else {
        vec![100, 200, 300, 400, 500]
    });
    let mut targets = Vec::new();
    for t in available_targets("createdel", &opts.targets) {
        if t.is_device() {
            println!(
                "SKIP bench=createdel fs={}: a raw device has no directories",
                t.name
            );
        } else {
            targets.push(t);
        }
    }
    let mut failed = false;
    let mut alive = vec![true; targets.len()];
    for (i, t) in targets.iter().enumerate() {
        if let Err(f) = fresh_dir(&t.path) {
            println!("ERROR bench=createdel fs={}: {f}", t.name);
            alive[i] = false;
            failed = true;
        }
    }
    // Stopped growing: (file system index) -> the N whose run went over max_secs.
    let mut capped: Vec<Option<(u64, f64)>> = vec![None; targets.len()];
    for &n in &ns {
        for (i, t) in targets.iter().enumerate() {
            if let (true, Some((at, secs))) = (alive[i], capped[i]) {
                println!(
                    "SKIP bench=createdel fs={} n={n}: n={at} took {secs:.1} s, over max_secs",
                    t.name
                );
            }
        }
        let mut times: Vec<Vec<CreateDel>> = vec![Vec::new(); targets.len()];
        for _rep in 0..opts.reps {
            for (i, t) in targets.iter().enumerate() {
                if !alive[i] || capped[i].is_some() {
                    continue;
                }
                match createdel_once(&t.path, n) {
                    Ok(r) => times[i].push(r),
                    Err(f) => {
                        println!("ERROR bench=createdel fs={} n={n}: {f}", t.name);
                        alive[i] = false;
                        failed = true;
                        let _ = fresh_dir(&t.path);
                    }
                }
            }
        }
        let mut rows = Vec::new();
        let mut drows = Vec::new();
        for (i, t) in targets.iter().enumerate() {
            if times[i].is_empty() || !alive[i] {
                continue;
            }
            // The median repetition of each phase, by time; its latencies go with it.
            let med = |sel: fn(&CreateDel) -> f64| {
                let mut v: Vec<&CreateDel> = times[i].iter().collect();
                v.sort_by(|a, b| {
                    sel(a)
                        .partial_cmp(&sel(b))
                        .unwrap_or(core::cmp::Ordering::Equal)
                });
                *v[(v.len() - 1) / 2]
            };
            let (mc, md) = (med(|r| r.create), med(|r| r.delete));
            let (c, d) = (mc.create, md.delete);
            if opts.max_secs.is_some_and(|m| c + d > m as f64) {
                capped[i] = Some((n, c + d));
            }
            ResultLine::new("createdel")
                .field("fs", &t.name)
                .field("disk", &opts.disk)
                .field("n", n)
                .field("create_secs", format_args!("{c:.6}"))
                .field("delete_secs", format_args!("{d:.6}"))
                .field("creates_per_sec", format_args!("{:.1}", n as f64 / c))
                .field("deletes_per_sec", format_args!("{:.1}", n as f64 / d))
                .field("reps", times[i].len())
                .field("create_p50_us", us(mc.create_lat.0))
                .field("create_p99_us", us(mc.create_lat.1))
                .field("delete_p50_us", us(md.delete_lat.0))
                .field("delete_p99_us", us(md.delete_lat.1))
                .print();
            rows.push((t.name.clone(), n as f64 / c));
            drows.push((t.name.clone(), n as f64 / d));
        }
        print_table(&format!("createdel n={n} create"), "files/s", &rows);
        print_table(&format!("createdel n={n} delete"), "files/s", &drows);
    }
    for (i, t) in targets.iter().enumerate() {
        if alive[i] {
            let _ = sys::rmdir(&t.path);
        }
    }
    i32::from(failed)
}
