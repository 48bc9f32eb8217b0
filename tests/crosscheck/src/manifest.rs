//! The manifest / listing format, scanning a live tree into it, and comparing two.
//!
//! One entry a line, fields separated by one space, sorted by path:
//!
//! ```text
//! # crosscheck v1 entries=N
//! TYPE PATH SIZE MODE NLINK CHECKSUM XATTRS
//! end N
//! ```
//!
//! TYPE is `f`, `d`, `l` (or `c` `b` `p` `s`); PATH is relative to the tree's root with every
//! byte outside `[A-Za-z0-9._+/-]` written `%XX`; SIZE is decimal or `-` (not checked: a
//! directory's size in a generated manifest); MODE is `st_mode` in octal; CHECKSUM is the
//! FNV-1a-64 of a file's content or a symlink's target (16 hex digits), `-` for others; XATTRS
//! is `-` or `NAME=LEN:FNV` items joined by `,`, sorted by name (NAME encoded like PATH). The
//! `end` line makes a truncated manifest an error instead of a shorter list.

use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt::Write;

use crate::{fnv64, join, Errno, Fnv64, FsView};

/// A node's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    File,
    Dir,
    Symlink,
    CharDevice,
    BlockDevice,
    Fifo,
    Socket,
}

impl Kind {
    pub fn letter(self) -> char {
        match self {
            Kind::File => 'f',
            Kind::Dir => 'd',
            Kind::Symlink => 'l',
            Kind::CharDevice => 'c',
            Kind::BlockDevice => 'b',
            Kind::Fifo => 'p',
            Kind::Socket => 's',
        }
    }

    pub fn from_letter(s: &str) -> Option<Kind> {
        Some(match s {
            "f" => Kind::File,
            "d" => Kind::Dir,
            "l" => Kind::Symlink,
            "c" => Kind::CharDevice,
            "b" => Kind::BlockDevice,
            "p" => Kind::Fifo,
            "s" => Kind::Socket,
            _ => return None,
        })
    }

    /// The type in the `S_IFMT` bits of `mode`.
    pub fn from_mode(mode: u32) -> Option<Kind> {
        use abi::stat::*;
        Some(match mode & S_IFMT {
            S_IFREG => Kind::File,
            S_IFDIR => Kind::Dir,
            S_IFLNK => Kind::Symlink,
            S_IFCHR => Kind::CharDevice,
            S_IFBLK => Kind::BlockDevice,
            S_IFIFO => Kind::Fifo,
            S_IFSOCK => Kind::Socket,
            _ => return None,
        })
    }

    /// The `S_IFMT` bits of this type.
    pub fn mode_bits(self) -> u32 {
        use abi::stat::*;
        match self {
            Kind::File => S_IFREG,
            Kind::Dir => S_IFDIR,
            Kind::Symlink => S_IFLNK,
            Kind::CharDevice => S_IFCHR,
            Kind::BlockDevice => S_IFBLK,
            Kind::Fifo => S_IFIFO,
            Kind::Socket => S_IFSOCK,
        }
    }
}

/// One extended attribute as a manifest records it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Xattr {
    pub name: String,
    pub len: usize,
    pub checksum: u64,
}

impl Xattr {
    pub fn of(name: &str, value: &[u8]) -> Xattr {
        Xattr {
            name: name.to_string(),
            len: value.len(),
            checksum: fnv64(value),
        }
    }
}

/// One line of a manifest or listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub path: String,
    pub kind: Kind,
    /// `None`: not recorded (and not checked).
    pub size: Option<u64>,
    pub mode: u32,
    pub nlink: u32,
    /// Content (file) or target (symlink) checksum; `None` for other types.
    pub checksum: Option<u64>,
    /// Sorted by name.
    pub xattrs: Vec<Xattr>,
}

fn encode(s: &str, out: &mut String) {
    for &b in s.as_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'+' | b'/' | b'-') {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
}

fn decode(s: &str) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .ok_or_else(|| format!("bad escape in {s:?}"))?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| format!("bad escape in {s:?}"))?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("{s:?} is not UTF-8"))
}

impl Entry {
    /// The entry as one manifest line (no newline).
    pub fn to_line(&self) -> String {
        let mut s = String::new();
        s.push(self.kind.letter());
        s.push(' ');
        encode(&self.path, &mut s);
        match self.size {
            Some(n) => {
                let _ = write!(s, " {n}");
            }
            None => s.push_str(" -"),
        }
        let _ = write!(s, " {:o} {}", self.mode, self.nlink);
        match self.checksum {
            Some(c) => {
                let _ = write!(s, " {c:016x}");
            }
            None => s.push_str(" -"),
        }
        if self.xattrs.is_empty() {
            s.push_str(" -");
        } else {
            for (i, x) in self.xattrs.iter().enumerate() {
                s.push(if i == 0 { ' ' } else { ',' });
                encode(&x.name, &mut s);
                let _ = write!(s, "={}:{:016x}", x.len, x.checksum);
            }
        }
        s
    }

    /// Parse one manifest line.
    pub fn parse_line(line: &str) -> Result<Entry, String> {
        let f: Vec<&str> = line.split(' ').collect();
        if f.len() != 7 {
            return Err(format!("expected 7 fields: {line:?}"));
        }
        let kind = Kind::from_letter(f[0]).ok_or_else(|| format!("bad type {:?}", f[0]))?;
        let path = decode(f[1])?;
        if path.is_empty()
            || path.starts_with('/')
            || path
                .split('/')
                .any(|c| c.is_empty() || c == "." || c == "..")
        {
            return Err(format!("bad path {:?}", f[1]));
        }
        let size = match f[2] {
            "-" => None,
            n => Some(n.parse::<u64>().map_err(|_| format!("bad size {n:?}"))?),
        };
        let mode = u32::from_str_radix(f[3], 8).map_err(|_| format!("bad mode {:?}", f[3]))?;
        let nlink = f[4]
            .parse::<u32>()
            .map_err(|_| format!("bad nlink {:?}", f[4]))?;
        let checksum = match f[5] {
            "-" => None,
            c if c.len() == 16 => {
                Some(u64::from_str_radix(c, 16).map_err(|_| format!("bad checksum {c:?}"))?)
            }
            c => return Err(format!("bad checksum {c:?}")),
        };
        let mut xattrs = Vec::new();
        if f[6] != "-" {
            for item in f[6].split(',') {
                let (name, rest) = item
                    .rsplit_once('=')
                    .ok_or_else(|| format!("bad xattr {item:?}"))?;
                let (len, sum) = rest
                    .split_once(':')
                    .ok_or_else(|| format!("bad xattr {item:?}"))?;
                xattrs.push(Xattr {
                    name: decode(name)?,
                    len: len
                        .parse()
                        .map_err(|_| format!("bad xattr length {len:?}"))?,
                    checksum: u64::from_str_radix(sum, 16)
                        .map_err(|_| format!("bad xattr checksum {sum:?}"))?,
                });
            }
        }
        Ok(Entry {
            path,
            kind,
            size,
            mode,
            nlink,
            checksum,
            xattrs,
        })
    }
}

/// The whole manifest text of `entries` (sorted here).
pub fn format_manifest(entries: &[Entry]) -> String {
    let mut sorted: Vec<&Entry> = entries.iter().collect();
    sorted.sort_by(|a, b| a.path.cmp(&b.path));
    let mut s = format!("# crosscheck v1 entries={}\n", sorted.len());
    for e in sorted {
        s.push_str(&e.to_line());
        s.push('\n');
    }
    let _ = writeln!(s, "end {}", entries.len());
    s
}

/// Parse a manifest; it must end with its `end N` line and hold N entries with distinct paths.
pub fn parse_manifest(text: &str) -> Result<Vec<Entry>, String> {
    let mut entries = Vec::new();
    let mut ended = None;
    for (i, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if ended.is_some() {
            return Err(format!("line {}: text after the end line", i + 1));
        }
        if let Some(n) = line.strip_prefix("end ") {
            ended = Some(
                n.parse::<usize>()
                    .map_err(|_| format!("line {}: bad end line", i + 1))?,
            );
            continue;
        }
        entries.push(Entry::parse_line(line).map_err(|e| format!("line {}: {e}", i + 1))?);
    }
    match ended {
        None => return Err("no end line (truncated manifest?)".into()),
        Some(n) if n != entries.len() => {
            return Err(format!(
                "end line says {n} entries, found {}",
                entries.len()
            ))
        }
        Some(_) => {}
    }
    let mut seen = BTreeMap::new();
    for e in &entries {
        if seen.insert(e.path.as_str(), ()).is_some() {
            return Err(format!("{} listed twice", e.path));
        }
    }
    Ok(entries)
}

/// A live tree as entries, plus the paths that could not be read.
#[derive(Debug, Default)]
pub struct Scan {
    /// Sorted by path.
    pub entries: Vec<Entry>,
    /// (path, what failed)
    pub errors: Vec<(String, String)>,
}

/// Walk the tree under `view`'s root (skipping the top-level names in `skip`) and describe
/// every node as a manifest entry. Errors are collected, not fatal.
pub fn scan(view: &mut dyn FsView, skip: &[&str]) -> Scan {
    let mut out = Scan::default();
    let mut dirs = alloc::vec![String::new()];
    while let Some(dir) = dirs.pop() {
        let mut names = match view.read_dir(&dir) {
            Ok(n) => n,
            Err(e) => {
                out.errors.push((
                    if dir.is_empty() {
                        ".".into()
                    } else {
                        dir.clone()
                    },
                    format!("readdir: {}", e.name()),
                ));
                continue;
            }
        };
        names.sort();
        for name in names {
            if dir.is_empty() && skip.contains(&name.as_str()) {
                continue;
            }
            let path = join(&dir, &name);
            match describe(view, &path) {
                Ok(e) => {
                    if e.kind == Kind::Dir {
                        dirs.push(path);
                    }
                    out.entries.push(e);
                }
                Err(msg) => out.errors.push((path, msg)),
            }
        }
    }
    out.entries.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

fn describe(view: &mut dyn FsView, path: &str) -> Result<Entry, String> {
    let a = view
        .lstat(path)
        .map_err(|e| format!("lstat: {}", e.name()))?;
    let checksum = match a.kind {
        Kind::File => {
            let mut h = Fnv64::new();
            let mut n = 0u64;
            view.read_all(path, &mut |b| {
                h.update(b);
                n += b.len() as u64;
            })
            .map_err(|e| format!("read: {}", e.name()))?;
            if n != a.size {
                return Err(format!("read {n} bytes, size is {}", a.size));
            }
            Some(h.finish())
        }
        Kind::Symlink => {
            let t = view
                .readlink(path)
                .map_err(|e| format!("readlink: {}", e.name()))?;
            Some(fnv64(t.as_bytes()))
        }
        _ => None,
    };
    let mut xattrs = Vec::new();
    let names = match view.list_xattrs(path) {
        Ok(n) => n,
        Err(Errno::EOPNOTSUPP) => Vec::new(),
        Err(e) => return Err(format!("listxattr: {}", e.name())),
    };
    for name in names {
        let v = view
            .get_xattr(path, &name)
            .map_err(|e| format!("getxattr {name}: {}", e.name()))?;
        xattrs.push(Xattr::of(&name, &v));
    }
    xattrs.sort();
    Ok(Entry {
        path: path.to_string(),
        kind: a.kind,
        size: Some(a.size),
        mode: a.mode,
        nlink: a.nlink,
        checksum,
        xattrs,
    })
}

/// Pass / fail counts and one line per failure.
#[derive(Debug, Default)]
pub struct Report {
    pub passed: u32,
    pub failed: u32,
    pub failures: Vec<String>,
}

impl Report {
    pub fn pass(&mut self) {
        self.passed += 1;
    }
    pub fn fail(&mut self, what: String) {
        self.failed += 1;
        self.failures.push(what);
    }
}

/// Check the scanned tree against the manifest: every listed entry is present and matches
/// (one check each), and nothing unlisted exists (one check).
pub fn compare(expected: &[Entry], actual: &Scan) -> Report {
    let mut r = Report::default();
    let found: BTreeMap<&str, &Entry> = actual
        .entries
        .iter()
        .map(|e| (e.path.as_str(), e))
        .collect();
    let errors: BTreeMap<&str, &str> = actual
        .errors
        .iter()
        .map(|(p, m)| (p.as_str(), m.as_str()))
        .collect();
    for want in expected {
        let p = want.path.as_str();
        let Some(got) = found.get(p) else {
            match errors.get(p) {
                Some(m) => r.fail(format!("{p}: {m}")),
                None => r.fail(format!("{p}: missing")),
            }
            continue;
        };
        let mut diffs = Vec::new();
        if got.kind != want.kind {
            diffs.push(format!(
                "type {} (want {})",
                got.kind.letter(),
                want.kind.letter()
            ));
        }
        if let (Some(w), Some(g)) = (want.size, got.size) {
            if w != g {
                diffs.push(format!("size {g} (want {w})"));
            }
        }
        if got.mode != want.mode {
            diffs.push(format!("mode {:o} (want {:o})", got.mode, want.mode));
        }
        if got.nlink != want.nlink {
            diffs.push(format!("nlink {} (want {})", got.nlink, want.nlink));
        }
        if want.checksum.is_some() && got.checksum != want.checksum {
            diffs.push(format!(
                "checksum {} (want {:016x})",
                got.checksum
                    .map(|c| format!("{c:016x}"))
                    .unwrap_or_else(|| "-".into()),
                want.checksum.unwrap_or(0)
            ));
        }
        if got.xattrs != want.xattrs {
            let show = |x: &[Xattr]| {
                x.iter()
                    .map(|x| format!("{}={}:{:016x}", x.name, x.len, x.checksum))
                    .collect::<Vec<_>>()
                    .join(",")
            };
            diffs.push(format!(
                "xattrs [{}] (want [{}])",
                show(&got.xattrs),
                show(&want.xattrs)
            ));
        }
        if diffs.is_empty() {
            r.pass();
        } else {
            r.fail(format!("{p}: {}", diffs.join(", ")));
        }
    }
    let listed: BTreeMap<&str, ()> = expected.iter().map(|e| (e.path.as_str(), ())).collect();
    let mut unlisted = 0;
    for e in &actual.entries {
        if !listed.contains_key(e.path.as_str()) {
            r.fail(format!("{}: not in the manifest", e.path));
            unlisted += 1;
        }
    }
    for (p, m) in &actual.errors {
        if !listed.contains_key(p.as_str()) {
            r.fail(format!("{p}: {m}"));
            unlisted += 1;
        }
    }
    if unlisted == 0 {
        r.pass();
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(path: &str) -> Entry {
        Entry {
            path: path.into(),
            kind: Kind::File,
            size: Some(5),
            mode: 0o100644,
            nlink: 1,
            checksum: Some(fnv64(b"hello")),
            xattrs: alloc::vec![Xattr::of("user.a,b=c", b"v"), Xattr::of("user.z", b"")],
        }
    }

    #[test]
    fn lines_round_trip() {
        let mut d = entry("dir with space/ü");
        d.kind = Kind::Dir;
        d.size = None;
        d.checksum = None;
        d.xattrs.clear();
        let entries = alloc::vec![entry("a/b"), d, entry(&"n".repeat(255))];
        let text = format_manifest(&entries);
        let back = parse_manifest(&text).unwrap();
        let mut sorted = entries.clone();
        sorted.sort_by(|a, b| a.path.cmp(&b.path));
        assert_eq!(back, sorted);
    }

    #[test]
    fn bad_manifests_are_errors() {
        let text = format_manifest(&[entry("a"), entry("b")]);
        let cut: String = text.lines().take(2).map(|l| format!("{l}\n")).collect();
        assert!(parse_manifest(&cut).is_err(), "truncated");
        assert!(parse_manifest(&text.replace("end 2", "end 3")).is_err());
        assert!(parse_manifest(&format_manifest(&[entry("a"), entry("a")])).is_err());
        assert!(parse_manifest("f ../x 1 644 1 - -\nend 1\n").is_err());
        assert!(parse_manifest("f x 1 999 1 - -\nend 1\n").is_err());
        assert!(parse_manifest("f x 1 644 1 -\nend 1\n").is_err());
    }

    #[test]
    fn compare_finds_every_kind_of_difference() {
        let want = alloc::vec![entry("a"), entry("b"), entry("c")];
        let mut got = Scan {
            entries: want.clone(),
            errors: Vec::new(),
        };
        let r = compare(&want, &got);
        assert_eq!((r.passed, r.failed), (4, 0));
        got.entries[0].checksum = Some(1);
        got.entries[1].xattrs.pop();
        got.entries.remove(2);
        got.entries.push(entry("d"));
        let r = compare(&want, &got);
        assert_eq!((r.passed, r.failed), (0, 4), "{:?}", r.failures);
    }
}
