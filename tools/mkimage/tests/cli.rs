//! The mkimage binary end to end: build an image with files, then list and read them back.

use std::path::Path;
use std::process::{Command, Output};

fn mkimage(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mkimage"))
        .args(args)
        .output()
        .expect("run mkimage")
}

fn ok(args: &[&str]) -> String {
    let out = mkimage(args);
    assert!(
        out.status.success(),
        "mkimage {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn build_then_ls_and_cat() {
    let tmp = tempfile::tempdir().unwrap();
    let hello = tmp.path().join("hello.txt");
    std::fs::write(&hello, b"hello, guest\n").unwrap();
    let big = tmp.path().join("seqwrite");
    let big_data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(&big, &big_data).unwrap();
    let extra = tmp.path().join("extra");
    std::fs::create_dir(&extra).unwrap();
    std::fs::write(extra.join("one"), b"1").unwrap();
    std::fs::write(extra.join("two"), b"22").unwrap();
    // A tree with a long name, nesting and an empty directory (--add-tree).
    let tree = tmp.path().join("tree");
    std::fs::create_dir_all(tree.join("tests/posix_fallocate")).unwrap();
    std::fs::create_dir_all(tree.join("empty")).unwrap();
    std::fs::write(tree.join("tests/posix_fallocate/00.t"), b"echo 1..1\n").unwrap();
    std::fs::write(tree.join("tests/misc.sh"), b"ntest=1\n").unwrap();
    let image = tmp.path().join("disk.img");

    ok(&[
        "fat32",
        p(&image),
        "--size",
        "40M",
        "--label",
        "TESTVOL",
        "--add",
        &format!("{}:/hello.txt", p(&hello)),
        "--add",
        &format!("{}:/bin/seqwrite", p(&big)),
        "--add-dir",
        &format!("{}:/etc/extra", p(&extra)),
        "--add-tree",
        &format!("{}:/usr/pjdfstest", p(&tree)),
    ]);
    assert_eq!(std::fs::metadata(&image).unwrap().len(), 40 << 20);

    let root = ok(&["ls", p(&image)]);
    assert_eq!(
        root,
        format!(
            "d {:>12} usr/\n- {:>12} hello.txt\nd {:>12} bin/\nd {:>12} etc/\n",
            0, 13, 0, 0
        )
    );
    let bin = ok(&["ls", p(&image), "/bin"]);
    assert_eq!(bin, format!("- {:>12} seqwrite\n", big_data.len()));
    assert_eq!(
        ok(&["ls", p(&image), "etc/extra"]),
        format!("- {:>12} one\n- {:>12} two\n", 1, 2)
    );
    assert_eq!(ok(&["cat", p(&image), "/hello.txt"]), "hello, guest\n");
    assert_eq!(
        ok(&["ls", p(&image), "/usr/pjdfstest"]),
        format!("d {:>12} empty/\nd {:>12} tests/\n", 0, 0)
    );
    assert_eq!(
        ok(&["ls", p(&image), "/usr/pjdfstest/tests"]),
        format!("d {:>12} posix_fallocate/\n- {:>12} misc.sh\n", 0, 8)
    );
    assert_eq!(
        ok(&[
            "cat",
            p(&image),
            "/usr/pjdfstest/tests/posix_fallocate/00.t"
        ]),
        "echo 1..1\n"
    );
    let out = mkimage(&["cat", p(&image), "/bin/seqwrite"]);
    assert!(out.status.success());
    assert!(out.stdout == big_data);

    // Errors: missing file, directory, bad image, too small, bad size; exit 1 and a message.
    for args in [
        vec!["cat", p(&image), "/nope"],
        vec!["cat", p(&image), "/bin"],
        vec!["ls", p(&hello)],
        vec!["fat32", "/nonexistent/dir/x.img", "--size", "40M"],
    ] {
        let out = mkimage(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("error"), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    // A bad size is a usage error (clap: status 2) with a message.
    let out = mkimage(&["blank", p(&image), "--size", "12X"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad size suffix"));
    let small = tmp.path().join("small.img");
    let out = mkimage(&["fat32", p(&small), "--size", "8M"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("too small"));

    // A blank image is sparse zeros of the requested size, and not mountable.
    let blank = tmp.path().join("blank.img");
    ok(&["blank", p(&blank), "--size", "64M"]);
    assert_eq!(std::fs::metadata(&blank).unwrap().len(), 64 << 20);
    assert_eq!(mkimage(&["ls", p(&blank)]).status.code(), Some(1));
}

/// Bytes the host file system holds for `path` (st_blocks is in 512-byte units).
fn allocated(path: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).unwrap().blocks() * 512
}

#[test]
fn allocate_leaves_no_holes_and_keeps_the_contents() {
    let tmp = tempfile::tempdir().unwrap();
    // A blank image: sparse without the flag, every byte held with it, zeros either way.
    let sparse = tmp.path().join("sparse.img");
    let dense = tmp.path().join("dense.img");
    ok(&["blank", p(&sparse), "--size", "8M"]);
    ok(&["blank", p(&dense), "--size", "8M", "--allocate"]);
    assert!(
        allocated(&sparse) < 1 << 20,
        "a blank image without --allocate should be sparse ({} bytes held)",
        allocated(&sparse)
    );
    assert!(
        allocated(&dense) >= 8 << 20,
        "{} bytes held",
        allocated(&dense)
    );
    let bytes = std::fs::read(&dense).unwrap();
    assert_eq!(bytes.len(), 8 << 20);
    assert!(bytes.iter().all(|&b| b == 0));
    // A FAT image with a file: the same volume and file with or without the flag.
    let file = tmp.path().join("data");
    let data: Vec<u8> = (0..200_000u32).map(|i| (i % 253) as u8).collect();
    std::fs::write(&file, &data).unwrap();
    let add = format!("{}:/d/data", p(&file));
    let fat_sparse = tmp.path().join("fat-sparse.img");
    let fat_dense = tmp.path().join("fat-dense.img");
    ok(&["fat32", p(&fat_sparse), "--size", "40M", "--add", &add]);
    ok(&[
        "fat32",
        p(&fat_dense),
        "--size",
        "40M",
        "--add",
        &add,
        "--allocate",
    ]);
    assert!(allocated(&fat_dense) >= 40 << 20);
    assert!(allocated(&fat_sparse) < allocated(&fat_dense));
    let out = mkimage(&["cat", p(&fat_dense), "/d/data"]);
    assert!(out.status.success());
    assert_eq!(out.stdout, data);
}
