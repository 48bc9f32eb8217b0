//! `mkimage`: builds and inspects the disk images the guest mounts, from the host.
//!
//! Layer: a host tool over the same crates the kernel links (`fat32`, `vfs`), so the on-disk
//! format has one definition. The image file is a [`vfs::BlockDevice`] through [`FileDevice`]
//! (pread/pwrite; flush = `sync_data`).
//!
//! ```text
//! mkimage fat32 IMAGE --size 300M [--label NAME] [--add SRC:DEST]... [--add-dir SRCDIR:DESTDIR]...
//!               [--add-tree SRCDIR:DESTDIR]... [--allocate]
//! mkimage blank IMAGE --size 64M [--allocate]
//! mkimage ls IMAGE [PATH]
//! mkimage cat IMAGE PATH
//! ```
//!
//! Sizes take K, M or G suffixes (powers of 1024). Errors are one line on stderr and exit
//! status 1; a corrupt image is an error, not a panic.
#![forbid(unsafe_code)]

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use fat32::Fat32Fs;
use vfs::{
    BlockDevice, Clock, FileSystem, FileType, NewNode, NodeRef, Timestamp, VfsError, VfsResult,
    SECTOR_SIZE,
};

#[derive(Parser)]
#[command(name = "mkimage", about = "Build and inspect dbfs-os disk images")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Create (or overwrite) IMAGE as a FAT32 volume and copy files into it.
    Fat32 {
        image: PathBuf,
        /// Image size, e.g. 300M (K, M, G suffixes).
        #[arg(long, value_parser = parse_size)]
        size: u64,
        /// Volume label (up to 11 ASCII characters).
        #[arg(long, default_value = "DBFSOS")]
        label: String,
        /// Copy host file SRC to DEST in the image (parent directories are created).
        #[arg(long = "add", value_name = "SRC:DEST")]
        add: Vec<String>,
        /// Copy every regular file of host directory SRCDIR into DESTDIR (not recursive).
        #[arg(long = "add-dir", value_name = "SRCDIR:DESTDIR")]
        add_dir: Vec<String>,
        /// Copy host directory SRCDIR into DESTDIR recursively: every regular file and every
        /// directory (empty ones too); anything else (a symlink, a device) is an error.
        #[arg(long = "add-tree", value_name = "SRCDIR:DESTDIR")]
        add_tree: Vec<String>,
        /// Give every block of the image file space on the host (see `allocate`).
        #[arg(long)]
        allocate: bool,
    },
    /// Create (or overwrite) IMAGE as a zero-filled file, sparse unless `--allocate`.
    Blank {
        image: PathBuf,
        #[arg(long, value_parser = parse_size)]
        size: u64,
        /// Give every block of the image file space on the host, as a real disk has: the
        /// guest's writes then never make the host's file system allocate (see `allocate`).
        #[arg(long)]
        allocate: bool,
    },
    /// List a directory of a FAT image (default: the root).
    Ls {
        image: PathBuf,
        path: Option<String>,
    },
    /// Print a file of a FAT image to stdout.
    Cat { image: PathBuf, path: String },
}

/// An image file as a block device.
pub struct FileDevice {
    file: File,
    sectors: u64,
}

impl FileDevice {
    pub fn open(path: &Path) -> Result<Self, String> {
        let (file, len) = open_rw(path)?;
        Ok(FileDevice {
            file,
            sectors: len / SECTOR_SIZE as u64,
        })
    }

    /// The BlockDevice contract: whole sectors, inside the device.
    fn check(&self, sector: u64, len: usize) -> VfsResult<()> {
        let count = (len / SECTOR_SIZE) as u64;
        match sector.checked_add(count) {
            Some(end) if len.is_multiple_of(SECTOR_SIZE) && end <= self.sectors => Ok(()),
            _ => Err(VfsError::InvalidInput),
        }
    }
}

impl BlockDevice for FileDevice {
    fn num_sectors(&self) -> u64 {
        self.sectors
    }
    fn read_sectors(&self, sector: u64, buf: &mut [u8]) -> VfsResult<()> {
        self.check(sector, buf.len())?;
        self.file
            .read_exact_at(buf, sector * SECTOR_SIZE as u64)
            .map_err(|_| VfsError::Io)
    }
    fn write_sectors(&self, sector: u64, buf: &[u8]) -> VfsResult<()> {
        self.check(sector, buf.len())?;
        self.file
            .write_all_at(buf, sector * SECTOR_SIZE as u64)
            .map_err(|_| VfsError::Io)
    }
    fn flush(&self) -> VfsResult<()> {
        self.file.sync_data().map_err(|_| VfsError::Io)
    }
}

/// The host's wall clock, for the times of the files written.
struct HostClock;
impl Clock for HostClock {
    fn now(&self) -> Timestamp {
        let d = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        Timestamp {
            sec: d.as_secs() as i64,
            nsec: d.subsec_nanos(),
        }
    }
}

/// `300M` -> 314572800. K, M, G are powers of 1024; a plain number is bytes.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let (digits, mult) = match s.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let m = match c.to_ascii_uppercase() {
                'K' => 1u64 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                _ => return Err(format!("bad size suffix in {s:?} (use K, M or G)")),
            };
            (&s[..i], m)
        }
        _ => (s, 1),
    };
    let n: u64 = digits.parse().map_err(|_| format!("bad size {s:?}"))?;
    let bytes = n
        .checked_mul(mult)
        .ok_or_else(|| format!("size {s:?} is too large"))?;
    if bytes < SECTOR_SIZE as u64 {
        return Err(format!("size {s:?} is smaller than one sector"));
    }
    Ok(bytes)
}

fn vfs_err(what: &str) -> impl Fn(VfsError) -> String + '_ {
    move |e| format!("{what}: {e}")
}

/// Split `SRC:DEST` at the last colon.
fn split_pair(spec: &str) -> Result<(&str, &str), String> {
    match spec.rsplit_once(':') {
        Some((src, dest)) if !src.is_empty() && !dest.is_empty() => Ok((src, dest)),
        _ => Err(format!("expected SRC:DEST, got {spec:?}")),
    }
}

fn components(path: &str) -> Vec<&str> {
    path.split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect()
}

/// The node at `path` (absolute or relative to the root).
fn walk(root: &NodeRef, path: &str) -> Result<NodeRef, String> {
    let mut node = root.clone();
    for c in components(path) {
        node = node.lookup(c).map_err(vfs_err(path))?;
    }
    Ok(node)
}

/// `mkdir -p`.
fn make_dirs(root: &NodeRef, path: &str) -> Result<NodeRef, String> {
    let mut node = root.clone();
    for c in components(path) {
        node = match node.lookup(c) {
            Ok(n) => n,
            Err(VfsError::NotFound) => node
                .create(c, &NewNode::new(FileType::Directory, 0o755))
                .map_err(vfs_err(path))?,
            Err(e) => return Err(format!("{path}: {e}")),
        };
        if node.getattr().map_err(vfs_err(path))?.ftype != FileType::Directory {
            return Err(format!("{path}: {c} is not a directory"));
        }
    }
    Ok(node)
}

/// Copy host file `src` to `dest` in the image, replacing an existing file.
fn copy_in(root: &NodeRef, src: &Path, dest: &str) -> Result<(), String> {
    let parts = components(dest);
    let Some((name, parents)) = parts.split_last() else {
        return Err(format!("destination {dest:?} has no file name"));
    };
    let dir = make_dirs(root, &parents.join("/"))?;
    let node = match dir.lookup(name) {
        Ok(n) => {
            n.truncate(0).map_err(vfs_err(dest))?;
            n
        }
        Err(VfsError::NotFound) => dir
            .create(name, &NewNode::new(FileType::Regular, 0o755))
            .map_err(vfs_err(dest))?,
        Err(e) => return Err(format!("{dest}: {e}")),
    };
    let file = File::open(src).map_err(|e| format!("cannot open {}: {e}", src.display()))?;
    let mut buf = vec![0u8; 1 << 20];
    let mut offset = 0u64;
    loop {
        let n = file
            .read_at(&mut buf, offset)
            .map_err(|e| format!("cannot read {}: {e}", src.display()))?;
        if n == 0 {
            break;
        }
        node.write_at(offset, &buf[..n]).map_err(vfs_err(dest))?;
        offset += n as u64;
    }
    node.release().map_err(vfs_err(dest))?;
    Ok(())
}

/// What `--add-tree` copies: directories to create and files to copy, in a sorted walk.
#[derive(Debug, Default, PartialEq)]
struct TreeCopy {
    dirs: Vec<String>,
    files: Vec<(PathBuf, String)>,
}

/// Walk host directory `src` (sorted by name, so images are reproducible) into `out`, with
/// image paths under `dest`. FAT32 has no symlinks or device nodes: one is an error, not skipped.
fn walk_tree(src: &Path, dest: &str, out: &mut TreeCopy) -> Result<(), String> {
    let mut entries = std::fs::read_dir(src)
        .map_err(|e| format!("cannot read directory {}: {e}", src.display()))?
        .map(|e| e.map_err(|e| format!("cannot read directory {}: {e}", src.display())))
        .collect::<Result<Vec<_>, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    out.dirs.push(dest.to_string());
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        let target = format!("{}/{name}", dest.trim_end_matches('/'));
        let ftype = entry
            .file_type()
            .map_err(|e| format!("cannot stat {}: {e}", path.display()))?;
        if ftype.is_dir() {
            walk_tree(&path, &target, out)?;
        } else if ftype.is_file() {
            out.files.push((path, target));
        } else {
            return Err(format!(
                "{} is neither a regular file nor a directory (FAT32 cannot hold it)",
                path.display()
            ));
        }
    }
    Ok(())
}

/// `path` opened for reading and writing, and its length.
fn open_rw(path: &Path) -> Result<(File, u64), String> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let len = file
        .metadata()
        .map_err(|e| format!("cannot stat {}: {e}", path.display()))?
        .len();
    Ok((file, len))
}

fn create_sparse(image: &Path, size: u64) -> Result<(), String> {
    let file =
        File::create(image).map_err(|e| format!("cannot create {}: {e}", image.display()))?;
    file.set_len(size / SECTOR_SIZE as u64 * SECTOR_SIZE as u64)
        .map_err(|e| format!("cannot size {}: {e}", image.display()))
}

/// Write every chunk of `image` back as it reads (zeros over each hole) and make it durable,
/// so the host file system holds a block for every byte of it. A sparse image charges the guest's first write to each region
/// with the host's block allocation (and its journal at the next flush), which a real disk
/// does not: a file system that writes to fresh places (dbfs's copy-on-write tree) paid it on
/// every run, one that overwrites in place (FAT32) mostly once. Measured for the fio write
/// line (4 KiB, 16 MiB, 8 loops): dbfs's device write time 72-143 ms sparse, 21-25 ms
/// allocated (docs/BENCHMARKS.md, "Benchmark disks without holes").
fn allocate(image: &Path) -> Result<(), String> {
    let (file, len) = open_rw(image)?;
    let io = |e: std::io::Error| format!("cannot allocate {}: {e}", image.display());
    const CHUNK: u64 = 1 << 20;
    let mut buf = vec![0u8; CHUNK as usize];
    let mut at = 0;
    while at < len {
        let n = CHUNK.min(len - at) as usize;
        // A hole reads as zeros, and writing them back allocates it; data is written back
        // as it was.
        file.read_exact_at(&mut buf[..n], at).map_err(io)?;
        file.write_all_at(&buf[..n], at).map_err(io)?;
        at += n as u64;
    }
    file.sync_all().map_err(io)
}

fn mount(image: &Path) -> Result<Arc<Fat32Fs>, String> {
    let dev = Arc::new(FileDevice::open(image)?);
    Fat32Fs::mount(dev, Arc::new(HostClock))
        .map_err(|e| format!("{} is not a usable FAT volume: {e}", image.display()))
}

fn cmd_fat32(
    image: &Path,
    size: u64,
    label: &str,
    add: &[String],
    add_dir: &[String],
    add_tree: &[String],
) -> Result<(), String> {
    // Check every source before touching the image.
    let mut copies: Vec<(PathBuf, String)> = Vec::new();
    let mut tree = TreeCopy::default();
    for spec in add_tree {
        let (src, dest) = split_pair(spec)?;
        walk_tree(Path::new(src), dest, &mut tree)?;
    }
    for spec in add {
        let (src, dest) = split_pair(spec)?;
        copies.push((PathBuf::from(src), dest.to_string()));
    }
    for spec in add_dir {
        let (src, dest) = split_pair(spec)?;
        let entries =
            std::fs::read_dir(src).map_err(|e| format!("cannot read directory {src}: {e}"))?;
        let mut found = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| format!("cannot read directory {src}: {e}"))?;
            if entry.file_type().map(|t| t.is_file()).unwrap_or(false) {
                let name = entry.file_name().to_string_lossy().into_owned();
                found.push((
                    entry.path(),
                    format!("{}/{name}", dest.trim_end_matches('/')),
                ));
            }
        }
        found.sort();
        copies.extend(found);
    }
    for (src, _) in copies.iter().chain(&tree.files) {
        if !src.is_file() {
            return Err(format!("{} is not a regular file", src.display()));
        }
    }
    create_sparse(image, size)?;
    let dev = Arc::new(FileDevice::open(image)?);
    Fat32Fs::format(dev, label).map_err(|e| match e {
        VfsError::InvalidInput => {
            format!("cannot format {}: size too small for FAT32 (need about 33M) or bad label {label:?}", image.display())
        }
        e => format!("cannot format {}: {e}", image.display()),
    })?;
    let fs = mount(image)?;
    let root = fs.root().map_err(vfs_err("root"))?;
    for dir in &tree.dirs {
        make_dirs(&root, dir)?;
    }
    for (src, dest) in copies.iter().chain(&tree.files) {
        copy_in(&root, src, dest)?;
    }
    fs.sync().map_err(vfs_err("sync"))?;
    Ok(())
}

fn cmd_ls(image: &Path, path: Option<&str>, out: &mut dyn std::io::Write) -> Result<(), String> {
    let fs = mount(image)?;
    let root = fs.root().map_err(vfs_err("root"))?;
    let path = path.unwrap_or("/");
    let node = walk(&root, path)?;
    let meta = node.getattr().map_err(vfs_err(path))?;
    let line = |out: &mut dyn std::io::Write, ftype: FileType, size: u64, name: &str| {
        let (kind, suffix) = if ftype == FileType::Directory {
            ('d', "/")
        } else {
            ('-', "")
        };
        writeln!(out, "{kind} {size:>12} {name}{suffix}").map_err(|e| format!("write: {e}"))
    };
    if meta.ftype != FileType::Directory {
        return line(out, meta.ftype, meta.size, path);
    }
    let mut entries = Vec::new();
    let mut failed = None;
    node.readdir(0, &mut |e| {
        if e.name != "." && e.name != ".." {
            entries.push(e.name.to_string());
        }
        true
    })
    .map_err(vfs_err(path))?;
    for name in entries {
        match node.lookup(&name).and_then(|n| n.getattr()) {
            Ok(m) => line(out, m.ftype, m.size, &name)?,
            Err(e) => failed = Some(format!("{name}: {e}")),
        }
    }
    failed.map_or(Ok(()), Err)
}

fn cmd_cat(image: &Path, path: &str, out: &mut dyn std::io::Write) -> Result<(), String> {
    let fs = mount(image)?;
    let root = fs.root().map_err(vfs_err("root"))?;
    let node = walk(&root, path)?;
    if node.getattr().map_err(vfs_err(path))?.ftype == FileType::Directory {
        return Err(format!("{path}: {}", VfsError::IsADirectory));
    }
    let mut buf = vec![0u8; 1 << 20];
    let mut offset = 0u64;
    loop {
        let n = node.read_at(offset, &mut buf).map_err(vfs_err(path))?;
        if n == 0 {
            break;
        }
        out.write_all(&buf[..n])
            .map_err(|e| format!("write: {e}"))?;
        offset += n as u64;
    }
    out.flush().map_err(|e| format!("write: {e}"))
}

fn run(cli: Cli) -> Result<(), String> {
    let stdout = std::io::stdout();
    match cli.command {
        Command::Fat32 {
            image,
            size,
            label,
            add,
            add_dir,
            add_tree,
            allocate: dense,
        } => {
            cmd_fat32(&image, size, &label, &add, &add_dir, &add_tree)?;
            if dense {
                allocate(&image)?;
            }
            Ok(())
        }
        Command::Blank {
            image,
            size,
            allocate: dense,
        } => {
            create_sparse(&image, size)?;
            if dense {
                allocate(&image)?;
            }
            Ok(())
        }
        Command::Ls { image, path } => cmd_ls(&image, path.as_deref(), &mut stdout.lock()),
        Command::Cat { image, path } => cmd_cat(&image, &path, &mut stdout.lock()),
    }
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("mkimage: error: {msg}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_suffixes() {
        assert_eq!(parse_size("300M"), Ok(300 << 20));
        assert_eq!(parse_size("64m"), Ok(64 << 20));
        assert_eq!(parse_size("2G"), Ok(2 << 30));
        assert_eq!(parse_size("512K"), Ok(512 << 10));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("12Q").is_err());
        assert!(parse_size("M").is_err());
        assert!(parse_size("100").is_err());
        assert!(parse_size("99999999999G").is_err());
    }

    #[test]
    fn trees_walk_sorted_with_empty_dirs_and_refuse_symlinks() {
        let tmp = std::env::temp_dir().join(format!("mkimage-tree-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(tmp.join("b/deep")).unwrap();
        std::fs::create_dir_all(tmp.join("empty")).unwrap();
        std::fs::write(tmp.join("z"), b"z").unwrap();
        std::fs::write(tmp.join("b/deep/f"), b"f").unwrap();
        let mut tree = TreeCopy::default();
        walk_tree(&tmp, "/usr/", &mut tree).unwrap();
        assert_eq!(tree.dirs, ["/usr/", "/usr/b", "/usr/b/deep", "/usr/empty"]);
        let files: Vec<&str> = tree.files.iter().map(|(_, d)| d.as_str()).collect();
        assert_eq!(files, ["/usr/b/deep/f", "/usr/z"]);
        std::os::unix::fs::symlink("z", tmp.join("link")).unwrap();
        let err = walk_tree(&tmp, "/", &mut TreeCopy::default()).unwrap_err();
        assert!(err.contains("link"), "{err}");
        std::fs::remove_dir_all(&tmp).unwrap();
    }

    #[test]
    fn pairs_split_at_the_last_colon() {
        assert_eq!(split_pair("build/a:/bin/a"), Ok(("build/a", "/bin/a")));
        assert!(split_pair("nodest").is_err());
        assert!(split_pair("src:").is_err());
    }
}
