# dbfs-os: every user entry point.
#
#   make run                     build everything, boot QEMU into busybox sh on the console
#                                (/fat, /dbfs, /dev mounted; `exit` powers off with its status;
#                                Ctrl-A X leaves QEMU at once)
#   make run CMD='cmd line'      boot, run the line with /bin/sh -c, print its output; QEMU's
#                                exit status is the command's
#   make run BENCH=seqwrite      build everything, boot QEMU, run one benchmark, print figures
#   make test                    host tests (cargo test) + the in-guest test runner + a reboot test
#                                + a full-disk test (test-fill: ENOSPC on small dbfs and FAT disks)
#                                + a crash test (30 SIGKILLs of QEMU mid-write, mmap stores
#                                included, tests/crash.sh)
#                                + pjdfstest on dbfs-fuse (test-pjdfstest, ~3 min; needs root)
#   make crash-test              the crash test with CRASH_POINTS kills (default 200), ~3 s each,
#                                then CRASH_POINTS SIGKILLs of dbfs-fuse mid-write (tools/dbfs-fuse/tests/crash.rs;
#                                40 of them run in `make test`)
#   make test-exhaust            (in `make test`) memory hogs (private, shared, beside a writer
#                                on /dbfs), fork bomb, descriptor hog, pipe without reader, pipe
#                                hog, map hog, huge argv, long paths: none may crash the kernel
#                                (EXHAUST_CASES='map_hog fork_bomb' runs only those)
#   make check-docs              (in `make test`) every path README.md and docs/*.md name exists, every
#                                function they place in a file is there (tests/doccheck.sh)
#   make test-shell              (in `make test`) busybox sh typed at in tmux: pipes, ^C, exit
#   make test-cross              (in `make test`) guest and host agree on dbfs: a tree written by
#                                the host is verified in the guest and the reverse, and one script
#                                run in both gives identical listings (tests/crosscheck.sh, SEED=N)
#   make bench                   every benchmark in one boot; figures into build/bench-*.txt,
#                                then `make syscost-icount` (its lines: build/syscost-icount.txt)
#   make syscost-icount          instructions of one system call: /bin/syscost under QEMU
#                                `-icount shift=0` (1 ns = 1 instruction) on /dbfs and /fat, each
#                                read against the floor (getppid + a 4 KiB memcpy timed by the
#                                kernel at boot, copy_cost=1): `ICOUNT op=pread4k fs=dbfs
#                                instructions=N floor=M ratio=R` lines into build/syscost-icount.txt;
#                                SYSCOST_OPTS=sync=1: a sync before each loop (the inode committed)
#   make bench-kv                kvdb vs jammdb vs redb on the host (criterion)
#   make fuse IMAGE=...          mount a dbfs image on the host (foreground; Ctrl-C unmounts)
#   make bench-fuse              dbfs-fuse vs fuse2fs (ext4) vs the host directory, with fio:
#                                the cached (buffered) table (tools/dbfs-fuse/bench.sh), then the
#                                direct-I/O table, fresh and aged, against fuse2fs ext4/ext3/ext2
#                                (tools/dbfs-fuse/bench-direct.sh; `make bench-fuse-direct` alone),
#                                its charts in build/bench-fuse-direct/ (`CHARTS=DIR` elsewhere)
#   make pjdfstest               POSIX conformance: the whole pjdfstest suite (../shared/pjdfstest,
#                                built in build/) on dbfs-fuse fresh, -o nowriteback_cache, aged
#                                and guest-written, and on fuse2fs ext4 and tmpfs as references;
#                                per-system and per-directory counts (tests/pjdfstest-fuse.sh,
#                                docs/CONFORMANCE.md); fails unless dbfs passes every assertion
#   make test-pjdfstest          (in `make test`) the PJD_TEST_DIRS part of it on a fresh dbfs-fuse
#   make fuzz                    cargo-fuzz: mount + walk + writes on damaged dbfs, then FAT32
#                                images (fs/*/fuzz, target mount_walk), FUZZ_SECS each; not in
#                                `make test` (tests/corrupt.rs, tests/mutate_walk.rs are)
#   make images | gdb | fmt | clippy | clean | deps
#   make doc                     rustdoc of the library crates abi vfs kvdb dbfs fat32 xrand (with
#                                kvdb's std and vfs's conformance features) into target/doc; fails
#                                on any warning: a public item without a doc comment, a broken
#                                doc link; not in `make test`
#
# Third-party Linux programs for the guest (tools/thirdparty/fetch-build.sh; sources from Debian
# bookworm through a build-local apt set-up in build/apt, built static for riscv64 under
# build/thirdparty, never committed; a no-op rebuild takes about a second):
#   make thirdparty              busybox + pjdfstest, staged as build/thirdparty/rootfs, the tree
#                                `make images` copies into root.img: /bin/busybox, /bin/sh (the same
#                                binary), /bin/pjdfstest, /bin/pjdfstest-run, /usr/pjdfstest/
#   make busybox | pjdfstest-riscv  one of them (busybox config: tools/thirdparty/busybox.config)
#   make pjdfstest-guest         pjdfstest inside our kernel: one boot runs the suite (or
#                                GUEST_PJD_DIRS) under busybox sh on a fresh /dbfs and on /fat,
#                                per-directory tables and `PJDFSTEST fs=NAME passed=N failed=N
#                                xfail=N ...` lines; fails on any dbfs failure, any FAT result
#                                tools/thirdparty/pjdfstest-fat32-expect.txt does not expect, or an
#                                unclean fsck of the dbfs image afterwards (GUEST_PJD_FS=dbfs|fat:
#                                one of them; `make test` runs GUEST_PJD_TEST_DIRS on dbfs and
#                                GUEST_PJD_FAT_TEST_DIRS on FAT)
#   make thirdparty-check        both under qemu-user on the host, as root: busybox checks, then
#                                the whole pjdfstest suite (or PJDFSTEST_DIRS) with the guest's runner
#                                in a chroot on a tmpfs (binfmt_misc entry only for the run)
#   make fio-riscv | sqlite      fio 3.33, sqlite3 3.40.1 + speedtest1, static riscv64 (both are
#                                in root.img: /bin/fio, /bin/sqlite3, /bin/speedtest1)
#   make fio JOB=seed FS=all     the job file bench/fio/JOB.fio in the guest on /dbfs and /fat
#                                (FS: dbfs, fat32, comma-separated, or all), alternated, REPS
#                                runs: RESULT lines (MB/s, IOPS, p50/p99 latency) and a median
#                                table; FIO_BS (1m), FIO_JOBS (1; a list such as 1,4 runs each
#                                in the same boot and sets each against the first), FIO_SIZE
#                                (16m per job), FIO_TOTAL (unset; e.g. 64m: the bytes all jobs of
#                                a run share, so 1 and 4 jobs move the same data), FIO_THREAD (0;
#                                1 = jobs as threads), FIO_RUNTIME (10 s), FIO_LOOPS (1: times
#                                each line runs over its files, for runs long enough that a
#                                job's start and end do not weigh); each repetition starts
#                                with the next file system, so none always runs first;
#                                ICOUNT=1 (here, in make run and make bench): QEMU counts
#                                instructions, so the figures do not follow the host's speed
#   make fio-host JOB=seed       the same job file on the host: dbfs-fuse, fuse2fs ext4 and a
#                                host directory (FIO_SYSTEMS), same variables, same script
#                                (tools/fio/fio-jobs.sh), so guest and host tables line up
#   make bench-workloads         the seed experiments' other workloads in the guest, one boot, FS
#                                alternated, REPS runs: filebench-style fileserver / webserver /
#                                varmail, an mdtest tree (depth 3, fan-out 6, 8 files a directory),
#                                create_empty (latency percentiles), delete_2m, createdel_ordered
#                                (bench/workloads, /bin/workloads; WORKLOADS=all or a,b)
#   make bench-workloads-host    the same code on the host (workloads-host): dbfs-fuse, fuse2fs ext4
#                                and tmpfs (WL_SYSTEMS), alternated, REPS runs
#   make sqlite-host-bench       the same speedtest1 runs on the host (built for it): dbfs-fuse,
#                                fuse2fs ext4 and a host directory (FIO_SYSTEMS), alternated
#   make sqlite-bench            sqlite's speedtest1 on /dbfs and /fat in one boot, alternated,
#                                REPS runs each (--size SQLITE_SIZE): RESULT lines, median table
#   make fio-bench               fio psync on /dbfs and /fat in one boot, alternated, REPS runs
#                                each: 1 MiB writes (16 MiB, fsync at the end), 4 KiB random reads
#   make test-apps               (in `make test`) record locks, shared memory (mmap and System V),
#                                futexes between processes (/bin/apptest), then sqlite3 on /dbfs and
#                                /fat and fio (psync write, 4k randread; 4 threads writing with
#                                verify) on /dbfs, pthreads (/bin/threadtest), the clock through
#                                the vDSO (/bin/timetest), and every
#                                workload of bench-workloads once at a tiny size on /dbfs and /fat
#   make deps-thirdparty         the host packages these need (cross gcc, autotools, dpkg-dev, ...)
#
# Variables (override on the command line, e.g. `make run BENCH=seqread FS=fat32`):
#   BENCH    benchmark for `make run`: seqwrite rewrite seqread seqread4k randwrite randread
#            randread4k randwrite4k createdel, or all   (default: none, a shell; `make bench`
#            and `make gdb` use seqwrite / all)
#   CMD      shell command line `make run` runs with /bin/sh -c       (default: none)
#   FS       file system(s) to measure: fat32, raw, dbfs or all        (default: all)
#   REPS     repetitions per figure (the median is reported)           (default: 3)
#   ARGS     extra arguments for /bin/init, e.g. ARGS="size=4 n=1000:2000:1000"
#   MEM      guest RAM, at most 2G                                     (default: 1G)
#   SMP      guest harts (the kernel uses one)                         (default: 1)
#   LOG      kernel log level: error warn info debug trace            (default: warn)
#   INIT     the first program                                         (default: /bin/init)
#   BCACHE   block cache per mounted disk, MiB                         (default: 8)
#   TIMEOUT  seconds before a QEMU run is killed                       (default: 1500)
#   PROFILE  cargo profile of kernel and programs: release or dev      (default: release)
#   REPORT   where `make bench` writes tables and charts                (default: build/bench-report)
#   IMAGE    dbfs image for `make fuse`                                 (default: build/dbfs.img)
#   MNT      where `make fuse` mounts it                                (default: build/mnt)
#   FUSE_OPTS extra mount options, e.g. FUSE_OPTS=nobarrier,allow_other
#   CRASH_POINTS  QEMU kills in `make crash-test`                      (default: 200)
#   CRASH_SEED    replay a crash test's operations and kill delays     (default: random, printed)
#   SEED     seed of the tree `make test-cross` generates               (default: 1)
#   WORKLOADS  what `make bench-workloads[-host]` runs: all, or some of fileserver webserver
#            varmail mdtest create_empty delete_2m createdel_ordered, comma-separated (default: all)
#   WL_SYSTEMS  the systems of `make bench-workloads-host`: dbfs ext4 tmpfs   (default: all three)
#   SQLITE_SIZE  speedtest1 --size for `make sqlite-bench` (100 = its full size) (default: 10)
#   FUZZ_SECS  seconds per fuzz target in `make fuzz`                   (default: 600)
#   PJDFSTEST_DIRS  pjdfstest directories for `make thirdparty-check`, e.g. "chmod open"
#                                                                       (default: all)
#   PJDFSTEST_SRC   the pjdfstest source tree                          (default: ../shared/pjdfstest)
#   PJD_DIRS   pjdfstest directories `make pjdfstest` runs               (default: all)
#   PJD_SYSTEMS  its systems: dbfs dbfs-nowb dbfs-aged dbfs-guest fuse2fs tmpfs (default: all)
#   PJD_TEST_DIRS  the directories `make test-pjdfstest` runs (default: chmod chown ftruncate
#              link mkdir open rename rmdir symlink truncate unlink utimensat)
#
# Disks (rebuilt by `make images`; bench disks are fresh for every run):
#   build/root.img  vda  FAT32, the programs in /bin (ours, busybox, pjdfstest), mounted at /
#   build/fat.img   vdb  FAT32, empty, mounted at /fat (benchmarks and tests)
#   build/raw.img   vdc  no file system: /dev/vdc, the raw-device baseline
#   build/dbfs.img  vdd  dbfs (formatted by the kernel when blank), mounted at /dbfs

SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
.DEFAULT_GOAL := help

BENCH   ?=
CMD     ?=
export CMD
FS      ?= all
JOB     ?= seed
FIO_BS  ?= 1m
FIO_JOBS ?= 1
FIO_SIZE ?= 16m
FIO_TOTAL ?=
FIO_THREAD ?= 0
FIO_RUNTIME ?= 10
FIO_LOOPS ?= 1
FIO_SYSTEMS ?= dbfs ext4 host
# One `make fio` run's name: its results are build/fio-$(FIO_RUN)-results.txt.
FIO_RUN = $(JOB)-$(FIO_BS)-$(FIO_JOBS)j$(if $(filter 1,$(FIO_THREAD)),-threads)$(if $(filter 1,$(ICOUNT)),-icount)
REPS    ?= 3
ARGS    ?=
MEM     ?= 1G
SMP     ?= 1
LOG     ?= warn
INIT    ?= /bin/init
BCACHE  ?= 8
TIMEOUT ?= 1500
# ICOUNT=1: QEMU counts instructions (`-icount shift=0`: each guest instruction advances the
# virtual clock by 1 ns), so benchmark figures (make run BENCH=, make fio, make bench) follow
# the work done, not the host's speed; device waits still take real time.
ICOUNT  ?= 0
PROFILE ?= release
REPORT  ?= $(BUILD)/bench-report
IMAGE   ?= $(BUILD)/dbfs.img
MNT     ?= $(BUILD)/mnt
FUSE_OPTS ?=
CRASH_POINTS ?= 200
CRASH_SEED ?=
SEED    ?= 1
PJD_DIRS ?=
PJD_SYSTEMS ?= dbfs dbfs-nowb dbfs-aged dbfs-guest fuse2fs tmpfs
PJD_TEST_DIRS ?= chmod chown ftruncate link mkdir open rename rmdir symlink truncate unlink utimensat
SQLITE_SIZE ?= 10
WORKLOADS ?= all
WL_SYSTEMS ?= dbfs ext4 tmpfs

TARGET   := riscv64gc-unknown-none-elf
CARGO    ?= cargo
BUILD    := build
# Honour CARGO_TARGET_DIR, so parallel work trees / helpers can build in separate dirs.
CARGO_TARGET_DIR ?= target
export CARGO_TARGET_DIR
TGT_DIR  := $(CARGO_TARGET_DIR)/$(TARGET)/$(PROFILE)
KERNEL   := $(TGT_DIR)/kernel
MKIMAGE  := $(CARGO_TARGET_DIR)/release/mkimage
# Every program in user-tests/src/bin (NAME.rs or NAME/main.rs) is installed as /bin/NAME.
USER_BINS := $(sort $(basename $(notdir $(wildcard user-tests/src/bin/*.rs))) \
	$(patsubst user-tests/src/bin/%/main.rs,%,$(wildcard user-tests/src/bin/*/main.rs)))
CARGO_PROFILE_FLAG := $(if $(filter release,$(PROFILE)),--release,)

APT_PACKAGES := qemu-system-misc fuse3 libfuse3-dev pkg-config fio fuse2fs fonts-dejavu-core \
	autoconf automake libtool
# What tools/thirdparty/fetch-build.sh needs: the riscv64 cross compiler and C library, busybox's
# build, apt-get source / dpkg-source and the archive key, autotools for pjdfstest.
THIRDPARTY_APT_PACKAGES := gcc-riscv64-linux-gnu libc6-dev-riscv64-cross make bzip2 xz-utils \
	dpkg-dev debian-archive-keyring autoconf automake libtool
# For `make thirdparty-check` (qemu-user) and `make sqlite` (its build generates code with tclsh).
THIRDPARTY_CHECK_APT_PACKAGES := qemu-user qemu-user-static
THIRDPARTY_SQLITE_APT_PACKAGES := tcl
PJDFSTEST_DIRS ?=
PJDFSTEST_SRC ?= ../shared/pjdfstest
# test-exhaust: the cases to run (all when empty), e.g. EXHAUST_CASES=map_hog.
EXHAUST_CASES ?=
# pjdfstest directories `make pjdfstest-guest` runs (all: the whole suite) and on which file
# systems (GUEST_PJD_FS: both, dbfs or fat), and the subsets `make test` runs on dbfs (about
# 3 minutes under TCG; rename alone takes 5) and on FAT with its expectation file (about 4.5
# minutes: rename there is 1, its sticky-bit files being skipped).
GUEST_PJD_DIRS ?= all
GUEST_PJD_FS ?= both
GUEST_PJD_TEST_DIRS ?= chmod mkdir rmdir symlink unlink utimensat
GUEST_PJD_FAT_TEST_DIRS ?= open mkdir rmdir truncate unlink rename utimensat
GUEST_PJD_TIMEOUT ?= 3000
THIRDPARTY := BUILD=$(BUILD) PJDFSTEST_SRC=$(PJDFSTEST_SRC) JOBS=2 tools/thirdparty/fetch-build.sh

QEMU_BASE = qemu-system-riscv64 -machine virt -nographic -bios default -m $(MEM) -smp $(SMP) \
	$(if $(filter 1,$(ICOUNT)),-icount shift=0) -kernel $(KERNEL) \
	-drive file=$(BUILD)/root.img,if=none,format=raw,id=vda -device virtio-blk-device,drive=vda,queue-size=1024 \
	-drive file=$(BUILD)/fat.img,if=none,format=raw,id=vdb -device virtio-blk-device,drive=vdb,queue-size=1024 \
	-drive file=$(BUILD)/raw.img,if=none,format=raw,id=vdc -device virtio-blk-device,drive=vdc,queue-size=1024 \
	-drive file=$(BUILD)/dbfs.img,if=none,format=raw,id=vdd -device virtio-blk-device,drive=vdd,queue-size=1024
KERNEL_PARAMS = init=$(INIT) log=$(LOG) bcache=$(BCACHE)
SHELL_PARAMS = init=/bin/sh log=$(LOG) bcache=$(BCACHE)
# QEMU_BASE with another image as vdd: $(call QEMU_DBFS,IMAGE).
QEMU_DBFS = $(subst file=$(BUILD)/dbfs.img$(comma),file=$(1)$(comma),$(QEMU_BASE))
comma := ,
# QEMU_BASE with the small full-disk test images as vdb (FAT) and vdd (dbfs).
QEMU_FILL = $(subst file=$(BUILD)/fat.img$(comma),file=$(BUILD)/fill-fat.img$(comma),$(call QEMU_DBFS,$(BUILD)/fill-dbfs.img))

.PHONY: syscost-icount help deps build kernel user mkimage images bench-disks run test check-layers test-host test-guest test-persist test-crash crash-test test-cross test-fill bench \
	pjdfstest-guest test-pjdfstest-guest test-shell test-exhaust test-apps sqlite-bench fio-bench \
	pjdfstest test-pjdfstest pjdfstest-guest-image bench-kv fuse bench-fuse bench-fuse-direct gdb fmt clippy doc clean fuzz \
	deps-thirdparty thirdparty busybox pjdfstest-riscv thirdparty-check fio fio-riscv fio-host sqlite sqlite-host-bench \
	bench-workloads bench-workloads-host

help:
	@sed -n '2,/^$$/p' Makefile | sed 's/^# \{0,1\}//'

## Set-up: install what is missing (idempotent; CI has no terminal).
# $(call apt_install,PACKAGES): install those not installed yet.
apt_install = missing=""; for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		$(if $(filter 0,$(shell id -u)),,sudo) apt-get update -q; \
		DEBIAN_FRONTEND=noninteractive $(if $(filter 0,$(shell id -u)),,sudo) apt-get install -y -q $$missing </dev/null; \
	fi

# FUSE over io_uring (Linux 6.14+): a dbfs-fuse mount serves requests from per-CPU queues on
# the caller's core if the fuse module's enable_uring parameter is on, else through /dev/fuse
# (tools/dbfs-fuse/src/uring/; `-o nouring` always uses /dev/fuse). Turned on here when the
# parameter exists and we may write it (root); FUSE_URING=0 leaves it as it is.
FUSE_URING ?= 1
URING_PARAM := /sys/module/fuse/parameters/enable_uring

deps:
	@$(call apt_install,$(APT_PACKAGES))
	@rustup target list --installed | grep -qx $(TARGET) || rustup target add $(TARGET)
	@if [ "$(FUSE_URING)" = 1 ] && [ -w $(URING_PARAM) ] && [ "$$(cat $(URING_PARAM))" != Y ]; then \
		echo Y > $(URING_PARAM) && echo "make: FUSE over io_uring turned on ($(URING_PARAM))"; fi

## Build
# The kernel alone is built with whole-program LTO in one codegen unit, so the file systems'
# small functions inline into the system-call path (fewer calls and returns: each return is a
# translation-block lookup in QEMU). Only this cargo invocation sees the override.
kernel: deps
	CARGO_PROFILE_RELEASE_LTO=fat CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1 \
		$(CARGO) build $(CARGO_PROFILE_FLAG) -p kernel --target $(TARGET)

user: deps
	$(CARGO) build $(CARGO_PROFILE_FLAG) -p user-tests --target $(TARGET)

mkimage: deps
	$(CARGO) build --release -p mkimage

build: kernel user mkimage

$(BUILD):
	mkdir -p $(BUILD)

images: build thirdparty | $(BUILD)
	$(MKIMAGE) fat32 $(BUILD)/root.img --size 64M --label DBFSROOT \
		--add-tree $(BUILD)/thirdparty/rootfs:/ \
		--add tools/thirdparty/pjdfstest-both.sh:/bin/pjdfstest-both \
		--add tools/thirdparty/pjdfstest-fat32-expect.txt:/etc/pjdfstest-fat32.expect \
		--add tools/thirdparty/sqlite-bench.sh:/bin/sqlite-bench \
		--add tools/thirdparty/fio-bench.sh:/bin/fio-bench \
		--add tools/fio/fio-jobs.sh:/bin/fio-jobs \
		--add-tree bench/fio:/etc/fio \
		--add-tree tools/rootfs:/ \
		$(foreach b,$(USER_BINS),--add $(TGT_DIR)/$(b):/bin/$(b))
	$(MAKE) --no-print-directory bench-disks

## Third-party programs (tools/thirdparty/fetch-build.sh: cached, a no-op run takes seconds).
deps-thirdparty:
	@$(call apt_install,$(THIRDPARTY_APT_PACKAGES))

thirdparty: deps-thirdparty
	@$(call apt_install,$(THIRDPARTY_SQLITE_APT_PACKAGES))
	$(THIRDPARTY) rootfs

busybox: deps-thirdparty
	$(THIRDPARTY) $@

fio-riscv: deps-thirdparty
	$(THIRDPARTY) fio

# The riscv64 build of pjdfstest for the guest (`make pjdfstest` is the FUSE conformance run).
pjdfstest-riscv: deps-thirdparty
	$(THIRDPARTY) pjdfstest

sqlite: deps-thirdparty
	@$(call apt_install,$(THIRDPARTY_SQLITE_APT_PACKAGES))
	$(THIRDPARTY) sqlite

thirdparty-check: deps-thirdparty
	@$(call apt_install,$(THIRDPARTY_CHECK_APT_PACKAGES))
	$(THIRDPARTY) check $(PJDFSTEST_DIRS)

# Fresh, empty benchmark disks, so every run starts from the same state; without holes in the
# host's files (`--allocate`), so that the guest's writes cost what a real disk's do.
bench-disks: | $(BUILD)
	$(MKIMAGE) fat32 $(BUILD)/fat.img --size 300M --label BENCHFAT --allocate
	$(MKIMAGE) blank $(BUILD)/raw.img --size 64M --allocate
	$(MKIMAGE) blank $(BUILD)/dbfs.img --size 256M --allocate

## Run one benchmark (or BENCH=all), a command (CMD=...), a program of your own as the first
## process (INIT=/bin/NAME ARGS="..."), or an interactive shell in QEMU.
## The command line reaches the kernel in single quotes (the kernel splits its command line
## as sh does), with every ' in it written as '\''.
run: images
	@if [ -n "$(BENCH)" ]; then \
		timeout --foreground -k 10 $(TIMEOUT) $(QEMU_BASE) \
			-append "$(KERNEL_PARAMS) -- bench=$(BENCH) fs=$(FS) reps=$(REPS) $(ARGS)" \
			| tee $(BUILD)/run-$(BENCH).log; \
	elif [ -n "$$CMD" ]; then \
		quoted=$$(printf '%s' "$$CMD" | sed "s/'/'\\\\''/g"); \
		timeout --foreground -k 10 $(TIMEOUT) $(QEMU_BASE) \
			-append "$(SHELL_PARAMS) -- -c '$$quoted'" | tee $(BUILD)/run-cmd.log; \
	elif [ "$(origin INIT)" != file ]; then \
		timeout --foreground -k 10 $(TIMEOUT) $(QEMU_BASE) \
			-append "$(KERNEL_PARAMS) -- $(ARGS)" | tee $(BUILD)/run-init.log; \
	else \
		echo "dbfs-os: busybox sh on the console; 'exit' powers off, Ctrl-A X quits QEMU"; \
		$(QEMU_BASE) -append "$(SHELL_PARAMS)"; \
	fi

## Tests: host crates, then the in-guest runner (QEMU exit status = failures), then data
## written in one boot checked in the next (same disks: nothing is reformatted).
test: check-layers test-host test-guest test-persist test-crash test-cross test-fill test-pjdfstest test-pjdfstest-guest test-shell test-exhaust \
	test-apps check-docs

# Every path the docs name exists, and every name they place in a file is there (tests/doccheck.sh).
.PHONY: check-docs
check-docs:
	tests/doccheck.sh

test-host: deps
	$(CARGO) test --release --workspace --exclude kernel --exclude user-tests
	$(CARGO) test --release -p vfs --features conformance

## Structure (tools/layercheck): no file-level import cycle in dbfs and kvdb; the kernel's
## layers (kernel/layers.txt, lowest first) run one way, checked once that file exists; no
## Rust source file outside tests/ folders over 1000 lines. Every check runs; any finding fails.
LAYERCHECK := $(CARGO_TARGET_DIR)/release/layercheck
LINE_CHECK_DIRS := kernel fs drivers abi user-tests bench tools
check-layers:
	$(CARGO) build --release -p layercheck
	@status=0; \
	$(LAYERCHECK) fs/dbfs/src fs/kvdb/src || status=1; \
	if [ -f kernel/layers.txt ]; then \
		$(LAYERCHECK) --layers kernel/layers.txt kernel/src || status=1; \
	else \
		echo "check-layers: no kernel/layers.txt yet, kernel layers not checked"; \
	fi; \
	$(LAYERCHECK) --max-lines 1000 $(LINE_CHECK_DIRS) || status=1; \
	exit $$status

test-guest: images
	timeout --foreground -k 10 600 $(QEMU_BASE) -append "$(KERNEL_PARAMS) blk_selftest=1 mem_selftest=1 -- test" \
		| tee $(BUILD)/test-guest.log
	@grep -Eq '^(all: )?[0-9]+ passed, 0 failed' $(BUILD)/test-guest.log || \
		{ echo "in-guest tests: no clean 'N passed, 0 failed' line"; exit 1; }
	@grep -q 'scatter-gather and window self-test: ok' $(BUILD)/test-guest.log || \
		{ echo "virtio-blk scatter-gather and disk window self-test did not pass"; exit 1; }
	@grep -q 'memcpy/memset/memcmp self-test: ok' $(BUILD)/test-guest.log || \
		{ echo "kernel memcpy/memset/memcmp self-test did not pass"; exit 1; }

test-persist: images
	timeout --foreground -k 10 300 $(QEMU_BASE) \
		-append "init=/bin/persist log=$(LOG) -- write /dbfs/persist" | tee $(BUILD)/persist-1.log
	timeout --foreground -k 10 300 $(QEMU_BASE) \
		-append "init=/bin/persist log=$(LOG) -- write /fat/persist" | tee -a $(BUILD)/persist-1.log
	timeout --foreground -k 10 300 $(QEMU_BASE) \
		-append "init=/bin/persist log=$(LOG) -- check /dbfs/persist" | tee $(BUILD)/persist-2.log
	timeout --foreground -k 10 300 $(QEMU_BASE) \
		-append "init=/bin/persist log=$(LOG) -- check /fat/persist" | tee -a $(BUILD)/persist-2.log
	@test "$$(grep -Ec '^[0-9]+ passed, 0 failed' $(BUILD)/persist-2.log)" = 2 || \
		{ echo "reboot test: data written before the reboot did not come back"; exit 1; }

## A full disk (user-tests/src/bin/fillfs.rs): small dbfs (16 MiB) and FAT (34 MiB) disks
## are filled until ENOSPC; committed files must survive, deleting must work and free space.
test-fill: images
	$(MKIMAGE) fat32 $(BUILD)/fill-fat.img --size 34M --label FILLFAT
	$(MKIMAGE) blank $(BUILD)/fill-dbfs.img --size 16M
	timeout --foreground -k 10 300 $(QEMU_FILL) \
		-append "init=/bin/fillfs log=$(LOG) -- /dbfs /fat" | tee $(BUILD)/test-fill.log
	@grep -Eq '^[0-9]+ passed, 0 failed' $(BUILD)/test-fill.log || \
		{ echo "full-disk test: a check failed"; exit 1; }

## Guest and host agree (tests/crosscheck.sh): dbfs-fuse and the guest each write a generated
## tree the other verifies, and tests/crosscheck/workload.txt gives the same listing on both.
test-cross: images
	$(CARGO) build --release -p dbfs-fuse
	QEMU='$(call QEMU_DBFS,@DBFS@)' KPARAMS='log=$(LOG) bcache=$(BCACHE)' \
		DBFS_FUSE=$(CARGO_TARGET_DIR)/release/dbfs-fuse WORK=$(BUILD)/cross SEED=$(SEED) \
		tests/crosscheck.sh

## POSIX conformance with pjdfstest through FUSE (tests/pjdfstest-fuse.sh, docs/CONFORMANCE.md).
## The guest-written image: the guest formats a blank disk and writes the cross-check tree.
PJD_ENV = DBFS_FUSE=$(CARGO_TARGET_DIR)/release/dbfs-fuse BUILD=$(BUILD)

pjdfstest-guest-image: images
	rm -f $(BUILD)/pjdfstest-guest.img
	truncate -s 256M $(BUILD)/pjdfstest-guest.img
	timeout --foreground -k 10 300 $(call QEMU_DBFS,$(BUILD)/pjdfstest-guest.img) \
		-append "init=/bin/crosscheck log=$(LOG) bcache=$(BCACHE) -- gen /dbfs/tree seed=$(SEED)" \
		</dev/null | tr -d '\r' > $(BUILD)/pjdfstest-guest.log
	@grep -q '^crosscheck gen: seed $(SEED) written' $(BUILD)/pjdfstest-guest.log || \
		{ echo "the guest did not write its tree (log $(BUILD)/pjdfstest-guest.log)"; exit 1; }

pjdfstest: deps pjdfstest-guest-image
	$(CARGO) build --release -p dbfs-fuse
	timeout -k 10 7200 env $(PJD_ENV) GUEST_IMAGE=$(BUILD)/pjdfstest-guest.img \
		SYSTEMS="$(PJD_SYSTEMS)" DIRS="$(PJD_DIRS)" tests/pjdfstest-fuse.sh | tee $(BUILD)/pjdfstest.log

test-pjdfstest: deps
	$(CARGO) build --release -p dbfs-fuse
	timeout -k 10 900 env $(PJD_ENV) SYSTEMS=dbfs DIRS="$(PJD_TEST_DIRS)" tests/pjdfstest-fuse.sh \
		| tee $(BUILD)/test-pjdfstest.log

## Crash survival: SIGKILL QEMU while /bin/crashwriter writes to dbfs (write(2) and shared
## mappings made durable by msync/fsync), then fsck the image and
## check every committed file on the host and in the next boot (tests/crash.sh).
CRASH_ENV = BUILD=$(BUILD) KERNEL=$(KERNEL) DBFS_FUSE=$(CARGO_TARGET_DIR)/release/dbfs-fuse \
	MEM=$(MEM) LOG=$(LOG) CRASH_SEED=$(CRASH_SEED)

test-crash: images
	$(CARGO) build --release -p dbfs-fuse
	$(CRASH_ENV) CRASH_POINTS=30 tests/crash.sh

crash-test: images
	$(CARGO) build --release -p dbfs-fuse
	$(CRASH_ENV) CRASH_POINTS=$(CRASH_POINTS) tests/crash.sh
	CRASH_SEED=$(CRASH_SEED) FUSE_CRASH_ROUNDS=$(CRASH_POINTS) $(CARGO) test --release -p dbfs-fuse --test crash -- --nocapture

## Every benchmark, one boot; the log is the record (see docs/BENCHMARKS.md).
bench: images
	timeout --foreground -k 10 $(TIMEOUT) $(QEMU_BASE) \
		-append "$(KERNEL_PARAMS) -- bench=all fs=$(FS) reps=$(REPS) $(ARGS)" \
		| tee $(BUILD)/bench-guest.log
	@grep '^RESULT' $(BUILD)/bench-guest.log > $(BUILD)/bench-results.txt
	$(CARGO) run --release -q -p bench-report -- $(BUILD)/bench-guest.log --out-dir $(REPORT) \
		--title "dbfs-os in QEMU (FS=$(FS), REPS=$(REPS))"
	$(MAKE) --no-print-directory syscost-icount
	@echo "results: $(BUILD)/bench-results.txt; tables and charts: $(REPORT)/;" \
		"instructions per call (-icount): $(BUILD)/syscost-icount.txt"

## Instructions of one system call (docs/BENCHMARKS.md, "One 4 KiB pread against the floor"):
## -icount for this boot only; SYSCOST_CALLS calls per loop; SYSCOST_OPTS more options of
## /bin/syscost (sync=1, only=pwrite4k_append, directories); SYSCOST_PARAMS more kernel
## parameters (dbfs_dirty_mib=256). The floor is a null system call (getppid) plus one 4 KiB
## page copy by the kernel's memcpy; ratio = instructions / floor.
SYSCOST_CALLS ?= 20000
SYSCOST_OPTS ?=
SYSCOST_PARAMS ?=
syscost-icount: images
	timeout --foreground -k 10 300 $(QEMU_BASE) $(if $(filter 1,$(ICOUNT)),,-icount shift=0) \
		-append "init=/bin/syscost log=$(LOG) bcache=$(BCACHE) copy_cost=1 $(SYSCOST_PARAMS) -- calls=$(SYSCOST_CALLS) $(SYSCOST_OPTS)" \
		| tee $(BUILD)/syscost-icount.log
	@awk '/^COPYCOST op=copy4k/ { split($$3, a, "="); copy = a[2] } \
		/^SYSCOST op=getppid/ { split($$3, a, "="); null = a[2] } \
		/^SYSCOST dir=/ { split($$2, d, "="); split($$3, o, "="); split($$4, n, "="); \
			fs = substr(d[2], 2); ops[++k] = o[2] " " fs " " n[2] } \
		END { if (k == 0) { print "syscost-icount: figures missing" > "/dev/stderr"; exit 1 } \
			floor = (copy == "" || null == "") ? 0 : null + copy; \
			if (floor) printf "ICOUNT op=floor4k instructions=%d getppid=%d copy4k=%d\n", floor, null, copy; \
			for (i = 1; i <= k; i++) { split(ops[i], f, " "); op = f[1] == "pread4k_same" ? "pread4k" : f[1]; \
				if (floor) printf "ICOUNT op=%s fs=%s instructions=%d floor=%d ratio=%.2f\n", op, f[2], f[3], floor, f[3] / floor; \
				else printf "ICOUNT op=%s fs=%s instructions=%d\n", op, f[2], f[3] } }' \
		$(BUILD)/syscost-icount.log | tee $(BUILD)/syscost-icount.txt

## Mount a dbfs image on the host in the foreground (Ctrl-C unmounts cleanly).
fuse: deps | $(BUILD)
	$(CARGO) build --release -p dbfs-fuse
	mkdir -p $(MNT)
	$(CARGO_TARGET_DIR)/release/dbfs-fuse mount $(IMAGE) $(MNT) -f $(if $(FUSE_OPTS),-o $(FUSE_OPTS))

## dbfs-fuse vs fuse2fs (ext4) vs the host directory; see docs/BENCHMARKS.md.
bench-fuse: deps
	tools/dbfs-fuse/bench.sh
	tools/dbfs-fuse/bench-direct.sh

bench-fuse-direct: deps
	tools/dbfs-fuse/bench-direct.sh

bench-kv: deps
	$(CARGO) bench -p kvdb-bench --bench kv -- --warm-up-time 1 --measurement-time 3

## Debug: QEMU waits for gdb on :1234 (`gdb-multiarch $(KERNEL) -ex 'target remote :1234'`).
## Fuzzing (docs/ARCHITECTURE.md, "Fuzzing"): cargo-fuzz on stable through RUSTC_BOOTSTRAP,
## one job per target, in each fuzz crate's own target dir. fat32 is built with -O: its fuzz
## Cargo.toml turns overflow checks on for our crates and off for fatfs (as in the kernel).
FUZZ_SECS ?= 600
FUZZ_RUN = env -u CARGO_TARGET_DIR RUSTC_BOOTSTRAP=1 cargo fuzz run
fuzz:
	@command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
	cd fs/dbfs/fuzz && python3 seeds.py corpus/mount_walk && $(FUZZ_RUN) -s none mount_walk -- \
		-max_total_time=$(FUZZ_SECS) -timeout=20 -max_len=385 -len_control=10 -print_final_stats=1
	cd fs/fat32/fuzz && python3 seeds.py corpus/mount_walk && $(FUZZ_RUN) -O -s none mount_walk -- \
		-max_total_time=$(FUZZ_SECS) -timeout=20 -max_len=448 -len_control=10 -print_final_stats=1

gdb: images
	$(QEMU_BASE) -append "$(KERNEL_PARAMS) -- bench=$(or $(BENCH),seqwrite) fs=$(FS)" -s -S

fmt:
	$(CARGO) fmt --all

clippy: deps
	$(CARGO) clippy --workspace --exclude kernel --exclude user-tests --all-targets -- -D warnings
	$(CARGO) clippy -p kernel -p user-tests --target $(TARGET) -- -D warnings

# Every public item of the library crates has a doc comment (they also `#![warn(missing_docs)]`,
# so a build shows a missing one); here a missing doc or a broken link fails.
DOC_CRATES := abi vfs kvdb dbfs fat32 xrand virtio-blk-req
doc:
	RUSTDOCFLAGS="-D warnings -D missing-docs" $(CARGO) doc --no-deps \
		$(addprefix -p ,$(DOC_CRATES)) --features vfs/conformance,kvdb/std
	@echo "documentation: $(CARGO_TARGET_DIR)/doc/<crate>/index.html"

clean:
	$(CARGO) clean
	rm -rf $(BUILD)

## pjdfstest inside the kernel (tools/thirdparty/pjdfstest-guest.sh as /bin/pjdfstest-run,
## tools/thirdparty/pjdfstest-both.sh as /bin/pjdfstest-both):
## a fresh dbfs disk and a fresh FAT disk, one boot, the suite on each under busybox sh.
## QEMU's exit status is 0 only when neither run had an unexpected result; afterwards the
## dbfs image must pass `dbfs-fuse fsck`. On FAT the runner reads
## tools/thirdparty/pjdfstest-fat32-expect.txt: the files vfat cannot run are skipped and the
## assertions it cannot pass are expected failures, each with its reason (no owners,
## permissions, links, symlinks, FIFOs or sockets on vfat; docs/CONFORMANCE.md); any other
## failure, or a listed one that passes, fails the target.
# The file systems `make pjdfstest-guest` runs: GUEST_PJD_FS, or a -d (dbfs) or -f (FAT) at the
# head of GUEST_PJD_DIRS.
PJD_FS = $(if $(filter -d,$(GUEST_PJD_DIRS)),dbfs,$(if $(filter -f,$(GUEST_PJD_DIRS)),fat,$(GUEST_PJD_FS)))
PJD_FS_FLAG = $(if $(filter dbfs,$(PJD_FS)),-d,$(if $(filter fat,$(PJD_FS)),-f,$(if $(filter both,$(PJD_FS)),,$(error GUEST_PJD_FS must be both, dbfs or fat))))
PJD_GUEST_RUN = $(MKIMAGE) blank $(BUILD)/pjd-dbfs.img --size 512M && \
	$(MKIMAGE) fat32 $(BUILD)/pjd-fat.img --size 300M --label PJDFAT && \
	timeout --foreground -k 10 $(GUEST_PJD_TIMEOUT) \
		$(subst file=$(BUILD)/fat.img$(comma),file=$(BUILD)/pjd-fat.img$(comma),$(call QEMU_DBFS,$(BUILD)/pjd-dbfs.img)) \
		-append "$(SHELL_PARAMS) -- /bin/pjdfstest-both $(filter-out all,$(1))" | tee $(2); \
	$(CARGO_TARGET_DIR)/release/dbfs-fuse fsck $(BUILD)/pjd-dbfs.img
# $(call PJD_CHECK,LOG,FS): LOG has FS's summary line with no unexpected result.
PJD_CHECK = grep -Eq '^PJDFSTEST fs=$(2) passed=[0-9]+ failed=0 xfail=[0-9]+ xpass=0 ' $(1) || \
	{ echo "pjdfstest in the guest: unexpected results on $(2) (see 'unexpected results' in $(1))"; exit 1; }

pjdfstest-guest: images
	$(CARGO) build --release -p dbfs-fuse
	$(call PJD_GUEST_RUN,$(PJD_FS_FLAG) $(filter-out -d -f,$(GUEST_PJD_DIRS)),$(BUILD)/pjdfstest-guest.log)
	@$(if $(filter dbfs,$(PJD_FS)),,$(call PJD_CHECK,$(BUILD)/pjdfstest-guest.log,fat32-guest))
	@$(if $(filter fat,$(PJD_FS)),,$(call PJD_CHECK,$(BUILD)/pjdfstest-guest.log,dbfs-guest))

test-pjdfstest-guest: images
	$(CARGO) build --release -p dbfs-fuse
	$(call PJD_GUEST_RUN,-d $(GUEST_PJD_TEST_DIRS),$(BUILD)/test-pjdfstest-guest.log)
	@$(call PJD_CHECK,$(BUILD)/test-pjdfstest-guest.log,dbfs-guest)
	$(call PJD_GUEST_RUN,-f $(GUEST_PJD_FAT_TEST_DIRS),$(BUILD)/test-pjdfstest-guest-fat.log)
	@$(call PJD_CHECK,$(BUILD)/test-pjdfstest-guest-fat.log,fat32-guest)

## The console shell as a person uses it (tests/shell.sh): QEMU in a tmux pane, commands typed
## with send-keys (a pipe, a redirection, ^C of a running command, line editing), the screen
## read back with capture-pane, and `exit 3` must end QEMU with status 3.
test-shell: images
	@command -v tmux >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q tmux </dev/null
	QEMU='$(QEMU_BASE)' KPARAMS='$(SHELL_PARAMS)' BUILD=$(BUILD) tests/shell.sh

## A user program cannot crash the kernel (user-tests/src/bin/exhaust.rs): a memory hog (an
## out-of-memory SIGKILL), a fork bomb (EAGAIN/ENOMEM), a descriptor hog (EMFILE), a pipe
## without reader (SIGPIPE/EPIPE), huge argv (E2BIG), long paths; a file fsync'd on /dbfs
## before them must read back intact after each, and the image must pass fsck afterwards.
test-exhaust: images
	$(CARGO) build --release -p dbfs-fuse
	timeout --foreground -k 10 600 $(QEMU_BASE) -append "init=/bin/exhaust log=$(LOG) -- /dbfs $(EXHAUST_CASES)" \
		| tee $(BUILD)/test-exhaust.log
	@grep -Eq '^[0-9]+ passed, 0 failed' $(BUILD)/test-exhaust.log || \
		{ echo "exhaustion test: a case failed"; exit 1; }
	$(CARGO_TARGET_DIR)/release/dbfs-fuse fsck $(BUILD)/dbfs.img

## What sqlite and fio need beyond plain file I/O (user-tests/src/bin/apptest.rs): POSIX
## record locks between processes on /dbfs and /fat, shared anonymous memory across fork,
## System V shared memory, futexes between processes, nice values; then the real sqlite3 shell
## creates, fills and queries a database on each, and fio writes and randomly reads /dbfs.
test-apps: images
	timeout --foreground -k 10 300 $(QEMU_BASE) -append "$(SHELL_PARAMS) -- -c '/bin/apptest /dbfs /fat && \
		for d in /dbfs /fat; do rm -f \$$d/apps.db; \
		sqlite3 \$$d/apps.db \"create table t(a); insert into t values(1),(2); select sum(a) from t;\" \
		| sed \"s|^|SQLITE \$$d |\"; done; \
		fio --name=w --filename=/dbfs/fio --size=4m --bs=1m --rw=write --ioengine=psync --minimal >/dev/null && \
		fio --name=r --filename=/dbfs/fio --size=4m --bs=4k --rw=randread --ioengine=psync --minimal >/dev/null && \
		echo FIO ok; \
		fio --name=t --thread --numjobs=4 --directory=/dbfs --size=1m --bs=4k --rw=randwrite \
		--ioengine=psync --verify=crc32c --do_verify=1 --group_reporting --minimal >/dev/null && \
		echo FIO threads ok; \
		for d in /dbfs /fat; do fio --name=m --filename=\$$d/fio-mmap --size=8m --bsrange=1k-256k \
		--rw=randwrite --ioengine=mmap --verify=crc32c --verify_fatal=1 --minimal >/dev/null && \
		echo \"FIO mmap \$$d ok\"; rm -f \$$d/fio-mmap; done; \
		/bin/threadtest; \
		/bin/timetest; \
		/bin/workloads dbfs:/dbfs fat32:/fat reps=1 quick | grep -E \"^(ERROR|workloads:)\"'" | tee $(BUILD)/test-apps.log
	@grep -Eq '^[0-9]+ passed, 0 failed' $(BUILD)/test-apps.log || \
		{ echo "apptest: a check failed"; exit 1; }
	@grep -Eq '^threadtest: [0-9]+ passed, 0 failed' $(BUILD)/test-apps.log || \
		{ echo "threadtest: a check failed"; exit 1; }
	@grep -Eq '^timetest: [0-9]+ passed, 0 failed' $(BUILD)/test-apps.log || \
		{ echo "timetest: a check failed"; exit 1; }
	@grep -q '^FIO threads ok' $(BUILD)/test-apps.log || \
		{ echo "fio --thread --numjobs=4 with verify failed"; exit 1; }
	@test "$$(grep -c '^SQLITE /[a-z]* 3' $(BUILD)/test-apps.log)" = 2 || \
		{ echo "sqlite3 in the guest did not answer 3 on both file systems"; exit 1; }
	@grep -q '^FIO ok' $(BUILD)/test-apps.log || { echo "fio in the guest failed"; exit 1; }
	@test "$$(grep -c '^FIO mmap /[a-z]* ok' $(BUILD)/test-apps.log)" = 2 || \
		{ echo "fio --ioengine=mmap with verify failed on dbfs or FAT32"; exit 1; }
	@grep -Eq '^workloads: [1-9][0-9]* results, 0 errors' $(BUILD)/test-apps.log || \
		{ echo "bench/workloads at its quick size failed in the guest"; exit 1; }

## sqlite's speedtest1 on /dbfs and /fat, alternated, REPS runs each, one boot
## (tools/thirdparty/sqlite-bench.sh as /bin/sqlite-bench): RESULT lines and a median table.
sqlite-bench: images
	timeout --foreground -k 10 $(TIMEOUT) $(QEMU_BASE) \
		-append "$(SHELL_PARAMS) -- /bin/sqlite-bench $(REPS) $(SQLITE_SIZE)" | tee $(BUILD)/sqlite-bench.log
	@grep '^RESULT bench=speedtest1' $(BUILD)/sqlite-bench.log > $(BUILD)/sqlite-bench-results.txt
	@echo "results: $(BUILD)/sqlite-bench-results.txt"

## fio (psync) on /dbfs and /fat, alternated, REPS runs each, one boot
## (tools/thirdparty/fio-bench.sh as /bin/fio-bench): 1 MiB sequential write with a final
## fsync, then 4 KiB random reads of the 16 MiB file; RESULT lines and a median table.
# fio with a job file of bench/fio, in the guest (see the header); FS picks the directories.
fio: images
	@dirs=""; for f in $$(echo "$(if $(filter all,$(FS)),dbfs$(comma)fat32,$(FS))" | tr , ' '); do \
		case $$f in dbfs) dirs="$$dirs dbfs=/dbfs" ;; fat32) dirs="$$dirs fat32=/fat" ;; \
		*) echo "make fio: FS=$$f: dbfs, fat32 or all"; exit 2 ;; esac; done; \
	test -f bench/fio/$(JOB).fio || { echo "make fio: no bench/fio/$(JOB).fio"; exit 2; }; \
	timeout --foreground -k 10 $(TIMEOUT) $(QEMU_BASE) -append "$(SHELL_PARAMS) -- -c \
		'SIZE=$(FIO_SIZE) TOTAL=$(FIO_TOTAL) JOBS=$(FIO_JOBS) BS=$(FIO_BS) THREAD=$(FIO_THREAD) \
		RUNTIME=$(FIO_RUNTIME) LOOPS=$(FIO_LOOPS) fio-jobs /etc/fio/$(JOB).fio $(REPS)$$dirs'" | tee $(BUILD)/fio-$(FIO_RUN).log
	@grep '^RESULT bench=fio' $(BUILD)/fio-$(FIO_RUN).log > $(BUILD)/fio-$(FIO_RUN)-results.txt
	@echo "results: $(BUILD)/fio-$(FIO_RUN)-results.txt (charts: bench-report FILE --out-dir DIR)"

# The same job file on the host (dbfs-fuse, fuse2fs, host directory).
fio-host: deps
	SYSTEMS="$(FIO_SYSTEMS)" SIZE=$(FIO_SIZE) TOTAL=$(FIO_TOTAL) JOBS=$(FIO_JOBS) BS=$(FIO_BS) THREAD=$(FIO_THREAD) \
		RUNTIME=$(FIO_RUNTIME) LOOPS=$(FIO_LOOPS) tools/fio/fio-host.sh $(JOB) $(REPS)

## The seed experiments' other workloads (bench/workloads: filebench-style fileserver, webserver,
## varmail; an mdtest tree; create_empty; delete_2m; createdel_ordered), written once: in the guest
## (/bin/workloads as init, one boot, FS alternated within each of REPS repetitions) ...
bench-workloads: images
	@dirs=""; for f in $$(echo "$(if $(filter all,$(FS)),dbfs$(comma)fat32,$(FS))" | tr , ' '); do \
		case $$f in dbfs) dirs="$$dirs dbfs:/dbfs" ;; fat32) dirs="$$dirs fat32:/fat" ;; \
		*) echo "make bench-workloads: FS=$$f: dbfs, fat32 or all"; exit 2 ;; esac; done; \
	timeout --foreground -k 10 $(TIMEOUT) $(QEMU_BASE) -append "init=/bin/workloads log=$(LOG) bcache=$(BCACHE) \
		--$$dirs reps=$(REPS) workloads=$(WORKLOADS)" | tee $(BUILD)/workloads-guest.log
	@grep '^RESULT' $(BUILD)/workloads-guest.log > $(BUILD)/workloads-guest-results.txt || true
	@grep -Eq '^workloads: [0-9]+ results, 0 errors' $(BUILD)/workloads-guest.log || \
		{ echo "make bench-workloads: a workload failed (ERROR lines above)"; exit 1; }
	@echo "results: $(BUILD)/workloads-guest-results.txt"

## ... and on the host (bench/workloads/host.sh): dbfs-fuse and fuse2fs ext4 on fresh images and a
## tmpfs directory (WL_SYSTEMS), alternated within each of REPS repetitions.
bench-workloads-host: deps
	SYSTEMS="$(WL_SYSTEMS)" bench/workloads/host.sh $(REPS) $(WORKLOADS) | tee $(BUILD)/workloads-host.log
	@grep -Eq '^workloads: [0-9]+ results, 0 errors' $(BUILD)/workloads-host.log || \
		{ echo "make bench-workloads-host: a workload failed (ERROR lines above)"; exit 1; }
	@grep '^RESULT' $(BUILD)/workloads-host.log > $(BUILD)/workloads-host-results.txt
	@echo "results: $(BUILD)/workloads-host-results.txt"

# speedtest1 on the host: dbfs-fuse, fuse2fs ext4 and a host directory (the guest's script).
sqlite-host-bench: deps deps-thirdparty
	$(THIRDPARTY) sqlite-host
	SYSTEMS="$(FIO_SYSTEMS)" tools/thirdparty/sqlite-host.sh $(REPS) $(SQLITE_SIZE)

fio-bench: images
	timeout --foreground -k 10 $(TIMEOUT) $(QEMU_BASE) \
		-append "$(SHELL_PARAMS) -- /bin/fio-bench $(REPS)" | tee $(BUILD)/fio-bench.log
	@grep '^RESULT bench=fio' $(BUILD)/fio-bench.log > $(BUILD)/fio-bench-results.txt
	@echo "results: $(BUILD)/fio-bench-results.txt"
