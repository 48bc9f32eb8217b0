//! The descriptor table as the task layer sees it (task layer; the file layer implements it).
//!
//! Contract: every process owns one table ([`super::ProcInner::files`]); the task layer only
//! copies it at fork, takes out its close-on-exec descriptors at execve and takes it all at
//! exit. What a descriptor is, and every system call on one, belongs to the file layer
//! (`fs::file::FdTable`, which implements [`FileTable`]; the system calls reach their table
//! through its `fds` accessor). Closing may write back data and give the CPU away, so what
//! is taken out under the process's lock is closed by [`ClosingFiles::close`] after it.

use alloc::boxed::Box;
use core::any::Any;

/// A process's descriptor table.
pub trait FileTable: Any + Send {
    /// fork: a table with the same open files (the child shares their offsets).
    fn fork(&self) -> Box<dyn FileTable>;
    /// execve: take out the close-on-exec descriptors, to be closed after the lock.
    fn take_close_on_exec(&mut self) -> Box<dyn ClosingFiles>;
    /// exit: take out every descriptor, to be closed after the lock.
    fn take_all(&mut self) -> Box<dyn ClosingFiles>;
}

/// Descriptors taken out of a table, not yet closed.
pub trait ClosingFiles {
    /// Close them as process `pid`'s: its record locks on them go (at exit, all it holds).
    fn close(self: Box<Self>, pid: usize);
}
