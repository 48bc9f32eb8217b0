//! File mappings: mmap of regular files (private and shared), their coherence with read(2)
//! and write(2), SIGBUS past the end of the file, msync, madvise, and Linux's errors.

use user_tests::prelude::*;

use crate::{ensure, expect_errno, Check, Ctx, TestResult};

const PAGE: usize = 4096;
const SIGBUS: i32 = 7;

/// Recognisable bytes: `n` of them, varying with `seed`.
fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 8) as u8)
        .collect()
}

/// A file `name` holding `data`, opened read-write.
fn file_with(cx: &Ctx, name: &str, data: &[u8]) -> Result<File, String> {
    let f = File::open(&cx.path(name), O_RDWR | O_CREAT | O_TRUNC, 0o644).what("create")?;
    f.pwrite_all(data, 0).what("pwrite")?;
    Ok(f)
}

fn read_file(f: &File, n: usize) -> Result<Vec<u8>, String> {
    let mut buf = vec![0u8; n];
    let got = f.pread_full(&mut buf, 0).what("pread")?;
    buf.truncate(got);
    Ok(buf)
}

/// Run `touch` in a forked child; how the child ended (exit code or signal).
fn in_child(touch: impl FnOnce()) -> Result<sys::WaitStatus, String> {
    let pid = sys::fork().what("fork")?;
    if pid == 0 {
        touch();
        sys::exit(0);
    }
    Ok(sys::waitpid(pid).what("wait4")?.1)
}

fn expect_sigbus(status: Result<sys::WaitStatus, String>, what: &str) -> TestResult {
    let status = status?;
    ensure!(
        status.signal() == Some(SIGBUS),
        "{what}: the child was not killed by SIGBUS (status {:#x})",
        status.0
    );
    Ok(())
}

pub fn mmap_private_reads_file(cx: &Ctx) -> TestResult {
    let size = 3 * PAGE + 123;
    let data = pattern(size, 7);
    let f = file_with(cx, "f", &data)?;
    let m = sys::mmap(0, 4 * PAGE, PROT_READ, MAP_PRIVATE, f.fd(), 0).what("mmap")?;
    ensure!(m.addr() % PAGE == 0, "unaligned mapping {:#x}", m.addr());
    ensure!(
        m.read(0, size) == read_file(&f, size)?,
        "a private mapping differs from read(2)"
    );
    ensure!(
        m.read(size, 4 * PAGE - size).iter().all(|&b| b == 0),
        "the last page is not zero past the end of the file"
    );
    // From an offset.
    let m2 = sys::mmap(0, 2 * PAGE, PROT_READ, MAP_PRIVATE, f.fd(), PAGE as u64)
        .what("mmap at offset")?;
    ensure!(
        m2.read(0, 2 * PAGE) == data[PAGE..3 * PAGE],
        "a mapping at offset 4096 shows the wrong bytes"
    );
    Ok(())
}

pub fn mmap_private_write_stays_private(cx: &Ctx) -> TestResult {
    let data = pattern(2 * PAGE, 3);
    let f = file_with(cx, "f", &data)?;
    let m = sys::mmap(0, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE, f.fd(), 0).what("mmap")?;
    m.write(10, b"private");
    m.write(PAGE + 5, b"also");
    ensure!(
        m.read(10, 7) == b"private",
        "the mapping lost its own write"
    );
    ensure!(
        read_file(&f, 2 * PAGE)? == data,
        "a private mapping's write reached the file"
    );
    drop(m);
    ensure!(
        read_file(&f, 2 * PAGE)? == data,
        "munmap of a private mapping wrote to the file"
    );
    // As on Linux: a page the private mapping has not stored to shows the file's changes; one
    // it has stored to is its own.
    let m = sys::mmap(0, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE, f.fd(), 0).what("mmap")?;
    ensure!(
        m.get(0) == data[0] && m.get(PAGE) == data[PAGE],
        "first touch"
    );
    m.set(PAGE, b'!');
    f.pwrite_all(b"new", 0).what("pwrite")?;
    f.pwrite_all(b"new", PAGE as u64 + 1).what("pwrite")?;
    ensure!(
        m.read(0, 3) == b"new",
        "a private mapping does not see write(2) to a page it has not stored to"
    );
    ensure!(
        m.read(PAGE, 4) == [b'!', data[PAGE + 1], data[PAGE + 2], data[PAGE + 3]],
        "write(2) changed a private mapping's own copy of a page"
    );
    Ok(())
}

pub fn mmap_shared_write_reaches_file(cx: &Ctx) -> TestResult {
    let data = pattern(2 * PAGE + 50, 9);
    let f = file_with(cx, "f", &data)?;
    let m = sys::mmap(0, 3 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, f.fd(), 0).what("mmap")?;
    m.write(100, b"shared!");
    m.write(2 * PAGE + 10, b"tail");
    let mut want = data.clone();
    want[100..107].copy_from_slice(b"shared!");
    want[2 * PAGE + 10..2 * PAGE + 14].copy_from_slice(b"tail");
    ensure!(
        read_file(&f, 3 * PAGE)? == want,
        "read(2) does not see a store through a shared mapping (before msync)"
    );
    sys::msync(m.addr(), 3 * PAGE, MS_SYNC).what("msync")?;
    ensure!(
        read_file(&f, 3 * PAGE)? == want,
        "read(2) does not see a store through a shared mapping (after msync)"
    );
    ensure!(
        f.stat().what("fstat")?.st_size == data.len() as i64,
        "stores through a mapping changed the file size"
    );
    m.write(300, b"late");
    want[300..304].copy_from_slice(b"late");
    drop(m);
    drop(f);
    let f = File::open_read(&cx.path("f")).what("reopen")?;
    ensure!(
        read_file(&f, 3 * PAGE)? == want,
        "stores through a shared mapping did not survive munmap and reopen"
    );
    Ok(())
}

pub fn mmap_shared_sees_write(cx: &Ctx) -> TestResult {
    let data = pattern(3 * PAGE, 1);
    let f = file_with(cx, "f", &data)?;
    let m = sys::mmap(0, 3 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, f.fd(), 0).what("mmap")?;
    ensure!(m.get(5) == data[5], "first read through the mapping");
    // Page 0 is resident, page 2 is not yet touched.
    f.pwrite_all(b"written", 3).what("pwrite")?;
    f.pwrite_all(b"later", 2 * PAGE as u64 + 1).what("pwrite")?;
    ensure!(
        m.read(3, 7) == b"written",
        "write(2) is not visible through a shared mapping (resident page)"
    );
    ensure!(
        m.read(2 * PAGE + 1, 5) == b"later",
        "write(2) is not visible through a shared mapping (new page)"
    );
    // read(2) into the mapping itself.
    let n = m.read_into(f.fd(), 0).what("pread into the mapping")?;
    ensure!(n == 3 * PAGE, "pread into the mapping read {n}");
    ensure!(m.read(3, 7) == b"written", "pread into the mapping");
    Ok(())
}

pub fn mmap_sigbus_past_eof(cx: &Ctx) -> TestResult {
    let f = file_with(cx, "f", &pattern(100, 4))?;
    for flags in [MAP_PRIVATE, MAP_SHARED] {
        let m = sys::mmap(0, 3 * PAGE, PROT_READ | PROT_WRITE, flags, f.fd(), 0)
            .what("mmap larger than the file")?;
        ensure!(m.get(99) == pattern(100, 4)[99], "last byte of the file");
        ensure!(
            m.read(100, PAGE - 100).iter().all(|&b| b == 0),
            "bytes past the end within the last page are not zero"
        );
        expect_sigbus(
            in_child(|| {
                core::hint::black_box(m.get(PAGE));
            }),
            "read of a page past the end",
        )?;
        expect_sigbus(
            in_child(|| m.set(2 * PAGE + 7, 1)),
            "write of a page past the end",
        )?;
    }
    ensure!(
        f.stat().what("fstat")?.st_size == 100,
        "the file size changed"
    );
    Ok(())
}

pub fn mmap_truncate_then_sigbus(cx: &Ctx) -> TestResult {
    let data = pattern(3 * PAGE, 5);
    let f = file_with(cx, "f", &data)?;
    let shared = sys::mmap(0, 3 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, f.fd(), 0)
        .what("mmap shared")?;
    let private = sys::mmap(0, 3 * PAGE, PROT_READ, MAP_PRIVATE, f.fd(), 0).what("mmap private")?;
    ensure!(shared.get(2 * PAGE) == data[2 * PAGE], "touch page 2");
    ensure!(private.get(2 * PAGE) == data[2 * PAGE], "touch page 2");
    f.set_len(PAGE as u64 + 10).what("ftruncate")?;
    expect_sigbus(
        in_child(|| {
            core::hint::black_box(shared.get(2 * PAGE));
        }),
        "shared mapping, page cut off by ftruncate",
    )?;
    expect_sigbus(
        in_child(|| {
            core::hint::black_box(private.get(2 * PAGE));
        }),
        "private mapping, page cut off by ftruncate",
    )?;
    ensure!(
        shared.read(0, PAGE + 10) == data[..PAGE + 10],
        "the pages left changed"
    );
    ensure!(
        shared.read(PAGE + 10, PAGE - 10).iter().all(|&b| b == 0),
        "the last page is not zero past the new end"
    );
    // Growing the file again makes the page reachable, zero-filled.
    f.set_len(3 * PAGE as u64).what("ftruncate up")?;
    ensure!(
        shared.get(2 * PAGE + 1) == 0,
        "a page past the old end is not zero after the file grew"
    );
    Ok(())
}

pub fn mmap_survives_close(cx: &Ctx) -> TestResult {
    let data = pattern(PAGE, 8);
    let f = file_with(cx, "f", &data)?;
    let m = sys::mmap(0, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, f.fd(), 0).what("mmap")?;
    f.close().what("close")?;
    ensure!(m.read(0, PAGE) == data, "mapping after close");
    m.write(0, b"after close");
    drop(m);
    let f = File::open_read(&cx.path("f")).what("reopen")?;
    ensure!(
        read_file(&f, 11)? == b"after close",
        "a store after close did not reach the file"
    );
    Ok(())
}

pub fn mmap_errors(cx: &Ctx) -> TestResult {
    let f = file_with(cx, "f", &pattern(PAGE, 2))?;
    drop(f);
    let ro = File::open_read(&cx.path("f")).what("open read-only")?;
    expect_errno(
        sys::mmap(0, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, ro.fd(), 0).map(|m| m.addr()),
        Errno::EACCES,
        "writable shared mapping of a read-only descriptor",
    )?;
    // Private and read-only shared mappings are fine; mprotect may not add PROT_WRITE to
    // the shared one.
    let p = sys::mmap(0, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE, ro.fd(), 0)
        .what("writable private mapping of a read-only descriptor")?;
    drop(p);
    let s = sys::mmap(0, PAGE, PROT_READ, MAP_SHARED, ro.fd(), 0)
        .what("read-only shared mapping of a read-only descriptor")?;
    drop(s);
    let wo = File::open(&cx.path("f"), O_WRONLY, 0).what("open write-only")?;
    expect_errno(
        sys::mmap(0, PAGE, PROT_READ, MAP_PRIVATE, wo.fd(), 0).map(|m| m.addr()),
        Errno::EACCES,
        "mapping of a write-only descriptor",
    )?;
    expect_errno(
        sys::mmap(0, PAGE, PROT_READ, MAP_PRIVATE, ro.fd(), 100).map(|m| m.addr()),
        Errno::EINVAL,
        "mapping at an unaligned offset",
    )?;
    expect_errno(
        sys::mmap(0, PAGE, PROT_READ, MAP_PRIVATE, 999, 0).map(|m| m.addr()),
        Errno::EBADF,
        "mapping of a closed descriptor",
    )?;
    let dir = File::open(&cx.dir, O_RDONLY | O_DIRECTORY, 0).what("open dir")?;
    expect_errno(
        sys::mmap(0, PAGE, PROT_READ, MAP_PRIVATE, dir.fd(), 0).map(|m| m.addr()),
        Errno::ENODEV,
        "mapping of a directory",
    )?;
    let tty = File::open("/dev/console", O_RDWR, 0).what("open /dev/console")?;
    expect_errno(
        sys::mmap(0, PAGE, PROT_READ, MAP_SHARED, tty.fd(), 0).map(|m| m.addr()),
        Errno::ENODEV,
        "mapping of a terminal",
    )?;
    let (r, w) = sys::pipe2(O_CLOEXEC).what("pipe2")?;
    let pipe_map = sys::mmap(0, PAGE, PROT_READ, MAP_SHARED, r, 0).map(|m| m.addr());
    let _ = (sys::close(r), sys::close(w));
    expect_errno(pipe_map, Errno::ENODEV, "mapping of a pipe")?;
    // msync: unaligned address, bad flags, an unmapped range.
    let m = sys::mmap(0, 2 * PAGE, PROT_READ, MAP_SHARED, ro.fd(), 0).what("mmap")?;
    expect_errno(
        sys::msync(m.addr() + 1, PAGE, MS_SYNC),
        Errno::EINVAL,
        "msync unaligned",
    )?;
    expect_errno(
        sys::msync(m.addr(), PAGE, MS_SYNC | MS_ASYNC),
        Errno::EINVAL,
        "msync MS_SYNC|MS_ASYNC",
    )?;
    expect_errno(
        sys::msync(m.addr(), PAGE, 0x100),
        Errno::EINVAL,
        "msync bad flag",
    )?;
    sys::msync(m.addr(), 2 * PAGE, MS_ASYNC).what("msync MS_ASYNC")?;
    sys::msync(m.addr(), 2 * PAGE, MS_INVALIDATE).what("msync MS_INVALIDATE")?;
    let addr = m.addr();
    drop(m);
    expect_errno(
        sys::msync(addr, PAGE, MS_SYNC),
        Errno::ENOMEM,
        "msync of unmapped memory",
    )?;
    expect_errno(
        sys::madvise(addr + 1, PAGE, 0),
        Errno::EINVAL,
        "madvise unaligned",
    )?;
    expect_errno(
        sys::madvise(addr, PAGE, 9999),
        Errno::EINVAL,
        "madvise unknown advice",
    )?;
    Ok(())
}

pub fn mmap_fork_shares(cx: &Ctx) -> TestResult {
    let data = pattern(2 * PAGE, 6);
    let f = file_with(cx, "f", &data)?;
    let shared = sys::mmap(0, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, f.fd(), 0)
        .what("mmap shared")?;
    let private = sys::mmap(0, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE, f.fd(), 0)
        .what("mmap private")?;
    ensure!(shared.get(0) == data[0], "touch before fork");
    // A store makes the private page the parent's own (until then it would show the shared
    // mapping's stores, as on Linux).
    private.set(0, data[0]);
    let st = in_child(|| {
        shared.write(1, b"child");
        shared.write(PAGE + 1, b"child2");
        private.write(1, b"mine");
    })?;
    ensure!(st.exited() && st.exit_code() == 0, "child failed");
    ensure!(
        shared.read(1, 5) == b"child" && shared.read(PAGE + 1, 6) == b"child2",
        "the child's store through a shared mapping is not seen by the parent"
    );
    ensure!(
        private.read(1, 4) == data[1..5],
        "the child's store through a private mapping reached the parent"
    );
    let now = read_file(&f, 2 * PAGE)?;
    ensure!(
        &now[1..6] == b"child" && &now[PAGE + 1..PAGE + 7] == b"child2",
        "the child's store through a shared mapping is not in the file"
    );
    Ok(())
}

/// A write-back (fsync, msync, also another process's msync) cleans a shared page and maps
/// it read-only in every mapping: a later store must fault and dirty it again, or the last
/// munmap would not write it and the store would be lost.
pub fn mmap_store_after_writeback(cx: &Ctx) -> TestResult {
    let data = pattern(2 * PAGE, 13);
    let f = file_with(cx, "f", &data)?;
    let m = sys::mmap(0, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, f.fd(), 0).what("mmap")?;
    let mut want = data.clone();
    m.write(10, b"first");
    want[10..15].copy_from_slice(b"first");
    sys::fsync(f.fd()).what("fsync")?;
    m.write(10, b"again");
    want[10..15].copy_from_slice(b"again");
    // Another address space's msync cleans the page the parent has mapped writable.
    m.write(PAGE + 20, b"before fork");
    want[PAGE + 20..PAGE + 31].copy_from_slice(b"before fork");
    let st = in_child(|| {
        if sys::msync(m.addr(), 2 * PAGE, MS_SYNC).is_err() {
            sys::exit(2);
        }
    })?;
    ensure!(
        st.exited() && st.exit_code() == 0,
        "the child's msync failed"
    );
    m.write(PAGE + 20, b"after child");
    want[PAGE + 20..PAGE + 31].copy_from_slice(b"after child");
    drop(m);
    drop(f);
    let f = File::open_read(&cx.path("f")).what("reopen")?;
    ensure!(
        read_file(&f, 2 * PAGE)? == want,
        "a store after fsync or after another process's msync was lost at munmap"
    );
    Ok(())
}

/// A `pread` into a private page, `fork`, then a `pread` into the same page by the parent:
/// the child keeps the first read's bytes, the parent sees the second's. (fork shares the
/// page write-protected until the first store, and the translation the kernel remembers from
/// the first reads must not bypass that.)
pub fn pread_buffer_after_fork(cx: &Ctx) -> TestResult {
    let data = pattern(2 * PAGE, 7);
    let f = file_with(cx, "f", &data)?;
    let buf = sys::mmap(
        0,
        PAGE,
        PROT_READ | PROT_WRITE,
        MAP_PRIVATE | MAP_ANONYMOUS,
        -1,
        0,
    )
    .what("mmap")?;
    let (r, w) = sys::pipe2(0).what("pipe")?;
    // The reads last before the fork, so the buffer's page is the one the kernel translated
    // last.
    for _ in 0..2 {
        ensure!(
            buf.read_into(f.fd(), 0).what("pread")? == PAGE,
            "short pread"
        );
    }
    let pid = sys::fork().what("fork")?;
    if pid == 0 {
        // Wait for the parent's second read, then look at our copy.
        let mut b = [0u8; 1];
        let _ = sys::read(r, &mut b);
        sys::exit(i32::from(buf.read(0, PAGE) != data[..PAGE]));
    }
    let second = buf.read_into(f.fd(), PAGE as u64);
    let _ = sys::write(w, b"x");
    let st = sys::waitpid(pid).what("wait4")?.1;
    let _ = sys::close(r);
    let _ = sys::close(w);
    ensure!(
        second.what("pread after fork")? == PAGE,
        "short pread after fork"
    );
    ensure!(
        buf.read(0, PAGE) == data[PAGE..],
        "the parent's pread after fork is not in its buffer"
    );
    ensure!(
        st.exited() && st.exit_code() == 0,
        "the parent's pread after fork reached the child's copy of the buffer (status {:#x})",
        st.0
    );
    Ok(())
}

pub fn madvise_and_fixed(cx: &Ctx) -> TestResult {
    // MADV_DONTNEED: private anonymous memory reads back as zeros.
    let anon = sys::mmap(
        0,
        2 * PAGE,
        PROT_READ | PROT_WRITE,
        MAP_PRIVATE | MAP_ANONYMOUS,
        -1,
        0,
    )
    .what("mmap anon")?;
    anon.write(0, b"gone");
    sys::madvise(anon.addr(), 2 * PAGE, MADV_DONTNEED).what("madvise")?;
    ensure!(
        anon.read(0, 4) == [0; 4],
        "MADV_DONTNEED did not zero private anonymous memory"
    );
    // A private file page comes back from the file.
    let data = pattern(2 * PAGE, 11);
    let f = file_with(cx, "f", &data)?;
    let p = sys::mmap(0, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE, f.fd(), 0)
        .what("mmap private")?;
    p.write(0, b"xx");
    sys::madvise(p.addr(), PAGE, MADV_DONTNEED).what("madvise")?;
    ensure!(
        p.read(0, 2) == data[..2],
        "MADV_DONTNEED on a private file page"
    );
    sys::madvise(p.addr(), 2 * PAGE, 1).what("madvise MADV_RANDOM")?;
    // MAP_FIXED over the second page of the anonymous mapping.
    let fixed = sys::mmap(
        anon.addr() + PAGE,
        PAGE,
        PROT_READ,
        MAP_SHARED | MAP_FIXED,
        f.fd(),
        PAGE as u64,
    )
    .what("mmap MAP_FIXED")?;
    ensure!(
        fixed.addr() == anon.addr() + PAGE,
        "MAP_FIXED moved the mapping"
    );
    ensure!(
        anon.read(PAGE, PAGE) == data[PAGE..],
        "MAP_FIXED file mapping shows the wrong bytes"
    );
    fixed.forget(); // unmapped with `anon`
    Ok(())
}

/// Faults away from a sequential scan read the aligned group of 32 pages around them and map
/// the neighbours that lie inside the mapping (before and after the faulting page): every page
/// must still show the file's bytes at its own offset, a mapping that starts or ends inside a
/// group must get only its own pages, private stores must stay private next to neighbours
/// mapped by a read-around, and write(2) to a page read around but never touched must show.
pub fn mmap_read_around_random_order(cx: &Ctx) -> TestResult {
    let pages = 100;
    let size = pages * PAGE + 77;
    let data = pattern(size, 11);
    let f = file_with(cx, "f", &data)?;
    // Shared, from file page 5 on, 60 pages: groups 0-31 and 32-63 straddle its ends.
    let (first, len) = (5, 60);
    let m = sys::mmap(
        0,
        len * PAGE,
        PROT_READ,
        MAP_SHARED,
        f.fd(),
        (first * PAGE) as u64,
    )
    .what("mmap at page 5")?;
    for k in 0..len {
        let p = (k * 37 + 11) % len; // every page once, in a scattered order
        let at = (first + p) * PAGE;
        ensure!(
            m.read(p * PAGE, PAGE) == data[at..at + PAGE],
            "mapped page {p} (file page {}) shows the wrong bytes",
            first + p
        );
    }
    // A small mapping inside a group whose pages are resident already.
    let small = sys::mmap(
        0,
        3 * PAGE,
        PROT_READ,
        MAP_SHARED,
        f.fd(),
        (33 * PAGE) as u64,
    )
    .what("mmap of 3 pages at page 33")?;
    for p in [1, 0, 2] {
        let at = (33 + p) * PAGE;
        ensure!(
            small.read(p * PAGE, PAGE) == data[at..at + PAGE],
            "3-page mapping: page {p} wrong"
        );
    }
    // write(2) to a page of the last group that nothing touched yet in a fresh mapping:
    // touch page 70 (reads 64..95 around it), then write page 90 and read it mapped.
    let whole =
        sys::mmap(0, (pages + 1) * PAGE, PROT_READ, MAP_SHARED, f.fd(), 0).what("mmap whole")?;
    ensure!(whole.get(70 * PAGE + 9) == data[70 * PAGE + 9], "page 70");
    f.pwrite_all(b"after read-around", (90 * PAGE + 100) as u64)
        .what("pwrite page 90")?;
    ensure!(
        whole.read(90 * PAGE + 100, 17) == b"after read-around",
        "write(2) to a page read around is not visible through the mapping"
    );
    // The tail: the last page is partial, zero past the end.
    ensure!(
        whole.read(pages * PAGE, 77) == data[pages * PAGE..],
        "the last partial page"
    );
    ensure!(
        whole
            .read(pages * PAGE + 77, PAGE - 77)
            .iter()
            .all(|&b| b == 0),
        "bytes past the end of the file are not zero"
    );
    // Private: store into scattered pages, neighbours keep showing the file.
    let data = read_file(&f, size)?;
    let pm =
        sys::mmap(0, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, f.fd(), 0).what("private mmap")?;
    for p in [47, 13, 81, 14, 46] {
        pm.write(p * PAGE + 1, b"mine");
        for q in [p - 1, p + 1] {
            let at = q * PAGE + 1;
            if ![47, 13, 81, 14, 46][..].contains(&q) {
                ensure!(
                    pm.read(at, 4) == data[at..at + 4],
                    "private page {q}, next to a stored page, lost the file's bytes"
                );
            }
        }
        ensure!(
            pm.read(p * PAGE + 1, 4) == b"mine",
            "private store to page {p}"
        );
    }
    ensure!(
        read_file(&f, size)? == data,
        "stores to a private mapping reached the file"
    );
    Ok(())
}

fn fallocate(f: &File, mode: u32, offset: u64, len: u64) -> SysResult<()> {
    // SAFETY: no pointers.
    let r = unsafe {
        user_tests::raw::syscall4(
            user_tests::abi::syscall::SYS_FALLOCATE,
            f.fd() as usize,
            mode as usize,
            offset as usize,
            len as usize,
        )
    };
    Errno::from_ret(r).map(|_| ())
}

/// fallocate's FALLOC_FL_PUNCH_HOLE | KEEP_SIZE and FALLOC_FL_ZERO_RANGE (stress-ng's fpunch
/// stressor reads the range back after ZERO_RANGE, whatever fallocate answered): the range
/// reads zeros through read(2) and through a shared mapping made before, the size stays
/// (ZERO_RANGE past the end grows it unless KEEP_SIZE); on dbfs a punched hole frees its whole
/// chunks (st_blocks drops); FAT has no holes (PUNCH_HOLE is EOPNOTSUPP, as Linux's vfat
/// answers), and its ZERO_RANGE writes zeros.
pub fn fallocate_punch_and_zero_range(cx: &Ctx) -> TestResult {
    const PUNCH: u32 = 0x02 | 0x01; // PUNCH_HOLE | KEEP_SIZE
    const ZERO: u32 = 0x10;
    const KEEP: u32 = 0x01;
    let n = 64 * PAGE + 123;
    let data = pattern(n, 5);
    let f = file_with(cx, "p", &data)?;
    sys::fsync(f.fd()).what("fsync")?;
    let blocks_before = f.stat().what("fstat")?.st_blocks;
    let m = sys::mmap(0, 65 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, f.fd(), 0).what("mmap")?;
    let _ = m.read(0, n); // every page resident
    let mut want = data.clone();
    let check = |want: &[u8], what: &str| -> TestResult {
        let got = read_file(&f, want.len() + PAGE)?;
        if got != want {
            let at = got.iter().zip(want).position(|(a, b)| a != b);
            return Err(format!(
                "{what}: read(2) differs (length {} want {}, first difference at {at:?})",
                got.len(),
                want.len()
            ));
        }
        ensure!(
            m.read(0, want.len()) == want,
            "{what}: the shared mapping differs from the file"
        );
        Ok(())
    };
    // PUNCH_HOLE: from inside page 1 to inside page 40.
    let (a, b) = (PAGE + 77, 40 * PAGE + 9);
    match fallocate(&f, PUNCH, a as u64, (b - a) as u64) {
        Err(Errno::EOPNOTSUPP) if cx.fat => {}
        Err(e) => return Err(format!("fallocate PUNCH_HOLE|KEEP_SIZE: {e:?}")),
        Ok(()) if cx.fat => return Err("PUNCH_HOLE on FAT succeeded (Linux: EOPNOTSUPP)".into()),
        Ok(()) => {
            want[a..b].fill(0);
            check(&want, "after PUNCH_HOLE")?;
            ensure!(
                f.stat().what("fstat")?.st_size == n as i64,
                "PUNCH_HOLE changed the size"
            );
            sys::fsync(f.fd()).what("fsync")?;
            let blocks = f.stat().what("fstat")?.st_blocks;
            ensure!(
                blocks < blocks_before,
                "PUNCH_HOLE of 39 pages freed nothing: st_blocks {blocks_before} -> {blocks}"
            );
        }
    }
    // A store through the mapping, then ZERO_RANGE over part of it and past it.
    m.write(50 * PAGE, &[0xEE; 300]);
    want[50 * PAGE..50 * PAGE + 300].fill(0xEE);
    fallocate(&f, ZERO, (50 * PAGE + 100) as u64, 3000).what("fallocate ZERO_RANGE")?;
    want[50 * PAGE + 100..50 * PAGE + 3100].fill(0);
    check(&want, "after ZERO_RANGE")?;
    // ZERO_RANGE across the end: KEEP_SIZE keeps the size, without it the file grows.
    fallocate(&f, ZERO | KEEP, (n - 23) as u64, 5000).what("ZERO_RANGE|KEEP_SIZE")?;
    want[n - 23..].fill(0);
    check(&want, "after ZERO_RANGE|KEEP_SIZE at the end")?;
    fallocate(&f, ZERO, (n - 3) as u64, 1000).what("ZERO_RANGE past the end")?;
    want.resize(n - 3 + 1000, 0);
    ensure!(
        f.stat().what("fstat")?.st_size == want.len() as i64,
        "ZERO_RANGE past the end did not grow the file to {}",
        want.len()
    );
    check(&want, "after ZERO_RANGE past the end")?;
    drop(m);
    sys::fsync(f.fd()).what("fsync")?;
    drop(f);
    let f = File::open_read(&cx.path("p")).what("reopen")?;
    let got = read_file(&f, want.len() + PAGE)?;
    ensure!(
        got == want,
        "the zeroed ranges did not survive munmap and reopen"
    );
    expect_errno(
        fallocate(&f, ZERO, 0, 1),
        Errno::EBADF,
        "ZERO_RANGE on a read-only descriptor",
    )
}

fn mremap(old: usize, old_len: usize, new_len: usize, flags: u32, new: usize) -> SysResult<usize> {
    // SAFETY: mremap changes only this process's mappings; the test reads and writes moved
    // ranges through raw addresses it checks.
    let r = unsafe {
        user_tests::raw::syscall5(
            user_tests::abi::syscall::SYS_MREMAP,
            old,
            old_len,
            new_len,
            flags as usize,
            new,
        )
    };
    Errno::from_ret(r).map(|v| v as usize)
}

/// `n` bytes at `addr` (mapped, readable).
fn peek(addr: usize, n: usize) -> Vec<u8> {
    // SAFETY: the callers pass ranges they mapped readable.
    unsafe { core::slice::from_raw_parts(addr as *const u8, n) }.to_vec()
}

fn poke(addr: usize, data: &[u8]) {
    // SAFETY: the callers pass ranges they mapped writable.
    unsafe { core::ptr::copy_nonoverlapping(data.as_ptr(), addr as *mut u8, data.len()) };
}

/// mremap with Linux's semantics (stress-ng's mremap and pagemove stressors, and glibc's
/// realloc of large blocks, use it): growing in place when the pages after are free, moving
/// with MREMAP_MAYMOVE (the bytes go along; new pages read zeros), ENOMEM when it may not
/// move, shrinking, MREMAP_FIXED to a chosen address (the old range is gone: EFAULT),
/// MREMAP_DONTUNMAP (the old range stays, empty), a shared file mapping that still reaches
/// the file after the move, a shared anonymous one that keeps its pages, and the errors.
pub fn mremap_semantics(cx: &Ctx) -> TestResult {
    const MAYMOVE: u32 = 1;
    const FIXED: u32 = 2;
    const DONTUNMAP: u32 = 4;
    const RW: u32 = PROT_READ | PROT_WRITE;
    let anon = MAP_PRIVATE | MAP_ANONYMOUS;
    let data = pattern(2 * PAGE, 3);
    // Grow in place: four pages mapped, the last three unmapped, the first grown back.
    let m = sys::mmap(0, 4 * PAGE, RW, anon, -1, 0).what("mmap")?;
    let a = m.addr();
    m.forget();
    sys::munmap(a + PAGE, 3 * PAGE).what("munmap")?;
    poke(a, &data[..PAGE]);
    let r = mremap(a, PAGE, 3 * PAGE, 0, 0).what("mremap grow in place")?;
    ensure!(r == a, "grown in place to {r:#x}, not at {a:#x}");
    ensure!(
        peek(a, PAGE) == data[..PAGE],
        "growing in place lost the bytes"
    );
    ensure!(
        peek(a + PAGE, 2 * PAGE).iter().all(|&b| b == 0),
        "the grown pages are not zero"
    );
    // Blocked: a page of another area right after, no MAYMOVE.
    let blocker = sys::mmap(a + 3 * PAGE, PAGE, RW, anon | MAP_FIXED, -1, 0).what("mmap after")?;
    expect_errno(
        mremap(a, 3 * PAGE, 5 * PAGE, 0, 0),
        Errno::ENOMEM,
        "growing into another mapping without MREMAP_MAYMOVE",
    )?;
    // Moved: the bytes go along, the old range is gone.
    poke(a + 2 * PAGE, &data[PAGE..]);
    let b = mremap(a, 3 * PAGE, 6 * PAGE, MAYMOVE, 0).what("mremap MAYMOVE")?;
    ensure!(b != a, "MAYMOVE past a blocker did not move");
    ensure!(
        peek(b, PAGE) == data[..PAGE],
        "the first page did not move along"
    );
    ensure!(
        peek(b + 2 * PAGE, PAGE) == data[PAGE..],
        "the third page did not move along"
    );
    ensure!(
        peek(b + 3 * PAGE, 3 * PAGE).iter().all(|&x| x == 0),
        "new pages are not zero"
    );
    expect_errno(
        mremap(a, PAGE, PAGE, 0, 0),
        Errno::EFAULT,
        "the old range after a move",
    )?;
    // Shrink: same address, the tail gone.
    ensure!(
        mremap(b, 6 * PAGE, 2 * PAGE, 0, 0).what("mremap shrink")? == b,
        "shrinking moved the mapping"
    );
    expect_errno(
        mremap(b + 3 * PAGE, PAGE, PAGE, 0, 0),
        Errno::EFAULT,
        "a shrunk tail",
    )?;
    // FIXED: onto the blocker's page (replaced).
    let c = mremap(b, 2 * PAGE, PAGE, MAYMOVE | FIXED, blocker.addr()).what("MREMAP_FIXED")?;
    blocker.forget();
    ensure!(c == a + 3 * PAGE, "MREMAP_FIXED put it at {c:#x}");
    ensure!(peek(c, PAGE) == data[..PAGE], "MREMAP_FIXED lost the bytes");
    // DONTUNMAP: the old page stays, empty; the new one has the bytes.
    let d = mremap(c, PAGE, PAGE, MAYMOVE | DONTUNMAP, 0).what("MREMAP_DONTUNMAP")?;
    ensure!(
        peek(d, PAGE) == data[..PAGE],
        "DONTUNMAP: the bytes did not move"
    );
    ensure!(
        peek(c, PAGE).iter().all(|&x| x == 0),
        "DONTUNMAP: the old page is not empty"
    );
    sys::munmap(c, PAGE).what("munmap")?;
    sys::munmap(d, PAGE).what("munmap")?;
    // Errors.
    expect_errno(
        mremap(a + 1, PAGE, PAGE, 0, 0),
        Errno::EINVAL,
        "an unaligned address",
    )?;
    expect_errno(
        mremap(d, PAGE, PAGE, 8, 0),
        Errno::EINVAL,
        "an unknown flag",
    )?;
    expect_errno(
        mremap(d, PAGE, PAGE, FIXED, a),
        Errno::EINVAL,
        "FIXED without MAYMOVE",
    )?;
    expect_errno(
        mremap(d, PAGE, 0, MAYMOVE, 0),
        Errno::EINVAL,
        "a new length of 0",
    )?;
    // A shared file mapping moves and still reaches the file.
    let f = file_with(cx, "mr", &data)?;
    let fm = sys::mmap(0, 2 * PAGE, RW, MAP_SHARED, f.fd(), 0).what("mmap file")?;
    let (fa, flen) = (fm.addr(), fm.len());
    fm.forget();
    let g = mremap(fa, flen, 4 * PAGE, MAYMOVE, 0).what("mremap a file mapping")?;
    ensure!(
        peek(g, 2 * PAGE) == data,
        "the moved file mapping reads other bytes"
    );
    poke(g + PAGE + 7, b"moved");
    sys::msync(g, 2 * PAGE, MS_SYNC).what("msync")?;
    let mut want = data.clone();
    want[PAGE + 7..PAGE + 12].copy_from_slice(b"moved");
    ensure!(
        read_file(&f, 2 * PAGE)? == want,
        "a store through the moved mapping missed the file"
    );
    sys::munmap(g, 4 * PAGE).what("munmap")?;
    // A shared anonymous mapping keeps its pages: a forked child sees the parent's later store.
    let s = sys::mmap(0, PAGE, RW, MAP_SHARED | MAP_ANONYMOUS, -1, 0).what("mmap shared")?;
    let (sa, slen) = (s.addr(), s.len());
    s.forget();
    poke(sa, b"before");
    let t = mremap(sa, slen, 2 * PAGE, MAYMOVE, 0).what("mremap shared anon")?;
    ensure!(
        peek(t, 6) == b"before",
        "the shared pages did not move along"
    );
    let pid = sys::fork().what("fork")?;
    if pid == 0 {
        poke(t, b"child!");
        sys::exit(0);
    }
    sys::waitpid(pid).what("wait4")?;
    ensure!(
        peek(t, 6) == b"child!",
        "the moved shared mapping is not shared with a child"
    );
    sys::munmap(t, 2 * PAGE).what("munmap")?;
    Ok(())
}
