//! The host half of the cross-check (`gen-tree`, `verify-tree`, `verify-dir`) on its own: a
//! generated tree verifies clean through the library and through a FUSE mount, and a single
//! flipped byte, a changed mode or an extra file makes the verification fail. (`make
//! test-cross` runs the guest half against these commands.)

mod common;

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use common::*;

fn verify_tree(image: &Path) -> (bool, String) {
    summary(run(Command::new(BIN).arg("verify-tree").arg(image)))
}

fn summary(out: Output) -> (bool, String) {
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

fn put(image: &Path, data: &[u8], path: &str) {
    let tmp = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(tmp.path(), data).unwrap();
    let out = run(Command::new(BIN)
        .arg("put")
        .arg(image)
        .arg(tmp.path())
        .arg(path));
    assert!(out.status.success(), "put {path}: {out:?}");
}

fn cat(image: &Path, path: &str) -> Vec<u8> {
    let out = run(Command::new(BIN).arg("cat").arg(image).arg(path));
    assert!(out.status.success(), "cat {path}: {out:?}");
    out.stdout
}

#[test]
fn generated_tree_verifies_and_damage_is_found() {
    let tmp = tempfile::tempdir().unwrap();
    let image = tmp.path().join("t.img");
    mkfs(&image, "64M");
    let out = run(Command::new(BIN)
        .arg("gen-tree")
        .arg(&image)
        .args(["--seed", "3"]));
    assert!(out.status.success(), "gen-tree: {out:?}");
    let (ok, text) = verify_tree(&image);
    assert!(ok, "{text}");
    assert!(text.contains(" passed, 0 failed"), "{text}");

    // The same tree through a real FUSE mount.
    if fuse_available() {
        let mnt = tmp.path().join("mnt");
        let m = Mounted::new(&image, &mnt, "ro", Duration::from_secs(60));
        let (ok, text) = summary(run(Command::new(BIN).arg("verify-dir").arg(&mnt)));
        assert!(m.unmount(), "unmount");
        assert!(ok && text.contains(" passed, 0 failed"), "{text}");
    }

    // One flipped byte in one file (the first of its second 16 KiB chunk): exactly that
    // file fails.
    let mut data = cat(&image, "/sizes/s16385");
    assert_eq!(data.len(), 16385);
    data[16384] ^= 0x40;
    put(&image, &data, "/sizes/s16385");
    let (ok, text) = verify_tree(&image);
    assert!(!ok, "{text}");
    assert!(text.contains("sizes/s16385: checksum"), "{text}");
    assert!(text.contains(" passed, 1 failed"), "{text}");
    data[16384] ^= 0x40;
    put(&image, &data, "/sizes/s16385");
    let (ok, text) = verify_tree(&image);
    assert!(ok, "{text}");

    // A file the manifest does not list.
    put(&image, b"stray", "/wide/stray");
    let (ok, text) = verify_tree(&image);
    assert!(
        !ok && text.contains("wide/stray: not in the manifest"),
        "{text}"
    );

    // A truncated manifest is refused, not read as a shorter list.
    let manifest = cat(&image, "/MANIFEST");
    put(&image, &manifest[..manifest.len() / 2], "/MANIFEST");
    let (ok, text) = verify_tree(&image);
    assert!(!ok && text.contains("MANIFEST"), "{text}");
}

#[test]
fn gen_tree_refuses_a_bad_image() {
    let tmp = tempfile::tempdir().unwrap();
    let image = tmp.path().join("junk.img");
    std::fs::write(&image, vec![0x5a; 1 << 20]).unwrap();
    let out = run(Command::new(BIN)
        .arg("gen-tree")
        .arg(&image)
        .args(["--seed", "1"]));
    assert!(!out.status.success());
    let (ok, _) = verify_tree(&image);
    assert!(!ok);
}
