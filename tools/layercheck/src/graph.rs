//! The file graph: name resolution over a [`Crate`], its edges, and its cycles.
//!
//! Contract: an edge `A -> B` at line L means file A, at line L, names an item that file B
//! defines. Names are resolved as rustc does for paths written in this crate: `crate::`,
//! `self::`, `super::`, and bare names through the module's own items, child modules and
//! `use` imports (uniform paths), following `use` and `pub use` chains to the defining file
//! and looking names up through `*` globs. Where an edge comes from:
//! - a named `use` of an item (`use a::B;`, `use a::{B as C}`): the `use` line;
//! - a `use` of a module makes no edge by itself: the paths through it later do;
//! - a private glob (`use super::*;`) makes an edge where a name it brings is written;
//!   a `pub use m::*;` re-export makes an edge to m's file at once (it re-exports all of m);
//!   a glob of an item (`use Enum::*`) makes an edge to the item's file at once;
//! - a path in code (`crate::task::current()`, `Pending::Write`) at its line.
//!
//! - a `#[macro_export]` macro, named bare (`println!`) or as `crate::println!`: its file.
//!
//! Fallback: a name that is not found in the module a path reaches (a `#[macro_export]`
//! macro, an item made by a macro) gives an edge to that module's file, marked inexact.
//! Names bound by `macro_rules!` textual scoping, local variables that shadow a glob's name,
//! and paths inside attributes are not seen.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use crate::model::{Crate, FileId, ModuleId};

/// What a path names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    Module(ModuleId),
    /// An item defined in this module (anything after it is an associated item or variant).
    Item(ModuleId),
    /// The path reached this module, but the next name is not declared in it.
    Unresolved(ModuleId),
    /// A `#[macro_export]` macro, defined in this file.
    Macro(FileId),
    /// Another crate, the prelude, a local variable or a generic parameter.
    External,
}

/// How deep `use` chains and globs are followed; real chains are a handful long, and the
/// bound stops `a::* <-> b::*` loops.
const RESOLVE_BUDGET: usize = 24;

/// One dependency of a file on another.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Edge {
    pub from: FileId,
    pub to: FileId,
    pub line: usize,
    /// False when the target item was not found and the edge goes to its module's file.
    pub exact: bool,
}

fn resolve(krate: &Crate, scope: ModuleId, segments: &[String], budget: usize) -> Target {
    let Some((first, rest)) = segments.split_first() else {
        return Target::External;
    };
    let mut target = match first.as_str() {
        "crate" => Target::Module(0),
        "self" => Target::Module(scope),
        "super" => match krate.modules[scope].parent {
            Some(parent) => Target::Module(parent),
            None => return Target::External,
        },
        "Self" | "::" => return Target::External,
        name => match lookup(krate, scope, name, budget) {
            Some(found) => found,
            None => return Target::External,
        },
    };
    for segment in rest {
        let Target::Module(module) = target else {
            break;
        };
        target = match segment.as_str() {
            "self" => target,
            "super" => match krate.modules[module].parent {
                Some(parent) => Target::Module(parent),
                None => Target::Unresolved(module),
            },
            name => lookup(krate, module, name, budget).unwrap_or(Target::Unresolved(module)),
        };
    }
    target
}

/// `name` as seen inside `module`: its items, child modules, named imports, then globs.
fn lookup(krate: &Crate, module: ModuleId, name: &str, budget: usize) -> Option<Target> {
    let budget = budget.checked_sub(1)?;
    let m = &krate.modules[module];
    if let Some(&child) = m.children.get(name) {
        return Some(Target::Module(child));
    }
    if m.items.contains(name) {
        return Some(Target::Item(module));
    }
    if let Some(import) = m.uses.iter().find(|u| u.name.as_deref() == Some(name)) {
        return Some(resolve(krate, module, &import.path, budget));
    }
    if let Some(found) = lookup_in_globs(krate, module, name, budget) {
        return Some(found);
    }
    let exported = krate.exported_macros.get(name).filter(|_| module == 0);
    exported.map(|&file| Target::Macro(file))
}

fn lookup_in_globs(krate: &Crate, module: ModuleId, name: &str, budget: usize) -> Option<Target> {
    let budget = budget.checked_sub(1)?;
    for glob in krate.modules[module]
        .uses
        .iter()
        .filter(|u| u.name.is_none())
    {
        if let Target::Module(source) = resolve(krate, module, &glob.path, budget) {
            if source == module {
                continue;
            }
            if let Some(found) = lookup(krate, source, name, budget) {
                return Some(found);
            }
        }
    }
    None
}

/// Words that are never a glob-imported item; skipping them saves lookups.
const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern",
    "false", "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub",
    "ref", "return", "self", "Self", "static", "struct", "super", "trait", "true", "type",
    "unsafe", "use", "where", "while", "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16",
    "i32", "i64", "i128", "isize", "bool", "char", "str", "f32", "f64",
];

fn edge_to(krate: &Crate, from: FileId, target: Target, line: usize) -> Option<Edge> {
    let (to, exact) = match target {
        Target::Item(module) => (krate.modules[module].file, true),
        Target::Unresolved(module) => (krate.modules[module].file, false),
        Target::Macro(file) => (file, true),
        Target::Module(_) | Target::External => return None,
    };
    (to != from).then_some(Edge {
        from,
        to,
        line,
        exact,
    })
}

/// Every edge of the crate, sorted, one per (from, to, line).
pub fn edges(krate: &Crate) -> Vec<Edge> {
    let mut found = BTreeSet::new();
    for (id, module) in krate.modules.iter().enumerate() {
        let from = module.file;
        for import in &module.uses {
            let target = resolve(krate, id, &import.path, RESOLVE_BUDGET);
            let target = match (import.name.is_some(), target) {
                (false, Target::Module(source)) if import.public => Target::Item(source),
                (false, Target::Module(_)) => continue,
                (_, target) => target,
            };
            found.extend(edge_to(krate, from, target, import.line));
        }
        for path in &module.code_paths {
            let target = match path.segments.as_slice() {
                [name] => {
                    let locally_bound = module.children.contains_key(name)
                        || module.items.contains(name)
                        || module.uses.iter().any(|u| u.name.as_ref() == Some(name));
                    if locally_bound || KEYWORDS.contains(&name.as_str()) {
                        continue;
                    }
                    let exported = krate.exported_macros.get(name).filter(|_| path.macro_call);
                    match (lookup_in_globs(krate, id, name, RESOLVE_BUDGET), exported) {
                        (Some(target), _) => target,
                        (None, Some(&file)) => Target::Macro(file),
                        (None, None) => continue,
                    }
                }
                segments => resolve(krate, id, segments, RESOLVE_BUDGET),
            };
            found.extend(edge_to(krate, from, target, path.line));
        }
    }
    let mut unique: BTreeMap<(FileId, FileId, usize), Edge> = BTreeMap::new();
    for edge in found {
        unique
            .entry((edge.from, edge.to, edge.line))
            .and_modify(|kept| kept.exact |= edge.exact)
            .or_insert(edge);
    }
    unique.into_values().collect()
}

/// A strongly connected component of more than one file, with one cycle through it.
#[derive(Debug)]
pub struct Cycle {
    pub files: Vec<FileId>,
    /// Edges `f0 -> f1 -> ... -> f0`, each the first line that makes it.
    pub path: Vec<Edge>,
}

/// Cycles of the file graph: one per strongly connected component of size > 1.
pub fn cycles(file_count: usize, edges: &[Edge]) -> Vec<Cycle> {
    // First (lowest-line) edge per file pair: the graph proper.
    let mut first: BTreeMap<(FileId, FileId), &Edge> = BTreeMap::new();
    for edge in edges {
        first.entry((edge.from, edge.to)).or_insert(edge);
    }
    let mut successors = vec![Vec::new(); file_count];
    for &(from, to) in first.keys() {
        successors[from].push(to);
    }
    let components = strongly_connected(&successors);
    let mut result = Vec::new();
    for mut files in components.into_iter().filter(|c| c.len() > 1) {
        files.sort_unstable();
        let start = files[0];
        let inside: BTreeSet<FileId> = files.iter().copied().collect();
        // Breadth first from `start` back to `start`: the shortest cycle through it.
        let mut came_from: HashMap<FileId, FileId> = HashMap::new();
        let mut queue = VecDeque::from([start]);
        'search: while let Some(file) = queue.pop_front() {
            for &next in &successors[file] {
                if !inside.contains(&next) || came_from.contains_key(&next) {
                    continue;
                }
                came_from.insert(next, file);
                if next == start {
                    break 'search;
                }
                queue.push_back(next);
            }
        }
        let mut path = Vec::new();
        let mut at = start;
        while let Some(&previous) = came_from.get(&at) {
            path.push(first[&(previous, at)].clone());
            at = previous;
            if at == start {
                break;
            }
        }
        path.reverse();
        result.push(Cycle { files, path });
    }
    result
}

/// Tarjan's algorithm, iterative (no recursion depth limit on big crates).
fn strongly_connected(successors: &[Vec<FileId>]) -> Vec<Vec<FileId>> {
    let count = successors.len();
    let mut index = vec![usize::MAX; count];
    let mut low = vec![0; count];
    let mut on_stack = vec![false; count];
    let mut stack = Vec::new();
    let mut components = Vec::new();
    let mut next_index = 0;
    for root in 0..count {
        if index[root] != usize::MAX {
            continue;
        }
        let mut work = vec![(root, 0usize)];
        while let Some(&mut (node, ref mut child)) = work.last_mut() {
            if *child == 0 {
                index[node] = next_index;
                low[node] = next_index;
                next_index += 1;
                stack.push(node);
                on_stack[node] = true;
            }
            if let Some(&next) = successors[node].get(*child) {
                *child += 1;
                if index[next] == usize::MAX {
                    work.push((next, 0));
                } else if on_stack[next] {
                    low[node] = low[node].min(index[next]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[node]);
            }
            if low[node] == index[node] {
                let mut component = Vec::new();
                while let Some(member) = stack.pop() {
                    on_stack[member] = false;
                    component.push(member);
                    if member == node {
                        break;
                    }
                }
                components.push(component);
            }
        }
    }
    components
}
