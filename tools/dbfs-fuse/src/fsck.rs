//! `fsck`: check a dbfs image without changing it.
//!
//! Two passes, both read-only (the image is opened through a pager that refuses writes, so
//! mount does not even free crash orphans):
//! 1. The store: open the kvdb image and walk every bucket with a cursor, which reads every
//!    node and overflow page reachable from the last commit (a damaged page is an error here).
//!    The number of records in `inodes` and `orphans` is kept for pass 2.
//! 2. The file system, through the same vfs calls the kernel makes: walk the tree from the
//!    root; every directory entry must resolve to a node of the type the entry says; `..` of
//!    every directory names its parent; each non-directory's link count equals the names found
//!    for it, each directory's is 2 + its subdirectories; every stored chunk of a regular file
//!    reads (the data bucket's keys from pass 1 say which: holes are not read, so a sparse file
//!    of terabytes costs what its stored data costs), and so does its last byte;
//!    symlink targets are as long as their size; xattrs list and read. Finally every inode
//!    record must be reachable or be an orphan (unlinked while open).
//!
//! dbfs's record decoders are private to it, so records are checked through the vfs traits, not
//! decoded here: the layout has one definition.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use dbfs::format::bucket;
use kvdb::Db;
use vfs::{FileSystem, FileType, NodeRef, VfsError};

use crate::image::{HostClock, ImagePager};

/// What fsck found.
pub struct Report {
    pub problems: Vec<String>,
    pub dirs: u64,
    pub files: u64,
    pub others: u64,
    pub bytes: u64,
    pub records: u64,
}

/// Check `path`. `Err` means the image cannot be opened at all (exit status 2).
pub fn check(path: &Path, verbose: bool) -> Result<Report, String> {
    let mut report = Report {
        problems: Vec::new(),
        dirs: 0,
        files: 0,
        others: 0,
        bytes: 0,
        records: 0,
    };

    // Pass 1: the store.
    let pager = ImagePager::open(path, true).map_err(|e| format!("{}: {e}", path.display()))?;
    let db = Db::open(pager)
        .map_err(|e| format!("{}: cannot open the kvdb store: {e}", path.display()))?;
    let mut inode_records = 0u64;
    let mut orphans = BTreeSet::new();
    // ino -> the indices of its stored data chunks (dbfs's key schema: ino and index, big-endian).
    let mut stored: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    {
        let tx = db
            .begin_read()
            .map_err(|e| format!("{}: {e}", path.display()))?;
        for name in bucket::ALL {
            let label = String::from_utf8_lossy(name).into_owned();
            let b = match tx.get_bucket(name) {
                Ok(b) => b,
                Err(e) => {
                    report.problems.push(format!("bucket {label}: {e}"));
                    continue;
                }
            };
            let mut c = b.cursor();
            let mut n = 0u64;
            let mut e = c.first();
            loop {
                match e {
                    Ok(Some(entry)) => {
                        n += 1;
                        if name == bucket::ORPHANS {
                            // Orphan keys are the inode number, big-endian (dbfs's key schema).
                            if let Ok(k) = <[u8; 8]>::try_from(entry.key()) {
                                orphans.insert(u64::from_be_bytes(k));
                            } else {
                                report
                                    .problems
                                    .push("orphans: a key that is not an inode number".into());
                            }
                        }
                        if name == bucket::DATA {
                            let k = entry.key();
                            if let (Ok(ino), Some(Ok(idx))) = (
                                <[u8; 8]>::try_from(&k[..k.len().min(8)]),
                                k.get(8..).map(<[u8; 8]>::try_from),
                            ) {
                                stored
                                    .entry(u64::from_be_bytes(ino))
                                    .or_default()
                                    .push(u64::from_be_bytes(idx));
                            } else {
                                report.problems.push(
                                    "data: a key that is not an inode and a chunk index".into(),
                                );
                            }
                        }
                        if entry.value().is_none() {
                            report.problems.push(format!(
                                "bucket {label}: nested bucket where a record belongs"
                            ));
                        }
                    }
                    Ok(None) => break,
                    Err(err) => {
                        report.problems.push(format!(
                            "bucket {label}: unreadable after {n} records: {err}"
                        ));
                        break;
                    }
                }
                e = c.next();
            }
            if name == bucket::INODES {
                inode_records = n;
            }
            report.records += n;
            if verbose {
                eprintln!("fsck: bucket {label}: {n} records");
            }
        }
    }
    let pager = db.into_pager();

    // Pass 2: the file system.
    let fs = dbfs::DbFs::mount_checked(pager, Arc::new(HostClock))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let root = fs.root().map_err(|e| format!("root: {e}"))?;
    let root_ino = root.getattr().map_err(|e| format!("root: {e}"))?.ino;
    // ino -> (names seen, expected link count, path of first name)
    let mut seen: BTreeMap<u64, (u32, u32, String)> = BTreeMap::new();
    seen.insert(root_ino, (1, 0, "/".into()));
    let mut dirs = BTreeSet::from([root_ino]);
    let mut stack: Vec<(NodeRef, String, u64)> = vec![(root, "/".into(), root_ino)];
    let mut buf = vec![0u8; 1 << 20];
    while let Some((dir, path, parent)) = stack.pop() {
        report.dirs += 1;
        let dir_ino = match dir.getattr() {
            Ok(m) => m.ino,
            Err(e) => {
                report.problems.push(format!("{path}: getattr: {e}"));
                continue;
            }
        };
        let mut entries = Vec::new();
        if let Err(e) = dir.readdir(0, &mut |e| {
            entries.push((e.name.to_string(), e.ino, e.ftype));
            true
        }) {
            report.problems.push(format!("{path}: readdir: {e}"));
        }
        let mut subdirs = 0u32;
        for (name, ino, ftype) in entries {
            let child_path = if path == "/" {
                format!("/{name}")
            } else {
                format!("{path}/{name}")
            };
            if name == "." {
                if ino != dir_ino {
                    report
                        .problems
                        .push(format!("{path}: '.' is inode {ino}, not {dir_ino}"));
                }
                continue;
            }
            if name == ".." {
                if ino != parent {
                    report.problems.push(format!(
                        "{path}: '..' is inode {ino}, not the parent {parent}"
                    ));
                }
                continue;
            }
            let node = match dir.lookup(&name) {
                Ok(n) => n,
                Err(e) => {
                    report
                        .problems
                        .push(format!("{child_path}: listed but lookup fails: {e}"));
                    continue;
                }
            };
            let m = match node.getattr() {
                Ok(m) => m,
                Err(e) => {
                    report
                        .problems
                        .push(format!("{child_path}: inode {ino}: {e}"));
                    continue;
                }
            };
            if m.ino != ino || m.ftype != ftype {
                report.problems.push(format!(
                    "{child_path}: entry says inode {ino} ({ftype:?}), node is {} ({:?})",
                    m.ino, m.ftype
                ));
            }
            if ftype == FileType::Directory {
                subdirs += 1;
                if seen.contains_key(&m.ino) {
                    report.problems.push(format!(
                        "{child_path}: directory inode {} has a second name",
                        m.ino
                    ));
                    continue;
                }
                seen.insert(m.ino, (1, m.nlink, child_path.clone()));
                dirs.insert(m.ino);
                stack.push((node, child_path, dir_ino));
                continue;
            }
            let first = !seen.contains_key(&m.ino);
            let e = seen
                .entry(m.ino)
                .or_insert((0, m.nlink, child_path.clone()));
            e.0 += 1;
            if !first {
                continue;
            }
            match ftype {
                FileType::Regular => {
                    report.files += 1;
                    let cs = u64::from(fs.chunk_size());
                    let chunks = stored.get(&m.ino).map(Vec::as_slice).unwrap_or(&[]);
                    let mut ranges: Vec<(u64, u64)> = chunks
                        .iter()
                        .map(|&i| (i.saturating_mul(cs), i.saturating_add(1).saturating_mul(cs)))
                        .map(|(start, end)| (start, end.min(m.size)))
                        .filter(|(start, end)| start < end)
                        .collect();
                    if m.size > 0 {
                        ranges.push((m.size - 1, m.size));
                    }
                    'ranges: for (start, end) in ranges {
                        let mut off = start;
                        while off < end {
                            let want = (end - off).min(buf.len() as u64) as usize;
                            match node.read_at(off, &mut buf[..want]) {
                                Ok(0) => {
                                    report.problems.push(format!(
                                        "{child_path}: size {} but data ends at {off}",
                                        m.size
                                    ));
                                    break 'ranges;
                                }
                                Ok(n) => {
                                    off += n as u64;
                                    report.bytes += n as u64;
                                }
                                Err(e) => {
                                    report
                                        .problems
                                        .push(format!("{child_path}: read at {off}: {e}"));
                                    break 'ranges;
                                }
                            }
                        }
                    }
                }
                FileType::Symlink => {
                    report.others += 1;
                    match node.readlink() {
                        Ok(t) if t.len() as u64 == m.size => {}
                        Ok(t) => report.problems.push(format!(
                            "{child_path}: target of {} bytes, size {}",
                            t.len(),
                            m.size
                        )),
                        Err(e) => report.problems.push(format!("{child_path}: readlink: {e}")),
                    }
                }
                _ => report.others += 1,
            }
            check_xattrs(&node, &child_path, &mut report.problems);
        }
        match dir.getattr() {
            Ok(m) if m.nlink != 2 + subdirs => report.problems.push(format!(
                "{path}: link count {} but 2 + {subdirs} subdirectories",
                m.nlink
            )),
            _ => {}
        }
        check_xattrs(&dir, &path, &mut report.problems);
    }
    for (ino, (names, nlink, path)) in &seen {
        if !dirs.contains(ino) && *names != *nlink {
            report
                .problems
                .push(format!("{path}: link count {nlink} but {names} names"));
        }
    }
    let reachable = seen.len() as u64;
    let unreached_orphans = orphans.iter().filter(|o| !seen.contains_key(o)).count() as u64;
    if reachable + unreached_orphans != inode_records {
        report.problems.push(format!(
            "{inode_records} inode records, but {reachable} reachable from the root and {unreached_orphans} orphans"
        ));
    }
    let sb = fs.superblock();
    if sb.inode_count != inode_records {
        report.problems.push(format!(
            "superblock counts {} inodes, the store holds {inode_records}",
            sb.inode_count
        ));
    }
    Ok(report)
}

fn check_xattrs(node: &NodeRef, path: &str, problems: &mut Vec<String>) {
    match node.listxattr() {
        Ok(names) => {
            for n in names {
                if let Err(e) = node.getxattr(&n) {
                    problems.push(format!("{path}: xattr {n} listed but unreadable: {e}"));
                }
            }
        }
        Err(VfsError::Unsupported) => {}
        Err(e) => problems.push(format!("{path}: listxattr: {e}")),
    }
}
