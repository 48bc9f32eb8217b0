//! The offline commands: `fsck`, `ls`, `cat` and `put` work on an image through the dbfs
//! library, without mounting it (the image is flocked like a mount's).

use std::io::{Read, Write};
use std::path::Path;
use std::process::ExitCode;

use vfs::{FileSystem, FileType, NewNode, NodeRef, VfsError};

use crate::fsck;
use crate::image::{open_image, Fs};

/// `fsck`: print the problems and a summary; exit 0 clean, 1 problems found, 2 cannot open.
pub(crate) fn fsck_command(image: &Path, verbose: bool) -> ExitCode {
    match fsck::check(image, verbose) {
        Err(msg) => {
            eprintln!("dbfs-fuse fsck: {msg}");
            ExitCode::from(2)
        }
        Ok(r) => {
            for p in &r.problems {
                println!("problem: {p}");
            }
            println!(
                "{}: {} directories, {} files ({} bytes of data read), {} other nodes, {} store records: {}",
                image.display(),
                r.dirs,
                r.files,
                r.bytes,
                r.others,
                r.records,
                if r.problems.is_empty() {
                    "clean".to_string()
                } else {
                    format!("{} problems", r.problems.len())
                }
            );
            if r.problems.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
    }
}

/// The node at `path` (absolute or relative to the root; symlinks are not followed).
pub(crate) fn resolve(fs: &Fs, path: &str) -> Result<NodeRef, String> {
    let mut node = fs.root().map_err(|e| format!("root: {e}"))?;
    let mut stack: Vec<NodeRef> = Vec::new();
    for comp in path.split('/').filter(|c| !c.is_empty() && *c != ".") {
        if comp == ".." {
            if let Some(up) = stack.pop() {
                node = up;
            }
            continue;
        }
        let next = node.lookup(comp).map_err(|e| format!("{path}: {e}"))?;
        stack.push(std::mem::replace(&mut node, next));
    }
    Ok(node)
}

fn type_char(t: FileType) -> char {
    match t {
        FileType::Regular => '-',
        FileType::Directory => 'd',
        FileType::Symlink => 'l',
        FileType::CharDevice => 'c',
        FileType::BlockDevice => 'b',
        FileType::Fifo => 'p',
        FileType::Socket => 's',
    }
}

/// `ls`: one line per entry of directory `path` (type, mode, links, owner, size, name).
pub(crate) fn ls(image: &Path, path: &str) -> Result<(), String> {
    let fs = open_image(image, true)?;
    let dir = resolve(&fs, path)?;
    let mut names = Vec::new();
    dir.readdir(0, &mut |e| {
        names.push(e.name.to_string());
        true
    })
    .map_err(|e| format!("{path}: {e}"))?;
    let mut out = std::io::stdout().lock();
    for name in names.into_iter().filter(|n| n != "." && n != "..") {
        let node = dir.lookup(&name).map_err(|e| format!("{name}: {e}"))?;
        let m = node.getattr().map_err(|e| format!("{name}: {e}"))?;
        let target = if m.ftype == FileType::Symlink {
            node.readlink()
                .map(|t| format!(" -> {t}"))
                .unwrap_or_default()
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "{}{:04o} {:>3} {:>5} {:>5} {:>12} {}{}",
            type_char(m.ftype),
            m.perm,
            m.nlink,
            m.uid,
            m.gid,
            m.size,
            name,
            target
        );
    }
    Ok(())
}

/// `cat`: copy file `path` to stdout.
pub(crate) fn cat(image: &Path, path: &str) -> Result<(), String> {
    let fs = open_image(image, true)?;
    let node = resolve(&fs, path)?;
    let mut buf = vec![0u8; 1 << 20];
    let mut off = 0u64;
    let mut out = std::io::stdout().lock();
    loop {
        let n = node
            .read_at(off, &mut buf)
            .map_err(|e| format!("{path}: {e}"))?;
        if n == 0 {
            break;
        }
        out.write_all(&buf[..n])
            .map_err(|e| format!("stdout: {e}"))?;
        off += n as u64;
    }
    out.flush().map_err(|e| format!("stdout: {e}"))
}

/// `put`: copy `hostfile` (`-`: stdin) to `path`, created or truncated, then sync.
pub(crate) fn put(image: &Path, hostfile: &Path, path: &str) -> Result<(), String> {
    let fs = open_image(image, false)?;
    let (parent, name) = match path.trim_end_matches('/').rsplit_once('/') {
        Some((p, n)) => (p, n),
        None => ("", path),
    };
    let dir = resolve(&fs, parent)?;
    let mut input: Box<dyn Read> = if hostfile == Path::new("-") {
        Box::new(std::io::stdin().lock())
    } else {
        Box::new(std::fs::File::open(hostfile).map_err(|e| format!("{}: {e}", hostfile.display()))?)
    };
    let node = match dir.lookup(name) {
        Ok(n) => {
            n.truncate(0).map_err(|e| format!("{path}: {e}"))?;
            n
        }
        Err(VfsError::NotFound) => dir
            .create(
                name,
                &NewNode {
                    uid: current_uid(),
                    gid: current_gid(),
                    ..NewNode::new(FileType::Regular, 0o644)
                },
            )
            .map_err(|e| format!("{path}: {e}"))?,
        Err(e) => return Err(format!("{path}: {e}")),
    };
    node.open().map_err(|e| format!("{path}: {e}"))?;
    let mut buf = vec![0u8; 1 << 20];
    let mut off = 0u64;
    let r = loop {
        let n = match input.read(&mut buf) {
            Ok(0) => break Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => break Err(format!("{}: {e}", hostfile.display())),
        };
        if let Err(e) = node.write_at(off, &buf[..n]) {
            break Err(format!("{path}: {e}"));
        }
        off += n as u64;
    };
    let released = node.release().map_err(|e| format!("{path}: {e}"));
    let synced = fs.sync().map_err(|e| format!("sync: {e}"));
    r.and(released).and(synced)
}

fn current_uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}

fn current_gid() -> u32 {
    // SAFETY: getgid has no preconditions and cannot fail.
    unsafe { libc::getgid() }
}
