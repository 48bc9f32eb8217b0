//! Core files: when a signal whose default action dumps core ends a process (SIGSEGV,
//! SIGABRT, SIGQUIT, ...), the kernel writes the process's memory and the faulting thread's
//! registers as an ELF core file, `core` in its working directory (`/proc/sys/kernel/
//! core_pattern` reads `core`), which gdb reads beside the program (`gdb prog core`).
//!
//! As Linux's `do_coredump` and `elf_core_dump` with the default `coredump_filter`:
//! - Nothing is written for a process that made itself undumpable (prctl PR_SET_DUMPABLE 0)
//!   or unless RLIMIT_CORE's soft limit is at least a page (ELF's
//!   `min_coredump`); the bytes written stop at the limit, and a core cut short by it does
//!   not count as dumped (the wait status's core bit stays clear, as Linux's).
//! - An existing `core` is reused only if it is a regular file of the process's owner with
//!   one link (it is emptied first); anything else there, or a directory the process may not
//!   write, means no core.
//! - The file: an ELF header (ET_CORE, EM_RISCV), a PT_NOTE segment with NT_PRSTATUS (the
//!   signal, the ids and the general registers, `pc` first) and NT_PRPSINFO (the name and
//!   arguments), then a PT_LOAD per memory area. Anonymous memory (heap, stack, anonymous
//!   mappings) is dumped, its pages never touched left as holes (they read as zeros, as the
//!   memory did); a private file mapping the program may write (.data, .bss) is dumped whole;
//!   read-only or executable file mappings, shared file mappings, the vDSO and inaccessible
//!   areas get a PT_LOAD with no bytes (their contents are in the files).

use alloc::vec;
use alloc::vec::Vec;

use vfs::FileType;

use crate::arch::trap::TrapFrame;
use crate::fs::file::OpenFile;
use crate::fs::path::{self, Loc};
use crate::mm::maps::MapEntry;
use crate::mm::PAGE_SIZE;

/// RLIMIT_CORE.
const RLIMIT_CORE: usize = 4;
const PT_LOAD: u32 = 1;
const PT_NOTE: u32 = 4;
const NT_PRSTATUS: u32 = 1;
const NT_PRPSINFO: u32 = 3;
const EHDR_SIZE: usize = 64;
const PHDR_SIZE: usize = 56;
/// `struct elf_prstatus` on riscv64: the common part (112 bytes), 32 registers, pr_fpvalid.
const PRSTATUS_SIZE: usize = 376;
/// `struct elf_prpsinfo` on 64-bit Linux.
const PRPSINFO_SIZE: usize = 136;

/// How an area goes into the core.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Dump {
    /// Nothing (p_filesz 0).
    None,
    /// The pages the process has (the others are holes).
    Resident,
    /// Every page.
    Whole,
}

fn dump_of(m: &MapEntry) -> Dump {
    let anonymous = m.ino == 0 && m.dev == 0 && m.name != "[vdso]";
    if !m.read {
        Dump::None
    } else if anonymous {
        Dump::Resident
    } else if m.write && !m.shared && m.name != "[vdso]" {
        Dump::Whole
    } else {
        Dump::None
    }
}

/// Write the current process's core for `sig`, `tf` being the registers of the thread the
/// signal ended. Whether a whole core was written.
pub fn dump(sig: usize, tf: &TrapFrame) -> bool {
    let pid = crate::task::current_pid();
    let (limit, cwd, dumpable) = crate::task::with_current(|p| {
        let soft = p.limits.other[RLIMIT_CORE]
            .or_else(|| super::process::limit_of(RLIMIT_CORE))
            .map_or(0, |l| l.0);
        (soft, p.cwd.clone(), p.dumpable)
    });
    if !dumpable || limit < PAGE_SIZE as u64 {
        return false;
    }
    let Some(maps) = crate::task::ps::maps(pid) else {
        return false;
    };
    let Ok(file) = open_core(&cwd) else {
        return false;
    };
    match write_core(&file, sig, tf, pid, &maps, limit) {
        Ok(whole) => whole,
        Err(_) => false,
    }
}

/// `core` in `cwd`, created (mode 0600) or, if it is a regular file of the caller's with one
/// link, emptied; opened for writing.
fn open_core(cwd: &str) -> Result<alloc::sync::Arc<OpenFile>, abi::Errno> {
    let dir = Loc::from_path(cwd)?;
    let loc = match path::resolve(&dir, "core", false) {
        Ok(loc) => {
            let m = loc.node.getattr()?;
            let fsuid = crate::task::current_cred().fsuid;
            if m.ftype != FileType::Regular || m.uid != fsuid || m.nlink != 1 {
                return Err(abi::Errno::EEXIST);
            }
            crate::fs::perm::check(&crate::fs::perm::cred(), &loc, crate::fs::perm::MAY_WRITE)?;
            if m.size != 0 {
                loc.node.truncate(0)?;
                crate::mm::file_pages::truncated(
                    crate::fs::lock::FileKey {
                        mount: loc.mount.id,
                        ino: m.ino,
                    },
                    0,
                );
            }
            loc
        }
        Err(abi::Errno::ENOENT) => crate::fs::create(&dir, "core", FileType::Regular, 0o600, 0)?,
        Err(e) => return Err(e),
    };
    OpenFile::new(loc, false, true, 0)
}

fn put_u16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}
fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// One ELF note: its header, the name "CORE" padded to 4 bytes, the descriptor padded too.
fn note(out: &mut Vec<u8>, kind: u32, desc: &[u8]) {
    let mut h = [0u8; 12];
    put_u32(&mut h, 0, 5);
    put_u32(&mut h, 4, desc.len() as u32);
    put_u32(&mut h, 8, kind);
    out.extend_from_slice(&h);
    out.extend_from_slice(b"CORE\0\0\0\0");
    out.extend_from_slice(desc);
    out.resize(out.len().next_multiple_of(4), 0);
}

/// The notes: NT_PRSTATUS and NT_PRPSINFO.
fn notes(sig: usize, tf: &TrapFrame, pid: usize) -> Vec<u8> {
    let info = crate::task::ps::info(pid);
    let (ppid, pgid, sid, uid, gid) = info
        .as_ref()
        .map_or((0, 0, 0, 0, 0), |i| (i.ppid, i.pgid, i.sid, i.uid, i.gid));
    let mut st = vec![0u8; PRSTATUS_SIZE];
    put_u32(&mut st, 0, sig as u32); // si_signo
    put_u16(&mut st, 12, sig as u16); // pr_cursig
    put_u32(&mut st, 32, crate::task::current_tid() as u32); // pr_pid: the thread
    put_u32(&mut st, 36, ppid as u32);
    put_u32(&mut st, 40, pgid as u32);
    put_u32(&mut st, 44, sid as u32);
    // pr_reg: pc, then x1..x31 (Linux's `struct user_regs_struct` order).
    put_u64(&mut st, 112, tf.sepc as u64);
    for r in 1..32 {
        put_u64(&mut st, 112 + r * 8, tf.regs[r] as u64);
    }
    let mut ps = vec![0u8; PRPSINFO_SIZE];
    ps[1] = b'R'; // pr_sname
    put_u32(&mut ps, 16, uid);
    put_u32(&mut ps, 20, gid);
    put_u32(&mut ps, 24, pid as u32);
    put_u32(&mut ps, 28, ppid as u32);
    put_u32(&mut ps, 32, pgid as u32);
    put_u32(&mut ps, 36, sid as u32);
    if let Some(i) = &info {
        let name = i.comm.as_bytes();
        let n = name.len().min(15);
        ps[40..40 + n].copy_from_slice(&name[..n]);
        let args: Vec<u8> = i
            .cmdline
            .iter()
            .map(|&c| if c == 0 { b' ' } else { c })
            .collect();
        let args = args.trim_ascii_end();
        let n = args.len().min(79);
        ps[56..56 + n].copy_from_slice(&args[..n]);
    }
    let mut out = Vec::new();
    note(&mut out, NT_PRSTATUS, &st);
    note(&mut out, NT_PRPSINFO, &ps);
    out
}

/// Lay the core out and write it; `Ok(false)` when the limit cut it short.
fn write_core(
    f: &OpenFile,
    sig: usize,
    tf: &TrapFrame,
    pid: usize,
    maps: &[MapEntry],
    limit: u64,
) -> Result<bool, abi::Errno> {
    let notes = notes(sig, tf, pid);
    let phnum = 1 + maps.len();
    let notes_at = EHDR_SIZE + PHDR_SIZE * phnum;
    let mut head = vec![0u8; notes_at];
    head[..4].copy_from_slice(b"\x7fELF");
    head[4] = 2; // ELFCLASS64
    head[5] = 1; // ELFDATA2LSB
    head[6] = 1; // EV_CURRENT
    put_u16(&mut head, 16, 4); // ET_CORE
    put_u16(&mut head, 18, 243); // EM_RISCV
    put_u32(&mut head, 20, 1);
    put_u64(&mut head, 32, EHDR_SIZE as u64); // e_phoff
    put_u32(&mut head, 48, 0x5); // EF_RISCV_RVC | EF_RISCV_FLOAT_ABI_DOUBLE
    put_u16(&mut head, 52, EHDR_SIZE as u16);
    put_u16(&mut head, 54, PHDR_SIZE as u16);
    put_u16(&mut head, 56, phnum as u16);
    let phdr = |head: &mut [u8],
                i: usize,
                kind: u32,
                flags: u32,
                off: u64,
                va: u64,
                filesz: u64,
                memsz: u64,
                align: u64| {
        let at = EHDR_SIZE + i * PHDR_SIZE;
        put_u32(head, at, kind);
        put_u32(head, at + 4, flags);
        put_u64(head, at + 8, off);
        put_u64(head, at + 16, va);
        put_u64(head, at + 32, filesz);
        put_u64(head, at + 40, memsz);
        put_u64(head, at + 48, align);
    };
    phdr(
        &mut head,
        0,
        PT_NOTE,
        0,
        notes_at as u64,
        0,
        notes.len() as u64,
        0,
        4,
    );
    let mut at = (notes_at + notes.len()).next_multiple_of(PAGE_SIZE) as u64;
    let mut placed = Vec::with_capacity(maps.len());
    for (i, m) in maps.iter().enumerate() {
        let size = (m.end - m.start) as u64;
        let dump = dump_of(m);
        let filesz = if dump == Dump::None { 0 } else { size };
        let flags = u32::from(m.read) << 2 | u32::from(m.write) << 1 | u32::from(m.exec);
        phdr(
            &mut head,
            i + 1,
            PT_LOAD,
            flags,
            at,
            m.start as u64,
            filesz,
            size,
            PAGE_SIZE as u64,
        );
        placed.push((at, dump));
        at += filesz;
    }
    let total = at;
    let mut written = 0u64;
    let mut emit = |off: u64, bytes: &[u8]| -> Result<bool, abi::Errno> {
        if written + bytes.len() as u64 > limit {
            return Ok(false);
        }
        let mut done = 0;
        while done < bytes.len() {
            let n = super::io::write_file_at(f, off + done as u64, &bytes[done..])?;
            if n == 0 {
                return Err(abi::Errno::ENOSPC);
            }
            done += n;
        }
        written += bytes.len() as u64;
        Ok(true)
    };
    if !emit(0, &head)? || !emit(notes_at as u64, &notes)? {
        return Ok(false);
    }
    let mut page = vec![0u8; PAGE_SIZE];
    for (m, &(off, dump)) in maps.iter().zip(&placed) {
        if dump == Dump::None {
            continue;
        }
        let resident = if dump == Dump::Resident {
            super::args::with_space(|s| s.mincore(m.start, m.end)).unwrap_or_default()
        } else {
            Vec::new()
        };
        for (k, va) in (m.start..m.end).step_by(PAGE_SIZE).enumerate() {
            if dump == Dump::Resident && resident.get(k).copied().unwrap_or(0) == 0 {
                continue; // never touched: a hole, zeros as the memory was
            }
            if super::args::copy_in(va, &mut page).is_err() {
                page.fill(0); // past a file's end, or gone: zeros
            }
            if !emit(off + (k * PAGE_SIZE) as u64, &page)? {
                return Ok(false);
            }
        }
    }
    // The holes at the end still count: the file is as long as the layout says.
    if f.loc.node.getattr()?.size < total {
        f.loc.node.truncate(total)?;
    }
    Ok(true)
}
