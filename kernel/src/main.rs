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
//! with status 3 if they differ), `copy_cost=1` (time 4 KiB page-to-page copies at boot and
//! print `COPYCOST op=copy4k ns_per_call=N`: under QEMU's `-icount shift=0`, N is instructions;
//! `make syscost-icount`),
//! `rootfs=dbfs` (the root disk vda holds dbfs, e.g. `make debian-root`'s image; default
//! `rootfs=fat32`), `dbfs_fsck=1` (check the dbfs image at mount with `DbFs::fsck`, print
//! `[kernel] vdd: dbfs fsck: clean` or the problems, and refuse to mount a damaged image),
//! `dbfs_dirsync=1` (every dbfs commit durable when it returns, `DbFs::set_sync_metadata`;
//! default: deferred to fsync, sync and the write-back timer), `dbfs_direct_write=0` (default 1:
//! the whole chunks of a large dbfs write go from the user's pages straight to the disk in one
//! scattered request, no copy, inserted into the store by the file's next commit, see
//! `dbfs::DIRECT_WRITE_MIN`; 0:
//! every write is copied into the write-back cache, which merges overlapping writes),
//! `dbfs_fault_sleep=0` (default 1: a fault on the dbfs disk window reads with the window
//! unlocked and its thread asleep; 0: every fault polls with the window locked),
//! `dbfs_keep_rereads=0` (default 1: a large dbfs read of a stretch a large read took from the
//! disk before keeps its pages in the disk window, and later large reads of them copy from
//! memory; 0: large reads go to the disk unless every page is resident; also
//! `/proc/sys/vm/dbfs_keep_rereads`),
//! `unlocked_reads=0` (default 1: with several harts, read(2) and pread64(2) of dbfs files run
//! without the big kernel lock, `syscall::unlocked`; 0: every system call takes it),
//! `unlocked_writes=0` (default 1: likewise write(2) and pwrite64(2) of dbfs files that only
//! fill its write-back cache; 0: they take it),
//! `aio_async=0` (default 1: io_submit hands reads of files and disks to kernel workers and
//! returns at once, `syscall::aio_workers`; 0: every request completes before io_submit returns),
//! `bkl_spins=N` (default 1000: the spins of a hart waiting for the big kernel lock before it
//! sleeps in `wfi` until an IPI),
//! `bkl_steal_us=N` (default 100: how long a release's offer of the big kernel lock to the
//! waiting hart that came first is kept for it before another waiting hart may take it),
//! `dbfs_chunk_kib=K` (the chunk size a blank
//! dbfs disk is formatted with, 1..1024 KiB, a power of two; default 64 KiB, `KERNEL_DBFS_CHUNK_SIZE`),
//! `dbfs_barrier_mib=M` (force a dbfs barrier once M MiB of store pages wait for one,
//! `DbFs::set_barrier_bound`; default a quarter of the disk, at least 16 MiB),
//! `dbfs_flush_behind_kib=K` (start a background device flush after K KiB of direct dbfs
//! writes, doubling the gap while no barrier comes; default 256, 0 = never),
//! `dbfs_dirty_mib=M` (dbfs's write-back limit: buffered writes commit once M MiB of chunks
//! are dirty; default a quarter of the kernel heap, 0 = every write commits at once).
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
mod mounts;
mod params;
mod per_hart;
mod sync;
// The system-call layer reaches user memory only through `mm::uaccess` (no unsafe code).
#[forbid(unsafe_code)]
mod syscall;
mod task;
mod trap;
mod tty;

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use arch::csr;
use vfs::BlockDevice;

/// The longest kernel command line accepted. `make run CMD=...` passes a whole shell line
/// through it, so a longer one is refused at boot rather than cut (a cut command could run
/// something else than what was asked).
const COMMAND_LINE_MAX: usize = 8192;

/// What the kernel needs from the device tree, copied out before the heap exists.
struct BootInfo {
    ram_end: usize,
    timebase_hz: u64,
    uart: Option<usize>,
    test_device: Option<usize>,
    rtc: Option<usize>,
    /// The virtio MMIO slots: base, size, interrupt source (0: none given).
    virtio: [(usize, usize, u32); 16],
    virtio_count: usize,
    /// The PLIC's registers (a direct-map address).
    plic: Option<usize>,
    bootargs: [u8; COMMAND_LINE_MAX],
    bootargs_len: usize,
    /// The device tree's command line, if it did not fit in `bootargs`.
    bootargs_too_long: Option<usize>,
    /// The hart ids of the device tree's CPUs (at most `MAX_HARTS` of them).
    harts: [usize; arch::hart::MAX_HARTS],
    hart_count: usize,
}

fn read_device_tree(dtb: usize) -> BootInfo {
    let mut info = BootInfo {
        ram_end: mm::RAM_BASE + (128 << 20),
        timebase_hz: 10_000_000,
        uart: None,
        test_device: None,
        rtc: None,
        virtio: [(0, 0, 0); 16],
        virtio_count: 0,
        plic: None,
        bootargs: [0; COMMAND_LINE_MAX],
        bootargs_len: 0,
        bootargs_too_long: None,
        harts: [0; arch::hart::MAX_HARTS],
        hart_count: 0,
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
    for cpu in fdt.cpus() {
        let id = cpu.ids().first();
        if info.hart_count < info.harts.len() {
            info.harts[info.hart_count] = id;
            info.hart_count += 1;
        }
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
                "riscv,plic0" | "sifive,plic-1.0.0" if info.plic.is_none() => {
                    info.plic = Some(mm::phys_to_virt(base))
                }
                "virtio,mmio" if info.virtio_count < info.virtio.len() => {
                    let irq = node
                        .interrupts()
                        .and_then(|mut i| i.next())
                        .and_then(|i| u32::try_from(i).ok())
                        .unwrap_or(0);
                    info.virtio[info.virtio_count] = (base, reg.size.unwrap_or(0x1000), irq);
                    info.virtio_count += 1;
                }
                _ => {}
            }
        }
    }
    if let Some(args) = fdt.chosen().bootargs() {
        if args.len() > info.bootargs.len() {
            info.bootargs_too_long = Some(args.len());
        } else {
            info.bootargs[..args.len()].copy_from_slice(args.as_bytes());
            info.bootargs_len = args.len();
        }
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

#[no_mangle]
extern "C" fn rust_main(hartid: usize, dtb: usize) -> ! {
    clear_bss();
    arch::paint_boot_stack();
    // `tp` = this hart's data, and the big kernel lock taken: boot is kernel code like any.
    arch::hart::init_boot(hartid);
    csr::set_sstatus(
        (csr::sstatus() & !(csr::SSTATUS_SIE | csr::SSTATUS_FS_MASK)) | csr::SSTATUS_FS_INITIAL,
    );
    arch::trap::init();
    let info = read_device_tree(dtb);
    if let Some(uart) = info.uart {
        arch::console::init_uart(uart);
    }
    arch::power::init(info.test_device);
    arch::time::init(info.timebase_hz, info.rtc);
    if let Some(len) = info.bootargs_too_long {
        println!(
            "[kernel] the command line is {} bytes, more than {}: refused (nothing was run)",
            len, COMMAND_LINE_MAX
        );
        arch::power::shutdown(1);
    }
    let cmdline = core::str::from_utf8(&info.bootargs[..info.bootargs_len]).unwrap_or("");
    // The heap does not exist yet: parse into owned strings only after mm::init.
    mm::init(info.ram_end);
    // A kvdb lock found held means its holder gave the CPU away (see task::relax).
    kvdb::sync::set_relax(task::relax);
    // Under memory pressure the heap asks the block layer's caches to forget clean blocks.
    mm::heap::set_shrinker(drivers::block_cache::shrink_all);
    // Truncation and write-back reach every process's mappings through the task layer.
    mm::file_pages::set_space_access(mm::file_pages::SpaceAccess {
        unmap_file_pages: task::unmap_file_pages_everywhere,
        write_protect_file_pages: task::write_protect_file_pages_everywhere,
    });
    // User memory, when the pool is empty: the disk windows give back their clean pages
    // first (they equal the disk and are read again on the next touch), then the mapped
    // files their clean unmapped pages, so a process is killed for memory only when nothing
    // can be reclaimed.
    mm::frame::set_reclaimers(&[drivers::window::drop_all, || {
        mm::file_pages::shrink();
    }]);
    let params = params::parse_params(cmdline);
    fs::procfs::set_cmdline(cmdline);
    arch::console::init_logger(params.log);
    drivers::window::set_fault_sleep(params.dbfs_fault_sleep);
    drivers::window::large_read::set_keep_rereads(params.dbfs_keep_rereads);
    syscall::unlocked::set_enabled(params.unlocked_reads, params.unlocked_writes);
    syscall::set_aio_async(params.aio_async);
    if let Some(n) = params.bkl_spins {
        arch::hart::set_lock_spins(n);
    }
    arch::hart::set_steal_us(params.bkl_steal_us);
    if params.mem_selftest {
        match arch::mem::selftest() {
            Ok(()) => println!("[kernel] memcpy/memset/memcmp self-test: ok"),
            Err(e) => {
                println!("[kernel] memcpy/memset/memcmp self-test FAILED: {}", e);
                shutdown(3);
            }
        }
    }
    if params.copy_cost {
        // Two frames, as `copy_out` copies into a user frame through the direct map.
        let pages = mm::frame::alloc().zip(mm::frame::alloc());
        match pages {
            Some((src, mut dst)) => {
                let src: Option<&[u8; arch::mem::PAGE]> = src.bytes().try_into().ok();
                let dst: Option<&mut [u8; arch::mem::PAGE]> = dst.bytes_mut().try_into().ok();
                if let Some((s, d)) = src.zip(dst) {
                    let ns = arch::mem::copy_cost(s, d);
                    println!("COPYCOST op=copy4k ns_per_call={}", ns);
                }
            }
            None => println!("[kernel] copy_cost: no free frames"),
        }
    }
    println!(
        "dbfs-os: {} MiB RAM, timebase {} Hz, {} virtio slots",
        (info.ram_end - mm::RAM_BASE) >> 20,
        info.timebase_hz,
        info.virtio_count
    );
    csr::set_sie(csr::sie() | csr::SIE_STIE | csr::SIE_SSIE);
    // The disks' completion interrupts go to this hart alone (arch::plic).
    if let Some(plic) = info.plic {
        arch::plic::init(plic, &info.harts[..info.hart_count]);
        csr::set_sie(csr::sie() | csr::SIE_SEIE);
    }

    let disks = drivers::virtio_probe::probe(info.virtio[..info.virtio_count].to_vec());
    if disks.is_empty() {
        println!("[kernel] no disk: nothing to run");
        shutdown(2);
    }
    if !mounts::mount_root(&disks, &params) {
        shutdown(2);
    }
    let devs: Vec<(String, Arc<dyn BlockDevice>)> = disks
        .iter()
        .map(|d| (d.name.clone(), d.clone() as Arc<dyn BlockDevice>))
        .collect();
    if let Err(e) = fs::mount("/dev", fs::devfs::DevFs::new(devs), None) {
        println!("[kernel] mounting /dev failed: {}", e);
        shutdown(2);
    }
    if let Err(e) = fs::mount("/proc", fs::procfs::ProcFs::new(), None) {
        println!("[kernel] mounting /proc failed: {}", e);
    }
    if params.blk_selftest {
        let selftest = |d: &Arc<drivers::virtio_blk::VirtioDisk>| {
            drivers::blk_selftest::run(d)?;
            drivers::blk_selftest::window_clusters(d.clone())
        };
        match disks.get(2).map(selftest) {
            Some(Ok(())) => println!("[kernel] vdc: scatter-gather and window self-test: ok"),
            Some(Err(e)) => {
                println!(
                    "[kernel] vdc: scatter-gather and window self-test FAILED: {}",
                    e
                );
                shutdown(3);
            }
            None => println!("[kernel] no vdc: scatter-gather self-test skipped"),
        }
    }
    mounts::mount_rest();
    log::info!(
        "boot stack: {} bytes used after mounting",
        arch::boot_stack_used()
    );
    arch::check_boot_stack();

    let mut argv = alloc::vec![params.init.clone()];
    argv.extend(params.init_args);
    task::set_services(task::Services {
        take_input: tty::poll_input,
        periodic: fs::tick,
        power_off: fs::sync_and_power_off,
        process_exit: ipc::sem::exit,
        core_dump: syscall::coredump::dump,
        devices: drivers::service,
    });
    let started = fs::path::Loc::from_path("/dev/console")
        .and_then(fs::file::FdTable::with_console)
        .and_then(|files| {
            task::spawn_init(
                &params.init,
                argv,
                alloc::boxed::Box::new(files),
                fs::open_exec,
            )
        });
    if let Err(e) = started {
        println!("[kernel] cannot start {}: {}", params.init, e);
        shutdown(2);
    }
    if let Some(kind) = &params.lockcheck_plant {
        println!(
            "[kernel] lockcheck: planting a {} bug (checker {})",
            kind,
            if arch::lockcheck::ENABLED {
                "on"
            } else {
                "off"
            }
        );
        if kind == "leaf" {
            // Two leaf locks out of order: the window list taken under the frame pool.
            mm::frame::with_pool_held(drivers::window::drop_all);
        } else if !task::plant_lock_bug(kind) {
            println!(
                "[kernel] lockcheck_plant={}: double, order, switch or leaf",
                kind
            );
        }
    }
    let harts = &info.harts[..info.hart_count];
    let running = arch::hart::start_secondaries(harts, || {
        // A stack as large as the boot hart's, never freed (the hart runs until power-off).
        let stack = alloc::vec![0u8; BOOT_STACK_SIZE].leak();
        stack.as_ptr() as usize + stack.len()
    });
    if running > 1 {
        println!("[kernel] {} harts", running);
    }
    task::run()
}

/// The stack of a secondary hart's scheduler (the boot hart's is `arch`'s boot stack).
const BOOT_STACK_SIZE: usize = 128 * 1024;

/// A secondary hart's first Rust code (from `arch::hart`'s `_start_secondary`, on its own
/// stack with `tp` = its data and the boot page table): the kernel page table, the trap
/// vector, the FP and interrupt enables and the clock's user access as on the boot hart, then
/// the scheduler, under the big kernel lock.
#[no_mangle]
extern "C" fn secondary_main() -> ! {
    mm::page_table::activate_kernel();
    csr::set_sstatus(
        (csr::sstatus() & !(csr::SSTATUS_SIE | csr::SSTATUS_FS_MASK)) | csr::SSTATUS_FS_INITIAL,
    );
    arch::trap::init();
    csr::set_scounteren(csr::scounteren() | csr::SCOUNTEREN_TM);
    csr::set_sie(csr::sie() | csr::SIE_STIE | csr::SIE_SSIE);
    arch::hart::secondary_started();
    arch::hart::lock();
    let late = arch::hart::take_late_starts();
    if late > 0 {
        println!(
            "[kernel] {} secondary hart(s) arrived at the boot entry, not at _start_secondary (the firmware's start race): sent on",
            late
        );
    }
    task::run()
}

/// Write back every file system and power off with `code` as QEMU's exit status.
fn shutdown(code: u32) -> ! {
    fs::sync_and_power_off(code)
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    println!("[kernel] PANIC: {}", info);
    arch::print_return_addresses();
    arch::power::shutdown(100)
}
