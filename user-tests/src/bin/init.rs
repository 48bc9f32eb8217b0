//! `/bin/init`, the first process: runs benchmarks or the test suite as the kernel command line
//! says, then exits with 0 (all succeeded) or 1; QEMU exits with that status.
//!
//! ```text
//! init bench=<name|all> [fs=<fat32|raw|dbfs|all>[,...]] [reps=N] [warmup=N] [quick] [size=MiB] [ops=N] [n=S:E:STEP|A,B,C] [max_secs=S] [disk=NAME]
//! init test
//! ```
//! - `bench=a,b,...` runs several in that order in one boot (e.g. `bench=seqread,seqread4k`,
//!   whose ratio is only meaningful within one boot).
//! - `bench=all` runs every benchmark in protocol order; `fs` defaults to `all`: every file
//!   system whose mount point (`/fat`, `/dbfs`) or device (`/dev/vdc`) exists; a missing one is
//!   skipped with a note. `reps`, `warmup`, `quick`, `size`, `ops`, `n`, `max_secs` and `disk`
//!   (the device model QEMU backs the disks with, named in RESULT lines) are passed to the
//!   benchmarks.
//! - `test` runs `/bin/testrunner DIR` then `/bin/badsys DIR` for DIR = `/fat` (and `/dbfs` when
//!   it exists) and prints `N passed, N failed` summed over them; exit 0 only if nothing failed.
//! - With no arguments: `test`.
//!
//! Two arguments exist for running init itself on Linux under `qemu-riscv64`: `prefix=DIR`
//! looks for `bin/`, `fat/`, `dbfs/` and `dev/vdc` under DIR, and `runner=PATH` executes every
//! program as `PATH program args...` (e.g. `runner=/usr/bin/qemu-riscv64`).
#![no_std]
#![no_main]

use user_tests::prelude::*;

/// Protocol order (shared/BENCH-PROTOCOL.md), shared with the host's report tool.
const BENCHES: &[&str] = user_tests::abi::bench::BENCHMARKS;
/// `rawq` is the raw disk driven at full queue depth (sequential workloads only; see
/// `user_tests::bench::Target::is_queued`).
const FILESYSTEMS: &[&str] = &["fat32", "raw", "rawq", "dbfs"];
/// The workloads `rawq` runs.
const QUEUED: &[&str] = &["seqwrite", "rewrite", "seqread", "seqread4k", "coldseqread"];

struct Config {
    bench: Option<String>,
    fs: Vec<String>,
    test: bool,
    /// Arguments passed through to every benchmark.
    pass: Vec<String>,
    prefix: String,
    runner: Option<String>,
}

fn parse(argv: &[&str]) -> Result<Config, String> {
    let mut c = Config {
        bench: None,
        fs: Vec::new(),
        test: false,
        pass: Vec::new(),
        prefix: String::new(),
        runner: None,
    };
    for &a in argv.iter().skip(1) {
        match a.split_once('=') {
            Some(("bench", v)) => c.bench = Some(v.into()),
            Some(("fs", v)) => {
                for f in v.split(',') {
                    if f != "all" && !FILESYSTEMS.contains(&f) {
                        return Err(format!(
                            "unknown file system {f:?} (fat32, raw, rawq, dbfs, all)"
                        ));
                    }
                    c.fs.push(f.into());
                }
            }
            Some(("reps" | "warmup" | "size" | "ops" | "n" | "max_secs" | "disk", _)) => {
                c.pass.push(a.into())
            }
            Some(("prefix", v)) => c.prefix = v.trim_end_matches('/').into(),
            Some(("runner", v)) => c.runner = Some(v.into()),
            None if a == "quick" => c.pass.push(a.into()),
            None if a == "test" => c.test = true,
            _ => println!("init: ignoring argument {a:?}"),
        }
    }
    if let Some(list) = &c.bench {
        for b in list.split(',') {
            if b != "all" && b != "cold" && !BENCHES.contains(&b) {
                return Err(format!(
                    "unknown benchmark {b:?}; one of {BENCHES:?}, cold (both cold runs) or all"
                ));
            }
        }
    }
    if c.bench.is_none() {
        c.test = true;
    }
    if c.fs.is_empty() || c.fs.iter().any(|f| f == "all") {
        c.fs = FILESYSTEMS.iter().map(|s| String::from(*s)).collect();
    }
    Ok(c)
}

impl Config {
    fn path(&self, p: &str) -> String {
        format!("{}{p}", self.prefix)
    }

    /// The mount point or device of `fs`, if present (a note is printed when it is not).
    fn location(&self, fs: &str) -> Option<String> {
        let (path, want_dir) = match fs {
            "fat32" => (self.path("/fat"), true),
            "dbfs" => (self.path("/dbfs"), true),
            _ => (self.path("/dev/vdc"), false),
        };
        match sys::stat(&path) {
            Ok(st) if want_dir && st.st_mode & S_IFMT != S_IFDIR => {
                println!("init: {fs}: {path} is not a directory: skipped");
                None
            }
            Ok(st) => {
                if want_dir && self.prefix.is_empty() {
                    if let Ok(root) = sys::stat("/") {
                        if root.st_dev == st.st_dev && root.st_dev != 0 {
                            println!("init: note: {path} has the st_dev of / (not a mount point?)");
                        }
                    }
                }
                Some(path)
            }
            Err(e) => {
                println!("init: {fs}: {path} not present ({}): skipped", e.name());
                None
            }
        }
    }

    /// Fork, exec `/bin/<prog> args...`, wait: the child's wait status.
    fn run(&self, prog: &str, args: &[String]) -> Result<sys::WaitStatus, String> {
        let bin = self.path(&format!("/bin/{prog}"));
        let mut argv: Vec<&str> = Vec::new();
        if let Some(r) = &self.runner {
            argv.push(r);
        }
        argv.push(&bin);
        argv.extend(args.iter().map(|s| s.as_str()));
        println!("init: $ {}", argv.join(" "));
        let pid = sys::fork().map_err(|e| format!("fork: {}", e.name()))?;
        if pid == 0 {
            let e = sys::execve(argv[0], &argv);
            println!(
                "init: execve {}: {} ({})",
                argv[0],
                e.name(),
                e.description()
            );
            sys::exit(127);
        }
        let (_, status) = sys::waitpid(pid).map_err(|e| format!("wait4: {}", e.name()))?;
        Ok(status)
    }
}

fn describe(status: sys::WaitStatus) -> String {
    match status.signal() {
        Some(sig) => format!("killed by signal {sig}"),
        None => format!("exit status {}", status.exit_code()),
    }
}

fn run_benches(c: &Config, list: &str) -> bool {
    let mut benches: Vec<&str> = Vec::new();
    for bench in list.split(',') {
        match bench {
            "all" => benches.extend_from_slice(BENCHES),
            "cold" => benches.extend(["coldseqread", "coldrandread"]),
            _ => benches.push(bench),
        }
    }
    let located: Vec<(String, String)> =
        c.fs.iter()
            .filter_map(|fs| c.location(fs).map(|loc| (fs.clone(), loc)))
            .collect();
    if located.is_empty() {
        println!("init: no file system to benchmark");
        return false;
    }
    println!(
        "==== dbfs-os benchmarks: {} on {} ====",
        benches.join(" "),
        located
            .iter()
            .map(|(f, _)| f.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let mut ok = true;
    for b in benches {
        println!("---- {b} ----");
        let mut args: Vec<String> = Vec::new();
        for (fs, loc) in &located {
            match (fs.as_str(), b) {
                ("raw" | "rawq", "createdel") => {
                    println!("init: createdel: {fs} has no directories: skipped")
                }
                ("rawq", b) if !QUEUED.contains(&b) => {
                    println!("init: {b}: rawq runs only sequential workloads: skipped")
                }
                ("raw" | "rawq", _) => args.push(format!("{fs}:{loc}")),
                (_, "createdel") => args.push(format!("{fs}:{loc}/cd")),
                _ => args.push(format!("{fs}:{loc}/bench.dat")),
            }
        }
        if args.is_empty() {
            continue;
        }
        args.extend(c.pass.iter().cloned());
        match c.run(b, &args) {
            Ok(st) if st.exited() && st.exit_code() == 0 => {}
            Ok(st) => {
                println!("init: {b} failed ({})", describe(st));
                ok = false;
            }
            Err(e) => {
                println!("init: {b}: {e}");
                ok = false;
            }
        }
    }
    ok
}

/// Parse a testrunner closing line `N passed, N failed`.
fn parse_summary(text: &str) -> Option<(u64, u64)> {
    let line = text.lines().rev().find(|l| l.contains(" passed, "))?;
    let (p, rest) = line.split_once(" passed, ")?;
    let f = rest.strip_suffix(" failed")?;
    Some((p.trim().parse().ok()?, f.trim().parse().ok()?))
}

fn run_tests(c: &Config) -> bool {
    let mut dirs = Vec::new();
    if let Some(d) = c.location("fat32") {
        dirs.push(d);
    }
    if let Some(d) = c.location("dbfs") {
        dirs.push(d);
    }
    if dirs.is_empty() {
        println!("init: no file system to test");
        return false;
    }
    println!(
        "==== dbfs-os tests: testrunner and badsys on {} ====",
        dirs.join(", ")
    );
    let (mut passed, mut failed) = (0u64, 0u64);
    // Each program closes with `N passed, N failed`; every line is counted.
    let runs = dirs
        .iter()
        .flat_map(|d| ["testrunner", "badsys"].map(|prog| (prog, d)));
    for (prog, d) in runs {
        let summary = user_tests::path_join(d, &format!(".{prog}-summary"));
        let _ = sys::unlink(&summary);
        let mut args = vec![d.clone(), format!("summary={summary}")];
        if prog == "badsys" && c.runner.is_some() {
            // Under qemu-user: accept the answers where qemu-user differs from Linux.
            args.push("qemu".into());
        }
        match c.run(prog, &args) {
            Ok(st) => {
                let text = File::open_read(&summary)
                    .and_then(|f| f.read_to_end())
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .unwrap_or_default();
                let _ = sys::unlink(&summary);
                match parse_summary(&text) {
                    Some((p, f)) if st.exited() => {
                        passed += p;
                        failed += f;
                    }
                    _ => {
                        // No summary: count the exit status (= failures) or at least one.
                        println!("init: {prog} {d}: no summary ({})", describe(st));
                        failed += if st.exited() {
                            (st.exit_code() as u64).max(1)
                        } else {
                            1
                        };
                    }
                }
            }
            Err(e) => {
                println!("init: {prog} {d}: {e}");
                failed += 1;
            }
        }
    }
    println!("==== all file systems ====");
    println!("{passed} passed, {failed} failed");
    failed == 0
}

fn main(argv: &[&str]) -> i32 {
    let c = match parse(argv) {
        Ok(c) => c,
        Err(e) => {
            println!("init: {e}");
            println!(
                "usage: init bench=<name|all> [fs=fat32|raw|dbfs|all] [reps=N] [quick] | init test"
            );
            return 1;
        }
    };
    println!("init: pid {}, argv {:?}", sys::getpid(), argv);
    let mut ok = true;
    if let Some(b) = &c.bench {
        ok &= run_benches(&c, b);
    }
    if c.test {
        ok &= run_tests(&c);
    }
    println!(
        "init: {}",
        if ok {
            "all succeeded, exit 0"
        } else {
            "FAILURES, exit 1"
        }
    );
    i32::from(!ok)
}

user_tests::entry!(main);
