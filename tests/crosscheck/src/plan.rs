//! A tree generated from a seed, and the manifest it must produce.
//!
//! [`Plan::generate`] decides every node; [`Plan::expected`] computes the manifest from the plan
//! alone, with an inode model for hard links (nlink, shared xattrs and modes) and directory
//! link counts (2 + subdirectories), so a file system that loses or misplaces anything cannot
//! agree with it by construction. [`Plan::apply`] writes the tree and its manifest through any
//! [`FsOps`].

use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use crate::manifest::{format_manifest, Entry, Kind, Xattr};
use crate::{fill, fnv64, join, mix64, Fnv64, FsOps, MANIFEST_NAME};

const KIB: u64 = 1024;
const MIB: u64 = 1024 * 1024;
/// dbfs's default data chunk: sizes and offsets around it are where bugs live.
const CHUNK: u64 = 16 * KIB;
/// Bytes handed to one `write_at`.
const WRITE_PIECE: u64 = 256 * KIB;

/// One thing to create.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    Mkdir {
        path: String,
        mode: u32,
    },
    /// A regular file of `size` bytes: content stream `stream` in `extents` (offset, length;
    /// sorted, disjoint, inside `size`), zeros (holes) elsewhere. Created, written, extended
    /// to `size` by truncate, then given `mode`.
    File {
        path: String,
        mode: u32,
        size: u64,
        extents: Vec<(u64, u64)>,
        stream: u64,
    },
    Symlink {
        target: String,
        path: String,
    },
    Link {
        existing: String,
        path: String,
    },
    Xattr {
        path: String,
        name: String,
        value: Vec<u8>,
    },
    Chmod {
        path: String,
        mode: u32,
    },
}

/// A generated tree.
#[derive(Clone, Debug)]
pub struct Plan {
    pub seed: u64,
    pub steps: Vec<Step>,
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(1);
        mix64(self.0)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        let mut v = vec![0u8; n];
        fill(self.next(), 0, &mut v);
        v
    }
}

impl Plan {
    /// The tree for `seed`: about 140 nodes and 10 MiB of data.
    pub fn generate(seed: u64) -> Plan {
        let mut r = Rng(mix64(seed ^ 0x6372_6f73_7363_6865));
        let mut steps = Vec::new();
        let file = |path: String, mode: u32, size: u64, extents: Vec<(u64, u64)>, stream: u64| {
            Step::File {
                path,
                mode,
                size,
                extents,
                stream,
            }
        };
        let whole = |size: u64| if size == 0 { vec![] } else { vec![(0, size)] };
        let modes = [0o644, 0o600, 0o755, 0o640, 0o444, 0o700, 0o664];

        // Fixed directories, and a nested chain 4..=6 deep.
        let mut dirs: Vec<String> = Vec::new();
        for d in ["sizes", "sparse", "links", "hl", "long", "wide", "x"] {
            steps.push(Step::Mkdir {
                path: d.to_string(),
                mode: 0o755,
            });
            dirs.push(d.to_string());
        }
        let mut deep = String::from("deep");
        steps.push(Step::Mkdir {
            path: deep.clone(),
            mode: 0o755,
        });
        dirs.push(deep.clone());
        for i in 0..4 + r.below(3) {
            deep = join(&deep, &format!("l{i}"));
            steps.push(Step::Mkdir {
                path: deep.clone(),
                mode: *r.pick(&[0o755, 0o750, 0o711]),
            });
            dirs.push(deep.clone());
        }
        for i in 0..3 + r.below(4) {
            let parent = r.pick(&dirs).clone();
            let path = join(&parent, &format!("r{i}"));
            steps.push(Step::Mkdir {
                path: path.clone(),
                mode: 0o755,
            });
            dirs.push(path);
        }

        // Sizes around pages, chunks and MiB, and a file of a few MiB.
        let sizes = [
            0,
            1,
            511,
            512,
            4095,
            4096,
            4097,
            CHUNK - 1,
            CHUNK,
            CHUNK + 1,
            2 * CHUNK - 1,
            2 * CHUNK,
            2 * CHUNK + 1,
            64 * KIB + 3,
            MIB - 1,
            MIB,
            MIB + 1,
        ];
        for s in sizes {
            steps.push(file(format!("sizes/s{s}"), 0o644, s, whole(s), r.next()));
        }
        let big = 3 * MIB + r.below(64 * KIB);
        steps.push(file("sizes/big".into(), 0o644, big, whole(big), r.next()));

        // Sparse files: holes before, between and after data, and one that is all hole.
        type Sparse = (&'static str, u64, Vec<(u64, u64)>);
        let sparse: [Sparse; 5] = [
            ("head-hole", 2 * MIB + 5100, vec![(2 * MIB + 100, 5000)]),
            ("tail-hole", 3 * MIB, vec![(0, 10_000)]),
            ("middle", MIB + 20_007, vec![(0, CHUNK), (MIB + 7, 20_000)]),
            ("all-hole", 4 * MIB + 3, vec![]),
            (
                "chunk-edge",
                64 * KIB,
                vec![(CHUNK - 3, 6), (3 * CHUNK - 1, 2)],
            ),
        ];
        for (name, size, extents) in sparse {
            steps.push(file(
                format!("sparse/{name}"),
                0o644,
                size,
                extents,
                r.next(),
            ));
        }

        // Many small files in one directory, and random files anywhere.
        for i in 0..40 + r.below(40) {
            let size = r.below(300);
            steps.push(file(
                format!("wide/w{i:03}"),
                0o644,
                size,
                whole(size),
                r.next(),
            ));
        }
        let mut randoms = Vec::new();
        for i in 0..20 {
            let size = match r.below(10) {
                0..=5 => r.below(8 * KIB),
                6..=8 => 8 * KIB + r.below(200 * KIB),
                _ => 200 * KIB + r.below(500 * KIB),
            };
            let path = join(&r.pick(&dirs).clone(), &format!("f{i}-{}", r.below(1000)));
            steps.push(file(
                path.clone(),
                *r.pick(&modes),
                size,
                whole(size),
                r.next(),
            ));
            randoms.push(path);
        }
        // Symlinks: relative, absolute, dangling, to a directory, to itself, long, UTF-8.
        let long_target: String = (0..1000).map(|i| (b'a' + (i % 26) as u8) as char).collect();
        for (target, name) in [
            ("../sizes/s1", "rel"),
            ("/absolute/nowhere", "abs"),
            ("nowhere", "dangling"),
            ("../deep", "to-dir"),
            ("self", "self"),
            (long_target.as_str(), "long"),
            ("ünïcødé/целевой", "utf8"),
        ] {
            steps.push(Step::Symlink {
                target: target.to_string(),
                path: format!("links/{name}"),
            });
        }

        // Hard links: three names across directories, and one for a random file.
        steps.push(Step::Link {
            existing: "sizes/s4097".into(),
            path: "hl/a".into(),
        });
        steps.push(Step::Link {
            existing: "sizes/s4097".into(),
            path: join(&deep, "b"),
        });
        let victim = r.pick(&randoms).clone();
        steps.push(Step::Link {
            existing: victim.clone(),
            path: "hl/r".into(),
        });

        // Long names: 255 bytes, ASCII and UTF-8 (127 two-byte characters and one byte).
        let n255 = "n".repeat(255);
        let d255 = "D".repeat(255);
        let u255 = format!("{}x", "é".repeat(127));
        steps.push(file(
            format!("long/{n255}"),
            0o644,
            1000,
            whole(1000),
            r.next(),
        ));
        steps.push(Step::Mkdir {
            path: format!("long/{d255}"),
            mode: 0o755,
        });
        steps.push(file(
            format!("long/{d255}/{}", "x".repeat(255)),
            0o600,
            5000,
            whole(5000),
            r.next(),
        ));
        steps.push(file(format!("long/{u255}"), 0o644, 77, whole(77), r.next()));
        steps.push(Step::Symlink {
            target: "t".repeat(255),
            path: format!("long/{}", "s".repeat(255)),
        });

        // Extended attributes (user.*: regular files and directories only).
        let xattrs: Vec<(String, String, usize)> = vec![
            ("sizes/s1".into(), "user.small".into(), 7),
            ("sizes/s1".into(), "user.empty".into(), 0),
            ("sizes/s4097".into(), "user.page".into(), 4096),
            ("deep".into(), "user.dir".into(), 100),
            (
                format!("long/{n255}"),
                format!("user.{}", "k".repeat(250)),
                33,
            ),
            (victim, "user.linked".into(), 1 + r.below(2000) as usize),
        ];
        for (path, name, len) in xattrs {
            let value = r.bytes(len);
            steps.push(Step::Xattr { path, name, value });
        }
        for i in 0..5 {
            let path = r.pick(&randoms).clone();
            let len = r.below(2000) as usize;
            let value = r.bytes(len);
            steps.push(Step::Xattr {
                path,
                name: format!("user.r{i}"),
                value,
            });
        }

        // Modes set after the content is in place.
        steps.push(Step::Chmod {
            path: "x".into(),
            mode: 0o1777,
        });
        steps.push(Step::Chmod {
            path: "sizes/s0".into(),
            mode: 0o400,
        });
        steps.push(Step::Chmod {
            path: deep,
            mode: 0o700,
        });
        Plan { seed, steps }
    }

    /// Total bytes of data the plan writes.
    pub fn data_bytes(&self) -> u64 {
        self.steps
            .iter()
            .map(|s| match s {
                Step::File { extents, .. } => extents.iter().map(|e| e.1).sum(),
                _ => 0,
            })
            .sum()
    }

    /// The manifest entries this plan must produce (sorted by path).
    pub fn expected(&self) -> Result<Vec<Entry>, String> {
        struct Ino {
            kind: Kind,
            perm: u32,
            size: u64,
            checksum: Option<u64>,
            xattrs: BTreeMap<String, Xattr>,
            nlink: u32,
        }
        let mut inodes: Vec<Ino> = Vec::new();
        let mut names: BTreeMap<String, usize> = BTreeMap::new();
        fn add(
            inodes: &mut Vec<Ino>,
            names: &mut BTreeMap<String, usize>,
            path: &str,
            ino: Ino,
        ) -> Result<(), String> {
            if names.contains_key(path) {
                return Err(format!("plan creates {path} twice"));
            }
            inodes.push(ino);
            names.insert(path.to_string(), inodes.len() - 1);
            Ok(())
        }
        let plain = |kind, perm, size, checksum| Ino {
            kind,
            perm,
            size,
            checksum,
            xattrs: BTreeMap::new(),
            nlink: 1,
        };
        for s in &self.steps {
            match s {
                Step::Mkdir { path, mode } => add(
                    &mut inodes,
                    &mut names,
                    path,
                    plain(Kind::Dir, *mode, 0, None),
                )?,
                Step::File {
                    path,
                    mode,
                    size,
                    extents,
                    stream,
                } => {
                    let sum = content_checksum(*size, extents, *stream)?;
                    add(
                        &mut inodes,
                        &mut names,
                        path,
                        plain(Kind::File, *mode, *size, Some(sum)),
                    )?
                }
                Step::Symlink { target, path } => add(
                    &mut inodes,
                    &mut names,
                    path,
                    plain(
                        Kind::Symlink,
                        0o777,
                        target.len() as u64,
                        Some(fnv64(target.as_bytes())),
                    ),
                )?,
                Step::Link { existing, path } => {
                    let ino = *names
                        .get(existing)
                        .ok_or_else(|| format!("link to unknown {existing}"))?;
                    if names.insert(path.clone(), ino).is_some() {
                        return Err(format!("plan creates {path} twice"));
                    }
                    inodes[ino].nlink += 1;
                }
                Step::Xattr { path, name, value } => {
                    let ino = *names
                        .get(path)
                        .ok_or_else(|| format!("xattr on unknown {path}"))?;
                    inodes[ino]
                        .xattrs
                        .insert(name.clone(), Xattr::of(name, value));
                }
                Step::Chmod { path, mode } => {
                    let ino = *names
                        .get(path)
                        .ok_or_else(|| format!("chmod of unknown {path}"))?;
                    inodes[ino].perm = *mode;
                }
            }
        }
        let parent = |p: &str| {
            p.rsplit_once('/')
                .map(|(d, _)| d.to_string())
                .unwrap_or_default()
        };
        let mut subdirs: BTreeMap<String, u32> = BTreeMap::new();
        for (path, &ino) in &names {
            if inodes[ino].kind == Kind::Dir {
                *subdirs.entry(parent(path)).or_default() += 1;
            }
        }
        Ok(names
            .iter()
            .map(|(path, &ino)| {
                let i = &inodes[ino];
                Entry {
                    path: path.clone(),
                    kind: i.kind,
                    size: if i.kind == Kind::Dir {
                        None
                    } else {
                        Some(i.size)
                    },
                    mode: i.kind.mode_bits() | i.perm,
                    nlink: if i.kind == Kind::Dir {
                        2 + subdirs.get(path).copied().unwrap_or(0)
                    } else {
                        i.nlink
                    },
                    checksum: i.checksum,
                    xattrs: i.xattrs.values().cloned().collect(),
                }
            })
            .collect())
    }

    /// Create the tree and its manifest (`MANIFEST` at the root) through `ops`, then sync.
    /// `progress` hears one line per phase.
    pub fn apply(&self, ops: &mut dyn FsOps, progress: &mut dyn FnMut(&str)) -> Result<(), String> {
        let manifest = format_manifest(&self.expected()?);
        let mut buf = vec![0u8; WRITE_PIECE as usize];
        let e = |what: &str, path: &str, e: crate::Errno| format!("{what} {path}: {}", e.name());
        for s in &self.steps {
            match s {
                Step::Mkdir { path, mode } => {
                    ops.mkdir(path, *mode).map_err(|x| e("mkdir", path, x))?
                }
                Step::File {
                    path,
                    mode,
                    size,
                    extents,
                    stream,
                } => {
                    ops.create(path, 0o600).map_err(|x| e("create", path, x))?;
                    let mut end = 0;
                    for &(off, len) in extents {
                        let mut done = 0;
                        while done < len {
                            let n = (len - done).min(WRITE_PIECE) as usize;
                            fill(*stream, off + done, &mut buf[..n]);
                            ops.write_at(path, off + done, &buf[..n])
                                .map_err(|x| e("write", path, x))?;
                            done += n as u64;
                        }
                        end = off + len;
                    }
                    if *size != end {
                        ops.truncate(path, *size)
                            .map_err(|x| e("truncate", path, x))?;
                    }
                    ops.chmod(path, *mode).map_err(|x| e("chmod", path, x))?;
                }
                Step::Symlink { target, path } => ops
                    .symlink(target, path)
                    .map_err(|x| e("symlink", path, x))?,
                Step::Link { existing, path } => {
                    ops.link(existing, path).map_err(|x| e("link", path, x))?
                }
                Step::Xattr { path, name, value } => ops
                    .set_xattr(path, name, value)
                    .map_err(|x| e(&format!("setxattr {name} on"), path, x))?,
                Step::Chmod { path, mode } => {
                    ops.chmod(path, *mode).map_err(|x| e("chmod", path, x))?
                }
            }
        }
        progress(&format!(
            "{} steps done, {} bytes of data",
            self.steps.len(),
            self.data_bytes()
        ));
        ops.create(MANIFEST_NAME, 0o644)
            .map_err(|x| e("create", MANIFEST_NAME, x))?;
        ops.write_at(MANIFEST_NAME, 0, manifest.as_bytes())
            .map_err(|x| e("write", MANIFEST_NAME, x))?;
        ops.sync().map_err(|x| e("sync", "", x))?;
        progress(&format!(
            "manifest written: {} entries",
            manifest.lines().count().saturating_sub(2)
        ));
        Ok(())
    }
}

/// FNV-1a-64 of a file of `size` bytes holding stream `stream` in `extents`, zeros elsewhere.
fn content_checksum(size: u64, extents: &[(u64, u64)], stream: u64) -> Result<u64, String> {
    let mut h = Fnv64::new();
    let mut pos = 0;
    let mut buf = [0u8; 4096];
    for &(off, len) in extents {
        if off < pos || off + len > size {
            return Err(format!(
                "bad extent ({off}, {len}) in a file of {size} bytes"
            ));
        }
        h.update_zeros(off - pos);
        let mut done = 0;
        while done < len {
            let n = (len - done).min(buf.len() as u64) as usize;
            fill(stream, off + done, &mut buf[..n]);
            h.update(&buf[..n]);
            done += n as u64;
        }
        pos = off + len;
    }
    h.update_zeros(size - pos);
    Ok(h.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_are_deterministic_and_seeded() {
        let a = Plan::generate(1);
        assert_eq!(a.steps, Plan::generate(1).steps);
        assert_ne!(a.steps, Plan::generate(2).steps);
        let e = a.expected().unwrap();
        assert!(e.len() > 100, "{} entries", e.len());
        assert!(a.data_bytes() > 5 * MIB && a.data_bytes() < 20 * MIB);
        // Hard links share nlink, size, checksum and xattrs.
        let s = e.iter().find(|x| x.path == "sizes/s4097").unwrap();
        let h = e.iter().find(|x| x.path == "hl/a").unwrap();
        assert_eq!((s.nlink, h.nlink), (3, 3));
        assert_eq!((&s.checksum, &s.xattrs), (&h.checksum, &h.xattrs));
        assert_eq!(s.xattrs.len(), 1);
        // Directory link counts: 2 + subdirectories.
        for d in e.iter().filter(|x| x.kind == Kind::Dir) {
            let prefix = format!("{}/", d.path);
            let subdirs = e
                .iter()
                .filter(|x| {
                    x.kind == Kind::Dir
                        && x.path
                            .strip_prefix(&prefix)
                            .is_some_and(|rest| !rest.contains('/'))
                })
                .count() as u32;
            assert_eq!(d.nlink, 2 + subdirs, "{}", d.path);
        }
        assert!(e.iter().any(|x| x.kind == Kind::Dir && x.nlink > 2));
        assert_eq!(e.iter().find(|x| x.path == "x").unwrap().mode, 0o41777);
    }

    #[test]
    fn holes_checksum_as_zeros() {
        let with_hole = content_checksum(10, &[(5, 5)], 3).unwrap();
        let mut flat = [0u8; 10];
        fill(3, 5, &mut flat[5..]);
        assert_eq!(with_hole, fnv64(&flat));
        assert!(content_checksum(10, &[(5, 6)], 3).is_err());
    }
}
