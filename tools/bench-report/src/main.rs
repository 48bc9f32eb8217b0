//! `bench-report`: turns the console log of a benchmark boot into a table and charts.
//!
//! ```text
//! bench-report LOG --out-dir DIR [--title TEXT] [--font TTF]
//! ```
//!
//! Reads every `RESULT key=value ...` line of LOG (see shared BENCH-PROTOCOL.md) and writes
//! `DIR/results.csv` (every field of every line), `DIR/summary.md` (throughput in MB/s per
//! file system with `dbfs/fat32` and `each/raw` ratios; createdel rates per N; operation rates
//! and p99 latency of the `ops_per_sec` lines of bench/workloads), and the charts
//! `DIR/throughput.{svg,png}`, `DIR/ratio.{svg,png}` (each file system's MB/s over rawq, or raw
//! where a row has no rawq, on a log scale) and `DIR/createdel.{svg,png}` for the workloads
//! present.
//! Malformed RESULT lines are skipped with a warning; a log without any RESULT line is an
//! error (exit 1). The SVG is the primary chart. Without a TrueType font on the host the PNG
//! is drawn without text, and a PNG that cannot be drawn is reported and skipped: fonts never
//! fail a report.

mod chart;
mod csv;
mod parse;
mod summary;
mod text;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;

use chart::ChartKind;

#[derive(Parser, Debug)]
#[command(about = "Turn a benchmark console log (RESULT lines) into CSV, Markdown and charts")]
struct Args {
    /// Console log of a benchmark boot, e.g. build/bench/bench-guest.log.
    log: PathBuf,
    /// Directory for results.csv, summary.md and the charts (created if missing).
    #[arg(long)]
    out_dir: PathBuf,
    /// Title of the summary and the charts.
    #[arg(long, default_value = "dbfs-os benchmarks")]
    title: String,
    /// TrueType font for PNG text (default: DejaVu Sans or Liberation Sans if installed).
    #[arg(long)]
    font: Option<PathBuf>,
}

fn main() -> ExitCode {
    match run(&Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("bench-report: error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn write_file(path: &Path, contents: impl AsRef<[u8]>) -> Result<(), String> {
    std::fs::write(path, contents).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    println!("wrote {}", path.display());
    Ok(())
}

fn run(args: &Args) -> Result<(), String> {
    let bytes =
        std::fs::read(&args.log).map_err(|e| format!("cannot read {}: {e}", args.log.display()))?;
    // Console logs may carry stray non-UTF-8 bytes; they never sit inside a RESULT field we use.
    let log = String::from_utf8_lossy(&bytes);
    let (records, skipped) = parse::parse_log(&log);
    for line in &skipped {
        eprintln!(
            "bench-report: warning: {}:{}: skipped malformed RESULT line: {}",
            args.log.display(),
            line.line_no,
            line.error
        );
    }
    if records.is_empty() {
        return Err(format!(
            "no RESULT lines in {} ({} malformed): was the benchmark run to completion?",
            args.log.display(),
            skipped.len()
        ));
    }

    let summary = summary::summarize(&records);
    for warning in &summary.warnings {
        eprintln!("bench-report: warning: {}: {warning}", args.log.display());
    }

    std::fs::create_dir_all(&args.out_dir)
        .map_err(|e| format!("cannot create {}: {e}", args.out_dir.display()))?;
    write_file(&args.out_dir.join("results.csv"), csv::render_csv(&records))?;
    let source = args.log.display().to_string();
    let mut markdown = summary::render_markdown(&summary, &args.title, &source, records.len());
    markdown.push_str(&summary::render_device_cost(&records));
    write_file(&args.out_dir.join("summary.md"), markdown)?;

    let font = text::load_font(args.font.as_deref());
    if let Some(font) = &font {
        println!("PNG text font: {}", font.path.display());
    } else {
        eprintln!(
            "bench-report: note: no TrueType font found (install fonts-dejavu-core or pass --font): \
             PNG charts are drawn without text; the SVG charts are complete"
        );
    }
    for kind in [
        ChartKind::Throughput,
        ChartKind::CreateDel,
        ChartKind::Seconds,
        ChartKind::Ratio,
    ] {
        if !kind.has_data(&summary) {
            continue;
        }
        let stem = kind.file_stem();
        let svg = chart::render_svg(kind, &summary, &args.title, font.as_ref())
            .map_err(|e| format!("{stem}.svg: {e}"))?;
        write_file(&args.out_dir.join(format!("{stem}.svg")), svg)?;
        match chart::render_png(kind, &summary, &args.title, font.as_ref()) {
            Ok(png) => write_file(&args.out_dir.join(format!("{stem}.png")), png)?,
            Err(e) => eprintln!("bench-report: note: {stem}.png skipped: {e}"),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(log: PathBuf, out_dir: PathBuf) -> Args {
        Args {
            log,
            out_dir,
            title: "Run".to_string(),
            font: None,
        }
    }

    #[test]
    fn writes_every_output_for_a_log() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("bench.log");
        std::fs::write(
            &log,
            "boot\nRESULT bench=seqwrite fs=fat32 MBps=117.76\nRESULT bench=seqwrite fs=dbfs MBps=67.17\n\
             RESULT oops\nRESULT bench=createdel fs=dbfs n=100 creates_per_sec=78.1 deletes_per_sec=227.3\n",
        )
        .unwrap();
        let out = dir.path().join("out");
        run(&args(log, out.clone())).unwrap();
        for name in [
            "results.csv",
            "summary.md",
            "throughput.svg",
            "createdel.svg",
        ] {
            assert!(out.join(name).is_file(), "{name} missing");
        }
        let csv = std::fs::read_to_string(out.join("results.csv")).unwrap();
        assert_eq!(csv.lines().count(), 4, "header and three good lines");
        let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
        assert!(summary.contains("| seqwrite | 67.17 | 117.76 | 0.57x |"));
    }

    #[test]
    fn log_without_results_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("bench.log");
        std::fs::write(&log, "boot\nRESULT broken\npanic\n").unwrap();
        let error = run(&args(log, dir.path().join("out"))).unwrap_err();
        assert!(error.contains("no RESULT lines"), "{error}");
        assert!(
            !dir.path().join("out").exists(),
            "nothing written for an empty log"
        );
    }
}
