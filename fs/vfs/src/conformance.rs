//! The shared conformance suite: one set of exact expectations every file system meets.
//!
//! Call [`run`] from a `#[test]` of a file-system crate with a factory returning a fresh, empty
//! file system and the [`Capabilities`] of that file system. Each check runs on its own fresh
//! file system; checks of features the file system lacks instead verify that the operation is
//! refused (with the errno Linux gives where that is fixed). The first failing check panics
//! with its name and the failed expectation; passing checks print one line each (visible
//! with `--nocapture`).
//!
//! Expectations are POSIX/Linux ones: contents and sizes byte-exact, errors as the
//! [`VfsError`] whose errno Linux returns, `.` and `..` listed first, listings resumable from
//! any `next_cookie`. Order of the other entries is not checked.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;

use crate::{
    FileSystem, FileType, NewNode, NodeRef, RenameFlags, SetAttr, TimeSet, Timestamp, VfsError,
    XattrMode,
};

/// What a file system can do; the suite checks each feature or its refusal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// `symlink` / `readlink`.
    pub symlinks: bool,
    /// `link`, with link counts.
    pub hard_links: bool,
    /// Permission bits, uid and gid are stored as given at create / setattr.
    pub permissions: bool,
    /// Fifos, sockets and device nodes can be created.
    pub special_files: bool,
    /// Extended attributes.
    pub xattrs: bool,
    /// Names differing only in case are different names.
    pub case_sensitive: bool,
    /// An unlinked node stays readable and writable while the caller holds it.
    pub open_unlinked: bool,
    /// `RENAME_EXCHANGE`.
    pub rename_exchange: bool,
    /// A directory's `nlink` is 2 + its number of subdirectories.
    pub dir_link_counts: bool,
    /// Granularity of stored modification times, in seconds (FAT: 2); 0 for nanoseconds.
    pub mtime_granularity_secs: i64,
}

impl Capabilities {
    /// A full POSIX file system (dbfs).
    pub const POSIX: Capabilities = Capabilities {
        symlinks: true,
        hard_links: true,
        permissions: true,
        special_files: true,
        xattrs: true,
        case_sensitive: true,
        open_unlinked: true,
        rename_exchange: true,
        dir_link_counts: true,
        mtime_granularity_secs: 0,
    };

    /// FAT (fat32 crate): none of the POSIX extras, case-insensitive, 2-second mtimes.
    pub const FAT: Capabilities = Capabilities {
        symlinks: false,
        hard_links: false,
        permissions: false,
        special_files: false,
        xattrs: false,
        case_sensitive: false,
        open_unlinked: false,
        rename_exchange: false,
        dir_link_counts: false,
        mtime_granularity_secs: 2,
    };
}

type CheckResult = Result<(), String>;
type Check = fn(&dyn FileSystem, &NodeRef, &Capabilities) -> CheckResult;

/// `ok!(expr)`: the value of a `VfsResult`, or fail the check.
macro_rules! ok {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(err) => {
                return Err(format!(
                    "line {}: `{}` failed with {:?}",
                    line!(),
                    stringify!($e),
                    err
                ))
            }
        }
    };
}

/// `expect_eq!(actual, expected)`: fail the check unless equal.
macro_rules! expect_eq {
    ($a:expr, $b:expr) => {{
        let (a, b) = (&$a, &$b);
        if a != b {
            return Err(format!(
                "line {}: `{}` is {:?}, expected {:?}",
                line!(),
                stringify!($a),
                a,
                b
            ));
        }
    }};
}

/// `expect_err!(expr, VfsError::X)`: the call must fail with exactly that error.
macro_rules! expect_err {
    ($e:expr, $err:expr) => {{
        match $e {
            Ok(_) => {
                return Err(format!(
                    "line {}: `{}` succeeded, expected {:?}",
                    line!(),
                    stringify!($e),
                    $err
                ))
            }
            Err(got) if got == $err => {}
            Err(got) => {
                return Err(format!(
                    "line {}: `{}` failed with {:?}, expected {:?}",
                    line!(),
                    stringify!($e),
                    got,
                    $err
                ))
            }
        }
    }};
}

/// `expect!(cond)`.
macro_rules! expect {
    ($c:expr) => {
        if !$c {
            return Err(format!("line {}: expected `{}`", line!(), stringify!($c)));
        }
    };
}

const CHECKS: &[(&str, Check)] = &[
    ("empty_root", empty_root),
    ("write_read_exact", write_read_exact),
    ("truncate", truncate),
    ("directories_and_readdir", directories_and_readdir),
    ("errors", errors),
    ("rename", rename),
    ("many_files", many_files),
    ("statfs_and_sync", statfs_and_sync),
    ("times", times),
    ("case", case),
    ("symlinks", symlinks),
    ("hard_links", hard_links),
    ("permissions", permissions),
    ("special_files", special_files),
    ("xattrs", xattrs),
    ("dir_link_counts", dir_link_counts),
    ("open_unlinked", open_unlinked),
];

/// Run every check on a fresh file system from `factory`; panic on the first failure.
pub fn run(factory: &dyn Fn() -> Arc<dyn FileSystem>, caps: &Capabilities) {
    for (name, check) in CHECKS {
        let fs = factory();
        let root = match fs.root() {
            Ok(r) => r,
            Err(e) => panic!(
                "vfs conformance `{name}` ({}): root() failed: {e:?}",
                fs.fs_name()
            ),
        };
        if let Err(msg) = check(&*fs, &root, caps) {
            panic!(
                "vfs conformance check `{name}` failed on {}: {msg}",
                fs.fs_name()
            );
        }
        std::println!("vfs conformance {}: {name} ok", fs.fs_name());
    }
}

fn reg() -> NewNode {
    NewNode::new(FileType::Regular, 0o644)
}

fn dir() -> NewNode {
    NewNode::new(FileType::Directory, 0o755)
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| ((i * 31 + i / 251) as u8) ^ seed)
        .collect()
}

/// The whole listing of `node`, without `.` and `..`, sorted.
fn listing(node: &NodeRef) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    ok!(node.readdir(0, &mut |e| {
        out.push(e.name.to_string());
        true
    }));
    if out.len() < 2 || out[0] != "." || out[1] != ".." {
        return Err(format!("listing does not start with . and ..: {out:?}"));
    }
    let mut rest = out.split_off(2);
    rest.sort();
    Ok(rest)
}

fn read_all(node: &NodeRef) -> Result<Vec<u8>, String> {
    let size = ok!(node.getattr()).size as usize;
    let mut buf = vec![0u8; size + 16];
    let n = ok!(node.read_at(0, &mut buf));
    buf.truncate(n);
    Ok(buf)
}

fn empty_root(_fs: &dyn FileSystem, root: &NodeRef, _caps: &Capabilities) -> CheckResult {
    let m = ok!(root.getattr());
    expect_eq!(m.ftype, FileType::Directory);
    expect!(m.nlink >= 2);
    expect_eq!(listing(root)?, Vec::<String>::new());
    let mut first = Vec::new();
    ok!(root.readdir(0, &mut |e| {
        first.push((e.name.to_string(), e.ino, e.ftype));
        true
    }));
    expect_eq!(first[0], (".".to_string(), m.ino, FileType::Directory));
    expect_eq!(first[1].2, FileType::Directory);
    Ok(())
}

fn write_read_exact(_fs: &dyn FileSystem, root: &NodeRef, _caps: &Capabilities) -> CheckResult {
    let f = ok!(root.create("file", &reg()));
    let m = ok!(f.getattr());
    expect_eq!((m.ftype, m.size), (FileType::Regular, 0));
    // 1 MiB + 333 in odd pieces, read back in other pieces.
    let data = pattern((1 << 20) + 333, 1);
    let mut at = 0;
    for piece in data.chunks(40_961) {
        expect_eq!(ok!(f.write_at(at as u64, piece)), piece.len());
        at += piece.len();
    }
    expect_eq!(ok!(f.getattr()).size, data.len() as u64);
    let mut back = vec![0u8; data.len()];
    let mut at = 0;
    while at < data.len() {
        let end = (at + 12_345).min(data.len());
        expect_eq!(ok!(f.read_at(at as u64, &mut back[at..end])), end - at);
        at = end;
    }
    expect!(back == data);
    // Overwrite in the middle at an unaligned offset.
    let patch = pattern(9_999, 7);
    ok!(f.write_at(4_097, &patch));
    let mut got = vec![0u8; 10_100];
    expect_eq!(ok!(f.read_at(4_000, &mut got)), 10_100);
    expect!(got[..97] == data[4_000..4_097]);
    expect!(got[97..97 + 9_999] == patch[..]);
    expect!(got[97 + 9_999..] == data[4_097 + 9_999..14_100]);
    // EOF behaviour.
    expect_eq!(ok!(f.read_at(data.len() as u64, &mut got)), 0);
    expect_eq!(ok!(f.read_at(data.len() as u64 + 100, &mut got)), 0);
    expect_eq!(ok!(f.read_at(data.len() as u64 - 5, &mut got)), 5);
    // Writing past EOF leaves a hole of zeros.
    let g = ok!(root.create("gap", &reg()));
    ok!(g.write_at(0, b"abc"));
    ok!(g.write_at(70_000, b"xyz"));
    let all = read_all(&g)?;
    expect_eq!(all.len(), 70_003);
    expect_eq!(&all[..3], b"abc");
    expect!(all[3..70_000].iter().all(|&b| b == 0));
    expect_eq!(&all[70_000..], b"xyz");
    // A zero-length write changes nothing.
    expect_eq!(ok!(g.write_at(200_000, b"")), 0);
    expect_eq!(ok!(g.getattr()).size, 70_003);
    // Another lookup sees the same contents.
    expect!(read_all(&ok!(root.lookup("file")))? == read_all(&f)?);
    Ok(())
}

fn truncate(_fs: &dyn FileSystem, root: &NodeRef, _caps: &Capabilities) -> CheckResult {
    let f = ok!(root.create("t", &reg()));
    let data = pattern(50_000, 3);
    ok!(f.write_at(0, &data));
    ok!(f.truncate(1_000));
    expect_eq!(ok!(f.getattr()).size, 1_000);
    expect!(read_all(&f)? == data[..1_000]);
    ok!(f.truncate(20_000));
    let all = read_all(&f)?;
    expect_eq!(all.len(), 20_000);
    expect!(all[..1_000] == data[..1_000]);
    expect!(all[1_000..].iter().all(|&b| b == 0));
    // Data written after a shrink does not resurrect old bytes.
    ok!(f.truncate(0));
    ok!(f.write_at(30_000, b"z"));
    let all = read_all(&f)?;
    expect_eq!(all.len(), 30_001);
    expect!(all[..30_000].iter().all(|&b| b == 0));
    let m = ok!(f.setattr(&SetAttr {
        size: Some(7),
        ..Default::default()
    }));
    expect_eq!(m.size, 7);
    expect_err!(root.truncate(0), VfsError::IsADirectory);
    Ok(())
}

fn directories_and_readdir(
    _fs: &dyn FileSystem,
    root: &NodeRef,
    _caps: &Capabilities,
) -> CheckResult {
    let a = ok!(root.create("a", &dir()));
    let b = ok!(a.create("b", &dir()));
    let f = ok!(b.create("leaf", &reg()));
    ok!(f.write_at(0, b"deep"));
    expect_eq!(
        read_all(&ok!(ok!(ok!(root.lookup("a")).lookup("b")).lookup("leaf")))?,
        b"deep".to_vec()
    );
    expect_eq!(ok!(a.getattr()).ftype, FileType::Directory);
    let mut expected = Vec::new();
    for i in 0..30 {
        let name = format!("entry-{i:02}");
        if i % 3 == 0 {
            ok!(a.create(&name, &dir()));
        } else {
            ok!(a.create(&name, &reg()));
        }
        expected.push(name);
    }
    expected.push("b".to_string());
    expected.sort();
    expect_eq!(listing(&a)?, expected);
    // Types and inode numbers agree with lookup; `..` is the parent.
    let mut seen = Vec::new();
    ok!(a.readdir(0, &mut |e| {
        seen.push((e.name.to_string(), e.ino, e.ftype));
        true
    }));
    expect_eq!(seen[0].1, ok!(a.getattr()).ino);
    expect_eq!(seen[1].1, ok!(root.getattr()).ino);
    for (name, ino, ftype) in &seen[2..] {
        let m = ok!(ok!(a.lookup(name)).getattr());
        expect_eq!((m.ino, m.ftype), (*ino, *ftype));
    }
    // Resuming from every next_cookie, two entries per call, yields the same listing.
    let mut resumed = Vec::new();
    let mut cookie = 0;
    loop {
        let mut taken = 0;
        ok!(a.readdir(cookie, &mut |e| {
            if taken == 2 {
                return false;
            }
            taken += 1;
            resumed.push(e.name.to_string());
            cookie = e.next_cookie;
            true
        }));
        if taken == 0 {
            break;
        }
        if resumed.len() > 1000 {
            return Err("readdir resumption does not terminate".into());
        }
    }
    let all: Vec<String> = seen.iter().map(|s| s.0.clone()).collect();
    expect_eq!(resumed, all);
    Ok(())
}

fn errors(_fs: &dyn FileSystem, root: &NodeRef, _caps: &Capabilities) -> CheckResult {
    let d = ok!(root.create("d", &dir()));
    let f = ok!(root.create("f", &reg()));
    ok!(d.create("inner", &reg()));
    expect_err!(root.lookup("missing"), VfsError::NotFound);
    expect_err!(root.create("f", &reg()), VfsError::AlreadyExists);
    expect_err!(root.create("d", &dir()), VfsError::AlreadyExists);
    expect_err!(root.unlink("d"), VfsError::IsADirectory);
    expect_err!(root.rmdir("f"), VfsError::NotADirectory);
    expect_err!(root.rmdir("d"), VfsError::DirectoryNotEmpty);
    expect_err!(root.unlink("missing"), VfsError::NotFound);
    expect_err!(root.rmdir("missing"), VfsError::NotFound);
    expect_err!(d.read_at(0, &mut [0; 8]), VfsError::IsADirectory);
    expect_err!(d.write_at(0, b"x"), VfsError::IsADirectory);
    expect_err!(f.lookup("x"), VfsError::NotADirectory);
    expect_err!(f.create("x", &reg()), VfsError::NotADirectory);
    expect_err!(f.unlink("x"), VfsError::NotADirectory);
    expect_err!(f.readdir(0, &mut |_| true), VfsError::NotADirectory);
    for bad in ["", ".", "..", "a/b"] {
        if root.create(bad, &reg()).is_ok() {
            return Err(format!("create({bad:?}) succeeded"));
        }
    }
    expect_err!(root.create("a/b", &reg()), VfsError::InvalidInput);
    expect_err!(root.create(&"n".repeat(256), &reg()), VfsError::NameTooLong);
    // Removal works once the directory is empty; the names are gone.
    ok!(d.unlink("inner"));
    ok!(root.rmdir("d"));
    ok!(root.unlink("f"));
    expect_eq!(listing(root)?, Vec::<String>::new());
    expect_err!(root.lookup("d"), VfsError::NotFound);
    Ok(())
}

fn rename(_fs: &dyn FileSystem, root: &NodeRef, caps: &Capabilities) -> CheckResult {
    let plain = RenameFlags::default();
    let a = ok!(root.create("a", &dir()));
    let b = ok!(root.create("b", &dir()));
    let f = ok!(a.create("f", &reg()));
    ok!(f.write_at(0, b"payload"));
    let ino = ok!(f.getattr()).ino;
    ok!(a.rename("f", &**root, "g", plain));
    expect_err!(a.lookup("f"), VfsError::NotFound);
    let g = ok!(root.lookup("g"));
    expect_eq!(read_all(&g)?, b"payload".to_vec());
    expect_eq!(ok!(g.getattr()).ino, ino);
    // The node held across the rename still reads the file.
    expect_eq!(read_all(&f)?, b"payload".to_vec());
    // Replacing a file; NOREPLACE.
    let h = ok!(b.create("h", &reg()));
    ok!(h.write_at(0, b"old"));
    let noreplace = RenameFlags {
        noreplace: true,
        ..Default::default()
    };
    expect_err!(
        root.rename("g", &*b, "h", noreplace),
        VfsError::AlreadyExists
    );
    // Onto itself too (Linux checks RENAME_NOREPLACE first; stress-ng's rename stressor).
    expect_err!(b.rename("h", &*b, "h", noreplace), VfsError::AlreadyExists);
    ok!(root.rename("g", &*b, "h", plain));
    expect_eq!(read_all(&ok!(b.lookup("h")))?, b"payload".to_vec());
    expect_eq!(listing(&b)?, vec!["h".to_string()]);
    expect_err!(root.lookup("g"), VfsError::NotFound);
    // Kind mismatches and a missing source.
    let d = ok!(root.create("d", &dir()));
    expect_err!(b.rename("h", &**root, "d", plain), VfsError::IsADirectory);
    expect_err!(root.rename("d", &*b, "h", plain), VfsError::NotADirectory);
    expect_err!(
        root.rename("missing", &**root, "x", plain),
        VfsError::NotFound
    );
    // A directory cannot move below itself.
    let sub = ok!(d.create("sub", &dir()));
    expect_err!(root.rename("d", &*sub, "x", plain), VfsError::InvalidInput);
    // Over a non-empty / an empty directory.
    expect_err!(
        root.rename("a", &**root, "b", plain),
        VfsError::DirectoryNotEmpty
    );
    ok!(root.rename("b", &**root, "a", plain));
    expect_eq!(listing(root)?, vec!["a".to_string(), "d".to_string()]);
    expect_eq!(
        read_all(&ok!(ok!(root.lookup("a")).lookup("h")))?,
        b"payload".to_vec()
    );
    // Renaming onto itself changes nothing.
    ok!(root.rename("a", &**root, "a", plain));
    expect_eq!(listing(root)?, vec!["a".to_string(), "d".to_string()]);
    // Exchange.
    let exchange = RenameFlags {
        exchange: true,
        ..Default::default()
    };
    if caps.rename_exchange {
        ok!(root.rename("a", &**root, "d", exchange));
        expect!(ok!(ok!(root.lookup("d")).lookup("h")).getattr().is_ok());
        expect!(ok!(ok!(root.lookup("a")).lookup("sub")).getattr().is_ok());
    } else {
        expect_err!(
            root.rename("a", &**root, "d", exchange),
            VfsError::Unsupported
        );
    }
    Ok(())
}

fn many_files(_fs: &dyn FileSystem, root: &NodeRef, _caps: &Capabilities) -> CheckResult {
    let d = ok!(root.create("many", &dir()));
    // Created in a scrambled order, removed in sorted order.
    let mut names: Vec<String> = (0..300u32)
        .map(|i| format!("f{:05}", (i * 7919) % 300))
        .collect();
    for (i, name) in names.iter().enumerate() {
        let f = ok!(d.create(name, &reg()));
        ok!(f.write_at(0, &(i as u32).to_le_bytes()));
    }
    names.sort();
    expect_eq!(listing(&d)?, names);
    for name in &names {
        ok!(d.unlink(name));
    }
    expect_eq!(listing(&d)?, Vec::<String>::new());
    ok!(root.rmdir("many"));
    Ok(())
}

fn statfs_and_sync(fs: &dyn FileSystem, root: &NodeRef, _caps: &Capabilities) -> CheckResult {
    let before = match fs.statfs() {
        Ok(s) => s,
        Err(VfsError::Unsupported) => return Ok(()),
        Err(e) => return Err(format!("statfs failed with {e:?}")),
    };
    expect!(before.block_size > 0);
    expect!(before.blocks_free <= before.blocks);
    expect!(before.blocks_available <= before.blocks_free);
    let f = ok!(root.create("big", &reg()));
    ok!(f.write_at(0, &vec![1u8; 1 << 20]));
    ok!(f.fsync(false));
    ok!(fs.sync());
    let during = ok!(fs.statfs());
    let used = (1u64 << 20).div_ceil(before.block_size);
    expect!(during.blocks_free + used <= before.blocks_free);
    ok!(root.unlink("big"));
    ok!(fs.sync());
    let after = ok!(fs.statfs());
    expect!(after.blocks_free > during.blocks_free);
    Ok(())
}

fn times(_fs: &dyn FileSystem, root: &NodeRef, caps: &Capabilities) -> CheckResult {
    let f = ok!(root.create("t", &reg()));
    let t = Timestamp {
        sec: 1_600_000_001,
        nsec: 500_000_000,
    };
    let m = ok!(f.setattr(&SetAttr {
        mtime: Some(TimeSet::At(t)),
        ..Default::default()
    }));
    let g = caps.mtime_granularity_secs;
    let expected = if g == 0 {
        t
    } else {
        Timestamp {
            sec: t.sec - t.sec.rem_euclid(g),
            nsec: 0,
        }
    };
    expect_eq!(m.mtime, expected);
    expect_eq!(ok!(f.getattr()).mtime, expected);
    Ok(())
}

fn case(_fs: &dyn FileSystem, root: &NodeRef, caps: &Capabilities) -> CheckResult {
    ok!(root.create("MiXed", &reg()));
    if caps.case_sensitive {
        expect_err!(root.lookup("mixed"), VfsError::NotFound);
        ok!(root.create("mixed", &reg()));
        expect_eq!(
            listing(root)?,
            vec!["MiXed".to_string(), "mixed".to_string()]
        );
    } else {
        ok!(root.lookup("mixed"));
        expect_err!(root.create("MIXED", &reg()), VfsError::AlreadyExists);
        // Case is preserved.
        expect_eq!(listing(root)?, vec!["MiXed".to_string()]);
    }
    Ok(())
}

fn symlinks(_fs: &dyn FileSystem, root: &NodeRef, caps: &Capabilities) -> CheckResult {
    let new = NewNode::new(FileType::Symlink, 0o777);
    if !caps.symlinks {
        expect!(root.symlink("l", "target", &new).is_err());
        expect_err!(root.lookup("l"), VfsError::NotFound);
        return Ok(());
    }
    let l = ok!(root.symlink("l", "some/target", &new));
    let m = ok!(l.getattr());
    expect_eq!((m.ftype, m.size), (FileType::Symlink, 11));
    expect_eq!(ok!(l.readlink()), "some/target".to_string());
    expect_eq!(
        ok!(ok!(root.lookup("l")).readlink()),
        "some/target".to_string()
    );
    let mut ftype = None;
    ok!(root.readdir(0, &mut |e| {
        if e.name == "l" {
            ftype = Some(e.ftype);
        }
        true
    }));
    expect_eq!(ftype, Some(FileType::Symlink));
    expect_err!(root.symlink("l", "x", &new), VfsError::AlreadyExists);
    let f = ok!(root.create("f", &reg()));
    expect_err!(f.readlink(), VfsError::InvalidInput);
    ok!(root.unlink("l"));
    expect_err!(root.lookup("l"), VfsError::NotFound);
    Ok(())
}

fn hard_links(_fs: &dyn FileSystem, root: &NodeRef, caps: &Capabilities) -> CheckResult {
    let f = ok!(root.create("f", &reg()));
    ok!(f.write_at(0, b"shared"));
    if !caps.hard_links {
        expect!(root.link("g", &*f).is_err());
        expect_err!(root.lookup("g"), VfsError::NotFound);
        expect_eq!(ok!(f.getattr()).nlink, 1);
        return Ok(());
    }
    expect_eq!(ok!(f.getattr()).nlink, 1);
    ok!(root.link("g", &*f));
    let g = ok!(root.lookup("g"));
    expect_eq!(ok!(g.getattr()).ino, ok!(f.getattr()).ino);
    expect_eq!(ok!(f.getattr()).nlink, 2);
    ok!(g.write_at(6, b"!"));
    expect_eq!(read_all(&f)?, b"shared!".to_vec());
    expect_err!(root.link("g", &*f), VfsError::AlreadyExists);
    let d = ok!(root.create("d", &dir()));
    expect_err!(root.link("dl", &*d), VfsError::NotPermitted);
    ok!(root.unlink("f"));
    expect_eq!(ok!(g.getattr()).nlink, 1);
    expect_eq!(read_all(&ok!(root.lookup("g")))?, b"shared!".to_vec());
    Ok(())
}

fn permissions(_fs: &dyn FileSystem, root: &NodeRef, caps: &Capabilities) -> CheckResult {
    let new = NewNode {
        ftype: FileType::Regular,
        perm: 0o640,
        uid: 1000,
        gid: 100,
        rdev: 0,
    };
    if !caps.permissions {
        // Linux vfat: a fixed mode, no other owner.
        let f = ok!(root.create("f", &reg()));
        let m = ok!(f.getattr());
        expect_eq!((m.uid, m.gid), (0, 0));
        expect_err!(
            f.setattr(&SetAttr {
                uid: Some(1000),
                ..Default::default()
            }),
            VfsError::NotPermitted
        );
        return Ok(());
    }
    let f = ok!(root.create("f", &new));
    let m = ok!(f.getattr());
    expect_eq!((m.perm, m.uid, m.gid), (0o640, 1000, 100));
    expect_eq!(m.mode(), abi::stat::S_IFREG | 0o640);
    let m = ok!(f.setattr(&SetAttr {
        perm: Some(0o4751),
        ..Default::default()
    }));
    expect_eq!((m.perm, m.uid, m.gid), (0o4751, 1000, 100));
    expect_eq!(ok!(f.getattr()).perm, 0o4751);
    // (Whether chown clears set-id bits is the kernel VFS's business: not checked here.)
    let m = ok!(f.setattr(&SetAttr {
        uid: Some(7),
        gid: Some(8),
        ..Default::default()
    }));
    expect_eq!((m.uid, m.gid), (7, 8));
    expect_eq!(ok!(f.getattr()).uid, 7);
    let d = ok!(root.create(
        "d",
        &NewNode {
            ftype: FileType::Directory,
            perm: 0o1777,
            uid: 5,
            gid: 6,
            rdev: 0
        }
    ));
    let m = ok!(d.getattr());
    expect_eq!((m.perm, m.uid, m.gid), (0o1777, 5, 6));
    Ok(())
}

fn special_files(_fs: &dyn FileSystem, root: &NodeRef, caps: &Capabilities) -> CheckResult {
    let fifo = NewNode::new(FileType::Fifo, 0o644);
    let chr = NewNode {
        ftype: FileType::CharDevice,
        perm: 0o600,
        uid: 0,
        gid: 0,
        rdev: (1 << 8) | 3,
    };
    if !caps.special_files {
        expect!(root.create("p", &fifo).is_err());
        expect!(root.create("c", &chr).is_err());
        expect_eq!(listing(root)?, Vec::<String>::new());
        return Ok(());
    }
    expect_eq!(
        ok!(ok!(root.create("p", &fifo)).getattr()).ftype,
        FileType::Fifo
    );
    let m = ok!(ok!(root.create("c", &chr)).getattr());
    expect_eq!((m.ftype, m.rdev), (FileType::CharDevice, (1 << 8) | 3));
    ok!(root.unlink("p"));
    ok!(root.unlink("c"));
    Ok(())
}

fn xattrs(_fs: &dyn FileSystem, root: &NodeRef, caps: &Capabilities) -> CheckResult {
    let f = ok!(root.create("f", &reg()));
    if !caps.xattrs {
        expect_err!(
            f.setxattr("user.a", b"1", XattrMode::Any),
            VfsError::Unsupported
        );
        expect_err!(f.getxattr("user.a"), VfsError::Unsupported);
        return Ok(());
    }
    expect_err!(f.getxattr("user.a"), VfsError::NoData);
    expect_err!(
        f.setxattr("user.a", b"1", XattrMode::Replace),
        VfsError::NoData
    );
    ok!(f.setxattr("user.a", b"one", XattrMode::Create));
    expect_err!(
        f.setxattr("user.a", b"1", XattrMode::Create),
        VfsError::AlreadyExists
    );
    ok!(f.setxattr("user.b", b"", XattrMode::Any));
    expect_eq!(ok!(f.getxattr("user.a")), b"one".to_vec());
    let mut list = ok!(f.listxattr());
    list.sort();
    expect_eq!(list, vec!["user.a".to_string(), "user.b".to_string()]);
    ok!(f.setxattr("user.a", b"two", XattrMode::Replace));
    expect_eq!(ok!(f.getxattr("user.a")), b"two".to_vec());
    ok!(f.removexattr("user.a"));
    expect_err!(f.removexattr("user.a"), VfsError::NoData);
    expect_eq!(ok!(f.listxattr()), vec!["user.b".to_string()]);
    Ok(())
}

fn dir_link_counts(_fs: &dyn FileSystem, root: &NodeRef, caps: &Capabilities) -> CheckResult {
    let d = ok!(root.create("d", &dir()));
    expect_eq!(ok!(d.getattr()).nlink, 2);
    if !caps.dir_link_counts {
        return Ok(());
    }
    let before = ok!(root.getattr()).nlink;
    ok!(d.create("s1", &dir()));
    ok!(d.create("s2", &dir()));
    ok!(d.create("f", &reg()));
    expect_eq!(ok!(d.getattr()).nlink, 4);
    ok!(d.rmdir("s1"));
    expect_eq!(ok!(d.getattr()).nlink, 3);
    ok!(root.create("e", &dir()));
    expect_eq!(ok!(root.getattr()).nlink, before + 1);
    ok!(d.rename("s2", &**root, "s2", RenameFlags::default()));
    expect_eq!(ok!(d.getattr()).nlink, 2);
    expect_eq!(ok!(root.getattr()).nlink, before + 2);
    Ok(())
}

fn open_unlinked(_fs: &dyn FileSystem, root: &NodeRef, caps: &Capabilities) -> CheckResult {
    let f = ok!(root.create("f", &reg()));
    ok!(f.write_at(0, b"still here"));
    ok!(f.open());
    ok!(root.unlink("f"));
    expect_err!(root.lookup("f"), VfsError::NotFound);
    if caps.open_unlinked {
        expect_eq!(read_all(&f)?, b"still here".to_vec());
        ok!(f.write_at(10, b"!"));
        expect_eq!(ok!(f.getattr()).size, 11);
        expect_eq!(ok!(f.getattr()).nlink, 0);
    }
    let _ = f.release();
    // The name can be reused for a new, empty file.
    expect_eq!(ok!(ok!(root.create("f", &reg())).getattr()).size, 0);
    Ok(())
}

/// What [`walk_bounded`] met: every entry as `(parent, name, type)`, for a later write phase.
#[derive(Default)]
pub struct Walked {
    /// Nodes visited (the walk stops at its node budget).
    pub nodes: usize,
    /// Every directory entry seen: its directory, its name, and the type the entry claims.
    pub entries: Vec<(NodeRef, String, FileType)>,
}

/// Walk a possibly damaged tree doing every read-side operation once, ignoring errors (the
/// fuzz and corruption tests of each file system): open, read (up to 256 KiB, plus the tail
/// the size claims), readlink, xattrs, readdir from the start and resumed, lookup, release.
/// Bounded whatever the image says: at most 300 nodes, 200 entries per directory and
/// `max_depth` levels.
pub fn walk_bounded(root: &NodeRef, max_depth: usize) -> Walked {
    let mut seen = Walked::default();
    walk_node(root, 0, max_depth, &mut seen);
    seen
}

fn walk_node(node: &NodeRef, depth: usize, max_depth: usize, seen: &mut Walked) {
    const MAX_NODES: usize = 300;
    const MAX_ENTRIES: usize = 200;
    const MAX_READ: u64 = 256 * 1024;
    if seen.nodes >= MAX_NODES {
        return;
    }
    seen.nodes += 1;
    let _ = node.open();
    if let Ok(m) = node.getattr() {
        if m.ftype == FileType::Regular {
            let mut buf = vec![0u8; 64 * 1024];
            let mut at = 0u64;
            while at < m.size.min(MAX_READ) {
                match node.read_at(at, &mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => at += n as u64,
                }
            }
            // The tail, wherever the size says it is.
            let _ = node.read_at(m.size.saturating_sub(100), &mut buf[..200]);
        }
    }
    let _ = node.readlink();
    if let Ok(names) = node.listxattr() {
        for n in names.iter().take(20) {
            let _ = node.getxattr(n);
        }
    }
    let mut names = Vec::new();
    let _ = node.readdir(0, &mut |e| {
        if e.name != "." && e.name != ".." {
            names.push((e.name.to_string(), e.ftype));
        }
        names.len() < MAX_ENTRIES
    });
    // Resume in the middle, as getdents does.
    let _ = node.readdir(3, &mut |_| false);
    let _ = node.release();
    for (name, ftype) in names {
        seen.entries.push((node.clone(), name.clone(), ftype));
        if depth < max_depth {
            if let Ok(child) = node.lookup(&name) {
                walk_node(&child, depth + 1, max_depth, seen);
            }
        }
    }
}
