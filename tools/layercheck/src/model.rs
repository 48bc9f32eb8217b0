//! Crate model: the module tree of one crate and, per module, the names it defines and imports.
//!
//! Contract: [`load_crate`] starts at `lib.rs` (else `main.rs`) and follows `mod x;`
//! declarations to `x.rs` or `x/mod.rs` (or a `#[path = "..."]` file); an inline `mod x { ... }`
//! is a module of its own that lives in its parent's file. Items inside `#[cfg(test)]` modules
//! and `#[cfg(test)] use` lines are skipped (they are test-only dependencies, not layering).
//! A `mod x;` whose file is missing is an error. Visibility is not modelled: a name is found
//! wherever it is declared, which is enough for a dependency graph.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

use crate::lexer::{tokenize, Token, TokenKind};

/// Index of a module in [`Crate::modules`].
pub type ModuleId = usize;
/// Index of a file in [`Crate::files`].
pub type FileId = usize;

/// One `use` leaf: `use a::b as c;` is `{ path: [a, b], name: Some(c) }`, a glob has `name: None`.
#[derive(Debug, Clone)]
pub struct UseItem {
    pub path: Vec<String>,
    pub name: Option<String>,
    pub line: usize,
    pub public: bool,
}

/// A path written in code outside `use` (`crate::task::current`, `Foo::new`) or a lone name.
#[derive(Debug, Clone)]
pub struct CodePath {
    pub segments: Vec<String>,
    pub line: usize,
    /// Followed by `!`: a macro call.
    pub macro_call: bool,
}

#[derive(Debug, Default)]
pub struct Module {
    pub parent: Option<ModuleId>,
    pub file: FileId,
    pub children: HashMap<String, ModuleId>,
    /// Names of items defined here (fn, struct, enum, trait, type, const, static, union, macro).
    pub items: HashSet<String>,
    pub uses: Vec<UseItem>,
    pub code_paths: Vec<CodePath>,
}

/// A crate's modules and files; module 0 is the crate root.
#[derive(Debug, Default)]
pub struct Crate {
    /// Paths relative to the source directory, `/`-separated.
    pub files: Vec<String>,
    pub modules: Vec<Module>,
    /// `#[macro_export]` macros: they live at the crate root, defined in this file.
    pub exported_macros: HashMap<String, FileId>,
}

const ITEM_KEYWORDS: &[&str] = &[
    "fn", "struct", "enum", "trait", "type", "const", "static", "union",
];

/// Reads the crate rooted in `src_dir`.
pub fn load_crate(src_dir: &Path) -> Result<Crate, String> {
    let root = ["lib.rs", "main.rs"]
        .iter()
        .map(|name| src_dir.join(name))
        .find(|path| path.is_file())
        .ok_or_else(|| format!("{}: no lib.rs or main.rs", src_dir.display()))?;
    let mut krate = Crate::default();
    load_file(&mut krate, src_dir, &root, None, None)?;
    Ok(krate)
}

/// Loads one file as module `name` of `parent`; returns the new module.
fn load_file(
    krate: &mut Crate,
    src_dir: &Path,
    path: &Path,
    parent: Option<ModuleId>,
    name: Option<&str>,
) -> Result<ModuleId, String> {
    let relative = path.strip_prefix(src_dir).unwrap_or(path);
    let shown = relative.to_string_lossy().replace('\\', "/");
    let source = fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let tokens = tokenize(&source).map_err(|e| format!("{}: {e}", path.display()))?;
    let file = krate.files.len();
    krate.files.push(shown.clone());
    let module = new_module(krate, parent, name, file);
    // A file's `mod x;` children live beside it (lib.rs, main.rs, mod.rs) or in a folder of
    // its own name (a.rs -> a/x.rs).
    let file_name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let base = path.parent().unwrap_or(src_dir);
    let child_dir = if parent.is_none() || file_name == "mod.rs" {
        base.to_path_buf()
    } else {
        base.join(file_name.trim_end_matches(".rs"))
    };
    let mut parser = Parser {
        krate,
        src_dir,
        tokens: &tokens,
        pos: 0,
        shown: &shown,
    };
    // `#[path]` on a file's own `mod` items is relative to the file's folder.
    parser.module_body(module, &child_dir, base, tokens.len())?;
    Ok(module)
}

fn new_module(
    krate: &mut Crate,
    parent: Option<ModuleId>,
    name: Option<&str>,
    file: FileId,
) -> ModuleId {
    let id = krate.modules.len();
    krate.modules.push(Module {
        parent,
        file,
        ..Module::default()
    });
    if let (Some(parent), Some(name)) = (parent, name) {
        krate.modules[parent].children.insert(name.to_string(), id);
    }
    id
}

struct Parser<'a> {
    krate: &'a mut Crate,
    src_dir: &'a Path,
    tokens: &'a [Token],
    pos: usize,
    shown: &'a str,
}

impl Parser<'_> {
    fn ident_at(&self, pos: usize) -> Option<&str> {
        match self.tokens.get(pos).map(|t| &t.kind) {
            Some(TokenKind::Ident(word)) => Some(word),
            _ => None,
        }
    }

    fn punct_at(&self, pos: usize, c: char) -> bool {
        self.tokens.get(pos).map(|t| &t.kind) == Some(&TokenKind::Punct(c))
    }

    fn error(&self, message: &str) -> String {
        let line = self.tokens.get(self.pos).map_or(0, |t| t.line);
        format!("{}:{line}: {message}", self.shown)
    }

    /// Index just past the bracket group opening at `open` (`{`, `[` or `(`).
    fn group_end(&self, open: usize) -> Result<usize, String> {
        let mut depth = 0usize;
        for (index, token) in self.tokens.iter().enumerate().skip(open) {
            match token.kind {
                TokenKind::Punct('{' | '[' | '(') => depth += 1,
                TokenKind::Punct('}' | ']' | ')') => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return Ok(index + 1);
                    }
                }
                _ => {}
            }
        }
        Err(format!(
            "{}:{}: unbalanced bracket",
            self.shown, self.tokens[open].line
        ))
    }

    /// Parses tokens `self.pos..end` as the body of `module`. Item names count only at the
    /// body's own brace depth; `use` lines and code paths count at any depth (a `use` inside
    /// a function still makes its file depend on the target).
    fn module_body(
        &mut self,
        module: ModuleId,
        child_dir: &Path,
        path_attr_dir: &Path,
        end: usize,
    ) -> Result<(), String> {
        let mut depth = 0usize;
        let mut path_attr: Option<String> = None;
        let mut cfg_test = false;
        let mut public = false;
        let mut macro_export = false;
        while self.pos < end {
            let token = &self.tokens[self.pos];
            match &token.kind {
                TokenKind::Punct('#') => {
                    let mut open = self.pos + 1;
                    if self.punct_at(open, '!') {
                        open += 1;
                    }
                    if !self.punct_at(open, '[') {
                        self.pos += 1;
                        continue;
                    }
                    let close = self.group_end(open)?;
                    let attr = &self.tokens[open + 1..close - 1];
                    let words: Vec<&TokenKind> = attr.iter().map(|t| &t.kind).collect();
                    if let [TokenKind::Ident(p), TokenKind::Punct('='), TokenKind::Str(s)] =
                        words.as_slice()
                    {
                        if p == "path" {
                            path_attr = Some(s.clone());
                        }
                    }
                    if let [TokenKind::Ident(c), TokenKind::Punct('('), TokenKind::Ident(t), TokenKind::Punct(')')] =
                        words.as_slice()
                    {
                        cfg_test |= c == "cfg" && t == "test";
                    }
                    macro_export |=
                        matches!(words.as_slice(), [TokenKind::Ident(w)] if w == "macro_export");
                    self.pos = close;
                    continue;
                }
                TokenKind::Punct('{') => depth += 1,
                TokenKind::Punct('}') => depth = depth.saturating_sub(1),
                TokenKind::Ident(word) if word == "pub" => {
                    public = true;
                    self.pos += 1;
                    if self.punct_at(self.pos, '(') {
                        self.pos = self.group_end(self.pos)?;
                    }
                    continue;
                }
                TokenKind::Ident(word) if word == "use" => {
                    let line = token.line;
                    self.pos += 1;
                    let mut leaves = Vec::new();
                    self.use_tree(&mut Vec::new(), line, public, &mut leaves)?;
                    if !cfg_test {
                        self.krate.modules[module].uses.extend(leaves);
                    }
                    (path_attr, cfg_test, public) = (None, false, false);
                    continue;
                }
                TokenKind::Ident(word) if word == "mod" && depth == 0 => {
                    let name = self
                        .ident_at(self.pos + 1)
                        .ok_or_else(|| self.error("`mod` without a name"))?
                        .to_string();
                    self.pos += 2;
                    if self.punct_at(self.pos, ';') {
                        self.pos += 1;
                        if !cfg_test {
                            let file = match path_attr.take() {
                                Some(p) => path_attr_dir.join(p),
                                None => self.child_file(child_dir, &name)?,
                            };
                            load_file(self.krate, self.src_dir, &file, Some(module), Some(&name))?;
                        }
                    } else if self.punct_at(self.pos, '{') {
                        let close = self.group_end(self.pos)?;
                        if !cfg_test {
                            let file = self.krate.modules[module].file;
                            let inline = new_module(self.krate, Some(module), Some(&name), file);
                            self.pos += 1;
                            // Inside an inline `mod`, `#[path]` is relative to its folder.
                            let inline_dir = child_dir.join(&name);
                            self.module_body(inline, &inline_dir, &inline_dir, close - 1)?;
                        }
                        self.pos = close;
                    } else {
                        return Err(self.error("`mod NAME` not followed by `;` or `{`"));
                    }
                    (path_attr, cfg_test, public) = (None, false, false);
                    continue;
                }
                TokenKind::Ident(word) if depth == 0 && ITEM_KEYWORDS.contains(&word.as_str()) => {
                    let mut at = self.pos + 1;
                    if self.ident_at(at) == Some("mut") {
                        at += 1; // `static mut NAME`
                    }
                    match self.ident_at(at) {
                        // `const fn name`: the `fn` is seen next and records the name.
                        Some("fn") | None => {}
                        Some(name) => {
                            let name = name.to_string();
                            self.krate.modules[module].items.insert(name);
                        }
                    }
                }
                TokenKind::Ident(word)
                    if word == "macro_rules" && self.punct_at(self.pos + 1, '!') =>
                {
                    if let Some(name) = self.ident_at(self.pos + 2) {
                        let name = name.to_string();
                        if macro_export {
                            let file = self.krate.modules[module].file;
                            self.krate.exported_macros.insert(name.clone(), file);
                        }
                        self.krate.modules[module].items.insert(name);
                    }
                    macro_export = false;
                    self.pos += 3;
                    continue;
                }
                TokenKind::Ident(_) => {
                    let is_path_start = self.pos == 0
                        || !matches!(
                            self.tokens[self.pos - 1].kind,
                            TokenKind::PathSep | TokenKind::Punct('.')
                        );
                    if is_path_start {
                        let (segments, next) = self.code_path(self.pos);
                        let macro_call = self.punct_at(next, '!') && !self.punct_at(next + 1, '=');
                        self.krate.modules[module].code_paths.push(CodePath {
                            segments,
                            line: token.line,
                            macro_call,
                        });
                        self.pos = next;
                        continue;
                    }
                }
                _ => {}
            }
            if !matches!(token.kind, TokenKind::Ident(_)) {
                (path_attr, cfg_test, public) = (None, false, false);
            }
            self.pos += 1;
        }
        Ok(())
    }

    fn child_file(&self, child_dir: &Path, name: &str) -> Result<PathBuf, String> {
        let flat = child_dir.join(format!("{name}.rs"));
        let nested = child_dir.join(name).join("mod.rs");
        if flat.is_file() {
            Ok(flat)
        } else if nested.is_file() {
            Ok(nested)
        } else {
            Err(self.error(&format!(
                "`mod {name};` but neither {} nor {} exists",
                flat.display(),
                nested.display()
            )))
        }
    }

    /// `a::b::c` starting at `start` (stops at `::<` or anything not an identifier).
    fn code_path(&self, start: usize) -> (Vec<String>, usize) {
        let mut segments = Vec::new();
        let mut pos = start;
        while let Some(word) = self.ident_at(pos) {
            segments.push(word.to_string());
            pos += 1;
            if self.tokens.get(pos).map(|t| &t.kind) == Some(&TokenKind::PathSep)
                && self.ident_at(pos + 1).is_some()
            {
                pos += 1;
            } else {
                break;
            }
        }
        (segments, pos)
    }

    /// One use tree after `prefix`, up to and including the `;` at the top level.
    fn use_tree(
        &mut self,
        prefix: &mut Vec<String>,
        line: usize,
        public: bool,
        leaves: &mut Vec<UseItem>,
    ) -> Result<(), String> {
        let depth = prefix.len();
        if depth == 0 && self.punct_at(self.pos, '$') {
            self.pos += 1; // `use $crate::...` in a macro body: `$crate` is this crate
        }
        if self.tokens.get(self.pos).map(|t| &t.kind) == Some(&TokenKind::PathSep) {
            // `use ::name` is always another crate.
            prefix.push("::".to_string());
            self.pos += 1;
        }
        loop {
            let kind = self.tokens.get(self.pos).map(|t| t.kind.clone());
            match kind {
                Some(TokenKind::Ident(word)) => {
                    self.pos += 1;
                    if self.tokens.get(self.pos).map(|t| &t.kind) == Some(&TokenKind::PathSep) {
                        prefix.push(word);
                        self.pos += 1;
                        continue;
                    }
                    let mut name = word.clone();
                    let path = if word == "self" {
                        name = prefix.last().cloned().unwrap_or_default();
                        prefix.clone()
                    } else {
                        let mut path = prefix.clone();
                        path.push(word);
                        path
                    };
                    if self.ident_at(self.pos) == Some("as") {
                        name = self
                            .ident_at(self.pos + 1)
                            .ok_or_else(|| self.error("`as` without a name"))?
                            .to_string();
                        self.pos += 2;
                    }
                    leaves.push(UseItem {
                        path,
                        name: Some(name),
                        line,
                        public,
                    });
                }
                Some(TokenKind::Punct('*')) => {
                    self.pos += 1;
                    leaves.push(UseItem {
                        path: prefix.clone(),
                        name: None,
                        line,
                        public,
                    });
                }
                Some(TokenKind::Punct('{')) => {
                    self.pos += 1;
                    while !self.punct_at(self.pos, '}') {
                        self.use_tree(prefix, line, public, leaves)?;
                        if self.punct_at(self.pos, ',') {
                            self.pos += 1;
                        } else if !self.punct_at(self.pos, '}') {
                            return Err(self.error("malformed `use` group"));
                        }
                    }
                    self.pos += 1;
                }
                _ => return Err(self.error("malformed `use`")),
            }
            break;
        }
        prefix.truncate(depth);
        if depth == 0 {
            if !self.punct_at(self.pos, ';') {
                return Err(self.error("`use` not ended by `;`"));
            }
            self.pos += 1;
        }
        Ok(())
    }
}
