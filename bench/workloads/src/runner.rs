//! The program both sides run: options parsing, the order repetitions visit the targets in,
//! dispatch by workload name, and the loop that prints `REP` and `RESULT` lines.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use crate::filebench::{fileserver, varmail, webserver};
use crate::fs::Fs;
use crate::mdtest::mdtest;
use crate::params::{Params, WORKLOADS};
use crate::report::{median_index, result_line};
use crate::smallfile::{create_empty, createdel_ordered, delete_2m};
use crate::timing::{err, Failed, Outcome, Phase};

/// Run workload `name` in `root`, an existing empty directory.
pub fn run_workload<F: Fs>(
    fs: &mut F,
    name: &str,
    root: &str,
    p: &Params,
) -> Result<Outcome, Failed> {
    match name {
        "fileserver" => fileserver(fs, root, p),
        "webserver" => webserver(fs, root, p),
        "varmail" => varmail(fs, root, p),
        "mdtest" => mdtest(fs, root, p),
        "create_empty" => create_empty(fs, root, p),
        "delete_2m" => delete_2m(fs, root, p),
        "createdel_ordered" => createdel_ordered(fs, root, p),
        _ => Err(format!("unknown workload {name:?}")),
    }
}

/// A `NAME:DIR` target: results are labelled NAME, work happens in DIR/wl-WORKLOAD.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub name: String,
    pub dir: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    pub targets: Vec<Target>,
    pub reps: usize,
    pub workloads: Vec<String>,
    pub quick: bool,
}

pub const USAGE: &str = "NAME:DIR... [reps=N] [workloads=all|NAME,NAME...] [quick]";

/// Parse `argv` (argv[0] skipped).
pub fn parse_options(argv: &[&str]) -> Result<Options, String> {
    let mut o = Options {
        targets: Vec::new(),
        reps: 3,
        workloads: WORKLOADS.iter().map(|s| s.to_string()).collect(),
        quick: false,
    };
    for &arg in argv.iter().skip(1) {
        if let Some(v) = arg.strip_prefix("reps=") {
            o.reps = v
                .parse::<usize>()
                .map_err(|_| format!("bad reps={v}"))?
                .max(1);
        } else if let Some(v) = arg.strip_prefix("workloads=") {
            if v != "all" {
                o.workloads = Vec::new();
                for w in v.split(',') {
                    if !WORKLOADS.contains(&w) {
                        return Err(format!(
                            "unknown workload {w:?} (known: {})",
                            WORKLOADS.join(" ")
                        ));
                    }
                    o.workloads.push(w.to_string());
                }
            }
        } else if arg == "quick" {
            o.quick = true;
        } else if let Some((name, dir)) = arg.split_once(':') {
            if name.is_empty() || dir.is_empty() || name.contains('=') {
                return Err(format!("bad target {arg:?}: want NAME:DIR"));
            }
            o.targets.push(Target {
                name: name.to_string(),
                dir: dir.trim_end_matches('/').to_string(),
            });
        } else {
            return Err(format!("unknown argument {arg:?}"));
        }
    }
    if o.targets.is_empty() {
        return Err("no targets: give NAME:DIR, e.g. dbfs:/dbfs fat32:/fat".into());
    }
    Ok(o)
}

/// The order of `n` systems in repetition `rep` (from 1). A system run right after another
/// pays for what that one left behind (its image's dirty pages reaching the host's disk, its
/// timer's barrier), so with a fixed order the same system always paid (2-5x on some phases of
/// dbfs-fuse against itself). Rotating the order by one each repetition moves who goes first
/// but keeps who follows whom (B after A in A B C, B C A and C A B alike: a dbfs-fuse build
/// came out 0.57x or 1.66x another on mdtest_mkdir by its place). So the orders are the rows
/// of a Williams design: `0, 1, n-1, 2, n-2, ...` plus `k` (mod `n`) for row `k`, the first `n`
/// repetitions taking the rows and the next `n` the rows reversed, and so on. Over `2n`
/// repetitions every system goes first twice and runs right after every other one twice.
pub fn rep_order(n: usize, rep: usize) -> Vec<usize> {
    if n == 0 {
        return Vec::new();
    }
    let r = rep.saturating_sub(1);
    // Position i of row 0: 0, 1, n-1, 2, n-2, ...
    let base = |i: usize| {
        if i % 2 == 1 {
            i.div_ceil(2)
        } else {
            (n - i / 2) % n
        }
    };
    let mut order: Vec<usize> = (0..n).map(|i| (base(i) + r) % n).collect();
    if (r / n) % 2 == 1 {
        order.reverse();
    }
    order
}

/// The whole program: every chosen workload, repetitions outermost within a workload and the
/// targets alternating within a repetition (in [`rep_order`]);
/// RESULT lines and a table per phase. Returns the
/// exit status (0 = no failure).
pub fn main<F: Fs>(fs: &mut F, argv: &[&str]) -> i32 {
    let prog = argv.first().copied().unwrap_or("workloads");
    let o = match parse_options(argv) {
        Ok(o) => o,
        Err(e) => {
            fs.print(&format!("{prog}: {e}"));
            fs.print(&format!("usage: {prog} {USAGE}"));
            return 2;
        }
    };
    let p = if o.quick {
        Params::quick()
    } else {
        Params::full()
    };
    let mut targets = Vec::new();
    let mut failures = 0u32;
    for t in &o.targets {
        if fs.is_dir(&t.dir) {
            match fs.check_label(&t.name, &t.dir) {
                Ok(()) => targets.push(t.clone()),
                Err(msg) => {
                    fs.print(&format!("ERROR workloads fs={}: {msg}", t.name));
                    failures += 1;
                }
            }
        } else {
            fs.print(&format!(
                "SKIP workloads fs={}: {} is not a directory",
                t.name, t.dir
            ));
        }
    }
    let mut results = 0u32;
    for w in &o.workloads {
        fs.print(&p.describe(w));
        // [target][rep] -> phases
        let mut runs: Vec<Vec<Vec<Phase>>> = vec![Vec::new(); targets.len()];
        let mut alive = vec![true; targets.len()];
        for rep in 1..=o.reps {
            for ti in rep_order(targets.len(), rep) {
                let t = &targets[ti];
                if !alive[ti] {
                    continue;
                }
                let root = format!("{}/wl-{w}", t.dir);
                let r = fs
                    .remove_tree(&root)
                    .and_then(|()| fs.mkdir(&root))
                    .map_err(|e| err("prepare", &root, e))
                    .and_then(|()| run_workload(fs, w, &root, &p));
                match r {
                    Ok(out) => {
                        // Each repetition as it ends, so a slow one can be placed in time.
                        let mut line = format!("REP workload={w} fs={} rep={rep}", t.name);
                        for ph in &out.phases {
                            line.push_str(&format!(" {}={:.1}", ph.bench, ph.ops_per_sec()));
                        }
                        fs.print(&line);
                        runs[ti].push(out.phases)
                    }
                    Err(msg) => {
                        fs.print(&format!("ERROR bench={w} fs={}: {msg}", t.name));
                        alive[ti] = false;
                        failures += 1;
                    }
                }
                if let Err(e) = fs.remove_tree(&root) {
                    fs.print(&format!(
                        "ERROR bench={w} fs={}: remove {root}: {}",
                        t.name,
                        e.name()
                    ));
                    alive[ti] = false;
                    failures += 1;
                }
            }
        }
        // Phases of one workload, in their order (taken from the first completed run).
        let Some(names) = runs
            .iter()
            .find_map(|r| r.first())
            .map(|ph| ph.iter().map(|x| x.bench).collect::<Vec<_>>())
        else {
            continue;
        };
        for (k, bench) in names.iter().enumerate() {
            let mut rows: Vec<(String, f64)> = Vec::new();
            for (ti, t) in targets.iter().enumerate() {
                if !alive[ti] || runs[ti].is_empty() {
                    continue;
                }
                let reps: Vec<Phase> = runs[ti].iter().map(|r| r[k].clone()).collect();
                let all: Vec<f64> = reps.iter().map(Phase::ops_per_sec).collect();
                let m = &reps[median_index(&reps)];
                fs.print(&result_line(&t.name, m, &all));
                results += 1;
                rows.push((t.name.clone(), m.ops_per_sec()));
            }
            if rows.len() > 1 {
                fs.print(&format!("  {bench} (median ops/s)"));
                let base = rows[0].1;
                for (name, v) in &rows {
                    let ratio = if base > 0.0 { v / base } else { 0.0 };
                    fs.print(&format!(
                        "  {name:<14} {v:>12.1}  {ratio:>6.2}x of {}",
                        rows[0].0
                    ));
                }
            }
        }
    }
    fs.print(&format!("workloads: {results} results, {failures} errors"));
    i32::from(failures > 0)
}
