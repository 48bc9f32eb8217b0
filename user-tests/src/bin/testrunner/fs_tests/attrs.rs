//! Sizes and metadata: ftruncate, fstat of each file type, statfs, fsync and chmod.

use user_tests::prelude::*;

use crate::{ensure, expect_errno, get_file, put_file, same_bytes, Check, Ctx, TestResult};

use super::common::{is_dir, is_reg, pattern};

pub fn ftruncate_grow_shrink(cx: &Ctx) -> TestResult {
    let p = cx.path("f");
    let f = File::open(&p, O_RDWR | O_CREAT | O_TRUNC, 0o644).what("create")?;
    f.write_all(b"0123456789").what("write")?;
    f.set_len(100).what("ftruncate grow to 100")?;
    ensure!(
        f.stat().what("fstat")?.st_size == 100,
        "size after growing is not 100"
    );
    let mut want = b"0123456789".to_vec();
    want.resize(100, 0);
    let mut buf = vec![0xffu8; 200];
    let n = f.pread_full(&mut buf, 0).what("pread")?;
    same_bytes(&buf[..n], &want, "grown file (zeros after the data)")?;
    f.set_len(5).what("ftruncate shrink to 5")?;
    ensure!(
        f.stat().what("fstat")?.st_size == 5,
        "size after shrinking is not 5"
    );
    let n = f.pread_full(&mut buf, 0).what("pread")?;
    same_bytes(&buf[..n], b"01234", "shrunk file")?;
    f.set_len(10).what("ftruncate grow to 10")?;
    let n = f.pread_full(&mut buf, 0).what("pread")?;
    same_bytes(
        &buf[..n],
        b"01234\0\0\0\0\0",
        "re-grown file must not resurrect old bytes",
    )?;
    f.set_len(3 * 4096 + 1)
        .what("ftruncate grow across blocks")?;
    let n = f.pread_full(&mut buf, 3 * 4096 - 100).what("pread")?;
    ensure!(
        n == 101 && buf[..n].iter().all(|&b| b == 0),
        "bytes near the new end are not zeros"
    );
    f.set_len(0).what("ftruncate to 0")?;
    ensure!(
        f.stat().what("fstat")?.st_size == 0,
        "size after truncating to 0 is not 0"
    );
    f.close().what("close")?;
    let ro = File::open_read(&p).what("open read-only")?;
    expect_errno(ro.set_len(1), Errno::EINVAL, "ftruncate of a read-only fd")?;
    Ok(())
}

pub fn fstat_types_and_sizes(cx: &Ctx) -> TestResult {
    let p = cx.path("f");
    put_file(&p, &pattern(5000, 0))?;
    let st = sys::stat(&p).what("stat file")?;
    ensure!(
        is_reg(&st),
        "st_mode {:o} of a file is not S_IFREG",
        st.st_mode
    );
    ensure!(st.st_size == 5000, "st_size {} is not 5000", st.st_size);
    ensure!(st.st_blksize > 0, "st_blksize is {}", st.st_blksize);
    ensure!(st.st_ino != 0, "st_ino is 0");
    let f = File::open_read(&p).what("open")?;
    let fst = f.stat().what("fstat")?;
    ensure!(
        fst.st_ino == st.st_ino && fst.st_size == 5000 && is_reg(&fst),
        "fstat differs from stat"
    );
    let d = cx.path("d");
    sys::mkdir(&d, 0o755).what("mkdir")?;
    let dst = sys::stat(&d).what("stat dir")?;
    ensure!(
        is_dir(&dst),
        "st_mode {:o} of a directory is not S_IFDIR",
        dst.st_mode
    );
    let df = File::open(&d, O_RDONLY | O_DIRECTORY, 0).what("open dir")?;
    ensure!(
        is_dir(&df.stat().what("fstat dir")?),
        "fstat of a directory fd is not S_IFDIR"
    );
    ensure!(
        st.st_ino != dst.st_ino,
        "file and directory have the same st_ino"
    );
    Ok(())
}

pub fn statfs_ok(cx: &Ctx) -> TestResult {
    let st = sys::statfs(&cx.dir).what("statfs")?;
    ensure!(st.f_bsize > 0, "f_bsize is {}", st.f_bsize);
    ensure!(
        st.f_namelen >= 255 || st.f_namelen == 0,
        "f_namelen {} is below 255",
        st.f_namelen
    );
    ensure!(
        st.f_bfree <= st.f_blocks && st.f_bavail <= st.f_blocks,
        "free blocks exceed total"
    );
    expect_errno(
        sys::statfs(&cx.path("missing")),
        Errno::ENOENT,
        "statfs of a missing path",
    )
}

pub fn fsync_ok(cx: &Ctx) -> TestResult {
    let p = cx.path("f");
    let f = File::create(&p).what("create")?;
    f.write_all(&pattern(10_000, 9)).what("write")?;
    f.sync().what("fsync file")?;
    f.close().what("close")?;
    let d = File::open(&cx.dir, O_RDONLY | O_DIRECTORY, 0).what("open dir")?;
    d.sync().what("fsync directory")?;
    same_bytes(&get_file(&p)?, &pattern(10_000, 9), "file after fsync")
}

pub fn chmod_mode_bits(cx: &Ctx) -> TestResult {
    let p = cx.path("f");
    put_file(&p, b"")?;
    for mode in [0o600u32, 0o755, 0o640] {
        sys::chmod(&p, mode).what("chmod")?;
        let got = sys::stat(&p).what("stat")?.st_mode;
        ensure!(
            got & 0o7777 == mode,
            "mode {:o} after chmod {mode:o}",
            got & 0o7777
        );
        ensure!(got & S_IFMT == S_IFREG, "chmod changed the file type");
    }
    Ok(())
}
