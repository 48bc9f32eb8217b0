//! Grouping records into the two comparisons the protocol asks for, and the Markdown summary.
//!
//! Throughput results (lines with `MBps`, 10^6 bytes/s) are keyed by benchmark and file system;
//! createdel results (lines with `creates_per_sec`) by N and file system; operation rates (lines
//! with `ops_per_sec`, from bench/workloads: filebench-style personalities, the mdtest tree,
//! create_empty, ...) by benchmark and file system, with their `p99_us`; run times (lines with
//! only `secs`, e.g. sqlite's speedtest1: lower is better) by benchmark and file system. When the log holds the
//! same key more than once (several runs concatenated), the median is reported, as the protocol
//! asks. Ratios compare file systems measured in the same log, never against a figure from
//! elsewhere.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::parse::Record;

/// Benchmarks in the protocol's order (the list the guest's init runs); others follow in
/// order of appearance.
pub const PROTOCOL_ORDER: &[&str] = abi::bench::BENCHMARKS;

/// File systems this project compares, first in every table and chart, in this order.
const KNOWN_FS: [&str; 4] = ["dbfs", "fat32", "raw", "rawq"];

/// The median of one measurement and how many results it came from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measurement {
    pub value: f64,
    pub samples: usize,
}

/// One benchmark's value by file system: MB/s (10^6 bytes/s) in `Summary::throughput`,
/// seconds in `Summary::seconds`.
#[derive(Debug, Clone, PartialEq)]
pub struct ThroughputRow {
    pub bench: String,
    pub values: BTreeMap<String, Measurement>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CreateDelRow {
    pub n: u64,
    pub creates_per_sec: BTreeMap<String, Measurement>,
    pub deletes_per_sec: BTreeMap<String, Measurement>,
}

/// One phase of bench/workloads: operations per second and p99 latency (µs) by file system.
#[derive(Debug, Clone, PartialEq)]
pub struct OpsRow {
    pub bench: String,
    pub ops_per_sec: BTreeMap<String, Measurement>,
    pub p99_us: BTreeMap<String, Measurement>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Summary {
    /// Every file system in the log: dbfs, fat32, raw first, then others as they appear.
    pub fs_order: Vec<String>,
    pub throughput: Vec<ThroughputRow>,
    pub createdel: Vec<CreateDelRow>,
    /// Lines with `ops_per_sec`, in order of appearance (they may carry MBps too: they are
    /// listed here, not in `throughput`).
    pub ops: Vec<OpsRow>,
    /// Lines with `secs` and none of the rates above (a whole run's time, lower is better).
    pub seconds: Vec<ThroughputRow>,
    /// Benchmarks with neither a rate nor `secs`: in the CSV only.
    pub other_benches: Vec<String>,
    /// Problems with individual records (e.g. a field that is not a number).
    pub warnings: Vec<String>,
}

/// Every value seen per key (benchmark or N) and file system.
#[derive(Default)]
struct Samples<K: Ord> {
    values: BTreeMap<K, BTreeMap<String, Vec<f64>>>,
}

impl<K: Ord> Samples<K> {
    fn push(&mut self, key: K, fs: &str, value: f64) {
        self.values
            .entry(key)
            .or_default()
            .entry(fs.to_string())
            .or_default()
            .push(value);
    }

    fn medians(&self, key: &K) -> BTreeMap<String, Measurement> {
        let Some(per_fs) = self.values.get(key) else {
            return BTreeMap::new();
        };
        per_fs
            .iter()
            .map(|(fs, values)| {
                let measurement = Measurement {
                    value: median(values),
                    samples: values.len(),
                };
                (fs.clone(), measurement)
            })
            .collect()
    }
}

/// Median of a non-empty list (mean of the middle two for an even count).
fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    if sorted.len().is_multiple_of(2) {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    } else {
        sorted[mid]
    }
}

pub fn summarize(records: &[Record]) -> Summary {
    let mut summary = Summary::default();
    let mut seen_fs: Vec<String> = Vec::new();
    let mut bench_order: Vec<String> = Vec::new();
    let mut throughput: Samples<String> = Samples::default();
    let mut creates: Samples<u64> = Samples::default();
    let mut deletes: Samples<u64> = Samples::default();
    let mut ops: Samples<String> = Samples::default();
    let mut p99: Samples<String> = Samples::default();
    let mut ops_order: Vec<String> = Vec::new();
    let mut secs: Samples<String> = Samples::default();
    let mut secs_order: Vec<String> = Vec::new();

    for record in records {
        let (bench, fs) = (record.bench(), record.fs());
        if !seen_fs.iter().any(|known| known == fs) {
            seen_fs.push(fs.to_string());
        }
        let at = format!("line {} ({bench} on {fs})", record.line_no);
        if record.fields.contains_key("ops_per_sec") {
            match record.number("ops_per_sec") {
                Some(rate) => {
                    if !ops_order.iter().any(|known| known == bench) {
                        ops_order.push(bench.to_string());
                    }
                    ops.push(bench.to_string(), fs, rate);
                    if let Some(us) = record.number("p99_us") {
                        p99.push(bench.to_string(), fs, us);
                    }
                }
                None => summary
                    .warnings
                    .push(format!("{at}: ops_per_sec is not a number")),
            }
        } else if record.fields.contains_key("MBps") {
            match record.number("MBps") {
                Some(mbps) => {
                    if !bench_order.iter().any(|known| known == bench) {
                        bench_order.push(bench.to_string());
                    }
                    throughput.push(bench.to_string(), fs, mbps);
                }
                None => summary.warnings.push(format!("{at}: MBps is not a number")),
            }
        } else if record.fields.contains_key("creates_per_sec") {
            let n = record.fields.get("n").and_then(|n| n.parse::<u64>().ok());
            match (
                n,
                record.number("creates_per_sec"),
                record.number("deletes_per_sec"),
            ) {
                (Some(n), Some(created), deleted) => {
                    creates.push(n, fs, created);
                    if let Some(deleted) = deleted {
                        deletes.push(n, fs, deleted);
                    }
                }
                _ => summary
                    .warnings
                    .push(format!("{at}: n or creates_per_sec is not a number")),
            }
        } else if record.fields.contains_key("secs") {
            match record.number("secs") {
                Some(t) => {
                    if !secs_order.iter().any(|known| known == bench) {
                        secs_order.push(bench.to_string());
                    }
                    secs.push(bench.to_string(), fs, t);
                }
                None => summary.warnings.push(format!("{at}: secs is not a number")),
            }
        } else if !summary.other_benches.iter().any(|known| known == bench) {
            summary.other_benches.push(bench.to_string());
        }
    }

    summary.fs_order = KNOWN_FS
        .iter()
        .filter(|fs| seen_fs.iter().any(|seen| seen == *fs))
        .map(|fs| fs.to_string())
        .chain(
            seen_fs
                .iter()
                .filter(|fs| !KNOWN_FS.contains(&fs.as_str()))
                .cloned(),
        )
        .collect();

    bench_order.sort_by_key(|bench| {
        PROTOCOL_ORDER
            .iter()
            .position(|known| known == bench)
            .unwrap_or(PROTOCOL_ORDER.len())
    });
    summary.throughput = bench_order
        .into_iter()
        .map(|bench| ThroughputRow {
            values: throughput.medians(&bench),
            bench,
        })
        .collect();

    summary.ops = ops_order
        .into_iter()
        .map(|bench| OpsRow {
            ops_per_sec: ops.medians(&bench),
            p99_us: p99.medians(&bench),
            bench,
        })
        .collect();

    summary.seconds = secs_order
        .into_iter()
        .map(|bench| ThroughputRow {
            values: secs.medians(&bench),
            bench,
        })
        .collect();

    summary.createdel = creates
        .values
        .keys()
        .map(|&n| CreateDelRow {
            n,
            creates_per_sec: creates.medians(&n),
            deletes_per_sec: deletes.medians(&n),
        })
        .collect();
    summary
}

/// The ratio columns of the throughput table: `dbfs/fat32`, then each file system over `raw`
/// (one synchronous request per call), then each file system over `rawq` (the device at full
/// queue depth, the ceiling a file system is judged against).
pub fn ratio_columns(fs_order: &[String]) -> Vec<(String, String)> {
    let has = |name: &str| fs_order.iter().any(|fs| fs == name);
    let mut columns = Vec::new();
    if has("dbfs") && has("fat32") {
        columns.push(("dbfs".to_string(), "fat32".to_string()));
    }
    // The host side (tools/dbfs-fuse/bench-direct.sh): fuse2fs's file systems and the host
    // directory.
    for other in ["ext4", "ext3", "ext2", "host"] {
        if has("dbfs") && has(other) {
            columns.push(("dbfs".to_string(), other.to_string()));
        }
    }
    for ceiling in ["raw", "rawq"] {
        if has(ceiling) {
            for fs in fs_order.iter().filter(|fs| *fs != "raw" && *fs != "rawq") {
                columns.push((fs.clone(), ceiling.to_string()));
            }
        }
    }
    columns
}

/// `numerator / denominator` formatted as `0.57x`; `-` when either is missing or zero.
fn ratio_cell(row: &BTreeMap<String, Measurement>, numerator: &str, denominator: &str) -> String {
    match (row.get(numerator), row.get(denominator)) {
        (Some(top), Some(bottom)) if bottom.value > 0.0 => {
            format!("{:.2}x", top.value / bottom.value)
        }
        _ => "-".to_string(),
    }
}

fn value_cell(measurement: Option<&Measurement>, decimals: usize) -> String {
    match measurement {
        Some(m) => format!("{:.*}", decimals, m.value),
        None => "-".to_string(),
    }
}

fn table_header(out: &mut String, columns: &[String]) {
    let _ = writeln!(out, "| {} |", columns.join(" | "));
    let rules: Vec<&str> = columns
        .iter()
        .enumerate()
        .map(|(i, _)| if i == 0 { "---" } else { "--:" })
        .collect();
    let _ = writeln!(out, "|{}|", rules.join("|"));
}

/// The Markdown report: one table for throughput, one for createdel.
pub fn render_markdown(
    summary: &Summary,
    title: &str,
    source: &str,
    result_count: usize,
) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# {title}\n");
    let _ = writeln!(
        out,
        "Generated by `bench-report` from `{source}` ({result_count} RESULT lines). \
         MB/s = 10^6 bytes/s. Ratios compare file systems measured in the same log."
    );
    let repeated = summary
        .throughput
        .iter()
        .flat_map(|row| row.values.values())
        .chain(
            summary
                .createdel
                .iter()
                .flat_map(|row| row.creates_per_sec.values()),
        )
        .any(|m| m.samples > 1);
    if repeated {
        let _ = writeln!(
            out,
            "Some workloads appear more than once in the log: each cell is the median."
        );
    }

    if !summary.throughput.is_empty() {
        let _ = writeln!(out, "\n## Throughput (MB/s)\n");
        let ratios = ratio_columns(&summary.fs_order);
        let mut columns = vec!["benchmark".to_string()];
        columns.extend(summary.fs_order.iter().cloned());
        columns.extend(ratios.iter().map(|(top, bottom)| format!("{top}/{bottom}")));
        table_header(&mut out, &columns);
        for row in &summary.throughput {
            let mut cells = vec![row.bench.clone()];
            cells.extend(
                summary
                    .fs_order
                    .iter()
                    .map(|fs| value_cell(row.values.get(fs), 2)),
            );
            cells.extend(
                ratios
                    .iter()
                    .map(|(top, bottom)| ratio_cell(&row.values, top, bottom)),
            );
            let _ = writeln!(out, "| {} |", cells.join(" | "));
        }
    }

    if !summary.createdel.is_empty() {
        let _ = writeln!(out, "\n## createdel (files per second)\n");
        let fs_present: Vec<&String> = summary
            .fs_order
            .iter()
            .filter(|fs| {
                summary
                    .createdel
                    .iter()
                    .any(|row| row.creates_per_sec.contains_key(*fs))
            })
            .collect();
        let mut columns = vec!["n".to_string()];
        columns.extend(fs_present.iter().map(|fs| format!("{fs} creates/s")));
        columns.extend(fs_present.iter().map(|fs| format!("{fs} deletes/s")));
        table_header(&mut out, &columns);
        for row in &summary.createdel {
            let mut cells = vec![row.n.to_string()];
            cells.extend(
                fs_present
                    .iter()
                    .map(|fs| value_cell(row.creates_per_sec.get(*fs), 1)),
            );
            cells.extend(
                fs_present
                    .iter()
                    .map(|fs| value_cell(row.deletes_per_sec.get(*fs), 1)),
            );
            let _ = writeln!(out, "| {} |", cells.join(" | "));
        }
    }

    if !summary.ops.is_empty() {
        let _ = writeln!(out, "\n## Operations per second (p99 latency in µs)\n");
        let fs_present: Vec<&String> = summary
            .fs_order
            .iter()
            .filter(|fs| {
                summary
                    .ops
                    .iter()
                    .any(|row| row.ops_per_sec.contains_key(*fs))
            })
            .collect();
        // dbfs against its reference: FAT32 in the guest, fuse2fs ext4 on the host.
        let ratios: Vec<(&str, &str)> = [("dbfs", "fat32"), ("dbfs-fuse", "fuse2fs-ext4")]
            .into_iter()
            .filter(|(a, b)| {
                fs_present.iter().any(|fs| fs == a) && fs_present.iter().any(|fs| fs == b)
            })
            .collect();
        let mut columns = vec!["benchmark".to_string()];
        columns.extend(fs_present.iter().map(|fs| format!("{fs} ops/s")));
        columns.extend(ratios.iter().map(|(a, b)| format!("{a}/{b}")));
        columns.extend(fs_present.iter().map(|fs| format!("{fs} p99 µs")));
        table_header(&mut out, &columns);
        for row in &summary.ops {
            let mut cells = vec![row.bench.clone()];
            cells.extend(
                fs_present
                    .iter()
                    .map(|fs| value_cell(row.ops_per_sec.get(*fs), 1)),
            );
            cells.extend(
                ratios
                    .iter()
                    .map(|(a, b)| ratio_cell(&row.ops_per_sec, a, b)),
            );
            cells.extend(
                fs_present
                    .iter()
                    .map(|fs| value_cell(row.p99_us.get(*fs), 1)),
            );
            let _ = writeln!(out, "| {} |", cells.join(" | "));
        }
    }

    if !summary.seconds.is_empty() {
        let _ = writeln!(out, "\n## Run time (seconds, lower is better)\n");
        // Each other file system's time over dbfs's: above 1, dbfs was faster.
        let others: Vec<&String> = summary.fs_order.iter().filter(|fs| *fs != "dbfs").collect();
        let has_dbfs = summary.fs_order.iter().any(|fs| fs == "dbfs");
        let mut columns = vec!["benchmark".to_string()];
        columns.extend(summary.fs_order.iter().cloned());
        if has_dbfs {
            columns.extend(others.iter().map(|fs| format!("{fs}/dbfs")));
        }
        table_header(&mut out, &columns);
        for row in &summary.seconds {
            let mut cells = vec![row.bench.clone()];
            cells.extend(
                summary
                    .fs_order
                    .iter()
                    .map(|fs| value_cell(row.values.get(fs), 3)),
            );
            if has_dbfs {
                cells.extend(others.iter().map(|fs| ratio_cell(&row.values, fs, "dbfs")));
            }
            let _ = writeln!(out, "| {} |", cells.join(" | "));
        }
    }

    if !summary.other_benches.is_empty() {
        let _ = writeln!(
            out,
            "\nOther results (in results.csv only): {}.",
            summary.other_benches.join(", ")
        );
    }
    out
}

/// Per file system: the `wamp` and the `req_per_mib` samples of one benchmark.
type CostCells = BTreeMap<String, (Vec<f64>, Vec<f64>)>;

/// The device models the RESULT lines name (`disk=`) and, per benchmark and file system, the
/// median `wamp` (device bytes written / bytes written) and `req_per_mib` (device requests
/// per MiB moved): a markdown section, empty when no line carries either field.
pub fn render_device_cost(records: &[Record]) -> String {
    let mut models: Vec<String> = Vec::new();
    let mut fs_order: Vec<String> = Vec::new();
    let mut rows: Vec<(String, CostCells)> = Vec::new();
    for record in records {
        if let Some(disk) = record.fields.get("disk") {
            if !models.contains(disk) {
                models.push(disk.clone());
            }
        }
        let (wamp, rpm) = (record.number("wamp"), record.number("req_per_mib"));
        if wamp.is_none() && rpm.is_none() {
            continue;
        }
        let (bench, fs) = (record.bench().to_string(), record.fs().to_string());
        if !fs_order.contains(&fs) {
            fs_order.push(fs.clone());
        }
        let at = match rows.iter().position(|(b, _)| *b == bench) {
            Some(at) => at,
            None => {
                rows.push((bench, BTreeMap::new()));
                rows.len() - 1
            }
        };
        let cell = rows[at].1.entry(fs).or_default();
        cell.0.extend(wamp);
        cell.1.extend(rpm);
    }
    let mut out = String::new();
    if !models.is_empty() {
        let _ = writeln!(out, "\nDevice model (`DISK=`): {}\n", models.join(", "));
    }
    if rows.is_empty() {
        return out;
    }
    let _ = writeln!(
        out,
        "\n## Bytes on the disk (write amplification / device requests per MiB)\n"
    );
    let _ = write!(out, "| benchmark |");
    for fs in &fs_order {
        let _ = write!(out, " {fs} wamp | {fs} req/MiB |");
    }
    let _ = write!(out, "\n|---|");
    for _ in &fs_order {
        let _ = write!(out, "--:|--:|");
    }
    out.push('\n');
    let cell = |v: &[f64]| {
        if v.is_empty() {
            "-".to_string()
        } else {
            format!("{:.2}", median(v))
        }
    };
    for (bench, by_fs) in &rows {
        let _ = write!(out, "| {bench} |");
        for fs in &fs_order {
            match by_fs.get(fs) {
                Some((w, r)) => {
                    let _ = write!(out, " {} | {} |", cell(w), cell(r));
                }
                None => {
                    let _ = write!(out, " - | - |");
                }
            }
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_log;

    #[test]
    fn device_cost_names_the_model_and_takes_medians() {
        let (records, _) = parse_log(
            "RESULT bench=randwrite4k fs=dbfs disk=nvme-seed MBps=1 wamp=0.40 req_per_mib=4\n\
             RESULT bench=randwrite4k fs=dbfs disk=nvme-seed MBps=1 wamp=0.50 req_per_mib=6\n\
             RESULT bench=randwrite4k fs=dbfs disk=nvme-seed MBps=1 wamp=9.00 req_per_mib=5\n\
             RESULT bench=seqread fs=fat32 disk=nvme-seed MBps=1 req_per_mib=1.6\n",
        );
        let md = render_device_cost(&records);
        assert!(md.contains("Device model (`DISK=`): nvme-seed"), "{md}");
        assert!(md.contains("| randwrite4k | 0.50 | 5.00 | - | - |"), "{md}");
        assert!(md.contains("| seqread | - | - | - | 1.60 |"), "{md}");
        let (plain, _) = parse_log("RESULT bench=seqread fs=dbfs MBps=1\n");
        assert_eq!(render_device_cost(&plain), "");
    }

    const LOG: &str = "\
RESULT bench=randread fs=fat32 MBps=100.0
RESULT bench=seqwrite fs=fat32 MBps=117.76
RESULT bench=seqwrite fs=raw MBps=452.59
RESULT bench=seqwrite fs=dbfs MBps=67.17
RESULT bench=custom fs=dbfs MBps=5
RESULT bench=randread fs=dbfs MBps=50.0
RESULT bench=createdel fs=fat32 n=200 creates_per_sec=47.5 deletes_per_sec=175.4
RESULT bench=createdel fs=dbfs n=100 creates_per_sec=78.1 deletes_per_sec=227.3
RESULT bench=createdel fs=fat32 n=100 creates_per_sec=120.7 deletes_per_sec=401.5
RESULT bench=cold fs=dbfs faults=3
";

    fn summary() -> Summary {
        let (records, skipped) = parse_log(LOG);
        assert!(skipped.is_empty());
        summarize(&records)
    }

    #[test]
    fn orders_fs_and_benches() {
        let summary = summary();
        assert_eq!(summary.fs_order, ["dbfs", "fat32", "raw"]);
        let benches: Vec<&str> = summary
            .throughput
            .iter()
            .map(|row| row.bench.as_str())
            .collect();
        assert_eq!(benches, ["seqwrite", "randread", "custom"]);
        let ns: Vec<u64> = summary.createdel.iter().map(|row| row.n).collect();
        assert_eq!(ns, [100, 200]);
        assert_eq!(summary.other_benches, ["cold"]);
    }

    #[test]
    fn ratio_columns_follow_present_fs() {
        let names = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let pairs = ratio_columns(&names(&["dbfs", "fat32", "raw"]));
        let labels: Vec<String> = pairs.iter().map(|(a, b)| format!("{a}/{b}")).collect();
        assert_eq!(labels, ["dbfs/fat32", "dbfs/raw", "fat32/raw"]);
        assert!(ratio_columns(&names(&["dbfs"])).is_empty());
        let pairs = ratio_columns(&names(&["fat32", "raw", "ext4"]));
        let labels: Vec<String> = pairs.iter().map(|(a, b)| format!("{a}/{b}")).collect();
        assert_eq!(labels, ["fat32/raw", "ext4/raw"]);
        let pairs = ratio_columns(&names(&["dbfs", "ext4", "ext2", "host"]));
        let labels: Vec<String> = pairs.iter().map(|(a, b)| format!("{a}/{b}")).collect();
        assert_eq!(labels, ["dbfs/ext4", "dbfs/ext2", "dbfs/host"]);
        let pairs = ratio_columns(&names(&["dbfs", "fat32", "raw", "rawq"]));
        let labels: Vec<String> = pairs.iter().map(|(a, b)| format!("{a}/{b}")).collect();
        assert_eq!(
            labels,
            [
                "dbfs/fat32",
                "dbfs/raw",
                "fat32/raw",
                "dbfs/rawq",
                "fat32/rawq"
            ]
        );
    }

    #[test]
    fn markdown_has_values_and_ratios() {
        let markdown = render_markdown(&summary(), "Run 1", "bench.log", 10);
        assert!(markdown.starts_with("# Run 1\n"));
        assert!(markdown
            .contains("| benchmark | dbfs | fat32 | raw | dbfs/fat32 | dbfs/raw | fat32/raw |"));
        // 67.17 / 117.76 = 0.570, 67.17 / 452.59 = 0.148, 117.76 / 452.59 = 0.260
        assert!(markdown.contains("| seqwrite | 67.17 | 117.76 | 452.59 | 0.57x | 0.15x | 0.26x |"));
        // No raw result for randread: its raw ratios are blank, not zero.
        assert!(markdown.contains("| randread | 50.00 | 100.00 | - | 0.50x | - | - |"));
        assert!(markdown.contains("| custom | 5.00 | - | - | - | - | - |"));
        assert!(markdown.contains(
            "| n | dbfs creates/s | fat32 creates/s | dbfs deletes/s | fat32 deletes/s |"
        ));
        assert!(markdown.contains("| 100 | 78.1 | 120.7 | 227.3 | 401.5 |"));
        assert!(markdown.contains("| 200 | - | 47.5 | - | 175.4 |"));
        assert!(markdown.contains("in results.csv only): cold."));
        assert!(!markdown.contains("median"));
    }

    #[test]
    fn run_times_get_their_own_table_with_the_median() {
        let log = "RESULT bench=speedtest1 fs=dbfs size=10 rep=1 secs=2.5 wall_secs=2.6\n\
                   RESULT bench=speedtest1 fs=fat size=10 rep=1 secs=3.5\n\
                   RESULT bench=speedtest1 fs=dbfs size=10 rep=2 secs=2.3\n\
                   RESULT bench=speedtest1 fs=fat size=10 rep=2 secs=3.3\n\
                   RESULT bench=speedtest1 fs=dbfs size=10 rep=3 secs=9.0\n\
                   RESULT bench=speedtest1 fs=fat size=10 rep=3 secs=3.4\n\
                   RESULT bench=speedtest1 fs=fat size=10 rep=4 secs=oops\n";
        let (records, _) = parse_log(log);
        let summary = summarize(&records);
        assert!(summary.throughput.is_empty() && summary.other_benches.is_empty());
        assert_eq!(summary.seconds.len(), 1);
        assert_eq!(summary.seconds[0].values["dbfs"].value, 2.5);
        assert_eq!(summary.seconds[0].values["fat"].value, 3.4);
        assert_eq!(summary.warnings.len(), 1, "{:?}", summary.warnings);
        let markdown = render_markdown(&summary, "sqlite", "log", 7);
        assert!(markdown.contains("## Run time (seconds, lower is better)"));
        // fat over dbfs: 3.4 / 2.5 = 1.36, so dbfs was faster.
        assert!(
            markdown.contains("| speedtest1 | 2.500 | 3.400 | 1.36x |"),
            "{markdown}"
        );
    }

    #[test]
    fn repeated_results_use_the_median() {
        let log = "RESULT bench=seqread fs=dbfs MBps=10\n\
                   RESULT bench=seqread fs=dbfs MBps=30\n\
                   RESULT bench=seqread fs=dbfs MBps=20\n\
                   RESULT bench=seqread fs=fat32 MBps=10\n\
                   RESULT bench=seqread fs=fat32 MBps=20\n";
        let (records, _) = parse_log(log);
        let summary = summarize(&records);
        let row = &summary.throughput[0];
        assert_eq!(
            row.values["dbfs"],
            Measurement {
                value: 20.0,
                samples: 3
            }
        );
        assert_eq!(
            row.values["fat32"],
            Measurement {
                value: 15.0,
                samples: 2
            }
        );
        let markdown = render_markdown(&summary, "t", "log", 5);
        assert!(markdown.contains("| seqread | 20.00 | 15.00 | 1.33x |"));
        assert!(markdown.contains("median"));
    }

    #[test]
    fn unusable_numbers_are_warned_not_counted() {
        let log = "RESULT bench=seqread fs=dbfs MBps=fast\n\
                   RESULT bench=createdel fs=dbfs n=many creates_per_sec=1\n";
        let (records, _) = parse_log(log);
        let summary = summarize(&records);
        assert!(summary.throughput.is_empty());
        assert!(summary.createdel.is_empty());
        assert_eq!(summary.warnings.len(), 2);
    }

    #[test]
    fn operation_rates_get_their_own_table() {
        let log = "RESULT bench=varmail fs=dbfs ops=13 ops_per_sec=2000.0 MBps=5.0 p99_us=900.5\n\
                   RESULT bench=varmail fs=fat32 ops=13 ops_per_sec=1000.0 MBps=2.5 p99_us=5000.0\n\
                   RESULT bench=create_empty fs=dbfs ops=9 ops_per_sec=50 p99_us=3\n\
                   RESULT bench=create_empty fs=dbfs-fuse ops=9 ops_per_sec=oops\n";
        let (records, _) = parse_log(log);
        let summary = summarize(&records);
        // An ops_per_sec line is an operation rate, not a throughput line, even with MBps.
        assert!(summary.throughput.is_empty());
        assert_eq!(summary.ops.len(), 2);
        assert_eq!(summary.warnings.len(), 1);
        let markdown = render_markdown(&summary, "t", "log", 4);
        assert!(markdown.contains(
            "| benchmark | dbfs ops/s | fat32 ops/s | dbfs/fat32 | dbfs p99 µs | fat32 p99 µs |"
        ), "{markdown}");
        assert!(markdown.contains("| varmail | 2000.0 | 1000.0 | 2.00x | 900.5 | 5000.0 |"));
        assert!(markdown.contains("| create_empty | 50.0 | - | - | 3.0 | - |"));
    }

    #[test]
    fn zero_denominator_is_not_a_ratio() {
        let (records, _) =
            parse_log("RESULT bench=x fs=dbfs MBps=3\nRESULT bench=x fs=fat32 MBps=0\n");
        let markdown = render_markdown(&summarize(&records), "t", "log", 2);
        assert!(markdown.contains("| x | 3.00 | 0.00 | - |"));
    }
}
