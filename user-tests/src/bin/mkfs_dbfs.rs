//! `mkfs_dbfs [-q] [-L LABEL] [-c CHUNK] DEVICE`: make a fresh dbfs on DEVICE (a block device,
//! `/dev/vdX`, or a regular file of the image's size), the guest's `mkfs.dbfs` (the Debian
//! root and LTP's device tests call it by that name: `mkfs.TYPE` for each type of
//! /proc/filesystems).
//!
//! The same `dbfs::DbFs::mkfs` the kernel formats a blank disk with at boot and `dbfs-fuse
//! mkfs` uses on the host, through a pager of pread/pwrite on the device: it writes the store's
//! first pages (meta pages, empty buckets, the superblock and the root directory), then
//! fsyncs. CHUNK: data chunk size in bytes (default 64 KiB, the kernel's). Exit status 0 on
//! success, 1 on a failure, 2 on a usage error.
#![no_std]
#![no_main]

use core::cell::RefCell;

use kvdb::{Error, Pager, Result};
use user_tests::prelude::*;
use user_tests::raw::syscall3;

const BLKGETSIZE64: usize = 0x8008_1272;

/// The device as a kvdb store: reads are copies (pread), writes pwrite.
struct DevPager {
    file: File,
    len: u64,
    failed: RefCell<Option<Errno>>,
}

impl DevPager {
    fn fail(&self, e: Errno) -> Error {
        *self.failed.borrow_mut() = Some(e);
        Error::Io
    }
}

impl Pager for DevPager {
    type Page<'a> = Vec<u8>;

    fn read(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        if offset
            .checked_add(len as u64)
            .is_none_or(|end| end > self.len)
        {
            return Err(Error::Io);
        }
        let mut buf = vec![0u8; len];
        match self.file.pread_full(&mut buf, offset) {
            Ok(n) if n == len => Ok(buf),
            Ok(_) => Err(Error::Io),
            Err(e) => Err(self.fail(e)),
        }
    }

    fn write(&self, writes: &[(u64, &[u8])]) -> Result<()> {
        for &(offset, bytes) in writes {
            if offset + bytes.len() as u64 > self.len {
                return Err(Error::NoSpace);
            }
            self.file
                .pwrite_all(bytes, offset)
                .map_err(|e| self.fail(e))?;
        }
        Ok(())
    }

    fn sync(&self) -> Result<()> {
        sys::fsync(self.file.fd()).map_err(|e| self.fail(e))
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn capacity(&self) -> u64 {
        self.len
    }
}

/// The size of `file`: BLKGETSIZE64 for a block device, st_size for a regular file.
fn size_of(file: &File) -> SysResult<u64> {
    let mut size: u64 = 0;
    // SAFETY: `size` is a writable u64, what BLKGETSIZE64 stores.
    let r = unsafe {
        syscall3(
            abi::syscall::SYS_IOCTL,
            file.fd() as usize,
            BLKGETSIZE64,
            &mut size as *mut u64 as usize,
        )
    };
    match Errno::from_ret(r) {
        Ok(_) => Ok(size),
        Err(Errno::ENOTTY) => file.stat().map(|st| st.st_size as u64),
        Err(e) => Err(e),
    }
}

fn usage() -> i32 {
    println!("usage: mkfs.dbfs [-q] [-L LABEL] [-c CHUNK] DEVICE");
    2
}

fn main(argv: &[&str]) -> i32 {
    let (mut quiet, mut label, mut chunk, mut device) = (false, "", 64u32 << 10, None);
    let mut args = argv.iter().skip(1);
    while let Some(&a) = args.next() {
        match a {
            "-q" => quiet = true,
            "-L" => match args.next() {
                Some(l) => label = l,
                None => return usage(),
            },
            "-c" => match args.next().and_then(|c| c.parse().ok()) {
                Some(c) => chunk = c,
                None => return usage(),
            },
            _ if a.starts_with('-') || device.is_some() => return usage(),
            _ => device = Some(a),
        }
    }
    let Some(device) = device else {
        return usage();
    };
    let file = match File::open(device, abi::fcntl::O_RDWR, 0) {
        Ok(f) => f,
        Err(e) => {
            println!("mkfs.dbfs: {device}: {}", e.name());
            return 1;
        }
    };
    let len = match size_of(&file) {
        Ok(n) => n / 4096 * 4096,
        Err(e) => {
            println!("mkfs.dbfs: {device}: size: {}", e.name());
            return 1;
        }
    };
    let now = sys::clock_gettime(abi::fcntl::CLOCK_REALTIME).unwrap_or_default();
    let mut uuid = [0u8; 16];
    let seed = sys::getpid() as u64 ^ now.tv_nsec as u64 ^ ((now.tv_sec as u64) << 20);
    let mut rng = xrand::XorShift64::new(seed);
    for b in uuid.iter_mut() {
        *b = rng.next_u64() as u8;
    }
    let opts = dbfs::MkfsOptions {
        label: String::from(label),
        chunk_size: chunk,
        uuid,
        time: vfs::Timestamp {
            sec: now.tv_sec,
            nsec: now.tv_nsec as u32,
        },
        ..Default::default()
    };
    let pager = DevPager {
        file,
        len,
        failed: RefCell::new(None),
    };
    let failed = match dbfs::DbFs::mkfs(pager, opts) {
        Ok(p) => p
            .sync()
            .err()
            .map(|_| p.failed.borrow().unwrap_or(Errno::EIO)),
        Err(e) => {
            println!("mkfs.dbfs: {device}: {e}");
            return 1;
        }
    };
    if let Some(e) = failed {
        println!("mkfs.dbfs: {device}: {}", e.name());
        return 1;
    }
    if !quiet {
        println!(
            "mkfs.dbfs: {device}: dbfs of {} MiB, {} KiB chunks",
            len >> 20,
            chunk >> 10
        );
    }
    0
}

user_tests::entry!(main);
