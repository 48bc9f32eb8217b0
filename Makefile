# dbfs-os: every user entry point.
#
#   make run BENCH=seqwrite      build everything, boot QEMU, run one benchmark, print figures
#   make test                    host tests (cargo test) + the in-guest test runner + a reboot test
#                                + a full-disk test (test-fill: ENOSPC on small dbfs and FAT disks)
#                                + a crash test (30 SIGKILLs of QEMU mid-write, tests/crash.sh)
#                                + pjdfstest on dbfs-fuse (test-pjdfstest, ~3 min; needs root)
#   make crash-test              the crash test with CRASH_POINTS kills (default 200), ~3 s each,
#                                then CRASH_POINTS SIGKILLs of dbfs-fuse mid-write (tools/dbfs-fuse/tests/crash.rs;
#                                40 of them run in `make test`)
#   make test-cross              (in `make test`) guest and host agree on dbfs: a tree written by
#                                the host is verified in the guest and the reverse, and one script
#                                run in both gives identical listings (tests/crosscheck.sh, SEED=N)
#   make bench                   every benchmark in one boot; figures into build/bench-*.txt
#   make bench-kv                kvdb vs jammdb vs redb on the host (criterion)
#   make fuse IMAGE=...          mount a dbfs image on the host (foreground; Ctrl-C unmounts)
#   make bench-fuse              dbfs-fuse vs fuse2fs (ext4) vs the host directory, with fio
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
#
# Variables (override on the command line, e.g. `make run BENCH=seqread FS=fat32`):
#   BENCH    benchmark to run: seqwrite rewrite seqread seqread4k randwrite randread
#            randread4k randwrite4k createdel, or all                  (default: seqwrite)
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
#   FUZZ_SECS  seconds per fuzz target in `make fuzz`                   (default: 600)
#   PJD_DIRS   pjdfstest directories `make pjdfstest` runs               (default: all)
#   PJD_SYSTEMS  its systems: dbfs dbfs-nowb dbfs-aged dbfs-guest fuse2fs tmpfs (default: all)
#   PJD_TEST_DIRS  the directories `make test-pjdfstest` runs (default: chmod chown ftruncate
#              link mkdir open rename rmdir symlink truncate unlink utimensat)
#
# Disks (rebuilt by `make images`; bench disks are fresh for every run):
#   build/root.img  vda  FAT32, the programs in /bin, mounted at /
#   build/fat.img   vdb  FAT32, empty, mounted at /fat (benchmarks and tests)
#   build/raw.img   vdc  no file system: /dev/vdc, the raw-device baseline
#   build/dbfs.img  vdd  dbfs (formatted by the kernel when blank), mounted at /dbfs

SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
.DEFAULT_GOAL := help

BENCH   ?= seqwrite
FS      ?= all
REPS    ?= 3
ARGS    ?=
MEM     ?= 1G
SMP     ?= 1
LOG     ?= warn
INIT    ?= /bin/init
BCACHE  ?= 8
TIMEOUT ?= 1500
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

QEMU_BASE = qemu-system-riscv64 -machine virt -nographic -bios default -m $(MEM) -smp $(SMP) \
	-kernel $(KERNEL) \
	-drive file=$(BUILD)/root.img,if=none,format=raw,id=vda -device virtio-blk-device,drive=vda \
	-drive file=$(BUILD)/fat.img,if=none,format=raw,id=vdb -device virtio-blk-device,drive=vdb \
	-drive file=$(BUILD)/raw.img,if=none,format=raw,id=vdc -device virtio-blk-device,drive=vdc \
	-drive file=$(BUILD)/dbfs.img,if=none,format=raw,id=vdd -device virtio-blk-device,drive=vdd
KERNEL_PARAMS = init=$(INIT) log=$(LOG) bcache=$(BCACHE)
# QEMU_BASE with another image as vdd: $(call QEMU_DBFS,IMAGE).
QEMU_DBFS = $(subst file=$(BUILD)/dbfs.img$(comma),file=$(1)$(comma),$(QEMU_BASE))
comma := ,
# QEMU_BASE with the small full-disk test images as vdb (FAT) and vdd (dbfs).
QEMU_FILL = $(subst file=$(BUILD)/fat.img$(comma),file=$(BUILD)/fill-fat.img$(comma),$(call QEMU_DBFS,$(BUILD)/fill-dbfs.img))

.PHONY: help deps build kernel user mkimage images bench-disks run test test-host test-guest test-persist test-crash crash-test test-cross test-fill bench \
	pjdfstest test-pjdfstest pjdfstest-guest-image bench-kv fuse bench-fuse gdb fmt clippy clean fuzz

help:
	@sed -n '2,/^$$/p' Makefile | sed 's/^# \{0,1\}//'

## Set-up: install what is missing (idempotent; CI has no terminal).
deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		$(if $(filter 0,$(shell id -u)),,sudo) apt-get update -q; \
		DEBIAN_FRONTEND=noninteractive $(if $(filter 0,$(shell id -u)),,sudo) apt-get install -y -q $$missing </dev/null; \
	fi
	@rustup target list --installed | grep -qx $(TARGET) || rustup target add $(TARGET)

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

images: build | $(BUILD)
	$(MKIMAGE) fat32 $(BUILD)/root.img --size 64M --label DBFSROOT \
		$(foreach b,$(USER_BINS),--add $(TGT_DIR)/$(b):/bin/$(b))
	$(MAKE) --no-print-directory bench-disks

# Fresh, empty benchmark disks, so every run starts from the same state.
bench-disks: | $(BUILD)
	$(MKIMAGE) fat32 $(BUILD)/fat.img --size 300M --label BENCHFAT
	$(MKIMAGE) blank $(BUILD)/raw.img --size 64M
	$(MKIMAGE) blank $(BUILD)/dbfs.img --size 256M

## Run one benchmark (or BENCH=all) in QEMU.
run: images
	timeout --foreground -k 10 $(TIMEOUT) $(QEMU_BASE) \
		-append "$(KERNEL_PARAMS) -- bench=$(BENCH) fs=$(FS) reps=$(REPS) $(ARGS)" \
		| tee $(BUILD)/run-$(BENCH).log

## Tests: host crates, then the in-guest runner (QEMU exit status = failures), then data
## written in one boot checked in the next (same disks: nothing is reformatted).
test: test-host test-guest test-persist test-crash test-cross test-fill test-pjdfstest

test-host: deps
	$(CARGO) test --release --workspace --exclude kernel --exclude user-tests
	$(CARGO) test --release -p vfs --features conformance

test-guest: images
	timeout --foreground -k 10 600 $(QEMU_BASE) -append "$(KERNEL_PARAMS) blk_selftest=1 mem_selftest=1 -- test" \
		| tee $(BUILD)/test-guest.log
	@grep -Eq '^(all: )?[0-9]+ passed, 0 failed' $(BUILD)/test-guest.log || \
		{ echo "in-guest tests: no clean 'N passed, 0 failed' line"; exit 1; }
	@grep -q 'scatter-gather self-test: ok' $(BUILD)/test-guest.log || \
		{ echo "virtio-blk scatter-gather self-test did not pass"; exit 1; }
	@grep -q 'memcpy/memset self-test: ok' $(BUILD)/test-guest.log || \
		{ echo "kernel memcpy/memset self-test did not pass"; exit 1; }

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

## Crash survival: SIGKILL QEMU while /bin/crashwriter writes to dbfs, then fsck the image and
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
	@echo "results: $(BUILD)/bench-results.txt; tables and charts: $(REPORT)/"

## Mount a dbfs image on the host in the foreground (Ctrl-C unmounts cleanly).
fuse: deps | $(BUILD)
	$(CARGO) build --release -p dbfs-fuse
	mkdir -p $(MNT)
	$(CARGO_TARGET_DIR)/release/dbfs-fuse mount $(IMAGE) $(MNT) -f $(if $(FUSE_OPTS),-o $(FUSE_OPTS))

## dbfs-fuse vs fuse2fs (ext4) vs the host directory; see docs/BENCHMARKS.md.
bench-fuse: deps
	tools/dbfs-fuse/bench.sh

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
	$(QEMU_BASE) -append "$(KERNEL_PARAMS) -- bench=$(BENCH) fs=$(FS)" -s -S

fmt:
	$(CARGO) fmt --all

clippy: deps
	$(CARGO) clippy --workspace --exclude kernel --exclude user-tests --all-targets -- -D warnings
	$(CARGO) clippy -p kernel -p user-tests --target $(TARGET) -- -D warnings

clean:
	$(CARGO) clean
	rm -rf $(BUILD)
