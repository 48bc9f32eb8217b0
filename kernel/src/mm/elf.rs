//! An ELF executable's headers, read from its file (mm layer): the ELF header, the program
//! headers and the `PT_INTERP` path are all exec reads into memory; the loader
//! (`elf_loader`) maps the segments from the file's pages. Checks and errors are Linux's
//! (`fs/binfmt_elf.c`): a file that is not a riscv64 ELF executable is ENOEXEC, program
//! headers cut short by the end of the file are EIO.

use alloc::string::String;
use alloc::vec::Vec;

use abi::Errno;

/// Program header types and flags the loader looks at.
pub const PT_LOAD: u32 = 1;
pub const PT_INTERP: u32 = 3;
pub const PT_PHDR: u32 = 6;
pub const PF_X: u32 = 1;
pub const PF_W: u32 = 2;
pub const PF_R: u32 = 4;

const EM_RISCV: u16 = 243;
const ET_EXEC: u16 = 2;
const ET_DYN: u16 = 3;
/// Size of an ELF64 header and of one ELF64 program header.
const EHDR_SIZE: usize = 64;
const PHDR_SIZE: usize = 56;
/// Most bytes of program headers Linux reads (`load_elf_phdrs`).
const PHDRS_MAX: usize = 65536;
/// Longest `PT_INTERP` entry (`PATH_MAX`).
const INTERP_MAX: u64 = 4096;

/// One program header.
#[derive(Clone, Copy, Debug)]
pub struct Phdr {
    pub ptype: u32,
    pub flags: u32,
    pub offset: u64,
    pub vaddr: u64,
    pub filesz: u64,
    pub memsz: u64,
}

/// What the loader needs of an executable: its kind, entry, program headers and size.
#[derive(Clone, Debug)]
pub struct Elf {
    /// Position independent (`ET_DYN`: a PIE, a static PIE or a loader).
    pub dynamic: bool,
    pub entry: u64,
    pub phoff: u64,
    pub phdrs: Vec<Phdr>,
    /// The file's size when its headers were read.
    pub size: u64,
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap_or_default())
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or_default())
}

/// Read exactly `buf.len()` bytes of `node` at `off`: EIO if the file ends first (Linux's
/// `elf_read`).
fn read_exact(node: &vfs::NodeRef, off: u64, buf: &mut [u8]) -> Result<(), Errno> {
    if vfs::read_fully(&**node, off, buf)? != buf.len() {
        return Err(Errno::EIO);
    }
    Ok(())
}

/// The first `head.len()` bytes of the file (what follows its end reads as zero): enough to
/// tell an ELF header or a `#!` line.
pub fn read_head(node: &vfs::NodeRef, head: &mut [u8]) -> Result<usize, Errno> {
    head.fill(0);
    Ok(vfs::read_fully(&**node, 0, head)?)
}

/// Read and check the headers of the executable `node`, `head` being its first bytes (at
/// least the ELF header's 64, zero past the end of the file).
pub fn read_headers(node: &vfs::NodeRef, head: &[u8]) -> Result<Elf, Errno> {
    let h = head.get(..EHDR_SIZE).ok_or(Errno::ENOEXEC)?;
    // Little-endian 64-bit ELF, an executable or a shared object, for RISC-V.
    if h[..4] != *b"\x7fELF" || h[4] != 2 || h[5] != 1 {
        return Err(Errno::ENOEXEC);
    }
    let dynamic = match u16_at(h, 16) {
        ET_EXEC => false,
        ET_DYN => true,
        _ => return Err(Errno::ENOEXEC),
    };
    if u16_at(h, 18) != EM_RISCV {
        return Err(Errno::ENOEXEC);
    }
    let entry = u64_at(h, 24);
    let phoff = u64_at(h, 32);
    let phent = u16_at(h, 54) as usize;
    let phnum = u16_at(h, 56) as usize;
    if phent != PHDR_SIZE || phnum == 0 || phnum * PHDR_SIZE > PHDRS_MAX {
        return Err(Errno::ENOEXEC);
    }
    let size = node.getattr()?.size;
    let mut raw = super::heap::try_zeroed(phnum * PHDR_SIZE)?;
    read_exact(node, phoff, &mut raw)?;
    let mut phdrs = Vec::new();
    phdrs.try_reserve(phnum).map_err(|_| Errno::ENOMEM)?;
    for p in raw.chunks_exact(PHDR_SIZE) {
        phdrs.push(Phdr {
            ptype: u32_at(p, 0),
            flags: u32_at(p, 4),
            offset: u64_at(p, 8),
            vaddr: u64_at(p, 16),
            filesz: u64_at(p, 32),
            memsz: u64_at(p, 40),
        });
    }
    Ok(Elf {
        dynamic,
        entry,
        phoff,
        phdrs,
        size,
    })
}

impl Elf {
    /// The interpreter path the first `PT_INTERP` entry names, if any, as Linux reads it:
    /// an entry shorter than 2 bytes, longer than `PATH_MAX` or not ending in NUL is
    /// ENOEXEC, one cut short by the end of the file EIO; the path ends at its first NUL
    /// (what follows is padding), and an empty one names no file (ENOENT).
    pub fn interp_path(&self, node: &vfs::NodeRef) -> Result<Option<String>, Errno> {
        let Some(ph) = self.phdrs.iter().find(|p| p.ptype == PT_INTERP) else {
            return Ok(None);
        };
        if !(2..=INTERP_MAX).contains(&ph.filesz) {
            return Err(Errno::ENOEXEC);
        }
        let mut bytes = alloc::vec![0u8; ph.filesz as usize];
        read_exact(node, ph.offset, &mut bytes)?;
        if bytes.last() != Some(&0) {
            return Err(Errno::ENOEXEC);
        }
        let len = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        if len == 0 {
            return Err(Errno::ENOENT);
        }
        bytes.truncate(len);
        String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| Errno::ENOEXEC)
    }

    /// The `PT_LOAD` entries that occupy memory.
    pub fn loads(&self) -> impl Iterator<Item = &Phdr> {
        self.phdrs
            .iter()
            .filter(|p| p.ptype == PT_LOAD && p.memsz != 0)
    }

    /// User address of the program headers (AT_PHDR) at load bias `bias`: `PT_PHDR`'s, else
    /// where the `PT_LOAD` segment whose file bytes hold them puts them.
    pub fn phdr_address(&self, bias: usize) -> usize {
        if let Some(p) = self.phdrs.iter().find(|p| p.ptype == PT_PHDR) {
            return (p.vaddr as usize).wrapping_add(bias);
        }
        let len = (self.phdrs.len() * PHDR_SIZE) as u64;
        self.loads()
            .find(|p| {
                p.offset <= self.phoff
                    && self.phoff.saturating_add(len) <= p.offset.saturating_add(p.filesz)
            })
            .map_or(0, |p| {
                (p.vaddr as usize)
                    .wrapping_add(bias)
                    .wrapping_add((self.phoff - p.offset) as usize)
            })
    }

    /// The page-aligned span `[lowest, highest)` of the `PT_LOAD` segments (unbiased).
    pub fn load_span(&self) -> Result<(usize, usize), Errno> {
        let (mut lo, mut hi) = (usize::MAX, 0usize);
        for p in self.loads() {
            let end = (p.vaddr as usize)
                .checked_add(p.memsz as usize)
                .filter(|&e| e <= super::USER_END)
                .ok_or(Errno::ENOEXEC)?;
            lo = lo.min(super::page_floor(p.vaddr as usize));
            hi = hi.max(super::page_ceil(end));
        }
        if lo >= hi {
            return Err(Errno::ENOEXEC);
        }
        Ok((lo, hi))
    }
}

/// Size of an ELF64 program header (AT_PHENT).
pub const PHENT: usize = PHDR_SIZE;
