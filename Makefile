# dbfs-os: every user entry point. `make help` lists every target by group (generated from the
# `## target: ...` lines of this file and mk/*.mk); each target's details and its own variables
# are in the comment above it in mk/*.mk.
#
#   make run                   build everything, boot QEMU into busybox sh on the console (/fat,
#                              /dbfs, /dev mounted); `exit N` powers off, Ctrl-A X quits QEMU at once
#   make run CMD='cmd line'    boot, run the line with /bin/sh -c, print what it prints (below)
#   make run BENCH=seqwrite    build everything, boot QEMU on fresh disks, run one benchmark (or
#                              BENCH=all), print RESULT lines (bench/README.md: every benchmark)
#   make run INIT=/bin/NAME ARGS='...'   a program of yours as the first process (fresh disks)
#   make reset-disks           blank your disks (build/disk/: the next run starts empty)
#   make test                  every test (host crates, in-guest suites, reboot, crash, shell, ...)
#   make bench                 every in-guest benchmark in one boot, then a report
#
# Your disks. `make run` (the shell) and `make run CMD=...` use DISK_DIR (build/disk): fat.img
# (FAT32, /fat), dbfs.img (dbfs, /dbfs: blank when made, the kernel formats it at its first
# mount) and raw.img (/dev/vdc), each made once when missing. What you write there is there at the
# next run, also after the system (root.img, the programs) is rebuilt; only `make reset-disks`
# (or deleting DISK_DIR) blanks them, and `make clean` keeps them. Benchmarks (BENCH=, INIT=,
# make bench, fio, workloads, ...) and every test run on fresh disks of their own in build/.
#
# What `make run CMD=...` gives a script:
#   - CMD reaches the guest's /bin/sh -c byte for byte: $?, $$, quotes and backslashes are not
#     touched by make (give it as one argument: make run CMD='false; echo $?' prints 1).
#   - stdout: what the command prints (its stdout and stderr: the guest has one console), as
#     plain lines: \n, no \r. The firmware's banner and the kernel's boot messages go to
#     stderr; a kernel warning while the command runs (LOG=warn) would be on stdout.
#   - the command's exit status is written to build/run-cmd.status (a number, 0-255; 128+N
#     for a signal N) and printed on stderr as `make run: the command exited with status N`;
#     make exits 0 if the status is 0 and 2 (make's failure) otherwise. No status file: the
#     command did not finish (a failed build, a timeout, a kernel panic). build/run-cmd.log has
#     the raw console.
#
# Variables (override on the command line, e.g. `make run BENCH=seqread FS=fat32`):
#   BENCH    benchmark for `make run`: seqwrite rewrite seqread seqread4k randwrite randread
#            randread4k randwrite4k createdel, or all    (default: none, a shell)
#   CMD      shell command line `make run` runs with /bin/sh -c        (default: none)
#   FS       file system(s) to measure: fat32, raw, dbfs or all         (default: all)
#   REPS     repetitions per figure (the median is reported)            (default: 3)
#   WARMUP   untimed repetitions before them, every file system alike: under TCG the
#            first runs of guest code pay for its translation on the host    (default: 1)
#   ARGS     extra arguments for /bin/init, e.g. ARGS="size=4 n=1000:2000:1000"
#   INIT     the first program                                          (default: /bin/init)
#   DISK_DIR your disks for `make run` and `make run CMD=`              (default: build/disk)
#   MEM      guest RAM, at most 2G                                      (default: 1G)
#   PREALLOC 1: benchmark boots (BENCH=, and mk/bench.mk's BENCH_TARGETS: bench, fio, ...)
#            back all guest RAM with host memory before the kernel starts (QEMU
#            -mem-prealloc, ~3 s per boot), so no run pays the host's first touch of a guest
#            page; 0: lazily, as tests boot                             (default: 1)
#   SMP      guest harts (1-8)            (default: 2 for make run and test-guest, 1 for BENCH=, other tests, benchmarks)
#   LOG      kernel log level: error warn info debug trace             (default: warn)
#   BCACHE   block cache per mounted disk, MiB                          (default: 8)
#   DISK     device model of the benchmark disks (BENCH=, make bench, fio, workloads; not
#            your disks): default (host page cache), direct (O_DIRECT), memory (page
#            cache, flushes ignored), nvme-seed (90K IOPS, 350 MiB/s), sata (20K IOPS,
#            200 MiB/s); mk/common.mk                                  (default: default)
#   ICOUNT   1: QEMU counts instructions (-icount shift=0), figures follow the work done
#   TIMEOUT  seconds before a QEMU run is killed                        (default: 1500)
#   PROFILE  cargo profile of kernel and programs: release or dev       (default: release)
#   PJDFSTEST_SRC, LTP_SRC  third-party test suites' sources   (default: ../shared/pjdfstest,
#            ../shared/ltp). Without them `make run` and `make bench` work (the root image has
#            no pjdfstest), the targets that need one stop and say where to get it, and
#            `make test` skips those tests and says so; REQUIRE_SUITES=1 (.ci/run) makes a
#            missing source an error instead.
#
# Disks of benchmark and test runs (fresh: made again by `make images` before each run):
#   build/root.img  vda  FAT32, the programs in /bin (ours, busybox, sqlite3, fio, pjdfstest), at /
#   build/fat.img   vdb  FAT32, empty, mounted at /fat
#   build/raw.img   vdc  no file system: /dev/vdc, the raw-device baseline
#   build/dbfs.img  vdd  dbfs (formatted by the kernel when blank), mounted at /dbfs

SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
.DEFAULT_GOAL := help

BENCH   ?=
CMD     ?=
# CMD is used only as $(value CMD): never expanded by make, never exported (exporting would
# expand it).
unexport CMD
FS      ?= all
REPS    ?= 3
WARMUP  ?= 1
ARGS    ?=
INIT    ?= /bin/init
MEM     ?= 1G
PREALLOC ?= 1
SMP     ?= 1
LOG     ?= warn
BCACHE  ?= 8
ICOUNT  ?= 0
TIMEOUT ?= 1500
PROFILE ?= release
BUILD   := build
DISK_DIR ?= $(BUILD)/disk
PJDFSTEST_SRC ?= ../shared/pjdfstest
LTP_SRC ?= ../shared/ltp
REQUIRE_SUITES ?= 0

include mk/common.mk    # tool paths, QEMU command lines, install and suite-source helpers
include mk/build.mk     # set-up, build, images, your disks, run, gdb, fmt, clippy, doc, clean
include mk/thirdparty.mk  # busybox, pjdfstest, fio, sqlite for the guest
include mk/test.mk      # make test and each of its parts; pjdfstest conformance
include mk/bench.mk     # in-guest and host benchmarks (bench/README.md)
include mk/fuse.mk      # dbfs-fuse on the host
include mk/fuzz.mk      # cargo-fuzz
include mk/debian.mk    # the Debian root: image, run-debian, test-debian
include mk/ltp.mk       # LTP: build, the LTP root, make ltp, test-ltp
include mk/stress.mk    # fsx, fsstress, stress-ng in the guest (docs/RELIABILITY.md)
include mk/trinity.mk   # trinity: fuzz-kernel, test-trinity

##@ Help
.PHONY: help
## help: this page: the entry points and variables above, then every target by group
help:
	@sed -n '2,/^$$/p' Makefile | sed 's/^# \{0,1\}//'
	@echo "Every target, by group:"
	@awk '/^##@ / { printf "\n%s\n", substr($$0, 5); next } \
		/^## [a-zA-Z0-9_.-]+: / { t = $$2; sub(/:$$/, "", t); d = $$0; sub(/^## [^:]+: /, "", d); \
			printf "  %-24s %s\n", t, d }' $(MAKEFILE_LIST)
