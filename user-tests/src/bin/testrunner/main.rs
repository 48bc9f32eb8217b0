//! `testrunner DIR [summary=FILE] [assume=fat|nofat] [TEST...]`: the in-guest test suite.
//!
//! Runs every test of [`TESTS`] (or only the named ones) inside a fresh scratch directory
//! `DIR/t.<pid>`, each test in its own subdirectory, and prints one line per test:
//! `ok`, `FAILED: <what>`, `skipped (<why>)`, `expected failure (<why>): <what>` or
//! `UNEXPECTED PASS`. It closes with the line `N passed, N failed` (alone on its line; also
//! written to FILE when `summary=FILE` is given, for `init`), and exits with the number of
//! failures (capped at 125). Skips and expected failures count as neither.
//!
//! Every expectation is Linux's: the same binary must pass under `qemu-riscv64` on a Linux
//! directory. Tests needing what FAT cannot store (symbolic links, hard links, permission bits,
//! link counts) are skipped when DIR is on FAT (`statfs` f_type `MSDOS_SUPER_MAGIC`); `assume=`
//! overrides the detection.
//!
//! To add a test: write `fn my_test(cx: &Ctx) -> TestResult` in one of the modules (use
//! `cx.path("name")` for files, the `ensure!` macro and the `Check` / `expect_errno` helpers),
//! then add a `Test` line to [`TESTS`].
#![no_std]
#![no_main]

mod aio_tests;
mod anonfd_tests;
mod bad_input;
mod chmod_tests;
mod copy_tests;
mod disk_tests;
mod exec_tests;
mod fcntl_tests;
mod fs_tests;
mod itimer_tests;
mod memfd_tests;
mod mlock_tests;
mod mmap_tests;
mod mount_tests;
mod proc_fd_tests;
mod proc_tests;
mod rusage_tests;
mod sched_tests;
mod sigaltstack_tests;
mod sigqueue_tests;
mod socket_tests;
mod statx_tests;
mod stress_tests;
mod sysv_ipc_tests;
mod toolchain_tests;
mod trinity_tests;
mod xattr_tests;

use user_tests::abi::stat::MSDOS_SUPER_MAGIC;
use user_tests::prelude::*;

/// A test's outcome: `Err(description of the first broken expectation)`.
pub type TestResult = Result<(), String>;

/// What a test gets: its own empty directory, and what the file system under it is.
pub struct Ctx {
    pub dir: String,
    pub fat: bool,
}

impl Ctx {
    /// The path of `name` inside the test's directory.
    pub fn path(&self, name: &str) -> String {
        user_tests::path_join(&self.dir, name)
    }
}

/// Features a test needs that some file systems cannot provide: skipped there.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Needs {
    Nothing,
    /// Symbolic links (FAT has none).
    Symlinks,
    /// Hard links and link counts (FAT has none).
    HardLinks,
    /// Permission bits (FAT has only a read-only flag).
    Chmod,
    /// Read-ahead that follows several sequential readers at once, seen through dbfs-os's
    /// counters (FAT32's block cache follows one stream; on Linux there are no counters, so
    /// the test is skipped there too).
    StreamReadAhead,
    /// A wait for the device that lets other processes run: an fsync's flush (dbfs's
    /// barrier) or a large read (dbfs reads stored data straight into the caller's pages);
    /// dbfs-os's FAT32 waits on the CPU. Elsewhere (no dbfs-os counters) it depends on the
    /// disk, so the test is skipped there too.
    SharedFlush,
}

/// Whether a test is expected to pass.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Expect {
    Pass,
    /// Known-missing behaviour on FAT mounts (the reason is printed); passes elsewhere.
    FailOnFat(&'static str),
    /// Known-missing behaviour everywhere in dbfs-os; reported separately, never a pass.
    Fail(&'static str),
}

pub struct Test {
    pub name: &'static str,
    pub run: fn(&Ctx) -> TestResult,
    pub needs: Needs,
    pub expect: Expect,
}

const fn t(name: &'static str, run: fn(&Ctx) -> TestResult) -> Test {
    Test {
        name,
        run,
        needs: Needs::Nothing,
        expect: Expect::Pass,
    }
}

const fn needs(name: &'static str, run: fn(&Ctx) -> TestResult, needs: Needs) -> Test {
    Test {
        name,
        run,
        needs,
        expect: Expect::Pass,
    }
}

/// The test table, run in this order.
pub const TESTS: &[Test] = &[
    // files: contents and offsets
    t("write_read_lseek", fs_tests::write_read_lseek),
    t("read_at_eof_returns_0", fs_tests::read_at_eof_returns_0),
    t("pwrite_pread_offsets", fs_tests::pwrite_pread_offsets),
    t("io_across_blocks", fs_tests::io_across_blocks),
    t(
        "large_reads_unaligned_buffers",
        fs_tests::large_reads_unaligned_buffers,
    ),
    t(
        "large_writes_unaligned_buffers",
        fs_tests::large_writes_unaligned_buffers,
    ),
    t(
        "disk_reads_unaligned_buffers",
        fs_tests::disk_reads_unaligned_buffers,
    ),
    t("lseek_whence", fs_tests::lseek_whence),
    t("write_zero_bytes", fs_tests::write_zero_bytes),
    // open flags
    t(
        "o_creat_existing_keeps_data",
        fs_tests::o_creat_existing_keeps_data,
    ),
    t("o_excl_existing_eexist", fs_tests::o_excl_existing_eexist),
    t("o_trunc", fs_tests::o_trunc),
    t("o_append", fs_tests::o_append),
    t("open_missing_enoent", fs_tests::open_missing_enoent),
    t(
        "o_directory_on_file_enotdir",
        fs_tests::o_directory_on_file_enotdir,
    ),
    t(
        "path_through_file_enotdir",
        fs_tests::path_through_file_enotdir,
    ),
    t("directory_io_eisdir", fs_tests::directory_io_eisdir),
    t("name_too_long", fs_tests::name_too_long),
    // directories and names
    t("mkdir_existing_eexist", fs_tests::mkdir_existing_eexist),
    t("rmdir_semantics", fs_tests::rmdir_semantics),
    t("unlink_directory_eisdir", fs_tests::unlink_directory_eisdir),
    t("unlink_then_recreate", fs_tests::unlink_then_recreate),
    t("getdents_exact_names", fs_tests::getdents_exact_names),
    t(
        "getdents_many_small_buffer",
        fs_tests::getdents_many_small_buffer,
    ),
    t("rename_semantics", fs_tests::rename_semantics),
    t("rename_directories", fs_tests::rename_directories),
    t(
        "at_calls_relative_to_dirfd",
        fs_tests::at_calls_relative_to_dirfd,
    ),
    t("many_files", fs_tests::many_files),
    t("dot_and_dotdot_paths", fs_tests::dot_and_dotdot_paths),
    t("lowest_fd_reused", fs_tests::lowest_fd_reused),
    // sizes, attributes, durability calls
    t("ftruncate_grow_shrink", fs_tests::ftruncate_grow_shrink),
    t("fstat_types_and_sizes", fs_tests::fstat_types_and_sizes),
    t("statfs_ok", fs_tests::statfs_ok),
    t("fsync_ok", fs_tests::fsync_ok),
    // features FAT lacks
    needs(
        "symlink_readlink",
        fs_tests::symlink_readlink,
        Needs::Symlinks,
    ),
    needs("hard_link", fs_tests::hard_link, Needs::HardLinks),
    needs("chmod_mode_bits", fs_tests::chmod_mode_bits, Needs::Chmod),
    t("open_unlinked_file", fs_tests::open_unlinked_file),
    t(
        "cold_reads_beside_commits",
        fs_tests::cold_reads_beside_commits,
    ),
    t("proc_drop_caches", fs_tests::proc_drop_caches),
    needs(
        "interleaved_readers_read_ahead",
        fs_tests::interleaved_readers_read_ahead,
        Needs::StreamReadAhead,
    ),
    // FAT32 stores no link counts; our adapter reports 2 + subdirectories, as Linux's vfat.
    t(
        "dir_nlink_counts_subdirs",
        fs_tests::dir_nlink_counts_subdirs,
    ),
    // extended attributes (FAT: EOPNOTSUPP, checked too)
    t("xattr_semantics", xattr_tests::xattr_semantics),
    t("statx_semantics", statx_tests::statx_semantics),
    t("vectored_at_offsets", copy_tests::vectored_at_offsets),
    t("splice_tee_vmsplice", copy_tests::splice_tee_vmsplice),
    t(
        "sendfile_copy_file_range",
        copy_tests::sendfile_copy_file_range,
    ),
    t("close_range_openat2", copy_tests::close_range_openat2),
    t("splice_sockets", copy_tests::splice_sockets),
    t("pipe_streams_in_order", copy_tests::pipe_streams_in_order),
    t("fallocate_modes", copy_tests::fallocate_modes),
    needs(
        "openat2_no_symlinks",
        copy_tests::openat2_no_symlinks,
        Needs::Symlinks,
    ),
    t("proc_fd_links", proc_fd_tests::proc_fd_links),
    t("proc_exe_task", proc_fd_tests::proc_exe_task),
    t("nofile_limit", proc_fd_tests::nofile_limit),
    needs(
        "fchmodat2_semantics",
        chmod_tests::fchmodat2_semantics,
        Needs::Chmod,
    ),
    // processes and memory
    t("getpid_positive", proc_tests::getpid_positive),
    t("fork_exit_wait", proc_tests::fork_exit_wait),
    // what trinity found (tests/trinity)
    t(
        "reboot_unprivileged_eperm",
        trinity_tests::reboot_unprivileged_eperm,
    ),
    t(
        "unmap_after_unlink_writes_back_quietly",
        trinity_tests::unmap_after_unlink_writes_back_quietly,
    ),
    // what stress-ng found (tests/stress)
    t(
        "fsize_limit_efbig_sigxfsz",
        stress_tests::fsize_limit_efbig_sigxfsz,
    ),
    t("readahead_semantics", stress_tests::readahead_semantics),
    t(
        "blocked_fault_signal_kills",
        stress_tests::blocked_fault_signal_kills,
    ),
    t("fault_siginfo_codes", stress_tests::fault_siginfo_codes),
    t("chroot_semantics", stress_tests::chroot_semantics),
    t("memfd_semantics", memfd_tests::memfd_semantics),
    t("itimer_real", itimer_tests::itimer_real),
    t(
        "sigchld_ignored_leaves_no_zombie",
        rusage_tests::sigchld_ignored_leaves_no_zombie,
    ),
    t(
        "maxrss_of_self_and_children",
        rusage_tests::maxrss_of_self_and_children,
    ),
    t(
        "cpu_time_user_and_system",
        rusage_tests::cpu_time_user_and_system,
    ),
    t("adjtimex_semantics", itimer_tests::adjtimex_semantics),
    t("sysv_msg_queue", sysv_ipc_tests::sysv_msg_queue),
    t("sysv_semaphores", sysv_ipc_tests::sysv_semaphores),
    t("waitid_semantics", sysv_ipc_tests::waitid_semantics),
    t(
        "timer_signalfd_eventfd",
        anonfd_tests::timer_signalfd_eventfd,
    ),
    t(
        "rt_signals_queue_in_order",
        sigqueue_tests::rt_signals_queue_in_order,
    ),
    t(
        "rt_signal_queue_limit",
        sigqueue_tests::rt_signal_queue_limit,
    ),
    t(
        "sigqueue_to_child_and_sigchld",
        sigqueue_tests::sigqueue_to_child_and_sigchld,
    ),
    t("core_dump_written", sigqueue_tests::core_dump_written),
    t(
        "siginfo_reaches_handler_timer_signalfd",
        sigqueue_tests::siginfo_reaches_handler_timer_signalfd,
    ),
    t(
        "mount_umount_errors_and_move",
        mount_tests::mount_umount_errors_and_move,
    ),
    t("remount_read_only", mount_tests::remount_read_only),
    t(
        "sigaltstack_onstack",
        sigaltstack_tests::sigaltstack_onstack,
    ),
    t("preemption", proc_tests::preemption),
    t(
        "fp_state_survives_switches",
        proc_tests::fp_state_survives_switches,
    ),
    t("fork_copies_memory", proc_tests::fork_copies_memory),
    t(
        "proc_stat_counts_switches",
        proc_tests::proc_stat_counts_switches,
    ),
    needs(
        "fsync_wait_lets_others_run",
        proc_tests::fsync_wait_lets_others_run,
        Needs::SharedFlush,
    ),
    needs(
        "large_read_wait_lets_others_run",
        proc_tests::large_read_wait_lets_others_run,
        Needs::SharedFlush,
    ),
    needs(
        "fsync_wait_takes_interrupts",
        proc_tests::fsync_wait_takes_interrupts,
        Needs::SharedFlush,
    ),
    t(
        "proc_diskstats_counts_io",
        disk_tests::proc_diskstats_counts_io,
    ),
    needs(
        "writeback_due_during_fsync_wait",
        proc_tests::writeback_due_during_fsync_wait,
        Needs::SharedFlush,
    ),
    t("fork_copy_on_write", proc_tests::fork_copy_on_write),
    t("fork_does_not_copy", proc_tests::fork_does_not_copy),
    t(
        "fork_shares_file_offset",
        proc_tests::fork_shares_file_offset,
    ),
    t(
        "wait_no_children_echild",
        proc_tests::wait_no_children_echild,
    ),
    t("execve_missing_enoent", proc_tests::execve_missing_enoent),
    t(
        "exec_shares_text_frames",
        exec_tests::exec_shares_text_frames,
    ),
    t(
        "exec_data_private_bss_zero",
        exec_tests::exec_data_private_bss_zero,
    ),
    t("exec_truncated_elf", exec_tests::exec_truncated_elf),
    t("exec_interp_path", exec_tests::exec_interp_path),
    t("exec_big_binary", exec_tests::exec_big_binary),
    t("exec_text_busy", exec_tests::exec_text_busy),
    t(
        "vfork_parent_waits_for_child",
        proc_tests::vfork_parent_waits_for_child,
    ),
    t("vfork_wait_is_killable", proc_tests::vfork_wait_is_killable),
    t("brk_growth", proc_tests::brk_growth),
    t("mmap_anonymous", proc_tests::mmap_anonymous),
    t("clock_monotonic", proc_tests::clock_monotonic),
    // file mappings
    t(
        "mmap_private_reads_file",
        mmap_tests::mmap_private_reads_file,
    ),
    t(
        "mmap_private_write_stays_private",
        mmap_tests::mmap_private_write_stays_private,
    ),
    t(
        "mmap_shared_write_reaches_file",
        mmap_tests::mmap_shared_write_reaches_file,
    ),
    t("mmap_shared_sees_write", mmap_tests::mmap_shared_sees_write),
    t("mremap_semantics", mmap_tests::mremap_semantics),
    t(
        "fallocate_punch_and_zero_range",
        mmap_tests::fallocate_punch_and_zero_range,
    ),
    t("mmap_sigbus_past_eof", mmap_tests::mmap_sigbus_past_eof),
    t(
        "mmap_truncate_then_sigbus",
        mmap_tests::mmap_truncate_then_sigbus,
    ),
    t("mmap_survives_close", mmap_tests::mmap_survives_close),
    t("mmap_errors", mmap_tests::mmap_errors),
    t("mmap_fork_shares", mmap_tests::mmap_fork_shares),
    t(
        "mmap_store_after_writeback",
        mmap_tests::mmap_store_after_writeback,
    ),
    t(
        "pread_buffer_after_fork",
        mmap_tests::pread_buffer_after_fork,
    ),
    t("madvise_and_fixed", mmap_tests::madvise_and_fixed),
    t(
        "mmap_read_around_random_order",
        mmap_tests::mmap_read_around_random_order,
    ),
    // memory locks (mlock, mlock2, munlock, mlockall, munlockall, MAP_LOCKED)
    t("mlock_ranges", mlock_tests::mlock_ranges),
    t("mlockall_semantics", mlock_tests::mlockall_semantics),
    // fcntl's owners, leases and OFD locks; packet pipes; madvise's fork marks
    t(
        "ofd_locks_belong_to_the_description",
        fcntl_tests::ofd_locks_belong_to_the_description,
    ),
    t(
        "pipe_o_async_signals_the_owner",
        fcntl_tests::pipe_o_async_signals_the_owner,
    ),
    t(
        "lease_break_waits_for_the_holder",
        fcntl_tests::lease_break_waits_for_the_holder,
    ),
    t(
        "packet_pipe_reads_one_write",
        fcntl_tests::packet_pipe_reads_one_write,
    ),
    t(
        "madvise_marks_what_fork_copies",
        fcntl_tests::madvise_marks_what_fork_copies,
    ),
    t(
        "dev_zero_maps_anonymous_memory",
        fcntl_tests::dev_zero_maps_anonymous_memory,
    ),
    t(
        "stop_and_continue_reach_the_parent",
        fcntl_tests::stop_and_continue_reach_the_parent,
    ),
    // scheduling policies, host names, personality, getcpu
    t("sched_policy_calls", sched_tests::sched_policy_calls),
    t("host_names", sched_tests::host_names),
    t("personality_getcpu", sched_tests::personality_getcpu),
    t("sched_affinity", sched_tests::sched_affinity),
    t(
        "reboot_cad_wait_int_min",
        sched_tests::reboot_cad_wait_int_min,
    ),
    // native AIO (io_setup, io_submit, io_getevents, io_cancel, io_destroy)
    t("aio_read_write_events", aio_tests::aio_read_write_events),
    t("aio_errors", aio_tests::aio_errors),
    t("aio_limits", aio_tests::aio_limits),
    t("aio_getevents_timeout", aio_tests::aio_getevents_timeout),
    t("aio_not_inherited", aio_tests::aio_not_inherited),
    t("aio_reads_in_flight", aio_tests::aio_reads_in_flight),
    t(
        "aio_reads_from_each_hart",
        aio_tests::aio_reads_from_each_hart,
    ),
    t(
        "aio_destroy_and_exit_in_flight",
        aio_tests::aio_destroy_and_exit_in_flight,
    ),
    t(
        "aio_eventfd_completions",
        aio_tests::aio_eventfd_completions,
    ),
    // what glibc, gcc and bash call besides: clone3, mincore, socket names, riscv_hwprobe
    t("clone3_semantics", toolchain_tests::clone3_semantics),
    t("mincore_semantics", toolchain_tests::mincore_semantics),
    t("socket_names", toolchain_tests::socket_names),
    // Unix-domain sockets with data (connections, pairs, descriptor passing, wake-ups)
    t("unix_stream_connect", socket_tests::unix_stream_connect),
    t("unix_socketpair_data", socket_tests::unix_socketpair_data),
    t("unix_pass_descriptors", socket_tests::unix_pass_descriptors),
    t(
        "unix_blocked_reader_woken",
        socket_tests::unix_blocked_reader_woken,
    ),
    t("unix_socket_errors", socket_tests::unix_socket_errors),
    t("riscv_hwprobe_keys", toolchain_tests::riscv_hwprobe_keys),
    // bad input must fail cleanly
    t("efault_null_buffer", bad_input::efault_null_buffer),
    t(
        "efault_by_page_protection",
        bad_input::efault_by_page_protection,
    ),
    t("efault_kernel_address", bad_input::efault_kernel_address),
    t(
        "efault_half_unmapped_buffer",
        bad_input::efault_half_unmapped_buffer,
    ),
    t(
        "efault_reused_buffer_after_mapping_change",
        bad_input::efault_reused_buffer_after_mapping_change,
    ),
    t("efault_null_path", bad_input::efault_null_path),
    t("ebadf_bad_fds", bad_input::ebadf_bad_fds),
    t("ebadf_close_twice", bad_input::ebadf_close_twice),
    t(
        "ebadf_wrong_access_mode",
        bad_input::ebadf_wrong_access_mode,
    ),
    t("enosys_unknown_syscall", bad_input::enosys_unknown_syscall),
    t(
        "einval_flags_and_whence",
        bad_input::einval_flags_and_whence,
    ),
];

/// `ensure!(cond, "format", args...)`: fail the test with the message unless `cond`.
#[macro_export]
macro_rules! ensure {
    ($cond:expr, $($arg:tt)*) => {
        if !$cond {
            return Err(format!($($arg)*));
        }
    };
}

/// Turn a syscall error into a test failure naming the call: `open a: ENOENT`.
pub trait Check<T> {
    fn what(self, what: &str) -> Result<T, String>;
}

impl<T> Check<T> for SysResult<T> {
    fn what(self, what: &str) -> Result<T, String> {
        self.map_err(|e| format!("{what}: unexpected {}", e.name()))
    }
}

/// The call must fail with exactly `want`.
pub fn expect_errno<T: core::fmt::Debug>(r: SysResult<T>, want: Errno, what: &str) -> TestResult {
    match r {
        Err(e) if e == want => Ok(()),
        Err(e) => Err(format!(
            "{what}: expected {}, got {}",
            want.name(),
            e.name()
        )),
        Ok(v) => Err(format!(
            "{what}: expected {}, but it succeeded ({v:?})",
            want.name()
        )),
    }
}

/// Create `path` holding exactly `data`.
pub fn put_file(path: &str, data: &[u8]) -> TestResult {
    let f =
        File::open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644).what(&format!("create {path}"))?;
    f.write_all(data).what(&format!("write {path}"))?;
    f.close().what(&format!("close {path}"))
}

/// The whole content of `path`.
pub fn get_file(path: &str) -> Result<Vec<u8>, String> {
    let f = File::open_read(path).what(&format!("open {path}"))?;
    f.read_to_end().what(&format!("read {path}"))
}

/// `what` must equal `want`, shown readably on mismatch.
pub fn same_bytes(got: &[u8], want: &[u8], what: &str) -> TestResult {
    if got == want {
        return Ok(());
    }
    let at = got
        .iter()
        .zip(want)
        .position(|(a, b)| a != b)
        .unwrap_or(got.len().min(want.len()));
    Err(format!(
        "{what}: got {} bytes, expected {}; first difference at byte {at}{}",
        got.len(),
        want.len(),
        if got.len() <= 64 && want.len() <= 64 {
            format!(
                " ({:?} vs {:?})",
                String::from_utf8_lossy(got),
                String::from_utf8_lossy(want)
            )
        } else {
            String::new()
        }
    ))
}

struct Options<'a> {
    dir: &'a str,
    summary: Option<&'a str>,
    assume_fat: Option<bool>,
    only: Vec<&'a str>,
}

fn parse(argv: &[&'static str]) -> Result<Options<'static>, String> {
    let mut o = Options {
        dir: "",
        summary: None,
        assume_fat: None,
        only: Vec::new(),
    };
    for &a in argv.iter().skip(1) {
        if let Some(v) = a.strip_prefix("summary=") {
            o.summary = Some(v);
        } else if a == "assume=fat" {
            o.assume_fat = Some(true);
        } else if a == "assume=nofat" {
            o.assume_fat = Some(false);
        } else if o.dir.is_empty() {
            o.dir = a;
        } else if TESTS.iter().any(|t| t.name == a) {
            o.only.push(a);
        } else {
            return Err(format!("unknown test or argument {a:?}"));
        }
    }
    if o.dir.is_empty() {
        return Err("missing DIR".into());
    }
    Ok(o)
}

fn main(argv: &[&'static str]) -> i32 {
    let o = match parse(argv) {
        Ok(o) => o,
        Err(e) => {
            println!("testrunner: {e}");
            println!("usage: testrunner DIR [summary=FILE] [assume=fat|nofat] [TEST...]");
            return 125;
        }
    };
    let fat = match (o.assume_fat, sys::statfs(o.dir)) {
        (Some(f), _) => f,
        (None, Ok(st)) => st.f_type == MSDOS_SUPER_MAGIC,
        (None, Err(e)) => {
            println!("testrunner: statfs {}: {}", o.dir, e.name());
            return 125;
        }
    };
    let scratch = user_tests::path_join(o.dir, &format!("t.{}", sys::getpid()));
    if let Err(e) = sys::remove_tree(&scratch).and_then(|()| sys::mkdir(&scratch, 0o755)) {
        println!(
            "testrunner: cannot make scratch directory {scratch}: {}",
            e.name()
        );
        return 125;
    }
    println!(
        "testrunner: {} tests in {scratch} ({})",
        TESTS.len(),
        if fat { "FAT" } else { "not FAT" }
    );

    let (mut passed, mut failed, mut skipped, mut xfailed, mut xpassed) = (0, 0, 0, 0, 0);
    for test in TESTS {
        if !o.only.is_empty() && !o.only.contains(&test.name) {
            continue;
        }
        if fat && test.needs != Needs::Nothing {
            println!(
                "test {:<32} skipped (FAT lacks {:?})",
                test.name, test.needs
            );
            skipped += 1;
            continue;
        }
        if matches!(test.needs, Needs::StreamReadAhead | Needs::SharedFlush)
            && sys::counters().is_err()
        {
            println!("test {:<32} skipped (no dbfs-os counters)", test.name);
            skipped += 1;
            continue;
        }
        let dir = user_tests::path_join(&scratch, test.name);
        let result = match sys::mkdir(&dir, 0o755) {
            Ok(()) => (test.run)(&Ctx { dir, fat }),
            Err(e) => Err(format!("mkdir of the test directory: {}", e.name())),
        };
        let expected_failure = match test.expect {
            Expect::Pass => None,
            Expect::FailOnFat(why) if fat => Some(why),
            Expect::FailOnFat(_) => None,
            Expect::Fail(why) => Some(why),
        };
        match (result, expected_failure) {
            (Ok(()), None) => {
                println!("test {:<32} ok", test.name);
                passed += 1;
            }
            (Err(what), None) => {
                println!("test {:<32} FAILED: {what}", test.name);
                failed += 1;
            }
            (Err(what), Some(why)) => {
                println!("test {:<32} expected failure ({why}): {what}", test.name);
                xfailed += 1;
            }
            (Ok(()), Some(why)) => {
                println!(
                    "test {:<32} UNEXPECTED PASS (listed as expected failure: {why})",
                    test.name
                );
                xpassed += 1;
            }
        }
    }
    if let Err(e) = sys::remove_tree(&scratch) {
        println!("testrunner: note: could not remove {scratch}: {}", e.name());
    }
    println!(
        "testrunner {}: {passed} passed, {failed} failed, {skipped} skipped, \
         {xfailed} expected failures, {xpassed} unexpected passes",
        o.dir
    );
    // An expected failure that passes is a stale expectation: it fails the run, so the list
    // is corrected when the behaviour arrives.
    let failed = failed + xpassed;
    let closing = format!("{passed} passed, {failed} failed");
    println!("{closing}");
    if let Some(path) = o.summary {
        if let Err(e) = put_file(path, format!("{closing}\n").as_bytes()) {
            println!("testrunner: could not write summary: {e}");
        }
    }
    failed.min(125)
}

user_tests::entry!(main);
