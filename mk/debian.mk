# The Debian root (issue #42): Debian trixie's own riscv64 programs, dynamically linked, on a
# dbfs root disk, with our programs in /opt/dbfs-os/bin. It is what `make run` boots (a shell,
# CMD=). Built in three steps, each cached, in a folder per package list (DEBIAN_DIR:
# build/debian for tools/debian/packages.txt alone, build/debian-gcc-git for DEBS=+gcc,+git, so
# going back and forth rebuilds nothing):
#   tree.tar   tools/debian/build-tree.sh (mmdebstrap); seconds when the list is unchanged
#   base.img   that tree written into a fresh dbfs image by `dbfs-fuse import` (owners, modes,
#              links, device nodes kept); rebuilt when the tree or dbfs-fuse change (a minute)
#   root.img   base.img plus tools/debian/overlay (the first process, PATH) and /opt/dbfs-os/bin
#              (the user programs and the static third-party builds); rebuilt in seconds when a
#              program changes
# The person's system disk is a copy of root.img in DISK_DIR (root.img), made again when the
# system image is newer or another one (DEBS changed); /root is a disk of its own
# (DISK_DIR/home.img, dbfs), so the person's files there, like those on /dbfs and /fat, outlive
# every rebuild.

# DEBS: packages added to (+gcc) or left out of (-fio) tools/debian/packages.txt, comma-separated.
DEBS ?=
debian_dir = $(BUILD)/debian$(if $(1),-$(subst $(comma),-,$(subst +,,$(1))))
DEBIAN_DIR   := $(call debian_dir,$(DEBS))
DEBIAN_TREE  := $(DEBIAN_DIR)/tree.tar
DEBIAN_BASE  := $(DEBIAN_DIR)/base.img
DEBIAN_ROOT  := $(DEBIAN_DIR)/root.img
DEBIAN_STAGE := $(BUILD)/debian-stage
DEBIAN_OVERLAY := $(shell find tools/debian/overlay -type f 2>/dev/null)
# The image's size (sparse: only what the tree fills is written).
DEBIAN_SIZE ?= 2G
DEBIAN_APT  := mmdebstrap qemu-user-static
DEBIAN_INIT := /usr/local/sbin/dbfs-os-init
# QEMU with IMAGE as vda and the disks of $(2) (a QEMU command line): $(call debian_qemu,IMAGE,QEMU).
debian_qemu = $(subst file=$(BUILD)/root.img$(comma),file=$(1)$(comma),$(2))
DEBIAN_PARAMS = rootfs=dbfs init=$(DEBIAN_INIT) log=$(LOG) bcache=$(BCACHE)
# The person's QEMU: DISK_DIR's system disk as vda, their fat/raw/dbfs disks, home.img as vde (/root).
QEMU_PERSON = $(call debian_qemu,$(DISK_DIR)/root.img,$(QEMU_USER)) \
	-drive file=$(DISK_DIR)/home.img,if=none,format=raw,id=vde \
	-device virtio-blk-device,drive=vde,queue-size=1024
# What /opt/dbfs-os/bin gets from the static third-party tree: everything but the busybox
# copies named after programs Debian has (sh, gzip, bzip2).
DEBIAN_TP_SKIP := sh gzip bzip2

##@ The Debian root
## debian-deps: install what building the Debian tree needs (mmdebstrap, qemu-user-static)
debian-deps:
	@$(call apt_install,$(DEBIAN_APT))

## debian-tree: DEBIAN_DIR/tree.tar, Debian trixie riscv64 (tools/debian/build-tree.sh, DEBS; cached)
debian-tree: debian-deps | $(BUILD)
	BUILD=$(BUILD) DEBIAN_OUT=$(DEBIAN_DIR) DEBS='$(DEBS)' tools/debian/build-tree.sh

$(DEBIAN_BASE): $(DEBIAN_TREE) $(DBFS_FUSE)
	rm -rf $@.root && mkdir -p $@.root
	tar -xpf $(DEBIAN_TREE) --numeric-owner -C $@.root
	mkdir -p $@.root/fat $@.root/dbfs $@.root/proc $@.root/dev
	rm -f $@.tmp
	$(DBFS_FUSE) mkfs $@.tmp --size $(DEBIAN_SIZE)
	$(DBFS_FUSE) import $@.tmp $@.root
	mv $@.tmp $@
	rm -rf $@.root

# The stage holds only new names (import merges directories and refuses to replace a file);
# modes are set here, not taken from the checkout (a clone's umask decides those).
$(DEBIAN_ROOT): $(DEBIAN_BASE) $(DEBIAN_OVERLAY) $(addprefix $(TGT_DIR)/,$(USER_BINS)) \
		$(BUILD)/thirdparty/rootfs.stamp
	rm -rf $(DEBIAN_STAGE) && mkdir -p $(DEBIAN_STAGE)/opt/dbfs-os/bin
	cp -r --no-preserve=mode tools/debian/overlay/. $(DEBIAN_STAGE)/
	find $(DEBIAN_STAGE) -type d -exec chmod 755 {} + && find $(DEBIAN_STAGE) -type f -exec chmod 644 {} +
	cp $(addprefix $(TGT_DIR)/,$(USER_BINS)) $(DEBIAN_STAGE)/opt/dbfs-os/bin/
	# mkfs.TYPE for each type of /proc/filesystems: mkfs.vfat is Debian's (dosfstools).
	cp $(TGT_DIR)/mkfs_dbfs $(DEBIAN_STAGE)/opt/dbfs-os/bin/mkfs.dbfs
	for f in $(BUILD)/thirdparty/rootfs/bin/*; do \
		case " $(DEBIAN_TP_SKIP) " in *" $${f##*/} "*) ;; *) cp "$$f" $(DEBIAN_STAGE)/opt/dbfs-os/bin/ ;; esac; \
	done
	chmod 755 $(DEBIAN_STAGE)/opt/dbfs-os/bin/* $(DEBIAN_STAGE)$(DEBIAN_INIT)
	cp --sparse=always $(DEBIAN_BASE) $@.tmp
	$(DBFS_FUSE) import $@.tmp $(DEBIAN_STAGE) --dir /
	mv $@.tmp $@

## debian-root: DEBIAN_DIR/root.img: the Debian tree (DEBS), our programs in /opt/dbfs-os/bin (dbfs, DEBIAN_SIZE 2G sparse)
debian-root: debian-tree build thirdparty
	$(CARGO) build --release -p dbfs-fuse
	@$(MAKE) --no-print-directory $(DEBIAN_ROOT)

# The person's system disk and home disk (with user-disks: fat, raw, dbfs). The system disk is
# replaced by a new copy when the system image is newer or another one (root.src names it):
# what was changed on it outside /root, /dbfs and /fat is then gone. home.img is made blank
# once (the kernel formats it).
## person-disks: your disks in DISK_DIR: user-disks plus root.img (the system) and home.img (/root)
person-disks: debian-root user-disks
	@if [ ! -f $(DISK_DIR)/root.img ]; then what="new system disk $(DISK_DIR)/root.img (/), a copy of $(DEBIAN_ROOT)"; \
	elif [ $(DEBIAN_ROOT) -nt $(DISK_DIR)/root.img ] || [ "$$(cat $(DISK_DIR)/root.src 2>/dev/null)" != $(DEBIAN_ROOT) ]; then \
		what="system disk $(DISK_DIR)/root.img replaced by a copy of $(DEBIAN_ROOT), which changed (your /root, /dbfs and /fat are kept)"; \
	else what=""; fi; \
	if [ -n "$$what" ]; then \
		cp --sparse=always $(DEBIAN_ROOT) $(DISK_DIR)/root.img.new && mv $(DISK_DIR)/root.img.new $(DISK_DIR)/root.img && \
		echo $(DEBIAN_ROOT) >$(DISK_DIR)/root.src && echo "make: $$what"; fi
	@test -f $(DISK_DIR)/home.img || { $(MKIMAGE) blank $(DISK_DIR)/home.img.new --size 256M && \
		mv $(DISK_DIR)/home.img.new $(DISK_DIR)/home.img && echo "make: new blank dbfs disk $(DISK_DIR)/home.img (/root)"; }

# The Debian root on the benchmark disks (fresh), for trying a change without the person's
# disks. CMD='line' runs the line with Debian's bash.
## run-debian: boot a fresh copy of the Debian root on fresh disks (CMD='line' runs one line, TIMEOUT)
run-debian: debian-root kernel images
	cp --sparse=always $(DEBIAN_ROOT) $(BUILD)/debian-run.img
	@cmd='$(subst ','\'',$(value CMD))'; quoted=$${cmd//\'/\'\\\'\'}; \
	timeout --foreground -k 10 $(TIMEOUT) $(call debian_qemu,$(BUILD)/debian-run.img,$(QEMU_BASE)) \
		-append "$(DEBIAN_PARAMS)$(if $(CMD), -- -c '$$quoted')"

# $(call debian_script,NAME,FILES,QEMU,LINE[,ROOT]): a fresh copy of the Debian root ROOT
# (default DEBIAN_ROOT) as build/debian-NAME.img with FILES put into /root, booted with QEMU (a
# command line on fresh disks), the first process running LINE; the console goes to
# build/NAME.log too.
debian_script = cp --sparse=always $(or $(5),$(DEBIAN_ROOT)) $(BUILD)/debian-$(1).img && \
	rm -rf $(BUILD)/debian-$(1)-stage && mkdir -p $(BUILD)/debian-$(1)-stage && \
	cp $(2) $(BUILD)/debian-$(1)-stage/ && \
	$(DBFS_FUSE) import $(BUILD)/debian-$(1).img $(BUILD)/debian-$(1)-stage --dir /root >/dev/null && \
	$(GUEST_TIMEOUT) 1800 $(call debian_qemu,$(BUILD)/debian-$(1).img,$(3)) \
		-append "$(DEBIAN_PARAMS) -- $(4)" | tee $(BUILD)/$(1).log

# tests/debian/guest.sh prints `debian: N passed, N failed`.
## test-debian: Debian's bash, coreutils, python3, sqlite3, tar/gzip, fio (psync, libaio) on the Debian root (minutes)
test-debian: debian-root kernel images
	$(call debian_script,test-debian,tests/debian/guest.sh tests/debian/check.sh,$(QEMU_BASE),/root/guest.sh)
	@grep -Eq '^debian: [0-9]+ passed, 0 failed' $(BUILD)/test-debian.log || \
		{ echo "test-debian: no clean 'debian: N passed, 0 failed' line"; exit 1; }

# gcc in the guest: the root of DEBS=$(GCC_DEBS) (its own folder, so it never replaces the
# default one). gcc only recommends libc6-dev (the C library's headers and crt files), which
# mmdebstrap does not install by itself: it is named too. tests/debian/gcc.sh compiles C
# programs with gcc -O2, runs them and prints `gcc: N passed, N failed` (and each compile's
# time). Not part of `make test`: the first tree build downloads gcc.
GCC_DEBS := +gcc,+libc6-dev
## test-gcc: gcc -O2 in the guest on the DEBS=+gcc,+libc6-dev root: compile, link (make, ar) and run C programs
test-gcc: kernel images
	@$(MAKE) --no-print-directory debian-root DEBS=$(GCC_DEBS)
	$(call debian_script,test-gcc,tests/debian/gcc.sh tests/debian/check.sh,$(QEMU_BASE),/root/gcc.sh,$(call debian_dir,$(GCC_DEBS))/root.img)
	@grep -Eq '^gcc: [0-9]+ passed, 0 failed' $(BUILD)/test-gcc.log || \
		{ echo "test-gcc: no clean 'gcc: N passed, 0 failed' line"; exit 1; }

.PHONY: debian-deps debian-tree debian-root person-disks run-debian test-debian test-gcc
