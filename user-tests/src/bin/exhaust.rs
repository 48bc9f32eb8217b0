//! `exhaust DIR`: a user program must not be able to take the kernel down by asking for too
//! much (issue 18). Each case runs in a child where it could kill the caller, and after each
//! the kernel must still answer and a file fsync'd on DIR before the cases began must read
//! back intact:
//! - memory hog: a child maps and touches anonymous memory in 64 MiB pieces until the kernel
//!   stops it: it must die of SIGKILL (an out-of-memory kill), not SIGSEGV, and the kernel must
//!   not panic;
//! - the same with shared anonymous memory (MAP_SHARED | MAP_ANONYMOUS);
//! - hog beside a writer: while a child takes every page it can (until its out-of-memory
//!   kill), this process keeps writing, fsyncing and reading back files on DIR: every
//!   write and fsync must succeed and read back (the kernel keeps frames for the file system);
//! - fork bomb: fork without reaping until fork fails: EAGAIN or ENOMEM, then every child is
//!   reaped;
//! - descriptor hog: open /dev/null until EMFILE (at most 1024 descriptors), then close them;
//! - pipe without reader: write to a pipe whose read end is closed: EPIPE with SIGPIPE
//!   ignored, death by SIGPIPE otherwise;
//! - pipe hog: many processes fill as many pipes as they may hold: ENOMEM (the kernel heap),
//!   EMFILE or ENFILE, never a crash;
//! - map hog: processes map one page at a time (nothing touched) until mmap says no: ENOMEM,
//!   at Linux's vm.max_map_count (65530) in one process, sooner when many do it at once and
//!   the kernel heap runs short, never a crash;
//! - file map hog: a child maps a file on DIR privately again and again, storing to every
//!   page (each store copies the file's page): it must die of SIGKILL; then a child stores
//!   into every page of a shared mapping of the file and hogs anonymous memory until its
//!   out-of-memory kill: its stores must reach the file (written back as its mappings go);
//! - huge argv: execve with 300 KiB of arguments: E2BIG;
//! - long paths: a path of PATH_MAX bytes is ENAMETOOLONG, a name of 256 bytes too.
//!
//! `exhaust DIR CASE...` runs only the named cases. Prints `N passed, N failed`; the exit status is the number of failures.
#![no_std]
#![no_main]

use user_tests::prelude::*;
use user_tests::raw::{syscall2, syscall4, syscall6};

const SIGKILL: i32 = 9;
const SIGPIPE: i32 = 13;
const PIECE: usize = 64 << 20;

fn ret(r: isize) -> Result<usize, Errno> {
    if (-4095..0).contains(&r) {
        Err(Errno((-r) as i32))
    } else {
        Ok(r as usize)
    }
}

/// The file every case must leave intact.
fn witness(dir: &str) -> String {
    user_tests::path_join(dir, "exhaust-witness")
}

fn witness_bytes() -> Vec<u8> {
    (0..100_000u32).map(|i| (i * 7 + 3) as u8).collect()
}

fn check_witness(dir: &str) -> Result<(), String> {
    let fd = sys::open(&witness(dir), O_RDONLY, 0).map_err(|e| format!("open witness: {e:?}"))?;
    let mut buf = vec![0u8; 200_000];
    let n = sys::read_full(fd, &mut buf).map_err(|e| format!("read witness: {e:?}"))?;
    let _ = sys::close(fd);
    if buf[..n] != witness_bytes()[..] {
        return Err(format!("witness file changed ({n} bytes)"));
    }
    Ok(())
}

/// Run `f` in a child; its wait status.
fn in_child(f: impl FnOnce() -> i32) -> Result<sys::WaitStatus, String> {
    match sys::fork() {
        Ok(0) => sys::exit(f()),
        Ok(pid) => sys::waitpid(pid)
            .map(|(_, st)| st)
            .map_err(|e| format!("waitpid: {e:?}")),
        Err(e) => Err(format!("fork: {e:?}")),
    }
}

fn memory_hog() -> Result<(), String> {
    hog_dies_of_sigkill(MAP_PRIVATE)
}

/// The same with `MAP_SHARED | MAP_ANONYMOUS` pieces (pages a fork would share).
fn memory_hog_shared() -> Result<(), String> {
    hog_dies_of_sigkill(MAP_SHARED)
}

fn hog_dies_of_sigkill(share: u32) -> Result<(), String> {
    let st = in_child(|| hog_forever(share))?;
    match st.signal() {
        Some(SIGKILL) => Ok(()),
        Some(s) => Err(format!(
            "memory hog died of signal {s}, expected SIGKILL (9)"
        )),
        None if st.exit_code() == 2 => Ok(()),
        None => Err(format!("memory hog exited with {}", st.exit_code())),
    }
}

/// See the module docs: private copies of a file until the out-of-memory kill, then a
/// shared mapping's stores survive their process's out-of-memory kill.
fn file_map_hog(dir: &str) -> Result<(), String> {
    const SIZE: usize = 32 << 20;
    let path = user_tests::path_join(dir, "exhaust-mapped");
    let fd = sys::open(&path, O_CREAT | O_TRUNC | O_RDWR, 0o644)
        .map_err(|e| format!("create {path}: {e:?}"))?;
    let chunk = vec![0x5au8; 1 << 20];
    for i in 0..SIZE >> 20 {
        sys::pwrite_all(fd, &chunk, (i << 20) as u64).map_err(|e| format!("write: {e:?}"))?;
    }
    sys::fsync(fd).map_err(|e| format!("fsync: {e:?}"))?;
    let map = |flags: u32| {
        // SAFETY: a new mapping of our file placed by the kernel: it aliases nothing.
        ret(unsafe {
            syscall6(
                abi::syscall::SYS_MMAP,
                0,
                SIZE,
                (PROT_READ | PROT_WRITE) as usize,
                flags as usize,
                fd as usize,
                0,
            )
        })
    };
    let st = in_child(|| loop {
        let Ok(addr) = map(MAP_PRIVATE) else {
            return 2;
        };
        for off in (0..SIZE).step_by(4096) {
            // SAFETY: inside the mapping just made, within the file's size.
            if unsafe { core::ptr::read_volatile((addr + off) as *const u8) } != 0x5a {
                return 3;
            }
            // The store makes the page this mapping's own copy.
            // SAFETY: as above; the mapping is writable.
            unsafe { core::ptr::write_volatile((addr + off) as *mut u8, 1) };
        }
    })?;
    match st.signal() {
        Some(SIGKILL) => {}
        _ if st.exited() && st.exit_code() == 2 => {}
        _ => {
            return Err(format!(
                "private file map hog ended with status {:#x}",
                st.0
            ))
        }
    }
    let st = in_child(|| {
        let Ok(addr) = map(MAP_SHARED) else {
            return 2;
        };
        for off in (0..SIZE).step_by(4096) {
            // SAFETY: inside the mapping just made, within the file's size.
            unsafe { core::ptr::write_volatile((addr + off) as *mut u8, 0xa5) };
        }
        hog_forever(MAP_PRIVATE)
    })?;
    match st.signal() {
        Some(SIGKILL) => {}
        _ => return Err(format!("shared file map hog ended with status {:#x}", st.0)),
    }
    let mut back = vec![0u8; SIZE];
    let n = sys::pread_full(fd, &mut back, 0).map_err(|e| format!("read back: {e:?}"))?;
    let _ = sys::close(fd);
    let _ = sys::unlink(&path);
    if n != SIZE {
        return Err(format!("the mapped file has {n} bytes"));
    }
    for (i, &b) in back.iter().enumerate() {
        let want = if i % 4096 == 0 { 0xa5 } else { 0x5a };
        if b != want {
            return Err(format!(
                "byte {i} of the mapped file is {b:#x}, not {want:#x}"
            ));
        }
    }
    Ok(())
}

/// Touch anonymous memory (`share`: MAP_PRIVATE or MAP_SHARED) until killed; 2 if mmap
/// refuses first.
fn hog_forever(share: u32) -> i32 {
    loop {
        // SAFETY: an anonymous private mapping: no pointer argument.
        let r = unsafe {
            syscall6(
                abi::syscall::SYS_MMAP,
                0,
                PIECE,
                (PROT_READ | PROT_WRITE) as usize,
                (share | MAP_ANONYMOUS) as usize,
                usize::MAX,
                0,
            )
        };
        let Ok(addr) = ret(r) else {
            return 2;
        };
        for off in (0..PIECE).step_by(4096) {
            // SAFETY: the page lies inside the mapping just made, readable and writable.
            unsafe { core::ptr::write_volatile((addr + off) as *mut u8, 1) };
        }
    }
}

fn hog_beside_writer(dir: &str) -> Result<(), String> {
    const WNOHANG: u32 = 1;
    let hog = match sys::fork() {
        Ok(0) => sys::exit(hog_forever(MAP_PRIVATE)),
        Ok(pid) => pid,
        Err(e) => return Err(format!("fork: {e:?}")),
    };
    let path = user_tests::path_join(dir, "exhaust-writer");
    let mut hog_status = None;
    let mut rounds = 0u32;
    // Until the hog is gone, and a few rounds after (at most 400 rounds).
    let mut after = 0;
    while after < 3 && rounds < 400 {
        let data: Vec<u8> = (0..256 * 1024u32).map(|i| (i ^ rounds) as u8).collect();
        let fd = sys::open(&path, O_CREAT | O_TRUNC | O_RDWR, 0o644)
            .map_err(|e| format!("round {rounds}: open: {e:?}"))?;
        sys::write_all(fd, &data).map_err(|e| format!("round {rounds}: write: {e:?}"))?;
        sys::fsync(fd).map_err(|e| format!("round {rounds}: fsync: {e:?}"))?;
        let _ = sys::close(fd);
        let fd = sys::open(&path, O_RDONLY, 0).map_err(|e| format!("reopen: {e:?}"))?;
        let mut back = vec![0u8; data.len() + 1];
        let n = sys::read_full(fd, &mut back).map_err(|e| format!("read: {e:?}"))?;
        let _ = sys::close(fd);
        if back[..n] != data[..] {
            return Err(format!(
                "round {rounds}: file read back differs ({n} bytes)"
            ));
        }
        rounds += 1;
        if hog_status.is_none() {
            if let Ok((pid, st)) = sys::wait4(hog, WNOHANG) {
                if pid == hog {
                    hog_status = Some(st);
                }
            }
        } else {
            after += 1;
        }
    }
    let st = match hog_status {
        Some(st) => st,
        None => {
            // SAFETY: kill takes no pointer.
            let _ = unsafe { syscall2(abi::syscall::SYS_KILL, hog as usize, SIGKILL as usize) };
            let _ = sys::waitpid(hog);
            return Err(format!("the hog was still alive after {rounds} rounds"));
        }
    };
    let _ = sys::unlink(&path);
    println!(
        "  hog beside writer: {rounds} rounds of write+fsync+read, hog ended by {:?}",
        st.signal()
    );
    match st.signal() {
        Some(SIGKILL) => Ok(()),
        _ if st.exited() && st.exit_code() == 2 => Ok(()),
        s => Err(format!(
            "hog ended with signal {s:?} / exit {}",
            st.exit_code()
        )),
    }
}

fn fork_bomb() -> Result<(), String> {
    let mut children = 0usize;
    let err = loop {
        match sys::fork() {
            Ok(0) => sys::exit(0),
            Ok(_) => children += 1,
            Err(e) => break e,
        }
        if children > 100_000 {
            break Errno::EIO;
        }
    };
    let mut reaped = 0;
    while sys::waitpid(-1).is_ok() {
        reaped += 1;
    }
    if err != Errno::EAGAIN && err != Errno::ENOMEM {
        return Err(format!(
            "fork failed with {err:?} after {children} children"
        ));
    }
    if reaped != children || children == 0 {
        return Err(format!("{children} children forked, {reaped} reaped"));
    }
    println!("  fork bomb: {children} children, then {err:?}");
    Ok(())
}

fn fd_hog() -> Result<(), String> {
    let mut fds = Vec::new();
    let err = loop {
        match sys::open("/dev/null", O_RDONLY, 0) {
            Ok(fd) => fds.push(fd),
            Err(e) => break e,
        }
        if fds.len() > 100_000 {
            break Errno::EIO;
        }
    };
    let n = fds.len();
    for fd in fds {
        let _ = sys::close(fd);
    }
    if err != Errno::EMFILE || n + 3 > 1024 {
        return Err(format!(
            "after {n} descriptors: {err:?}, expected EMFILE at 1024"
        ));
    }
    Ok(())
}

fn pipe_fds() -> Result<(i32, i32), String> {
    let mut fds = [0i32; 2];
    // SAFETY: `fds` is writable for two ints.
    ret(unsafe { syscall2(abi::syscall::SYS_PIPE2, fds.as_mut_ptr() as usize, 0) })
        .map_err(|e| format!("pipe2: {e:?}"))?;
    Ok((fds[0], fds[1]))
}

fn pipe_without_reader() -> Result<(), String> {
    // SIGPIPE at its default action kills the writer.
    let st = in_child(|| {
        let Ok((r, w)) = pipe_fds() else { return 3 };
        let _ = sys::close(r);
        let _ = sys::write(w, b"x");
        4
    })?;
    if st.signal() != Some(SIGPIPE) {
        return Err(format!(
            "writer without reader: status {:#x}, expected SIGPIPE",
            st.0
        ));
    }
    // Ignored, the write fails with EPIPE.
    let st = in_child(|| {
        let act = [1u64, 0, 0]; // SIG_IGN, no flags, empty mask
                                // SAFETY: `act` is a readable 24-byte struct sigaction; no old action is asked for.
        unsafe {
            syscall4(
                abi::syscall::SYS_RT_SIGACTION,
                13,
                act.as_ptr() as usize,
                0,
                8,
            )
        };
        let Ok((r, w)) = pipe_fds() else { return 3 };
        let _ = sys::close(r);
        match sys::write(w, b"x") {
            Err(Errno::EPIPE) => 0,
            _ => 5,
        }
    })?;
    if !st.exited() || st.exit_code() != 0 {
        return Err(format!(
            "ignored SIGPIPE: status {:#x}, expected exit 0 (EPIPE)",
            st.0
        ));
    }
    Ok(())
}

/// Many processes each filling as many pipes as they may hold (up to about 380 MiB of pipe
/// buffers in all, more than a 1 GiB guest's kernel heap when the buddy allocator's rounding is
/// counted, though how much it takes varies): every process must stop at ENOMEM, EMFILE or
/// ENFILE, and nothing may crash. They hold everything until the parent closes the
/// gate pipe, so the exhaustion is simultaneous.
fn pipe_hog() -> Result<(), String> {
    const CHILDREN: usize = 12;
    let (gate_r, gate_w) = pipe_fds()?;
    let chunk = vec![7u8; 65536];
    let mut pids = Vec::new();
    for _ in 0..CHILDREN {
        match sys::fork() {
            Ok(0) => {
                let _ = sys::close(gate_w);
                let mut code = 1;
                loop {
                    let mut fds = [0i32; 2];
                    // SAFETY: `fds` is writable for two ints.
                    let r = unsafe {
                        syscall2(
                            abi::syscall::SYS_PIPE2,
                            fds.as_mut_ptr() as usize,
                            O_NONBLOCK as usize,
                        )
                    };
                    match ret(r) {
                        Ok(_) => {}
                        Err(e @ (Errno::EMFILE | Errno::ENFILE | Errno::ENOMEM)) => {
                            code = e.0; // the errno that stopped it, for the parent's tally
                            break;
                        }
                        Err(_) => break,
                    }
                    match sys::write(fds[1], &chunk) {
                        Ok(_) | Err(Errno::EAGAIN) => {}
                        Err(Errno::ENOMEM) => {
                            code = Errno::ENOMEM.0;
                            break;
                        }
                        Err(_) => break,
                    }
                }
                let mut b = [0u8; 1];
                let _ = sys::read(gate_r, &mut b); // until the parent closes the gate
                sys::exit(code);
            }
            Ok(pid) => pids.push(pid),
            Err(e) => return Err(format!("fork: {e:?}")),
        }
    }
    let _ = sys::close(gate_r);
    let _ = sys::close(gate_w);
    let (mut bad, mut tally) = (0, [0usize; 3]);
    for pid in pids {
        match sys::waitpid(pid) {
            Ok((_, st)) if st.exited() && st.exit_code() == Errno::ENOMEM.0 => tally[0] += 1,
            Ok((_, st)) if st.exited() && st.exit_code() == Errno::EMFILE.0 => tally[1] += 1,
            Ok((_, st)) if st.exited() && st.exit_code() == Errno::ENFILE.0 => tally[2] += 1,
            _ => bad += 1,
        }
    }
    println!(
        "  pipe hog: ENOMEM {}, EMFILE {}, ENFILE {}",
        tally[0], tally[1], tally[2]
    );
    if bad > 0 {
        return Err(format!(
            "{bad} of {CHILDREN} pipe hogs did not end with ENOMEM/EMFILE/ENFILE"
        ));
    }
    // Everything was given back: a new pipe works again.
    let (r, w) = pipe_fds()?;
    let _ = sys::close(r);
    let _ = sys::close(w);
    Ok(())
}

/// One page mapped (untouched) at `at`: Ok, or mmap's errno.
fn map_page_at(at: usize) -> Result<(), Errno> {
    // SAFETY: an anonymous private mapping with a hint: no pointer is dereferenced.
    let r = unsafe {
        syscall6(
            abi::syscall::SYS_MMAP,
            at,
            4096,
            PROT_READ as usize,
            (MAP_PRIVATE | MAP_ANONYMOUS) as usize,
            usize::MAX,
            0,
        )
    };
    ret(r).map(|_| ())
}

/// Map pages two apart from 128 GiB up (each its own area; the hint keeps the search
/// short) until mmap fails: (pages mapped, its errno).
fn map_until_refused() -> (u64, Errno) {
    let base = 0x20_0000_0000usize;
    let mut n = 0u64;
    loop {
        if let Err(e) = map_page_at(base + 2 * 4096 * n as usize) {
            return (n, e);
        }
        n += 1;
        if n > 10_000_000 {
            return (n, Errno::EIO);
        }
    }
}

/// Areas: one process stops at the map-count limit; then many at once hold as many areas
/// as they may until the parent closes the gate (the kernel heap, not the limit, stops them).
fn map_hog() -> Result<(), String> {
    const CHILDREN: usize = 40;
    let st = in_child(|| match map_until_refused() {
        (n, Errno::ENOMEM) if (60_000..65_530).contains(&n) => 0,
        (n, e) => {
            println!("  map hog: one process mapped {n} pages, then {e:?}");
            1
        }
    })?;
    if !st.exited() || st.exit_code() != 0 {
        return Err("one process: mmap did not stop with ENOMEM near 65530 areas".into());
    }
    // Each child reports (pages + 1) in its slot of a shared page: a pipe would not do, since
    // the kernel heap is what runs out, and a pipe write needs it too.
    let mut slots = sys::AnonMap::new_shared(4096).map_err(|e| format!("mmap: {e:?}"))?;
    slots.as_mut_slice().fill(0);
    let slot = |i: usize| -> &core::sync::atomic::AtomicU64 {
        // SAFETY: the page is mapped read-write, shared with the children, for the life of
        // `slots` (which outlives every use), and 8-byte aligned slot `i` < 512 lies inside it.
        unsafe { &*((slots.addr() + 8 * i) as *const core::sync::atomic::AtomicU64) }
    };
    let (gate_r, gate_w) = pipe_fds()?;
    let mut pids = Vec::new();
    for i in 0..CHILDREN {
        match sys::fork() {
            Ok(0) => {
                let _ = sys::close(gate_w);
                let (n, e) = map_until_refused();
                slot(i).store(n + 1, core::sync::atomic::Ordering::SeqCst);
                let mut b = [0u8; 1];
                let _ = sys::read(gate_r, &mut b); // until the parent closes the gate
                sys::exit(if e == Errno::ENOMEM { 0 } else { e.0 });
            }
            Ok(pid) => pids.push(pid),
            Err(Errno::EAGAIN | Errno::ENOMEM) => break,
            Err(e) => return Err(format!("fork: {e:?}")),
        }
    }
    // Every child holds all it could get at once; wait (at most 5 minutes) for the last.
    let started = sys::clock_gettime(CLOCK_MONOTONIC).map_err(|e| format!("{e:?}"))?;
    let (mut least, mut total, mut done) = (u64::MAX, 0u64, 0);
    while done < pids.len() {
        sys::sched_yield();
        let now = sys::clock_gettime(CLOCK_MONOTONIC).map_err(|e| format!("{e:?}"))?;
        if now.tv_sec - started.tv_sec > 300 {
            break;
        }
        done = (0..pids.len())
            .filter(|&i| slot(i).load(core::sync::atomic::Ordering::SeqCst) != 0)
            .count();
    }
    for i in 0..pids.len() {
        let n = slot(i).load(core::sync::atomic::Ordering::SeqCst);
        if n != 0 {
            least = least.min(n - 1);
            total += n - 1;
        }
    }
    let _ = sys::close(gate_r);
    let _ = sys::close(gate_w);
    let mut bad = 0;
    for pid in &pids {
        match sys::waitpid(*pid) {
            Ok((_, st)) if st.exited() && st.exit_code() == 0 => {}
            Ok((_, st)) => {
                if bad == 0 {
                    println!(
                        "  map hog: a process ended with exit {} / signal {:?}",
                        st.exit_code(),
                        st.signal()
                    );
                }
                bad += 1;
            }
            Err(e) => return Err(format!("waitpid: {e:?}")),
        }
    }
    println!(
        "  map hog: {} processes held {total} areas at once (fewest {least}), {done} reported",
        pids.len()
    );
    if bad > 0 || done < pids.len() {
        return Err(format!(
            "{bad} map hogs did not end with ENOMEM, {} never stopped",
            pids.len() - done
        ));
    }
    // Everything was given back.
    map_page_at(0).map_err(|e| format!("mmap after the hog: {e:?}"))
}

fn huge_argv() -> Result<(), String> {
    let arg = "a".repeat(100_000);
    let argv = ["/bin/exhaust", arg.as_str(), arg.as_str(), arg.as_str()];
    match sys::execve("/bin/exhaust", &argv) {
        Errno::E2BIG => Ok(()),
        e => Err(format!(
            "execve with 300 KiB of arguments: {e:?}, expected E2BIG"
        )),
    }
}

fn long_paths(dir: &str) -> Result<(), String> {
    let long = format!("{}/{}", dir, "d/".repeat(2100));
    match sys::stat(&long) {
        Err(Errno::ENAMETOOLONG) => {}
        r => return Err(format!("stat of a {}-byte path: {r:?}", long.len())),
    }
    let name = format!("{}/{}", dir, "n".repeat(256));
    match sys::open(&name, O_CREAT | O_WRONLY, 0o644) {
        Err(Errno::ENAMETOOLONG) => Ok(()),
        r => Err(format!("create with a 256-byte name: {r:?}")),
    }
}

/// One case: Ok, or what went wrong.
type Case<'a> = dyn Fn() -> Result<(), String> + 'a;

fn main(argv: &[&str]) -> i32 {
    let Some(&dir) = argv.get(1) else {
        eprintln!("usage: exhaust DIR [CASE...]");
        return 2;
    };
    let w = witness(dir);
    let setup = (|| -> SysResult<()> {
        let fd = sys::open(&w, O_CREAT | O_TRUNC | O_WRONLY, 0o644)?;
        sys::write_all(fd, &witness_bytes())?;
        sys::fsync(fd)?;
        sys::close(fd)
    })();
    if let Err(e) = setup {
        eprintln!("exhaust: cannot write {w}: {e:?}");
        return 2;
    }
    let hog_writer = || hog_beside_writer(dir);
    let map_hog_file = || file_map_hog(dir);
    let cases: [(&str, &Case<'_>); 11] = [
        ("memory_hog", &memory_hog),
        ("memory_hog_shared", &memory_hog_shared),
        ("hog_beside_writer", &hog_writer),
        ("fork_bomb", &fork_bomb),
        ("fd_hog", &fd_hog),
        ("pipe_without_reader", &pipe_without_reader),
        ("pipe_hog", &pipe_hog),
        ("map_hog", &map_hog),
        ("file_map_hog", &map_hog_file),
        ("huge_argv", &huge_argv),
        ("long_paths", &|| long_paths(dir)),
    ];
    let (mut passed, mut failed) = (0, 0);
    let only = &argv[2..];
    for (name, case) in cases {
        if !only.is_empty() && !only.contains(&name) {
            continue;
        }
        let r = case().and_then(|()| check_witness(dir));
        match r {
            Ok(()) => {
                println!("test {name:<24} ok");
                passed += 1;
            }
            Err(e) => {
                println!("test {name:<24} FAILED: {e}");
                failed += 1;
            }
        }
    }
    let _ = sys::unlink(&w);
    println!("{passed} passed, {failed} failed");
    failed
}

user_tests::entry!(main);
