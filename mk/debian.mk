# The Debian root (issue #42): Debian trixie's own riscv64 programs, dynamically linked, on a
# dbfs root disk. build/debian/tree.tar comes from tools/debian/build-tree.sh (mmdebstrap,
# tools/debian/packages.txt; cached), is unpacked as root into build/debian/root (owners,
# modes, device nodes kept) and written into build/debian-root.img with `dbfs-fuse import`.
# The image is rebuilt only when the tree or dbfs-fuse changed. `make run` is unchanged: the
# Debian root boots with `make run-debian` (kernel parameter rootfs=dbfs, init=/bin/bash).

DEBIAN_TREE := $(BUILD)/debian/tree.tar
DEBIAN_ROOT := $(BUILD)/debian-root.img
# The image's size (sparse: only what the tree fills is written).
DEBIAN_SIZE ?= 2G
DEBIAN_APT  := mmdebstrap qemu-user-static
# QEMU with IMAGE as vda and the disks of $(2) (a QEMU command line): $(call debian_qemu,IMAGE,QEMU).
debian_qemu = $(subst file=$(BUILD)/root.img$(comma),file=$(1)$(comma),$(2))
DEBIAN_PARAMS = rootfs=dbfs init=/bin/bash log=$(LOG) bcache=$(BCACHE)

##@ The Debian root
## debian-deps: install what building the Debian tree needs (mmdebstrap, qemu-user-static)
debian-deps:
	@$(call apt_install,$(DEBIAN_APT))

## debian-tree: build/debian/tree.tar, Debian trixie riscv64 (tools/debian/build-tree.sh; cached)
debian-tree: debian-deps | $(BUILD)
	BUILD=$(BUILD) tools/debian/build-tree.sh

# $(call debian_image,TREE): the recipe of a dbfs image ($@) holding the Debian tree TREE, unpacked
# as root in $@.root (owners, modes and device nodes kept) with the mount points the kernel uses.
define debian_image
	rm -rf $@.root && mkdir -p $@.root
	tar -xpf $(1) --numeric-owner -C $@.root
	mkdir -p $@.root/fat $@.root/dbfs $@.root/proc $@.root/dev
	rm -f $@.tmp
	$(DBFS_FUSE) mkfs $@.tmp --size $(DEBIAN_SIZE)
	$(DBFS_FUSE) import $@.tmp $@.root
	mv $@.tmp $@
	rm -rf $@.root
endef

$(DEBIAN_ROOT): $(DEBIAN_TREE) $(DBFS_FUSE)
	$(call debian_image,$(DEBIAN_TREE))

## debian-root: build/debian-root.img, the Debian tree on dbfs (DEBIAN_SIZE, default 2G sparse)
debian-root: debian-tree deps
	$(CARGO) build --release -p dbfs-fuse
	@$(MAKE) --no-print-directory $(DEBIAN_ROOT)

# Your disks as vdb-vdd, the Debian root as vda. CMD='line' runs the line with Debian's bash.
## run-debian: boot the Debian root into Debian's bash (CMD='line' runs one line, TIMEOUT)
run-debian: debian-root kernel user-disks
	@cmd='$(subst ','\'',$(value CMD))'; quoted=$${cmd//\'/\'\\\'\'}; \
	timeout --foreground -k 10 $(TIMEOUT) $(call debian_qemu,$(DEBIAN_ROOT),$(QEMU_USER)) \
		-append "$(DEBIAN_PARAMS)$(if $(CMD), -- -c '$$quoted')"

# A copy of the Debian root with tests/debian/guest.sh as /root/guest.sh, fresh disks, bash
# running the script; the script prints `debian: N passed, N failed`.
## test-debian: Debian's bash, ls, python3, sqlite3, sort, tar/gzip, fio (psync, libaio) on the Debian root (minutes)
test-debian: debian-root kernel images
	cp --sparse=always $(DEBIAN_ROOT) $(BUILD)/debian-test.img
	rm -rf $(BUILD)/debian/test-stage && mkdir -p $(BUILD)/debian/test-stage
	cp tests/debian/guest.sh $(BUILD)/debian/test-stage/guest.sh
	$(DBFS_FUSE) import $(BUILD)/debian-test.img $(BUILD)/debian/test-stage --dir /root
	timeout --foreground -k 10 900 $(call debian_qemu,$(BUILD)/debian-test.img,$(QEMU_BASE)) \
		-append "$(DEBIAN_PARAMS) -- /root/guest.sh" | tee $(BUILD)/test-debian.log
	@grep -Eq '^debian: [0-9]+ passed, 0 failed' $(BUILD)/test-debian.log || \
		{ echo "test-debian: no clean 'debian: N passed, 0 failed' line"; exit 1; }

# gcc in the guest: a root of its own with the default packages and GCC_DEBS, its tree cached in
# build/debian-gcc (tools/debian/build-tree.sh DEBIAN_OUT) and its image in
# build/debian-gcc-root.img, so neither replaces the default ones. gcc only recommends
# libc6-dev (the C library's headers and crt files), which mmdebstrap does not install by
# itself: it is named too.
GCC_DEBS := +gcc,+libc6-dev
DEBIAN_GCC_TREE := $(BUILD)/debian-gcc/tree.tar
DEBIAN_GCC_ROOT := $(BUILD)/debian-gcc-root.img

$(DEBIAN_GCC_ROOT): $(DEBIAN_GCC_TREE) $(DBFS_FUSE)
	$(call debian_image,$(DEBIAN_GCC_TREE))

## debian-gcc-root: build/debian-gcc-root.img, the Debian root with gcc and libc6-dev (cached apart)
debian-gcc-root: debian-deps deps | $(BUILD)
	BUILD=$(BUILD) DEBIAN_OUT=$(BUILD)/debian-gcc DEBS=$(GCC_DEBS)$(if $(DEBS),$(comma)$(DEBS)) \
		tools/debian/build-tree.sh
	$(CARGO) build --release -p dbfs-fuse
	@$(MAKE) --no-print-directory $(DEBIAN_GCC_ROOT)

# A copy of the gcc root with tests/debian/gcc.sh as /root/gcc.sh, fresh disks; the script
# compiles C programs with gcc -O2 in the guest, runs them and prints `gcc: N passed, N failed`
# (and each compile's time). Not part of `make test`: the first tree build downloads gcc.
## test-gcc: gcc -O2 in the guest on the DEBS=+gcc root: compile, link (make, ar) and run C programs
test-gcc: debian-gcc-root kernel images
	cp --sparse=always $(DEBIAN_GCC_ROOT) $(BUILD)/debian-gcc-test.img
	rm -rf $(BUILD)/debian-gcc/test-stage && mkdir -p $(BUILD)/debian-gcc/test-stage
	cp tests/debian/gcc.sh $(BUILD)/debian-gcc/test-stage/gcc.sh
	$(DBFS_FUSE) import $(BUILD)/debian-gcc-test.img $(BUILD)/debian-gcc/test-stage --dir /root
	timeout --foreground -k 10 1800 $(call debian_qemu,$(BUILD)/debian-gcc-test.img,$(QEMU_BASE)) \
		-append "$(DEBIAN_PARAMS) -- /root/gcc.sh" | tee $(BUILD)/test-gcc.log
	@grep -Eq '^gcc: [0-9]+ passed, 0 failed' $(BUILD)/test-gcc.log || \
		{ echo "test-gcc: no clean 'gcc: N passed, 0 failed' line"; exit 1; }

.PHONY: debian-deps debian-tree debian-root run-debian test-debian debian-gcc-root test-gcc
