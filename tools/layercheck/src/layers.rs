//! Layer files: which file belongs to which layer, and the edges that point upward.
//!
//! Format: one layer a line, lowest first, `name: prefix prefix ...`; a prefix is matched
//! against a file's path relative to the source directory (`arch/`, `main.rs`), the longest
//! matching prefix wins. `#` starts a comment. Every file of the crate must be covered:
//! an uncovered file is an error, so a new file gets a layer on purpose.

use crate::graph::Edge;

/// A parsed layer file.
#[derive(Debug)]
pub struct Layers {
    /// Layer names, lowest first.
    pub names: Vec<String>,
    /// (prefix, layer index).
    prefixes: Vec<(String, usize)>,
}

impl Layers {
    /// Parses a layer file's text; `Err` names the bad line.
    pub fn parse(text: &str) -> Result<Layers, String> {
        let mut layers = Layers {
            names: Vec::new(),
            prefixes: Vec::new(),
        };
        for (number, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let (name, prefixes) = line
                .split_once(':')
                .ok_or_else(|| format!("line {}: expected `layer: prefix ...`", number + 1))?;
            let name = name.trim();
            if name.is_empty() || layers.names.iter().any(|n| n == name) {
                return Err(format!("line {}: empty or repeated layer name", number + 1));
            }
            let index = layers.names.len();
            layers.names.push(name.to_string());
            for prefix in prefixes.split_whitespace() {
                if layers.prefixes.iter().any(|(p, _)| p == prefix) {
                    return Err(format!("line {}: prefix {prefix} given twice", number + 1));
                }
                layers.prefixes.push((prefix.to_string(), index));
            }
        }
        if layers.names.is_empty() {
            return Err("no layers".to_string());
        }
        Ok(layers)
    }

    /// The layer of a file (path relative to the source directory), if a prefix covers it.
    pub fn layer_of(&self, file: &str) -> Option<usize> {
        self.prefixes
            .iter()
            .filter(|(prefix, _)| file.starts_with(prefix.as_str()))
            .max_by_key(|(prefix, _)| prefix.len())
            .map(|&(_, layer)| layer)
    }
}

/// Edges from a lower layer to a higher one, or `Err` with the files no prefix covers.
pub fn upward_edges<'e>(
    layers: &Layers,
    files: &[String],
    edges: &'e [Edge],
) -> Result<Vec<&'e Edge>, Vec<String>> {
    let of: Vec<Option<usize>> = files.iter().map(|f| layers.layer_of(f)).collect();
    let uncovered: Vec<String> = files
        .iter()
        .zip(&of)
        .filter(|(_, layer)| layer.is_none())
        .map(|(file, _)| file.clone())
        .collect();
    if !uncovered.is_empty() {
        return Err(uncovered);
    }
    Ok(edges.iter().filter(|e| of[e.from] < of[e.to]).collect())
}
