//! `tools/dbfs-fuse/bench-direct.sh` with `CHARTS_FROM`: the direct table's charts drawn again
//! from a saved run's RESULT lines (no mount, no fio), through `tools/bench-report`.

use std::path::Path;
use std::process::Command;

const RWS: [&str; 4] = ["write", "randwrite", "read", "randread"];

/// A saved run: every line of both phases for dbfs (190, 200, 230 MB/s over three repetitions)
/// and ext4 (half of that), plus one failed run of ext4 that the charts must leave out.
fn saved_run() -> String {
    let mut text = String::from("# dbfs-fuse direct-I/O benchmark (test data)\n");
    for phase in ["fresh", "aged"] {
        for bs in ["1m", "4k"] {
            for jobs in [1, 4] {
                for (rep, mbps) in [(1, 190.0), (2, 200.0), (3, 230.0)] {
                    for (fs, scale) in [("dbfs", 1.0), ("ext4", 0.5)] {
                        for rw in RWS {
                            text.push_str(&format!(
                                "RESULT bench=fio-direct phase={phase} fs={fs} rw={rw} bs={bs} \
                                 jobs={jobs} rep={rep} MBps={:.1}\n",
                                mbps * scale
                            ));
                        }
                    }
                }
            }
        }
    }
    text.push_str(
        "RESULT bench=fio-direct phase=fresh fs=ext4 rw=read bs=4k jobs=1 rep=4 MBps=FAIL\n",
    );
    text
}

#[test]
fn charts_are_drawn_again_from_a_saved_run() {
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("run.txt");
    std::fs::write(&saved, saved_run()).unwrap();
    let charts = dir.path().join("charts");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench-direct.sh");
    let out = Command::new("bash")
        .arg(&script)
        .env("CHARTS_FROM", &saved)
        .env("CHARTS", &charts)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "bench-direct.sh failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    for phase in ["fresh", "aged"] {
        for bs in ["1m", "4k"] {
            let at = charts.join(format!("{phase}-{bs}"));
            let svg = std::fs::read_to_string(at.join("throughput.svg"))
                .unwrap_or_else(|e| panic!("{phase}-{bs}/throughput.svg: {e}"));
            for label in ["write-1j", "randread-4j", "dbfs", "ext4"] {
                assert!(svg.contains(label), "{phase}-{bs} chart lacks {label}");
            }
            let summary = std::fs::read_to_string(at.join("summary.md")).unwrap();
            // The median of each line, and dbfs over ext4 as a ratio column.
            for rw in RWS {
                for jobs in [1, 4] {
                    let row = format!("| {rw}-{jobs}j | 200.00 | 100.00 | 2.00x |");
                    assert!(
                        summary.contains(&row),
                        "{phase}-{bs}: no {row:?} in\n{summary}"
                    );
                }
            }
        }
    }
}

#[test]
fn a_saved_run_without_results_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("run.txt");
    std::fs::write(&saved, "# nothing was measured\n").unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench-direct.sh");
    let out = Command::new("bash")
        .arg(&script)
        .env("CHARTS_FROM", &saved)
        .env("CHARTS", dir.path().join("charts"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no RESULT lines"));
    assert!(!dir.path().join("charts").exists());
}
