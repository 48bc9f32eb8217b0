# Third-party Linux programs for the guest (tools/thirdparty/fetch-build.sh): sources from
# Debian bookworm through a build-local apt set-up in build/apt (pjdfstest from PJDFSTEST_SRC),
# built static for riscv64 under build/thirdparty, never committed; cached by stamps, so a no-op
# rebuild takes about a second.

# What tools/thirdparty/fetch-build.sh needs: the riscv64 cross compiler and C library, busybox's
# build, apt-get source / dpkg-source and the archive key, autotools for pjdfstest.
THIRDPARTY_APT_PACKAGES := gcc-riscv64-linux-gnu libc6-dev-riscv64-cross make bzip2 xz-utils \
	dpkg-dev debian-archive-keyring autoconf automake libtool
# For `make thirdparty-check` (qemu-user) and `make sqlite` (its build generates code with tclsh).
THIRDPARTY_CHECK_APT_PACKAGES := qemu-user qemu-user-static
THIRDPARTY_SQLITE_APT_PACKAGES := tcl
# pjdfstest directories for `make thirdparty-check`, e.g. "chmod open" (default: all).
PJDFSTEST_DIRS ?=
THIRDPARTY := BUILD=$(BUILD) PJDFSTEST_SRC=$(PJDFSTEST_SRC) JOBS=2 tools/thirdparty/fetch-build.sh

##@ Third-party programs for the guest
## deps-thirdparty: the host packages these need (cross gcc, autotools, dpkg-dev, ...)
deps-thirdparty:
	@$(call apt_install,$(THIRDPARTY_APT_PACKAGES))

# The tree `make root-image` copies into root.img: /bin/busybox, /bin/sh (the same binary),
# sqlite3, speedtest1, fio, threadtest, timetest, smpstress, and when PJDFSTEST_SRC has the source
# /bin/pjdfstest, /bin/pjdfstest-run, /usr/pjdfstest/ (without it: a note, and no pjdfstest).
## thirdparty: busybox, sqlite, fio, our C tests (+ pjdfstest if its source is there) as build/thirdparty/rootfs
thirdparty: deps-thirdparty
	@$(call apt_install,$(THIRDPARTY_SQLITE_APT_PACKAGES))
	$(THIRDPARTY) rootfs

## busybox: busybox 1.35.0 static riscv64 (config: tools/thirdparty/busybox.config)
busybox: deps-thirdparty
	$(THIRDPARTY) $@

## fio-riscv: fio 3.33 static riscv64 (/bin/fio in root.img)
fio-riscv: deps-thirdparty
	$(THIRDPARTY) fio

# The riscv64 build of pjdfstest for the guest (`make pjdfstest` is the FUSE conformance run).
## pjdfstest-riscv: pjdfstest static riscv64 from PJDFSTEST_SRC
pjdfstest-riscv: deps-thirdparty
	$(REQUIRE_PJDFSTEST)
	$(THIRDPARTY) pjdfstest

## sqlite: sqlite3 3.40.1 + speedtest1 static riscv64 (/bin/sqlite3, /bin/speedtest1)
sqlite: deps-thirdparty
	@$(call apt_install,$(THIRDPARTY_SQLITE_APT_PACKAGES))
	$(THIRDPARTY) sqlite

# Both under qemu-user on the host, as root: busybox checks, then the whole pjdfstest suite (or
# PJDFSTEST_DIRS) with the guest's runner in a chroot on a tmpfs (binfmt_misc entry only for
# the run).
## thirdparty-check: busybox and pjdfstest under qemu-user on the host (root)
thirdparty-check: deps-thirdparty
	$(REQUIRE_PJDFSTEST)
	@$(call apt_install,$(THIRDPARTY_CHECK_APT_PACKAGES))
	$(THIRDPARTY) check $(PJDFSTEST_DIRS)

.PHONY: deps-thirdparty thirdparty busybox fio-riscv pjdfstest-riscv sqlite thirdparty-check
