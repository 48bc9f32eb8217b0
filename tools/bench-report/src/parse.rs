//! Reading `RESULT` lines out of a console log.
//!
//! The guest benchmark programs print one line per result (see shared BENCH-PROTOCOL.md):
//! `RESULT bench=NAME fs=NAME key=value ...`. The console interleaves kernel messages and
//! escape sequences with program output, so a line is accepted wherever `RESULT ` appears in
//! it, after colour codes and carriage returns are removed. A line that has `RESULT ` but is
//! not a clean list of `key=value` tokens with `bench` and `fs` is reported, never guessed at.

use std::collections::BTreeMap;
use std::fmt;

/// One `RESULT` line: every `key=value` field, including `bench` and `fs`.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// 1-based line number in the log, for messages.
    pub line_no: usize,
    pub fields: BTreeMap<String, String>,
}

impl Record {
    pub fn bench(&self) -> &str {
        self.fields.get("bench").map(String::as_str).unwrap_or("")
    }

    pub fn fs(&self) -> &str {
        self.fields.get("fs").map(String::as_str).unwrap_or("")
    }

    /// The field parsed as a finite number; `None` when absent or not a number.
    pub fn number(&self, key: &str) -> Option<f64> {
        let value: f64 = self.fields.get(key)?.parse().ok()?;
        value.is_finite().then_some(value)
    }
}

/// Why a line containing `RESULT ` was skipped.
#[derive(Debug, Clone, PartialEq)]
pub enum LineError {
    /// A token without `=`, or with an empty key.
    NotKeyValue(String),
    DuplicateKey(String),
    MissingKey(&'static str),
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LineError::NotKeyValue(token) => write!(f, "token {token:?} is not key=value"),
            LineError::DuplicateKey(key) => write!(f, "key {key:?} appears twice"),
            LineError::MissingKey(key) => write!(f, "no {key}= field"),
        }
    }
}

/// A skipped line, for the warning printed to stderr.
#[derive(Debug, Clone, PartialEq)]
pub struct Skipped {
    pub line_no: usize,
    pub error: LineError,
}

const MARKER: &str = "RESULT ";

/// Parses every `RESULT` line of `log`; malformed ones are returned separately.
pub fn parse_log(log: &str) -> (Vec<Record>, Vec<Skipped>) {
    let mut records = Vec::new();
    let mut skipped = Vec::new();
    for (index, raw_line) in log.lines().enumerate() {
        let line_no = index + 1;
        match parse_line(raw_line) {
            Ok(Some(fields)) => records.push(Record { line_no, fields }),
            Ok(None) => {}
            Err(error) => skipped.push(Skipped { line_no, error }),
        }
    }
    (records, skipped)
}

/// `Ok(None)` for a line without a result, the fields for a well-formed one.
pub fn parse_line(raw_line: &str) -> Result<Option<BTreeMap<String, String>>, LineError> {
    let line = strip_terminal_codes(raw_line);
    let Some(start) = line.find(MARKER) else {
        return Ok(None);
    };
    let mut fields = BTreeMap::new();
    for token in line[start + MARKER.len()..].split_whitespace() {
        let Some((key, value)) = token.split_once('=') else {
            return Err(LineError::NotKeyValue(token.to_string()));
        };
        if key.is_empty() {
            return Err(LineError::NotKeyValue(token.to_string()));
        }
        if fields.insert(key.to_string(), value.to_string()).is_some() {
            return Err(LineError::DuplicateKey(key.to_string()));
        }
    }
    for key in ["bench", "fs"] {
        if fields.get(key).is_none_or(|value| value.is_empty()) {
            return Err(LineError::MissingKey(key));
        }
    }
    Ok(Some(fields))
}

/// Removes ANSI CSI sequences (`ESC [ ... final`) and other control characters, which a serial
/// console may leave in the middle of a line.
fn strip_terminal_codes(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                // Parameters and intermediates, then one final byte in '@'..='~'.
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            continue;
        }
        if c == '\t' {
            out.push(' ');
        } else if !c.is_control() {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_throughput_line() {
        let fields = parse_line(
            "RESULT bench=seqwrite fs=fat32 bs=1048576 bytes=10485760 secs=0.072901 MBps=143.84 reps=3",
        )
        .unwrap()
        .unwrap();
        assert_eq!(fields["bench"], "seqwrite");
        assert_eq!(fields["fs"], "fat32");
        assert_eq!(fields["MBps"], "143.84");
        assert_eq!(fields.len(), 7);
    }

    #[test]
    fn finds_result_after_console_text_and_escape_codes() {
        let line = "\u{1b}[0m[ 1.234 kernel] hello RESULT bench=createdel fs=dbfs n=100 \
                    creates_per_sec=78.1 deletes_per_sec=227.3\r";
        let fields = parse_line(line).unwrap().unwrap();
        assert_eq!(fields["bench"], "createdel");
        assert_eq!(fields["deletes_per_sec"], "227.3");
    }

    #[test]
    fn ignores_lines_without_marker() {
        assert_eq!(parse_line("[bench] seqwrite on fat32: 143 MB/s"), Ok(None));
        assert_eq!(parse_line("RESULTS follow"), Ok(None));
        assert_eq!(parse_line(""), Ok(None));
    }

    #[test]
    fn rejects_malformed_lines() {
        assert_eq!(
            parse_line("RESULT bench=seqwrite fs=fat32 garbage MBps=1"),
            Err(LineError::NotKeyValue("garbage".into()))
        );
        assert_eq!(
            parse_line("RESULT bench=seqwrite fs=fat32 =5"),
            Err(LineError::NotKeyValue("=5".into()))
        );
        assert_eq!(
            parse_line("RESULT bench=seqwrite bench=rewrite fs=fat32"),
            Err(LineError::DuplicateKey("bench".into()))
        );
        assert_eq!(
            parse_line("RESULT fs=fat32 MBps=1"),
            Err(LineError::MissingKey("bench"))
        );
        assert_eq!(
            parse_line("RESULT bench=seqwrite fs="),
            Err(LineError::MissingKey("fs"))
        );
        assert_eq!(parse_line("RESULT "), Err(LineError::MissingKey("bench")));
    }

    #[test]
    fn log_keeps_good_lines_and_reports_bad_ones() {
        let log = "booting\n\
                   RESULT bench=seqread fs=dbfs MBps=850.29\n\
                   RESULT bench=seqread fs=raw MBps=8\u{1b}[1m23.5 oops\n\
                   RESULT bench=seqread fs=fat32 MBps=not-a-number\n";
        let (records, skipped) = parse_log(log);
        assert_eq!(records.len(), 2);
        assert_eq!(records[0].line_no, 2);
        assert_eq!(records[0].number("MBps"), Some(850.29));
        // Kept (it is well-formed), but its value is not a number.
        assert_eq!(records[1].number("MBps"), None);
        assert_eq!(skipped.len(), 1);
        assert_eq!(skipped[0].line_no, 3);
        assert_eq!(skipped[0].error, LineError::NotKeyValue("oops".into()));
    }

    #[test]
    fn number_rejects_non_finite() {
        let fields = parse_line("RESULT bench=b fs=f a=inf b=NaN c=1e3")
            .unwrap()
            .unwrap();
        let record = Record { line_no: 1, fields };
        assert_eq!(record.number("a"), None);
        assert_eq!(record.number("b"), None);
        assert_eq!(record.number("c"), Some(1000.0));
        assert_eq!(record.number("missing"), None);
    }
}
