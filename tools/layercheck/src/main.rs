//! layercheck's command line; the checks and their rules are documented in the library.

use std::path::PathBuf;
use std::process::ExitCode;

use layercheck::layers::Layers;

const HELP: &str = "\
layercheck: file-level import cycles, layer breaks and oversized files of Rust crates

usage:
  layercheck [--layers FILE] [--edges] SRC_DIR...   check each crate source directory
                                                    (holding lib.rs or main.rs)
  layercheck --max-lines N DIR...                   list .rs files under DIRs over N lines
                                                    (paths with a `tests` folder skipped)

  --layers FILE   one layer a line, lowest first: `name: path-prefix path-prefix ...`
                  (prefixes relative to SRC_DIR; every file must be covered); reports
                  every edge from a lower layer to a higher one
  --edges         also print every edge of the graph
  -h, --help      this text

An edge A -> B is file A naming an item that file B defines (crate::, super::, self::,
bare names through `use`, `pub use` re-exports followed to the defining file, globs).

exit status: 0 clean, 1 findings, 2 usage or parse error";

fn main() -> ExitCode {
    match run(std::env::args().skip(1).collect()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(message) => {
            eprintln!("layercheck: {message}");
            ExitCode::from(2)
        }
    }
}

/// Runs the command; `Ok(clean)`, or `Err` for a usage or parse error.
fn run(args: Vec<String>) -> Result<bool, String> {
    let mut layer_file = None;
    let mut max_lines = None;
    let mut show_edges = false;
    let mut dirs = Vec::new();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-h" | "--help" => {
                println!("{HELP}");
                return Ok(true);
            }
            "--layers" => {
                layer_file = Some(args.next().ok_or("--layers needs a file")?);
            }
            "--max-lines" => {
                let n = args.next().ok_or("--max-lines needs a number")?;
                let n = n
                    .parse::<usize>()
                    .map_err(|_| format!("--max-lines: not a number: {n}"))?;
                max_lines = Some(n);
            }
            "--edges" => show_edges = true,
            flag if flag.starts_with('-') => {
                return Err(format!("unknown option {flag} (try --help)"))
            }
            dir => dirs.push(PathBuf::from(dir)),
        }
    }
    if dirs.is_empty() {
        return Err("no directory given (try --help)".to_string());
    }
    if let Some(max) = max_lines {
        if layer_file.is_some() || show_edges {
            return Err("--max-lines does not combine with --layers or --edges".to_string());
        }
        let oversized = layercheck::lines::oversized(&dirs, max)?;
        for (path, lines) in &oversized {
            println!("{}: {lines} lines (over {max})", path.display());
        }
        return Ok(oversized.is_empty());
    }
    let layers = match &layer_file {
        Some(file) => {
            let text = std::fs::read_to_string(file).map_err(|e| format!("{file}: {e}"))?;
            Some(Layers::parse(&text).map_err(|e| format!("{file}: {e}"))?)
        }
        None => None,
    };
    let mut clean = true;
    for dir in &dirs {
        let report = layercheck::check_crate(dir, layers.as_ref(), show_edges)?;
        print!("{}", report.text);
        if report.findings == 0 {
            println!(
                "{}: no import cycle{}",
                dir.display(),
                match layers {
                    Some(_) => ", no layer break",
                    None => "",
                }
            );
        }
        clean &= report.findings == 0;
    }
    Ok(clean)
}
