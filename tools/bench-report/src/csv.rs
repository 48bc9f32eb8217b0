//! `results.csv`: one row per RESULT line, every field as a column.
//!
//! Columns are `bench`, `fs`, then the union of all other keys in alphabetical order, so the
//! header is the same for the same set of keys whatever order the lines came in. A field a line
//! does not have is an empty cell. Quoting follows RFC 4180.

use std::collections::BTreeSet;

use crate::parse::Record;

pub fn columns(records: &[Record]) -> Vec<String> {
    let rest: BTreeSet<&String> = records
        .iter()
        .flat_map(|record| record.fields.keys())
        .filter(|key| *key != "bench" && *key != "fs")
        .collect();
    ["bench".to_string(), "fs".to_string()]
        .into_iter()
        .chain(rest.into_iter().cloned())
        .collect()
}

fn quote(cell: &str) -> String {
    if cell.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", cell.replace('"', "\"\""))
    } else {
        cell.to_string()
    }
}

pub fn render_csv(records: &[Record]) -> String {
    let columns = columns(records);
    let mut out = String::new();
    let header: Vec<String> = columns.iter().map(|column| quote(column)).collect();
    out.push_str(&header.join(","));
    out.push('\n');
    for record in records {
        let cells: Vec<String> = columns
            .iter()
            .map(|column| quote(record.fields.get(column).map(String::as_str).unwrap_or("")))
            .collect();
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_log;

    #[test]
    fn union_of_keys_bench_fs_first() {
        let (records, _) = parse_log(
            "RESULT bench=seqwrite fs=fat32 secs=0.5 MBps=20 bs=4096\n\
             RESULT bench=createdel fs=dbfs n=100 creates_per_sec=78.1\n",
        );
        assert_eq!(
            render_csv(&records),
            "bench,fs,MBps,bs,creates_per_sec,n,secs\n\
             seqwrite,fat32,20,4096,,,0.5\n\
             createdel,dbfs,,,78.1,100,\n"
        );
    }

    #[test]
    fn quotes_separators() {
        let (records, _) = parse_log("RESULT bench=a,b fs=x\"y\n");
        assert_eq!(render_csv(&records), "bench,fs\n\"a,b\",\"x\"\"y\"\n");
    }
}
