//! Reads, writes and offsets: contents across blocks and buffers, lseek, zero-length writes,
//! and read-ahead with interleaved readers.

use user_tests::prelude::*;

use crate::{ensure, expect_errno, get_file, put_file, same_bytes, Check, Ctx, TestResult};

use super::common::pattern;

pub fn write_read_lseek(cx: &Ctx) -> TestResult {
    let p = cx.path("f");
    let f = File::open(&p, O_RDWR | O_CREAT | O_TRUNC, 0o644).what("create")?;
    ensure!(
        f.write(b"hello, world").what("write")? == 12,
        "write did not write 12 bytes"
    );
    ensure!(
        f.seek(0, SEEK_CUR).what("lseek")? == 12,
        "offset after write is not 12"
    );
    let mut buf = [0u8; 64];
    ensure!(
        f.read(&mut buf).what("read at EOF")? == 0,
        "read at EOF did not return 0"
    );
    ensure!(
        f.seek(0, SEEK_SET).what("lseek 0")? == 0,
        "lseek(0, SEEK_SET) did not return 0"
    );
    ensure!(
        f.read(&mut buf[..5]).what("read 5")? == 5,
        "read of 5 bytes came back short"
    );
    same_bytes(&buf[..5], b"hello", "first 5 bytes")?;
    let n = f.read(&mut buf).what("read rest")?;
    same_bytes(&buf[..n], b", world", "rest of the file")?;
    ensure!(
        f.read(&mut buf).what("read at EOF")? == 0,
        "second read at EOF did not return 0"
    );
    f.seek(7, SEEK_SET).what("lseek 7")?;
    f.write_all(b"W").what("overwrite at 7")?;
    ensure!(
        f.stat().what("fstat")?.st_size == 12,
        "overwrite changed the size"
    );
    f.close().what("close")?;
    same_bytes(&get_file(&p)?, b"hello, World", "file after overwrite")
}

pub fn read_at_eof_returns_0(cx: &Ctx) -> TestResult {
    let p = cx.path("empty");
    put_file(&p, b"")?;
    let f = File::open_read(&p).what("open")?;
    let mut buf = [0u8; 16];
    ensure!(
        f.read(&mut buf).what("read")? == 0,
        "read of an empty file did not return 0"
    );
    ensure!(
        f.pread(&mut buf, 1000).what("pread")? == 0,
        "pread past EOF did not return 0"
    );
    put_file(&p, b"abc")?;
    let f = File::open_read(&p).what("open")?;
    ensure!(
        f.pread(&mut buf, 3).what("pread at EOF")? == 0,
        "pread at exactly EOF did not return 0"
    );
    ensure!(
        f.pread(&mut buf, 2).what("pread")? == 1,
        "pread of the last byte did not return 1"
    );
    Ok(())
}

pub fn pwrite_pread_offsets(cx: &Ctx) -> TestResult {
    let p = cx.path("f");
    let f = File::open(&p, O_RDWR | O_CREAT | O_TRUNC, 0o644).what("create")?;
    ensure!(
        f.pwrite(b"abc", 10).what("pwrite at 10")? == 3,
        "pwrite did not write 3 bytes"
    );
    ensure!(
        f.stat().what("fstat")?.st_size == 13,
        "size after pwrite at 10 is not 13"
    );
    ensure!(
        f.seek(0, SEEK_CUR).what("lseek")? == 0,
        "pwrite moved the file offset"
    );
    let mut buf = [0xffu8; 32];
    let n = f.pread(&mut buf, 0).what("pread 0")?;
    same_bytes(&buf[..n], b"\0\0\0\0\0\0\0\0\0\0abc", "hole + data")?;
    let n = f.pread(&mut buf[..10], 11).what("pread 11")?;
    same_bytes(&buf[..n], b"bc", "pread from 11")?;
    ensure!(
        f.seek(0, SEEK_CUR).what("lseek")? == 0,
        "pread moved the file offset"
    );
    f.write_all(b"XY").what("write at 0")?;
    f.close().what("close")?;
    same_bytes(
        &get_file(&p)?,
        b"XY\0\0\0\0\0\0\0\0abc",
        "file after write at 0",
    )
}

pub fn io_across_blocks(cx: &Ctx) -> TestResult {
    let p = cx.path("big");
    let data = pattern(300_000, 3);
    let f = File::open(&p, O_RDWR | O_CREAT | O_TRUNC, 0o644).what("create")?;
    for chunk in data.chunks(1000) {
        f.write_all(chunk).what("write 1000")?;
    }
    ensure!(
        f.stat().what("fstat")?.st_size == 300_000,
        "size is not 300000"
    );
    let mut buf = vec![0u8; 5000];
    for off in [
        0usize, 1, 511, 512, 4095, 4096, 65535, 65536, 131071, 299_999, 295_000,
    ] {
        let n = f.pread_full(&mut buf, off as u64).what("pread")?;
        let end = (off + 5000).min(data.len());
        same_bytes(
            &buf[..n],
            &data[off..end],
            &format!("pread of 5000 at {off}"),
        )?;
    }
    // Overwrite across a 4 KiB boundary and re-read around it.
    f.pwrite_all(b"0123456789", 4091)
        .what("pwrite across 4096")?;
    let mut want = data.clone();
    want[4091..4101].copy_from_slice(b"0123456789");
    f.close().what("close")?;
    same_bytes(
        &get_file(&p)?,
        &want,
        "file after overwrite across a block boundary",
    )
}

/// Large reads into buffers that do not start on a page (a malloc'ed buffer: fio's, dd's),
/// right after the file is written and again: every byte lands where it belongs.
pub fn large_reads_unaligned_buffers(cx: &Ctx) -> TestResult {
    let p = cx.path("unaligned");
    let len = 3 << 20;
    let data = pattern(len, 7);
    let f = File::open(&p, O_RDWR | O_CREAT | O_TRUNC, 0o644).what("create")?;
    for chunk in data.chunks(1 << 20) {
        f.write_all(chunk).what("write 1 MiB")?;
    }
    f.sync().what("fsync")?;
    let mut buf = sys::AnonMap::new((1 << 20) + 8192).what("mmap a buffer")?;
    for (shift, off, n) in [
        (16usize, 0u64, 1usize << 20),
        (512, 1 << 20, 1 << 20),
        (4000, 4096, (1 << 20) + 512),
        (16, (2 << 20) + 100, 700_000),
    ] {
        let dst = &mut buf.as_mut_slice()[shift..shift + n];
        let got = f.pread_full(dst, off).what("pread")?;
        let want = &data[off as usize..(off as usize + n).min(len)];
        same_bytes(
            &dst[..got],
            want,
            &format!("pread of {n} at {off} into a buffer {shift} bytes into a page"),
        )?;
    }
    f.close().what("close")
}

/// Large writes from buffers that do not start on a page (fio's and dd's malloc'ed buffers:
/// dbfs-os writes their whole chunks to the disk straight from the buffer's pages), and a
/// pwritev whose pieces split pages (copied first): the file holds every byte where it
/// belongs, read back at once and again after its caches are dropped.
pub fn large_writes_unaligned_buffers(cx: &Ctx) -> TestResult {
    let p = cx.path("unaligned-writes");
    let mut model = Vec::new();
    let put = |model: &mut Vec<u8>, off: usize, bytes: &[u8]| {
        if model.len() < off + bytes.len() {
            model.resize(off + bytes.len(), 0);
        }
        model[off..off + bytes.len()].copy_from_slice(bytes);
    };
    let f = File::open(&p, O_RDWR | O_CREAT | O_TRUNC, 0o644).what("create")?;
    let mut buf = sys::AnonMap::new((2 << 20) + 8192).what("mmap a buffer")?;
    for (k, (shift, off, n)) in [
        (16usize, 0usize, 1usize << 20),
        (512, 1 << 20, 1 << 20),
        (4000, 2 << 20, (1 << 20) + 512),
        (100, 5 * 65536 + 7, 700_000),
        (2048, 0, 2 << 20),
    ]
    .into_iter()
    .enumerate()
    {
        let src = &mut buf.as_mut_slice()[shift..shift + n];
        src.copy_from_slice(&pattern(n, 20 + k as u8));
        f.pwrite_all(src, off as u64).what("pwrite")?;
        put(&mut model, off, src);
    }
    // Pieces of odd sizes: a 100-byte one, 200000 bytes 777 bytes into a page, 5000 bytes,
    // then 128 KiB on a page.
    let data = pattern(100 + 200_000 + 5000 + 131_072, 40);
    let (a, rest) = data.split_at(100);
    let (b, rest) = rest.split_at(200_000);
    let (c, d) = rest.split_at(5000);
    let mut bb = sys::AnonMap::new(200_000 + 8192).what("mmap a buffer")?;
    bb.as_mut_slice()[777..777 + b.len()].copy_from_slice(b);
    let mut db = sys::AnonMap::new(d.len()).what("mmap a buffer")?;
    db.as_mut_slice().copy_from_slice(d);
    let off = (4 << 20) - 100;
    let pieces: [&[u8]; 4] = [
        a,
        &bb.as_mut_slice()[777..777 + b.len()],
        c,
        db.as_mut_slice(),
    ];
    let n = sys::pwritev(f.fd(), &pieces, off as u64).what("pwritev")?;
    ensure!(n == data.len(), "pwritev wrote {n} of {} bytes", data.len());
    put(&mut model, off, &data);
    same_bytes(&get_file(&p)?, &model, "the file at once")?;
    f.sync().what("fsync")?;
    f.close().what("close")?;
    match sys::drop_caches() {
        Ok(()) | Err(Errno::ENOSYS) | Err(Errno::EPERM) => {}
        Err(e) => return Err(format!("drop_caches: {e:?}")),
    }
    same_bytes(
        &get_file(&p)?,
        &model,
        "the file after its caches were dropped",
    )
}

/// The same through a disk node (dbfs-os's raw disk `/dev/vdc`, read only): a read into a
/// buffer that does not start on a page goes to the device as it is and must return what a
/// read into a page-aligned buffer does. Not run elsewhere (no such disk).
pub fn disk_reads_unaligned_buffers(_cx: &Ctx) -> TestResult {
    if sys::counters().is_err() {
        return Ok(()); // not dbfs-os: there is no scratch disk to read
    }
    let f = File::open("/dev/vdc", O_RDONLY, 0).what("open /dev/vdc")?;
    let n = (1 << 20) + 1536;
    let mut aligned = sys::AnonMap::new(n + 4096).what("mmap a buffer")?;
    let mut skewed = sys::AnonMap::new(n + 4096).what("mmap a buffer")?;
    for (shift, off) in [(16usize, 0u64), (4000, 512 * 8), (511, 3 << 20)] {
        let want = &mut aligned.as_mut_slice()[..n];
        let got_want = f.pread_full(want, off).what("pread, aligned")?;
        let dst = &mut skewed.as_mut_slice()[shift..shift + n];
        dst.fill(0xee);
        let got = f.pread_full(dst, off).what("pread, unaligned")?;
        ensure!(got == got_want, "{got} bytes against {got_want} at {off}");
        same_bytes(
            &dst[..got],
            &aligned.as_mut_slice()[..got],
            &format!("/dev/vdc at {off} into a buffer {shift} bytes into a page"),
        )?;
    }
    f.close().what("close")
}

pub fn lseek_whence(cx: &Ctx) -> TestResult {
    let p = cx.path("f");
    put_file(&p, &pattern(100, 0))?;
    let f = File::open(&p, O_RDWR, 0).what("open")?;
    ensure!(
        f.seek(0, SEEK_END).what("SEEK_END")? == 100,
        "SEEK_END 0 is not 100"
    );
    ensure!(
        f.seek(-10, SEEK_END).what("SEEK_END -10")? == 90,
        "SEEK_END -10 is not 90"
    );
    ensure!(
        f.seek(5, SEEK_CUR).what("SEEK_CUR")? == 95,
        "SEEK_CUR +5 is not 95"
    );
    ensure!(
        f.seek(200, SEEK_SET).what("SEEK_SET 200")? == 200,
        "SEEK_SET past EOF failed"
    );
    ensure!(
        f.stat().what("fstat")?.st_size == 100,
        "seeking past EOF changed the size"
    );
    f.write_all(b"z").what("write at 200")?;
    ensure!(
        f.stat().what("fstat")?.st_size == 201,
        "write at 200 did not make the size 201"
    );
    let mut buf = [0xffu8; 101];
    ensure!(
        f.pread_full(&mut buf, 100).what("pread")? == 101,
        "short pread"
    );
    ensure!(
        buf[..100].iter().all(|&b| b == 0),
        "the gap before the write is not zeros"
    );
    ensure!(buf[100] == b'z', "the byte written at 200 is wrong");
    expect_errno(f.seek(-1, SEEK_SET), Errno::EINVAL, "lseek(-1, SEEK_SET)")?;
    expect_errno(
        f.seek(-1000, SEEK_CUR),
        Errno::EINVAL,
        "lseek(-1000, SEEK_CUR) from 201",
    )?;
    ensure!(
        f.seek(0, SEEK_CUR).what("SEEK_CUR")? == 201,
        "a failed lseek moved the offset"
    );
    Ok(())
}

pub fn write_zero_bytes(cx: &Ctx) -> TestResult {
    let p = cx.path("f");
    put_file(&p, b"abc")?;
    let f = File::open(&p, O_WRONLY, 0).what("open")?;
    ensure!(
        f.write(b"").what("write 0 bytes")? == 0,
        "write of 0 bytes did not return 0"
    );
    ensure!(
        f.stat().what("fstat")?.st_size == 3,
        "a 0-byte write changed the size"
    );
    Ok(())
}

/// Four readers of their own cold files, 4 KiB at a time in turn (as fio's jobs read): each
/// file's data is right, and the kernel's read-ahead follows the four streams, so the disk
/// sees large requests. With one stream each read broke the others' sequence and every cluster
/// stayed at its first size: 32 requests per 2 MiB file, 128 in all (the bound below is half
/// that, with room for the tree's own pages).
pub fn interleaved_readers_read_ahead(cx: &Ctx) -> TestResult {
    const FILES: usize = 4;
    const LEN: usize = 2 << 20;
    let paths: Vec<String> = (0..FILES).map(|j| cx.path(&format!("r{j}"))).collect();
    for (j, p) in paths.iter().enumerate() {
        let f = File::open(p, O_RDWR | O_CREAT | O_TRUNC, 0o644).what("create")?;
        f.write_all(&pattern(LEN, j as u8)).what("write")?;
        f.sync().what("fsync")?;
    }
    sys::drop_caches().what("drop_caches")?;
    let files: Vec<File> = paths
        .iter()
        .map(|p| File::open(p, O_RDONLY, 0))
        .collect::<Result<_, _>>()
        .what("open")?;
    let before = sys::counters().what("counters")?;
    let mut buf = vec![0u8; 4096];
    for at in (0..LEN).step_by(4096) {
        for (j, f) in files.iter().enumerate() {
            ensure!(
                f.pread(&mut buf, at as u64).what("pread")? == 4096,
                "short read of r{j} at {at}"
            );
            let want = |i: usize| (((at + i) % 251) as u8).wrapping_add(j as u8);
            ensure!(
                (0..4096).step_by(509).all(|i| buf[i] == want(i)),
                "r{j} at {at}: wrong bytes"
            );
        }
    }
    let after = sys::counters().what("counters")?;
    let requests = after.dev_read_requests - before.dev_read_requests;
    ensure!(
        requests <= 64,
        "{requests} device reads for {FILES} interleaved sequential readers of {} KiB each",
        LEN >> 10
    );
    Ok(())
}

/// Cold reads in one process while another commits new files next to them and drops the
/// caches between commits. On dbfs a fault on the disk window sleeps while the disk reads,
/// so the writer's commits land between a fault's read and its mapping, and the cluster a
/// fault reads may hold free pages a commit writes meanwhile (such a read is stale and must be
/// thrown away): every byte read must still be the file's, and every file the writer made
/// must read back whole. On dbfs some of the reader's faults must have slept (the kernel's
/// `window_fault_sleeps` counter).
pub fn cold_reads_beside_commits(cx: &Ctx) -> TestResult {
    const FILES: usize = 3;
    const LEN: usize = 512 << 10;
    const ROUNDS: usize = 12;
    const WRITTEN: usize = 64 << 10;
    let paths: Vec<String> = (0..FILES).map(|j| cx.path(&format!("c{j}"))).collect();
    let models: Vec<Vec<u8>> = (0..FILES).map(|j| pattern(LEN, j as u8)).collect();
    for (p, model) in paths.iter().zip(&models) {
        let f = File::open(p, O_RDWR | O_CREAT | O_TRUNC, 0o644).what("create")?;
        f.write_all(model).what("write")?;
        f.sync().what("fsync")?;
    }
    let written = |r: usize| pattern(WRITTEN, (r as u8).wrapping_mul(7).wrapping_add(100));
    let drop_caches = || match sys::drop_caches() {
        Ok(()) | Err(Errno::ENOSYS) | Err(Errno::EPERM) => Ok(()),
        Err(e) => Err(format!("drop_caches: {e:?}")),
    };
    drop_caches()?;
    let before = sys::counters().what("counters")?;
    let pid = sys::fork().what("fork")?;
    if pid == 0 {
        let mut code = 0;
        for r in 0..ROUNDS {
            let made = File::open(
                &cx.path(&format!("w{r}")),
                O_RDWR | O_CREAT | O_TRUNC,
                0o644,
            )
            .and_then(|f| {
                f.write_all(&written(r))?;
                f.sync()
            });
            if made.is_err() {
                code = 1;
                break;
            }
            let _ = sys::drop_caches();
        }
        sys::exit(code);
    }
    let mut buf = vec![0u8; 4096];
    let mut passes = 0;
    loop {
        for (j, p) in paths.iter().enumerate() {
            let f = File::open(p, O_RDONLY, 0).what("open")?;
            for at in (0..LEN).step_by(4096) {
                ensure!(
                    f.pread_full(&mut buf, at as u64).what("pread")? == 4096,
                    "short read of c{j} at {at} (pass {passes})"
                );
                same_bytes(
                    &buf,
                    &models[j][at..at + 4096],
                    "a cold read beside commits",
                )?;
            }
        }
        passes += 1;
        let (got, status) = sys::wait4(pid, 1).what("wait4 WNOHANG")?;
        if got == pid {
            ensure!(
                status.exited() && status.exit_code() == 0,
                "writer: status {:#x}",
                status.0
            );
            break;
        }
    }
    let slept = sys::counters().what("counters")?.window_fault_sleeps - before.window_fault_sleeps;
    ensure!(
        cx.fat || slept > 0,
        "no window fault slept during {passes} passes of cold reads"
    );
    drop_caches()?;
    for r in 0..ROUNDS {
        same_bytes(
            &get_file(&cx.path(&format!("w{r}")))?,
            &written(r),
            "a file the writer made",
        )?;
    }
    Ok(())
}

/// `/proc/sys/vm/drop_caches`: writing 3 makes the next reads of a file go to the disk again
/// (a warm pass over it reads nothing from the disk; the pass after the write does), 4 is
/// accepted, anything else is EINVAL, and the file reads as 0.
pub fn proc_drop_caches(cx: &Ctx) -> TestResult {
    const LEN: usize = 64 << 10;
    let p = cx.path("d");
    let model = pattern(LEN, 9);
    let f = File::open(&p, O_RDWR | O_CREAT | O_TRUNC, 0o644).what("create")?;
    f.write_all(&model).what("write")?;
    f.sync().what("fsync")?;
    let mut buf = vec![0u8; 4096];
    let pass = |f: &File, buf: &mut [u8]| -> Result<u64, String> {
        let before = sys::counters().what("counters")?.dev_read_requests;
        for at in (0..LEN).step_by(4096) {
            ensure!(
                f.pread_full(buf, at as u64).what("pread")? == 4096,
                "short read at {at}"
            );
            same_bytes(buf, &model[at..at + 4096], "a 4 KiB read")?;
        }
        Ok(sys::counters().what("counters")?.dev_read_requests - before)
    };
    pass(&f, &mut buf)?;
    let warm = pass(&f, &mut buf)?;
    let knob = File::open("/proc/sys/vm/drop_caches", O_RDWR, 0).what("open drop_caches")?;
    ensure!(
        knob.pwrite(b"3\n", 0).what("write 3")? == 2,
        "write of 3 was short"
    );
    let cold = pass(&f, &mut buf)?;
    ensure!(
        warm == 0 && cold > 0,
        "device reads: {warm} on a warm pass, {cold} after drop_caches"
    );
    ensure!(knob.pwrite(b"4", 0).what("write 4")? == 1, "write of 4");
    expect_errno(knob.pwrite(b"5", 0), Errno::EINVAL, "write 5")?;
    let n = knob.pread(&mut buf, 0).what("read")?;
    same_bytes(&buf[..n], b"0\n", "drop_caches read")?;
    Ok(())
}
