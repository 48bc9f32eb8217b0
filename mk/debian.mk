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

$(DEBIAN_ROOT): $(DEBIAN_TREE) $(DBFS_FUSE)
	rm -rf $(BUILD)/debian/root && mkdir -p $(BUILD)/debian/root
	tar -xpf $(DEBIAN_TREE) --numeric-owner -C $(BUILD)/debian/root
	mkdir -p $(BUILD)/debian/root/fat $(BUILD)/debian/root/dbfs $(BUILD)/debian/root/proc \
		$(BUILD)/debian/root/dev
	rm -f $@.tmp
	$(DBFS_FUSE) mkfs $@.tmp --size $(DEBIAN_SIZE)
	$(DBFS_FUSE) import $@.tmp $(BUILD)/debian/root
	mv $@.tmp $@
	rm -rf $(BUILD)/debian/root

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
## test-debian: Debian's bash, ls, python3, sqlite3, sort, tar/gzip on the Debian root (minutes)
test-debian: debian-root kernel images
	cp --sparse=always $(DEBIAN_ROOT) $(BUILD)/debian-test.img
	rm -rf $(BUILD)/debian/test-stage && mkdir -p $(BUILD)/debian/test-stage
	cp tests/debian/guest.sh $(BUILD)/debian/test-stage/guest.sh
	$(DBFS_FUSE) import $(BUILD)/debian-test.img $(BUILD)/debian/test-stage --dir /root
	timeout --foreground -k 10 900 $(call debian_qemu,$(BUILD)/debian-test.img,$(QEMU_BASE)) \
		-append "$(DEBIAN_PARAMS) -- /root/guest.sh" | tee $(BUILD)/test-debian.log
	@grep -Eq '^debian: [0-9]+ passed, 0 failed' $(BUILD)/test-debian.log || \
		{ echo "test-debian: no clean 'debian: N passed, 0 failed' line"; exit 1; }

.PHONY: debian-deps debian-tree debian-root run-debian test-debian
