//! execve tests: programs mapped from the page cache (text and read-only data shared between
//! the processes running one binary, data private, bss zero), a 200 MiB binary, truncated
//! programs and `PT_INTERP` entries. They run `/bin/exectarget` (user-tests) and copies of
//! it edited here: the copies get a new program header table at their end (the linker script
//! leaves no spare entry), with one entry added.

use user_tests::prelude::*;

use crate::{ensure, Check, Ctx, TestResult};

const TARGET: &str = "/bin/exectarget";
const PHDR_SIZE: usize = 56;
const PT_LOAD: u32 = 1;
const PT_INTERP: u32 = 3;
const PF_R: u32 = 4;

/// `MemFree` of /proc/meminfo, in KiB.
fn mem_free_kib() -> Result<u64, String> {
    let f = File::open_read("/proc/meminfo").what("open /proc/meminfo")?;
    let mut buf = vec![0u8; 4096];
    let n = f.read(&mut buf).what("read /proc/meminfo")?;
    let text = core::str::from_utf8(&buf[..n]).map_err(|_| String::from("meminfo not UTF-8"))?;
    text.lines()
        .find_map(|l| l.strip_prefix("MemFree:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| String::from("no MemFree line in /proc/meminfo"))
}

/// The whole of a file.
fn read_all(path: &str) -> Result<Vec<u8>, String> {
    let f = File::open_read(path).what(&format!("open {path}"))?;
    let size = sys::fstat(f.fd()).what("fstat")?.st_size as usize;
    let mut buf = vec![0u8; size];
    let n = f.read_full(&mut buf).what(&format!("read {path}"))?;
    ensure!(n == size, "{path}: read {n} of {size} bytes");
    Ok(buf)
}

/// Write `bytes` to a new executable file `path`.
fn write_program(path: &str, bytes: &[u8]) -> TestResult {
    let f =
        File::open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o755).what(&format!("create {path}"))?;
    f.write_all(bytes).what(&format!("write {path}"))?;
    f.close().what("close")?;
    // FAT has no mode bits to set (its files are executable): an error there is fine.
    let _ = sys::chmod(path, 0o755);
    Ok(())
}

/// Fork a child that execs `path` with `argv`: `Ok(Err(errno))` if execve failed, else the
/// program's wait status.
fn run(path: &str, argv: &[&str]) -> Result<Result<sys::WaitStatus, Errno>, String> {
    let pid = sys::fork().what("fork")?;
    if pid == 0 {
        let e = sys::execve(path, argv);
        // 100 + errno: tells a failed execve from the program's own exit codes (0..2).
        sys::exit(100 + e.0);
    }
    let (_, st) = sys::waitpid(pid).what("wait4")?;
    if st.exited() && st.exit_code() >= 100 {
        return Ok(Err(Errno(st.exit_code() - 100)));
    }
    Ok(Ok(st))
}

/// execve of `path` must fail with `want`.
fn expect_exec_errno(path: &str, want: Errno, what: &str) -> TestResult {
    match run(path, &[path, "data"])? {
        Err(e) if e == want => Ok(()),
        Err(e) => Err(format!(
            "{what}: expected {}, got {}",
            want.name(),
            e.name()
        )),
        Ok(st) => Err(format!(
            "{what}: expected {}, but it ran (status {:#x})",
            want.name(),
            st.0
        )),
    }
}

/// A program run to its end must exit 0.
fn expect_runs(path: &str, argv: &[&str], what: &str) -> TestResult {
    match run(path, argv)? {
        Ok(st) if st.exited() && st.exit_code() == 0 => Ok(()),
        Ok(st) => Err(format!("{what}: wait status {:#x}", st.0)),
        Err(e) => Err(format!("{what}: execve failed with {}", e.name())),
    }
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

/// One ELF64 program header.
fn phdr(ptype: u32, flags: u32, off: u64, vaddr: u64, filesz: u64, memsz: u64) -> [u8; 56] {
    let mut p = [0u8; PHDR_SIZE];
    p[0..4].copy_from_slice(&ptype.to_le_bytes());
    p[4..8].copy_from_slice(&flags.to_le_bytes());
    p[8..16].copy_from_slice(&off.to_le_bytes());
    p[16..24].copy_from_slice(&vaddr.to_le_bytes());
    p[24..32].copy_from_slice(&vaddr.to_le_bytes());
    p[32..40].copy_from_slice(&filesz.to_le_bytes());
    p[40..48].copy_from_slice(&memsz.to_le_bytes());
    p[48..56].copy_from_slice(&4096u64.to_le_bytes());
    p
}

/// `orig` (an ELF executable) with its program headers copied to a new table at its end and
/// one more entry, `extra(end of the new table)`, added: returns the new file's bytes (the
/// entry's data goes at or after their end).
fn with_extra_phdr(orig: &[u8], extra: impl FnOnce(u64) -> [u8; 56]) -> Vec<u8> {
    let phoff = u64_at(orig, 32) as usize;
    let phnum = u16_at(orig, 56) as usize;
    let mut out = orig.to_vec();
    out.resize(orig.len().next_multiple_of(8), 0);
    let new_phoff = out.len();
    let end = new_phoff + (phnum + 1) * PHDR_SIZE;
    out.extend_from_slice(&orig[phoff..phoff + phnum * PHDR_SIZE]);
    out.extend_from_slice(&extra(end as u64));
    out[32..40].copy_from_slice(&(new_phoff as u64).to_le_bytes());
    out[56..58].copy_from_slice(&((phnum + 1) as u16).to_le_bytes());
    out
}

/// Eight processes of one program that each read its 4 MiB of read-only data take much less
/// than 8 times that: the text and read-only data are the file's page-cache frames, mapped in
/// every process (a loader that copies the segments takes over 32 MiB). Runs the program
/// from the root file system (FAT32 in dbfs-os's test boot).
pub fn exec_shares_text_frames(_cx: &Ctx) -> TestResult {
    const N: usize = 8;
    let (r, w) = sys::pipe2(0).what("pipe")?;
    let (hold_r, hold_w) = sys::pipe2(0).what("pipe")?;
    let (rs, hws) = (format!("{hold_r}"), format!("{w}"));
    let before = mem_free_kib()?;
    let mut pids = Vec::new();
    for _ in 0..N {
        let pid = sys::fork().what("fork")?;
        if pid == 0 {
            let _ = sys::close(r);
            let _ = sys::close(hold_w);
            let e = sys::execve(TARGET, &[TARGET, "hold", &rs, &hws]);
            sys::exit(100 + e.0);
        }
        pids.push(pid);
    }
    let _ = sys::close(w);
    let _ = sys::close(hold_r);
    // Every child has read the table once N bytes came (a child that failed closes its end).
    let mut ready = 0;
    let mut b = [0u8; 1];
    while ready < N && sys::read(r, &mut b).unwrap_or(0) == 1 {
        ready += 1;
    }
    let during = mem_free_kib();
    let _ = sys::close(hold_w);
    let mut bad = Vec::new();
    for pid in pids {
        let (_, st) = sys::waitpid(pid).what("wait4")?;
        if !(st.exited() && st.exit_code() == 0) {
            bad.push(st.0);
        }
    }
    let _ = sys::close(r);
    ensure!(bad.is_empty(), "children failed: wait statuses {bad:x?}");
    ensure!(ready == N, "only {ready} of {N} children got ready");
    let taken = before.saturating_sub(during?);
    ensure!(
        taken < 16 << 10,
        "{N} processes each reading 4 MiB of read-only data took {taken} KiB"
    );
    Ok(())
}

/// A process's stores to its initialised data and bss stay its own: another process of the
/// same program, started while they are in place, sees the initial data and a zero bss (the
/// bss begins inside the last data page, whose file bytes past the data are not zero), and
/// the program file is unchanged.
pub fn exec_data_private_bss_zero(_cx: &Ctx) -> TestResult {
    let file_before = read_all(TARGET)?;
    let (r, w) = sys::pipe2(0).what("pipe")?;
    let (hold_r, hold_w) = sys::pipe2(0).what("pipe")?;
    let (rs, ws) = (format!("{hold_r}"), format!("{w}"));
    let first = sys::fork().what("fork")?;
    if first == 0 {
        let _ = sys::close(r);
        let _ = sys::close(hold_w);
        let e = sys::execve(TARGET, &[TARGET, "data", &rs, &ws]);
        sys::exit(100 + e.0);
    }
    let _ = sys::close(w);
    let _ = sys::close(hold_r);
    let mut b = [0u8; 1];
    let got_ready = sys::read(r, &mut b).unwrap_or(0) == 1;
    let second = expect_runs(TARGET, &[TARGET, "data"], "a second process of the program");
    let _ = sys::close(hold_w);
    let _ = sys::close(r);
    let (_, st) = sys::waitpid(first).what("wait4")?;
    ensure!(
        got_ready,
        "the first process never got ready (status {:#x})",
        st.0
    );
    ensure!(
        st.exited() && st.exit_code() == 0,
        "the first process found its data or bss wrong (status {:#x})",
        st.0
    );
    second?;
    ensure!(
        read_all(TARGET)? == file_before,
        "the program file changed after processes stored into their data"
    );
    Ok(())
}

/// A program cut short: inside the ELF header ENOEXEC (Linux), inside the program headers
/// EIO (Linux's answer to a short read of them), inside a segment's bytes ENOEXEC (Linux
/// maps past the end of the file and faults later; dbfs-os refuses the program).
pub fn exec_truncated_elf(cx: &Ctx) -> TestResult {
    let orig = read_all(TARGET)?;
    let phoff = u64_at(&orig, 32) as usize;
    let cases = [
        (40, Errno::ENOEXEC, "cut inside the ELF header"),
        (
            phoff + PHDR_SIZE + 10,
            Errno::EIO,
            "cut inside the program headers",
        ),
        (orig.len() / 2, Errno::ENOEXEC, "cut inside the segments"),
    ];
    for (len, want, what) in cases {
        let path = cx.path("cut");
        write_program(&path, &orig[..len])?;
        expect_exec_errno(&path, want, what)?;
    }
    // The whole copy runs (the cuts are what failed).
    let path = cx.path("whole");
    write_program(&path, &orig)?;
    expect_runs(&path, &[&path, "data"], "the uncut copy")
}

/// `PT_INTERP`, as Linux reads it: the path ends at its first NUL (padding after it is
/// allowed) and names a file that must exist (ENOENT) and be an ELF program (ELIBBAD); an
/// entry that does not end in NUL is ENOEXEC, an empty path ENOENT.
pub fn exec_interp_path(cx: &Ctx) -> TestResult {
    let orig = read_all(TARGET)?;
    let text = cx.path("not-elf");
    write_program(&text, b"just some text, no ELF header here at all\n")?;
    let missing = format!("{}/no-such-loader", cx.dir);
    let padded = |p: &str| {
        let mut b = p.as_bytes().to_vec();
        b.resize(b.len() + 24, 0);
        b
    };
    let cases: [(Vec<u8>, Errno, &str); 4] = [
        (
            padded(&missing),
            Errno::ENOENT,
            "a missing loader, NUL-padded",
        ),
        (
            padded(&text),
            Errno::ELIBBAD,
            "a loader that is not ELF, NUL-padded",
        ),
        (
            text.as_bytes().to_vec(),
            Errno::ENOEXEC,
            "no NUL at the end",
        ),
        (vec![0u8; 16], Errno::ENOENT, "an empty path"),
    ];
    for (interp, want, what) in cases {
        let mut prog = with_extra_phdr(&orig, |end| {
            phdr(
                PT_INTERP,
                PF_R,
                end,
                0,
                interp.len() as u64,
                interp.len() as u64,
            )
        });
        prog.extend_from_slice(&interp);
        let path = cx.path("interp");
        write_program(&path, &prog)?;
        expect_exec_errno(&path, want, what)?;
    }
    Ok(())
}

/// A 200 MiB program (a read-only segment of 51200 pages added to a copy of exectarget, the
/// file sparse but for the pages checked) starts and reads its pages: exec reads only the
/// headers, the pages come at their first touch.
pub fn exec_big_binary(cx: &Ctx) -> TestResult {
    const PAGES: u64 = 51200;
    const AT: u64 = 0x2_0000_0000;
    let orig = read_all(TARGET)?;
    let mut seg_off = 0;
    let prog = with_extra_phdr(&orig, |end| {
        seg_off = end.next_multiple_of(4096);
        phdr(PT_LOAD, PF_R, seg_off, AT, PAGES * 4096, PAGES * 4096)
    });
    let path = cx.path("big");
    write_program(&path, &prog)?;
    let f = File::open(&path, O_WRONLY, 0).what("open big")?;
    sys::ftruncate(f.fd(), seg_off + PAGES * 4096).what("ftruncate big")?;
    for i in [0, 1, PAGES / 2, PAGES - 1] {
        let page = [(i % 251 + 1) as u8; 4096];
        f.pwrite_all(&page, seg_off + i * 4096).what("pwrite big")?;
    }
    f.close().what("close big")?;
    let size = sys::stat(&path).what("stat big")?.st_size;
    ensure!(size > 200 << 20, "the program is only {size} bytes");
    let (addr, pages) = (format!("{AT:#x}"), format!("{PAGES}"));
    expect_runs(
        &path,
        &[&path, "touch", &addr, &pages],
        "the 200 MiB program",
    )
}

/// A program's file may not be opened for writing while a process runs it (ETXTBSY), also
/// with O_RDWR; reading it may; once the process has exited, writing may again.
pub fn exec_text_busy(cx: &Ctx) -> TestResult {
    let path = cx.path("busy");
    write_program(&path, &read_all(TARGET)?)?;
    let (r, w) = sys::pipe2(0).what("pipe")?;
    let (hold_r, hold_w) = sys::pipe2(0).what("pipe")?;
    let (rs, ws) = (format!("{hold_r}"), format!("{w}"));
    let pid = sys::fork().what("fork")?;
    if pid == 0 {
        let _ = sys::close(r);
        let _ = sys::close(hold_w);
        let e = sys::execve(&path, &[&path, "hold", &rs, &ws]);
        sys::exit(100 + e.0);
    }
    let _ = sys::close(w);
    let _ = sys::close(hold_r);
    let mut b = [0u8; 1];
    let ready = sys::read(r, &mut b).unwrap_or(0) == 1;
    let wr = sys::open(&path, O_WRONLY, 0);
    let rw = sys::open(&path, O_RDWR, 0);
    let rd = sys::open(&path, O_RDONLY, 0);
    let _ = sys::close(hold_w);
    let _ = sys::close(r);
    let (_, st) = sys::waitpid(pid).what("wait4")?;
    for fd in [&wr, &rw, &rd].into_iter().flatten() {
        let _ = sys::close(*fd);
    }
    ensure!(ready, "the program did not start (status {:#x})", st.0);
    crate::expect_errno(wr, Errno::ETXTBSY, "open O_WRONLY of a running program")?;
    crate::expect_errno(rw, Errno::ETXTBSY, "open O_RDWR of a running program")?;
    rd.what("open O_RDONLY of a running program")?;
    let fd = sys::open(&path, O_WRONLY, 0).what("open O_WRONLY once the program exited")?;
    let _ = sys::close(fd);
    Ok(())
}
