//! Bad input must fail cleanly with the errno Linux gives (and must not crash the kernel).

use user_tests::prelude::*;
use user_tests::probe::{self, BadAddr};

use crate::{ensure, expect_errno, get_file, put_file, same_bytes, Check, Ctx, TestResult};

fn file_with(cx: &Ctx, len: usize) -> Result<(String, File), String> {
    let p = cx.path("f");
    let data: Vec<u8> = (0..len).map(|i| i as u8).collect();
    put_file(&p, &data)?;
    let f = File::open(&p, O_RDWR, 0).what("open")?;
    Ok((p, f))
}

fn bad_buffers(cx: &Ctx, bad: BadAddr) -> TestResult {
    let (p, f) = file_with(cx, 100)?;
    expect_errno(
        probe::read_to(f.fd(), bad, 10),
        Errno::EFAULT,
        &format!("read into {bad:?}"),
    )?;
    expect_errno(
        probe::write_from(f.fd(), bad, 10),
        Errno::EFAULT,
        &format!("write from {bad:?}"),
    )?;
    expect_errno(
        probe::fstat_to(f.fd(), bad),
        Errno::EFAULT,
        &format!("fstat into {bad:?}"),
    )?;
    ensure!(
        f.seek(0, SEEK_CUR).what("lseek")? == 0,
        "a failed read/write moved the offset"
    );
    drop(f);
    let want: Vec<u8> = (0..100).map(|i| i as u8).collect();
    same_bytes(&get_file(&p)?, &want, "file after failed calls")
}

pub fn efault_null_buffer(cx: &Ctx) -> TestResult {
    bad_buffers(cx, BadAddr::Null)
}

pub fn efault_kernel_address(cx: &Ctx) -> TestResult {
    bad_buffers(cx, BadAddr::Kernel)
}

/// A buffer whose first 100 bytes are mapped and next 100 are not: Linux answers EFAULT or a
/// short count up to the boundary (it may copy what it can); never the full count.
pub fn efault_half_unmapped_buffer(cx: &Ctx) -> TestResult {
    let (_p, f) = file_with(cx, 8192)?;
    match probe::read_half_mapped(f.fd(), 100, 200) {
        Err(Errno::EFAULT) => {}
        Ok(n) if n <= 100 => {}
        other => {
            return Err(format!(
                "read into a half-unmapped buffer: expected EFAULT or <= 100, got {other:?}"
            ))
        }
    }
    f.seek(0, SEEK_SET).what("lseek")?;
    match probe::write_half_mapped(f.fd(), 100, 200) {
        Err(Errno::EFAULT) => {}
        Ok(n) if n <= 100 => {}
        other => {
            return Err(format!(
                "write from a half-unmapped buffer: expected EFAULT or <= 100, got {other:?}"
            ))
        }
    }
    ensure!(
        f.stat().what("fstat")?.st_size == 8192,
        "the file size changed"
    );
    Ok(())
}

/// The same buffer read into again and again while its page's mapping changes: the kernel
/// remembers the last page it translated for a system call, and must not use it once the
/// page is write-protected or unmapped.
pub fn efault_reused_buffer_after_mapping_change(cx: &Ctx) -> TestResult {
    let (_p, f) = file_with(cx, 8192)?;
    let got = probe::pread_around_mapping_changes(f.fd(), 100).what("map, mprotect, munmap")?;
    let want = [Ok(100), Err(Errno::EFAULT), Ok(100), Err(Errno::EFAULT)];
    ensure!(
        got == want,
        "pread into one page before and after mprotect(PROT_READ), mprotect(RW), munmap: \
         expected {want:?}, got {got:?}"
    );
    Ok(())
}

/// Page protections decide what a buffer may be used for, as on Linux/RISC-V: `read` into a
/// read-only page is EFAULT (and reads nothing), `write` from it works; a write-only page is
/// also readable (the ISA has no write-only pages), so both work; a PROT_NONE page takes
/// neither. Each time the page is mapped before the call (it was filled), so the answer
/// comes from the permission, not from a missing page.
pub fn efault_by_page_protection(cx: &Ctx) -> TestResult {
    let (p, f) = file_with(cx, 8192)?;
    let out_path = cx.path("out");
    let out = File::open(&out_path, O_RDWR | O_CREAT | O_TRUNC, 0o644).what("open out")?;
    let cases: [(&str, u32, Option<Errno>, Option<Errno>); 3] = [
        ("PROT_READ", PROT_READ, Some(Errno::EFAULT), None),
        ("PROT_WRITE", PROT_WRITE, None, None),
        (
            "PROT_NONE",
            PROT_NONE,
            Some(Errno::EFAULT),
            Some(Errno::EFAULT),
        ),
    ];
    let mut written = 0u64;
    for (name, prot, read_err, write_err) in cases {
        f.seek(0, SEEK_SET).what("lseek")?;
        let (r, w) = probe::rw_through_protected_page(f.fd(), out.fd(), prot, 100, 0x5A)
            .what(&format!("map and mprotect {name}"))?;
        match (read_err, r) {
            (Some(e), Err(got)) if got == e => {}
            (None, Ok(100)) => {}
            (want, got) => {
                return Err(format!(
                    "read into a {name} page: expected {want:?} (None = 100 bytes), got {got:?}"
                ))
            }
        }
        match (write_err, w) {
            (Some(e), Err(got)) if got == e => {}
            (None, Ok(100)) => written += 100,
            (want, got) => {
                return Err(format!(
                    "write from a {name} page: expected {want:?} (None = 100 bytes), got {got:?}"
                ))
            }
        }
        if read_err.is_some() {
            ensure!(
                f.seek(0, SEEK_CUR).what("lseek")? == 0,
                "a read refused for {name} moved the offset"
            );
        }
    }
    drop(out);
    // PROT_READ: the page still held the fill; PROT_WRITE: the read had put the file's first
    // 100 bytes there before the write took them.
    let mut want = vec![0x5Au8; 100];
    want.extend((0..100).map(|i| i as u8));
    same_bytes(
        &get_file(&out_path)?,
        &want,
        "bytes written from protected pages",
    )?;
    ensure!(written == 200, "written {written} bytes, expected 200");
    drop(f);
    let orig: Vec<u8> = (0..8192).map(|i| i as u8).collect();
    same_bytes(&get_file(&p)?, &orig, "file after the calls")
}

pub fn efault_null_path(_cx: &Ctx) -> TestResult {
    expect_errno(
        probe::openat_path(BadAddr::Null, O_RDONLY),
        Errno::EFAULT,
        "openat(NULL)",
    )?;
    expect_errno(
        probe::openat_path(BadAddr::Null, O_WRONLY | O_CREAT),
        Errno::EFAULT,
        "openat(NULL, O_CREAT)",
    )?;
    expect_errno(
        probe::openat_path(BadAddr::Kernel, O_RDONLY),
        Errno::EFAULT,
        "openat(kernel address)",
    )
}

pub fn ebadf_bad_fds(_cx: &Ctx) -> TestResult {
    let mut buf = [0u8; 8];
    for fd in [999, -1, 1 << 20] {
        expect_errno(
            sys::read(fd, &mut buf),
            Errno::EBADF,
            &format!("read fd {fd}"),
        )?;
        expect_errno(
            sys::write(fd, b"x"),
            Errno::EBADF,
            &format!("write fd {fd}"),
        )?;
        expect_errno(sys::close(fd), Errno::EBADF, &format!("close fd {fd}"))?;
        expect_errno(sys::fstat(fd), Errno::EBADF, &format!("fstat fd {fd}"))?;
        expect_errno(
            sys::lseek(fd, 0, SEEK_SET),
            Errno::EBADF,
            &format!("lseek fd {fd}"),
        )?;
        expect_errno(sys::fsync(fd), Errno::EBADF, &format!("fsync fd {fd}"))?;
        expect_errno(
            sys::pread(fd, &mut buf, 0),
            Errno::EBADF,
            &format!("pread fd {fd}"),
        )?;
        expect_errno(
            sys::getdents64(fd, &mut [0u8; 256]),
            Errno::EBADF,
            &format!("getdents64 fd {fd}"),
        )?;
        expect_errno(
            sys::ftruncate(fd, 0),
            Errno::EBADF,
            &format!("ftruncate fd {fd}"),
        )?;
    }
    Ok(())
}

pub fn ebadf_close_twice(cx: &Ctx) -> TestResult {
    let p = cx.path("f");
    put_file(&p, b"x")?;
    let fd = sys::open(&p, O_RDONLY, 0).what("open")?;
    sys::close(fd).what("first close")?;
    expect_errno(sys::close(fd), Errno::EBADF, "second close")?;
    expect_errno(
        sys::read(fd, &mut [0u8; 4]),
        Errno::EBADF,
        "read after close",
    )
}

pub fn ebadf_wrong_access_mode(cx: &Ctx) -> TestResult {
    let p = cx.path("f");
    put_file(&p, b"data")?;
    let ro = File::open(&p, O_RDONLY, 0).what("open O_RDONLY")?;
    expect_errno(ro.write(b"x"), Errno::EBADF, "write to an O_RDONLY fd")?;
    expect_errno(ro.pwrite(b"x", 0), Errno::EBADF, "pwrite to an O_RDONLY fd")?;
    let wo = File::open(&p, O_WRONLY, 0).what("open O_WRONLY")?;
    expect_errno(
        wo.read(&mut [0u8; 4]),
        Errno::EBADF,
        "read from an O_WRONLY fd",
    )?;
    expect_errno(
        wo.pread(&mut [0u8; 4], 0),
        Errno::EBADF,
        "pread from an O_WRONLY fd",
    )?;
    drop((ro, wo));
    same_bytes(&get_file(&p)?, b"data", "file after refused writes")
}

pub fn enosys_unknown_syscall(_cx: &Ctx) -> TestResult {
    for n in [500usize, 999, 5000] {
        expect_errno(
            probe::unknown_syscall(n),
            Errno::ENOSYS,
            &format!("syscall {n}"),
        )?;
    }
    Ok(())
}

pub fn einval_flags_and_whence(cx: &Ctx) -> TestResult {
    let p = cx.path("f");
    put_file(&p, b"abc")?;
    let f = File::open(&p, O_RDWR, 0).what("open")?;
    expect_errno(f.seek(0, 7), Errno::EINVAL, "lseek with whence 7")?;
    expect_errno(f.seek(0, 0xffff), Errno::EINVAL, "lseek with whence 0xffff")?;
    expect_errno(
        f.pread(&mut [0u8; 4], u64::MAX),
        Errno::EINVAL,
        "pread at offset -1",
    )?;
    expect_errno(
        f.pwrite(b"x", u64::MAX),
        Errno::EINVAL,
        "pwrite at offset -1",
    )?;
    expect_errno(f.set_len(u64::MAX), Errno::EINVAL, "ftruncate to length -1")?;
    expect_errno(
        sys::open(&cx.dir, O_TMPFILE | O_RDONLY, 0o600),
        Errno::EINVAL,
        "O_TMPFILE without write access",
    )?;
    expect_errno(
        sys::unlinkat(AT_FDCWD, &p, 0x1),
        Errno::EINVAL,
        "unlinkat with flag 0x1",
    )?;
    expect_errno(
        sys::renameat2(
            AT_FDCWD,
            &p,
            AT_FDCWD,
            &cx.path("g"),
            RENAME_NOREPLACE | RENAME_EXCHANGE,
        ),
        Errno::EINVAL,
        "renameat2 NOREPLACE|EXCHANGE",
    )?;
    same_bytes(&get_file(&p)?, b"abc", "file after invalid calls")
}
