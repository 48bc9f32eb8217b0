# Set-up, build, the images, the person's disks, `make run`, and the developer's tools.

##@ Set-up and build
# FUSE over io_uring (Linux 6.14+): a dbfs-fuse mount serves requests from per-CPU queues on
# the caller's core if the fuse module's enable_uring parameter is on, else through /dev/fuse
# (tools/dbfs-fuse/src/uring/; `-o nouring` always uses /dev/fuse). Turned on here when the
# parameter exists and we may write it (root); FUSE_URING=0 leaves it as it is.
FUSE_URING ?= 1
URING_PARAM := /sys/module/fuse/parameters/enable_uring

## deps: install what is missing: apt packages, the riscv64 rustup target (idempotent)
deps:
	@$(call apt_install,$(APT_PACKAGES))
	@rustup target list --installed | grep -qx $(TARGET) || rustup target add $(TARGET)
	@if [ "$(FUSE_URING)" = 1 ] && [ -w $(URING_PARAM) ] && [ "$$(cat $(URING_PARAM))" != Y ]; then \
		echo Y > $(URING_PARAM) && echo "make: FUSE over io_uring turned on ($(URING_PARAM))"; fi

# The kernel alone is built with whole-program LTO in one codegen unit, so the file systems'
# small functions inline into the system-call path (fewer calls and returns: each return is a
# translation-block lookup in QEMU). Only this cargo invocation sees the override.
## kernel: the kernel (PROFILE=release: fat LTO, one codegen unit)
kernel: deps
	CARGO_PROFILE_RELEASE_LTO=fat CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1 \
		$(CARGO) build $(CARGO_PROFILE_FLAG) -p kernel --target $(TARGET)

## user: the user programs (user-tests/src/bin, each installed as /bin/NAME)
user: deps
	$(CARGO) build $(CARGO_PROFILE_FLAG) -p user-tests --target $(TARGET)

## mkimage: the host image builder (tools/mkimage), and tools/hartdump for the test boots' timeouts
mkimage: deps
	$(CARGO) build --release -p mkimage -p hartdump

## build: kernel, user programs and mkimage
build: kernel user mkimage

##@ Images and disks
## root-image: build/root.img (the programs, busybox, sqlite3, fio, pjdfstest when its source is there)
root-image: build thirdparty | $(BUILD)
	$(MKIMAGE) fat32 $(BUILD)/root.img --size 64M --label DBFSROOT \
		--add-tree $(BUILD)/thirdparty/rootfs:/ \
		--add tools/thirdparty/pjdfstest-both.sh:/bin/pjdfstest-both \
		--add tools/thirdparty/pjdfstest-fat32-expect.txt:/etc/pjdfstest-fat32.expect \
		--add tools/thirdparty/sqlite-bench.sh:/bin/sqlite-bench \
		--add tools/thirdparty/fio-bench.sh:/bin/fio-bench \
		--add tools/fio/fio-jobs.sh:/bin/fio-jobs \
		--add tests/guest/tartest.sh:/bin/tartest \
		--add-tree bench/fio:/etc/fio \
		--add-tree tools/rootfs:/ \
		$(foreach b,$(USER_BINS),--add $(TGT_DIR)/$(b):/bin/$(b))

## images: root-image, then fresh benchmark and test disks (bench-disks)
images: root-image
	$(MAKE) --no-print-directory bench-disks

# Fresh, empty benchmark disks, so every run starts from the same state; without holes in the
# host's files (`--allocate`), so that the guest's writes cost what a real disk's do.
## bench-disks: fresh build/fat.img, raw.img, dbfs.img for benchmarks and tests
bench-disks: | $(BUILD)
	$(MKIMAGE) fat32 $(BUILD)/fat.img --size 300M --label BENCHFAT --allocate
	$(MKIMAGE) blank $(BUILD)/raw.img --size 64M --allocate
	$(MKIMAGE) blank $(BUILD)/dbfs.img --size 256M --allocate

# The person's disks in DISK_DIR, each made once when missing (through a temporary name, so an
# interrupted make leaves no half-made disk): FAT32 300 MiB, raw 64 MiB, dbfs 256 MiB blank
# (the kernel formats a blank dbfs disk when it mounts it). Never touched by any other target.
## user-disks: your disks in DISK_DIR (build/disk), made only when missing
user-disks: mkimage
	@mkdir -p $(DISK_DIR)
	@test -f $(DISK_DIR)/fat.img || { $(MKIMAGE) fat32 $(DISK_DIR)/fat.img.new --size 300M --label DBFSFAT && \
		mv $(DISK_DIR)/fat.img.new $(DISK_DIR)/fat.img && echo "make: new FAT32 disk $(DISK_DIR)/fat.img (/fat)"; }
	@test -f $(DISK_DIR)/raw.img || { $(MKIMAGE) blank $(DISK_DIR)/raw.img.new --size 64M && \
		mv $(DISK_DIR)/raw.img.new $(DISK_DIR)/raw.img && echo "make: new raw disk $(DISK_DIR)/raw.img (/dev/vdc)"; }
	@test -f $(DISK_DIR)/dbfs.img || { $(MKIMAGE) blank $(DISK_DIR)/dbfs.img.new --size 256M && \
		mv $(DISK_DIR)/dbfs.img.new $(DISK_DIR)/dbfs.img && echo "make: new blank dbfs disk $(DISK_DIR)/dbfs.img (/dbfs)"; }

## reset-disks: blank your disks in DISK_DIR: everything you wrote on /root, /fat, /dbfs, /dev/vdc and / is gone
reset-disks:
	rm -f $(DISK_DIR)/fat.img $(DISK_DIR)/raw.img $(DISK_DIR)/dbfs.img $(DISK_DIR)/home.img $(DISK_DIR)/root.img
	$(MAKE) --no-print-directory person-disks

##@ Run
# What `make run` does: one benchmark (BENCH=), a program of your own (INIT=/bin/NAME ARGS=)
# on the fresh benchmark disks, a command (CMD=) or the interactive shell on your disks.
ifneq ($(BENCH),)
RUN_MODE := bench
else ifneq ($(value CMD),)
RUN_MODE := cmd
else ifneq ($(origin INIT),file)
RUN_MODE := init
else
RUN_MODE := shell
endif
RUN_STATUS := $(BUILD)/run-cmd.status
# A status file is the result of this run's command only: a build that fails must leave none.
ifeq ($(RUN_MODE)$(filter run,$(MAKECMDGOALS)),cmdrun)
$(shell rm -f $(RUN_STATUS))
endif
# The command in single quotes for the kernel's command line (split as sh does), every '
# written as '\''; a marker line first, so the host knows where the boot messages end.
RUN_MARK := dbfs-os-make-run-cmd-output-begins
# The console's lines without their \r; before the marker: to stderr (OpenSBI's banner and
# the kernel's boot messages); then stdout, until the kernel's "init exited with status N",
# which ends the command's output (that line and the rest go to stderr) and gives the status.
RUN_FILTER = awk -v mark=$(RUN_MARK) -v status_file=$(RUN_STATUS) ' \
	{ sub(/\r$$/, "") } \
	phase == 0 { if ($$0 == mark) phase = 1; else print > "/dev/stderr"; next } \
	phase == 1 && match($$0, /\[kernel\] init exited with status [0-9]+$$/) { \
		if (RSTART > 1) { print substr($$0, 1, RSTART - 1); fflush() } \
		n = split($$0, w, " "); print w[n] > status_file; close(status_file); \
		print "make run: the command exited with status " w[n] > "/dev/stderr"; phase = 2; next } \
	phase == 1 { print; fflush(); next } \
	{ print > "/dev/stderr" }'

# make run boots two harts (a shell's programs run side by side, and so do reads of dbfs files),
# BENCH= one (the recorded tables are one hart's); SMP= on the command line picks.
run: SMP = $(if $(filter bench,$(RUN_MODE)),1,2)
run: QEMU_RAM = $(if $(filter bench,$(RUN_MODE)),$(BENCH_RAM))
## run: boot QEMU: a shell, CMD='...', BENCH=NAME or INIT=/bin/NAME (see the header)
# CMD runs build their prerequisites in a sub-make whose output goes to stderr, so that stdout
# carries nothing but the command's output.
run: $(if $(filter bench init,$(RUN_MODE)),images,$(if $(filter shell,$(RUN_MODE)),kernel person-disks))
ifeq ($(RUN_MODE),bench)
	timeout --foreground -k 10 $(TIMEOUT) $(QEMU_BASE) \
		-append "$(KERNEL_PARAMS) -- bench=$(BENCH) fs=$(FS) reps=$(REPS) warmup=$(WARMUP) disk=$(DISK) $(ARGS)" \
		| tee $(BUILD)/run-$(BENCH).log
else ifeq ($(RUN_MODE),cmd)
	@rm -f $(RUN_STATUS)
	@$(MAKE) --no-print-directory kernel person-disks >&2
	@cmd='$(subst ','\'',$(value CMD))'; \
	quoted=$${cmd//\'/\'\\\'\'}; \
	timeout --foreground -k 10 $(TIMEOUT) $(QEMU_PERSON) \
		-append "$(DEBIAN_PARAMS) -- -c 'echo $(RUN_MARK)"$$'\n'"$$quoted'" \
		| tee $(BUILD)/run-cmd.log | $(RUN_FILTER) || true
	@test -f $(RUN_STATUS) || { echo "make run: the command did not finish (timeout after" \
		"$(TIMEOUT) s or a kernel panic: see $(BUILD)/run-cmd.log)" >&2; exit 1; }
	@exit $$(( $$(cat $(RUN_STATUS)) != 0 ))
else ifeq ($(RUN_MODE),init)
	timeout --foreground -k 10 $(TIMEOUT) $(QEMU_BASE) \
		-append "$(KERNEL_PARAMS) -- $(ARGS)" | tee $(BUILD)/run-init.log
else
	@echo "dbfs-os: Debian's bash on a dbfs root; 'exit' powers off, Ctrl-A X quits QEMU;" \
		"your disks: $(DISK_DIR) (make reset-disks blanks them)"
	$(QEMU_PERSON) -append "$(DEBIAN_PARAMS)"
endif

## gdb: QEMU waits for gdb on :1234 (gdb-multiarch KERNEL -ex 'target remote :1234')
gdb: images
	$(QEMU_BASE) -append "$(KERNEL_PARAMS) -- bench=$(or $(BENCH),seqwrite) fs=$(FS)" -s -S

##@ Code
## fmt: cargo fmt --all
fmt:
	$(CARGO) fmt --all

## clippy: clippy on the host crates and on kernel and user programs, warnings are errors
clippy: deps
	$(CARGO) clippy --workspace --exclude kernel --exclude user-tests --all-targets -- -D warnings
	$(CARGO) clippy -p kernel -p user-tests --target $(TARGET) -- -D warnings

# Every public item of the library crates has a doc comment (they also `#![warn(missing_docs)]`,
# so a build shows a missing one); here a missing doc or a broken link fails. Not in `make test`.
DOC_CRATES := abi vfs kvdb dbfs fat32 xrand virtio-blk-req
## doc: rustdoc of the library crates into target/doc; fails on a missing doc or a broken link
doc:
	RUSTDOCFLAGS="-D warnings -D missing-docs" $(CARGO) doc --no-deps \
		$(addprefix -p ,$(DOC_CRATES)) --features vfs/conformance,kvdb/std
	@echo "documentation: $(CARGO_TARGET_DIR)/doc/<crate>/index.html"

## clean: cargo clean and build/, except your disks (DISK_DIR; make reset-disks blanks those)
clean:
	$(CARGO) clean
	@if [ -d $(BUILD) ]; then find $(BUILD) -mindepth 1 -maxdepth 1 \
		! -path '$(patsubst ./%,%,$(DISK_DIR))' ! -path '$(DISK_DIR)' -exec rm -rf {} +; fi

.PHONY: deps kernel user mkimage build root-image images bench-disks user-disks reset-disks run gdb \
	fmt clippy doc clean
