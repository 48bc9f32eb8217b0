//! Kernel parameters: the command line (`-append`) split as `sh` splits words, `key=value`
//! parameters up to `--`, then init's arguments. The parameters are listed in `main.rs`'s
//! module docs.

use alloc::string::String;
use alloc::vec::Vec;

use crate::{drivers, println};

pub struct Params {
    pub init: String,
    pub log: log::LevelFilter,
    pub bcache_mib: usize,
    pub dbfs_fsck: bool,
    /// The root's kind (`rootfs=fat32` default, `rootfs=dbfs`: a dbfs image such as the
    /// Debian root `make debian-root` builds).
    pub rootfs_dbfs: bool,
    /// Check the virtio scatter-gather path on vdc before mounting (`drivers::blk_selftest`).
    pub blk_selftest: bool,
    /// Check the kernel's `memcpy` and `memset` at boot (`arch::mem::selftest`).
    pub mem_selftest: bool,
    /// Print what one 4 KiB `memcpy` costs at boot (`arch::mem::copy_cost`).
    pub copy_cost: bool,
    /// A deliberate spin-lock misuse for the lock checker's test (`lockcheck_plant=double`,
    /// `order`, `switch` or `leaf`; `task::plant_lock_bug`): a `lockcheck` kernel must panic
    /// on it.
    pub lockcheck_plant: Option<String>,
    pub dbfs_dirsync: bool,
    pub dbfs_direct_write: bool,
    /// dbfs window faults may sleep while the disk reads (`drivers::window::set_fault_sleep`);
    /// `dbfs_fault_sleep=0` makes every fault poll with the window locked.
    pub dbfs_fault_sleep: bool,
    /// Large dbfs reads of a stretch read before keep its pages in the disk window
    /// (`drivers::window::large_read::set_keep_rereads`); `dbfs_keep_rereads=0` sends them to the disk.
    pub dbfs_keep_rereads: bool,
    /// read(2) and pread64(2) of dbfs files run without the big kernel lock when there are
    /// several harts (`syscall::unlocked`); `unlocked_reads=0` sends them through the lock.
    pub unlocked_reads: bool,
    /// write(2) and pwrite64(2) of dbfs files that only fill its write-back cache run without
    /// the big kernel lock when there are several harts (`syscall::unlocked`);
    /// `unlocked_writes=0` sends them through the lock.
    pub unlocked_writes: bool,
    /// io_submit hands reads of files and disks to kernel workers and returns before they
    /// complete (`syscall::aio_workers`); `aio_async=0` completes every request at submission.
    pub aio_async: bool,
    /// Spins of a hart waiting for the big kernel lock before it sleeps (`bkl_spins=N`).
    pub bkl_spins: Option<usize>,
    /// How long (µs) an offer of the big kernel lock is kept for the waiting hart it was made
    /// to before another may take it (`bkl_steal_us=N`); `None`: `arch::hart`'s default.
    pub bkl_steal_us: Option<u64>,
    /// Chunk size (bytes) a blank dbfs disk is formatted with; `None`: dbfs's default.
    pub dbfs_chunk: Option<u32>,
    /// `DbFs::set_barrier_bound` in MiB; `None`: kvdb's default.
    pub dbfs_barrier_mib: Option<u64>,
    /// First step of dbfs's background flushes in bytes (`drivers::window::FLUSH_BEHIND_DEFAULT`).
    pub dbfs_flush_behind: usize,
    /// dbfs's write-back (dirty) limit in MiB; `None`: a quarter of the kernel heap.
    pub dbfs_dirty_mib: Option<usize>,
    pub init_args: Vec<String>,
}

/// Split the command line into words as `sh` does, so an init argument can hold spaces
/// (`make run CMD=...` passes a whole shell command line): whitespace separates words;
/// '...' quotes everything up to the next ' ; "..." quotes with \" and \\ escapes; a
/// backslash outside quotes takes the next character as is.
fn split_words(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    cur.push(q);
                }
            }
            '"' => {
                in_word = true;
                while let Some(q) = chars.next() {
                    match q {
                        '"' => break,
                        '\\' => match chars.next() {
                            Some(e @ ('"' | '\\' | '$' | '`')) => cur.push(e),
                            Some(e) => {
                                cur.push('\\');
                                cur.push(e);
                            }
                            None => cur.push('\\'),
                        },
                        _ => cur.push(q),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(e) = chars.next() {
                    cur.push(e);
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    out.push(core::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        out.push(cur);
    }
    out
}

pub fn parse_params(cmdline: &str) -> Params {
    let mut p = Params {
        init: String::from("/bin/init"),
        log: log::LevelFilter::Warn,
        bcache_mib: 8,
        dbfs_fsck: false,
        rootfs_dbfs: false,
        blk_selftest: false,
        mem_selftest: false,
        copy_cost: false,
        lockcheck_plant: None,
        dbfs_dirsync: false,
        dbfs_direct_write: true,
        dbfs_fault_sleep: true,
        dbfs_keep_rereads: true,
        unlocked_reads: true,
        unlocked_writes: true,
        aio_async: true,
        bkl_spins: None,
        bkl_steal_us: None,
        dbfs_chunk: None,
        dbfs_barrier_mib: None,
        dbfs_flush_behind: drivers::window::FLUSH_BEHIND_DEFAULT,
        dbfs_dirty_mib: None,
        init_args: Vec::new(),
    };
    let all = split_words(cmdline);
    let mut words = all.iter().map(String::as_str);
    for w in words.by_ref() {
        if w == "--" {
            break;
        }
        match w.split_once('=') {
            Some(("init", v)) => p.init = String::from(v),
            Some(("log", v)) => p.log = v.parse().unwrap_or(log::LevelFilter::Warn),
            Some(("bcache", v)) => p.bcache_mib = v.parse().unwrap_or(8),
            Some(("dbfs_fsck", v)) => p.dbfs_fsck = v == "1",
            Some(("rootfs", "dbfs")) => p.rootfs_dbfs = true,
            Some(("rootfs", "fat32")) => p.rootfs_dbfs = false,
            Some(("rootfs", v)) => println!("[kernel] rootfs={v}: not fat32 or dbfs; fat32"),
            Some(("blk_selftest", v)) => p.blk_selftest = v == "1",
            Some(("mem_selftest", v)) => p.mem_selftest = v == "1",
            Some(("copy_cost", v)) => p.copy_cost = v == "1",
            Some(("lockcheck_plant", v)) => p.lockcheck_plant = Some(v.into()),
            Some(("dbfs_dirsync", v)) => p.dbfs_dirsync = v == "1",
            Some(("dbfs_direct_write", v)) => p.dbfs_direct_write = v != "0",
            Some(("dbfs_fault_sleep", v)) => p.dbfs_fault_sleep = v != "0",
            Some(("dbfs_keep_rereads", v)) => p.dbfs_keep_rereads = v != "0",
            Some(("unlocked_reads", v)) => p.unlocked_reads = v != "0",
            Some(("unlocked_writes", v)) => p.unlocked_writes = v != "0",
            Some(("aio_async", v)) => p.aio_async = v != "0",
            Some(("bkl_spins", v)) => p.bkl_spins = v.parse().ok(),
            Some(("bkl_steal_us", v)) => p.bkl_steal_us = v.parse().ok(),
            Some(("dbfs_flush_behind_kib", v)) => match v.parse::<usize>() {
                Ok(k) => p.dbfs_flush_behind = k.saturating_mul(1024),
                Err(_) => println!(
                    "[kernel] dbfs_flush_behind_kib={} ignored (a number of KiB, 0 = never)",
                    v
                ),
            },
            Some(("dbfs_dirty_mib", v)) => match v.parse::<usize>() {
                Ok(m) if m <= 4096 => p.dbfs_dirty_mib = Some(m),
                _ => println!("[kernel] dbfs_dirty_mib={} ignored (0..4096)", v),
            },
            Some(("dbfs_barrier_mib", v)) => p.dbfs_barrier_mib = v.parse().ok().filter(|&m| m > 0),
            Some(("dbfs_chunk_kib", v)) => match v.parse::<u32>() {
                Ok(k) if k > 0 && k <= 1024 => p.dbfs_chunk = Some(k * 1024),
                _ => println!("[kernel] dbfs_chunk_kib={} ignored (1..1024)", v),
            },
            _ => println!(
                "[kernel] unknown parameter {:?} (init arguments go after --)",
                w
            ),
        }
    }
    p.init_args = words.map(String::from).collect();
    p
}
