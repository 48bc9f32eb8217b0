//! Loading a program into a fresh address space (mm layer): an ELF executable's segments
//! (static, PIE at [`ET_DYN_BASE`], and a dynamic program's `PT_INTERP` loader below the
//! mmap area's top), mapped from the file's page cache as Linux maps them, and the initial
//! stack (argv, envp, the auxiliary vector) the program starts with. The task layer's exec
//! opens the file, reads its headers (`elf`) and calls these.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use abi::Errno;

use super::addr_space::{AddrSpace, STACK_SIZE, STACK_TOP};
use super::area::{Access, Area, FileArea, Mapped, Perm};
use super::elf::{Elf, PF_R, PF_W, PF_X, PHENT, PT_INTERP};
use super::file_pages::{keep_recent, shared_table, MappedFile, Running};
use super::page_table::PteFlags;
use super::{page_ceil, page_floor, PAGE_SIZE, USER_BASE, USER_END};

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

/// An executable to load: its open file (kept open by the areas that map it) and headers.
pub struct Image<'a> {
    pub file: &'a Arc<dyn MappedFile>,
    pub elf: &'a Elf,
}

/// One `PT_LOAD` segment, placed: `[va, va + memsz)` in memory, the first `filesz` bytes
/// from the file at `off`, the rest zero.
struct Segment {
    va: usize,
    memsz: usize,
    filesz: usize,
    off: u64,
    perm: Perm,
}

impl Segment {
    fn end(&self) -> usize {
        self.va + self.memsz
    }
}

/// Most bytes the loader copies through the heap at once (segment bytes that cannot be
/// mapped from the file's pages).
const COPY_CHUNK: usize = 64 << 10;

impl AddrSpace {
    /// Load an ELF executable (`ET_EXEC`, or a PIE / static-PIE `ET_DYN`, which is placed at
    /// [`ET_DYN_BASE`]); maps the signal trampoline and the vDSO and reserves the stack.
    /// `interp` is the program's `PT_INTERP` loader (see [`Elf::interp_path`]), which must
    /// then be given: it is placed as Linux places it (like an mmap, top down below the mmap
    /// area's top, clear of everything mapped) and the program starts at its entry.
    /// A bad program is ENOEXEC; a bad interpreter is ELIBBAD. The segments are mapped from
    /// the files' pages (see [`Self::map_segments`]): nothing is read here but the bytes
    /// that share a page with another segment or with the bss.
    pub fn load_elf(
        &mut self,
        prog: Image<'_>,
        interp: Option<Image<'_>>,
    ) -> Result<ElfInfo, Errno> {
        let elf = prog.elf;
        let has_interp = elf.phdrs.iter().any(|p| p.ptype == PT_INTERP);
        if has_interp != interp.is_some() {
            return Err(Errno::ENOEXEC);
        }
        let bias = if elf.dynamic { ET_DYN_BASE } else { 0 };
        let phdr = elf.phdr_address(bias);
        if let Ok(key) = prog.file.key() {
            self.running = Some(Running::new(key)?);
        }
        let image_end = self.map_segments(&prog, bias)?;
        let entry = (elf.entry as usize).wrapping_add(bias);
        self.map_trampoline_and_vdso()?;
        let (base, start) = match interp {
            Some(interp) => {
                let interp_bias = self.load_interp(&interp).map_err(|e| {
                    log::info!("execve: bad program interpreter ({e:?})");
                    match e {
                        Errno::ENOMEM => Errno::ENOMEM,
                        _ => Errno::ELIBBAD,
                    }
                })?;
                let ientry = (interp.elf.entry as usize).wrapping_add(interp_bias);
                (interp_bias, ientry)
            }
            None => (0, entry),
        };
        // Re-apply final permissions to pages populated while copying (the loader writes
        // with write permission); a file page keeps its clean (read-only) view.
        let pages: Vec<(usize, PteFlags)> = self
            .frames
            .iter()
            .filter_map(|(&va, m)| self.area_of(va).map(|a| (va, a.pte_of(va, Some(m)))))
            .collect();
        self.pt.set_flags_many(pages);
        self.brk_start = image_end;
        self.brk = image_end;
        self.add_area(STACK_TOP - STACK_SIZE, STACK_TOP, Perm::R | Perm::W)?;
        Ok(ElfInfo {
            entry,
            phdr,
            phent: PHENT,
            phnum: elf.phdrs.len(),
            base,
            start,
        })
    }

    /// Load a program interpreter (an `ET_DYN` image, or `ET_EXEC` at its own addresses)
    /// and return its load bias. An `ET_DYN` one goes where a top-down mmap of its whole
    /// span would go, so it overlaps neither the program nor the vDSO.
    fn load_interp(&mut self, interp: &Image<'_>) -> Result<usize, Errno> {
        let bias = if interp.elf.dynamic {
            let (lo, hi) = interp.elf.load_span()?;
            self.free_gap_top_down(hi - lo)? - lo
        } else {
            0
        };
        self.map_segments(interp, bias)?;
        Ok(bias)
    }

    /// Map an image's `PT_LOAD` segments at `bias`, as Linux does (`elf_load`): the whole
    /// pages of a segment's file bytes are a private mapping of the file (its pages are the
    /// file's page cache, shared by every process running it, read at their first touch;
    /// a store copies the page), the bss past them anonymous zero pages. A page the file
    /// bytes share with the bss (its tail is zero, not the file's next bytes) or with
    /// another segment is a page of its own into which the bytes are copied now, and so is
    /// every page of a file that cannot be mapped (no key) or of a segment whose address
    /// and offset disagree within a page. Returns the page-aligned end of the highest segment.
    fn map_segments(&mut self, img: &Image<'_>, bias: usize) -> Result<usize, Errno> {
        let elf = img.elf;
        let mut segs: Vec<Segment> = Vec::new();
        for p in elf.loads() {
            let va = (p.vaddr as usize).checked_add(bias).ok_or(Errno::ENOEXEC)?;
            let (memsz, filesz) = (p.memsz as usize, p.filesz as usize);
            // The file bytes must exist: a truncated program is ENOEXEC (Linux would map
            // past the end of the file and fault later).
            if filesz > memsz
                || va.checked_add(memsz).is_none_or(|e| e > USER_END)
                || va < USER_BASE
                || p.offset.checked_add(p.filesz).is_none_or(|e| e > elf.size)
            {
                return Err(Errno::ENOEXEC);
            }
            let mut perm = Perm::empty();
            for (bit, pm) in [(PF_R, Perm::R), (PF_W, Perm::W), (PF_X, Perm::X)] {
                if p.flags & bit != 0 {
                    perm |= pm;
                }
            }
            segs.push(Segment {
                va,
                memsz,
                filesz,
                off: p.offset,
                perm,
            });
        }
        segs.sort_by_key(|s| s.va);
        if segs.is_empty() || segs.windows(2).any(|w| w[0].end() > w[1].va) {
            return Err(Errno::ENOEXEC);
        }
        let table = match img.file.key() {
            Ok(key) => {
                let t = shared_table(&**img.file, key)?;
                keep_recent(&t);
                Some((key, t))
            }
            Err(_) => None,
        };
        let mut image_end = 0;
        for k in 0..segs.len() {
            let s = &segs[k];
            let (vstart, vend) = (page_floor(s.va), page_ceil(s.end()));
            let file_end = s.va + s.filesz;
            let shares_prev = k > 0 && page_ceil(segs[k - 1].end()) > vstart;
            let shares_next = segs.get(k + 1).is_some_and(|n| page_floor(n.va) < vend);
            // Whole file pages [fstart, fend), mapped from the file.
            let (fstart, fend) = match &table {
                Some(_)
                    if s.filesz > 0 && s.va % PAGE_SIZE == (s.off % PAGE_SIZE as u64) as usize =>
                {
                    let fstart = if shares_prev { page_ceil(s.va) } else { vstart };
                    let tail = file_end % PAGE_SIZE != 0;
                    let fend = if tail && (s.memsz > s.filesz || shares_next) {
                        page_floor(file_end)
                    } else {
                        page_ceil(file_end)
                    };
                    (fstart, fend.max(fstart))
                }
                _ => (vstart, vstart),
            };
            if fstart < fend {
                let (key, t) = table.as_ref().ok_or(Errno::ENOEXEC)?;
                let off0 = s.off - (s.va - fstart) as u64;
                let mut fa = FileArea::new(img.file.clone(), *key, t.clone(), true, off0);
                fa.va0 = fstart;
                self.insert_area(Area {
                    file: Some(fa),
                    ..Area::new(fstart, fend, s.perm)
                })
                .map_err(|_| Errno::ENOEXEC)?;
            }
            // Anonymous pages: [vstart, fstart) and [fend, vend). A page shared with the
            // previous segment is its area already: it gets this segment's permissions too.
            let mut a = vstart;
            if shares_prev {
                let prev = self.area_of(vstart).ok_or(Errno::ENOEXEC)?;
                self.areas.get_mut(&prev.start).ok_or(Errno::ENOEXEC)?.perm |= s.perm;
                a = vstart + PAGE_SIZE;
            }
            for (from, to) in [(a, fstart), (fend.max(a), vend)] {
                if from >= to {
                    continue;
                }
                // A last page shared with the next segment is an area of its own, so the
                // next segment's permissions reach that page only.
                let cut = if shares_next && to == vend && to - from > PAGE_SIZE {
                    to - PAGE_SIZE
                } else {
                    to
                };
                self.add_area(from, cut, s.perm)
                    .map_err(|_| Errno::ENOEXEC)?;
                if cut < to {
                    self.add_area(cut, to, s.perm).map_err(|_| Errno::ENOEXEC)?;
                }
            }
            // The file bytes outside [fstart, fend) are copied in.
            let (file_lo, file_hi) = (s.va, file_end);
            for (from, to) in [(file_lo, file_hi.min(fstart)), (file_lo.max(fend), file_hi)] {
                if from < to {
                    let off = s.off + (from - s.va) as u64;
                    self.copy_from_file(img.file.node(), off, from, to - from)?;
                }
            }
            image_end = image_end.max(vend);
        }
        Ok(image_end)
    }

    /// Copy `len` bytes of `node` at `off` to user address `va` (in areas of this space).
    fn copy_from_file(
        &mut self,
        node: &vfs::NodeRef,
        mut off: u64,
        mut va: usize,
        mut len: usize,
    ) -> Result<(), Errno> {
        let mut buf = super::heap::try_zeroed(len.min(COPY_CHUNK))?;
        while len > 0 {
            let n = len.min(buf.len());
            if vfs::read_fully(&**node, off, &mut buf[..n])? != n {
                return Err(Errno::ENOEXEC);
            }
            self.copy_to_user(va, &buf[..n])
                .map_err(|_| Errno::ENOEXEC)?;
            off += n as u64;
            va += n;
            len -= n;
        }
        Ok(())
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
