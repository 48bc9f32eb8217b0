//! Every workload at the `quick` size against a temporary directory, through the same
//! `HostFs` the `workloads-host` tool uses: the phases and operation counts each workload
//! promises, the files it leaves behind counted on disk against its own bookkeeping, and the
//! whole program's output (one RESULT line per phase and target, no error).

use std::path::Path;

use workloads::host::HostFs;
use workloads::{run_workload, tree_dirs, Fs, Params, WORKLOADS};

fn count_files(dir: &Path) -> u64 {
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let t = e.file_type().unwrap();
        if t.is_dir() {
            n += count_files(&e.path());
        } else {
            n += 1;
        }
    }
    n
}

#[test]
fn every_workload_runs_and_leaves_what_it_says() {
    let p = Params::quick();
    let tmp = tempfile::tempdir().unwrap();
    let mut fs = HostFs::default();
    for w in WORKLOADS {
        let root = tmp.path().join(w);
        std::fs::create_dir(&root).unwrap();
        let out = run_workload(&mut fs, w, root.to_str().unwrap(), &p)
            .unwrap_or_else(|e| panic!("{w}: {e}"));
        assert_eq!(
            count_files(&root),
            out.files_left,
            "{w}: files left on disk"
        );
        for ph in &out.phases {
            assert!(ph.ops > 0, "{w}: {} did nothing", ph.bench);
            assert_eq!(ph.lat.len() as u64, ph.ops, "{w}: one latency per op");
        }
        let names: Vec<&str> = out.phases.iter().map(|p| p.bench).collect();
        let ops: Vec<u64> = out.phases.iter().map(|p| p.ops).collect();
        let files = tree_dirs(p.mdtest_depth, p.mdtest_fanout) * p.mdtest_items as u64;
        let dirs = tree_dirs(p.mdtest_depth, p.mdtest_fanout);
        match w {
            "mdtest" => {
                assert_eq!(
                    names,
                    [
                        "mdtest_mkdir",
                        "mdtest_create",
                        "mdtest_stat",
                        "mdtest_read",
                        "mdtest_remove",
                        "mdtest_rmdir"
                    ]
                );
                assert_eq!(ops, [dirs, files, files, files, files, dirs]);
                assert_eq!(out.phases[3].bytes, files * p.mdtest_bytes);
            }
            "create_empty" => assert_eq!(ops, [p.create_empty_n]),
            "delete_2m" => assert_eq!(ops, [p.delete_2m_n]),
            "createdel_ordered" => assert_eq!(ops, [p.createdel_n, p.createdel_n]),
            // filebench loops: every flowop of every loop runs while the fileset has both
            // existing and absent files, which the quick sizes keep true.
            "fileserver" => assert_eq!(ops, [p.fileserver_loops * 11]),
            "webserver" => {
                assert_eq!(ops, [p.webserver_loops * 31]);
                let log = std::fs::metadata(root.join("log")).unwrap().len();
                assert!(log >= p.webserver_loops && log <= p.webserver_loops * p.append_max);
            }
            "varmail" => assert_eq!(ops, [p.varmail_loops * 13]),
            _ => unreachable!(),
        }
        fs.remove_tree(root.to_str().unwrap()).unwrap();
    }
}

/// A read that comes back short is an error, not a figure.
#[test]
fn a_truncated_file_fails_the_read_check() {
    struct Shrinking(HostFs);
    impl Fs for Shrinking {
        type File = std::fs::File;
        fn open(
            &mut self,
            path: &str,
            how: workloads::Open,
        ) -> Result<Self::File, workloads::Errno> {
            if how == workloads::Open::Read {
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(path)
                    .unwrap()
                    .set_len(1)
                    .unwrap();
            }
            self.0.open(path, how)
        }
        fn write(&mut self, f: &mut Self::File, d: &[u8]) -> Result<(), workloads::Errno> {
            self.0.write(f, d)
        }
        fn read(&mut self, f: &mut Self::File, b: &mut [u8]) -> Result<usize, workloads::Errno> {
            self.0.read(f, b)
        }
        fn fsync(&mut self, f: &mut Self::File) -> Result<(), workloads::Errno> {
            self.0.fsync(f)
        }
        fn close(&mut self, f: Self::File) -> Result<(), workloads::Errno> {
            self.0.close(f)
        }
        fn fsync_dir(&mut self, p: &str) -> Result<(), workloads::Errno> {
            self.0.fsync_dir(p)
        }
        fn stat_size(&mut self, p: &str) -> Result<u64, workloads::Errno> {
            self.0.stat_size(p)
        }
        fn mkdir(&mut self, p: &str) -> Result<(), workloads::Errno> {
            self.0.mkdir(p)
        }
        fn unlink(&mut self, p: &str) -> Result<(), workloads::Errno> {
            self.0.unlink(p)
        }
        fn rmdir(&mut self, p: &str) -> Result<(), workloads::Errno> {
            self.0.rmdir(p)
        }
        fn remove_tree(&mut self, p: &str) -> Result<(), workloads::Errno> {
            self.0.remove_tree(p)
        }
        fn is_dir(&mut self, p: &str) -> bool {
            self.0.is_dir(p)
        }
        fn now_ns(&mut self) -> u64 {
            self.0.now_ns()
        }
        fn print(&mut self, l: &str) {
            self.0.print(l)
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("w");
    std::fs::create_dir(&root).unwrap();
    let e = run_workload(
        &mut Shrinking(HostFs::default()),
        "webserver",
        root.to_str().unwrap(),
        &Params::quick(),
    )
    .unwrap_err();
    assert!(e.contains("1 bytes, expected 16384"), "{e}");
}

#[test]
fn the_program_prints_a_result_per_phase_and_target() {
    let tmp = tempfile::tempdir().unwrap();
    for d in ["a", "b"] {
        std::fs::create_dir(tmp.path().join(d)).unwrap();
    }
    let a = format!("a:{}", tmp.path().join("a").display());
    let b = format!("b:{}", tmp.path().join("b").display());
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_workloads-host"))
        .args([
            &a,
            &b,
            "reps=2",
            "quick",
            "workloads=mdtest,createdel_ordered",
            "missing:/nonexistent/x",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{text}");
    let results: Vec<&str> = text.lines().filter(|l| l.starts_with("RESULT ")).collect();
    // 6 mdtest phases + 2 createdel phases, for 2 targets.
    assert_eq!(results.len(), 16, "{text}");
    assert!(
        results
            .iter()
            .all(|l| l.contains(" reps=2") && l.contains(" p99_us=")),
        "{text}"
    );
    assert!(text.contains("SKIP workloads fs=missing"), "{text}");
    assert!(text.contains("workloads: 16 results, 0 errors"), "{text}");
    // Nothing left in the targets.
    for d in ["a", "b"] {
        assert_eq!(std::fs::read_dir(tmp.path().join(d)).unwrap().count(), 0);
    }
}

/// A target labelled tmpfs that is not on a tmpfs is refused, not measured under that name.
#[test]
fn a_wrong_label_is_an_error() {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let on_disk = format!("tmpfs:{}", tmp.path().display());
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_workloads-host"))
        .args([&on_disk, "reps=1", "quick", "workloads=create_empty"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let on_tmpfs = std::fs::read_to_string("/proc/mounts")
        .unwrap()
        .lines()
        .any(|l| {
            l.split(' ').nth(2) == Some("tmpfs")
                && tmp.path().starts_with(l.split(' ').nth(1).unwrap())
                && l.split(' ').nth(1) != Some("/")
        });
    if on_tmpfs {
        return; // the build directory is itself on a tmpfs: nothing to refuse
    }
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("ERROR workloads fs=tmpfs:"), "{text}");
    assert!(!text.contains("RESULT"), "{text}");
}

#[test]
fn bad_arguments_are_refused() {
    let bad = |args: &[&str]| workloads::parse_options(args).unwrap_err();
    assert!(bad(&["w"]).contains("no targets"));
    assert!(bad(&["w", "x:/d", "workloads=nope"]).contains("unknown workload"));
    assert!(bad(&["w", "x:/d", "reps=z"]).contains("bad reps"));
    assert!(bad(&["w", "frob"]).contains("unknown argument"));
}

#[test]
fn every_system_goes_first_and_follows_every_other_equally_often() {
    for n in 1..=8usize {
        let mut first = vec![0u32; n];
        let mut follows = vec![vec![0u32; n]; n];
        for rep in 1..=2 * n {
            let order = workloads::rep_order(n, rep);
            let mut sorted = order.clone();
            sorted.sort_unstable();
            assert_eq!(
                sorted,
                (0..n).collect::<Vec<_>>(),
                "n={n} rep={rep}: {order:?}"
            );
            first[order[0]] += 1;
            for w in order.windows(2) {
                follows[w[1]][w[0]] += 1;
            }
        }
        assert!(first.iter().all(|&f| f == 2), "n={n}: firsts {first:?}");
        // 2n repetitions of n-1 adjacent pairs: each of the n(n-1) ordered pairs twice.
        for (b, row) in follows.iter().enumerate() {
            for (a, &c) in row.iter().enumerate() {
                if a != b {
                    assert_eq!(c, 2, "n={n}: {b} after {a}: {follows:?}");
                }
            }
        }
    }
    assert!(workloads::rep_order(0, 1).is_empty());
}

/// tools/dbfs-fuse/rep_order.sh orders the shell benchmarks' systems: it must agree.
#[test]
fn the_shell_benchmarks_order_their_systems_the_same_way() {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tools/dbfs-fuse/rep_order.sh"
    );
    for n in 1..=6usize {
        for rep in 1..=2 * n {
            let out = std::process::Command::new("bash")
                .arg("-c")
                .arg(format!(". '{script}' && rep_order {n} {rep}"))
                .output()
                .expect("bash runs");
            assert!(out.status.success(), "rep_order {n} {rep}: {out:?}");
            let shell: Vec<usize> = String::from_utf8_lossy(&out.stdout)
                .split_whitespace()
                .map(|w| w.parse().expect("an index"))
                .collect();
            assert_eq!(shell, workloads::rep_order(n, rep), "n={n} rep={rep}");
        }
    }
}
