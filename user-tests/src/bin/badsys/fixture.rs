//! What the cases point at: a scratch directory with a file, a subdirectory and a symbolic
//! link, descriptors on them, and memory with an unmapped page and a read-only page.
//!
//! The bad addresses are ones this process never uses (see `user_tests::probe`), so a broken
//! kernel that wrote through one would corrupt nothing the program relies on.

use user_tests::abi::syscall::*;
use user_tests::prelude::*;
use user_tests::sys::{AnonMap, Fd};
use user_tests::PAGE_SIZE;

use crate::case::sc;

/// An address inside the kernel image on QEMU virt (below any user mapping).
pub const KERNEL_LOW: usize = 0x8020_0000;
/// An address in the upper (kernel) half of a 64-bit address space.
pub const KERNEL_HIGH: usize = 0xffff_ffc0_0000_1000;

/// The memory the cases point into.
pub struct Mem {
    /// Two read-write pages, then one unmapped page (`hole`).
    pub map: AnonMap,
    /// A read-only page.
    pub ro: usize,
}

impl Mem {
    pub fn new() -> SysResult<Mem> {
        // The read-only page first: a kernel may hand a freed range to the next mmap.
        let ro = sc(
            SYS_MMAP,
            &[
                0,
                PAGE_SIZE,
                PROT_READ as usize,
                (MAP_PRIVATE | MAP_ANONYMOUS) as usize,
                usize::MAX,
                0,
            ],
        )?;
        let mut map = AnonMap::new(3 * PAGE_SIZE)?;
        map.unmap_tail(2 * PAGE_SIZE)?;
        Ok(Mem { map, ro })
    }
    /// The first byte of the unmapped page right after the two mapped ones.
    pub fn hole(&self) -> usize {
        self.map.addr() + 2 * PAGE_SIZE
    }
    /// `n` mapped bytes ending exactly where the hole begins.
    pub fn tail(&self, n: usize) -> usize {
        self.hole() - n
    }
    /// The two mapped pages.
    pub fn bytes(&mut self) -> &mut [u8] {
        self.map.as_mut_slice()
    }
}

impl Drop for Mem {
    fn drop(&mut self) {
        let _ = sc(SYS_MUNMAP, &[self.ro, PAGE_SIZE]);
    }
}

/// The bad pointers every pointer argument is tried with (a name, an address).
pub fn bad_ptrs(m: &Mem) -> [(&'static str, usize); 4] {
    [
        ("NULL", 0),
        ("kernel image", KERNEL_LOW),
        ("kernel half", KERNEL_HIGH),
        ("unmapped", m.hole()),
    ]
}

/// A NUL-terminated string kept alive while cases use its address.
pub struct CStr(Vec<u8>);

impl CStr {
    pub fn new(s: &str) -> CStr {
        let mut v = Vec::with_capacity(s.len() + 1);
        v.extend_from_slice(s.as_bytes());
        v.push(0);
        CStr(v)
    }
    /// The string's address, for a syscall argument.
    pub fn p(&self) -> usize {
        self.0.as_ptr() as usize
    }
}

/// The scratch directory `DIR/badsys.<pid>` and what is in it.
pub struct Fixture {
    pub dir: String,
    /// `f`: a regular file of 100 bytes (0, 1, ..., 99).
    pub file: CStr,
    /// `d`: a directory holding one directory, `inner`.
    pub sub: CStr,
    /// `missing`: a name that does not exist.
    pub missing: CStr,
    /// `f` opened read-write, at offset 0.
    pub fd: Fd,
    /// `f` opened read-only.
    pub ro_fd: Fd,
    /// `d` opened as a directory.
    pub dir_fd: Fd,
    /// `l`, a symbolic link to `f` (None on FAT, which has none).
    pub link: Option<CStr>,
}

impl Fixture {
    /// The path of `name` inside the scratch directory.
    pub fn path(&self, name: &str) -> String {
        user_tests::path_join(&self.dir, name)
    }
}

/// Create the scratch directory in `base` (replacing a stale one of the same pid).
pub fn setup(base: &str, fat: bool) -> SysResult<Fixture> {
    let dir = user_tests::path_join(base, &format!("badsys.{}", sys::getpid()));
    let _ = sys::remove_tree(&dir);
    sys::mkdir(&dir, 0o755)?;
    let file = user_tests::path_join(&dir, "f");
    let data: Vec<u8> = (0..100u8).collect();
    let fd = sys::open(&file, O_RDWR | O_CREAT | O_TRUNC, 0o644)?;
    sys::write_all(fd, &data)?;
    sys::lseek(fd, 0, SEEK_SET)?;
    let ro_fd = sys::open(&file, O_RDONLY, 0)?;
    let sub = user_tests::path_join(&dir, "d");
    sys::mkdir(&sub, 0o755)?;
    sys::mkdir(&user_tests::path_join(&sub, "inner"), 0o755)?;
    let dir_fd = sys::open(&sub, O_RDONLY | O_DIRECTORY, 0)?;
    let link = if fat {
        None
    } else {
        let l = user_tests::path_join(&dir, "l");
        sys::symlink("f", &l)?;
        Some(CStr::new(&l))
    };
    Ok(Fixture {
        file: CStr::new(&file),
        sub: CStr::new(&sub),
        missing: CStr::new(&user_tests::path_join(&dir, "missing")),
        dir,
        fd,
        ro_fd,
        dir_fd,
        link,
    })
}
