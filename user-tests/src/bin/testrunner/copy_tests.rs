//! The vectored and in-kernel copying calls: preadv/pwritev and their v2 forms (offsets,
//! -1 for the descriptor's offset, RWF_* flags), sendfile, splice, tee, vmsplice,
//! copy_file_range, and close_range and openat2; bad input gets Linux's errno.

use user_tests::abi::fcntl::{
    AT_FDCWD, O_APPEND, O_CREAT, O_NONBLOCK, O_RDONLY, O_RDWR, O_WRONLY, RESOLVE_BENEATH,
    RESOLVE_NO_SYMLINKS, RWF_APPEND, RWF_HIPRI, RWF_NOWAIT,
};
use user_tests::abi::syscall::*;
use user_tests::prelude::*;
use user_tests::raw::{syscall3, syscall4, syscall6};
use user_tests::sys::Fd;

use crate::{ensure, expect_errno, get_file, put_file, same_bytes, Check, Ctx, TestResult};

fn ret(r: isize) -> SysResult<usize> {
    Errno::from_ret(r).map(|v| v as usize)
}

/// `path` NUL-terminated.
fn cstr(path: &str) -> Vec<u8> {
    let mut v = Vec::from(path.as_bytes());
    v.push(0);
    v
}

/// fcntl(fd, F_GETFD): the descriptor flags.
fn getfd(fd: Fd) -> SysResult<usize> {
    // SAFETY: no pointers.
    ret(unsafe { syscall3(SYS_FCNTL, fd as usize, 1, 0) })
}

/// An iovec array over `bufs` (address, length pairs).
fn iovec(bufs: &[&[u8]]) -> Vec<[usize; 2]> {
    bufs.iter()
        .map(|b| [b.as_ptr() as usize, b.len()])
        .collect()
}

fn preadv2(fd: Fd, bufs: &mut [&mut [u8]], pos: i64, flags: u32, v2: bool) -> SysResult<usize> {
    let iov: Vec<[usize; 2]> = bufs
        .iter_mut()
        .map(|b| [b.as_mut_ptr() as usize, b.len()])
        .collect();
    let n = if v2 { SYS_PREADV2 } else { SYS_PREADV };
    // SAFETY: each iovec names a writable buffer of its length, alive for the call.
    ret(unsafe {
        syscall6(
            n,
            fd as usize,
            iov.as_ptr() as usize,
            iov.len(),
            pos as usize,
            0,
            flags as usize,
        )
    })
}

fn pwritev2(fd: Fd, bufs: &[&[u8]], pos: i64, flags: u32, v2: bool) -> SysResult<usize> {
    let iov = iovec(bufs);
    let n = if v2 { SYS_PWRITEV2 } else { SYS_PWRITEV };
    // SAFETY: each iovec names a readable buffer of its length, alive for the call.
    ret(unsafe {
        syscall6(
            n,
            fd as usize,
            iov.as_ptr() as usize,
            iov.len(),
            pos as usize,
            0,
            flags as usize,
        )
    })
}

fn splice(
    fd_in: Fd,
    off_in: Option<&mut i64>,
    fd_out: Fd,
    len: usize,
    flags: u32,
) -> SysResult<usize> {
    let off = off_in.map_or(0, |o| o as *mut i64 as usize);
    // SAFETY: `off` is NULL or a writable loff_t; no output offset.
    ret(unsafe {
        syscall6(
            SYS_SPLICE,
            fd_in as usize,
            off,
            fd_out as usize,
            0,
            len,
            flags as usize,
        )
    })
}

fn sendfile(out: Fd, fd_in: Fd, off: Option<&mut i64>, count: usize) -> SysResult<usize> {
    let off = off.map_or(0, |o| o as *mut i64 as usize);
    // SAFETY: `off` is NULL or a writable loff_t.
    ret(unsafe { syscall4(SYS_SENDFILE, out as usize, fd_in as usize, off, count) })
}

fn copy_file_range(
    fd_in: Fd,
    off_in: &mut i64,
    out: Fd,
    off_out: &mut i64,
    len: usize,
) -> SysResult<usize> {
    // SAFETY: both offsets are writable loff_t values.
    ret(unsafe {
        syscall6(
            SYS_COPY_FILE_RANGE,
            fd_in as usize,
            off_in as *mut i64 as usize,
            out as usize,
            off_out as *mut i64 as usize,
            len,
            0,
        )
    })
}

fn read_back(fd: Fd, at: u64, n: usize) -> Result<Vec<u8>, String> {
    let mut b = vec![0u8; n];
    let got = sys::pread(fd, &mut b, at).what("pread")?;
    b.truncate(got);
    Ok(b)
}

/// preadv/pwritev at offsets leave the descriptor's offset; the v2 forms at -1 use and move
/// it; RWF_APPEND appends; RWF_HIPRI is accepted; bad offsets, flags and descriptors fail.
pub fn vectored_at_offsets(cx: &Ctx) -> TestResult {
    let path = cx.path("v");
    let fd = sys::open(&path, O_RDWR | O_CREAT, 0o644).what("open")?;
    let r = (|| -> TestResult {
        let n = pwritev2(fd, &[b"hello ", b"world"], 4, 0, false).what("pwritev")?;
        ensure!(n == 11, "pwritev wrote {n}");
        ensure!(
            sys::lseek(fd, 0, 1).what("lseek")? == 0,
            "pwritev moved the offset"
        );
        let (mut a, mut b) = ([0u8; 3], [0u8; 8]);
        let n = preadv2(fd, &mut [&mut a, &mut b], 4, RWF_HIPRI, true).what("preadv2 HIPRI")?;
        ensure!(
            n == 11 && &a == b"hel" && &b == b"lo world",
            "preadv2 read {n} bytes"
        );
        // -1: the descriptor's offset, which moves.
        sys::lseek(fd, 4, 0).what("lseek")?;
        let mut c = [0u8; 5];
        ensure!(
            preadv2(fd, &mut [&mut c], -1, 0, true).what("call")? == 5 && &c == b"hello",
            "preadv2 -1"
        );
        ensure!(
            sys::lseek(fd, 0, 1).what("call")? == 9,
            "preadv2 -1 did not move the offset"
        );
        ensure!(
            pwritev2(fd, &[b"!"], 0, RWF_APPEND, true).what("call")? == 1,
            "pwritev2 RWF_APPEND"
        );
        same_bytes(
            &read_back(fd, 15, 8)?,
            b"!",
            "the RWF_APPEND byte at the end",
        )?;
        expect_errno(
            preadv2(fd, &mut [&mut c], -1, 0, false),
            Errno::EINVAL,
            "preadv at -1",
        )?;
        expect_errno(
            pwritev2(fd, &[b"x"], -2, 0, true),
            Errno::EINVAL,
            "pwritev2 at -2",
        )?;
        expect_errno(
            preadv2(fd, &mut [&mut c], 0, 0x8000, true),
            Errno::EOPNOTSUPP,
            "preadv2 flag 0x8000",
        )?;
        // A regular file here may wait for the disk: RWF_NOWAIT is declined, as Linux does
        // on a file system without it.
        expect_errno(
            preadv2(fd, &mut [&mut c], 0, RWF_NOWAIT, true),
            Errno::EOPNOTSUPP,
            "preadv2 RWF_NOWAIT on a file",
        )?;
        // A bad buffer address (the iovec array itself at address 8).
        // SAFETY: the kernel only reads the iovec array at 8, which it must refuse.
        let bad = ret(unsafe { syscall6(SYS_PREADV, fd as usize, 8, 1, 0, 0, 0) });
        expect_errno(bad, Errno::EFAULT, "preadv of an iovec array at 8")?;
        Ok(())
    })();
    let _ = sys::close(fd);
    r?;
    let ro = sys::open(&path, O_RDONLY, 0).what("open read-only")?;
    let bad = pwritev2(ro, &[b"x"], 0, 0, false);
    let _ = sys::close(ro);
    expect_errno(bad, Errno::EBADF, "pwritev on a read-only descriptor")?;
    let (r, w) = sys::pipe2(0).what("pipe2")?;
    let mut c = [0u8; 1];
    let spipe = preadv2(r, &mut [&mut c], 0, 0, false);
    let _ = (sys::close(r), sys::close(w));
    expect_errno(spipe, Errno::ESPIPE, "preadv of a pipe")?;
    expect_errno(
        pwritev2(9999, &[b"x"], 0, 0, false),
        Errno::EBADF,
        "pwritev fd 9999",
    )
}

/// splice moves file -> pipe -> file, tee copies one pipe into another leaving the data,
/// vmsplice writes user memory into a pipe and reads it out; the errors of each.
pub fn splice_tee_vmsplice(cx: &Ctx) -> TestResult {
    let (src, dst) = (cx.path("src"), cx.path("dst"));
    put_file(&src, b"0123456789abcdef")?;
    let fin = sys::open(&src, O_RDONLY, 0).what("open src")?;
    let fout = sys::open(&dst, O_WRONLY | O_CREAT, 0o644).what("open dst")?;
    let (r, w) = sys::pipe2(0).what("pipe2")?;
    let (r2, w2) = sys::pipe2(O_NONBLOCK).what("pipe2")?;
    let res = (|| -> TestResult {
        let mut off = 4i64;
        ensure!(
            splice(fin, Some(&mut off), w, 8, 0).what("call")? == 8,
            "splice file -> pipe"
        );
        ensure!(off == 12, "splice did not move *off_in: {off}");
        ensure!(
            sys::lseek(fin, 0, 1).what("call")? == 0,
            "splice with an offset moved the file's"
        );
        // tee: the same 8 bytes into the second pipe, still in the first.
        // SAFETY: plain descriptors and a length.
        let teed =
            ret(unsafe { syscall4(SYS_TEE, r as usize, w2 as usize, 100, 0) }).what("call")?;
        ensure!(teed == 8, "tee copied {teed}");
        let mut b = [0u8; 16];
        ensure!(
            sys::read(r2, &mut b).what("call")? == 8 && &b[..8] == b"456789ab",
            "tee's copy"
        );
        ensure!(
            splice(r, None, fout, 100, 0).what("call")? == 8,
            "splice pipe -> file"
        );
        same_bytes(&get_file(&dst)?, b"456789ab", "the spliced file")?;
        // An empty pipe with SPLICE_F_NONBLOCK, and errors.
        expect_errno(
            splice(r, None, fout, 1, 2),
            Errno::EAGAIN,
            "splice of an empty pipe",
        )?;
        let mut o = 0i64;
        expect_errno(
            splice(r, Some(&mut o), fout, 1, 0),
            Errno::ESPIPE,
            "offset for a pipe",
        )?;
        expect_errno(
            splice(fin, None, fout, 1, 0),
            Errno::EINVAL,
            "splice file -> file",
        )?;
        // SAFETY: plain descriptors and a length.
        let same = ret(unsafe { syscall4(SYS_TEE, r as usize, w as usize, 1, 0) });
        expect_errno(same, Errno::EINVAL, "tee of a pipe into itself")?;
        // vmsplice: user memory into the write end, then out of the read end.
        let data = b"vmsplice!";
        let iov = iovec(&[data]);
        // SAFETY: the iovec names `data`, readable for the call.
        let n = ret(unsafe { syscall4(SYS_VMSPLICE, w as usize, iov.as_ptr() as usize, 1, 0) })
            .what("call")?;
        ensure!(n == 9, "vmsplice into the pipe moved {n}");
        let mut out = [0u8; 9];
        let oiov = [[out.as_mut_ptr() as usize, out.len()]];
        // SAFETY: the iovec names `out`, writable for the call.
        let n = ret(unsafe { syscall4(SYS_VMSPLICE, r as usize, oiov.as_ptr() as usize, 1, 0) })
            .what("call")?;
        ensure!(n == 9 && &out == data, "vmsplice out of the pipe");
        // SAFETY: the kernel must refuse a file before touching the iovec.
        let nf = ret(unsafe { syscall4(SYS_VMSPLICE, fin as usize, iov.as_ptr() as usize, 1, 0) });
        expect_errno(nf, Errno::EBADF, "vmsplice into a file")
    })();
    for fd in [fin, fout, r, w, r2, w2] {
        let _ = sys::close(fd);
    }
    res
}

/// sendfile from an offset (which moves; the file's does not) and from the descriptor's
/// offset; into a pipe; copy_file_range between two files; their errors.
pub fn sendfile_copy_file_range(cx: &Ctx) -> TestResult {
    let (src, dst) = (cx.path("src"), cx.path("dst"));
    put_file(&src, b"abcdefghijklmnopqrstuvwxyz")?;
    let fin = sys::open(&src, O_RDONLY, 0).what("open src")?;
    let fout = sys::open(&dst, O_RDWR | O_CREAT, 0o644).what("open dst")?;
    let fapp = sys::open(&dst, O_WRONLY | O_APPEND, 0).what("open dst O_APPEND")?;
    let (r, w) = sys::pipe2(0).what("pipe2")?;
    let res = (|| -> TestResult {
        let mut off = 2i64;
        ensure!(
            sendfile(fout, fin, Some(&mut off), 100).what("call")? == 24,
            "sendfile to the end"
        );
        ensure!(
            off == 26 && sys::lseek(fin, 0, 1).what("call")? == 0,
            "sendfile's offsets: {off}"
        );
        ensure!(
            sendfile(fout, fin, None, 3).what("call")? == 3,
            "sendfile from the file's offset"
        );
        ensure!(
            sys::lseek(fin, 0, 1).what("call")? == 3,
            "sendfile did not move the file's offset"
        );
        same_bytes(
            &get_file(&dst)?,
            b"cdefghijklmnopqrstuvwxyzabc",
            "sendfile's output",
        )?;
        ensure!(
            sendfile(w, fin, None, 4).what("call")? == 4,
            "sendfile into a pipe"
        );
        let mut b = [0u8; 4];
        ensure!(
            sys::read(r, &mut b).what("call")? == 4 && &b == b"defg",
            "the pipe's bytes"
        );
        let mut o = -1i64;
        expect_errno(
            sendfile(fout, fin, Some(&mut o), 1),
            Errno::EINVAL,
            "sendfile at -1",
        )?;
        expect_errno(
            sendfile(fin, fin, None, 1),
            Errno::EBADF,
            "sendfile to a read-only fd",
        )?;
        expect_errno(
            sendfile(fapp, fin, None, 1),
            Errno::EINVAL,
            "sendfile to O_APPEND",
        )?;
        // copy_file_range: 5 bytes from 20 to 0, the offsets move; a range of one file that
        // overlaps itself, an O_APPEND output, a pipe, flags.
        let (mut a, mut z) = (20i64, 0i64);
        ensure!(
            copy_file_range(fin, &mut a, fout, &mut z, 5).what("call")? == 5,
            "copy_file_range"
        );
        ensure!(a == 25 && z == 5, "copy_file_range's offsets {a} {z}");
        same_bytes(&read_back(fout, 0, 5)?, b"uvwxy", "copy_file_range's bytes")?;
        let (mut a, mut z) = (0i64, 2i64);
        expect_errno(
            copy_file_range(fout, &mut a, fout, &mut z, 4),
            Errno::EINVAL,
            "overlap",
        )?;
        let (mut a, mut z) = (0i64, 0i64);
        expect_errno(
            copy_file_range(fin, &mut a, fapp, &mut z, 1),
            Errno::EBADF,
            "O_APPEND",
        )?;
        expect_errno(
            copy_file_range(r, &mut a, fout, &mut z, 1),
            Errno::EINVAL,
            "from a pipe",
        )?;
        Ok(())
    })();
    for fd in [fin, fout, fapp, r, w] {
        let _ = sys::close(fd);
    }
    res
}

/// close_range closes a range (or marks it close-on-exec); openat2 opens with a
/// `struct open_how`, refuses a size it does not know and keeps RESOLVE_BENEATH beneath.
pub fn close_range_openat2(cx: &Ctx) -> TestResult {
    let path = cx.path("f");
    put_file(&path, b"x")?;
    let a = sys::open(&path, O_RDONLY, 0).what("open")?;
    let b = sys::open(&path, O_RDONLY, 0).what("open")?;
    // SAFETY: no pointers.
    ret(unsafe { syscall3(SYS_CLOSE_RANGE, b as usize, b as usize, 1 << 2) }).what("CLOEXEC")?;
    let flags = getfd(b).what("F_GETFD")?;
    ensure!(
        flags & 1 == 1,
        "close_range CLOSE_RANGE_CLOEXEC left FD_CLOEXEC off"
    );
    // SAFETY: no pointers.
    ret(unsafe { syscall3(SYS_CLOSE_RANGE, a as usize, b as usize, 0) }).what("close_range")?;
    expect_errno(getfd(a), Errno::EBADF, "a closed descriptor")?;
    expect_errno(getfd(b), Errno::EBADF, "a closed descriptor")?;
    // SAFETY: no pointers.
    let inval = ret(unsafe { syscall3(SYS_CLOSE_RANGE, 5, 4, 0) });
    expect_errno(inval, Errno::EINVAL, "close_range first > last")?;
    let open2 = |p: &str, flags: u64, resolve: u64, size: usize| {
        let c = cstr(p);
        let how: [u64; 4] = [flags, 0, resolve, 0];
        // SAFETY: `c` is a NUL-terminated path, `how` at least `size` readable bytes.
        ret(unsafe {
            syscall4(
                SYS_OPENAT2,
                AT_FDCWD as usize,
                c.as_ptr() as usize,
                how.as_ptr() as usize,
                size,
            )
        })
    };
    let fd = open2(&path, O_RDONLY as u64, 0, 24).what("openat2")?;
    let _ = sys::close(fd as Fd);
    let fd = open2(&path, O_RDONLY as u64, 0, 32).what("openat2 with a zero tail")?;
    let _ = sys::close(fd as Fd);
    expect_errno(open2(&path, 0, 0, 16), Errno::EINVAL, "openat2 size 16")?;
    expect_errno(
        open2(&path, 1 << 40, 0, 24),
        Errno::EINVAL,
        "openat2 unknown flag",
    )?;
    expect_errno(
        open2(&path, 0, 1 << 20, 24),
        Errno::EINVAL,
        "openat2 unknown resolve",
    )?;
    expect_errno(
        open2("/", 0, RESOLVE_BENEATH, 24),
        Errno::EXDEV,
        "RESOLVE_BENEATH of /",
    )?;
    // The cwd is elsewhere: a path with `..` through the test's directory stays beneath it
    // only as long as it never climbs above the start.
    let fd = open2(&path, O_RDONLY as u64, RESOLVE_NO_SYMLINKS, 24).what("NO_SYMLINKS")?;
    let _ = sys::close(fd as Fd);
    Ok(())
}

/// RESOLVE_NO_SYMLINKS refuses a path through a symbolic link (ELOOP).
pub fn openat2_no_symlinks(cx: &Ctx) -> TestResult {
    let (path, link) = (cx.path("f"), cx.path("l"));
    put_file(&path, b"x")?;
    sys::symlink(&path, &link).what("symlink")?;
    let c = cstr(&link);
    let how: [u64; 3] = [O_RDONLY as u64, 0, RESOLVE_NO_SYMLINKS];
    // SAFETY: `c` is a NUL-terminated path, `how` 24 readable bytes.
    let r = ret(unsafe {
        syscall4(
            SYS_OPENAT2,
            AT_FDCWD as usize,
            c.as_ptr() as usize,
            how.as_ptr() as usize,
            24,
        )
    });
    expect_errno(
        r,
        Errno::ELOOP,
        "openat2 RESOLVE_NO_SYMLINKS through a link",
    )
}

fn fallocate(fd: Fd, mode: u32, offset: i64, len: i64) -> SysResult<usize> {
    // SAFETY: no pointers.
    ret(unsafe {
        syscall4(
            SYS_FALLOCATE,
            fd as usize,
            mode as usize,
            offset as usize,
            len as usize,
        )
    })
}

/// fallocate: mode 0 makes the file longer (never shorter), KEEP_SIZE leaves its size,
/// PUNCH_HOLE without KEEP_SIZE and the range-moving modes (COLLAPSE, INSERT) are
/// EOPNOTSUPP, and bad input gets Linux's errno (PUNCH_HOLE and ZERO_RANGE themselves:
/// mmap_tests::fallocate_punch_and_zero_range).
pub fn fallocate_modes(cx: &Ctx) -> TestResult {
    let path = cx.path("fa");
    put_file(&path, b"0123456789")?;
    let fd = sys::open(&path, O_RDWR, 0).what("open")?;
    let r = (|| -> TestResult {
        fallocate(fd, 0, 4, 4).what("fallocate inside")?;
        ensure!(
            sys::fstat(fd).what("fstat")?.st_size == 10,
            "fallocate inside the file changed its size"
        );
        fallocate(fd, 0, 8, 4092).what("fallocate past the end")?;
        ensure!(
            sys::fstat(fd).what("fstat")?.st_size == 4100,
            "fallocate did not grow the file to 4100"
        );
        same_bytes(&read_back(fd, 0, 12)?, b"0123456789\0\0", "the grown file")?;
        fallocate(fd, 1, 0, 1 << 16).what("fallocate KEEP_SIZE")?;
        ensure!(
            sys::fstat(fd).what("fstat")?.st_size == 4100,
            "KEEP_SIZE changed the size"
        );
        expect_errno(
            fallocate(fd, 2, 0, 1),
            Errno::EOPNOTSUPP,
            "PUNCH_HOLE alone",
        )?;
        expect_errno(fallocate(fd, 0x100, 0, 1), Errno::EOPNOTSUPP, "mode 0x100")?;
        expect_errno(
            fallocate(fd, 0x9, 0, 1),
            Errno::EOPNOTSUPP,
            "COLLAPSE|KEEP_SIZE",
        )?;
        expect_errno(fallocate(fd, 0, 0, 0), Errno::EINVAL, "len 0")?;
        expect_errno(fallocate(fd, 0, -1, 1), Errno::EINVAL, "offset -1")?;
        expect_errno(fallocate(fd, 0, i64::MAX, 1), Errno::EFBIG, "end past 2^63")
    })();
    let _ = sys::close(fd);
    r?;
    let ro = sys::open(&path, O_RDONLY, 0).what("open read-only")?;
    let bad = fallocate(ro, 0, 0, 1);
    let _ = sys::close(ro);
    expect_errno(bad, Errno::EBADF, "fallocate of a read-only descriptor")
}

/// sendfile and splice with a socket: a file sent into a stream socket arrives whole; a pipe
/// spliced into a socket and the socket spliced into another pipe carry the bytes; sendfile
/// into a full non-blocking socket is EAGAIN; splice out of an unconnected stream socket is
/// EINVAL (Linux's answer).
pub fn splice_sockets(cx: &Ctx) -> TestResult {
    const SOCK_STREAM: u32 = 1;
    const SOCK_DGRAM: u32 = 2;
    const SOCK_NONBLOCK: u32 = 0o4000;
    let src = cx.path("sock-src");
    put_file(&src, b"0123456789")?;
    let fin = sys::open(&src, O_RDONLY, 0).what("open src")?;
    let (a, b) = sys::socketpair(SOCK_STREAM).what("socketpair")?;
    let (r1, w1) = sys::pipe2(0).what("pipe2")?;
    let (r2, w2) = sys::pipe2(0).what("pipe2")?;
    let (da, db) = sys::socketpair(SOCK_DGRAM | SOCK_NONBLOCK).what("dgram pair")?;
    // SAFETY: no pointer arguments.
    let lone = ret(unsafe { syscall3(SYS_SOCKET, 1, SOCK_STREAM as usize, 0) }).what("socket");
    let res = (|| -> TestResult {
        ensure!(
            sendfile(a, fin, None, 100).what("sendfile into a socket")? == 10,
            "sendfile into a socket sent a part"
        );
        let mut buf = [0u8; 32];
        let n = sys::read(b, &mut buf).what("read the socket")?;
        same_bytes(&buf[..n], b"0123456789", "what sendfile sent")?;
        sys::write(w1, b"through a socket").what("write the pipe")?;
        ensure!(
            splice(r1, None, a, 100, 0).what("splice a pipe into a socket")? == 16,
            "splice into a socket moved a part"
        );
        ensure!(
            splice(b, None, w2, 100, 0).what("splice a socket into a pipe")? == 16,
            "splice out of a socket moved a part"
        );
        let n = sys::read(r2, &mut buf).what("read the second pipe")?;
        same_bytes(
            &buf[..n],
            b"through a socket",
            "what went through the socket",
        )?;
        // A datagram socket whose peer's queue is full: EAGAIN, as write(2) says.
        while sys::write(da, b"x").is_ok() {}
        let mut off = 0i64;
        expect_errno(
            sendfile(da, fin, Some(&mut off), 1),
            Errno::EAGAIN,
            "sendfile into a full non-blocking socket",
        )?;
        expect_errno(
            splice(*lone.as_ref().map_err(|e| e.clone())? as Fd, None, w2, 1, 0),
            Errno::EINVAL,
            "splice out of an unconnected stream socket",
        )?;
        Ok(())
    })();
    for fd in [fin, a, b, r1, w1, r2, w2, da, db] {
        let _ = sys::close(fd);
    }
    if let Ok(l) = lone {
        let _ = sys::close(l as Fd);
    }
    res
}

/// Byte `i` of the stream [`pipe_streams_in_order`] sends: not periodic at the pipe's size.
fn stream_byte(i: usize) -> u8 {
    ((i * 7) ^ (i >> 11) ^ (i >> 19)) as u8
}

/// Check `got` against the stream from byte `from` on.
fn check_stream(got: &[u8], from: usize, what: &str) -> TestResult {
    match got
        .iter()
        .enumerate()
        .find(|&(k, &b)| b != stream_byte(from + k))
    {
        Some((k, &b)) => Err(format!(
            "{what}: byte {} is {b:#x}, sent {:#x}",
            from + k,
            stream_byte(from + k)
        )),
        None => Ok(()),
    }
}

/// Bytes through a pipe arrive whole and in order whatever the pieces: a child writes 3 MiB
/// in pieces of odd sizes around the pipe's 64 KiB (so the ring's contents wrap), the parent
/// reads in other odd sizes; and bytes a splice takes out of a wrapped pipe but cannot
/// deliver (a full non-blocking socket) go back in front, in order.
pub fn pipe_streams_in_order(_cx: &Ctx) -> TestResult {
    const TOTAL: usize = 3 << 20;
    let (r, w) = sys::pipe2(0).what("pipe2")?;
    let pid = sys::fork().what("fork")?;
    if pid == 0 {
        let _ = sys::close(r);
        let sizes = [1, 4095, 4097, 65536, 70001, 123, 65535];
        let piece: Vec<u8> = (0..TOTAL).map(stream_byte).collect();
        let mut at = 0;
        for k in 0.. {
            if at == TOTAL {
                break;
            }
            let n = sizes[k % sizes.len()].min(TOTAL - at);
            match sys::write(w, &piece[at..at + n]) {
                Ok(put) if put > 0 => at += put,
                _ => sys::exit(1),
            }
        }
        sys::exit(0);
    }
    let _ = sys::close(w);
    let sizes = [7, 65536, 100_000, 3, 4096, 65537];
    let mut buf = vec![0u8; 100_000];
    let mut at = 0;
    let read_all = (|| -> TestResult {
        for k in 0.. {
            let want = sizes[k % sizes.len()];
            let n = sys::read(r, &mut buf[..want]).what("read the pipe")?;
            if n == 0 {
                break;
            }
            check_stream(&buf[..n], at, "read from the pipe")?;
            at += n;
        }
        Ok(())
    })();
    let _ = sys::close(r);
    let (_, status) = sys::waitpid(pid).what("wait4")?;
    read_all?;
    ensure!(
        status.exited() && status.exit_code() == 0,
        "writer: status {:#x}",
        status.0
    );
    ensure!(at == TOTAL, "read {at} bytes of {TOTAL}");

    // A wrapped ring: 60000 in, 50000 out, 30000 in; then a splice of its first 10000 that
    // cannot deliver them.
    const SOCK_DGRAM: u32 = 2;
    const SOCK_NONBLOCK: u32 = 0o4000;
    let all: Vec<u8> = (0..90_000).map(stream_byte).collect();
    let (r, w) = sys::pipe2(0).what("pipe2")?;
    let (da, db) = sys::socketpair(SOCK_DGRAM | SOCK_NONBLOCK).what("dgram pair")?;
    let res = (|| -> TestResult {
        ensure!(
            sys::write(w, &all[..60_000]).what("write 60000")? == 60_000,
            "short write"
        );
        let mut got = 0;
        while got < 50_000 {
            let n = sys::read(r, &mut buf[..50_000 - got]).what("read 50000")?;
            check_stream(&buf[..n], got, "the first read")?;
            got += n;
        }
        ensure!(
            sys::write(w, &all[60_000..]).what("write 30000")? == 30_000,
            "short write"
        );
        while sys::write(da, b"x").is_ok() {}
        let moved = splice(r, None, da, 10_000, 0).unwrap_or(0);
        let _ = sys::close(w);
        let mut at = 50_000 + moved;
        loop {
            let n = sys::read(r, &mut buf).what("read the rest")?;
            if n == 0 {
                break;
            }
            check_stream(&buf[..n], at, "after the splice")?;
            at += n;
        }
        ensure!(at == 90_000, "the pipe gave back up to byte {at} of 90000");
        Ok(())
    })();
    for fd in [r, w, da, db] {
        let _ = sys::close(fd);
    }
    res
}
