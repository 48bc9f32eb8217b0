//! Native AIO (io_setup, io_submit, io_getevents, io_cancel, io_destroy): requests move the
//! right bytes and complete with the right events, the ring libaio reads is mapped with
//! Linux's header, io_getevents honours min_nr, nr and its timeout, a full ring is EAGAIN,
//! contexts are per process (not inherited by fork, released at exit), and bad input gets
//! Linux's errno. Reads of cold files are in flight at the disk together, io_destroy waits
//! for them, and a process that exits or execs with reads in flight loses nothing else.

use user_tests::abi::aio::*;
use user_tests::prelude::*;
use user_tests::sys::Fd;
use user_tests::time::now_ns;

use crate::{ensure, expect_errno, same_bytes, Check, Ctx, TestResult};

/// An iocb for `fd`.
fn iocb(op: u16, fd: Fd, buf: usize, len: usize, offset: i64, data: u64) -> Iocb {
    Iocb {
        aio_data: data,
        aio_key: 0x5555,
        aio_lio_opcode: op,
        aio_fildes: fd as u32,
        aio_buf: buf as u64,
        aio_nbytes: len as u64,
        aio_offset: offset,
        ..Default::default()
    }
}

/// Submit `cbs` (each in its own 64-byte buffer, as a C program's array of pointers).
fn submit(ctx: u64, cbs: &[Iocb]) -> SysResult<usize> {
    let mut raw: Vec<[u8; IOCB_SIZE]> = cbs.iter().map(|c| c.to_bytes()).collect();
    let ptrs: Vec<usize> = raw.iter_mut().map(|b| b.as_mut_ptr() as usize).collect();
    sys::io_submit_raw(ctx, ptrs.len() as isize, ptrs.as_ptr() as usize)
}

/// The ring header at `ctx`, read through a pipe (EFAULT when nothing is mapped there).
fn ring_header(ctx: u64) -> SysResult<[u32; 8]> {
    let (r, w) = sys::pipe2(0)?;
    // write(2) from an unmapped address is EFAULT.
    let put = sys::write_raw(w, ctx as usize, AIO_RING_HEADER);
    let _ = sys::close(w);
    let mut b = [0u8; AIO_RING_HEADER];
    let got = put.and_then(|_| sys::read(r, &mut b));
    let _ = sys::close(r);
    got?;
    let mut h = [0u32; 8];
    for (i, w) in h.iter_mut().enumerate() {
        *w = u32::from_le_bytes([b[i * 4], b[i * 4 + 1], b[i * 4 + 2], b[i * 4 + 3]]);
    }
    Ok(h)
}

/// Reads and writes (plain and vectored), fsync and fdatasync: the bytes land, and each
/// request's event carries its data, its iocb's address and its result.
pub fn aio_read_write_events(cx: &Ctx) -> TestResult {
    let path = cx.path("aio");
    let f = File::open(&path, O_RDWR | O_CREAT | O_TRUNC, 0o644).what("create")?;
    let ctx = sys::io_setup(8).what("io_setup(8)")?;
    ensure!(ctx != 0, "io_setup gave context 0");
    let h = ring_header(ctx).what("read the ring header")?;
    ensure!(
        h[RING_MAGIC / 4] == AIO_RING_MAGIC && h[RING_NR / 4] >= 8 && h[RING_HEAD / 4] == 0,
        "ring header {h:x?}"
    );
    let a: Vec<u8> = (0..10000u32).map(|i| (i * 7 % 251) as u8).collect();
    let b: Vec<u8> = (0..5000u32).map(|i| (i * 13 % 253) as u8).collect();
    let mut cbs = [
        iocb(IOCB_CMD_PWRITE, f.fd(), a.as_ptr() as usize, a.len(), 0, 11),
        iocb(
            IOCB_CMD_PWRITE,
            f.fd(),
            b.as_ptr() as usize,
            b.len(),
            20000,
            22,
        ),
    ];
    let mut raw: Vec<[u8; IOCB_SIZE]> = cbs.iter().map(|c| c.to_bytes()).collect();
    let ptrs: Vec<usize> = raw.iter_mut().map(|r| r.as_mut_ptr() as usize).collect();
    let n = sys::io_submit_raw(ctx, 2, ptrs.as_ptr() as usize).what("io_submit 2 writes")?;
    ensure!(n == 2, "io_submit returned {n}");
    ensure!(
        raw.iter().all(|r| Iocb::from_bytes(r).aio_key == KIOCB_KEY),
        "aio_key not reset to KIOCB_KEY"
    );
    let ev = sys::io_getevents(ctx, 2, 8, None).what("io_getevents")?;
    ensure!(ev.len() == 2, "{} events", ev.len());
    for (e, (want_data, want_res, at)) in ev.iter().zip([(11, a.len(), 0), (22, b.len(), 1)]) {
        ensure!(
            e.data == want_data && e.res == want_res as i64 && e.obj == ptrs[at] as u64,
            "event {e:?}: wanted data {want_data} res {want_res} obj {:#x}",
            ptrs[at]
        );
    }
    let mut back = vec![0u8; 25000];
    ensure!(f.pread_full(&mut back, 0).what("pread")? == 25000, "size");
    same_bytes(&back[..a.len()], &a, "first write")?;
    ensure!(
        back[a.len()..20000].iter().all(|&x| x == 0),
        "hole not zero"
    );
    same_bytes(&back[20000..], &b, "second write")?;
    // Reads, one past the end of the file (short) and one vectored.
    let mut r1 = vec![0u8; 3000];
    let mut r2 = vec![0u8; 9000];
    let (mut v1, mut v2) = (vec![0u8; 100], vec![0u8; 400]);
    let iov: [usize; 4] = [
        v1.as_mut_ptr() as usize,
        v1.len(),
        v2.as_mut_ptr() as usize,
        v2.len(),
    ];
    cbs = [
        iocb(
            IOCB_CMD_PREAD,
            f.fd(),
            r1.as_mut_ptr() as usize,
            3000,
            100,
            1,
        ),
        iocb(
            IOCB_CMD_PREAD,
            f.fd(),
            r2.as_mut_ptr() as usize,
            9000,
            20000,
            2,
        ),
    ];
    let mut more = cbs.to_vec();
    more.push(iocb(
        IOCB_CMD_PREADV,
        f.fd(),
        iov.as_ptr() as usize,
        2,
        20,
        3,
    ));
    more.push(iocb(IOCB_CMD_FSYNC, f.fd(), 0, 0, 0, 4));
    more.push(iocb(IOCB_CMD_FDSYNC, f.fd(), 0, 0, 0, 5));
    ensure!(submit(ctx, &more).what("io_submit reads")? == 5, "not 5");
    let ev = sys::io_getevents(ctx, 5, 5, None).what("io_getevents reads")?;
    // Reads complete in kernel workers, the syncs at submission: in any order.
    let mut res: Vec<(u64, i64)> = ev.iter().map(|e| (e.data, e.res)).collect();
    res.sort();
    ensure!(
        res == [(1, 3000), (2, 5000), (3, 500), (4, 0), (5, 0)],
        "events {res:?}"
    );
    same_bytes(&r1, &a[100..3100], "pread 3000 at 100")?;
    same_bytes(&r2[..5000], &b, "short read at 20000")?;
    same_bytes(&v1, &a[20..120], "preadv first piece")?;
    same_bytes(&v2, &a[120..520], "preadv second piece")?;
    // A vectored write.
    let (w1, w2) = (b"hello ".to_vec(), b"aio".to_vec());
    let wv: [usize; 4] = [w1.as_ptr() as usize, 6, w2.as_ptr() as usize, 3];
    let cb = iocb(IOCB_CMD_PWRITEV, f.fd(), wv.as_ptr() as usize, 2, 5, 9);
    ensure!(
        submit(ctx, &[cb]).what("pwritev")? == 1,
        "pwritev not submitted"
    );
    let ev = sys::io_getevents(ctx, 1, 1, None).what("pwritev event")?;
    ensure!(ev.len() == 1 && ev[0].res == 9, "pwritev event {ev:?}");
    let mut nine = [0u8; 9];
    f.pread_full(&mut nine, 5).what("pread")?;
    same_bytes(&nine, b"hello aio", "pwritev bytes")?;
    // An error of the I/O itself is the event's result: a read into a buffer that is not
    // mapped (a user address, so the submission checks pass).
    let cb = iocb(IOCB_CMD_PREAD, f.fd(), 0x1000, 100, 0, 7);
    ensure!(
        submit(ctx, &[cb]).what("read to 0x1000")? == 1,
        "not submitted"
    );
    let ev = sys::io_getevents(ctx, 1, 1, None).what("fault event")?;
    ensure!(
        ev.len() == 1 && ev[0].res == -(Errno::EFAULT.0 as i64),
        "read into an unmapped buffer: {ev:?}"
    );
    sys::io_destroy(ctx).what("io_destroy")?;
    expect_errno(sys::io_destroy(ctx), Errno::EINVAL, "io_destroy twice")?;
    expect_errno(ring_header(ctx), Errno::EFAULT, "the ring after io_destroy")?;
    Ok(())
}

/// Linux's errno for bad contexts, counts, pointers, descriptors, opcodes and fields.
pub fn aio_errors(cx: &Ctx) -> TestResult {
    expect_errno(sys::io_setup(0), Errno::EINVAL, "io_setup(0)")?;
    let mut busy = 1u64;
    expect_errno(
        sys::io_setup_raw(4, &mut busy as *mut u64 as usize),
        Errno::EINVAL,
        "io_setup with *ctxp != 0",
    )?;
    expect_errno(sys::io_setup_raw(4, 8), Errno::EFAULT, "io_setup(ctxp = 8)")?;
    expect_errno(sys::io_setup(65537), Errno::EAGAIN, "io_setup(65537)")?;
    expect_errno(
        sys::io_setup(0x7fff_ffff),
        Errno::EINVAL,
        "io_setup(2^31-1)",
    )?;
    expect_errno(sys::io_destroy(12345), Errno::EINVAL, "io_destroy(12345)")?;
    expect_errno(submit(12345, &[]), Errno::EINVAL, "io_submit on no context")?;
    expect_errno(
        sys::io_getevents(12345, 0, 1, Some(0)),
        Errno::EINVAL,
        "io_getevents on no context",
    )?;
    let path = cx.path("errs");
    put_file_rw(&path)?;
    let f = File::open(&path, O_RDONLY, 0).what("open")?;
    let ctx = sys::io_setup(4).what("io_setup(4)")?;
    let mut buf = vec![0u8; 64];
    let good = iocb(IOCB_CMD_PREAD, f.fd(), buf.as_mut_ptr() as usize, 64, 0, 1);
    expect_errno(
        sys::io_submit_raw(ctx, -1, 0),
        Errno::EINVAL,
        "io_submit nr -1",
    )?;
    expect_errno(
        sys::io_submit_raw(ctx, 1, 8),
        Errno::EFAULT,
        "io_submit iocbpp = 8",
    )?;
    let bad_ptr: [usize; 1] = [16];
    expect_errno(
        sys::io_submit_raw(ctx, 1, bad_ptr.as_ptr() as usize),
        Errno::EFAULT,
        "io_submit of an iocb at 16",
    )?;
    let cases: [(Iocb, Errno, &str); 8] = [
        (
            Iocb {
                aio_fildes: 999,
                ..good
            },
            Errno::EBADF,
            "fd 999",
        ),
        (
            Iocb {
                aio_lio_opcode: IOCB_CMD_NOOP,
                ..good
            },
            Errno::EINVAL,
            "IOCB_CMD_NOOP",
        ),
        (
            Iocb {
                aio_lio_opcode: 77,
                ..good
            },
            Errno::EINVAL,
            "opcode 77",
        ),
        (
            Iocb {
                aio_reserved2: 1,
                ..good
            },
            Errno::EINVAL,
            "aio_reserved2 set",
        ),
        (
            Iocb {
                aio_lio_opcode: IOCB_CMD_PWRITE,
                ..good
            },
            Errno::EBADF,
            "write on O_RDONLY",
        ),
        (
            Iocb {
                aio_offset: -1,
                ..good
            },
            Errno::EINVAL,
            "offset -1",
        ),
        (
            Iocb {
                aio_flags: IOCB_FLAG_RESFD,
                aio_resfd: 999,
                ..good
            },
            Errno::EBADF,
            "IOCB_FLAG_RESFD with fd 999",
        ),
        (
            Iocb {
                aio_flags: IOCB_FLAG_RESFD,
                aio_resfd: f.fd() as u32,
                ..good
            },
            Errno::EINVAL,
            "IOCB_FLAG_RESFD naming a file that is not an eventfd",
        ),
    ];
    for (cb, errno, what) in cases {
        expect_errno(submit(ctx, &[cb]), errno, what)?;
    }
    expect_errno(
        submit(
            ctx,
            &[Iocb {
                aio_lio_opcode: IOCB_CMD_FSYNC,
                ..good
            }],
        ),
        Errno::EINVAL,
        "IOCB_CMD_FSYNC with a buffer",
    )?;
    // A bad second request: the first is submitted, and the count says so.
    let n = submit(
        ctx,
        &[
            good,
            Iocb {
                aio_fildes: 999,
                ..good
            },
        ],
    )
    .what("good then bad")?;
    ensure!(n == 1, "io_submit of a good and a bad iocb returned {n}");
    expect_errno(
        sys::io_getevents(ctx, 2, 1, None),
        Errno::EINVAL,
        "min_nr > nr",
    )?;
    expect_errno(
        sys::io_getevents_raw(ctx, 1, 1, 8, 0),
        Errno::EFAULT,
        "io_getevents into address 8",
    )?;
    // The event is still there after the failed copy.
    let ev = sys::io_getevents(ctx, 1, 4, Some(0)).what("io_getevents")?;
    ensure!(ev.len() == 1 && ev[0].res == 64, "events {ev:?}");
    let mut raw = good.to_bytes();
    expect_errno(
        sys::io_cancel_raw(ctx, raw.as_mut_ptr() as usize, buf.as_mut_ptr() as usize),
        Errno::EINVAL,
        "io_cancel of a completed request",
    )?;
    expect_errno(
        sys::io_cancel_raw(ctx, 8, buf.as_mut_ptr() as usize),
        Errno::EFAULT,
        "io_cancel of an iocb at 8",
    )?;
    sys::io_destroy(ctx).what("io_destroy")
}

fn put_file_rw(path: &str) -> TestResult {
    crate::put_file(path, &[7u8; 4096])
}

/// A full ring is EAGAIN until events are reaped; the ring wraps around; the events asked for
/// by all contexts are limited system-wide (65536).
pub fn aio_limits(cx: &Ctx) -> TestResult {
    let path = cx.path("lim");
    put_file_rw(&path)?;
    let f = File::open(&path, O_RDONLY, 0).what("open")?;
    let ctx = sys::io_setup(1).what("io_setup(1)")?;
    let mut buf = [0u8; 8];
    let cb = iocb(IOCB_CMD_PREAD, f.fd(), buf.as_mut_ptr() as usize, 8, 0, 0);
    let mut n = 0;
    let full = loop {
        match submit(ctx, &[Iocb { aio_data: n, ..cb }]) {
            Ok(_) => n += 1,
            Err(e) => break e,
        }
        if n > 100_000 {
            return Err("io_submit never refused".into());
        }
    };
    ensure!(
        full == Errno::EAGAIN && n >= 1,
        "after {n}: {}",
        full.name()
    );
    let ev = sys::io_getevents(ctx, n as usize, n as usize, None).what("reap all")?;
    ensure!(ev.len() == n as usize, "reaped {} of {n}", ev.len());
    ensure!(
        ev.iter()
            .enumerate()
            .all(|(i, e)| e.data == i as u64 && e.res == 8),
        "events out of order or wrong"
    );
    // Round the ring several times, one request at a time.
    for i in 0..3 * n {
        ensure!(
            submit(ctx, &[Iocb { aio_data: i, ..cb }]).what("resubmit")? == 1,
            "submit"
        );
        let ev = sys::io_getevents(ctx, 1, 1, None).what("reap one")?;
        ensure!(ev.len() == 1 && ev[0].data == i, "round {i}: {ev:?}");
    }
    sys::io_destroy(ctx).what("io_destroy")?;
    let big = sys::io_setup(65536).what("io_setup(65536)")?;
    expect_errno(sys::io_setup(1), Errno::EAGAIN, "io_setup past aio-max-nr")?;
    sys::io_destroy(big).what("io_destroy big")?;
    let again = sys::io_setup(1).what("io_setup after io_destroy")?;
    sys::io_destroy(again).what("io_destroy")
}

/// io_getevents waits for min_nr events until its timeout, returns at once with min_nr 0 or
/// a zero timeout, and gives what it has when the time runs out; io_pgetevents checks its
/// signal-mask argument.
pub fn aio_getevents_timeout(cx: &Ctx) -> TestResult {
    let ctx = sys::io_setup(4).what("io_setup")?;
    let t0 = now_ns();
    let ev = sys::io_getevents(ctx, 0, 4, None).what("min_nr 0")?;
    ensure!(ev.is_empty(), "events from nothing");
    let ev = sys::io_getevents(ctx, 1, 4, Some(0)).what("zero timeout")?;
    ensure!(ev.is_empty(), "events from nothing");
    let quick = now_ns() - t0;
    let t1 = now_ns();
    let ev = sys::io_getevents(ctx, 1, 4, Some(50_000_000)).what("50 ms timeout")?;
    let waited = now_ns() - t1;
    ensure!(ev.is_empty(), "events from nothing");
    ensure!(
        waited >= 45_000_000 && quick < 45_000_000,
        "timeout 50 ms waited {waited} ns (no-wait calls took {quick} ns)"
    );
    // io_pgetevents: a mask for the wait; its size must be a sigset_t's, its address good.
    let mask = 0u64;
    let zero = [0i64; 2];
    let mut evs = [0u8; 4 * IO_EVENT_SIZE];
    let (ev_at, tmo) = (evs.as_mut_ptr() as usize, zero.as_ptr() as usize);
    let sig_ok: [usize; 2] = [&mask as *const u64 as usize, 8];
    let sig_bad: [usize; 2] = [&mask as *const u64 as usize, 4];
    let n = sys::io_pgetevents_raw(ctx, 1, 4, ev_at, tmo, sig_ok.as_ptr() as usize)
        .what("io_pgetevents with a mask")?;
    ensure!(n == 0, "io_pgetevents found {n} events in an empty ring");
    expect_errno(
        sys::io_pgetevents_raw(ctx, 1, 4, ev_at, tmo, sig_bad.as_ptr() as usize),
        Errno::EINVAL,
        "io_pgetevents with a 4-byte sigset",
    )?;
    expect_errno(
        sys::io_pgetevents_raw(ctx, 1, 4, ev_at, tmo, 8),
        Errno::EFAULT,
        "io_pgetevents with usig at 8",
    )?;
    // One event ready, two wanted: the timeout returns the one.
    let path = cx.path("t");
    put_file_rw(&path)?;
    let f = File::open(&path, O_RDONLY, 0).what("open")?;
    let mut buf = [0u8; 16];
    let cb = iocb(IOCB_CMD_PREAD, f.fd(), buf.as_mut_ptr() as usize, 16, 0, 5);
    submit(ctx, &[cb]).what("submit")?;
    let ev = sys::io_getevents(ctx, 2, 4, Some(20_000_000)).what("2 of 1")?;
    ensure!(ev.len() == 1 && ev[0].data == 5, "events {ev:?}");
    sys::io_destroy(ctx).what("io_destroy")
}

/// A forked child has neither the ring nor the context; a context a process leaves behind at
/// exit is released (its events no longer count against the system-wide limit).
pub fn aio_not_inherited(_cx: &Ctx) -> TestResult {
    let ctx = sys::io_setup(4).what("io_setup")?;
    let pid = sys::fork().what("fork")?;
    if pid == 0 {
        let mut code = 0;
        if sys::io_destroy(ctx) != Err(Errno::EINVAL) {
            code |= 1;
        }
        if ring_header(ctx) != Err(Errno::EFAULT) {
            code |= 2;
        }
        // Left behind at exit: must not keep its share of the limit.
        if sys::io_setup(65536 - 4).is_err() {
            code |= 4;
        }
        sys::exit(code);
    }
    let (_, status) = sys::waitpid(pid).what("wait4")?;
    ensure!(
        status.exited() && status.exit_code() == 0,
        "child: status {:#x} (1: io_destroy worked, 2: ring mapped, 4: io_setup failed)",
        status.0
    );
    ensure!(
        ring_header(ctx).what("parent's ring")?[RING_MAGIC / 4] == AIO_RING_MAGIC,
        "parent's ring lost its header"
    );
    let big = sys::io_setup(65536 - 4).what("io_setup after the child's exit")?;
    sys::io_destroy(big).what("io_destroy big")?;
    sys::io_destroy(ctx).what("io_destroy")
}

/// A file of `READS` pieces `GAP` apart, written, made durable and dropped from the caches:
/// each 4 KiB read of one piece then goes to the disk (on dbfs, a window fault of its own).
const READS: usize = 16;
const GAP: usize = 256 << 10;

fn cold_file(cx: &Ctx, name: &str) -> Result<(File, Vec<u8>), String> {
    let path = cx.path(name);
    let f = File::open(&path, O_RDWR | O_CREAT | O_TRUNC, 0o644).what("create")?;
    let model: Vec<u8> = (0..READS * GAP)
        .map(|i| ((i / 4096) as u8).wrapping_mul(31) ^ (i as u8))
        .collect();
    f.write_all(&model).what("write")?;
    f.sync().what("fsync")?;
    match sys::drop_caches() {
        Ok(()) | Err(Errno::ENOSYS) | Err(Errno::EPERM) => {}
        Err(e) => return Err(format!("drop_caches: {e:?}")),
    }
    Ok((f, model))
}

/// `READS` reads of 4 KiB, one per piece of a cold file, into `bufs`: the iocbs.
fn cold_reads(f: &File, bufs: &mut [Vec<u8>]) -> Vec<Iocb> {
    bufs.iter_mut()
        .enumerate()
        .map(|(k, b)| {
            let at = k * GAP + (k * 4096) % GAP;
            iocb(
                IOCB_CMD_PREAD,
                f.fd(),
                b.as_mut_ptr() as usize,
                4096,
                at as i64,
                k as u64,
            )
        })
        .collect()
}

fn check_cold_reads(bufs: &[Vec<u8>], model: &[u8], what: &str) -> TestResult {
    for (k, b) in bufs.iter().enumerate() {
        let at = k * GAP + (k * 4096) % GAP;
        same_bytes(b, &model[at..at + 4096], what)?;
    }
    Ok(())
}

/// Reads of a cold file submitted together are done together: each event holds its bytes,
/// and on dbfs the disk had reads of different requests in flight at once (the kernel's
/// `dev_reads_overlapped` counter; a kernel that completed each read inside io_submit, as
/// `aio_async=0` boots, sends them one after another and fails this). Up to three rounds,
/// each on a file of its own: on a loaded host a round's reads can each find the disk done
/// with the one before (the emulated disk answers in tens of microseconds), but a kernel
/// that serialises them never overlaps any.
pub fn aio_reads_in_flight(cx: &Ctx) -> TestResult {
    const ROUNDS: usize = 3;
    for round in 0..ROUNDS {
        let name = format!("aio-cold-{round}");
        let (f, model) = cold_file(cx, &name)?;
        let mut bufs = vec![vec![0u8; 4096]; READS];
        let cbs = cold_reads(&f, &mut bufs);
        let ctx = sys::io_setup(READS as u32).what("io_setup")?;
        let before = sys::counters().what("counters")?;
        ensure!(
            submit(ctx, &cbs).what("io_submit")? == READS,
            "not all submitted"
        );
        let mut events = Vec::new();
        while events.len() < READS {
            let ev = sys::io_getevents(ctx, 1, READS, None).what("io_getevents")?;
            events.extend(ev);
        }
        let after = sys::counters().what("counters")?;
        let mut got: Vec<(u64, i64)> = events.iter().map(|e| (e.data, e.res)).collect();
        got.sort();
        let want: Vec<(u64, i64)> = (0..READS as u64).map(|k| (k, 4096)).collect();
        ensure!(got == want, "events {got:?}");
        check_cold_reads(&bufs, &model, "an asynchronous cold read")?;
        sys::io_destroy(ctx).what("io_destroy")?;
        drop(f);
        let _ = sys::unlink(&cx.path(&name));
        let overlapped = after.dev_reads_overlapped - before.dev_reads_overlapped;
        if cx.fat || overlapped > 0 {
            return Ok(());
        }
    }
    Err(format!(
        "{READS} cold reads submitted together never had two disk reads in flight ({ROUNDS} rounds)"
    ))
}

/// Reads submitted on each hart in turn, pinned there, complete with their bytes: io_submit
/// hands them to that hart's own workers (made by its first read, and pinned to it too), so
/// every hart's pool is used, and the submitter is still on its hart when it has reaped them.
pub fn aio_reads_from_each_hart(cx: &Ctx) -> TestResult {
    let (f, model) = cold_file(cx, "aio-harts")?;
    let all = crate::sched_tests::getaffinity(0, 8).what("sched_getaffinity")?;
    let each = || -> TestResult {
        for hart in (0..64u32).filter(|h| all & (1u64 << h) != 0) {
            crate::sched_tests::setaffinity(0, 1 << hart).what("sched_setaffinity")?;
            let _ = sys::drop_caches();
            let mut bufs = vec![vec![0u8; 4096]; READS];
            let cbs = cold_reads(&f, &mut bufs);
            let ctx = sys::io_setup(READS as u32).what("io_setup")?;
            ensure!(
                submit(ctx, &cbs).what("io_submit")? == READS,
                "not all submitted on hart {hart}"
            );
            let mut events = Vec::new();
            while events.len() < READS {
                events.extend(sys::io_getevents(ctx, 1, READS, None).what("io_getevents")?);
            }
            let mut got: Vec<(u64, i64)> = events.iter().map(|e| (e.data, e.res)).collect();
            got.sort();
            let want: Vec<(u64, i64)> = (0..READS as u64).map(|k| (k, 4096)).collect();
            ensure!(got == want, "events on hart {hart}: {got:?}");
            check_cold_reads(&bufs, &model, &format!("a read submitted on hart {hart}"))?;
            let cpu = crate::sched_tests::getcpu();
            ensure!(cpu == Ok(hart), "pinned to hart {hart}, found on {cpu:?}");
            sys::io_destroy(ctx).what("io_destroy")?;
        }
        Ok(())
    };
    let r = each();
    let back = crate::sched_tests::setaffinity(0, all).what("sched_setaffinity back");
    r.and(back.map(|_| ()))
}

/// io_destroy returns only once the context's reads are done: their bytes are in the
/// buffers though nobody reaped their events. A child that exits, and one that execs, with
/// reads in flight end normally, and the parent's memory is untouched.
pub fn aio_destroy_and_exit_in_flight(cx: &Ctx) -> TestResult {
    let (f, model) = cold_file(cx, "aio-destroy")?;
    let mut bufs = vec![vec![0u8; 4096]; READS];
    let cbs = cold_reads(&f, &mut bufs);
    let ctx = sys::io_setup(READS as u32).what("io_setup")?;
    ensure!(
        submit(ctx, &cbs).what("io_submit")? == READS,
        "not all submitted"
    );
    sys::io_destroy(ctx).what("io_destroy with reads in flight")?;
    check_cold_reads(&bufs, &model, "a read io_destroy waited for")?;
    for exec in [false, true] {
        let _ = sys::drop_caches();
        let pid = sys::fork().what("fork")?;
        if pid == 0 {
            let mut bufs = vec![vec![0u8; 4096]; READS];
            let cbs = cold_reads(&f, &mut bufs);
            let ok = sys::io_setup(READS as u32)
                .and_then(|ctx| submit(ctx, &cbs))
                .is_ok_and(|n| n == READS);
            if exec && ok {
                // The new program checks its data segment (which no read may reach).
                let e = sys::execve("/bin/exectarget", &["/bin/exectarget", "data"]);
                sys::exit(100 + e.0);
            }
            sys::exit(if ok { 0 } else { 1 });
        }
        let (_, status) = sys::waitpid(pid).what("wait4")?;
        ensure!(
            status.exited() && status.exit_code() == 0,
            "child (exec: {exec}) with reads in flight: status {:#x}",
            status.0
        );
    }
    same_bytes(
        &get_all(&f, model.len())?,
        &model,
        "the file after the children",
    )
}

fn get_all(f: &File, len: usize) -> Result<Vec<u8>, String> {
    let mut back = vec![0u8; len];
    ensure!(
        f.pread_full(&mut back, 0).what("pread")? == len,
        "short file"
    );
    Ok(back)
}

/// `IOCB_FLAG_RESFD`: every completion adds 1 to the eventfd once its event is in the ring,
/// so a program that waits on the eventfd (as libaio users with an event loop do) then
/// finds that many events; cold reads (done by kernel workers) and a write (done at
/// submission) alike.
pub fn aio_eventfd_completions(cx: &Ctx) -> TestResult {
    let (f, model) = cold_file(cx, "aio-eventfd")?;
    // SAFETY: no pointer arguments.
    let efd = crate::anonfd_tests::ret(unsafe {
        user_tests::raw::syscall2(abi::syscall::SYS_EVENTFD2, 0, 0)
    })
    .what("eventfd2")? as i32;
    let mut bufs = vec![vec![0u8; 4096]; 4];
    let mut cbs = cold_reads(&f, &mut bufs);
    cbs.truncate(4);
    let extra = vec![7u8; 512];
    cbs.push(iocb(
        IOCB_CMD_PWRITE,
        f.fd(),
        extra.as_ptr() as usize,
        extra.len(),
        (READS * GAP) as i64,
        99,
    ));
    for cb in cbs.iter_mut() {
        cb.aio_flags = IOCB_FLAG_RESFD;
        cb.aio_resfd = efd as u32;
    }
    let ctx = sys::io_setup(8).what("io_setup")?;
    ensure!(
        submit(ctx, &cbs).what("io_submit")? == 5,
        "not all submitted"
    );
    let mut counted = 0u64;
    let mut b = [0u8; 8];
    while counted < 5 {
        ensure!(
            sys::read(efd, &mut b).what("read the eventfd")? == 8,
            "short eventfd read"
        );
        counted += u64::from_le_bytes(b);
    }
    ensure!(
        counted == 5,
        "the eventfd counted {counted} completions of 5"
    );
    let ev = sys::io_getevents(ctx, 5, 8, Some(0)).what("io_getevents after the eventfd")?;
    let mut got: Vec<(u64, i64)> = ev.iter().map(|e| (e.data, e.res)).collect();
    got.sort();
    ensure!(
        got == [(0, 4096), (1, 4096), (2, 4096), (3, 4096), (99, 512)],
        "events {got:?}"
    );
    for (k, b) in bufs.iter().enumerate() {
        let at = k * GAP + (k * 4096) % GAP;
        same_bytes(
            b,
            &model[at..at + 4096],
            "a read signalled through the eventfd",
        )?;
    }
    let _ = sys::close(efd);
    sys::io_destroy(ctx).what("io_destroy")
}
