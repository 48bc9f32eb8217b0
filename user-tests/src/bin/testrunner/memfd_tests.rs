//! memfd_create and its seals (stress-ng's memfd stressor found memfd_create ENOSYS): a file
//! in memory that reads back what was written, holes included, through read(2) and shared
//! mappings; its /proc link; each seal refusing what Linux's refuses (write, mmap, mprotect,
//! truncate, fallocate, chmod) and F_ADD_SEALS's own errors; bad input gets Linux's errno.

use user_tests::prelude::*;
use user_tests::raw::{syscall2, syscall3, syscall4};

use crate::anonfd_tests::ret;
use crate::{ensure, expect_errno, Check, Ctx, TestResult};

const MFD_CLOEXEC: u32 = 0x01;
const MFD_ALLOW_SEALING: u32 = 0x02;
const MFD_HUGETLB: u32 = 0x04;
const MFD_NOEXEC_SEAL: u32 = 0x08;
const MFD_EXEC: u32 = 0x10;
const F_ADD_SEALS: usize = 1033;
const F_GET_SEALS: usize = 1034;
const F_GETFD: usize = 1;
const F_SEAL_SEAL: usize = 0x01;
const F_SEAL_SHRINK: usize = 0x02;
const F_SEAL_GROW: usize = 0x04;
const F_SEAL_WRITE: usize = 0x08;
const F_SEAL_FUTURE_WRITE: usize = 0x10;
const F_SEAL_EXEC: usize = 0x20;
const FALLOC_FL_KEEP_SIZE: usize = 0x01;
const FALLOC_FL_PUNCH_HOLE: usize = 0x02;
const TMPFS_MAGIC: i64 = 0x0102_1994;
const PAGE: usize = 4096;

fn memfd_create(name: &[u8], flags: u32) -> SysResult<File> {
    let mut c = name.to_vec();
    c.push(0);
    // SAFETY: `c` is a NUL-terminated name the kernel only reads.
    let fd = ret(unsafe {
        syscall2(
            abi::syscall::SYS_MEMFD_CREATE,
            c.as_ptr() as usize,
            flags as usize,
        )
    })?;
    // SAFETY: the descriptor is new and ours.
    Ok(unsafe { File::from_raw(fd as i32) })
}

fn fcntl(f: &File, cmd: usize, arg: usize) -> SysResult<usize> {
    // SAFETY: these commands take an integer argument.
    ret(unsafe { syscall3(abi::syscall::SYS_FCNTL, f.fd() as usize, cmd, arg) })
}

fn fallocate(f: &File, mode: usize, offset: usize, len: usize) -> SysResult<usize> {
    // SAFETY: no pointer arguments.
    ret(unsafe {
        syscall4(
            abi::syscall::SYS_FALLOCATE,
            f.fd() as usize,
            mode,
            offset,
            len,
        )
    })
}

pub(crate) fn mprotect(m: &sys::Mapping, prot: u32) -> SysResult<usize> {
    // SAFETY: the range is `m`'s, reached only through its volatile accesses.
    ret(unsafe { syscall3(abi::syscall::SYS_MPROTECT, m.addr(), m.len(), prot as usize) })
}

fn map(f: &File, len: usize, prot: u32, flags: u32) -> SysResult<sys::Mapping> {
    sys::mmap(0, len, prot, flags, f.fd(), 0)
}

pub fn memfd_semantics(cx: &Ctx) -> TestResult {
    data_and_links()?;
    seals_refuse()?;
    future_write_keeps_old_mappings()?;
    creation_errors(cx)
}

/// Bytes, holes, size, st_blocks, a shared mapping, punching, fstatfs and the /proc link.
fn data_and_links() -> TestResult {
    let f = memfd_create(b"dbfs-os test", MFD_CLOEXEC).what("memfd_create")?;
    ensure!(
        fcntl(&f, F_GETFD, 0).what("F_GETFD")? == 1,
        "MFD_CLOEXEC not set"
    );
    let st = f.stat().what("fstat")?;
    ensure!(
        st.st_mode == S_IFREG | 0o777 && st.st_size == 0 && st.st_nlink == 1,
        "a new memfd: mode {:o} size {} nlink {}",
        st.st_mode,
        st.st_size,
        st.st_nlink
    );
    let link = sys::readlink(&format!("/proc/self/fd/{}", f.fd())).what("readlink")?;
    ensure!(
        link == "/memfd:dbfs-os test (deleted)",
        "its /proc link: {link}"
    );
    let data: Vec<u8> = (0..10_000u32).map(|i| (i * 7 + 1) as u8).collect();
    f.pwrite_all(&data, 5000).what("pwrite")?;
    let mut back = vec![0xffu8; 15_000];
    ensure!(
        f.pread_full(&mut back, 0).what("pread")? == 15_000,
        "short read"
    );
    ensure!(
        back[..5000].iter().all(|&b| b == 0),
        "the hole before the data is not zeros"
    );
    ensure!(back[5000..] == data[..], "the data read back differs");
    let st = f.stat().what("fstat")?;
    ensure!(
        st.st_size == 15_000 && st.st_blocks == 3 * 8,
        "size {} blocks {}",
        st.st_size,
        st.st_blocks
    );
    // A shared mapping sees the data and its stores reach read(2).
    let m = map(&f, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED).what("mmap shared")?;
    ensure!(
        m.get(5000) == data[0] && m.get(14_999) == data[9999],
        "the mapping's bytes"
    );
    m.set(100, 0xab);
    sys::msync(m.addr(), m.len(), 4).what("msync")?;
    let mut b = [0u8; 1];
    f.pread_full(&mut b, 100).what("pread")?;
    ensure!(
        b[0] == 0xab,
        "a store through the mapping did not reach read(2)"
    );
    drop(m);
    // Punching the second and third pages frees them and reads zeros.
    fallocate(
        &f,
        FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
        PAGE,
        2 * PAGE,
    )
    .what("punch")?;
    let st = f.stat().what("fstat")?;
    ensure!(
        st.st_size == 15_000 && st.st_blocks == 2 * 8,
        "after the punch: size {} blocks {}",
        st.st_size,
        st.st_blocks
    );
    f.pread_full(&mut back, 0).what("pread")?;
    ensure!(
        back[PAGE..3 * PAGE].iter().all(|&b| b == 0),
        "punched pages are not zeros"
    );
    ensure!(
        back[3 * PAGE..] == data[3 * PAGE - 5000..],
        "the bytes after the hole changed"
    );
    // Truncation drops the tail; growing again reads zeros there.
    f.set_len(5001).what("ftruncate down")?;
    f.set_len(8000).what("ftruncate up")?;
    let mut tail = [0xffu8; 2999];
    f.pread_full(&mut tail, 5001).what("pread")?;
    ensure!(
        tail.iter().all(|&b| b == 0),
        "bytes past a truncation came back"
    );
    let mut sfs = [0u8; core::mem::size_of::<Statfs>()];
    // SAFETY: `sfs` is a writable struct statfs.
    ret(unsafe {
        syscall2(
            abi::syscall::SYS_FSTATFS,
            f.fd() as usize,
            sfs.as_mut_ptr() as usize,
        )
    })
    .what("fstatfs")?;
    let t = i64::from_le_bytes(sfs[..8].try_into().unwrap_or_default());
    ensure!(t == TMPFS_MAGIC, "fstatfs f_type {t:#x}");
    // Without MFD_ALLOW_SEALING it is sealed with F_SEAL_SEAL.
    ensure!(
        fcntl(&f, F_GET_SEALS, 0).what("F_GET_SEALS")? == F_SEAL_SEAL,
        "seals of an unsealable memfd"
    );
    expect_errno(
        fcntl(&f, F_ADD_SEALS, F_SEAL_WRITE),
        Errno::EPERM,
        "a seal on an unsealable memfd",
    )
}

/// Each seal refuses what Linux's refuses, and no more.
fn seals_refuse() -> TestResult {
    let f = memfd_create(b"sealed", MFD_ALLOW_SEALING).what("memfd_create")?;
    ensure!(
        fcntl(&f, F_GET_SEALS, 0).what("F_GET_SEALS")? == 0,
        "a sealable memfd has seals"
    );
    f.set_len(4 * PAGE as u64).what("ftruncate")?;
    fcntl(&f, F_ADD_SEALS, F_SEAL_SHRINK).what("F_SEAL_SHRINK")?;
    expect_errno(
        f.set_len(PAGE as u64),
        Errno::EPERM,
        "shrinking with F_SEAL_SHRINK",
    )?;
    let ro_path = format!("/proc/self/fd/{}", f.fd());
    expect_errno(
        File::open(&ro_path, O_RDWR | O_TRUNC, 0),
        Errno::EPERM,
        "a reopen with O_TRUNC under F_SEAL_SHRINK",
    )?;
    f.set_len(8 * PAGE as u64)
        .what("growing with F_SEAL_SHRINK")?;
    fcntl(&f, F_ADD_SEALS, F_SEAL_GROW).what("F_SEAL_GROW")?;
    expect_errno(
        f.set_len(9 * PAGE as u64),
        Errno::EPERM,
        "growing with F_SEAL_GROW",
    )?;
    expect_errno(
        f.pwrite(b"x", 8 * PAGE as u64),
        Errno::EPERM,
        "a write past the end with F_SEAL_GROW",
    )?;
    expect_errno(
        fallocate(&f, 0, 0, 16 * PAGE),
        Errno::EPERM,
        "fallocate past the end with F_SEAL_GROW",
    )?;
    f.pwrite_all(b"inside", 10)
        .what("a write inside with F_SEAL_GROW")?;
    // F_SEAL_WRITE: EBUSY while a shared writable mapping exists, then every write refused.
    let m = map(&f, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED).what("mmap shared")?;
    expect_errno(
        fcntl(&f, F_ADD_SEALS, F_SEAL_WRITE),
        Errno::EBUSY,
        "F_SEAL_WRITE while mapped writable",
    )?;
    drop(m);
    // A reopen for reading only cannot add seals.
    let ro = File::open(&ro_path, O_RDONLY, 0).what("reopen read-only")?;
    expect_errno(
        fcntl(&ro, F_ADD_SEALS, F_SEAL_WRITE),
        Errno::EPERM,
        "F_ADD_SEALS on a read-only open",
    )?;
    drop(ro);
    expect_errno(
        fcntl(&f, F_ADD_SEALS, 0x1000),
        Errno::EINVAL,
        "an unknown seal",
    )?;
    fcntl(&f, F_ADD_SEALS, F_SEAL_WRITE).what("F_SEAL_WRITE")?;
    expect_errno(f.pwrite(b"x", 0), Errno::EPERM, "write with F_SEAL_WRITE")?;
    expect_errno(
        map(&f, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED),
        Errno::EPERM,
        "a shared writable mapping with F_SEAL_WRITE",
    )?;
    let ro_map = map(&f, PAGE, PROT_READ, MAP_SHARED).what("a shared read-only mapping")?;
    ensure!(ro_map.get(10) == b'i', "the read-only mapping's bytes");
    expect_errno(
        mprotect(&ro_map, PROT_READ | PROT_WRITE),
        Errno::EACCES,
        "mprotect to writable with F_SEAL_WRITE",
    )?;
    let private =
        map(&f, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE).what("a private writable mapping")?;
    private.set(10, b'I');
    let mut b = [0u8; 1];
    f.pread_full(&mut b, 10).what("pread")?;
    ensure!(b[0] == b'i', "a private store reached the sealed file");
    expect_errno(
        fallocate(&f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, PAGE),
        Errno::EPERM,
        "punching with F_SEAL_WRITE",
    )?;
    fcntl(&f, F_ADD_SEALS, F_SEAL_SEAL).what("F_SEAL_SEAL")?;
    expect_errno(
        fcntl(&f, F_ADD_SEALS, F_SEAL_SHRINK),
        Errno::EPERM,
        "a seal after F_SEAL_SEAL",
    )?;
    let all = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL;
    ensure!(
        fcntl(&f, F_GET_SEALS, 0).what("F_GET_SEALS")? == all,
        "the seals read back"
    );
    // MFD_NOEXEC_SEAL: no execute bits, and they cannot be added.
    let nx = memfd_create(b"noexec", MFD_NOEXEC_SEAL).what("memfd_create NOEXEC_SEAL")?;
    let st = nx.stat().what("fstat")?;
    ensure!(
        st.st_mode & 0o7777 == 0o666,
        "MFD_NOEXEC_SEAL's mode {:o}",
        st.st_mode
    );
    ensure!(
        fcntl(&nx, F_GET_SEALS, 0).what("F_GET_SEALS")? == F_SEAL_EXEC,
        "MFD_NOEXEC_SEAL's seals"
    );
    // SAFETY: no pointer arguments.
    let r = ret(unsafe { syscall2(abi::syscall::SYS_FCHMOD, nx.fd() as usize, 0o755) });
    expect_errno(r, Errno::EPERM, "chmod +x under F_SEAL_EXEC")
}

/// F_SEAL_FUTURE_WRITE: write(2) and new shared writable mappings refused, a mapping made
/// before it keeps storing into the file.
fn future_write_keeps_old_mappings() -> TestResult {
    let f = memfd_create(b"future", MFD_ALLOW_SEALING).what("memfd_create")?;
    f.set_len(PAGE as u64).what("ftruncate")?;
    let m = map(&f, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED).what("mmap shared")?;
    fcntl(&f, F_ADD_SEALS, F_SEAL_FUTURE_WRITE).what("F_SEAL_FUTURE_WRITE while mapped")?;
    expect_errno(
        f.pwrite(b"x", 0),
        Errno::EPERM,
        "write with F_SEAL_FUTURE_WRITE",
    )?;
    expect_errno(
        map(&f, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED),
        Errno::EPERM,
        "a new shared writable mapping with F_SEAL_FUTURE_WRITE",
    )?;
    m.set(7, 0x5a);
    sys::msync(m.addr(), m.len(), 4).what("msync")?;
    drop(m);
    let mut b = [0u8; 1];
    f.pread_full(&mut b, 7).what("pread")?;
    ensure!(b[0] == 0x5a, "the old mapping's store was lost");
    Ok(())
}

/// memfd_create's own errors, and F_GET_SEALS on a file that is no memfd.
fn creation_errors(cx: &Ctx) -> TestResult {
    expect_errno(
        memfd_create(&[b'a'; 250], 0),
        Errno::EINVAL,
        "a 250-byte name",
    )?;
    memfd_create(&[b'a'; 249], 0).what("a 249-byte name")?;
    expect_errno(memfd_create(b"x", 0x100), Errno::EINVAL, "an unknown flag")?;
    expect_errno(
        memfd_create(b"x", MFD_HUGETLB),
        Errno::EINVAL,
        "MFD_HUGETLB",
    )?;
    expect_errno(
        memfd_create(b"x", MFD_EXEC | MFD_NOEXEC_SEAL),
        Errno::EINVAL,
        "MFD_EXEC with MFD_NOEXEC_SEAL",
    )?;
    // SAFETY: the kernel checks the bad name pointer.
    let r = ret(unsafe { syscall2(abi::syscall::SYS_MEMFD_CREATE, 16, 0) });
    expect_errno(r, Errno::EFAULT, "a name at a bad address")?;
    let plain = File::create(&cx.path("plain")).what("create")?;
    expect_errno(
        fcntl(&plain, F_GET_SEALS, 0),
        Errno::EINVAL,
        "F_GET_SEALS of a regular file",
    )?;
    expect_errno(
        fcntl(&plain, F_ADD_SEALS, F_SEAL_WRITE),
        Errno::EINVAL,
        "F_ADD_SEALS of a regular file",
    )
}
