//! Property test: random sequences of file operations on dbfs and on an in-memory model file
//! system must give the same results (values and errno) and the same tree, across syncs,
//! write-back flushes and remounts.
mod common;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use common::*;
use dbfs::{DbFs, MkfsOptions};
use kvdb::MemPager;
use proptest::prelude::*;
use vfs::{FileSystem, FileType, NodeRef, RenameFlags, VfsError, VfsResult};

const NAMES: [&str; 4] = ["a", "b", "c", "d"];

#[derive(Clone, Debug)]
enum Op {
    Create {
        dir: usize,
        name: usize,
        is_dir: bool,
    },
    Write {
        file: usize,
        off: u32,
        len: u32,
        seed: u8,
    },
    Truncate {
        file: usize,
        size: u32,
    },
    Read {
        file: usize,
        off: u32,
        len: u32,
    },
    Unlink {
        dir: usize,
        name: usize,
    },
    Rmdir {
        dir: usize,
        name: usize,
    },
    Rename {
        sdir: usize,
        sname: usize,
        ddir: usize,
        dname: usize,
        flags: u8,
    },
    Link {
        file: usize,
        dir: usize,
        name: usize,
    },
    Sync,
    Remount,
    Check,
}

fn op() -> impl Strategy<Value = Op> {
    let i = || 0usize..64;
    let n = || 0usize..NAMES.len();
    prop_oneof![
        4 => (i(), n(), any::<bool>()).prop_map(|(dir, name, is_dir)| Op::Create { dir, name, is_dir }),
        5 => (i(), 0u32..300_000, 0u32..70_000, any::<u8>()).prop_map(|(file, off, len, seed)| Op::Write { file, off, len, seed }),
        2 => (i(), 0u32..400_000).prop_map(|(file, size)| Op::Truncate { file, size }),
        3 => (i(), 0u32..400_000, 0u32..100_000).prop_map(|(file, off, len)| Op::Read { file, off, len }),
        2 => (i(), n()).prop_map(|(dir, name)| Op::Unlink { dir, name }),
        1 => (i(), n()).prop_map(|(dir, name)| Op::Rmdir { dir, name }),
        3 => (i(), n(), i(), n(), 0u8..3).prop_map(|(sdir, sname, ddir, dname, flags)| Op::Rename { sdir, sname, ddir, dname, flags }),
        1 => (i(), i(), n()).prop_map(|(file, dir, name)| Op::Link { file, dir, name }),
        1 => Just(Op::Sync),
        1 => Just(Op::Remount),
        1 => Just(Op::Check),
    ]
}

#[derive(Clone, Debug)]
enum Kind {
    File(Vec<u8>),
    Dir {
        entries: BTreeMap<String, usize>,
        parent: usize,
    },
}

#[derive(Clone, Debug)]
struct MNode {
    kind: Kind,
    nlink: u32,
}

/// (path from the root, model id) pairs.
type Paths = Vec<(Vec<String>, usize)>;

/// The model: nodes by model id (root = 0).
struct Model {
    nodes: HashMap<usize, MNode>,
    next: usize,
}

impl Model {
    fn new() -> Model {
        let mut nodes = HashMap::new();
        nodes.insert(
            0,
            MNode {
                kind: Kind::Dir {
                    entries: BTreeMap::new(),
                    parent: 0,
                },
                nlink: 2,
            },
        );
        Model { nodes, next: 1 }
    }

    fn entries(&self, id: usize) -> &BTreeMap<String, usize> {
        match &self.nodes[&id].kind {
            Kind::Dir { entries, .. } => entries,
            Kind::File(_) => panic!("not a dir"),
        }
    }

    fn entries_mut(&mut self, id: usize) -> &mut BTreeMap<String, usize> {
        match &mut self.nodes.get_mut(&id).unwrap().kind {
            Kind::Dir { entries, .. } => entries,
            Kind::File(_) => panic!("not a dir"),
        }
    }

    fn is_dir(&self, id: usize) -> bool {
        matches!(self.nodes[&id].kind, Kind::Dir { .. })
    }

    fn parent(&self, id: usize) -> usize {
        match self.nodes[&id].kind {
            Kind::Dir { parent, .. } => parent,
            Kind::File(_) => panic!("not a dir"),
        }
    }

    /// (path, id) of every directory and of every file name, in path order.
    fn walk(&self) -> (Paths, Paths) {
        let mut dirs = Vec::new();
        let mut files = Vec::new();
        let mut stack = vec![(Vec::new(), 0usize)];
        while let Some((path, id)) = stack.pop() {
            dirs.push((path.clone(), id));
            for (name, &child) in self.entries(id) {
                let mut p = path.clone();
                p.push(name.clone());
                if self.is_dir(child) {
                    stack.push((p, child));
                } else {
                    files.push((p, child));
                }
            }
        }
        dirs.sort();
        files.sort();
        (dirs, files)
    }

    fn is_ancestor(&self, anc: usize, mut dir: usize) -> bool {
        loop {
            if dir == anc {
                return true;
            }
            if dir == 0 {
                return false;
            }
            dir = self.parent(dir);
        }
    }

    fn drop_link(&mut self, id: usize) {
        let n = self.nodes.get_mut(&id).unwrap();
        n.nlink = if matches!(n.kind, Kind::Dir { .. }) {
            0
        } else {
            n.nlink - 1
        };
        if n.nlink == 0 {
            self.nodes.remove(&id);
        }
    }

    fn rename(
        &mut self,
        sdir: usize,
        sname: &str,
        ddir: usize,
        dname: &str,
        flags: RenameFlags,
    ) -> VfsResult<()> {
        if flags.noreplace && flags.exchange {
            return Err(VfsError::InvalidInput);
        }
        let s = *self.entries(sdir).get(sname).ok_or(VfsError::NotFound)?;
        let d = self.entries(ddir).get(dname).copied();
        if flags.noreplace && d.is_some() {
            return Err(VfsError::AlreadyExists);
        }
        if flags.exchange && d.is_none() {
            return Err(VfsError::NotFound);
        }
        if sdir != ddir && self.is_dir(s) && self.is_ancestor(s, ddir) {
            return Err(VfsError::InvalidInput);
        }
        if let Some(d) = d {
            if sdir != ddir && self.is_dir(d) && self.is_ancestor(d, sdir) {
                return Err(if flags.exchange {
                    VfsError::InvalidInput
                } else {
                    VfsError::DirectoryNotEmpty
                });
            }
            if d == s {
                return Ok(());
            }
        }
        if flags.exchange {
            let d = d.unwrap();
            self.entries_mut(sdir).insert(sname.into(), d);
            self.entries_mut(ddir).insert(dname.into(), s);
            if sdir != ddir {
                for (moved, from, to) in [(s, sdir, ddir), (d, ddir, sdir)] {
                    if self.is_dir(moved) {
                        if let Kind::Dir { parent, .. } =
                            &mut self.nodes.get_mut(&moved).unwrap().kind
                        {
                            *parent = to;
                        }
                        self.nodes.get_mut(&from).unwrap().nlink -= 1;
                        self.nodes.get_mut(&to).unwrap().nlink += 1;
                    }
                }
            }
            return Ok(());
        }
        if let Some(d) = d {
            match (self.is_dir(s), self.is_dir(d)) {
                (true, false) => return Err(VfsError::NotADirectory),
                (false, true) => return Err(VfsError::IsADirectory),
                (true, true) if !self.entries(d).is_empty() => {
                    return Err(VfsError::DirectoryNotEmpty)
                }
                _ => {}
            }
            self.entries_mut(ddir).remove(dname);
            if self.is_dir(d) {
                self.nodes.get_mut(&ddir).unwrap().nlink -= 1;
            }
            self.drop_link(d);
        }
        self.entries_mut(sdir).remove(sname);
        self.entries_mut(ddir).insert(dname.into(), s);
        if self.is_dir(s) && sdir != ddir {
            if let Kind::Dir { parent, .. } = &mut self.nodes.get_mut(&s).unwrap().kind {
                *parent = ddir;
            }
            self.nodes.get_mut(&sdir).unwrap().nlink -= 1;
            self.nodes.get_mut(&ddir).unwrap().nlink += 1;
        }
        Ok(())
    }
}

fn resolve(root: &NodeRef, path: &[String]) -> NodeRef {
    let mut n = root.clone();
    for c in path {
        n = n
            .lookup(c)
            .unwrap_or_else(|e| panic!("lookup {path:?}: {e:?}"));
    }
    n
}

fn data(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(13).wrapping_add(seed) | 1)
        .collect()
}

/// The whole tree of `fs` must match the model: names, types, inode identity (hard links),
/// link counts, sizes and contents.
fn check_tree(model: &Model, root: &NodeRef, inos: &mut HashMap<usize, u64>) {
    let (dirs, files) = model.walk();
    for (path, id) in dirs.iter().chain(files.iter()) {
        let node = resolve(root, path);
        let m = node.getattr().unwrap();
        assert_eq!(m.nlink, model.nodes[id].nlink, "nlink of {path:?}");
        if let Some(&ino) = inos.get(id) {
            assert_eq!(m.ino, ino, "inode of {path:?}");
        } else {
            inos.insert(*id, m.ino);
        }
        match &model.nodes[id].kind {
            Kind::File(bytes) => {
                assert_eq!(m.ftype, FileType::Regular);
                assert_eq!(m.size, bytes.len() as u64, "size of {path:?}");
                let mut buf = vec![0xeeu8; bytes.len() + 10];
                let n = node.read_at(0, &mut buf).unwrap();
                assert_eq!(n, bytes.len());
                assert!(buf[..n] == bytes[..], "contents of {path:?}");
            }
            Kind::Dir { entries, .. } => {
                assert_eq!(m.ftype, FileType::Directory);
                let mut listed = Vec::new();
                node.readdir(0, &mut |e| {
                    listed.push((e.name.to_string(), e.ftype));
                    true
                })
                .unwrap();
                let listed: Vec<_> = listed
                    .split_off(2)
                    .into_iter()
                    .collect::<BTreeMap<_, _>>()
                    .into_iter()
                    .collect();
                let expect: Vec<_> = entries
                    .iter()
                    .map(|(n, c)| {
                        (
                            n.clone(),
                            if model.is_dir(*c) {
                                FileType::Directory
                            } else {
                                FileType::Regular
                            },
                        )
                    })
                    .collect();
                assert_eq!(listed, expect, "listing of {path:?}");
            }
        }
    }
}

/// `direct_min`: writes with at least this many bytes of whole chunks place them
/// ([`DbFs::set_direct_write_min`]; MemPager's direct write is its plain write).
fn run(ops: Vec<Op>, chunk_size: u32, dirty_limit: usize, direct_min: Option<usize>) {
    let pager = DbFs::mkfs(
        MemPager::new(),
        MkfsOptions {
            chunk_size,
            ..Default::default()
        },
    )
    .unwrap();
    let mut fs: Arc<DbFs<MemPager>> = DbFs::mount(pager, TestClock::new()).unwrap();
    fs.set_dirty_limit(dirty_limit);
    fs.set_direct_write_min(direct_min);
    let mut root = fs.root().unwrap();
    let mut model = Model::new();
    let mut inos: HashMap<usize, u64> = HashMap::new();
    for (step, op) in ops.into_iter().enumerate() {
        let (dirs, files) = model.walk();
        let ctx = format!("step {step}: {op:?}");
        match op {
            Op::Create { dir, name, is_dir } => {
                let (path, id) = &dirs[dir % dirs.len()];
                let name = NAMES[name];
                let new = if is_dir { common::dir() } else { reg() };
                let real = resolve(&root, path).create(name, &new).map(|_| ());
                let expect = if model.entries(*id).contains_key(name) {
                    Err(VfsError::AlreadyExists)
                } else {
                    let new = model.next;
                    model.next += 1;
                    let kind = if is_dir {
                        Kind::Dir {
                            entries: BTreeMap::new(),
                            parent: *id,
                        }
                    } else {
                        Kind::File(Vec::new())
                    };
                    model.nodes.insert(
                        new,
                        MNode {
                            kind,
                            nlink: if is_dir { 2 } else { 1 },
                        },
                    );
                    model.entries_mut(*id).insert(name.into(), new);
                    if is_dir {
                        model.nodes.get_mut(id).unwrap().nlink += 1;
                    }
                    Ok(())
                };
                assert_eq!(real, expect, "{ctx}");
            }
            Op::Write {
                file,
                off,
                len,
                seed,
            } => {
                if files.is_empty() {
                    continue;
                }
                let (path, id) = &files[file % files.len()];
                let bytes = data(len as usize, seed);
                assert_eq!(
                    resolve(&root, path).write_at(off as u64, &bytes),
                    Ok(bytes.len()),
                    "{ctx}"
                );
                if let Kind::File(v) = &mut model.nodes.get_mut(id).unwrap().kind {
                    if !bytes.is_empty() {
                        let end = off as usize + bytes.len();
                        if v.len() < end {
                            v.resize(end, 0);
                        }
                        v[off as usize..end].copy_from_slice(&bytes);
                    }
                }
            }
            Op::Truncate { file, size } => {
                if files.is_empty() {
                    continue;
                }
                let (path, id) = &files[file % files.len()];
                assert_eq!(resolve(&root, path).truncate(size as u64), Ok(()), "{ctx}");
                if let Kind::File(v) = &mut model.nodes.get_mut(id).unwrap().kind {
                    v.resize(size as usize, 0);
                }
            }
            Op::Read { file, off, len } => {
                if files.is_empty() {
                    continue;
                }
                let (path, id) = &files[file % files.len()];
                let mut buf = vec![0xaau8; len as usize];
                let n = resolve(&root, path).read_at(off as u64, &mut buf).unwrap();
                if let Kind::File(v) = &model.nodes[id].kind {
                    let start = (off as usize).min(v.len());
                    let end = (off as usize + len as usize).min(v.len());
                    assert_eq!(n, end - start, "{ctx}");
                    assert!(buf[..n] == v[start..end], "{ctx}: contents");
                }
            }
            Op::Unlink { dir, name } => {
                let (path, id) = &dirs[dir % dirs.len()];
                let name = NAMES[name];
                let real = resolve(&root, path).unlink(name);
                let expect = match model.entries(*id).get(name).copied() {
                    None => Err(VfsError::NotFound),
                    Some(c) if model.is_dir(c) => Err(VfsError::IsADirectory),
                    Some(c) => {
                        model.entries_mut(*id).remove(name);
                        model.drop_link(c);
                        Ok(())
                    }
                };
                assert_eq!(real, expect, "{ctx}");
            }
            Op::Rmdir { dir, name } => {
                let (path, id) = &dirs[dir % dirs.len()];
                let name = NAMES[name];
                let real = resolve(&root, path).rmdir(name);
                let expect = match model.entries(*id).get(name).copied() {
                    None => Err(VfsError::NotFound),
                    Some(c) if !model.is_dir(c) => Err(VfsError::NotADirectory),
                    Some(c) if !model.entries(c).is_empty() => Err(VfsError::DirectoryNotEmpty),
                    Some(c) => {
                        model.entries_mut(*id).remove(name);
                        model.drop_link(c);
                        model.nodes.get_mut(id).unwrap().nlink -= 1;
                        Ok(())
                    }
                };
                assert_eq!(real, expect, "{ctx}");
            }
            Op::Rename {
                sdir,
                sname,
                ddir,
                dname,
                flags,
            } => {
                let (spath, sid) = &dirs[sdir % dirs.len()];
                let (dpath, did) = &dirs[ddir % dirs.len()];
                let flags = RenameFlags {
                    noreplace: flags == 1,
                    exchange: flags == 2,
                };
                let (sname, dname) = (NAMES[sname], NAMES[dname]);
                let dnode = resolve(&root, dpath);
                let real = resolve(&root, spath).rename(sname, &*dnode, dname, flags);
                let expect = model.rename(*sid, sname, *did, dname, flags);
                assert_eq!(real, expect, "{ctx}");
            }
            Op::Link { file, dir, name } => {
                if files.is_empty() {
                    continue;
                }
                let (fpath, fid) = &files[file % files.len()];
                let (dpath, did) = &dirs[dir % dirs.len()];
                let name = NAMES[name];
                let target = resolve(&root, fpath);
                let real = resolve(&root, dpath).link(name, &*target);
                let expect = if model.entries(*did).contains_key(name) {
                    Err(VfsError::AlreadyExists)
                } else {
                    model.entries_mut(*did).insert(name.into(), *fid);
                    model.nodes.get_mut(fid).unwrap().nlink += 1;
                    Ok(())
                };
                assert_eq!(real, expect, "{ctx}");
            }
            Op::Sync => {
                fs.sync().unwrap();
                assert_eq!(fs.placed_pages(), Some(0), "{ctx}: sync left chunks placed");
            }
            Op::Remount => {
                drop(root);
                fs = remount(fs);
                fs.set_dirty_limit(dirty_limit);
                fs.set_direct_write_min(direct_min);
                root = fs.root().unwrap();
            }
            Op::Check => check_tree(&model, &root, &mut inos),
        }
        // Whatever a crash would leave after this step is consistent.
        assert_clean(&fs);
    }
    check_tree(&model, &root, &mut inos);
    drop(root);
    let fs = remount(fs);
    check_tree(&model, &fs.root().unwrap(), &mut inos);
    // Every inode the model does not have is gone: statfs counts agree.
    let s = fs.statfs().unwrap();
    assert_eq!(s.files - s.files_free, model.nodes.len() as u64);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn dbfs_matches_the_model(
        ops in proptest::collection::vec(op(), 1..60),
        chunk_size in prop_oneof![Just(4096u32), Just(16384u32)],
        dirty_limit in prop_oneof![Just(0usize), Just(100_000usize), Just(16usize << 20)],
        direct_min in prop_oneof![Just(None), Just(Some(4096usize)), Just(Some(32768usize))],
    ) {
        run(ops, chunk_size, dirty_limit, direct_min);
    }
}
