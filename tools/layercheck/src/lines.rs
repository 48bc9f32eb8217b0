//! The file-size rule: no Rust source file outside a `tests` folder over N lines.

use std::fs;
use std::path::{Path, PathBuf};

/// `.rs` files under `dirs` with more than `max` lines, as (path, lines), sorted by path.
/// Paths with a `tests` or `target` component, and hidden folders, are skipped.
pub fn oversized(dirs: &[PathBuf], max: usize) -> Result<Vec<(PathBuf, usize)>, String> {
    let mut found = Vec::new();
    for dir in dirs {
        if !dir.is_dir() {
            return Err(format!("{}: not a directory", dir.display()));
        }
        walk(dir, max, &mut found)?;
    }
    found.sort();
    Ok(found)
}

fn walk(dir: &Path, max: usize, found: &mut Vec<(PathBuf, usize)>) -> Result<(), String> {
    let entries = fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("{}: {e}", dir.display()))?;
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if path.is_dir() {
            if name != "tests" && name != "target" && !name.starts_with('.') {
                walk(&path, max, found)?;
            }
        } else if name.ends_with(".rs") {
            let text = fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            let newlines = text.iter().filter(|&&b| b == b'\n').count();
            let lines = newlines + usize::from(!text.is_empty() && !text.ends_with(b"\n"));
            if lines > max {
                found.push((path, lines));
            }
        }
    }
    Ok(())
}
