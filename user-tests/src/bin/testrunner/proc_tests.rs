//! Process and memory tests: getpid, fork/exit/wait4, execve, brk, mmap, clocks.

use user_tests::prelude::*;
use user_tests::probe;
use user_tests::time::now_ns;

use crate::{ensure, expect_errno, Check, Ctx, TestResult};

pub fn getpid_positive(_cx: &Ctx) -> TestResult {
    let pid = sys::getpid();
    ensure!(pid > 0, "getpid returned {pid}");
    ensure!(sys::getpid() == pid, "getpid is not stable");
    sys::sched_yield();
    ensure!(sys::getppid() >= 0, "getppid is negative");
    Ok(())
}

/// Fork a child that exits with `code`; return what wait4 reports.
fn child_exit_code(code: i32) -> Result<(i32, sys::WaitStatus, i32), String> {
    let pid = sys::fork().what("fork")?;
    if pid == 0 {
        sys::exit(code);
    }
    let (got, status) = sys::waitpid(pid).what("wait4")?;
    Ok((got, status, pid))
}

pub fn fork_exit_wait(_cx: &Ctx) -> TestResult {
    for code in [42, 0, 255] {
        let (got, status, pid) = child_exit_code(code)?;
        ensure!(got == pid, "wait4 returned pid {got}, the child was {pid}");
        ensure!(
            status.exited(),
            "child did not exit normally (status {:#x})",
            status.0
        );
        ensure!(
            status.exit_code() == code,
            "WEXITSTATUS {} is not {code}",
            status.exit_code()
        );
        expect_errno(
            sys::waitpid(pid),
            Errno::ECHILD,
            "second wait4 on a reaped child",
        )?;
    }
    // wait4(-1): any child.
    let pid = sys::fork().what("fork")?;
    if pid == 0 {
        sys::exit(7);
    }
    let (got, status) = sys::wait4(-1, 0).what("wait4(-1)")?;
    ensure!(
        got == pid && status.exit_code() == 7,
        "wait4(-1) returned ({got}, {:#x})",
        status.0
    );
    Ok(())
}

pub fn fork_copies_memory(_cx: &Ctx) -> TestResult {
    let parent = sys::getpid();
    let mut v = vec![7u8; 10_000];
    let pid = sys::fork().what("fork")?;
    if pid == 0 {
        v[0] += 1;
        v[9_999] += 2;
        let ok = sys::getppid() == parent && sys::getpid() != parent;
        sys::exit(if ok { (v[0] + v[9_999]) as i32 } else { 99 });
    }
    let (_, status) = sys::waitpid(pid).what("wait4")?;
    ensure!(status.exit_code() != 99, "child's getppid/getpid are wrong");
    ensure!(
        status.exit_code() == 17,
        "child saw wrong memory (exit code {})",
        status.exit_code()
    );
    ensure!(
        v[0] == 7 && v[9_999] == 7,
        "the child's writes leaked into the parent"
    );
    Ok(())
}

/// The byte the copy-on-write tests store at offset `i` of their buffer.
fn cow_byte(i: usize) -> u8 {
    ((i / 4096) as u8) ^ ((i % 251) as u8)
}

/// Whether `v` holds [`cow_byte`] everywhere except in `skip`.
fn cow_intact(v: &[u8], skip: core::ops::Range<usize>) -> bool {
    v.iter()
        .enumerate()
        .all(|(i, &b)| skip.contains(&i) || b == cow_byte(i))
}

/// fork shares private pages copy-on-write, and every store lands in the storer's copy only:
/// a child's own stores and the kernel's (a `read(2)` into its buffer), a second child that
/// sees the bytes from before the fork, and the parent's stores and reads once its children
/// are gone (its pages are its own again).
pub fn fork_copy_on_write(_cx: &Ctx) -> TestResult {
    const LEN: usize = 1 << 20;
    let mut v: Vec<u8> = (0..LEN).map(cow_byte).collect();
    let (r, w) = sys::pipe2(0).what("pipe")?;
    ensure!(
        sys::write(w, b"kernel!!").what("write to pipe")? == 8,
        "short pipe write"
    );
    let a = sys::fork().what("fork")?;
    if a == 0 {
        let n = sys::read(r, &mut v[4096 + 100..4096 + 108]);
        for p in (0..LEN / 4096).step_by(2) {
            v[p * 4096 + 7] = 0xee;
        }
        let ok = n == Ok(8)
            && &v[4196..4204] == b"kernel!!"
            && (0..LEN).all(|i| {
                let p = i / 4096;
                if p % 2 == 0 && i % 4096 == 7 {
                    v[i] == 0xee
                } else {
                    (4196..4204).contains(&i) || v[i] == cow_byte(i)
                }
            });
        sys::exit(i32::from(!ok));
    }
    let (_, st) = sys::waitpid(a).what("wait4")?;
    ensure!(
        st.exited() && st.exit_code() == 0,
        "the child's stores or its read(2) did not land in its copy (status {:#x})",
        st.0
    );
    ensure!(
        cow_intact(&v, 0..0),
        "the child's stores reached the parent"
    );
    let b = sys::fork().what("fork")?;
    if b == 0 {
        sys::exit(i32::from(!cow_intact(&v, 0..0)));
    }
    let (_, st) = sys::waitpid(b).what("wait4")?;
    ensure!(
        st.exited() && st.exit_code() == 0,
        "a second child does not see the bytes from before its fork"
    );
    for p in 0..LEN / 4096 {
        v[p * 4096 + 9] ^= 0xff;
    }
    ensure!(
        sys::write(w, b"parent!!").what("write to pipe")? == 8,
        "short pipe write"
    );
    ensure!(
        sys::read(r, &mut v[8192..8200]).what("read from pipe")? == 8,
        "short pipe read"
    );
    let _ = sys::close(r);
    let _ = sys::close(w);
    ensure!(
        &v[8192..8200] == b"parent!!",
        "the parent's read(2) is not in its buffer"
    );
    ensure!(
        (0..LEN).all(|i| (8192..8200).contains(&i)
            || v[i]
                == if i % 4096 == 9 {
                    cow_byte(i) ^ 0xff
                } else {
                    cow_byte(i)
                }),
        "the parent's stores after its children left are wrong"
    );
    Ok(())
}

/// The number after `prefix` on a line of the /proc file `path` (a trailing "kB" dropped).
fn proc_number(path: &str, prefix: &str) -> Result<u64, String> {
    let f = File::open_read(path).what(&format!("open {path}"))?;
    let mut buf = vec![0u8; 4096];
    let n = f.read(&mut buf).what(&format!("read {path}"))?;
    let text = core::str::from_utf8(&buf[..n]).map_err(|_| format!("{path} is not UTF-8"))?;
    text.lines()
        .find_map(|l| l.strip_prefix(prefix))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| format!("no {prefix:?} line in {path}"))
}

/// `MemFree` of /proc/meminfo, in KiB.
fn mem_free_kib() -> Result<u64, String> {
    proc_number("/proc/meminfo", "MemFree:")
}

/// A fork of a process with 32 MiB of private memory in use takes much less than 32 MiB:
/// the child shares the pages until one side stores to them.
pub fn fork_does_not_copy(_cx: &Ctx) -> TestResult {
    const LEN: usize = 32 << 20;
    let v: Vec<u8> = (0..LEN).map(cow_byte).collect();
    let (r, w) = sys::pipe2(0).what("pipe")?;
    let before = mem_free_kib()?;
    let pid = sys::fork().what("fork")?;
    if pid == 0 {
        let mut b = [0u8; 1];
        let _ = sys::read(r, &mut b);
        sys::exit(i32::from(!cow_intact(&v, 0..0)));
    }
    let during = mem_free_kib();
    let _ = sys::write(w, b"x");
    let (_, st) = sys::waitpid(pid).what("wait4")?;
    let _ = sys::close(r);
    let _ = sys::close(w);
    let during = during?;
    let taken = before.saturating_sub(during);
    ensure!(
        taken < 8 << 10,
        "the fork took {taken} KiB of memory for a process with 32 MiB in use"
    );
    ensure!(
        st.exited() && st.exit_code() == 0,
        "the child does not see the parent's memory"
    );
    Ok(())
}

/// `ctxt` of /proc/stat: threads switched to since boot.
fn context_switches() -> Result<u64, String> {
    proc_number("/proc/stat", "ctxt ")
}

/// /proc/stat counts context switches (`ctxt`, as Linux's): a parent and a child that hand the
/// CPU to each other 50 times through a pair of pipes add at least 100 switches on one hart.
/// On several each runs on a hart of its own, and a read finds its byte already there when the
/// other side was quick enough (no switch): then at least 50, one wait a round trip.
pub fn proc_stat_counts_switches(_cx: &Ctx) -> TestResult {
    // down: parent to child; up: child to parent.
    let (down_r, down_w) = sys::pipe2(0).what("pipe")?;
    let (up_r, up_w) = sys::pipe2(0).what("pipe")?;
    let before = context_switches()?;
    let pid = sys::fork().what("fork")?;
    if pid == 0 {
        let mut b = [0u8; 1];
        for _ in 0..50 {
            if sys::read(down_r, &mut b) != Ok(1) || sys::write(up_w, b"y") != Ok(1) {
                sys::exit(1);
            }
        }
        sys::exit(0);
    }
    let mut b = [0u8; 1];
    let mut rounds = 0;
    for _ in 0..50 {
        if sys::write(down_w, b"x") != Ok(1) || sys::read(up_r, &mut b) != Ok(1) {
            break;
        }
        rounds += 1;
    }
    let after = context_switches();
    let (_, st) = sys::waitpid(pid).what("wait4")?;
    for fd in [down_r, down_w, up_r, up_w] {
        let _ = sys::close(fd);
    }
    ensure!(
        rounds == 50 && st.exited() && st.exit_code() == 0,
        "the ping-pong stopped after {rounds} rounds"
    );
    let grew = after?.saturating_sub(before);
    let least = if online_cpus() == 1 { 100 } else { 50 };
    ensure!(
        grew >= least,
        "ctxt grew by {grew} over 50 round trips between two processes (want {least})"
    );
    Ok(())
}

/// The CPUs this process may run on (sched_getaffinity's mask), at least 1.
fn online_cpus() -> u32 {
    let mut mask = [0u64; 16];
    // SAFETY: `mask` is a writable buffer of the size passed.
    let r = unsafe {
        user_tests::raw::syscall3(
            abi::syscall::SYS_SCHED_GETAFFINITY,
            0,
            core::mem::size_of_val(&mask),
            mask.as_mut_ptr() as usize,
        )
    };
    let n: u32 = mask.iter().map(|w| w.count_ones()).sum();
    if r < 0 {
        1
    } else {
        n.max(1)
    }
}

/// Run `work` while forked children spin, one per CPU (so that, with several harts too,
/// another process is always ready to run); `work` returns the voluntary and involuntary
/// context switches it counted around its calls (getrusage's `ru_nvcsw`/`ru_nivcsw`).
fn with_spinning_child(
    work: impl FnOnce() -> Result<(u64, u64), String>,
) -> Result<(u64, u64), String> {
    const PAGE: usize = 4096;
    let stop = sys::mmap(
        0,
        PAGE,
        PROT_READ | PROT_WRITE,
        MAP_SHARED | MAP_ANONYMOUS,
        -1,
        0,
    )
    .what("mmap")?;
    let children = online_cpus() as usize;
    let mut pids = Vec::new();
    for k in 0..children {
        let pid = sys::fork().what("fork")?;
        if pid == 0 {
            stop.set(1 + k, 1); // running
            while stop.get(0) == 0 {
                core::hint::spin_loop();
            }
            sys::exit(0);
        }
        pids.push(pid);
    }
    while (0..children).any(|k| stop.get(1 + k) == 0) {
        sys::sched_yield();
    }
    let counted = work();
    stop.set(0, 1);
    for pid in pids {
        let (_, st) = sys::waitpid(pid).what("wait4")?;
        ensure!(
            st.exited() && st.exit_code() == 0,
            "a spinning child did not exit cleanly (status {:#x})",
            st.0
        );
    }
    counted
}

/// While a process waits in fsync for the disk to flush, another runnable process gets the
/// CPU (a dbfs barrier's flush gives it away): the caller's voluntary context switches
/// (getrusage's `ru_nvcsw`, counted by the kernel when a thread waits) grow during the call.
/// A child spins, so that another process is always ready to run. Preemption (a timer
/// interrupt pending when the call returns) counts as involuntary and does not pass the test.
pub fn fsync_wait_lets_others_run(cx: &Ctx) -> TestResult {
    let path = cx.path("fsyncwait");
    let counted = with_spinning_child(|| {
        let f = File::open(&path, O_RDWR | O_CREAT | O_TRUNC, 0o644).what("create")?;
        let data = vec![0x5au8; 256 << 10];
        let (mut voluntary, mut involuntary) = (0, 0);
        for round in 0..4u64 {
            f.pwrite_all(&data, round << 18).what("pwrite")?;
            let before = sys::context_switches_self().what("getrusage")?;
            sys::fsync(f.fd()).what("fsync")?;
            let after = sys::context_switches_self().what("getrusage")?;
            voluntary += after.0 - before.0;
            involuntary += after.1 - before.1;
        }
        Ok((voluntary, involuntary))
    });
    let _ = sys::unlink(&path);
    let (voluntary, involuntary) = counted?;
    ensure!(
        voluntary > 0,
        "four fsyncs never gave the CPU to the ready child while they waited for the disk \
         ({involuntary} involuntary switches)"
    );
    Ok(())
}

/// The disks' completion interrupts taken so far: the sum of /proc/interrupts' virtio-blk
/// rows (Linux's layout: a `CPUn` header, then per source its count on each hart).
fn disk_interrupts() -> Result<u64, String> {
    let text = String::from_utf8(crate::get_file("/proc/interrupts")?)
        .map_err(|_| String::from("/proc/interrupts is not UTF-8"))?;
    let mut lines = text.lines();
    ensure!(
        lines
            .next()
            .is_some_and(|h| h.trim_start().starts_with("CPU0")),
        "/proc/interrupts has no CPU0 header: {text:?}"
    );
    let mut total = 0;
    for line in lines.filter(|l| l.contains("virtio-blk")) {
        let counts = line
            .split_whitespace()
            .skip(1)
            .map_while(|w| w.parse::<u64>().ok());
        total += counts.sum::<u64>();
    }
    Ok(total)
}

/// An fsync with no other process to run sleeps until the disk's completion interrupt (the
/// PLIC routes it to the boot hart): the kernel counts the interrupts it took in
/// /proc/interrupts, and four fsyncs of fresh data must add to them. A kernel that polls, or
/// whose waiter only wakes on its timer backstop, takes none.
pub fn fsync_wait_takes_interrupts(cx: &Ctx) -> TestResult {
    let path = cx.path("fsyncirq");
    let before = disk_interrupts()?;
    let f = File::open(&path, O_RDWR | O_CREAT | O_TRUNC, 0o644).what("create")?;
    let data = vec![0xa5u8; 64 << 10];
    for round in 0..4u64 {
        f.pwrite_all(&data, round << 16).what("pwrite")?;
        sys::fsync(f.fd()).what("fsync")?;
    }
    drop(f);
    let _ = sys::unlink(&path);
    let after = disk_interrupts()?;
    ensure!(
        after > before,
        "four fsyncs took no disk interrupt ({before} before, {after} after)"
    );
    Ok(())
}

/// dbfs's periodic write-back comes due while the only runnable process sleeps in fsync,
/// waiting for the disk's flush with kvdb's writer lock held: a 4 KiB write to a file kept
/// open stays buffered (an fsync commits its own file and closed ones; the timer commits
/// buffered data 5 s after it was written) while fsyncs of another file go on for 7 s. With one hart the scheduler's idle pass used to run that write-back itself; it
/// waited for the writer lock on the scheduler's own stack, which cannot give the hart to
/// anyone, so the fsync, woken by its interrupt, never ran again (LTP's fsync02 hung so).
/// Every fsync must return and the buffered bytes must read back.
pub fn writeback_due_during_fsync_wait(cx: &Ctx) -> TestResult {
    let buffered = cx.path("buffered");
    let small = [0x3cu8; 4096];
    let a = File::open(&buffered, O_RDWR | O_CREAT | O_TRUNC, 0o644).what("create")?;
    a.pwrite_all(&small, 0).what("pwrite")?;
    let synced = cx.path("synced");
    let f = File::open(&synced, O_RDWR | O_CREAT | O_TRUNC, 0o644).what("create")?;
    let data = vec![0x96u8; 64 << 10];
    let start = now_ns();
    let mut rounds = 0u64;
    while now_ns() - start < 7_000_000_000 {
        f.pwrite_all(&data, (rounds % 16) << 16).what("pwrite")?;
        sys::fsync(f.fd()).what("fsync")?;
        rounds += 1;
    }
    drop(f);
    drop(a);
    let back = crate::get_file(&buffered)?;
    ensure!(
        back == small,
        "the buffered file reads back {} bytes, not its 4096 (after {rounds} fsyncs)",
        back.len()
    );
    let _ = sys::unlink(&synced);
    let _ = sys::unlink(&buffered);
    Ok(())
}

/// While a single-threaded process waits for the disk to fill a large read (dbfs reads a
/// stored file straight into the caller's pages), another runnable process gets the CPU, and
/// the bytes still land where they belong: 1 MiB preads into a buffer that does not start on
/// a page (malloc'ed, as fio's is), with a spinning child, must count voluntary switches.
pub fn large_read_wait_lets_others_run(cx: &Ctx) -> TestResult {
    const ROUNDS: usize = 12;
    let path = cx.path("readwait");
    let len = 4usize << 20;
    let data: Vec<u8> = (0..len)
        .map(|i| (i % 251) as u8 ^ (i >> 20) as u8)
        .collect();
    put_file_synced(&path, &data)?;
    // A read whose request the device completes before the first poll waits for nothing, so
    // a round may see no switch on a busy host (five rounds in a row did, twice, with other
    // boots beside the test's on the 2 host cores); a kernel that never yields while it waits
    // fails every round. Each round reads the four 1 MiB pieces again: a read that large of a
    // stored file goes from the disk straight into the caller's pages every time.
    let mut tries = String::new();
    for _ in 0..ROUNDS {
        let counted = with_spinning_child(|| {
            let f = File::open(&path, O_RDONLY, 0).what("open")?;
            let mut buf = sys::AnonMap::new((1 << 20) + 4096).what("mmap a buffer")?;
            let (mut voluntary, mut involuntary) = (0, 0);
            for (round, off) in [3usize, 0, 2, 1].into_iter().enumerate() {
                let dst = &mut buf.as_mut_slice()[16 + round..16 + round + (1 << 20) - 512];
                let at = (off << 20) + 512;
                let before = sys::context_switches_self().what("getrusage")?;
                let got = f.pread_full(dst, at as u64).what("pread")?;
                let after = sys::context_switches_self().what("getrusage")?;
                voluntary += after.0 - before.0;
                involuntary += after.1 - before.1;
                let want = &data[at..(at + dst.len()).min(len)];
                if &dst[..got] != want {
                    return Err(format!("1 MiB pread at {at} read the wrong bytes"));
                }
            }
            Ok((voluntary, involuntary))
        });
        let (voluntary, involuntary) = match counted {
            Ok(c) => c,
            Err(e) => {
                let _ = sys::unlink(&path);
                return Err(e);
            }
        };
        if voluntary > 0 {
            let _ = sys::unlink(&path);
            return Ok(());
        }
        tries.push_str(&format!(" {involuntary}"));
    }
    let _ = sys::unlink(&path);
    Err(format!(
        "in {ROUNDS} rounds, four 1 MiB reads never gave the CPU to the ready child while they \
         waited for the disk (involuntary switches per round:{tries})"
    ))
}

/// Write `data` to a new file at `path` and fsync it (its pages are then clean: reads go to
/// the disk).
fn put_file_synced(path: &str, data: &[u8]) -> TestResult {
    let f = File::open(path, O_RDWR | O_CREAT | O_TRUNC, 0o644).what("create")?;
    f.pwrite_all(data, 0).what("pwrite")?;
    sys::fsync(f.fd()).what("fsync")?;
    f.close().what("close")
}

pub fn wait_no_children_echild(_cx: &Ctx) -> TestResult {
    expect_errno(
        sys::wait4(-1, 0),
        Errno::ECHILD,
        "wait4(-1) with no children",
    )?;
    expect_errno(
        sys::wait4(-1, WNOHANG),
        Errno::ECHILD,
        "wait4(-1, WNOHANG) with no children",
    )
}

pub fn execve_missing_enoent(cx: &Ctx) -> TestResult {
    let e = sys::execve("/nonexistent/program", &["program"]);
    ensure!(
        e == Errno::ENOENT,
        "execve of a missing path: expected ENOENT, got {}",
        e.name()
    );
    let e = sys::execve(&cx.path("missing"), &["missing", "arg"]);
    ensure!(
        e == Errno::ENOENT,
        "execve of a missing file: expected ENOENT, got {}",
        e.name()
    );
    Ok(())
}

pub fn brk_growth(_cx: &Ctx) -> TestResult {
    probe::brk_grow_and_use(256 * 1024).map_err(String::from)?;
    // And the allocator (also on brk) still works afterwards.
    let v: Vec<u64> = (0..100_000).collect();
    ensure!(
        v.iter().sum::<u64>() == 4_999_950_000,
        "heap memory after brk test is wrong"
    );
    Ok(())
}

pub fn mmap_anonymous(_cx: &Ctx) -> TestResult {
    let len = 3 * 4096 + 100;
    let mut m = sys::AnonMap::new(len).what("mmap anonymous")?;
    ensure!(
        m.addr() % 4096 == 0,
        "mmap returned an unaligned address {:#x}",
        m.addr()
    );
    let s = m.as_mut_slice();
    ensure!(
        s.iter().all(|&b| b == 0),
        "anonymous memory is not zero-filled"
    );
    for (i, b) in s.iter_mut().enumerate() {
        *b = (i % 253) as u8;
    }
    ensure!(
        s.iter().enumerate().all(|(i, &b)| b == (i % 253) as u8),
        "mapped memory did not keep its contents"
    );
    drop(m);
    let big = sys::AnonMap::new(4 << 20).what("mmap 4 MiB")?;
    drop(big);
    expect_errno(
        sys::AnonMap::new(0).map(|m| m.addr()),
        Errno::EINVAL,
        "mmap of length 0",
    )
}

pub fn clock_monotonic(_cx: &Ctx) -> TestResult {
    let a = now_ns();
    for _ in 0..1000 {
        sys::getpid();
    }
    let b = now_ns();
    ensure!(
        a > 0 && b >= a,
        "CLOCK_MONOTONIC went backwards ({a} then {b})"
    );
    let ts = sys::clock_gettime(CLOCK_MONOTONIC).what("clock_gettime")?;
    ensure!(
        (0..1_000_000_000).contains(&ts.tv_nsec),
        "tv_nsec {} out of range",
        ts.tv_nsec
    );
    expect_errno(
        sys::clock_gettime(999),
        Errno::EINVAL,
        "clock_gettime of an invalid clock",
    )
}

/// After fork, parent and child share each open file description, so its offset too.
pub fn fork_shares_file_offset(cx: &Ctx) -> TestResult {
    let p = cx.path("f");
    let f = File::open(&p, O_RDWR | O_CREAT | O_TRUNC, 0o644).what("create")?;
    f.write_all(b"parent1 ").what("write")?;
    let pid = sys::fork().what("fork")?;
    if pid == 0 {
        let ok = f.write_all(b"child ").is_ok();
        sys::exit(if ok { 0 } else { 1 });
    }
    let (_, st) = sys::waitpid(pid).what("wait4")?;
    ensure!(
        st.exited() && st.exit_code() == 0,
        "child failed to write ({:#x})",
        st.0
    );
    ensure!(
        f.seek(0, SEEK_CUR).what("lseek")? == 14,
        "parent's offset did not move with the child's write"
    );
    f.write_all(b"parent2").what("write")?;
    f.close().what("close")?;
    crate::same_bytes(
        &crate::get_file(&p)?,
        b"parent1 child parent2",
        "file written by both",
    )
}

/// Preemptive scheduling: a child that never blocks or yields must not keep the CPU from its
/// parent. The child spins until the parent has created a file; without a timer taking the CPU
/// back, the parent would never run again (the child gives up after 20 s and fails the test).
pub fn preemption(cx: &Ctx) -> TestResult {
    let flag = cx.path("preempt.flag");
    let pid = sys::fork().what("fork")?;
    if pid == 0 {
        let start = now_ns();
        loop {
            if sys::stat(&flag).is_ok() {
                sys::exit(0);
            }
            // Pure computation between checks: nothing here gives up the CPU.
            let mut x: u64 = 1;
            for i in 0..200_000u64 {
                x = core::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
            }
            if now_ns().saturating_sub(start) > 20_000_000_000 {
                sys::exit(1);
            }
        }
    }
    // Let the child take the CPU first, then need it back.
    sys::sched_yield();
    let f = File::create(&flag).what("create flag")?;
    drop(f);
    let (_, status) = sys::waitpid(pid).what("wait4")?;
    let _ = sys::unlink(&flag);
    ensure!(
        status.exited() && status.exit_code() == 0,
        "the spinning child never saw the parent's file (status {:#x}): no preemption",
        status.0
    );
    Ok(())
}

/// Load all 32 FP registers and `fcsr` from `init`, make `rounds` sched_yield calls (each a
/// chance for another process to run and use its own FP registers), then store them into
/// `out`. The kernel saves and restores FP state lazily: this sees whether it ever loses it.
fn fp_across_yields(init: &[u64; 33], out: &mut [u64; 33], rounds: usize) {
    // SAFETY: reads `init`, writes `out` (both 33 words), makes sched_yield syscalls (no
    // arguments, a0 returned); every FP register it changes is declared clobbered.
    unsafe {
        core::arch::asm!(
            ".option push",
            ".option arch, +d",
            ".irp n, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31",
            "fld f\\n, (\\n * 8)({src})",
            ".endr",
            "ld {t}, 256({src})",
            "fscsr {t}",
            "2:",
            "li a7, {nr}",
            "ecall",
            "addi {n}, {n}, -1",
            "bnez {n}, 2b",
            ".irp n, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31",
            "fsd f\\n, (\\n * 8)({dst})",
            ".endr",
            "frcsr {t}",
            "sd {t}, 256({dst})",
            ".option pop",
            src = in(reg) init.as_ptr(),
            dst = in(reg) out.as_mut_ptr(),
            n = inout(reg) rounds.max(1) => _,
            t = out(reg) _,
            nr = const abi::syscall::SYS_SCHED_YIELD,
            out("a0") _, out("a7") _,
            out("f0") _, out("f1") _, out("f2") _, out("f3") _, out("f4") _, out("f5") _,
            out("f6") _, out("f7") _, out("f8") _, out("f9") _, out("f10") _, out("f11") _,
            out("f12") _, out("f13") _, out("f14") _, out("f15") _, out("f16") _, out("f17") _,
            out("f18") _, out("f19") _, out("f20") _, out("f21") _, out("f22") _, out("f23") _,
            out("f24") _, out("f25") _, out("f26") _, out("f27") _, out("f28") _, out("f29") _,
            out("f30") _, out("f31") _,
            options(nostack),
        );
    }
}

/// FP registers (and the rounding mode in `fcsr`) survive system calls and switches to another
/// process that uses different values in them: parent and child run the same loop with
/// different patterns, yielding to each other.
pub fn fp_state_survives_switches(_cx: &Ctx) -> TestResult {
    let pattern = |seed: u64| -> [u64; 33] {
        let mut v = [0u64; 33];
        for (i, w) in v.iter_mut().enumerate().take(32) {
            *w = seed
                .wrapping_mul(0x9e37_79b9_7f4a_7c15)
                .wrapping_add(i as u64 * 0x0101_0101);
        }
        // fcsr: rounding mode (bits 5..7) 1 or 2, no exception flags.
        v[32] = if seed & 1 == 0 { 1 << 5 } else { 2 << 5 };
        v
    };
    let pid = sys::fork().what("fork")?;
    let mine = pattern(if pid == 0 { 7 } else { 8 });
    let mut got = [0u64; 33];
    fp_across_yields(&mine, &mut got, 300);
    let bad = (0..33).find(|&i| got[i] != mine[i]);
    if pid == 0 {
        sys::exit(if bad.is_some() { 1 } else { 0 });
    }
    let (_, status) = sys::waitpid(pid).what("wait4")?;
    if let Some(i) = bad {
        return Err(format!(
            "parent: {} is {:#x} after yields, was {:#x}",
            if i == 32 {
                "fcsr".into()
            } else {
                format!("f{i}")
            },
            got[i],
            mine[i]
        ));
    }
    ensure!(
        status.exited() && status.exit_code() == 0,
        "the child lost its FP registers across yields (status {:#x})",
        status.0
    );
    Ok(())
}

/// `vfork()` as musl spells it on riscv64: `clone(CLONE_VM | CLONE_VFORK | SIGCHLD, 0)`.
///
/// # Safety
///
/// The child may share the caller's memory and stack: until it execs or exits it must do
/// nothing but raw system calls on values prepared before the call (no allocation, no
/// return from the calling function).
unsafe fn vfork() -> SysResult<i32> {
    let flags = CLONE_VM | CLONE_VFORK | abi::fcntl::SIGCHLD;
    // SAFETY: no new stack and no tid pointers; the caller keeps the child to vfork's rules.
    let r =
        unsafe { user_tests::raw::syscall5(abi::syscall::SYS_CLONE, flags as usize, 0, 0, 0, 0) };
    Errno::from_ret(r).map(|p| p as i32)
}

/// `kill(pid, sig)`, the result ignored by callers that only clean up.
pub(crate) fn kill(pid: i32, sig: usize) -> isize {
    // SAFETY: no pointer arguments.
    unsafe { user_tests::raw::syscall2(abi::syscall::SYS_KILL, pid as usize, sig) }
}

/// Sleep `ms` milliseconds (nanosleep).
pub(crate) fn sleep_ms(ms: u64) {
    let ts: [u64; 2] = [ms / 1000, (ms % 1000) * 1_000_000];
    // SAFETY: `ts` is a readable struct timespec; no remainder pointer.
    unsafe { user_tests::raw::syscall2(abi::syscall::SYS_NANOSLEEP, ts.as_ptr() as usize, 0) };
}

const SIGKILL: usize = 9;

/// vfork as Linux's: the parent sleeps until the child exits or execs. The child runs for
/// longer than a time slice (so that, were the parent not asleep, the scheduler would run it
/// again meanwhile), then writes to a non-blocking pipe and exits: when vfork returns in the
/// parent, the byte is already there and wait4(WNOHANG) already finds the exit status (no
/// sleep in between). A child that execs a long-running program lets the parent go at the
/// exec, not at its exit.
pub fn vfork_parent_waits_for_child(_cx: &Ctx) -> TestResult {
    let (rd, wr) = sys::pipe2(O_NONBLOCK | O_CLOEXEC).what("pipe2")?;
    let byte = [b'v'];
    // SAFETY: the child reads the clock and makes only raw system calls (write, exit_group)
    // on values set above.
    let pid = unsafe { vfork() }.what("vfork")?;
    if pid == 0 {
        // Five time slices of the kernel's 10 ms: reading the clock touches no memory the
        // parent relies on.
        let until = now_ns() + 50_000_000;
        while now_ns() < until {
            core::hint::spin_loop();
        }
        // SAFETY: `byte` is readable; exit_group does not return.
        unsafe {
            user_tests::raw::syscall3(
                abi::syscall::SYS_WRITE,
                wr as usize,
                byte.as_ptr() as usize,
                1,
            );
            user_tests::raw::syscall1(abi::syscall::SYS_EXIT_GROUP, 42);
        }
        sys::exit(99);
    }
    let mut got = [0u8; 4];
    let n = sys::read(rd, &mut got);
    let reaped = sys::wait4(pid, WNOHANG);
    let (_, status) = if matches!(reaped, Ok((0, _))) {
        // Reap it anyway, so no later wait4(-1) finds it.
        sys::waitpid(pid).what("wait4")?
    } else {
        reaped.what("wait4(WNOHANG)")?
    };
    let _ = sys::close(rd);
    let _ = sys::close(wr);
    ensure!(
        matches!(n, Ok(1)) && got[0] == b'v',
        "the pipe was not written when vfork returned ({n:?}): the child had not run first"
    );
    ensure!(
        matches!(reaped, Ok((p, _)) if p == pid),
        "wait4(WNOHANG) right after vfork returned {reaped:?}: the child had not exited yet"
    );
    ensure!(
        status.exited() && status.exit_code() == 42,
        "the vfork child's status is {:#x}, not exit 42",
        status.0
    );

    // exec lets the parent go: the child runs `busybox sleep 5` and is still alive then.
    let path = b"/bin/busybox\0";
    let args: [&[u8]; 3] = [b"busybox\0", b"sleep\0", b"5\0"];
    let argv = [
        args[0].as_ptr() as usize,
        args[1].as_ptr() as usize,
        args[2].as_ptr() as usize,
        0,
    ];
    let envp = [0usize];
    let started = now_ns();
    // SAFETY: the child makes only raw system calls (execve, exit_group) on values set above.
    let pid = unsafe { vfork() }.what("vfork")?;
    if pid == 0 {
        // SAFETY: the path, the strings and both NULL-terminated arrays outlive the call.
        unsafe {
            user_tests::raw::syscall3(
                abi::syscall::SYS_EXECVE,
                path.as_ptr() as usize,
                argv.as_ptr() as usize,
                envp.as_ptr() as usize,
            );
            user_tests::raw::syscall1(abi::syscall::SYS_EXIT_GROUP, 127);
        }
        sys::exit(127);
    }
    let waited_ms = (now_ns() - started) / 1_000_000;
    let alive = sys::wait4(pid, WNOHANG);
    kill(pid, SIGKILL);
    let (_, status) = if matches!(alive, Ok((0, _))) {
        sys::waitpid(pid).what("wait4")?
    } else {
        alive.what("wait4(WNOHANG)")?
    };
    ensure!(
        matches!(alive, Ok((0, _))) && waited_ms < 4000,
        "after vfork + execve of busybox sleep 5, vfork returned after {waited_ms} ms and \
         wait4(WNOHANG) gave {alive:?} (status {:#x}): exec did not let the parent go",
        status.0
    );
    ensure!(
        status.signal() == Some(SIGKILL as i32),
        "the exec'd vfork child did not die of SIGKILL (status {:#x})",
        status.0
    );
    Ok(())
}

/// The vfork wait is killable: a parent asleep in vfork while its child sleeps 5 s dies of
/// SIGKILL at once, not when the child exits.
pub fn vfork_wait_is_killable(_cx: &Ctx) -> TestResult {
    let (rd, wr) = sys::pipe2(O_CLOEXEC).what("pipe2")?;
    let middle = sys::fork().what("fork")?;
    if middle == 0 {
        // SAFETY: the child makes only raw system calls on values set here.
        let pid = unsafe { vfork() };
        if let Ok(0) = pid {
            let me = (sys::getpid() as u32).to_le_bytes();
            let ts: [u64; 2] = [5, 0];
            // SAFETY: `me` and `ts` are readable; exit_group does not return.
            unsafe {
                user_tests::raw::syscall3(
                    abi::syscall::SYS_WRITE,
                    wr as usize,
                    me.as_ptr() as usize,
                    4,
                );
                user_tests::raw::syscall2(abi::syscall::SYS_NANOSLEEP, ts.as_ptr() as usize, 0);
                user_tests::raw::syscall1(abi::syscall::SYS_EXIT_GROUP, 0);
            }
        }
        // Reached only once the vfork child has exited: not killable.
        sys::exit(if pid.is_ok() { 0 } else { 98 });
    }
    let _ = sys::close(wr);
    // The vfork child's pid: once it has run, the middle process is asleep in vfork.
    let mut pid_bytes = [0u8; 4];
    let n = sys::read(rd, &mut pid_bytes);
    let _ = sys::close(rd);
    let grandchild = u32::from_le_bytes(pid_bytes) as i32;
    sleep_ms(50);
    let killed_at = now_ns();
    kill(middle, SIGKILL);
    let reaped = sys::waitpid(middle);
    let took_ms = (now_ns() - killed_at) / 1_000_000;
    if matches!(n, Ok(4)) && grandchild > 0 {
        kill(grandchild, SIGKILL);
    }
    let (_, status) = reaped.what("wait4")?;
    ensure!(
        matches!(n, Ok(4)),
        "the vfork child did not report its pid ({n:?})"
    );
    ensure!(
        status.signal() == Some(SIGKILL as i32),
        "the process asleep in vfork did not die of SIGKILL (status {:#x})",
        status.0
    );
    ensure!(
        took_ms < 2000,
        "SIGKILL ended the vfork wait only after {took_ms} ms (the child sleeps 5 s)"
    );
    Ok(())
}
