//! The kvdb pager the kernel gives dbfs: a [`DiskWindow`] over the dbfs disk.
//!
//! `read` hands out slices of the window (zero copy: the first touch of a page faults it in);
//! `write` sends pages to the disk and refreshes resident copies; `write_direct` (the pages of
//! large values) sends them from the caller's buffer and drops resident copies; `sync` is the
//! disk's flush, the barrier kvdb's commit order relies on (pages -> sync -> meta -> sync).

use alloc::sync::Arc;

use kvdb::{Error, Pager, Result};

use crate::drivers::window::DiskWindow;

pub struct WindowPager {
    window: Arc<DiskWindow>,
}

impl WindowPager {
    pub fn new(window: Arc<DiskWindow>) -> Self {
        WindowPager { window }
    }
}

impl Pager for WindowPager {
    type Page<'a>
        = &'a [u8]
    where
        Self: 'a;

    fn read(&self, offset: u64, len: usize) -> Result<&[u8]> {
        let offset = usize::try_from(offset).map_err(|_| Error::Io)?;
        self.window.slice(offset, len).ok_or(Error::Io)
    }

    fn write(&self, writes: &[(u64, &[u8])]) -> Result<()> {
        self.window.write(writes).map_err(|e| match e {
            vfs::VfsError::NoMemory | vfs::VfsError::NoSpace => Error::NoSpace,
            _ => Error::Io,
        })
    }

    fn sync(&self) -> Result<()> {
        self.window.sync().map_err(|_| Error::Io)
    }

    fn len(&self) -> u64 {
        self.window.len() as u64
    }

    fn read_into(&self, offset: u64, dst: &mut [u8]) -> Result<()> {
        let offset = usize::try_from(offset).map_err(|_| Error::Io)?;
        self.window.read_into(offset, dst).map_err(|_| Error::Io)
    }

    fn read_into_pieces(&self, offset: u64, dst: &mut [&mut [u8]]) -> Result<()> {
        let offset = usize::try_from(offset).map_err(|_| Error::Io)?;
        self.window
            .read_into_pieces(offset, dst)
            .map_err(|_| Error::Io)
    }

    fn direct_reads(&self) -> bool {
        true
    }

    fn byte_reads(&self) -> bool {
        true
    }

    fn write_direct(&self, writes: &[(u64, &[u8])]) -> Result<()> {
        self.window.write_direct(writes).map_err(|_| Error::Io)
    }

    fn direct_writes(&self) -> bool {
        true
    }

    fn committed(&self, _txid: u64) {
        crate::counters::add_transaction();
    }

    fn capacity(&self) -> u64 {
        self.window.len() as u64
    }
}
