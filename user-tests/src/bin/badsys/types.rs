//! The wrong type of file: a directory where a file is expected and the reverse, a file used
//! as a directory (`file/x`, `file/`), a directory moved into itself, existing and missing
//! names, for every call that cares.

use user_tests::abi::syscall::*;
use user_tests::prelude::*;

use crate::case::{sys, Runner, Want};
use crate::fixture::{CStr, Fixture};

pub fn cases(r: &mut Runner, fx: &Fixture) {
    let at = AT_FDCWD as usize;
    let (f, d, missing) = (fx.file.p(), fx.sub.p(), fx.missing.p());
    let under_file_name = CStr::new(&fx.path("f/x"));
    let file_slash_name = CStr::new(&fx.path("f/"));
    let new_slash_name = CStr::new(&fx.path("newfile/"));
    let inner_name = CStr::new(&fx.path("d/inner"));
    let (under_file, file_slash) = (under_file_name.p(), file_slash_name.p());
    let (new_slash, inner) = (new_slash_name.p(), inner_name.p());
    let out = [0u8; 256];
    let t = out.as_ptr() as usize;
    let (rd, wr, rw) = (O_RDONLY as usize, O_WRONLY as usize, O_RDWR as usize);
    let creat = (O_CREAT | O_RDWR) as usize;
    let rd_dir = (O_DIRECTORY | O_RDONLY) as usize;
    let rmdir = AT_REMOVEDIR as usize;
    let (isdir, notdir, exist) = (Errno::EISDIR, Errno::ENOTDIR, Errno::EEXIST);
    // FAT stores no mode bits, so the file looks executable there and its bytes decide.
    let exec_file =
        if r.fat { Want::Either(Errno::EACCES, Errno::ENOEXEC) } else { Want::Err(Errno::EACCES) };
    r.run(&[
        sys("openat a directory O_WRONLY", SYS_OPENAT, &[at, d, wr, 0], isdir),
        sys("openat a directory O_RDWR", SYS_OPENAT, &[at, d, rw, 0], isdir),
        sys("openat a directory O_CREAT", SYS_OPENAT, &[at, d, creat, 0o644], isdir),
        sys("openat a file with O_DIRECTORY", SYS_OPENAT, &[at, f, rd_dir, 0], notdir),
        sys("openat file/x", SYS_OPENAT, &[at, under_file, rd, 0], notdir),
        sys("openat O_CREAT file/x", SYS_OPENAT, &[at, under_file, creat, 0o644], notdir),
        sys("openat file/ (trailing slash)", SYS_OPENAT, &[at, file_slash, rd, 0], notdir),
        sys("openat O_CREAT newfile/", SYS_OPENAT, &[at, new_slash, creat, 0o644], isdir),
        sys("mkdirat over a file", SYS_MKDIRAT, &[at, f, 0o755], exist),
        sys("mkdirat over a directory", SYS_MKDIRAT, &[at, d, 0o755], exist),
        sys("mkdirat file/x", SYS_MKDIRAT, &[at, under_file, 0o755], notdir),
        sys("unlinkat a directory", SYS_UNLINKAT, &[at, d, 0], isdir),
        sys("rmdir a file", SYS_UNLINKAT, &[at, f, rmdir], notdir),
        sys("rmdir a non-empty directory", SYS_UNLINKAT, &[at, d, rmdir], Errno::ENOTEMPTY),
        sys("rmdir file/x", SYS_UNLINKAT, &[at, under_file, rmdir], notdir),
        sys("unlinkat file/ (trailing slash)", SYS_UNLINKAT, &[at, file_slash, 0], notdir),
        sys("truncate a directory", SYS_TRUNCATE, &[d, 0], isdir),
        sys("chdir to a file", SYS_CHDIR, &[f], notdir),
        sys("chdir to file/x", SYS_CHDIR, &[under_file], notdir),
        sys("newfstatat file/x", SYS_NEWFSTATAT, &[at, under_file, t, 0], notdir),
        sys("statfs file/x", SYS_STATFS, &[under_file, t], notdir),
        sys("readlinkat a regular file", SYS_READLINKAT, &[at, f, t, 64], Errno::EINVAL),
        sys("readlinkat a directory", SYS_READLINKAT, &[at, d, t, 64], Errno::EINVAL),
        sys("readlinkat a missing name", SYS_READLINKAT, &[at, missing, t, 64], Errno::ENOENT),
        sys("rename a directory over a file", SYS_RENAMEAT2, &[at, d, at, f, 0], notdir),
        sys("rename a file over a non-empty directory", SYS_RENAMEAT2, &[at, f, at, d, 0], isdir),
        sys("rename a directory into itself", SYS_RENAMEAT2, &[at, d, at, inner, 0], Errno::EINVAL),
        sys("rename a missing name", SYS_RENAMEAT2, &[at, missing, at, inner, 0], Errno::ENOENT),
        sys("rename to file/x", SYS_RENAMEAT2, &[at, d, at, under_file, 0], notdir),
        sys("linkat a directory", SYS_LINKAT, &[at, d, at, missing, 0], Errno::EPERM),
        sys("linkat onto an existing name", SYS_LINKAT, &[at, f, at, d, 0], exist),
        sys("symlinkat onto an existing name", SYS_SYMLINKAT, &[f, at, d], exist),
        sys("execve a directory", SYS_EXECVE, &[d, 0, 0], Errno::EACCES),
        sys("execve a missing file", SYS_EXECVE, &[missing, 0, 0], Errno::ENOENT),
        sys("execve file/x", SYS_EXECVE, &[under_file, 0, 0], notdir),
        sys("execve a non-executable regular file", SYS_EXECVE, &[f, 0, 0], exec_file),
        sys("fcntl F_GETFL of a directory fd", SYS_FCNTL, &[fx.dir_fd as usize, 3, 0], Want::Ok),
    ]);
}
