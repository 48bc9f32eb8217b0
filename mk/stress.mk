# The stress tools Linux is attacked with (issue 45; docs/RELIABILITY.md): LTP's fsx-linux and
# fsstress, and stress-ng, in the guest on /dbfs and on /fat. The stress root is the default
# Debian root (tools/debian/packages.txt has the libraries stress-ng is linked with) plus
# stress-ng itself and libEGL.so.1 and libgbm.so.1, taken from their .debs on the host
# (tools/debian/extract-debs.sh: their packages depend on Mesa and LLVM, which stress-ng does
# not need), and LTP's two programs at /opt/ltp (tools/ltp/build.sh builds only their two
# directories into build/ltp/stress, beside the LTP suite's own install). Each boot: a copy of that root with
# tests/stress/guest.sh in /root, fresh disks (/dbfs 1 GiB, /fat 512 MiB, the raw disk) in
# build/stress/NAME, the console in build/stress-NAME.log. Afterwards the host requires the
# guest's `stress: N passed, 0 failed` line, no kernel PANIC in the log, `dbfs-fuse fsck` of
# the dbfs disk and `fsck.fat -n` of the FAT disk clean.

# What extract-debs.sh takes from which package (PKG:PATH,...).
STRESS_NG_FILES := stress-ng:usr/bin/stress-ng libegl1:usr/lib/riscv64-linux-gnu/libEGL.so.1* \
	libgbm1:usr/lib/riscv64-linux-gnu/libgbm.so.1*
STRESS_NG := $(BUILD)/stress-ng
STRESS_LTP_LIST := tests/stress/ltp-programs.txt
STRESS_LTP := $(BUILD)/ltp/stress
STRESS_ROOT := $(BUILD)/stress-root.img
STRESS_APT := dosfstools
# FS: one file system only (dbfs or fat); both by default. A long target's boot directory and
# log name it (build/stress/fsx-dbfs, build/stress-fsx-dbfs.log), so `make fsx STRESS_FS=dbfs`
# and `make fsx STRESS_FS=fat` can run side by side, one host core each.
STRESS_FS ?=
STRESS_SUFFIX := $(if $(STRESS_FS),-$(STRESS_FS))
# fsx-linux: the operations of `make fsx` (mapped reads and writes are among its five kinds)
# and its arguments (runtest/ltp-aiodio.part3's fsx01: a file up to 500000 bytes, reads,
# writes and truncates page-aligned); `make fsstress`: operations per process (4 processes).
FSX_OPS ?= 1000000
FSX_ARGS ?= -l 500000 -r 4096 -t 4096 -w 4096
FSSTRESS_OPS ?= 10000
# `make stress`: the classes, seconds per stressor, instances (--seq N).
STRESS_CLASSES ?= filesystem io memory os pipe scheduler
STRESS_TIME ?= 5
STRESS_SEQ ?= 1
# STRESS_ONLY: only these stressors of the classes (a space-separated list).
STRESS_ONLY ?=
# The whole boot's hard limit (s) of each target.
FSX_TIMEOUT ?= 21600
FSSTRESS_TIMEOUT ?= 7200
STRESS_TIMEOUT ?= 14400
TEST_STRESS_TIMEOUT ?= 900

##@ Stress tools (fsx, fsstress, stress-ng)
## stress-root: build/stress-root.img: the Debian root with stress-ng (from its .deb) and LTP's fsx-linux, fsstress
stress-root: kernel mkimage
	@$(call apt_install,$(STRESS_APT))
	@$(MAKE) --no-print-directory debian-root
	@$(MAKE) --no-print-directory ltp-deps
	@$(MAKE) --no-print-directory $(FSXPROF)
	$(REQUIRE_LTP)
	BUILD=$(BUILD) LTP_SRC=$(LTP_SRC) LTP_DEST=$(abspath $(STRESS_LTP)) tools/ltp/build.sh $(STRESS_LTP_LIST)
	@$(MAKE) --no-print-directory $(STRESS_ROOT)

$(STRESS_NG).stamp: tools/debian/extract-debs.sh mk/stress.mk
	BUILD=$(BUILD) tools/debian/extract-debs.sh $(STRESS_NG) $(STRESS_NG_FILES)
	touch $@

$(STRESS_ROOT): $(DEBIAN_ROOT) $(STRESS_LTP).stamp $(STRESS_NG).stamp
	cp --sparse=always $(DEBIAN_ROOT) $@.tmp
	$(DBFS_FUSE) import $@.tmp $(STRESS_NG) --dir / >/dev/null
	$(DBFS_FUSE) import $@.tmp $(STRESS_LTP)/opt/ltp --dir /opt/ltp
	mv $@.tmp $@

# fsxprof (tests/stress/fsxprof.c): fsx-linux's operation mix with each step timed, built
# static with Debian's cross compiler.
FSXPROF := $(BUILD)/fsxprof
$(FSXPROF): tests/stress/fsxprof.c | $(BUILD)
	riscv64-linux-gnu-gcc -O2 -Wall -static -o $@ $<

# $(call stress_boot,NAME,ARGS,TIMEOUT): boot the stress root running `guest.sh ARGS`, then
# check the log and fsck both disks.
define stress_boot
	rm -rf $(BUILD)/stress/$(1) && mkdir -p $(BUILD)/stress/$(1)/stage
	cp --sparse=always $(STRESS_ROOT) $(BUILD)/stress/$(1)/root.img
	cp tests/stress/guest.sh $(FSXPROF) $(BUILD)/stress/$(1)/stage/
	printf 'FS="%s"\nSTRESS_ONLY="%s"\n' '$(STRESS_FS)' '$(STRESS_ONLY)' >$(BUILD)/stress/$(1)/stage/stress.conf
	$(DBFS_FUSE) import $(BUILD)/stress/$(1)/root.img $(BUILD)/stress/$(1)/stage --dir /root >/dev/null
	$(MKIMAGE) fat32 $(BUILD)/stress/$(1)/fat.img --size 512M --label STRESSFAT
	$(MKIMAGE) blank $(BUILD)/stress/$(1)/raw.img --size 64M
	$(MKIMAGE) blank $(BUILD)/stress/$(1)/dbfs.img --size 1G
	$(GUEST_TIMEOUT) $(3) $(call debian_qemu,$(BUILD)/stress/$(1)/root.img,$(call qemu_with,$(BUILD)/stress/$(1))) \
		-append "$(DEBIAN_PARAMS) -- /root/guest.sh $(2)" | tee $(BUILD)/stress-$(1).log
	@! grep -a '\[kernel\] PANIC' $(BUILD)/stress-$(1).log || { echo "$@: the kernel panicked"; exit 1; }
	@grep -Eaq '^stress: [0-9]+ passed, 0 failed, [0-9]+ skipped' $(BUILD)/stress-$(1).log || \
		{ echo "$@: no clean 'stress: N passed, 0 failed' line in $(BUILD)/stress-$(1).log (a failure or a hang)"; exit 1; }
	$(DBFS_FUSE) fsck $(BUILD)/stress/$(1)/dbfs.img
	fsck.fat -n $(BUILD)/stress/$(1)/fat.img
endef

## fsx: fsx-linux FSX_OPS operations (default 10^6, mapped reads and writes among them) on /dbfs and /fat (hours)
fsx: stress-root
	$(call stress_boot,fsx$(STRESS_SUFFIX),fsx $(FSX_OPS) $(FSX_ARGS),$(FSX_TIMEOUT))

# fsx-profile: FSXPROF_OPS operations of fsx-linux's mix (FSX_ARGS' sizes) with every
# system call and user-space step timed, and the kernel's counters per operation kind.
FSXPROF_OPS ?= 1000
FSXPROF_TIMEOUT ?= 1200
## fsx-profile: where fsx's time goes: tests/stress/fsxprof.c, FSXPROF_OPS operations on /dbfs and /fat
fsx-profile: stress-root
	$(call stress_boot,profile,profile $(FSXPROF_OPS),$(FSXPROF_TIMEOUT))

## fsstress: fsstress, 4 processes of FSSTRESS_OPS operations, on /dbfs and /fat; both disks fsck'd after
fsstress: stress-root
	$(call stress_boot,fsstress$(STRESS_SUFFIX),fsstress $(FSSTRESS_OPS),$(FSSTRESS_TIMEOUT))

## stress: every stressor of stress-ng's STRESS_CLASSES, --verify, STRESS_TIME s each, on /dbfs then /fat (hours)
stress: stress-root
	$(call stress_boot,stress$(STRESS_SUFFIX),stress $(STRESS_TIME) $(STRESS_SEQ) $(STRESS_CLASSES),$(STRESS_TIMEOUT))

## test-stress: the short set: fsx-linux -N 1000, fsstress -n 200 x4, one stressor per class on /dbfs and /fat
test-stress: stress-root
	$(call stress_boot,short,short,$(TEST_STRESS_TIMEOUT))

.PHONY: stress-root fsx fsx-profile fsstress stress test-stress
