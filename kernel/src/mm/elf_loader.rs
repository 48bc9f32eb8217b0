//! Loading a program into a fresh address space (mm layer): an ELF executable's segments
//! (static, PIE at [`ET_DYN_BASE`], and a dynamic program's `PT_INTERP` loader below the
//! mmap area's top), copied in from the image the caller read, and the initial
//! stack (argv, envp, the auxiliary vector) the program starts with. The task layer's exec
//! reads the file and calls these.

use alloc::string::String;
use alloc::vec::Vec;

use abi::Errno;

use super::addr_space::{AddrSpace, STACK_SIZE, STACK_TOP};
use super::area::{Access, Mapped, Perm};
use super::page_table::PteFlags;
use super::{page_ceil, page_floor, PAGE_SIZE};

/// Where a position-independent (`ET_DYN`) executable is loaded (two thirds of the way up,
/// as Linux's `ELF_ET_DYN_BASE`).
pub const ET_DYN_BASE: usize = 0x2a_aaaa_a000;

/// What the loader learned from an executable, for the initial stack's auxiliary vector.
#[derive(Clone, Copy, Debug)]
pub struct ElfInfo {
    pub entry: usize,
    /// User address of the program headers (AT_PHDR), their size and count.
    pub phdr: usize,
    pub phent: usize,
    pub phnum: usize,
    /// The interpreter's load bias (AT_BASE; 0 without one).
    pub base: usize,
    /// Where the program starts: the interpreter's entry, else `entry`.
    pub start: usize,
}

/// The credentials the auxiliary vector reports (AT_UID, AT_EUID, AT_GID, AT_EGID).
#[derive(Clone, Copy, Debug, Default)]
pub struct AuxIds {
    pub uid: u32,
    pub euid: u32,
    pub gid: u32,
    pub egid: u32,
}

/// The interpreter path a dynamically linked executable names in `PT_INTERP`, if any.
/// A malformed entry (shorter than 2 bytes, longer than `PATH_MAX`, outside the file, not
/// NUL-terminated, not UTF-8) is ENOEXEC, as Linux.
pub fn interp_path(image: &[u8]) -> Result<Option<String>, Errno> {
    use xmas_elf::program::Type;
    let Ok(elf) = xmas_elf::ElfFile::new(image) else {
        return Ok(None); // load_elf reports the bad header
    };
    let Some(ph) = elf
        .program_iter()
        .find(|ph| ph.get_type() == Ok(Type::Interp))
    else {
        return Ok(None);
    };
    let (off, len) = (ph.offset() as usize, ph.file_size() as usize);
    if !(2..=4096).contains(&len) {
        return Err(Errno::ENOEXEC);
    }
    let bytes = off
        .checked_add(len)
        .and_then(|end| image.get(off..end))
        .ok_or(Errno::ENOEXEC)?;
    let (last, path) = bytes.split_last().ok_or(Errno::ENOEXEC)?;
    if *last != 0 || path.contains(&0) {
        return Err(Errno::ENOEXEC);
    }
    let path = core::str::from_utf8(path).map_err(|_| Errno::ENOEXEC)?;
    Ok(Some(String::from(path)))
}

/// A parsed RISC-V 64-bit ELF image and whether it is position independent (`ET_DYN`);
/// anything else (another machine or class, not `ET_EXEC`/`ET_DYN`) is ENOEXEC.
fn parse(image: &[u8]) -> Result<(xmas_elf::ElfFile<'_>, bool), Errno> {
    use xmas_elf::header::Type as EType;
    let elf = xmas_elf::ElfFile::new(image).map_err(|_| Errno::ENOEXEC)?;
    let h = &elf.header;
    if h.pt1.class() != xmas_elf::header::Class::SixtyFour
        || h.pt2.machine().as_machine() != xmas_elf::header::Machine::RISC_V
    {
        return Err(Errno::ENOEXEC);
    }
    let dynamic = match h.pt2.type_().as_type() {
        EType::Executable => false,
        EType::SharedObject => true,
        _ => return Err(Errno::ENOEXEC),
    };
    Ok((elf, dynamic))
}

/// The page-aligned span `[lowest, highest)` of an image's `PT_LOAD` segments (unbiased).
fn load_span(elf: &xmas_elf::ElfFile<'_>) -> Result<(usize, usize), Errno> {
    use xmas_elf::program::Type;
    let (mut lo, mut hi) = (usize::MAX, 0usize);
    for ph in elf.program_iter() {
        if ph.get_type() != Ok(Type::Load) || ph.mem_size() == 0 {
            continue;
        }
        let va = ph.virtual_addr() as usize;
        let end = va
            .checked_add(ph.mem_size() as usize)
            .ok_or(Errno::ENOEXEC)?;
        lo = lo.min(page_floor(va));
        hi = hi.max(page_ceil(end));
    }
    if lo >= hi {
        return Err(Errno::ENOEXEC);
    }
    Ok((lo, hi))
}

/// User address of the program headers (AT_PHDR): `PT_PHDR`'s, else where the `PT_LOAD`
/// segment holding them puts them.
fn phdr_address(
    elf: &xmas_elf::ElfFile<'_>,
    bias: usize,
    phoff: usize,
    phent: usize,
    phnum: usize,
) -> usize {
    use xmas_elf::program::Type;
    let mut phdr = 0;
    for ph in elf.program_iter() {
        if ph.get_type() == Ok(Type::Phdr) {
            phdr = (ph.virtual_addr() as usize).wrapping_add(bias);
        } else if ph.get_type() == Ok(Type::Load)
            && phdr == 0
            && (ph.offset() as usize) <= phoff
            && phoff.saturating_add(phent.saturating_mul(phnum))
                <= ph.offset().saturating_add(ph.file_size()) as usize
        {
            phdr = (ph.virtual_addr() as usize)
                .wrapping_add(bias)
                .wrapping_add(phoff - ph.offset() as usize);
        }
    }
    phdr
}

impl AddrSpace {
    /// Load an ELF executable (`ET_EXEC`, or a PIE / static-PIE `ET_DYN`, which is placed at
    /// [`ET_DYN_BASE`]); maps the signal trampoline and the vDSO and reserves the stack.
    /// `interp` is the image of the program's `PT_INTERP` loader (see [`interp_path`]), which
    /// must then be given: it is placed as Linux places it (like an mmap, top down below the
    /// mmap area's top, clear of everything mapped) and the program starts at its entry.
    /// A bad program is ENOEXEC; a bad interpreter is ELIBBAD.
    pub fn load_elf(&mut self, image: &[u8], interp: Option<&[u8]>) -> Result<ElfInfo, Errno> {
        let (elf, dynamic) = parse(image)?;
        let has_interp = elf
            .program_iter()
            .any(|ph| ph.get_type() == Ok(xmas_elf::program::Type::Interp));
        if has_interp != interp.is_some() {
            return Err(Errno::ENOEXEC);
        }
        let bias = if dynamic { ET_DYN_BASE } else { 0 };
        let h = &elf.header;
        let phoff = h.pt2.ph_offset() as usize;
        let phent = h.pt2.ph_entry_size() as usize;
        let phnum = h.pt2.ph_count() as usize;
        let phdr = phdr_address(&elf, bias, phoff, phent, phnum);
        let image_end = self.load_segments(&elf, image, bias)?;
        let entry = (h.pt2.entry_point() as usize).wrapping_add(bias);
        self.map_trampoline_and_vdso()?;
        let (base, start) = match interp {
            Some(interp_image) => {
                let interp_bias = self.load_interp(interp_image).map_err(|e| {
                    log::info!("execve: bad program interpreter ({e:?})");
                    Errno::ELIBBAD
                })?;
                let (ielf, _) = parse(interp_image).map_err(|_| Errno::ELIBBAD)?;
                let ientry = (ielf.header.pt2.entry_point() as usize).wrapping_add(interp_bias);
                (interp_bias, ientry)
            }
            None => (0, entry),
        };
        // Re-apply final permissions to pages populated while copying.
        let pages: Vec<(usize, PteFlags)> = self
            .frames
            .keys()
            .filter_map(|&va| self.area_of(va).map(|a| (va, a.perm.pte())))
            .collect();
        self.pt.set_flags_many(pages);
        self.brk_start = image_end;
        self.brk = image_end;
        self.add_area(STACK_TOP - STACK_SIZE, STACK_TOP, Perm::R | Perm::W)?;
        Ok(ElfInfo {
            entry,
            phdr,
            phent,
            phnum,
            base,
            start,
        })
    }

    /// Load a program interpreter (an `ET_DYN` image, or `ET_EXEC` at its own addresses)
    /// and return its load bias. An `ET_DYN` one goes where a top-down mmap of its whole
    /// span would go, so it overlaps neither the program nor the vDSO.
    fn load_interp(&mut self, image: &[u8]) -> Result<usize, Errno> {
        let (elf, dynamic) = parse(image)?;
        let bias = if dynamic {
            let (lo, hi) = load_span(&elf)?;
            self.free_gap_top_down(hi - lo)? - lo
        } else {
            0
        };
        self.load_segments(&elf, image, bias)?;
        Ok(bias)
    }

    /// Map an image's `PT_LOAD` segments at `bias` and copy their file bytes in; returns the
    /// page-aligned end of the highest segment.
    fn load_segments(
        &mut self,
        elf: &xmas_elf::ElfFile<'_>,
        image: &[u8],
        bias: usize,
    ) -> Result<usize, Errno> {
        use xmas_elf::program::Type;
        let mut image_end = 0;
        for ph in elf.program_iter() {
            if ph.get_type() != Ok(Type::Load) || ph.mem_size() == 0 {
                continue;
            }
            let va = (ph.virtual_addr() as usize)
                .checked_add(bias)
                .ok_or(Errno::ENOEXEC)?;
            let memsz = ph.mem_size() as usize;
            let filesz = ph.file_size() as usize;
            let off = ph.offset() as usize;
            let end = va.checked_add(memsz).ok_or(Errno::ENOEXEC)?;
            if filesz > memsz || off.checked_add(filesz).is_none_or(|e| e > image.len()) {
                return Err(Errno::ENOEXEC);
            }
            let mut perm = Perm::empty();
            if ph.flags().is_read() {
                perm |= Perm::R;
            }
            if ph.flags().is_write() {
                perm |= Perm::W;
            }
            if ph.flags().is_execute() {
                perm |= Perm::X;
            }
            let (start, stop) = (page_floor(va), page_ceil(end));
            // Segments may share a page boundary; extend an existing area's permissions.
            let mut s = start;
            while s < stop {
                if let Some(a) = self.area_of(s) {
                    let a_end = a.end;
                    self.areas.get_mut(&a.start).ok_or(Errno::ENOEXEC)?.perm |= perm;
                    s = a_end;
                } else {
                    let next = self
                        .areas
                        .range(s..)
                        .next()
                        .map_or(stop, |(&k, _)| k.min(stop));
                    self.add_area(s, next, perm).map_err(|_| Errno::ENOEXEC)?;
                    s = next;
                }
            }
            self.copy_to_user(va, &image[off..off + filesz])
                .map_err(|_| Errno::ENOEXEC)?;
            image_end = image_end.max(stop);
        }
        if image_end == 0 {
            return Err(Errno::ENOEXEC);
        }
        Ok(image_end)
    }

    /// The signal trampoline page and a private copy of the vDSO, its data filled in.
    fn map_trampoline_and_vdso(&mut self) -> Result<(), Errno> {
        let tramp = crate::arch::vdso::SIGRETURN_TRAMPOLINE;
        self.add_area(tramp, tramp + PAGE_SIZE, Perm::R | Perm::X)
            .map_err(|_| Errno::ENOEXEC)?;
        let code: Vec<u8> = crate::arch::vdso::TRAMPOLINE_CODE
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect();
        self.copy_to_user(tramp, &code)?;
        let vdso = crate::arch::vdso::BASE;
        let (vdso_image, data_at, data) = crate::arch::vdso::image();
        self.add_area(vdso, vdso + PAGE_SIZE, Perm::R | Perm::X)
            .map_err(|_| Errno::ENOEXEC)?;
        self.copy_to_user(vdso, vdso_image)?;
        self.copy_to_user(vdso + data_at, &data)?;
        Ok(())
    }

    /// Copy `data` to user address `va`, populating pages (ignores the W permission: used by
    /// the loader and stack setup).
    pub(super) fn copy_to_user(&mut self, mut va: usize, mut data: &[u8]) -> Result<(), Errno> {
        while !data.is_empty() {
            let page = page_floor(va);
            let area = self.area_of(va).ok_or(Errno::EFAULT)?;
            let pa = match self.pt.translate(page) {
                Some((pa, _)) => pa,
                None => self.populate(page, &area, area.perm | Perm::W, Access::Write)?,
            };
            let n = data.len().min(page + PAGE_SIZE - va);
            let at = va - page;
            // The loader writes only the image, trampoline and stack: never shared memory.
            let Some(Mapped::Private(f)) = self.frames.get_mut(&page) else {
                return Err(Errno::EFAULT);
            };
            f.bytes_mut()[at..at + n].copy_from_slice(&data[..n]);
            let _ = pa;
            data = &data[n..];
            va += n;
        }
        Ok(())
    }

    /// Build the initial stack (Linux layout: argc, argv[], NULL, envp[], NULL, auxv, with the
    /// strings, AT_RANDOM's 16 bytes and the platform name above) and return the stack
    /// pointer.
    pub fn setup_stack(
        &mut self,
        argv: &[String],
        envp: &[String],
        execfn: &str,
        elf: &ElfInfo,
        ids: AuxIds,
    ) -> Result<usize, Errno> {
        let mut sp = STACK_TOP;
        let mut push_str = |s: &String, space: &mut Self| -> Result<usize, Errno> {
            sp -= s.len() + 1;
            space.copy_to_user(sp, s.as_bytes())?;
            space.copy_to_user(sp + s.len(), &[0])?;
            Ok(sp)
        };
        let mut argv_ptrs = Vec::with_capacity(argv.len());
        for a in argv {
            argv_ptrs.push(push_str(a, self)?);
        }
        let mut envp_ptrs = Vec::with_capacity(envp.len());
        for e in envp {
            envp_ptrs.push(push_str(e, self)?);
        }
        let execfn_ptr = push_str(&String::from(execfn), self)?;
        let platform = push_str(&String::from("riscv64"), self)?;
        // 16 random bytes for AT_RANDOM (glibc's stack protector and pointer guard).
        sp = (sp - 16) & !0xf;
        let mut random_bytes = [0u8; 16];
        crate::arch::random::fill(&mut random_bytes);
        self.copy_to_user(sp, &random_bytes)?;
        let random = sp;
        // ISA letters of rv64gc (bit = letter - 'a'): i, m, a, f, d, c.
        let hwcap = [b'i', b'm', b'a', b'f', b'd', b'c']
            .iter()
            .fold(0usize, |m, &l| m | 1 << (l - b'a'));
        let auxv: [(usize, usize); 19] = [
            (3, elf.phdr),                             // AT_PHDR
            (4, elf.phent),                            // AT_PHENT
            (5, elf.phnum),                            // AT_PHNUM
            (6, PAGE_SIZE),                            // AT_PAGESZ
            (7, elf.base),                             // AT_BASE
            (8, 0),                                    // AT_FLAGS
            (9, elf.entry),                            // AT_ENTRY
            (11, ids.uid as usize),                    // AT_UID
            (12, ids.euid as usize),                   // AT_EUID
            (13, ids.gid as usize),                    // AT_GID
            (14, ids.egid as usize),                   // AT_EGID
            (15, platform),                            // AT_PLATFORM
            (16, hwcap),                               // AT_HWCAP
            (17, crate::arch::time::CLK_TCK as usize), // AT_CLKTCK
            (23, 0),                                   // AT_SECURE
            (25, random),                              // AT_RANDOM
            (26, 0),                                   // AT_HWCAP2
            (31, execfn_ptr),                          // AT_EXECFN
            (33, crate::arch::vdso::BASE),             // AT_SYSINFO_EHDR (mapped by load_elf)
        ];
        let mut words: Vec<usize> = Vec::new();
        words.push(argv.len());
        words.extend(&argv_ptrs);
        words.push(0);
        words.extend(&envp_ptrs);
        words.push(0);
        for (k, v) in auxv {
            words.extend([k, v]);
        }
        words.extend([0, 0]); // AT_NULL
        sp = (sp - words.len() * 8) & !0xf;
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        self.copy_to_user(sp, &bytes)?;
        Ok(sp)
    }
}
