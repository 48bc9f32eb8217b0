# dbfs-fuse on the host: the same dbfs crate through FUSE.

# make fuse: the image (IMAGE=build/disk/dbfs.img: your /dbfs disk of `make run`, while no QEMU
# uses it), where it is mounted, extra mount options (e.g. nobarrier,allow_other).
IMAGE   ?= $(BUILD)/dbfs.img
MNT     ?= $(BUILD)/mnt
FUSE_OPTS ?=

##@ FUSE on the host
# Mount a dbfs image on the host in the foreground (Ctrl-C unmounts cleanly).
## fuse: mount the dbfs image IMAGE at MNT on the host, in the foreground (Ctrl-C unmounts)
fuse: deps | $(BUILD)
	$(CARGO) build --release -p dbfs-fuse
	mkdir -p $(MNT)
	$(CARGO_TARGET_DIR)/release/dbfs-fuse mount $(IMAGE) $(MNT) -f $(if $(FUSE_OPTS),-o $(FUSE_OPTS))

# dbfs-fuse vs fuse2fs (ext4) vs the host directory; see docs/BENCHMARKS.md.
## bench-fuse: dbfs-fuse vs fuse2fs vs the host directory with fio: the cached, then the direct-I/O table
bench-fuse: deps
	tools/dbfs-fuse/bench.sh
	tools/dbfs-fuse/bench-direct.sh

## bench-fuse-direct: the direct-I/O table alone (tools/dbfs-fuse/bench-direct.sh), fresh and aged
bench-fuse-direct: deps
	tools/dbfs-fuse/bench-direct.sh

.PHONY: fuse bench-fuse bench-fuse-direct
