# Benchmarks: in the guest (fresh disks from `make images` each run) and on the host.
# bench/README.md lists every benchmark, what it measures, its command and where its figures go.

# make bench: where its tables and charts go.
REPORT  ?= $(BUILD)/bench-report
# make fio / fio-host: the job file bench/fio/JOB.fio and its knobs: FIO_BS (1m), FIO_JOBS (1;
# a list such as 1,4 runs each in the same boot and sets each against the first), FIO_SIZE
# (16m per job), FIO_TOTAL (unset; e.g. 64m: the bytes all jobs of a run share, so 1 and 4
# jobs move the same data), FIO_THREAD (0; 1 = jobs as threads), FIO_RUNTIME (10 s),
# FIO_LOOPS (1: times each line runs over its files), FIO_QD (16) and FIO_IOSIZE (4m: JOB=qd's
# libaio depth and bytes read at random); each repetition starts with the next
# file system, so none always runs first. FIO_SYSTEMS: the host systems of fio-host and
# sqlite-host-bench.
JOB     ?= seed
FIO_BS  ?= 1m
FIO_JOBS ?= 1
FIO_SIZE ?= 16m
FIO_TOTAL ?=
FIO_THREAD ?= 0
FIO_RUNTIME ?= 10
FIO_LOOPS ?= 1
FIO_QD ?= 16
FIO_IOSIZE ?= 4m
FIO_SYSTEMS ?= dbfs ext4 host
# One `make fio` run's name: its results are build/fio-$(FIO_RUN)-results.txt.
FIO_RUN = $(JOB)-$(FIO_BS)-$(FIO_JOBS)j$(if $(filter 1,$(FIO_THREAD)),-threads)$(if $(filter 1,$(ICOUNT)),-icount)
# make sqlite-bench: speedtest1 --size (100 = its full size).
SQLITE_SIZE ?= 10
# make bench-workloads[-host]: all, or some of fileserver webserver varmail mdtest create_empty
# delete_2m createdel_ordered, comma-separated; WL_SYSTEMS: the host systems.
WORKLOADS ?= all
WL_SYSTEMS ?= dbfs ext4 tmpfs
# The in-guest benchmarks boot one hart unless SMP is given on the command line, whatever the
# default of run and test: the recorded tables (docs/BENCHMARKS.md) are one hart's figures.
BENCH_TARGETS := bench bench-debian syscost-icount sqlite-bench fio bench-workloads fio-bench
$(BENCH_TARGETS): SMP = 1
# And with the guest's RAM backed from the start (PREALLOC, mk/common.mk).
$(BENCH_TARGETS): QEMU_RAM = $(BENCH_RAM)

##@ Benchmarks (bench/README.md)
# Every benchmark, one boot; the log is the record (see docs/BENCHMARKS.md).
## bench: every in-guest benchmark in one boot: build/bench-results.txt, a report in REPORT, then syscost-icount
bench: images
	$(GUEST_TIMEOUT) $(TIMEOUT) $(QEMU_BASE) \
		-append "$(KERNEL_PARAMS) -- bench=all fs=$(FS) reps=$(REPS) warmup=$(WARMUP) disk=$(DISK) $(ARGS)" \
		| tee $(BUILD)/bench-guest.log
	@grep '^RESULT' $(BUILD)/bench-guest.log > $(BUILD)/bench-results.txt
	$(CARGO) run --release -q -p bench-report -- $(BUILD)/bench-guest.log --out-dir $(REPORT) \
		--title "dbfs-os in QEMU (FS=$(FS), REPS=$(REPS), DISK=$(DISK))"
	$(MAKE) --no-print-directory syscost-icount
	@echo "results: $(BUILD)/bench-results.txt; tables and charts: $(REPORT)/;" \
		"instructions per call (-icount): $(BUILD)/syscost-icount.txt"

# The Debian root's programs (tests/debian/exec-figures.sh on a copy of the root, mk/debian.mk):
# 50 fork+exec+exit of Debian's dynamically linked /usr/bin/true and of our static busybox
# true, `python3 -c pass` three times, the memory 20 running `sleep`s take.
## bench-debian: exec of dynamic and static programs, python3 start-up, 20 sleeps' memory (ICOUNT=1: instructions)
bench-debian: debian-root kernel images
	$(call debian_script,bench-debian,tests/debian/exec-figures.sh,$(QEMU_BASE),/root/exec-figures.sh) \
		| tr -d '\r' | grep -E '^FIGURE|PANIC' | tee $(BUILD)/bench-debian.txt

# Instructions of one system call (docs/BENCHMARKS.md, "One 4 KiB pread against the floor"):
# -icount for this boot only; SYSCOST_CALLS calls per loop; SYSCOST_OPTS more options of
# /bin/syscost (sync=1, only=pwrite4k_append, directories); SYSCOST_PARAMS more kernel
# parameters (dbfs_dirty_mib=256). The floor is a null system call (getppid) plus one 4 KiB
# page copy by the kernel's memcpy; ratio = instructions / floor.
SYSCOST_CALLS ?= 20000
SYSCOST_OPTS ?=
SYSCOST_PARAMS ?=
## syscost-icount: instructions of one system call under -icount on /dbfs and /fat: build/syscost-icount.txt
syscost-icount: images
	$(GUEST_TIMEOUT) 300 $(QEMU_BASE) $(if $(filter 1,$(ICOUNT)),,-icount shift=0) \
		-append "init=/bin/syscost log=$(LOG) bcache=$(BCACHE) copy_cost=1 $(SYSCOST_PARAMS) -- calls=$(SYSCOST_CALLS) $(SYSCOST_OPTS)" \
		| tee $(BUILD)/syscost-icount.log
	@awk '/^COPYCOST op=copy4k/ { split($$3, a, "="); copy = a[2] } \
		/^SYSCOST op=getppid/ { split($$3, a, "="); null = a[2] } \
		/^SYSCOST dir=/ { split($$2, d, "="); split($$3, o, "="); split($$4, n, "="); \
			fs = substr(d[2], 2); ops[++k] = o[2] " " fs " " n[2] } \
		END { if (k == 0) { print "syscost-icount: figures missing" > "/dev/stderr"; exit 1 } \
			floor = (copy == "" || null == "") ? 0 : null + copy; \
			if (floor) printf "ICOUNT op=floor4k instructions=%d getppid=%d copy4k=%d\n", floor, null, copy; \
			for (i = 1; i <= k; i++) { split(ops[i], f, " "); op = f[1] == "pread4k_same" ? "pread4k" : f[1]; \
				if (floor) printf "ICOUNT op=%s fs=%s instructions=%d floor=%d ratio=%.2f\n", op, f[2], f[3], floor, f[3] / floor; \
				else printf "ICOUNT op=%s fs=%s instructions=%d\n", op, f[2], f[3] } }' \
		$(BUILD)/syscost-icount.log | tee $(BUILD)/syscost-icount.txt

# sqlite's speedtest1 on /dbfs and /fat, alternated, REPS runs each, one boot
# (tools/thirdparty/sqlite-bench.sh as /bin/sqlite-bench): RESULT lines and a median table.
## sqlite-bench: sqlite speedtest1 on /dbfs and /fat in one boot, alternated, REPS runs each
sqlite-bench: images
	$(GUEST_TIMEOUT) $(TIMEOUT) $(QEMU_BASE) \
		-append "$(SHELL_PARAMS) -- /bin/sqlite-bench $(REPS) $(SQLITE_SIZE)" | tee $(BUILD)/sqlite-bench.log
	@grep '^RESULT bench=speedtest1' $(BUILD)/sqlite-bench.log > $(BUILD)/sqlite-bench-results.txt
	@echo "results: $(BUILD)/sqlite-bench-results.txt"

# fio with a job file of bench/fio, in the guest; FS picks the directories.
## fio: the fio job file bench/fio/JOB.fio in the guest on FS (dbfs, fat32, all; raw for JOB=qd), REPS runs
fio: images
	@dirs=""; for f in $$(echo "$(if $(filter all,$(FS)),dbfs$(comma)fat32,$(FS))" | tr , ' '); do \
		case $$f in dbfs) dirs="$$dirs dbfs=/dbfs" ;; fat32) dirs="$$dirs fat32=/fat" ;; \
		raw) dirs="$$dirs raw=/dev/vdc" ;; \
		*) echo "make fio: FS=$$f: dbfs, fat32, raw (the disk: JOB=qd) or all"; exit 2 ;; esac; done; \
	test -f bench/fio/$(JOB).fio || { echo "make fio: no bench/fio/$(JOB).fio"; exit 2; }; \
	$(GUEST_TIMEOUT) $(TIMEOUT) $(QEMU_BASE) -append "$(SHELL_PARAMS) -- -c \
		'SIZE=$(FIO_SIZE) TOTAL=$(FIO_TOTAL) JOBS=$(FIO_JOBS) BS=$(FIO_BS) THREAD=$(FIO_THREAD) \
		RUNTIME=$(FIO_RUNTIME) LOOPS=$(FIO_LOOPS) QD=$(FIO_QD) IOSIZE=$(FIO_IOSIZE) \
		fio-jobs /etc/fio/$(JOB).fio $(REPS)$$dirs'" | tee $(BUILD)/fio-$(FIO_RUN).log
	@grep '^RESULT bench=fio' $(BUILD)/fio-$(FIO_RUN).log > $(BUILD)/fio-$(FIO_RUN)-results.txt
	@echo "results: $(BUILD)/fio-$(FIO_RUN)-results.txt (charts: bench-report FILE --out-dir DIR)"

# The same job file on the host (dbfs-fuse, fuse2fs, host directory).
## fio-host: the same job file on the host: dbfs-fuse, fuse2fs ext4, a host directory (FIO_SYSTEMS)
fio-host: deps
	SYSTEMS="$(FIO_SYSTEMS)" SIZE=$(FIO_SIZE) TOTAL=$(FIO_TOTAL) JOBS=$(FIO_JOBS) BS=$(FIO_BS) THREAD=$(FIO_THREAD) \
		RUNTIME=$(FIO_RUNTIME) LOOPS=$(FIO_LOOPS) tools/fio/fio-host.sh $(JOB) $(REPS)

# The seed experiments' other workloads (bench/workloads: filebench-style fileserver, webserver,
# varmail; an mdtest tree; create_empty; delete_2m; createdel_ordered), written once: in the guest
# (/bin/workloads as init, one boot, FS alternated within each of REPS repetitions) ...
## bench-workloads: bench/workloads (fileserver, webserver, varmail, mdtest, ...) in the guest, one boot
bench-workloads: images
	@dirs=""; for f in $$(echo "$(if $(filter all,$(FS)),dbfs$(comma)fat32,$(FS))" | tr , ' '); do \
		case $$f in dbfs) dirs="$$dirs dbfs:/dbfs" ;; fat32) dirs="$$dirs fat32:/fat" ;; \
		*) echo "make bench-workloads: FS=$$f: dbfs, fat32 or all"; exit 2 ;; esac; done; \
	$(GUEST_TIMEOUT) $(TIMEOUT) $(QEMU_BASE) -append "init=/bin/workloads log=$(LOG) bcache=$(BCACHE) \
		--$$dirs reps=$(REPS) workloads=$(WORKLOADS)" | tee $(BUILD)/workloads-guest.log
	@grep '^RESULT' $(BUILD)/workloads-guest.log > $(BUILD)/workloads-guest-results.txt || true
	@grep -Eq '^workloads: [0-9]+ results, 0 errors' $(BUILD)/workloads-guest.log || \
		{ echo "make bench-workloads: a workload failed (ERROR lines above)"; exit 1; }
	@echo "results: $(BUILD)/workloads-guest-results.txt"

# ... and on the host (bench/workloads/host.sh): dbfs-fuse and fuse2fs ext4 on fresh images and a
# tmpfs directory (WL_SYSTEMS), alternated within each of REPS repetitions.
## bench-workloads-host: the same workloads on the host: dbfs-fuse, fuse2fs ext4, tmpfs (WL_SYSTEMS)
bench-workloads-host: deps
	SYSTEMS="$(WL_SYSTEMS)" bench/workloads/host.sh $(REPS) $(WORKLOADS) | tee $(BUILD)/workloads-host.log
	@grep -Eq '^workloads: [0-9]+ results, 0 errors' $(BUILD)/workloads-host.log || \
		{ echo "make bench-workloads-host: a workload failed (ERROR lines above)"; exit 1; }
	@grep '^RESULT' $(BUILD)/workloads-host.log > $(BUILD)/workloads-host-results.txt
	@echo "results: $(BUILD)/workloads-host-results.txt"

# speedtest1 on the host: dbfs-fuse, fuse2fs ext4 and a host directory (the guest's script).
## sqlite-host-bench: speedtest1 on the host: dbfs-fuse, fuse2fs ext4, a host directory (FIO_SYSTEMS)
sqlite-host-bench: deps deps-thirdparty
	$(THIRDPARTY) sqlite-host
	SYSTEMS="$(FIO_SYSTEMS)" tools/thirdparty/sqlite-host.sh $(REPS) $(SQLITE_SIZE)

# fio (psync) on /dbfs and /fat, alternated, REPS runs each, one boot
# (tools/thirdparty/fio-bench.sh as /bin/fio-bench): 1 MiB sequential write with a final
# fsync, then 4 KiB random reads of the 16 MiB file; RESULT lines and a median table.
## fio-bench: fio psync on /dbfs and /fat in one boot: 1 MiB writes, 4 KiB random reads
fio-bench: images
	$(GUEST_TIMEOUT) $(TIMEOUT) $(QEMU_BASE) \
		-append "$(SHELL_PARAMS) -- /bin/fio-bench $(REPS)" | tee $(BUILD)/fio-bench.log
	@grep '^RESULT bench=fio' $(BUILD)/fio-bench.log > $(BUILD)/fio-bench-results.txt
	@echo "results: $(BUILD)/fio-bench-results.txt"

## bench-kv: kvdb (file pager, mapped pager) vs jammdb vs redb on the host (criterion, tools/kvdb-bench)
# Criterion's reports go to build/criterion (CRITERION_HOME), not into the source tree.
bench-kv: deps
	CRITERION_HOME=$(abspath $(BUILD))/criterion $(CARGO) bench -p kvdb-bench --bench kv -- \
		--warm-up-time 1 --measurement-time 3

.PHONY: bench-debian bench syscost-icount sqlite-bench fio fio-host bench-workloads bench-workloads-host \
	sqlite-host-bench fio-bench bench-kv bench-smp-hash

# The two-hash CPU-scaling figure (docs/BENCHMARKS.md "Several harts"): PAIRS boots with
# SMP_A harts alternating with PAIRS boots with SMP_B, each timing one sha256sum of a cached
# MIB MiB /dbfs file alone and two side by side, with /proc/bkl's counters (bench/smp/two-hash.sh).
## bench-smp-hash: two hashes of a cached /dbfs file side by side against one, SMP=1 and SMP=2 boots alternating
bench-smp-hash: images
	KERNEL=$(KERNEL) BUILD=$(BUILD) MEM=$(MEM) bench/smp/two-hash.sh
