//! layercheck: the file-level import graph of a Rust crate, its cycles and its layer breaks.
//!
//! A host tool of the project's structure checks (`make check-layers`). It reads a crate's
//! source directory without compiling it, builds the graph "file A names an item that file B
//! defines" (the resolution rules and their limits are in [`graph`]), and reports:
//! 1. every import cycle between files: each strongly connected component of more than one
//!    file, with one concrete cycle through it, each edge with the `file:line` that makes it;
//! 2. with `--layers FILE` (see [`layers`] for the format), every edge from a lower layer to a
//!    higher one;
//! 3. with `--max-lines N DIR...`, every `.rs` file under the DIRs (skipping `tests` folders)
//!    over N lines.
//!
//! Usage:
//! ```text
//! layercheck [--layers FILE] [--edges] SRC_DIR...    cycles (and layers) of each crate
//! layercheck --max-lines N DIR...                     the file-size rule
//! ```
//! Exit status: 0 clean, 1 findings, 2 usage or parse errors (a missing `mod` file, an
//! unterminated literal, a layer file that leaves a file uncovered).
//!
//! `#[cfg(test)]` modules and `#[cfg(test)] use` lines are left out of the graph: test code
//! may reach anywhere. Macros are not expanded.

pub mod graph;
pub mod layers;
pub mod lexer;
pub mod lines;
pub mod model;

use std::fmt::Write;
use std::path::Path;

use graph::Edge;
use layers::Layers;
use model::Crate;

/// What one crate's check found: the printed report and how many findings it holds.
pub struct Report {
    pub text: String,
    pub findings: usize,
}

fn describe(krate: &Crate, shown_dir: &str, edge: &Edge) -> String {
    let mark = if edge.exact {
        ""
    } else {
        " (name not found there: its module's file)"
    };
    format!(
        "{shown_dir}/{}:{} -> {shown_dir}/{}{mark}",
        krate.files[edge.from], edge.line, krate.files[edge.to]
    )
}

/// Checks the crate in `src_dir` for cycles and, given `layers`, for upward edges.
/// `show_edges` adds the whole graph to the report. `Err` is a parse or coverage error.
pub fn check_crate(
    src_dir: &Path,
    layers: Option<&Layers>,
    show_edges: bool,
) -> Result<Report, String> {
    let krate = model::load_crate(src_dir)?;
    let edges = graph::edges(&krate);
    let shown_dir = src_dir.to_string_lossy().trim_end_matches('/').to_string();
    let mut text = String::new();
    let mut findings = 0;
    if show_edges {
        for edge in &edges {
            let _ = writeln!(text, "edge {}", describe(&krate, &shown_dir, edge));
        }
    }
    for cycle in graph::cycles(krate.files.len(), &edges) {
        findings += 1;
        let members: Vec<&str> = cycle
            .files
            .iter()
            .map(|&f| krate.files[f].as_str())
            .collect();
        let _ = writeln!(
            text,
            "{shown_dir}: import cycle among {} files: {}",
            members.len(),
            members.join(" ")
        );
        for edge in &cycle.path {
            let _ = writeln!(text, "    {}", describe(&krate, &shown_dir, edge));
        }
    }
    if let Some(layers) = layers {
        let upward = layers::upward_edges(layers, &krate.files, &edges).map_err(|uncovered| {
            format!(
                "{shown_dir}: files in no layer of the layer file: {}",
                uncovered.join(" ")
            )
        })?;
        for edge in upward {
            findings += 1;
            let layer = |file: usize| {
                layers
                    .layer_of(&krate.files[file])
                    .map(|l| &layers.names[l])
            };
            let (Some(low), Some(high)) = (layer(edge.from), layer(edge.to)) else {
                continue;
            };
            let _ = writeln!(
                text,
                "layer break ({low} names {high}): {}",
                describe(&krate, &shown_dir, edge)
            );
        }
    }
    Ok(Report { text, findings })
}

#[cfg(test)]
mod tests;
