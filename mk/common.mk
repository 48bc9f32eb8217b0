# Shared definitions: tool paths, the QEMU command lines, the apt installer, the checks for
# the third-party suites' sources. No targets but the build directory.

TARGET   := riscv64gc-unknown-none-elf
CARGO    ?= cargo
# Honour CARGO_TARGET_DIR, so parallel work trees / helpers can build in separate dirs.
CARGO_TARGET_DIR ?= target
export CARGO_TARGET_DIR
TGT_DIR  := $(CARGO_TARGET_DIR)/$(TARGET)/$(PROFILE)
KERNEL   := $(TGT_DIR)/kernel
MKIMAGE  := $(CARGO_TARGET_DIR)/release/mkimage
DBFS_FUSE := $(CARGO_TARGET_DIR)/release/dbfs-fuse
HARTDUMP := $(CARGO_TARGET_DIR)/release/hartdump
# $(GUEST_TIMEOUT) SECONDS QEMU-COMMAND: a test boot's hard timeout (as `timeout --foreground -k
# 10`); when it expires, every hart's registers and kernel stack are printed before QEMU is
# stopped (tests/guest-timeout.sh, tools/hartdump, built with mkimage).
GUEST_TIMEOUT = HARTDUMP=$(HARTDUMP) tests/guest-timeout.sh
# Every program in user-tests/src/bin (NAME.rs or NAME/main.rs) is installed as /bin/NAME.
USER_BINS := $(sort $(basename $(notdir $(wildcard user-tests/src/bin/*.rs))) \
	$(patsubst user-tests/src/bin/%/main.rs,%,$(wildcard user-tests/src/bin/*/main.rs)))
CARGO_PROFILE_FLAG := $(if $(filter release,$(PROFILE)),--release,)
comma := ,

APT_PACKAGES := qemu-system-misc fuse3 libfuse3-dev pkg-config fio fuse2fs fonts-dejavu-core \
	autoconf automake libtool

# $(call apt_install,PACKAGES): install those not installed yet (idempotent; CI has no terminal).
apt_install = missing=""; for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		$(if $(filter 0,$(shell id -u)),,sudo) apt-get update -q; \
		DEBIAN_FRONTEND=noninteractive $(if $(filter 0,$(shell id -u)),,sudo) apt-get install -y -q $$missing </dev/null; \
	fi

$(BUILD):
	mkdir -p $(BUILD)

## --- QEMU ---------------------------------------------------------------------------------
# The device model of the benchmark disks (vdb, vdc, vdd of QEMU_BASE; never root.img, never
# your disks in DISK_DIR): DISK picks the -drive options, and bench runs hand `disk=$(DISK)` to
# the guest so every RESULT line names it.
#   default    the host's page cache (QEMU's default): the "device" runs at memory speed
#   direct     cache=none, aio=native: O_DIRECT to the host file, the host disk's own speed
#   memory     cache=unsafe: the host's page cache with the guest's flushes ignored, so an
#              fsync costs the guest's own work only, not the host disk's (for figures of the
#              kernel's parallelism, such as 2 writers against 1, that a host fdatasync of
#              tens of MiB would otherwise decide; never for durability)
#   nvme-seed  seed 002's device: at most 90000 requests/s and 350 MiB/s (367001600 B/s)
#   sata       a SATA SSD: at most 20000 requests/s and 200 MiB/s (209715200 B/s)
# The throttled models sit on the host page cache, so the throttle (not the host disk) is the
# limit. QEMU 7.2's leaky bucket (util/throttle.c, throttle_compute_wait) lets one tenth of a
# second of the average rate through at once before it throttles (36.7 MB and 9000 requests
# for nvme-seed), and no option makes it smaller: the -max burst options only make it larger
# (max x max-length seconds). So a run moving less than that (the protocol's 10 MiB) sees the
# burst, not the limit; bench/README.md shows what the raw device measures under each model.
DISK ?= default
DISK_MODELS := default direct memory nvme-seed sata
throttle = ,throttling.iops-total=$(1),throttling.bps-total=$(2)
DISK_OPTS_default :=
DISK_OPTS_direct := ,cache=none,aio=native
DISK_OPTS_memory := ,cache=unsafe
DISK_OPTS_nvme-seed := $(call throttle,90000,367001600)
DISK_OPTS_sata := $(call throttle,20000,209715200)
ifeq ($(filter $(DISK),$(DISK_MODELS)),)
$(error DISK=$(DISK) is not a device model; the models: $(DISK_MODELS) (mk/common.mk))
endif
DISK_OPTS := $(DISK_OPTS_$(DISK))
# $(call qemu_with,DIR,OPTS): QEMU with DIR/fat.img as vdb, DIR/raw.img as vdc, DIR/dbfs.img
# as vdd, each -drive with OPTS appended (a device model's options, or nothing).
qemu_with = qemu-system-riscv64 -machine virt -nographic -bios default -m $(MEM) $(QEMU_RAM) -smp $(SMP) \
	$(if $(filter 1,$(ICOUNT)),-icount shift=0) -kernel $(KERNEL) \
	-drive file=$(BUILD)/root.img,if=none,format=raw,id=vda -device virtio-blk-device,drive=vda,queue-size=1024 \
	-drive file=$(1)/fat.img,if=none,format=raw,id=vdb$(2) -device virtio-blk-device,drive=vdb,queue-size=1024 \
	-drive file=$(1)/raw.img,if=none,format=raw,id=vdc$(2) -device virtio-blk-device,drive=vdc,queue-size=1024 \
	-drive file=$(1)/dbfs.img,if=none,format=raw,id=vdd$(2) -device virtio-blk-device,drive=vdd,queue-size=1024
# How QEMU backs the guest's RAM. By default the host maps a page of guest RAM at its first
# touch, which costs the guest a host page fault (and, under TCG, a slow path) that real RAM
# never costs: the first 16 MiB written 4 KiB at a time in a boot, when dbfs's write-back cache
# fills fresh memory, ran at 89-122 MB/s against 171-184 with -mem-prealloc (`make fio
# JOB=seed FS=dbfs,fat32 FIO_BS=4k REPS=3`, four boots each, alternated; docs/BENCHMARKS.md).
# Benchmark targets set QEMU_RAM to $(BENCH_RAM) (PREALLOC=1); tests boot without it (each
# boot would take ~3 s longer).
BENCH_RAM := $(if $(filter 1,$(PREALLOC)),-mem-prealloc)
QEMU_RAM :=
# Benchmarks and tests: the fresh disks `make bench-disks` makes in build/, on model DISK.
QEMU_BASE = $(call qemu_with,$(BUILD),$(DISK_OPTS))
# `make run` and `make run CMD=`: the person's disks.
QEMU_USER = $(call qemu_with,$(DISK_DIR))
KERNEL_PARAMS = init=$(INIT) log=$(LOG) bcache=$(BCACHE)
SHELL_PARAMS = init=/bin/sh log=$(LOG) bcache=$(BCACHE)
# QEMU_BASE with another image as vdd: $(call QEMU_DBFS,IMAGE).
QEMU_DBFS = $(subst file=$(BUILD)/dbfs.img$(comma),file=$(1)$(comma),$(QEMU_BASE))
# QEMU_BASE with the small full-disk test images as vdb (FAT) and vdd (dbfs).
QEMU_FILL = $(subst file=$(BUILD)/fat.img$(comma),file=$(BUILD)/fill-fat.img$(comma),$(call QEMU_DBFS,$(BUILD)/fill-dbfs.img))

## --- third-party test suites (never in the repository) ------------------------------------
# Where each comes from: the public repository and the version ../shared holds.
PJDFSTEST_GET := git clone https://github.com/pjd/pjdfstest ../shared/pjdfstest && \
	git -C ../shared/pjdfstest checkout 85a8aea9e685999ef0540392fd80535f873d7ff7
LTP_GET := git clone https://github.com/linux-test-project/ltp ../shared/ltp && \
	git -C ../shared/ltp checkout 20260529 (commit 3a64d78f58bdceba93ed321e91215fb969a047ed)
have_pjdfstest := $(if $(wildcard $(PJDFSTEST_SRC)/pjdfstest.c),yes)
have_ltp := $(if $(wildcard $(LTP_SRC)/runtest/syscalls),yes)
# $(call require_suite,NAME,HAVE,VAR,DIR,GET): a recipe line that stops, saying where to get
# the source, when HAVE is empty. E.g. $(call require_suite,pjdfstest,$(have_pjdfstest),
# PJDFSTEST_SRC,$(PJDFSTEST_SRC),$(PJDFSTEST_GET)).
require_suite = $(if $(2),true,{ echo "make: $@ needs the $(1) source: none at $(4)"; \
	echo "  get it (third-party: never copied into the repository):"; \
	echo "    $(5)"; \
	echo "  or point $(3)=DIR at a copy"; exit 1; })
REQUIRE_PJDFSTEST = @$(call require_suite,pjdfstest,$(have_pjdfstest),PJDFSTEST_SRC,$(PJDFSTEST_SRC),$(PJDFSTEST_GET))
REQUIRE_LTP = @$(call require_suite,LTP,$(have_ltp),LTP_SRC,$(LTP_SRC),$(LTP_GET))
