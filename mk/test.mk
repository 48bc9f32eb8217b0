# `make test` and each of its parts, and the longer conformance and crash runs. Every QEMU boot
# has a hard timeout; every test boots on fresh disks of its own (never DISK_DIR's).

# test-exhaust: the cases to run (all when empty), e.g. EXHAUST_CASES='map_hog fork_bomb'.
EXHAUST_CASES ?=
# make crash-test: QEMU kills (and dbfs-fuse kills); CRASH_SEED replays a run's operations and
# kill delays (default: random, printed).
CRASH_POINTS ?= 200
CRASH_SEED ?=
# The seed of the tree `make test-cross` (and pjdfstest-guest-image) generates.
SEED    ?= 1
# make pjdfstest: its directories (default: all) and systems; make test-pjdfstest: its directories.
PJD_DIRS ?=
PJD_SYSTEMS ?= dbfs dbfs-nowb dbfs-aged dbfs-guest fuse2fs tmpfs
PJD_TEST_DIRS ?= chmod chown ftruncate link mkdir open rename rmdir symlink truncate unlink utimensat
# pjdfstest directories `make pjdfstest-guest` runs (all: the whole suite) and on which file
# systems (GUEST_PJD_FS: both, dbfs or fat), and the subsets `make test` runs on dbfs (about
# 3 minutes under TCG; rename alone takes 5) and on FAT with its expectation file (about 4.5
# minutes: rename there is 1, its sticky-bit files being skipped).
GUEST_PJD_DIRS ?= all
GUEST_PJD_FS ?= both
GUEST_PJD_TEST_DIRS ?= chmod mkdir rmdir symlink unlink utimensat
GUEST_PJD_FAT_TEST_DIRS ?= open mkdir rmdir truncate unlink rename utimensat
GUEST_PJD_TIMEOUT ?= 3000

##@ Tests
# `make test` runs TEST_TARGETS in order; add a test by adding its target here. Those that need
# a third-party suite's source are also in TESTS_NEED_<SUITE>: without the source they are
# skipped, named in a banner at the start and at the end (REQUIRE_SUITES=1: an error instead).
TEST_TARGETS := test-help check-layers check-docs test-host test-guest test-guest-smp4 test-persist test-run-cmd \
	test-crash test-crash-smp4 test-cross test-fill test-pjdfstest test-pjdfstest-guest test-shell test-exhaust test-apps test-debian test-smp-stress test-writeback-reads \
	test-ltp test-trinity test-stress
TESTS_NEED_PJDFSTEST := test-pjdfstest test-pjdfstest-guest
TESTS_NEED_LTP := test-ltp test-stress
# The targets `make TARGET` stops at once for when the source is missing.
PJDFSTEST_TARGETS := pjdfstest test-pjdfstest pjdfstest-guest test-pjdfstest-guest pjdfstest-riscv \
	thirdparty-check $(TESTS_NEED_PJDFSTEST)
LTP_TARGETS := ltp-build ltp-root ltp test-ltp stress-root fsx fsstress stress $(TESTS_NEED_LTP)
TEST_SKIPPED := $(if $(have_pjdfstest),,$(TESTS_NEED_PJDFSTEST)) $(if $(have_ltp),,$(TESTS_NEED_LTP))
TEST_SKIPPED := $(strip $(TEST_SKIPPED))
TEST_SKIP_BANNER = \
	echo "********************************************************************************"; \
	echo "*** make test SKIPPED: $(TEST_SKIPPED)"; \
	$(if $(have_pjdfstest),,echo "***   no pjdfstest source at $(PJDFSTEST_SRC) (PJDFSTEST_SRC=DIR): $(PJDFSTEST_GET)";) \
	$(if $(or $(have_ltp),$(if $(TESTS_NEED_LTP),,none)),,echo "***   no LTP source at $(LTP_SRC) (LTP_SRC=DIR): $(LTP_GET)";) \
	echo "********************************************************************************"

# A goal that needs a missing source stops before anything is built.
missing_pjdfstest_goals := $(if $(have_pjdfstest),,$(filter $(PJDFSTEST_TARGETS),$(MAKECMDGOALS)))
missing_ltp_goals := $(if $(have_ltp),,$(filter $(LTP_TARGETS),$(MAKECMDGOALS)))
ifneq ($(strip $(missing_pjdfstest_goals) $(missing_ltp_goals)),)
$(info make: $(strip $(missing_pjdfstest_goals) $(missing_ltp_goals)): needs a third-party source this checkout does not have:)
$(if $(missing_pjdfstest_goals),$(info make:   pjdfstest: none at $(PJDFSTEST_SRC); get it with: $(PJDFSTEST_GET); or set PJDFSTEST_SRC=DIR))
$(if $(missing_ltp_goals),$(info make:   LTP: none at $(LTP_SRC); get it with: $(LTP_GET); or set LTP_SRC=DIR))
$(error a third-party test suite's source is missing)
endif
ifneq ($(filter test,$(MAKECMDGOALS)),)
ifneq ($(TEST_SKIPPED),)
ifeq ($(REQUIRE_SUITES),1)
$(info make test: REQUIRE_SUITES=1 and these tests need a missing source: $(TEST_SKIPPED))
$(if $(have_pjdfstest),,$(info make:   pjdfstest: none at $(PJDFSTEST_SRC); get it with: $(PJDFSTEST_GET)))
$(if $(or $(have_ltp),$(if $(TESTS_NEED_LTP),,none)),,$(info make:   LTP: none at $(LTP_SRC); get it with: $(LTP_GET)))
$(error a third-party test suite's source is missing)
endif
$(shell { $(TEST_SKIP_BANNER); } >&2)
endif
endif

## test: every test below (TEST_TARGETS); skips, and names, those whose suite source is missing
test: $(filter-out $(TEST_SKIPPED),$(TEST_TARGETS))
	@$(if $(TEST_SKIPPED),{ $(TEST_SKIP_BANNER); } >&2,echo "make test: every test ran and passed")

# Structure (tools/layercheck): no file-level import cycle in dbfs and kvdb; the kernel's layers
# (kernel/layers.txt, lowest first) run one way and its files import each other in no circle; no
# Rust source file outside tests/ folders over 1000 lines. Every check runs; any finding fails.
LAYERCHECK := $(CARGO_TARGET_DIR)/release/layercheck
LINE_CHECK_DIRS := kernel fs drivers abi user-tests bench tools
## check-layers: no import circles (kernel, dbfs, kvdb), kernel layers one way, no file over 1000 lines
check-layers: deps
	$(CARGO) build --release -p layercheck
	@status=0; \
	$(LAYERCHECK) fs/dbfs/src fs/kvdb/src || status=1; \
	$(LAYERCHECK) --layers kernel/layers.txt kernel/src || status=1; \
	$(LAYERCHECK) --max-lines 1000 $(LINE_CHECK_DIRS) || status=1; \
	exit $$status

# Every path the docs name exists, and every name they place in a file is there.
## check-docs: every path README.md, bench/README.md and docs/*.md name exists (tests/doccheck.sh)
check-docs:
	tests/doccheck.sh

# `make help` lists every target, each listed target exists, every .PHONY target is listed.
## test-help: make help matches the makefiles (tests/make-help.sh)
test-help:
	tests/make-help.sh

# make run CMD= as a script uses it (tests/run-cmd.sh), on scratch disks (RUN_CMD_DISKS; your
# DISK_DIR is never touched): files on /dbfs and /fat survive to the next run; $?, $$, quotes
# and backslashes arrive intact; plain lines without \r; the exit status as documented.
RUN_CMD_DISKS ?= $(BUILD)/test-run-cmd-disks
## test-run-cmd: make run CMD=: persistence, byte-exact CMD, plain lines, exit status
test-run-cmd: kernel debian-root
	DISKS=$(RUN_CMD_DISKS) BUILD=$(BUILD) tests/run-cmd.sh

## test-host: cargo test of every host crate, and vfs's conformance suite
test-host: deps
	$(CARGO) test --release --workspace --exclude kernel --exclude user-tests
	$(CARGO) test --release -p vfs --features conformance

## test-guest: the in-guest test runner (/bin/testrunner), virtio-blk and memcpy self-tests
# Two harts unless SMP is given (test-smp runs it with 4).
test-guest: SMP = 2
test-guest: images
	$(GUEST_TIMEOUT) 600 $(QEMU_BASE) -append "$(KERNEL_PARAMS) blk_selftest=1 mem_selftest=1 -- test" \
		| tee $(BUILD)/test-guest.log
	@grep -Eq '^(all: )?[0-9]+ passed, 0 failed' $(BUILD)/test-guest.log || \
		{ echo "in-guest tests: no clean 'N passed, 0 failed' line"; exit 1; }
	@grep -q 'scatter-gather and window self-test: ok' $(BUILD)/test-guest.log || \
		{ echo "virtio-blk scatter-gather and disk window self-test did not pass"; exit 1; }
	@grep -q 'memcpy/memset/memcmp self-test: ok' $(BUILD)/test-guest.log || \
		{ echo "kernel memcpy/memset/memcmp self-test did not pass"; exit 1; }
	@! grep -a 'write-back of mapped file' $(BUILD)/test-guest.log || \
		{ echo "the kernel failed to write a mapped file's pages back"; exit 1; }

# make test runs the in-guest test runner and the crash test with 4 harts too (test-smp runs
# every SMP suite so; these two are the part of it in make test).
## test-guest-smp4: test-guest with SMP=4
test-guest-smp4:
	$(MAKE) test-guest SMP=4

## test-persist: data written in one boot is there in the next (dbfs and FAT)
test-persist: images
	$(GUEST_TIMEOUT) 300 $(QEMU_BASE) \
		-append "init=/bin/persist log=$(LOG) -- write /dbfs/persist" | tee $(BUILD)/persist-1.log
	$(GUEST_TIMEOUT) 300 $(QEMU_BASE) \
		-append "init=/bin/persist log=$(LOG) -- write /fat/persist" | tee -a $(BUILD)/persist-1.log
	$(GUEST_TIMEOUT) 300 $(QEMU_BASE) \
		-append "init=/bin/persist log=$(LOG) -- check /dbfs/persist" | tee $(BUILD)/persist-2.log
	$(GUEST_TIMEOUT) 300 $(QEMU_BASE) \
		-append "init=/bin/persist log=$(LOG) -- check /fat/persist" | tee -a $(BUILD)/persist-2.log
	@test "$$(grep -Ec '^[0-9]+ passed, 0 failed' $(BUILD)/persist-2.log)" = 2 || \
		{ echo "reboot test: data written before the reboot did not come back"; exit 1; }


# A full disk (user-tests/src/bin/fillfs.rs): small dbfs (16 MiB) and FAT (34 MiB) disks
# are filled until ENOSPC; committed files must survive, deleting must work and free space.
## test-fill: full disks: ENOSPC on small dbfs (16 MiB) and FAT (34 MiB) disks
test-fill: images
	$(MKIMAGE) fat32 $(BUILD)/fill-fat.img --size 34M --label FILLFAT
	$(MKIMAGE) blank $(BUILD)/fill-dbfs.img --size 16M
	$(GUEST_TIMEOUT) 300 $(QEMU_FILL) \
		-append "init=/bin/fillfs log=$(LOG) -- /dbfs /fat" | tee $(BUILD)/test-fill.log
	@grep -Eq '^[0-9]+ passed, 0 failed' $(BUILD)/test-fill.log || \
		{ echo "full-disk test: a check failed"; exit 1; }

# Guest and host agree (tests/crosscheck.sh): dbfs-fuse and the guest each write a generated
# tree the other verifies, and tests/crosscheck/workload.txt gives the same listing on both.
## test-cross: guest and host agree on dbfs (tests/crosscheck.sh, SEED=N)
test-cross: images
	$(CARGO) build --release -p dbfs-fuse
	QEMU='$(call QEMU_DBFS,@DBFS@)' KPARAMS='log=$(LOG) bcache=$(BCACHE)' \
		DBFS_FUSE=$(CARGO_TARGET_DIR)/release/dbfs-fuse WORK=$(BUILD)/cross SEED=$(SEED) \
		tests/crosscheck.sh


# Crash survival: SIGKILL QEMU while /bin/crashwriter writes to dbfs (write(2) and shared
# mappings made durable by msync/fsync), then fsck the image and
# check every committed file on the host and in the next boot (tests/crash.sh).
CRASH_ENV = BUILD=$(BUILD) KERNEL=$(KERNEL) DBFS_FUSE=$(CARGO_TARGET_DIR)/release/dbfs-fuse \
	HARTDUMP=$(HARTDUMP) \
	MEM=$(MEM) SMP=$(SMP) LOG=$(LOG) CRASH_SEED=$(CRASH_SEED) CRASH_WRITERS=$(CRASH_WRITERS)
# Writer processes at once (tests/crash.sh: each in its own directory, pinned to its own hart).
CRASH_WRITERS ?= 1

# The kills of one test-crash run (test-crash-smp4, in make test, makes 15 with 4 writers).
TEST_CRASH_POINTS ?= 30
## test-crash: 30 SIGKILLs of QEMU mid-write, then fsck and every committed file checked
test-crash: images
	$(CARGO) build --release -p dbfs-fuse
	$(CRASH_ENV) CRASH_POINTS=$(TEST_CRASH_POINTS) tests/crash.sh

## test-crash-smp4: 15 QEMU kills of test-crash with SMP=4 and 4 writer processes, each pinned to its own hart
test-crash-smp4:
	$(MAKE) test-crash SMP=4 CRASH_WRITERS=4 TEST_CRASH_POINTS=15

## crash-test: CRASH_POINTS QEMU kills, then CRASH_POINTS SIGKILLs of dbfs-fuse mid-write
crash-test: images
	$(CARGO) build --release -p dbfs-fuse
	$(CRASH_ENV) CRASH_POINTS=$(CRASH_POINTS) tests/crash.sh
	CRASH_SEED=$(CRASH_SEED) FUSE_CRASH_ROUNDS=$(CRASH_POINTS) $(CARGO) test --release -p dbfs-fuse --test crash -- --nocapture


# POSIX conformance with pjdfstest through FUSE (tests/pjdfstest-fuse.sh, docs/CONFORMANCE.md).
# The guest-written image: the guest formats a blank disk and writes the cross-check tree.
PJD_ENV = DBFS_FUSE=$(DBFS_FUSE) BUILD=$(BUILD) SUITE_SRC=$(abspath $(PJDFSTEST_SRC))

## pjdfstest-guest-image: a dbfs image the guest wrote (for make pjdfstest's dbfs-guest system)
pjdfstest-guest-image: images
	rm -f $(BUILD)/pjdfstest-guest.img
	truncate -s 256M $(BUILD)/pjdfstest-guest.img
	$(GUEST_TIMEOUT) 300 $(call QEMU_DBFS,$(BUILD)/pjdfstest-guest.img) \
		-append "init=/bin/crosscheck log=$(LOG) bcache=$(BCACHE) -- gen /dbfs/tree seed=$(SEED)" \
		</dev/null | tr -d '\r' > $(BUILD)/pjdfstest-guest.log
	@grep -q '^crosscheck gen: seed $(SEED) written' $(BUILD)/pjdfstest-guest.log || \
		{ echo "the guest did not write its tree (log $(BUILD)/pjdfstest-guest.log)"; exit 1; }

## pjdfstest: the whole pjdfstest suite on dbfs-fuse (fresh, nowb, aged, guest-written), fuse2fs, tmpfs
pjdfstest: deps pjdfstest-guest-image
	$(REQUIRE_PJDFSTEST)
	$(CARGO) build --release -p dbfs-fuse
	timeout -k 10 7200 env $(PJD_ENV) GUEST_IMAGE=$(BUILD)/pjdfstest-guest.img \
		SYSTEMS="$(PJD_SYSTEMS)" DIRS="$(PJD_DIRS)" tests/pjdfstest-fuse.sh | tee $(BUILD)/pjdfstest.log

## test-pjdfstest: pjdfstest (PJD_TEST_DIRS) on a fresh dbfs-fuse mount (root)
test-pjdfstest: deps
	$(REQUIRE_PJDFSTEST)
	$(CARGO) build --release -p dbfs-fuse
	timeout -k 10 900 env $(PJD_ENV) SYSTEMS=dbfs DIRS="$(PJD_TEST_DIRS)" tests/pjdfstest-fuse.sh \
		| tee $(BUILD)/test-pjdfstest.log


# pjdfstest inside the kernel (tools/thirdparty/pjdfstest-guest.sh as /bin/pjdfstest-run,
# tools/thirdparty/pjdfstest-both.sh as /bin/pjdfstest-both):
# a fresh dbfs disk and a fresh FAT disk, one boot, the suite on each under busybox sh.
# QEMU's exit status is 0 only when neither run had an unexpected result; afterwards the
# dbfs image must pass `dbfs-fuse fsck`. On FAT the runner reads
# tools/thirdparty/pjdfstest-fat32-expect.txt: the files vfat cannot run are skipped and the
# assertions it cannot pass are expected failures, each with its reason (no owners,
# permissions, links, symlinks, FIFOs or sockets on vfat; docs/CONFORMANCE.md); any other
# failure, or a listed one that passes, fails the target.
# The file systems `make pjdfstest-guest` runs: GUEST_PJD_FS, or a -d (dbfs) or -f (FAT) at the
# head of GUEST_PJD_DIRS.
PJD_FS = $(if $(filter -d,$(GUEST_PJD_DIRS)),dbfs,$(if $(filter -f,$(GUEST_PJD_DIRS)),fat,$(GUEST_PJD_FS)))
PJD_FS_FLAG = $(if $(filter dbfs,$(PJD_FS)),-d,$(if $(filter fat,$(PJD_FS)),-f,$(if $(filter both,$(PJD_FS)),,$(error GUEST_PJD_FS must be both, dbfs or fat))))
PJD_GUEST_RUN = $(MKIMAGE) blank $(BUILD)/pjd-dbfs.img --size 512M && \
	$(MKIMAGE) fat32 $(BUILD)/pjd-fat.img --size 300M --label PJDFAT && \
	$(GUEST_TIMEOUT) $(GUEST_PJD_TIMEOUT) \
		$(subst file=$(BUILD)/fat.img$(comma),file=$(BUILD)/pjd-fat.img$(comma),$(call QEMU_DBFS,$(BUILD)/pjd-dbfs.img)) \
		-append "$(SHELL_PARAMS) -- /bin/pjdfstest-both $(filter-out all,$(1))" | tee $(2); \
	$(CARGO_TARGET_DIR)/release/dbfs-fuse fsck $(BUILD)/pjd-dbfs.img
# $(call PJD_CHECK,LOG,FS): LOG has FS's summary line with no unexpected result.
PJD_CHECK = grep -Eq '^PJDFSTEST fs=$(2) passed=[0-9]+ failed=0 xfail=[0-9]+ xpass=0 ' $(1) || \
	{ echo "pjdfstest in the guest: unexpected results on $(2) (see 'unexpected results' in $(1))"; exit 1; }

## pjdfstest-guest: pjdfstest inside our kernel on a fresh /dbfs and /fat (GUEST_PJD_DIRS, GUEST_PJD_FS)
pjdfstest-guest: images
	$(REQUIRE_PJDFSTEST)
	$(CARGO) build --release -p dbfs-fuse
	$(call PJD_GUEST_RUN,$(PJD_FS_FLAG) $(filter-out -d -f,$(GUEST_PJD_DIRS)),$(BUILD)/pjdfstest-guest.log)
	@$(if $(filter dbfs,$(PJD_FS)),,$(call PJD_CHECK,$(BUILD)/pjdfstest-guest.log,fat32-guest))
	@$(if $(filter fat,$(PJD_FS)),,$(call PJD_CHECK,$(BUILD)/pjdfstest-guest.log,dbfs-guest))

## test-pjdfstest-guest: pjdfstest in the guest: GUEST_PJD_TEST_DIRS on dbfs, GUEST_PJD_FAT_TEST_DIRS on FAT
test-pjdfstest-guest: images
	$(REQUIRE_PJDFSTEST)
	$(CARGO) build --release -p dbfs-fuse
	$(call PJD_GUEST_RUN,-d $(GUEST_PJD_TEST_DIRS),$(BUILD)/test-pjdfstest-guest.log)
	@$(call PJD_CHECK,$(BUILD)/test-pjdfstest-guest.log,dbfs-guest)
	$(call PJD_GUEST_RUN,-f $(GUEST_PJD_FAT_TEST_DIRS),$(BUILD)/test-pjdfstest-guest-fat.log)
	@$(call PJD_CHECK,$(BUILD)/test-pjdfstest-guest-fat.log,fat32-guest)


# The console shell as a person uses it (tests/shell.sh): QEMU in a tmux pane, commands typed
# with send-keys (a pipe, a redirection, ^C and ^Z of a running command, fg, line editing),
# the screen read back with capture-pane, and `exit 3` must end QEMU with status 3.
# On a fresh copy of the Debian root (what `make run` boots) and fresh disks.
## test-shell: Debian's bash typed at in tmux: prompt, pipes, ^C, ^Z and fg, line editing, ps, python3, vi, less, exit status
# Two harts, as `make run` boots.
test-shell: SMP = 2
test-shell: debian-root kernel images
	@command -v tmux >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q tmux </dev/null
	cp --sparse=always $(DEBIAN_ROOT) $(BUILD)/debian-shell.img
	QEMU='$(call debian_qemu,$(BUILD)/debian-shell.img,$(QEMU_BASE))' KPARAMS='$(DEBIAN_PARAMS)' \
		BUILD=$(BUILD) tests/shell.sh

# A user program cannot crash the kernel (user-tests/src/bin/exhaust.rs): a memory hog (an
# out-of-memory SIGKILL), a fork bomb (EAGAIN/ENOMEM), a descriptor hog (EMFILE), a pipe
# without reader (SIGPIPE/EPIPE), huge argv (E2BIG), long paths; a file fsync'd on /dbfs
# before them must read back intact after each, and the image must pass fsck afterwards.
## test-exhaust: memory, fork, descriptor, pipe, map, argv, path hogs: none may crash the kernel
test-exhaust: images
	$(CARGO) build --release -p dbfs-fuse
	$(GUEST_TIMEOUT) 600 $(QEMU_BASE) -append "init=/bin/exhaust log=$(LOG) -- /dbfs $(EXHAUST_CASES)" \
		| tee $(BUILD)/test-exhaust.log
	@grep -Eq '^[0-9]+ passed, 0 failed' $(BUILD)/test-exhaust.log || \
		{ echo "exhaustion test: a case failed"; exit 1; }
	$(CARGO_TARGET_DIR)/release/dbfs-fuse fsck $(BUILD)/dbfs.img

# Several harts (issue 44): the in-guest suite with SMP=4, then /bin/smpstress (futex and pipe
# ping-pong, a fork/exit storm, munmap under writers on other harts, a signal to a thread
# spinning on another hart, 4 writers and 4 readers on one /dbfs directory) and /bin/threadtest
# in one SMP=4 boot, then the crash test and pjdfstest in the guest with SMP=4.
# Then the short runs of the stress tools (fsx, fsstress, stress-ng; trinity) with SMP=4, when
# LTP's source is there for fsx and fsstress.
## test-smp: test-guest, the SMP stress tests (smpstress, threadtest), test-crash (4 writer processes), pjdfstest in the guest, test-stress and test-trinity with SMP=4
test-smp:
	$(MAKE) test-guest-smp4
	$(MAKE) test-smp-stress SMP=4 SMP_ROUNDS=1000000
	$(MAKE) test-crash SMP=4 CRASH_WRITERS=4
	$(if $(have_pjdfstest),$(MAKE) test-pjdfstest-guest SMP=4,@echo "test-smp: test-pjdfstest-guest skipped: no pjdfstest source at $(PJDFSTEST_SRC)")
	$(if $(have_ltp),$(MAKE) test-stress SMP=4,@echo "test-smp: test-stress skipped: no LTP source at $(LTP_SRC)")
	$(MAKE) test-trinity SMP=4

# Every suite of make test that boots the guest, run once with each hart count of SMP_MATRIX
# (make test itself boots 1 for most of them, 2 for test-guest and test-shell, 4 for a few):
# one log per suite and count in $(BUILD)/matrix, a line per run, the failures named at the end.
# About an hour for the three counts with LTP and pjdfstest present.
SMP_MATRIX ?= 1 2 4
GUEST_TEST_TARGETS := test-guest test-persist test-run-cmd test-crash test-cross test-fill test-pjdfstest-guest \
	test-shell test-exhaust test-apps test-debian test-smp-stress test-writeback-reads test-ltp test-trinity test-stress
## test-smp-matrix: every guest suite of make test once with each hart count of SMP_MATRIX (1 2 4), a summary line per run
test-smp-matrix:
	@mkdir -p $(BUILD)/matrix; fails=""; \
	for n in $(SMP_MATRIX); do for t in $(filter-out $(TEST_SKIPPED),$(GUEST_TEST_TARGETS)); do \
		log=$(BUILD)/matrix/$$t-smp$$n.log; start=$$(date +%s); \
		if $(MAKE) $$t SMP=$$n >$$log 2>&1; then r=passed; else r=FAILED; fails="$$fails $$t/SMP=$$n"; fi; \
		echo "test-smp-matrix: SMP=$$n $$t $$r in $$(( $$(date +%s) - start )) s ($$log)"; \
	done; done; \
	$(if $(TEST_SKIPPED),echo "test-smp-matrix: skipped (no source): $(TEST_SKIPPED)";) \
	if [ -n "$$fails" ]; then echo "test-smp-matrix: FAILED:$$fails"; exit 1; fi; \
	echo "test-smp-matrix: every suite passed with SMP = $(SMP_MATRIX)"

# SMP=4 unless SMP is given on the command line: make test runs it so. SMP_ROUNDS: the futex
# ping-pong round trips (a tenth of them through a pipe); test-smp runs 10^6.
SMP_ROUNDS ?= 100000
## test-smp-stress: /bin/smpstress and /bin/threadtest in one SMP=4 boot (the part of test-smp in make test)
test-smp-stress: SMP = 4
test-smp-stress: images
	$(GUEST_TIMEOUT) 900 $(QEMU_BASE) -append "$(SHELL_PARAMS) -- -c '/bin/smpstress $(SMP_ROUNDS) /dbfs; \
		/bin/threadtest'" | tee $(BUILD)/test-smp.log
	@grep -Eq '^smpstress: [0-9]+ passed, 0 failed' $(BUILD)/test-smp.log || \
		{ echo "smpstress: a check failed"; exit 1; }
	@grep -Eq '^threadtest: [0-9]+ passed, 0 failed' $(BUILD)/test-smp.log || \
		{ echo "threadtest: a check failed"; exit 1; }

# Reads of large writes not yet committed while the write-back's timer commits them, with two
# harts: three times, a 64 MiB /dbfs file written in 1 MiB pieces without fsync (dbfs places
# them: on the disk, in no tree yet), read back to back by six 1-second fio runs (the timer,
# every second under the big kernel lock, takes dbfs's state lock, which each such read holds
# across its disk wait), then checked with fio's verify. A kernel in which the two can wait for
# each other in a circle hangs here (the boot's timeout fails the test): the kernel before the
# fix in kvdb::sync::Mutex hung in round 2; the same reads with fio's output to /dev/null and
# one 6-second run did not hang it in two boots.
## test-writeback-reads: 1 MiB reads of uncommitted writes while the write-back commits them, SMP=2
test-writeback-reads: SMP = 2
test-writeback-reads: images
	$(GUEST_TIMEOUT) 300 $(QEMU_BASE) -append "$(SHELL_PARAMS) -- -c 'cd /dbfs && for i in 1 2 3; do \
		fio --name=w --rw=write --bs=1m --size=64m --filename=wbr --verify=crc32c --do_verify=0 \
			| grep -q WRITE: && \
		for j in 1 2 3 4 5 6; do fio --name=r --rw=read --bs=1m --size=64m --filename=wbr \
			--time_based --runtime=1 | grep -q READ: || exit 1; done && \
		fio --name=w --rw=write --bs=1m --size=64m --filename=wbr --verify=crc32c --verify_only \
			--output-format=terse >/dev/null || exit 1; echo writeback-reads: round \$$i; done; \
		echo writeback-reads: passed'" | tee $(BUILD)/test-writeback-reads.log
	@grep -q '^writeback-reads: passed' $(BUILD)/test-writeback-reads.log || \
		{ echo "test-writeback-reads: a read or fio's verify failed, or the boot hung"; exit 1; }

# The lock checker (kernel feature `lockcheck`, arch/lockcheck.rs): a kernel built with it
# (in its own target directory, built as `make kernel` builds: fat LTO, one codegen unit), first booted three times with a planted
# misuse (lockcheck_plant=double, order, switch: each boot must panic with the checker's
# message), then running the SMP=4 stress boot, which must pass with no checker panic.
LOCKCHECK_DIR := $(CARGO_TARGET_DIR)/lockcheck
LOCKCHECK_KERNEL := $(LOCKCHECK_DIR)/$(TARGET)/$(PROFILE)/kernel
## kernel-lockcheck: the kernel with the lock checker (feature lockcheck), in target/lockcheck
kernel-lockcheck: deps
	CARGO_TARGET_DIR=$(LOCKCHECK_DIR) CARGO_PROFILE_RELEASE_LTO=fat CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1 \
		$(CARGO) build $(CARGO_PROFILE_FLAG) -p kernel \
		--target $(TARGET) --features lockcheck
## test-lockcheck: the lock checker catches four planted misuses, then test-smp-stress (SMP=4) and test-guest (SMP=2) run clean with it
test-lockcheck: images kernel-lockcheck
	@for k in double:'it already holds' order:'of rank 10 while holding' switch:'switches away from a thread while holding' leaf:'of rank 55 while holding .* of rank 80'; do \
		want=$${k#*:}; k=$${k%%:*}; \
		$(GUEST_TIMEOUT) 300 $(subst $(KERNEL),$(LOCKCHECK_KERNEL),$(QEMU_BASE)) -snapshot \
			-append "$(SHELL_PARAMS) lockcheck_plant=$$k -- -c 'i=0; while [ \$$i -lt 20000 ]; do i=\$$((i+1)); done'" \
			</dev/null > $(BUILD)/lockcheck-$$k.log 2>&1 || true; \
		if grep -aq '\[kernel\] PANIC' $(BUILD)/lockcheck-$$k.log && grep -a '^lockcheck: hart' $(BUILD)/lockcheck-$$k.log | grep -q "$$want"; then \
			echo "lockcheck: planted $$k bug caught: $$(grep -a -o 'lockcheck: hart.*' $(BUILD)/lockcheck-$$k.log | head -1)"; \
		else echo "lockcheck: the planted $$k bug was NOT caught ($(BUILD)/lockcheck-$$k.log)"; exit 1; fi; \
	done
	$(MAKE) test-smp-stress KERNEL=$(LOCKCHECK_KERNEL)
	@! grep -aq 'lockcheck: ' $(BUILD)/test-smp.log || { echo "lockcheck: the checker fired in the stress boot"; exit 1; }
	$(MAKE) test-guest KERNEL=$(LOCKCHECK_KERNEL) SMP=2
	@! grep -aq 'lockcheck: ' $(BUILD)/test-guest.log || { echo "lockcheck: the checker fired in the guest tests"; exit 1; }
	@echo "test-lockcheck passed: 4 planted bugs caught, test-smp-stress (SMP=4) and test-guest (SMP=2) clean under the checker"

# BOOT_LOOP_BOOTS short boots with SMP harts (2 unless given), each checking its dbfs disk at
# mount and powering off: one OpenSBI banner, one kernel first line, every hart in /proc/bkl
# (tests/boot-loop.sh; a hart entering the boot path twice, or a start-up hang, fails it).
BOOT_LOOP_BOOTS ?= 30
## test-boot-loop: BOOT_LOOP_BOOTS (30) short SMP=2 boots: each starts every hart once and powers off
test-boot-loop: SMP = 2
test-boot-loop: images
	KERNEL=$(KERNEL) BUILD=$(BUILD) MEM=$(MEM) SMP=$(SMP) BOOTS=$(BOOT_LOOP_BOOTS) tests/boot-loop.sh

# What sqlite and fio need beyond plain file I/O (user-tests/src/bin/apptest.rs): POSIX
# record locks between processes on /dbfs and /fat, shared anonymous memory across fork,
# System V shared memory, futexes between processes, nice values; then the real sqlite3 shell
# creates, fills and queries a database on each, and fio writes and randomly reads /dbfs;
# busybox tar with gzip and bzip2 children between /dbfs and /fat (tests/guest/tartest.sh).
## test-apps: record locks, shared memory, futexes, sqlite3, fio, pthreads, vDSO clock, tar, workloads
test-apps: images
	$(GUEST_TIMEOUT) 300 $(QEMU_BASE) -append "$(SHELL_PARAMS) -- -c '/bin/apptest /dbfs /fat && \
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
		/bin/tartest /dbfs /fat; \
		/bin/workloads dbfs:/dbfs fat32:/fat reps=1 quick | grep -E \"^(ERROR|workloads:)\"'" | tee $(BUILD)/test-apps.log
	@grep -Eq '^[0-9]+ passed, 0 failed' $(BUILD)/test-apps.log || \
		{ echo "apptest: a check failed"; exit 1; }
	@grep -Eq '^threadtest: [0-9]+ passed, 0 failed' $(BUILD)/test-apps.log || \
		{ echo "threadtest: a check failed"; exit 1; }
	@grep -Eq '^timetest: [0-9]+ passed, 0 failed' $(BUILD)/test-apps.log || \
		{ echo "timetest: a check failed"; exit 1; }
	@grep -Eq '^tartest: [1-9][0-9]* passed, 0 failed' $(BUILD)/test-apps.log || \
		{ echo "tar czf/xzf/cjf/xjf between /dbfs and /fat failed (tests/guest/tartest.sh)"; exit 1; }
	@grep -q '^FIO threads ok' $(BUILD)/test-apps.log || \
		{ echo "fio --thread --numjobs=4 with verify failed"; exit 1; }
	@test "$$(grep -c '^SQLITE /[a-z]* 3' $(BUILD)/test-apps.log)" = 2 || \
		{ echo "sqlite3 in the guest did not answer 3 on both file systems"; exit 1; }
	@grep -q '^FIO ok' $(BUILD)/test-apps.log || { echo "fio in the guest failed"; exit 1; }
	@test "$$(grep -c '^FIO mmap /[a-z]* ok' $(BUILD)/test-apps.log)" = 2 || \
		{ echo "fio --ioengine=mmap with verify failed on dbfs or FAT32"; exit 1; }
	@grep -Eq '^workloads: [1-9][0-9]* results, 0 errors' $(BUILD)/test-apps.log || \
		{ echo "bench/workloads at its quick size failed in the guest"; exit 1; }


.PHONY: test test-help check-layers check-docs test-run-cmd test-host test-guest test-guest-smp4 test-crash-smp4 test-smp test-smp-matrix test-smp-stress test-writeback-reads test-persist test-fill test-cross \
	pjdfstest-guest-image pjdfstest test-pjdfstest test-crash crash-test pjdfstest-guest \
	test-pjdfstest-guest test-shell test-exhaust test-apps test-lockcheck kernel-lockcheck test-boot-loop
