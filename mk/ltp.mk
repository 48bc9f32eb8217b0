# The Linux Test Project in the guest (issue #43). LTP's source (LTP_SRC, ../shared/ltp: never
# in the repository) is copied to build/ltp/src and built for riscv64 with Debian's cross
# compiler, the programs dynamically linked against glibc (the Debian root's, newer than the
# cross toolchain's), by tools/ltp/build.sh: only the directories whose programs the lists
# run (LTP_BUILD_LISTS), cached (an unchanged rebuild takes a second). The result is installed
# at /opt/ltp in a copy of the Debian root (build/ltp-root.img), with tests/ltp/runltp.sh, the
# runner: each case of a list with its own timeout, TMPDIR on /dbfs, one line per case and
# the closing line `LTP passed=N failed=N broken=N conf=N warn=N cases=N`.
#
# The lists (tests/ltp/README.md): enabled.txt, the cases that pass, which `make ltp` runs;
# quick.txt, a few minutes of them (`make test-ltp`); not-enabled.txt, every other entry of
# runtest/syscalls with its reason.

LTP_APT := gcc-riscv64-linux-gnu libc6-dev-riscv64-cross autoconf automake m4 make pkg-config \
	dpkg-dev debian-archive-keyring
LTP_ENABLED := tests/ltp/enabled.txt
# The passing entries of LTP's runtest/syscalls-ipc; `make ltp` runs them with enabled.txt
# (LTP_ALL: both lists, each case once: the ipc list's names are runtest/syscalls' too).
LTP_ENABLED_IPC := tests/ltp/enabled-ipc.txt
LTP_ALL := $(BUILD)/ltp/enabled-all.txt
LTP_QUICK := tests/ltp/quick.txt
# The lists whose programs are built (the broad measurement builds runtest/syscalls too).
LTP_BUILD_LISTS ?= $(LTP_ENABLED) $(LTP_ENABLED_IPC)
# `make ltp`: the list it runs (a runtest-style file on the host) and each case's timeout (s).
LTP_LIST ?= $(LTP_ALL)
LTP_CASE_TIMEOUT ?= 120
# The file system LTP's device tests format their disk with (LTP_DEV_FS_TYPE and, for
# .all_filesystems cases, LTP_SINGLE_FS_TYPE): empty, vfat and the types LTP knows.
LTP_FS ?=
# Where the cases' TMPDIR is (the runner's default: /dbfs/ltp-tmp).
LTP_TMPDIR ?=
# The size of the boot's /dbfs disk (TMPDIR's; a sparse image). runtest/fs's growfiles cases
# grow a file for two minutes: `make ltp-fs` gives them LTP_FS_DBFS_SIZE.
LTP_DBFS_SIZE ?= 512M
LTP_FS_DBFS_SIZE ?= 4G
# The whole boot's hard limit (s): `make ltp` and `make test-ltp`.
LTP_TIMEOUT ?= 3000
LTP_QUICK_TIMEOUT ?= 600
LTP_ROOT := $(BUILD)/ltp-root.img
LTP_INSTALL_STAMP := $(BUILD)/ltp/install.stamp

##@ LTP (the Linux Test Project, LTP_SRC)
## ltp-deps: install what building LTP needs (Debian's riscv64 cross compiler, autotools)
ltp-deps:
	@$(call apt_install,$(LTP_APT))

## ltp-build: build LTP's programs for the lists (LTP_BUILD_LISTS; build/ltp/install; cached)
ltp-build: ltp-deps | $(BUILD)
	$(REQUIRE_LTP)
	BUILD=$(BUILD) LTP_SRC=$(LTP_SRC) tools/ltp/build.sh $(LTP_BUILD_LISTS)

# The Debian root with /opt/ltp: made again when the root image or the install changed.
$(LTP_ROOT): $(DEBIAN_ROOT) $(LTP_INSTALL_STAMP)
	cp --sparse=always $(DEBIAN_ROOT) $@.tmp
	$(DBFS_FUSE) import $@.tmp $(BUILD)/ltp/install/opt/ltp --dir /opt/ltp
	mv $@.tmp $@

## ltp-root: build/ltp-root.img, the Debian root with LTP at /opt/ltp
ltp-root: ltp-build debian-root
	@$(MAKE) --no-print-directory $(LTP_ROOT)

# Each boot has its own directory (LTP_RUN names it, so two runs may go side by side): a copy
# of the LTP root with the list as /opt/ltp/list.txt, the runner and run.conf, and fresh
# disks (/dbfs, where the cases' TMPDIR and logs are, 512 MiB; /fat; the raw disk vdc, LTP's
# LTP_DEV: its device tests ask for at least 300 MiB).
LTP_RUN ?= run
LTP_RUN_DIR = $(BUILD)/ltp/$(LTP_RUN)
# $(call ltp_boot,LIST,TIMEOUT,LOG): boot that, bash running the runner; stop at TIMEOUT
# seconds; the console in LOG; fail unless the closing line says no case failed or broke and
# `dbfs-fuse fsck` finds the dbfs disks clean (TMPDIR's and the root).
define ltp_boot
	rm -rf $(LTP_RUN_DIR) && mkdir -p $(LTP_RUN_DIR)/stage
	cp --sparse=always $(LTP_ROOT) $(LTP_RUN_DIR)/root.img
	cp tests/ltp/runltp.sh $(LTP_RUN_DIR)/stage/runltp.sh
	cp $(1) $(LTP_RUN_DIR)/stage/list.txt
	echo "TIMEOUT=$(LTP_CASE_TIMEOUT)" > $(LTP_RUN_DIR)/stage/run.conf
	$(if $(LTP_FS),echo "LTP_DEV_FS_TYPE=$(LTP_FS) LTP_SINGLE_FS_TYPE=$(LTP_FS)" >> $(LTP_RUN_DIR)/stage/run.conf)
	$(if $(LTP_TMPDIR),echo "LTP_TMPDIR=$(LTP_TMPDIR)" >> $(LTP_RUN_DIR)/stage/run.conf)
	$(DBFS_FUSE) import $(LTP_RUN_DIR)/root.img $(LTP_RUN_DIR)/stage --dir /opt/ltp
	$(MKIMAGE) fat32 $(LTP_RUN_DIR)/fat.img --size 300M --label LTPFAT
	$(MKIMAGE) blank $(LTP_RUN_DIR)/raw.img --size 320M
	$(MKIMAGE) blank $(LTP_RUN_DIR)/dbfs.img --size $(LTP_DBFS_SIZE)
	$(GUEST_TIMEOUT) $(2) $(call debian_qemu,$(LTP_RUN_DIR)/root.img,$(call qemu_with,$(LTP_RUN_DIR))) \
		-append "$(DEBIAN_PARAMS) -- /opt/ltp/runltp.sh" | tee $(3)
	@grep -Eq '^LTP passed=[0-9]+ failed=0 broken=0 conf=[0-9]+ warn=[0-9]+ cases=[0-9]+' $(3) || \
		{ echo "$@: no clean 'LTP passed=N failed=0 broken=0 ...' line in $(3)"; exit 1; }
	for img in $(LTP_RUN_DIR)/dbfs.img $(LTP_RUN_DIR)/root.img; do \
		timeout -k 10 300 $(DBFS_FUSE) fsck $$img | tail -1 || { echo "$@: dbfs-fuse fsck of $$img failed"; exit 1; }; \
	done
endef

$(LTP_ALL): $(LTP_ENABLED) $(LTP_ENABLED_IPC) | $(BUILD)
	mkdir -p $(dir $@)
	awk '!/^#/ && NF && !seen[$$1]++' $(LTP_ENABLED) $(LTP_ENABLED_IPC) > $@

## ltp: boot the LTP root, run every case of LTP_LIST (default enabled.txt and enabled-ipc.txt; log build/ltp-LTP_RUN.log)
ltp: kernel mkimage $(LTP_ALL)
	@$(MAKE) --no-print-directory ltp-root LTP_BUILD_LISTS="$(LTP_BUILD_LISTS) $(LTP_LIST)"
	$(call ltp_boot,$(LTP_LIST),$(LTP_TIMEOUT),$(BUILD)/ltp-$(LTP_RUN).log)

test-ltp: LTP_RUN = quick
# Builds only the directories quick.txt's programs are in (on a fresh clone, in `make test`);
# after `make ltp` those are installed already and nothing is rebuilt.
## test-ltp: the quick subset of the enabled LTP cases (tests/ltp/quick.txt, a few minutes; build/ltp-quick.log)
test-ltp: kernel mkimage
	@$(MAKE) --no-print-directory ltp-root LTP_BUILD_LISTS=$(LTP_QUICK)
	$(call ltp_boot,$(LTP_QUICK),$(LTP_QUICK_TIMEOUT),$(BUILD)/ltp-quick.log)

# The device cases that pass with LTP_DEV formatted as dbfs (LTP_FS=dbfs), in their own run
# directory (build/ltp/dbfs; console in build/ltp-dbfs.log).
## ltp-dbfs: run tests/ltp/enabled-dbfs.txt with LTP's device formatted as dbfs (build/ltp-dbfs.log)
ltp-dbfs:
	@$(MAKE) --no-print-directory ltp LTP_LIST=tests/ltp/enabled-dbfs.txt LTP_FS=dbfs LTP_RUN=dbfs

# LTP's runtest/fs (growfiles, rwtest, iogen, fs_inod, ftest, stream, fs_di, openfile, ...)
# with TMPDIR on each file system: tests/ltp/fs-dbfs.txt on /dbfs, then tests/ltp/fs-fat.txt on
# /fat (each list names the entries it leaves out, and why), in their own run directories
# (build/ltp/fs-dbfs, build/ltp/fs-fat; consoles in build/ltp-fs-dbfs.log, build/ltp-fs-fat.log).
# Besides ltp_boot's checks, the FAT disk must pass `fsck.fat -n` after its run.
LTP_FS_CASE_TIMEOUT ?= 300
## ltp-fs: LTP's runtest/fs entries on /dbfs (tests/ltp/fs-dbfs.txt), then on /fat (fs-fat.txt); fsck of both after
ltp-fs:
	@$(call apt_install,dosfstools)
	@$(MAKE) --no-print-directory ltp LTP_LIST=tests/ltp/fs-dbfs.txt LTP_RUN=fs-dbfs \
		LTP_CASE_TIMEOUT=$(LTP_FS_CASE_TIMEOUT) LTP_DBFS_SIZE=$(LTP_FS_DBFS_SIZE)
	@$(MAKE) --no-print-directory ltp LTP_LIST=tests/ltp/fs-fat.txt LTP_RUN=fs-fat LTP_TMPDIR=/fat/ltp-tmp \
		LTP_CASE_TIMEOUT=$(LTP_FS_CASE_TIMEOUT)
	fsck.fat -n $(BUILD)/ltp/fs-fat/fat.img

.PHONY: ltp-deps ltp-build ltp-root ltp test-ltp ltp-dbfs ltp-fs
