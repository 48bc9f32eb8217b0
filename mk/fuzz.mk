# Fuzzing; not in `make test` (tests/corrupt.rs, tests/mutate_walk.rs there are).

##@ Fuzzing
# Fuzzing (docs/ARCHITECTURE.md, "Fuzzing"): cargo-fuzz on stable through RUSTC_BOOTSTRAP,
# one job per target, in each fuzz crate's own target dir. fat32 is built with -O: its fuzz
# Cargo.toml turns overflow checks on for our crates and off for fatfs (as in the kernel).
FUZZ_SECS ?= 600
FUZZ_RUN = env -u CARGO_TARGET_DIR RUSTC_BOOTSTRAP=1 cargo fuzz run
## fuzz: cargo-fuzz mount_walk on damaged dbfs, then FAT32 images, FUZZ_SECS each
fuzz:
	@command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
	cd fs/dbfs/fuzz && python3 seeds.py corpus/mount_walk && $(FUZZ_RUN) -s none mount_walk -- \
		-max_total_time=$(FUZZ_SECS) -timeout=20 -max_len=385 -len_control=10 -print_final_stats=1
	cd fs/fat32/fuzz && python3 seeds.py corpus/mount_walk && $(FUZZ_RUN) -O -s none mount_walk -- \
		-max_total_time=$(FUZZ_SECS) -timeout=20 -max_len=448 -len_control=10 -print_final_stats=1


.PHONY: fuzz
