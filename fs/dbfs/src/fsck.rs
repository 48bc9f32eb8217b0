//! Consistency check of a dbfs image (the committed state, one read snapshot).
//!
//! Used by the tests after every simulated crash and by the host tool's `fsck`. It reports
//! problems as text instead of failing at the first one; it never modifies the image.

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use kvdb::{Pager, Tx};
use vfs::{FileType, VfsError, VfsResult};

use crate::error::kv;
use crate::format::{
    be_u64, bucket, footprint, CookieEntry, Inode, NameEntry, Superblock, ROOT_INO, SUPERBLOCK_KEY,
};

/// Every (key, value) of a bucket.
fn entries<P: Pager>(tx: &Tx<'_, P>, name: &[u8]) -> VfsResult<Vec<(Vec<u8>, Vec<u8>)>> {
    let b = tx.get_bucket(name).map_err(kv)?;
    let mut c = b.cursor();
    let mut out = Vec::new();
    let mut e = c.first().map_err(kv)?;
    while let Some(entry) = e {
        let value = entry.value().ok_or(VfsError::Corrupted)?.to_vec();
        out.push((entry.key().to_vec(), value));
        e = c.next().map_err(kv)?;
    }
    Ok(out)
}

/// Check the snapshot `tx` sees; returns the problems found (empty: consistent).
pub(crate) fn check<P: Pager>(tx: &Tx<'_, P>, chunk_size: u64) -> VfsResult<Vec<String>> {
    let mut bad = Vec::new();
    let sb = tx
        .get_bucket(bucket::META)
        .and_then(|b| b.get(SUPERBLOCK_KEY))
        .map_err(kv)?
        .and_then(|r| Superblock::decode(&r))
        .ok_or(VfsError::Corrupted)?;

    let mut inodes: BTreeMap<u64, Inode> = BTreeMap::new();
    for (k, v) in entries(tx, bucket::INODES)? {
        match (k.len() == 8, be_u64(&k), Inode::decode(&v)) {
            (true, Some(ino), Ok(i)) => {
                inodes.insert(ino, i);
            }
            _ => bad.push(format!("undecodable inode record {k:?}")),
        }
    }
    if inodes.len() as u64 != sb.inode_count {
        bad.push(format!(
            "superblock counts {} inodes, {} exist",
            sb.inode_count,
            inodes.len()
        ));
    }
    if let Some((&max, _)) = inodes.iter().next_back() {
        if max >= sb.next_ino {
            bad.push(format!("inode {max} not below next_ino {}", sb.next_ino));
        }
    }
    match inodes.get(&ROOT_INO) {
        Some(r) if r.ftype == FileType::Directory && r.parent == ROOT_INO => {}
        _ => bad.push(String::from("root directory missing or wrong")),
    }
    let orphans: BTreeSet<u64> = entries(tx, bucket::ORPHANS)?
        .iter()
        .filter_map(|(k, _)| be_u64(k))
        .collect();

    // Directory entries: the name index and the cookie index must describe the same set.
    let mut links: BTreeMap<u64, u32> = BTreeMap::new();
    let mut subdirs: BTreeMap<u64, u32> = BTreeMap::new();
    let mut by_cookie: BTreeMap<(u64, u64), (u64, FileType, String)> = BTreeMap::new();
    for (k, v) in entries(tx, bucket::COOKIES)? {
        let (Some(dir), Some(cookie)) = (be_u64(&k), k.get(8..).and_then(be_u64)) else {
            bad.push(format!("bad cookie key {k:?}"));
            continue;
        };
        match CookieEntry::decode(&v) {
            Ok(e) => {
                by_cookie.insert((dir, cookie), (e.ino, e.ftype, String::from(e.name)));
            }
            Err(_) => bad.push(format!("bad cookie entry in directory {dir}")),
        }
    }
    let mut seen_cookies = 0usize;
    for (k, v) in entries(tx, bucket::NAMES)? {
        let Some(dir) = be_u64(&k) else {
            bad.push(format!("bad name key {k:?}"));
            continue;
        };
        let name = String::from_utf8_lossy(&k[8..]).into_owned();
        let Ok(e) = NameEntry::decode(&v) else {
            bad.push(format!("bad name entry {dir}/{name}"));
            continue;
        };
        match by_cookie.get(&(dir, e.cookie)) {
            Some((ino, ftype, n)) if *ino == e.ino && *ftype == e.ftype && *n == name => {
                seen_cookies += 1
            }
            _ => bad.push(format!("{dir}/{name}: cookie {} does not match", e.cookie)),
        }
        match inodes.get(&dir) {
            Some(d) if d.ftype == FileType::Directory => {
                if e.cookie >= d.next_cookie {
                    bad.push(format!(
                        "{dir}/{name}: cookie {} not below next_cookie",
                        e.cookie
                    ));
                }
            }
            _ => bad.push(format!("{dir}/{name}: parent is not a directory")),
        }
        match inodes.get(&e.ino) {
            Some(i) if i.ftype == e.ftype => {
                *links.entry(e.ino).or_insert(0) += 1;
                if e.ftype == FileType::Directory {
                    *subdirs.entry(dir).or_insert(0) += 1;
                    if i.parent != dir {
                        bad.push(format!("{dir}/{name}: directory's parent is {}", i.parent));
                    }
                }
            }
            Some(_) => bad.push(format!("{dir}/{name}: type differs from inode {}", e.ino)),
            None => bad.push(format!("{dir}/{name}: dangling entry to inode {}", e.ino)),
        }
    }
    if seen_cookies != by_cookie.len() {
        bad.push(format!(
            "{} cookie entries without a name",
            by_cookie.len().saturating_sub(seen_cookies)
        ));
    }

    // Link counts; unreferenced inodes must be orphans.
    for (&ino, i) in &inodes {
        let names = links.get(&ino).copied().unwrap_or(0);
        let expect = match i.ftype {
            FileType::Directory if ino == ROOT_INO => 2 + subdirs.get(&ino).copied().unwrap_or(0),
            FileType::Directory if names == 0 => 0,
            FileType::Directory => 2 + subdirs.get(&ino).copied().unwrap_or(0),
            _ => names,
        };
        if ino != ROOT_INO && names > 1 && i.ftype == FileType::Directory {
            bad.push(format!("directory {ino} has {names} names"));
        }
        if i.nlink != expect {
            bad.push(format!(
                "inode {ino}: nlink {} but {expect} expected",
                i.nlink
            ));
        }
        if ino != ROOT_INO && names == 0 && !orphans.contains(&ino) {
            bad.push(format!("inode {ino} is unreferenced and not an orphan"));
        }
    }
    for ino in &orphans {
        match inodes.get(ino) {
            Some(i) if i.nlink == 0 => {}
            _ => bad.push(format!("orphan {ino} is missing or still linked")),
        }
    }

    // Data: chunks of existing regular files, within a chunk, nothing non-zero past the size;
    // allocated bytes add up.
    let mut alloc: BTreeMap<u64, u64> = BTreeMap::new();
    for (k, v) in entries(tx, bucket::DATA)? {
        let (Some(ino), Some(idx)) = (be_u64(&k), k.get(8..).and_then(be_u64)) else {
            bad.push(format!("bad chunk key {k:?}"));
            continue;
        };
        let Some(i) = inodes.get(&ino) else {
            bad.push(format!("chunk {idx} of missing inode {ino}"));
            continue;
        };
        if i.ftype != FileType::Regular || v.len() as u64 > chunk_size {
            bad.push(format!(
                "chunk {idx} of inode {ino}: wrong type or length {}",
                v.len()
            ));
        }
        let start = idx.saturating_mul(chunk_size);
        let live = i.size.saturating_sub(start).min(v.len() as u64) as usize;
        if v[live..].iter().any(|&b| b != 0) {
            bad.push(format!(
                "chunk {idx} of inode {ino}: data past the file size"
            ));
        }
        let a = alloc.entry(ino).or_insert(0);
        *a = a.saturating_add(footprint(v.len()));
    }
    for (&ino, i) in &inodes {
        let a = alloc.get(&ino).copied().unwrap_or(0);
        if i.alloc_bytes != a {
            bad.push(format!(
                "inode {ino}: alloc_bytes {} but chunks take {a}",
                i.alloc_bytes
            ));
        }
    }
    let symlinks: BTreeMap<u64, usize> = entries(tx, bucket::SYMLINKS)?
        .iter()
        .filter_map(|(k, v)| Some((be_u64(k)?, v.len())))
        .collect();
    for (&ino, i) in &inodes {
        let has = symlinks.get(&ino);
        match (i.ftype == FileType::Symlink, has) {
            (true, Some(&len)) if len as u64 == i.size => {}
            (false, None) => {}
            _ => bad.push(format!(
                "inode {ino}: symlink target missing, stray or of wrong size"
            )),
        }
    }
    for (k, _) in entries(tx, bucket::XATTRS)? {
        if be_u64(&k).is_none_or(|ino| !inodes.contains_key(&ino)) {
            bad.push(format!("xattr of a missing inode {k:?}"));
        }
    }
    Ok(bad)
}
