//! Running a program (task layer): execve and the first process. exec opens the program
//! through an [`OpenExec`] the caller hands in (the file layer's), follows `#!`
//! interpreters, reads the ELF headers and has mm map the program from the file's pages.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::Ordering::Relaxed;

use abi::Errno;

use super::cred;
use super::exit::stop_other_threads;
use super::files;
use super::fork::{new_process_thread, start_process};
use super::process::{kstack_top, new_kstack, release_vfork_parent, ProcInner};
use super::sched::{current_pid, current_ref, wake, with_current, with_thread, yield_now, SCHED};
use super::signal;
use crate::arch::trap::TrapFrame;
use crate::mm::addr_space::AddrSpace;
use crate::mm::elf;
use crate::mm::elf_loader::Image;
use crate::mm::file_pages::MappedFile;

/// `comm` and `cmdline` of a program run as `path` with `argv`.
pub(super) fn names_of(path: &str, argv: &[String]) -> (String, Vec<u8>) {
    let base = path.rsplit('/').next().unwrap_or(path);
    let mut end = base.len().min(15);
    while !base.is_char_boundary(end) {
        end -= 1;
    }
    let mut cmdline = Vec::new();
    for a in argv {
        cmdline.extend_from_slice(a.as_bytes());
        cmdline.push(0);
    }
    (String::from(&base[..end]), cmdline)
}

/// The environment init starts with.
pub(super) const INIT_ENV: [&str; 7] = [
    "HOME=/",
    "PATH=/bin:/usr/bin:/sbin",
    "TERM=vt100",
    "SHELL=/bin/sh",
    "USER=root",
    "LOGNAME=root",
    "PS1=\\w # ",
];

/// How many `#!` interpreters may chain (Linux: 4).
pub(super) const MAX_SHEBANG_DEPTH: usize = 4;

/// The interpreter line of a script (`#!interp [arg]`), if `head` (the file's first bytes,
/// zero past its end) is one.
pub(super) fn shebang(head: &[u8]) -> Result<Option<(String, Option<String>)>, Errno> {
    if !head.starts_with(b"#!") {
        return Ok(None);
    }
    let line_end = head
        .iter()
        .position(|&b| b == b'\n' || b == 0)
        .unwrap_or(head.len());
    let line = &head[2..line_end];
    let line = core::str::from_utf8(line)
        .map_err(|_| Errno::ENOEXEC)?
        .trim();
    let (interp, arg) = match line.find([' ', '\t']) {
        Some(i) => (&line[..i], Some(line[i..].trim())),
        None => (line, None),
    };
    if interp.is_empty() {
        return Err(Errno::ENOEXEC);
    }
    Ok(Some((
        String::from(interp),
        arg.filter(|a| !a.is_empty()).map(String::from),
    )))
}

/// How many bytes of a program exec reads to tell what it is (Linux's `BINPRM_BUF_SIZE`):
/// the ELF header, or the `#!` line.
const HEAD_BYTES: usize = 256;

/// A new address space running the program at `path` (an ELF executable, static or with a
/// `PT_INTERP` loader, or a `#!` script run by its interpreter): (space, entry, stack pointer).
/// Only the programs' headers are read; their segments are mapped from the files' pages.
/// What [`load_program`] made: the address space, the entry point, the stack pointer, and
/// the file whose code runs (a script's interpreter for a script).
pub(super) type Loaded = (AddrSpace, usize, usize, Arc<dyn MappedFile>);

pub(super) fn load_program(
    open_exec: OpenExec,
    cwd: &str,
    path: &str,
    mut argv: Vec<String>,
    envp: &[String],
    creds: &cred::Cred,
) -> Result<Loaded, Errno> {
    let mut path = String::from(path);
    let mut file = open_exec(cwd, &path)?;
    let mut head = [0u8; HEAD_BYTES];
    elf::read_head(file.node(), &mut head)?;
    for depth in 0.. {
        let Some((interp, arg)) = shebang(&head)? else {
            break;
        };
        if depth == MAX_SHEBANG_DEPTH {
            return Err(Errno::ELOOP);
        }
        let mut new_argv = alloc::vec![interp.clone()];
        new_argv.extend(arg);
        new_argv.push(path.clone());
        new_argv.extend(argv.into_iter().skip(1));
        argv = new_argv;
        file = open_exec(cwd, &interp)?;
        elf::read_head(file.node(), &mut head)?;
        path = interp;
    }
    let prog = elf::read_headers(file.node(), &head)?;
    // A dynamically linked program: its loader is opened as Linux opens it (relative to
    // the cwd if the path is relative); a missing one is the open's error (ENOENT).
    let interp = match prog.interp_path(file.node())? {
        Some(interp_path) => {
            let ifile = open_exec(cwd, &interp_path)?;
            elf::read_head(ifile.node(), &mut head)?;
            let ielf = elf::read_headers(ifile.node(), &head).map_err(|e| {
                log::info!("execve: bad program interpreter {interp_path} ({e:?})");
                Errno::ELIBBAD
            })?;
            Some((ifile, ielf))
        }
        None => None,
    };
    let mut space = AddrSpace::new()?;
    let elf = space.load_elf(
        Image {
            file: &file,
            elf: &prog,
        },
        interp.as_ref().map(|(file, elf)| Image { file, elf }),
    )?;
    let ids = crate::mm::elf_loader::AuxIds {
        uid: creds.uid,
        euid: creds.euid,
        gid: creds.gid,
        egid: creds.egid,
    };
    let sp = space.setup_stack(&argv, envp, &path, &elf, ids)?;
    Ok((space, elf.start, sp, file))
}

/// How exec opens a program (or a script's interpreter, or a program's loader): `(cwd,
/// path)` to the file, opened for reading, once the caller may execute it (EACCES for
/// anything but a regular file). The file layer's, handed in by the caller (exec and boot
/// live above it).
pub type OpenExec = fn(&str, &str) -> Result<Arc<dyn MappedFile>, Errno>;

/// Create the first process from the executable at `path`, with descriptors `files`.
pub fn spawn_init(
    path: &str,
    argv: Vec<String>,
    files: Box<dyn files::FileTable>,
    open_exec: OpenExec,
) -> Result<(), Errno> {
    let env: Vec<String> = INIT_ENV.iter().map(|s| String::from(*s)).collect();
    let (comm, cmdline) = names_of(path, &argv);
    let (space, entry, sp, exe) =
        load_program(open_exec, "/", path, argv, &env, &cred::Cred::default())?;
    let kstack = new_kstack()?;
    let tf = Box::new(TrapFrame::new_user(entry, sp, kstack_top(&kstack)));
    let inner = ProcInner::first(space, files, 1, comm, cmdline, Some(exe));
    let mut s = SCHED.lock();
    let t = new_process_thread(
        &mut s,
        inner,
        tf,
        kstack,
        signal::SigMask::default(),
        u64::MAX,
        None,
    );
    start_process(&mut s, &t);
    Ok(())
}

/// execve's first step in a process with several threads (Linux's `de_thread`): the others
/// exit, and the caller waits until they are gone. The caller keeps its tid (Linux gives
/// it the pid; here a non-leader thread that execs keeps its own tid).
pub(super) fn de_thread() -> Result<(), Errno> {
    let me = current_ref();
    let p = me.process.clone();
    loop {
        if me.must_exit() {
            // Another thread exits the group or execs at the same time: it wins.
            return Err(signal::ERESTARTSYS);
        }
        if p.inner.lock().threads.len() <= 1 {
            return Ok(());
        }
        stop_other_threads(&p, me);
        yield_now();
    }
}

/// Replace the current program (execve), its file opened by `open_exec`.
pub fn exec(
    path: &str,
    argv: Vec<String>,
    envp: Vec<String>,
    open_exec: OpenExec,
) -> Result<(), Errno> {
    let (cwd, creds) = with_current(|p| (p.cwd.clone(), p.cred.clone()));
    let (comm, cmdline) = names_of(path, &argv);
    let (space, entry, sp, exe) = load_program(open_exec, &cwd, path, argv, &envp, &creds)?;
    // The point of no return: Linux also kills the other threads only once the new image
    // has loaded.
    de_thread()?;
    with_thread(|t| {
        let ksp = t.tf.kernel_sp;
        *t.tf = TrapFrame::new_user(entry, sp, ksp);
        t.sig.saved_mask = None;
        t.robust_list = 0;
        t.clear_child_tid = 0;
    });
    super::ptimer::delete_all(current_pid());
    let closed = with_current(|p| {
        p.comm = comm;
        p.cmdline = cmdline;
        let old_exe = p.exe.replace(exe);
        p.dumpable = true;
        p.execed = true;
        let (uid, euid) = (p.cred.uid, p.cred.euid);
        p.cred.caps.on_exec(uid, euid);
        space.activate();
        // The new program's code (only this hart runs the new space): no stale instructions
        // from reused frames.
        crate::arch::hart::fence_i_local();
        current_ref().process.satp.store(space.satp(), Relaxed);
        p.old_rss_peak = p.rss_peak();
        p.space = space;
        p.sig.reset_for_exec();
        with_thread(|t| t.sig.alt = Default::default());
        // The new image is in place: a parent waiting in vfork goes on (Linux releases it
        // in exec_mmap, once the old memory is no longer the child's).
        let vfork_parent = release_vfork_parent(p);
        (p.files.take_close_on_exec(), vfork_parent, old_exe)
    });
    let (closed, vfork_parent, old_exe) = closed;
    drop(old_exe);
    if let Some(parent) = vfork_parent {
        wake(&parent);
    }
    // Outside the process lock: a last close may write back data.
    let pid = current_pid();
    closed.close(pid);
    Ok(())
}
