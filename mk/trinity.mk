# trinity (issue #45): Debian's system call fuzzer (trinity 1.9) in the guest, from the default
# Debian root (tools/debian/packages.txt has trinity), booted from a copy of it.
# tests/trinity/fuzz-kernel.sh boots once per seed, on a fresh dbfs disk, and runs
# tests/trinity/guest.sh there (trinity as uid 65534 in a scratch directory on /dbfs; the
# calls left out by design are named there); the hard timeout of each boot is the watchdog (a
# hang), and the dbfs disk and the root must pass `dbfs-fuse fsck` after each.
TRINITY_ROOT = $(DEBIAN_ROOT)
# TRINITY_OPS system calls in all (children included), split over the seeds; TRINITY_SEEDS
# seeds drawn at random and printed, or TRINITY_SEED=S to replay one.
TRINITY_OPS ?= 1000000
TRINITY_SEEDS ?= 4
TRINITY_SEED ?=
TRINITY_CHILDREN ?= 4
TRINITY_TIMEOUT ?= 3600
trinity_seeds = $(or $(TRINITY_SEED),$(shell for i in $$(seq $(TRINITY_SEEDS)); do echo $$(( ($$(od -An -N4 -tu4 /dev/urandom)) % 1000000000 )); done))
# $(call trinity_run,OPS,SEEDS,TIMEOUT)
trinity_run = QEMU='$(call debian_qemu,$(BUILD)/debian-trinity.img,$(call QEMU_DBFS,$(BUILD)/trinity-dbfs.img))' \
	PARAMS='$(DEBIAN_PARAMS)' ROOT=$(TRINITY_ROOT) ROOT_IMG=$(BUILD)/debian-trinity.img \
	DBFS_IMG=$(BUILD)/trinity-dbfs.img DBFS_FUSE=$(DBFS_FUSE) MKIMAGE=$(MKIMAGE) LOGDIR=$(BUILD) \
	CHILDREN=$(TRINITY_CHILDREN) TIMEOUT=$(3) tests/trinity/fuzz-kernel.sh $(1) $(2)

##@ trinity
## trinity-root: the Debian root trinity runs from (the default one, debian-root)
trinity-root:
	@$(MAKE) --no-print-directory debian-root

## fuzz-kernel: trinity as uid 65534 on /dbfs: TRINITY_OPS calls (10^6) over TRINITY_SEEDS random seeds (or TRINITY_SEED=S), fsck after each
fuzz-kernel: trinity-root kernel images
	@seeds='$(trinity_seeds)'; set -- $$seeds; \
	$(call trinity_run,$$(( $(TRINITY_OPS) / $$# )),$$seeds,$(TRINITY_TIMEOUT))

# The short run of `make test`: fixed seeds known to pass on this kernel, TEST_TRINITY_OPS calls each.
TEST_TRINITY_SEEDS ?= 1 2
TEST_TRINITY_OPS ?= 5000
## test-trinity: trinity's short run: TEST_TRINITY_OPS (5000) calls for each of the fixed seeds TEST_TRINITY_SEEDS (1 2)
test-trinity: trinity-root kernel images
	@$(call trinity_run,$(TEST_TRINITY_OPS),$(TEST_TRINITY_SEEDS),600)

.PHONY: trinity-root fuzz-kernel test-trinity
