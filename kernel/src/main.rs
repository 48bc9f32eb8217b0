//! dbfs-os kernel: boots on QEMU `virt` under OpenSBI, mounts the disks, runs `/bin/init`.
//!
//! Boot order: clear .bss, read the device tree (before the heap exists: the tree may sit in
//! RAM the heap will use), set up memory and paging, probe virtio disks, mount file systems,
//! start init, schedule. Subsystems: `arch` (CSRs, console, clock, power), `mm` (frames,
//! page tables, address spaces, checked user access), `trap`, `task` (processes, scheduler),
//! `syscall`, `fs` (VFS), `drivers` (virtio-blk, block cache).
//!
//! Kernel command line (`-append`): `key=value` kernel parameters, then `--`, then the
//! arguments of init. Parameters: `init=PATH` (default /bin/init), `log=LEVEL`
//! (error|warn|info|debug|trace), `bcache=MIB` (block cache per mounted disk, default 8),
//! `blk_selftest=1` (check the virtio-blk scatter-gather
//! path on vdc, overwriting its first 10 MiB, and power off with status 3 if it fails),
//! `mem_selftest=1` (check the kernel's `memcpy`/`memset` against a byte loop at boot, power off
//! with status 3 if they differ),
//! `dbfs_fsck=1` (check the dbfs image at mount with `DbFs::fsck`, print
//! `[kernel] vdd: dbfs fsck: clean` or the problems, and refuse to mount a damaged image),
//! `dbfs_dirsync=1` (every dbfs commit durable when it returns, `DbFs::set_sync_metadata`;
//! default: deferred to fsync, sync and the write-back timer), `dbfs_direct_write=0` (default 1:
//! the whole chunks of a large dbfs write go from the user's pages straight to the disk in one
//! scattered request, no copy, one deferred commit per write, see `dbfs::DIRECT_WRITE_MIN`; 0:
//! every write is copied into the write-back cache, which merges overlapping writes),
//! `dbfs_chunk_kib=K` (the chunk size a blank
//! dbfs disk is formatted with, 1..1024 KiB, a power of two; default 64 KiB, `KERNEL_DBFS_CHUNK_SIZE`),
//! `dbfs_barrier_mib=M` (force a dbfs barrier once M MiB of store pages wait for one,
//! `DbFs::set_barrier_bound`; default a quarter of the disk, at least 16 MiB),
//! `dbfs_flush_behind_kib=K` (start a background device flush after K KiB of direct dbfs
//! writes, doubling the gap while no barrier comes; default 256, 0 = never).
#![no_std]
#![no_main]
#![deny(unsafe_op_in_unsafe_fn)]

extern crate alloc;

#[macro_use]
mod arch;
mod counters;
mod drivers;
mod fs;
mod ipc;
mod mm;
mod syscall;
mod task;
mod trap;
mod tty;

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use arch::csr;
use vfs::BlockDevice;

/// What the kernel needs from the device tree, copied out before the heap exists.
struct BootInfo {
    ram_end: usize,
    timebase_hz: u64,
    uart: Option<usize>,
    test_device: Option<usize>,
    rtc: Option<usize>,
    virtio: [(usize, usize); 16],
    virtio_count: usize,
    bootargs: [u8; 1024],
    bootargs_len: usize,
}

fn read_device_tree(dtb: usize) -> BootInfo {
    let mut info = BootInfo {
        ram_end: mm::RAM_BASE + (128 << 20),
        timebase_hz: 10_000_000,
        uart: None,
        test_device: None,
        rtc: None,
        virtio: [(0, 0); 16],
        virtio_count: 0,
        bootargs: [0; 1024],
        bootargs_len: 0,
    };
    // SAFETY: OpenSBI passes the physical address of a valid flattened device tree in a1; the
    // boot page table's direct map covers it.
    let fdt = match unsafe { fdt::Fdt::from_ptr(mm::phys_to_virt(dtb) as *const u8) } {
        Ok(f) => f,
        Err(e) => {
            println!(
                "[kernel] bad device tree at {:#x}: {:?}; using defaults",
                dtb, e
            );
            return info;
        }
    };
    if let Some(r) = fdt
        .memory()
        .regions()
        .find(|r| r.starting_address as usize == mm::RAM_BASE)
    {
        info.ram_end = mm::RAM_BASE + r.size.unwrap_or(128 << 20);
    }
    if let Some(cpu) = fdt.cpus().next() {
        info.timebase_hz = cpu.timebase_frequency() as u64;
    }
    let first_reg = |n: &fdt::node::FdtNode| n.reg().and_then(|mut r| r.next());
    for node in fdt.all_nodes() {
        let Some(compat) = node.compatible() else {
            continue;
        };
        let Some(reg) = first_reg(&node) else {
            continue;
        };
        let base = reg.starting_address as usize;
        for c in compat.all() {
            match c {
                // The devices the kernel drives itself are kept as direct-map addresses;
                // virtio slots stay physical (the driver maps them, and logs them as such).
                "ns16550a" if info.uart.is_none() => info.uart = Some(mm::phys_to_virt(base)),
                "sifive,test0" | "sifive,test1" if info.test_device.is_none() => {
                    info.test_device = Some(mm::phys_to_virt(base))
                }
                "google,goldfish-rtc" => info.rtc = Some(mm::phys_to_virt(base)),
                "virtio,mmio" if info.virtio_count < info.virtio.len() => {
                    info.virtio[info.virtio_count] = (base, reg.size.unwrap_or(0x1000));
                    info.virtio_count += 1;
                }
                _ => {}
            }
        }
    }
    if let Some(args) = fdt.chosen().bootargs() {
        let n = args.len().min(info.bootargs.len());
        info.bootargs[..n].copy_from_slice(&args.as_bytes()[..n]);
        info.bootargs_len = n;
    }
    info
}

fn clear_bss() {
    extern "C" {
        fn sbss();
        fn ebss();
    }
    // SAFETY: [sbss, ebss) is this image's .bss, not yet used by anything (the boot stack is
    // in .bss.stack, outside that range).
    unsafe {
        core::slice::from_raw_parts_mut(
            sbss as *const () as *mut u8,
            ebss as *const () as usize - sbss as *const () as usize,
        )
        .fill(0)
    };
}

struct Params {
    init: String,
    log: log::LevelFilter,
    bcache_mib: usize,
    dbfs_fsck: bool,
    /// Check the virtio scatter-gather path on vdc before mounting (`drivers::blk_selftest`).
    blk_selftest: bool,
    /// Check the kernel's `memcpy` and `memset` at boot (`arch::mem::selftest`).
    mem_selftest: bool,
    dbfs_dirsync: bool,
    dbfs_direct_write: bool,
    /// Chunk size (bytes) a blank dbfs disk is formatted with; `None`: dbfs's default.
    dbfs_chunk: Option<u32>,
    /// `DbFs::set_barrier_bound` in MiB; `None`: kvdb's default.
    dbfs_barrier_mib: Option<u64>,
    /// First step of dbfs's background flushes in bytes (`mm::window::FLUSH_BEHIND_DEFAULT`).
    dbfs_flush_behind: usize,
    init_args: Vec<String>,
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

fn parse_params(cmdline: &str) -> Params {
    let mut p = Params {
        init: String::from("/bin/init"),
        log: log::LevelFilter::Warn,
        bcache_mib: 8,
        dbfs_fsck: false,
        blk_selftest: false,
        mem_selftest: false,
        dbfs_dirsync: false,
        dbfs_direct_write: true,
        dbfs_chunk: None,
        dbfs_barrier_mib: None,
        dbfs_flush_behind: mm::window::FLUSH_BEHIND_DEFAULT,
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
            Some(("blk_selftest", v)) => p.blk_selftest = v == "1",
            Some(("mem_selftest", v)) => p.mem_selftest = v == "1",
            Some(("dbfs_dirsync", v)) => p.dbfs_dirsync = v == "1",
            Some(("dbfs_direct_write", v)) => p.dbfs_direct_write = v != "0",
            Some(("dbfs_flush_behind_kib", v)) => match v.parse::<usize>() {
                Ok(k) => p.dbfs_flush_behind = k.saturating_mul(1024),
                Err(_) => println!(
                    "[kernel] dbfs_flush_behind_kib={} ignored (a number of KiB, 0 = never)",
                    v
                ),
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

/// Mount a FAT32 file system on `disk` (through its own block cache) at `path`.
fn mount_fat(disk: &Arc<drivers::virtio_blk::VirtioDisk>, path: &str, cache_bytes: usize) -> bool {
    let cache = Arc::new(drivers::block_cache::BlockCache::new(
        disk.clone(),
        cache_bytes,
    ));
    drivers::block_cache::register(cache.clone());
    match fat32::Fat32Fs::mount(cache, Arc::new(arch::time::KernelClock)) {
        Ok(fs) => match fs::mount(path, fs) {
            Ok(()) => {
                log::info!("{}: FAT32 mounted at {}", disk.name, path);
                true
            }
            Err(e) => {
                println!("[kernel] mounting {} at {} failed: {}", disk.name, path, e);
                false
            }
        },
        Err(e) => {
            println!(
                "[kernel] {}: not a FAT32 file system ({}); not mounted at {}",
                disk.name, e, path
            );
            false
        }
    }
}

/// True when the first `bytes` of `disk` are all zero (a disk never formatted).
fn is_blank(disk: &Arc<drivers::virtio_blk::VirtioDisk>, bytes: usize) -> bool {
    let mut buf = alloc::vec![0u8; bytes];
    disk.read_sectors(0, &mut buf).is_ok() && buf.iter().all(|&b| b == 0)
}

/// Mount dbfs on `disk` at `path` through a page-fault-driven window. A blank disk is
/// formatted first; a disk holding anything else that is not dbfs is refused, untouched.
/// With `fsck`, the mounted image is checked first and not mounted if damaged; with `dirsync`,
/// every commit is durable when it returns.
/// Chunk size the kernel formats a blank dbfs disk with. Larger than dbfs's default (16 KiB)
/// and dbfs-fuse's (4 KiB): in the guest a large write's cost follows its number of chunks
/// (one B+tree entry each, decoded and rewritten by every commit that touches its leaf), while
/// the read-modify-write of small random writes, which favours small chunks on the host, costs
/// little here (docs/BENCHMARKS.md has both measured).
const KERNEL_DBFS_CHUNK_SIZE: u32 = 64 << 10;

fn mount_dbfs(disk: &Arc<drivers::virtio_blk::VirtioDisk>, path: &str, params: &Params) -> bool {
    let (fsck, dirsync, direct) = (
        params.dbfs_fsck,
        params.dbfs_dirsync,
        params.dbfs_direct_write,
    );
    type DbFs = dbfs::DbFs<fs::window_pager::WindowPager>;
    let window = match mm::window::DiskWindow::new(disk.clone(), params.dbfs_flush_behind) {
        Ok(w) => w,
        Err(e) => {
            println!("[kernel] {}: no window for dbfs: {}", disk.name, e);
            return false;
        }
    };
    let mut pager = fs::window_pager::WindowPager::new(window);
    if is_blank(disk, 2 * 65536) {
        let opts = dbfs::MkfsOptions {
            label: String::from("dbfs"),
            time: vfs::Clock::now(&arch::time::KernelClock),
            chunk_size: params.dbfs_chunk.unwrap_or(KERNEL_DBFS_CHUNK_SIZE),
            ..Default::default()
        };
        pager = match DbFs::mkfs(pager, opts) {
            Ok(p) => p,
            Err(e) => {
                println!("[kernel] {}: formatting dbfs failed: {}", disk.name, e);
                return false;
            }
        };
        println!("[kernel] {}: blank disk formatted as dbfs", disk.name);
    }
    match DbFs::mount_checked(pager, Arc::new(arch::time::KernelClock)) {
        Ok(dbfs) if fsck && !dbfs_fsck_clean(&dbfs, &disk.name, path) => false,
        Ok(dbfs) => match fs::mount(path, dbfs.clone()) {
            Ok(()) => {
                log::info!("{}: dbfs mounted at {}", disk.name, path);
                dbfs.set_sync_metadata(dirsync);
                // Data reaches the disk straight from its buffers (`put_direct`), so pages
                // held for the next barrier cost disk space, not memory: let up to a quarter of
                // the disk accumulate (fewer barriers, each two device flushes) before forcing
                // one. A nearly full store forces one anyway (kvdb reclaims held pages).
                let bound = params
                    .dbfs_barrier_mib
                    .map_or((disk.size_bytes() / 4).max(16 << 20), |mib| mib << 20);
                dbfs.set_barrier_bound(bound);
                if !direct {
                    dbfs.set_direct_write_min(None);
                }
                // Commit data buffered for longer than dbfs's write-back delay, and make
                // commits older than that durable (a barrier). A failure
                // (e.g. ENOSPC while the disk is full) is logged once, not on every tick, and
                // so is the recovery.
                let failing = core::sync::atomic::AtomicBool::new(false);
                fs::register_periodic(alloc::boxed::Box::new(move || {
                    use core::sync::atomic::Ordering::Relaxed;
                    match dbfs.writeback_tick() {
                        Err(e) if !failing.swap(true, Relaxed) => {
                            log::error!("dbfs write-back failed: {} (retrying every tick)", e)
                        }
                        Ok(()) if failing.swap(false, Relaxed) => {
                            log::warn!("dbfs write-back succeeded again")
                        }
                        _ => {}
                    }
                }));
                true
            }
            Err(e) => {
                println!("[kernel] mounting {} at {} failed: {}", disk.name, path, e);
                false
            }
        },
        Err(e) => {
            println!("[kernel] {}: not mounted at {}: {}", disk.name, path, e);
            false
        }
    }
}

/// Run `DbFs::fsck` on a freshly mounted image and print the verdict (one line the host can
/// grep: `dbfs fsck: clean`, or each problem then `dbfs fsck: N problems`).
fn dbfs_fsck_clean(
    dbfs: &dbfs::DbFs<fs::window_pager::WindowPager>,
    disk: &str,
    path: &str,
) -> bool {
    match dbfs.fsck() {
        Ok(problems) if problems.is_empty() => {
            println!("[kernel] {}: dbfs fsck: clean", disk);
            true
        }
        Ok(problems) => {
            for p in &problems {
                println!("[kernel] {}: dbfs fsck: {}", disk, p);
            }
            println!(
                "[kernel] {}: dbfs fsck: {} problems; not mounted at {}",
                disk,
                problems.len(),
                path
            );
            false
        }
        Err(e) => {
            println!(
                "[kernel] {}: dbfs fsck: cannot check ({}); not mounted at {}",
                disk, e, path
            );
            false
        }
    }
}

#[no_mangle]
extern "C" fn rust_main(_hartid: usize, dtb: usize) -> ! {
    clear_bss();
    csr::set_sstatus(
        (csr::sstatus() & !(csr::SSTATUS_SIE | csr::SSTATUS_FS_MASK)) | csr::SSTATUS_FS_INITIAL,
    );
    trap::init();
    let info = read_device_tree(dtb);
    if let Some(uart) = info.uart {
        arch::console::init_uart(uart);
    }
    arch::power::init(info.test_device);
    arch::time::init(info.timebase_hz, info.rtc);
    let cmdline = core::str::from_utf8(&info.bootargs[..info.bootargs_len]).unwrap_or("");
    // The heap does not exist yet: parse into owned strings only after mm::init.
    mm::init(info.ram_end);
    let params = parse_params(cmdline);
    arch::console::init_logger(params.log);
    if params.mem_selftest {
        match arch::mem::selftest() {
            Ok(()) => println!("[kernel] memcpy/memset self-test: ok"),
            Err(e) => {
                println!("[kernel] memcpy/memset self-test FAILED: {}", e);
                shutdown(3);
            }
        }
    }
    println!(
        "dbfs-os: {} MiB RAM, timebase {} Hz, {} virtio slots",
        (info.ram_end - mm::RAM_BASE) >> 20,
        info.timebase_hz,
        info.virtio_count
    );
    csr::set_sie(csr::sie() | csr::SIE_STIE);

    let disks = drivers::virtio_blk::probe(info.virtio[..info.virtio_count].to_vec());
    let cache_bytes = params.bcache_mib << 20;
    let Some(root) = disks.first() else {
        println!("[kernel] no disk: nothing to run");
        shutdown(2);
    };
    if !mount_fat(root, "/", cache_bytes) {
        shutdown(2);
    }
    let devs: Vec<(String, Arc<dyn BlockDevice>)> = disks
        .iter()
        .map(|d| (d.name.clone(), d.clone() as Arc<dyn BlockDevice>))
        .collect();
    if let Err(e) = fs::mount("/dev", fs::devfs::DevFs::new(devs)) {
        println!("[kernel] mounting /dev failed: {}", e);
        shutdown(2);
    }
    if params.blk_selftest {
        match disks.get(2).map(|d| drivers::blk_selftest::run(d)) {
            Some(Ok(())) => println!("[kernel] vdc: scatter-gather self-test: ok"),
            Some(Err(e)) => {
                println!("[kernel] vdc: scatter-gather self-test FAILED: {}", e);
                shutdown(3);
            }
            None => println!("[kernel] no vdc: scatter-gather self-test skipped"),
        }
    }
    if let Some(disk) = disks.get(1) {
        mount_fat(disk, "/fat", cache_bytes);
    }
    if let Some(disk) = disks.get(3) {
        mount_dbfs(disk, "/dbfs", &params);
    }

    let mut argv = alloc::vec![params.init.clone()];
    argv.extend(params.init_args);
    if let Err(e) = task::spawn_init(&params.init, argv) {
        println!("[kernel] cannot start {}: {}", params.init, e);
        shutdown(2);
    }
    task::run()
}

/// Write back every file system and power off with `code` as QEMU's exit status.
pub fn shutdown(code: u32) -> ! {
    fs::sync_all();
    arch::power::shutdown(code)
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    println!("[kernel] PANIC: {}", info);
    arch::power::shutdown(100)
}
