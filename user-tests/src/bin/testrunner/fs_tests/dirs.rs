//! Directory listings (getdents64 with exact names and small buffers), many files in one
//! directory, and a directory's link count.

use user_tests::prelude::*;

use crate::{ensure, expect_errno, get_file, put_file, same_bytes, Check, Ctx, TestResult};

use super::common::{list, names_sorted};

pub fn getdents_exact_names(cx: &Ctx) -> TestResult {
    let d = cx.path("d");
    sys::mkdir(&d, 0o755).what("mkdir")?;
    for n in ["a", "bb", "ccc"] {
        put_file(&user_tests::path_join(&d, n), n.as_bytes())?;
    }
    sys::mkdir(&user_tests::path_join(&d, "sub"), 0o755).what("mkdir sub")?;
    let want = [".", "..", "a", "bb", "ccc", "sub"];
    for buf in [4096usize, 64, 32] {
        let entries = list(&d, buf)?;
        let got = names_sorted(&entries);
        ensure!(
            got == want,
            "listing with a {buf}-byte buffer: got {got:?}, expected {want:?}"
        );
        for (name, kind) in &entries {
            let ok = match name.as_str() {
                "." | ".." | "sub" => *kind == DT_DIR || *kind == DT_UNKNOWN,
                _ => *kind == DT_REG || *kind == DT_UNKNOWN,
            };
            ensure!(ok, "d_type {kind} of {name:?} is wrong");
        }
    }
    // A buffer too small for one record is EINVAL; reading past the end returns 0; lseek(0)
    // rewinds.
    let f = File::open(&d, O_RDONLY | O_DIRECTORY, 0).what("open directory")?;
    let mut tiny = [0u8; 8];
    expect_errno(
        sys::getdents64(f.fd(), &mut tiny),
        Errno::EINVAL,
        "getdents64 with 8 bytes",
    )?;
    let mut buf = vec![0u8; 4096];
    let mut total = 0;
    loop {
        match sys::getdents64(f.fd(), &mut buf).what("getdents64")? {
            0 => break,
            n => total += n,
        }
    }
    ensure!(total > 0, "getdents64 returned nothing");
    ensure!(
        sys::getdents64(f.fd(), &mut buf).what("getdents64 at end")? == 0,
        "getdents64 at the end is not 0"
    );
    f.seek(0, SEEK_SET).what("lseek directory to 0")?;
    ensure!(
        sys::getdents64(f.fd(), &mut buf).what("getdents64 after rewind")? > 0,
        "lseek(0) did not rewind the directory"
    );
    Ok(())
}

pub fn getdents_many_small_buffer(cx: &Ctx) -> TestResult {
    let d = cx.path("d");
    sys::mkdir(&d, 0o755).what("mkdir")?;
    let mut want: Vec<String> = (0..100).map(|i| format!("file{i:03}")).collect();
    for n in &want {
        put_file(&user_tests::path_join(&d, n), b"")?;
    }
    // Remove a few so the directory has holes.
    for i in (0..100).step_by(7) {
        sys::unlink(&user_tests::path_join(&d, &format!("file{i:03}"))).what("unlink")?;
    }
    want.retain(|n| n[4..].parse::<usize>().map(|i| i % 7 != 0).unwrap_or(true));
    want.push(".".into());
    want.push("..".into());
    want.sort();
    let got = names_sorted(&list(&d, 100)?);
    ensure!(
        got.len() == want.len(),
        "got {} names, expected {}",
        got.len(),
        want.len()
    );
    ensure!(got == want, "listing differs: got {got:?}");
    Ok(())
}

pub fn many_files(cx: &Ctx) -> TestResult {
    let n = 200;
    for i in 0..n {
        put_file(&cx.path(&format!("many_{i}")), format!("{i}").as_bytes())?;
    }
    for i in 0..n {
        let p = cx.path(&format!("many_{i}"));
        same_bytes(&get_file(&p)?, format!("{i}").as_bytes(), &p)?;
    }
    for i in 0..n {
        sys::unlink(&cx.path(&format!("many_{i}"))).what("unlink")?;
    }
    let left = list(&cx.dir, 4096)?;
    ensure!(
        left.len() == 2,
        "{} entries left after unlinking all",
        left.len() - 2
    );
    Ok(())
}

pub fn dir_nlink_counts_subdirs(cx: &Ctx) -> TestResult {
    let d = cx.path("d");
    sys::mkdir(&d, 0o755).what("mkdir")?;
    ensure!(
        sys::stat(&d).what("stat")?.st_nlink == 2,
        "new directory st_nlink is not 2"
    );
    for s in ["a", "b"] {
        sys::mkdir(&user_tests::path_join(&d, s), 0o755).what("mkdir sub")?;
    }
    put_file(&cx.path("d/f"), b"")?;
    let n = sys::stat(&d).what("stat")?.st_nlink;
    ensure!(
        n == 4,
        "st_nlink {n} of a directory with 2 subdirectories is not 4"
    );
    Ok(())
}
