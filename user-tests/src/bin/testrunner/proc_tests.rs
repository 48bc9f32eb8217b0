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
