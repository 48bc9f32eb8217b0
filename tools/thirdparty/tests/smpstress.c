/* smpstress: checks that fail on a kernel whose harts race (dbfs-os issue 44). Built static
 * for riscv64 by tools/thirdparty/fetch-build.sh, run by `make test-smp` (SMP=4) as
 * /bin/smpstress [rounds [dir]]. Each check also passes on one hart (and on Linux): what it looks for
 * only goes wrong when threads run on several harts at once.
 *  - futex ping-pong: two threads hand a turn back and forth with FUTEX_WAIT/FUTEX_WAKE; a
 *    lost wake-up hangs (the alarm fails the run), a turn taken twice breaks the count.
 *  - pipe ping-pong between two processes (a tenth of the rounds, at least 1000: a pipe round
 *    trip costs about ten futex ones).
 *  - fork/exit storm: 4 processes each fork children that change a copy-on-write page and
 *    exit with a value computed from it; the parents' page must stay as it was.
 *  - munmap under writers: 3 sibling threads store into a mapping without pause while the
 *    main thread unmaps it; after munmap returns each writer must fault (SIGSEGV) without
 *    another store landing (a stale TLB entry on its hart would let it go on writing into a
 *    freed frame), and memory mapped afterwards must read as zeros.
 *  - reads that meet a busy process: 3 threads pread /proc/version while the main thread maps,
 *    touches and unmaps 16 MiB, 30 times, then starts and joins 1000 threads that end at once;
 *    a read that waited for the process's state (and so took the big kernel lock) before the
 *    kernel turned it to its locked path must not hang, nor a thread's start or exit that
 *    finds the state held by a reader on another hart, and every join must return (a thread
 *    that ended before clone wrote its tid word left the word set: the join slept for ever).
 *  - a signal to a thread spinning in user code on another hart arrives at once (an IPI), not
 *    at that hart's next timer tick: measured in the spinner's own loop turns.
 *  - with a directory argument (a dbfs mount's): 4 writer and 4 reader processes on one
 *    directory, every file a reader opens and every file at the end checked byte for byte.
 *  - large writers (with the directory): 4 processes make writes of up to 1.5 MiB at odd offsets
 *    (dbfs sends their whole chunks to the disk without its writer lock, and the partial
 *    chunks at the ends through its cache): two to their own files, two to disjoint halves of
 *    one shared file, overwriting earlier writes, some followed by fsync; every file is
 *    checked byte for byte against what its writers wrote.
 *  - munmap under readers (with the directory): 3 sibling threads pread a file into a mapping
 *    while the main thread unmaps it; munmap must wait for reads under way into it.
 *  - munmap under file writers (with the directory): the same with pwrite from the mapping;
 *    munmap must wait for writes under way from it, so the file never takes bytes of a frame
 *    freed and used again (the main thread fills fresh memory at once).
 *  - reads before the write-back (with the directory): a process lays out a 64 MiB file, writes
 *    it in 1 MiB pieces without fsync, and reads it back in 1 MiB reads for 4 s, three times,
 *    so the write-back's timer (every second, under the big kernel lock) meets reads of chunks
 *    not committed yet (dbfs reads them under its state lock, and their disk wait takes the big
 *    kernel lock): every read pass is checked. A deadlock between the two hangs the boot (the
 *    test's timeout fails it); `make test-writeback-reads` is the surer trap for that one.
 *  - reads again side by side (with the directory): 2 processes write a file each and fsync
 *    it, then read it 6 times together in 1 MiB reads, 3 rounds, each rewriting the files:
 *    dbfs keeps the pages of large reads read again (several harts) and copies later reads
 *    from memory, so a kept page a rewrite did not drop would show an earlier round's bytes.
 *    Every read is checked, and on dbfs-os with several harts /proc/counters must show pages
 *    kept and bytes copied from them.
 *  - pinned threads: one thread per hart, each pinned to its own with sched_setaffinity, all
 *    running at once; each must find itself on its hart (sched_getcpu) at every turn of its
 *    loop, yields and time slices included, and a forked child keeps its creator's mask.
 * Prints one line per check and "smpstress: N passed, M failed". */
#define _GNU_SOURCE
#include <dirent.h>
#include <sched.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int passed, failed;

static void check(int ok, const char *what) {
	printf("%s %s\n", ok ? "ok  " : "FAIL", what);
	fflush(stdout);
	if (ok)
		passed++;
	else
		failed++;
}

static long futex(atomic_int *addr, int op, int val) {
	return syscall(SYS_futex, addr, op, val, NULL, NULL, 0);
}

static double now_s(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* --- futex ping-pong: `turn` is 0 (main's) or 1 (the thread's). */
static atomic_int turn;
static long shared_count; /* changed only by the side whose turn it is: no atomics */
static long rounds;

static void pass_turn(int to) {
	atomic_store(&turn, to);
	futex(&turn, FUTEX_WAKE_PRIVATE, 1);
}

static void wait_turn(int mine) {
	int t;
	while ((t = atomic_load(&turn)) != mine)
		futex(&turn, FUTEX_WAIT_PRIVATE, t);
}

static void *ponger(void *arg) {
	(void)arg;
	for (long i = 0; i < rounds; i++) {
		wait_turn(1);
		shared_count++;
		pass_turn(0);
	}
	return NULL;
}

static void futex_ping_pong(void) {
	pthread_t t;
	double t0 = now_s();
	shared_count = 0;
	atomic_store(&turn, 0);
	pthread_create(&t, NULL, ponger, NULL);
	for (long i = 0; i < rounds; i++) {
		wait_turn(0);
		shared_count++;
		pass_turn(1);
	}
	wait_turn(0);
	pthread_join(t, NULL);
	char what[120];
	snprintf(what, sizeof what, "futex ping-pong: %ld round trips in %.2f s, count %ld (want %ld)",
		 rounds, now_s() - t0, shared_count, 2 * rounds);
	check(shared_count == 2 * rounds, what);
}

/* --- pipe ping-pong between a parent and a child */
static void pipe_ping_pong(long rounds) {
	int a[2], b[2];
	if (pipe(a) || pipe(b)) {
		check(0, "pipe ping-pong: pipe");
		return;
	}
	double t0 = now_s();
	pid_t pid = fork();
	if (pid == 0) {
		unsigned char c;
		for (long i = 0; i < rounds; i++) {
			if (read(a[0], &c, 1) != 1)
				_exit(2);
			c++;
			if (write(b[1], &c, 1) != 1)
				_exit(3);
		}
		_exit(0);
	}
	unsigned char c = 0, want = 0;
	int ok = 1;
	for (long i = 0; i < rounds && ok; i++) {
		want = (unsigned char)(c + 1);
		if (write(a[1], &c, 1) != 1 || read(b[0], &c, 1) != 1 || c != want)
			ok = 0;
	}
	int st = -1;
	waitpid(pid, &st, 0);
	close(a[0]), close(a[1]), close(b[0]), close(b[1]);
	char what[120];
	snprintf(what, sizeof what, "pipe ping-pong: %ld round trips in %.2f s, child status %d", rounds,
		 now_s() - t0, st);
	check(ok && WIFEXITED(st) && WEXITSTATUS(st) == 0, what);
}

/* --- fork/exit storm */
#define STORM_PROCS 4
#define STORM_CHILDREN 60
static void fork_storm(void) {
	double t0 = now_s();
	pid_t procs[STORM_PROCS];
	for (int p = 0; p < STORM_PROCS; p++) {
		procs[p] = fork();
		if (procs[p] == 0) {
			/* A page the children change copy-on-write. */
			static unsigned char page[4096];
			memset(page, p + 1, sizeof page);
			for (int c = 0; c < STORM_CHILDREN; c++) {
				pid_t k = fork();
				if (k == 0) {
					unsigned sum = 0;
					for (size_t i = 0; i < sizeof page; i++) {
						page[i] = (unsigned char)(page[i] + c);
						sum += page[i];
					}
					_exit(sum % 251);
				}
				if (k < 0)
					_exit(10);
				int st;
				if (waitpid(k, &st, 0) != k || !WIFEXITED(st))
					_exit(11);
				unsigned want = (unsigned)((unsigned char)(p + 1 + c)) * 4096u % 251;
				if ((unsigned)WEXITSTATUS(st) != want)
					_exit(12);
			}
			for (size_t i = 0; i < sizeof page; i++)
				if (page[i] != p + 1)
					_exit(13);
			_exit(0);
		}
	}
	int bad = 0;
	for (int p = 0; p < STORM_PROCS; p++) {
		int st;
		if (procs[p] < 0 || waitpid(procs[p], &st, 0) != procs[p] || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 0)
			bad++;
	}
	char what[120];
	snprintf(what, sizeof what, "fork/exit storm: %d processes x %d children in %.2f s, %d failed",
		 STORM_PROCS, STORM_CHILDREN, now_s() - t0, bad);
	check(bad == 0, what);
}

/* --- reads that meet a busy process: sibling threads pread /proc/version (a read the kernel
 * first tries without its big lock, then turns down: not a dbfs file) while the main thread
 * maps, touches and unmaps 16 MiB, holding the process's state while it does. A read that
 * waited for that state took the big kernel lock meanwhile; the kernel must then go on with
 * the lock it has (a hart that asked for it again waited for itself, and every hart for it). */
#define BUSY_READERS 3
#define BUSY_ROUNDS 30
#define BUSY_THREADS 1000
static atomic_int busy_quit;
static atomic_long busy_reads, busy_bad;
static char busy_want[8];
static void *busy_reader(void *arg) {
	(void)arg;
	int fd = open("/proc/version", O_RDONLY);
	if (fd < 0) {
		busy_bad++;
		return NULL;
	}
	char b[8];
	while (!busy_quit) {
		memset(b, 0, sizeof b);
		if (pread(fd, b, sizeof b, 0) != sizeof b || memcmp(b, busy_want, sizeof b) != 0)
			busy_bad++;
		busy_reads++;
	}
	close(fd);
	return NULL;
}

static void *busy_nothing(void *arg) {
	return arg;
}

static void reads_meet_busy_process(void) {
	double t0 = now_s();
	pthread_t th[BUSY_READERS];
	int started = 0, bad_maps = 0;
	int fd = open("/proc/version", O_RDONLY);
	if (fd < 0 || pread(fd, busy_want, sizeof busy_want, 0) != sizeof busy_want) {
		check(0, "reads meet a busy process: /proc/version cannot be read");
		return;
	}
	close(fd);
	for (; started < BUSY_READERS; started++)
		if (pthread_create(&th[started], NULL, busy_reader, NULL) != 0)
			break;
	size_t len = 16 << 20;
	for (int r = 0; r < BUSY_ROUNDS; r++) {
		unsigned char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED) {
			bad_maps++;
			continue;
		}
		for (size_t i = 0; i < len; i += 4096)
			m[i] = (unsigned char)r;
		if (munmap(m, len) != 0)
			bad_maps++;
	}
	/* Threads that start and end beside the readers: each start and exit changes the
	 * process's thread list, which a reader's call may hold a moment on another hart, and
	 * a thread that ends at once may end before its start has returned (its tid word, which
	 * pthread_join waits on, must still read 0 then). A join that waits 20 s counts as bad. */
	int bad_threads = 0;
	for (int r = 0; r < BUSY_THREADS; r++) {
		pthread_t t;
		struct timespec until;
		if (pthread_create(&t, NULL, busy_nothing, NULL) != 0) {
			bad_threads++;
			continue;
		}
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 20;
		if (pthread_timedjoin_np(t, NULL, &until) != 0) {
			bad_threads++;
			break; /* the thread's tid word is lost: a join would never return */
		}
	}
	busy_quit = 1;
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	char what[600];
	snprintf(what, sizeof what,
		 "reads meet a busy process: %d threads, %ld reads of /proc/version beside %d maps of 16 MiB and %d threads started and joined in %.2f s, %ld bad reads, %d bad maps, %d bad threads",
		 started, (long)busy_reads, BUSY_ROUNDS, BUSY_THREADS, now_s() - t0, (long)busy_bad, bad_maps, bad_threads);
	check(started == BUSY_READERS && busy_reads > 0 && busy_bad == 0 && bad_maps == 0 && bad_threads == 0, what);
}

/* --- munmap under writers: WRITERS sibling threads store into a mapping without pause (each
 * on a hart of its own when there are enough) while the main thread unmaps it. */
#define MAP_PAGES 16
#define WRITERS 3
static _Atomic(unsigned long *) target;
static atomic_long stores, writer_stores[WRITERS + 1];
static atomic_int faulted, writer_go, writer_quit, writers_waiting;
static __thread sigjmp_buf writer_jmp;
static __thread int writer_faulted;

static void on_segv(int sig) {
	(void)sig;
	if (!writer_faulted) {
		writer_faulted = 1;
		atomic_fetch_add(&faulted, 1);
	}
	siglongjmp(writer_jmp, 1);
}

static void *writer(void *arg) {
	unsigned long mine = (unsigned long)arg;
	sigsetjmp(writer_jmp, 1);
	for (;;) {
		atomic_fetch_add(&writers_waiting, 1);
		while (!atomic_load(&writer_go))
			if (atomic_load(&writer_quit))
				return NULL;
		atomic_fetch_sub(&writers_waiting, 1);
		writer_faulted = 0;
		unsigned long *p = atomic_load(&target);
		/* Each writer its own word of every page. */
		for (unsigned long i = mine;; i = (i + 512) % (MAP_PAGES * 512)) {
			p[i] = 0x5a5a5a5a5a5a5a5aul;
			atomic_fetch_add(&stores, 1);
			atomic_fetch_add_explicit(&writer_stores[mine], 1, memory_order_relaxed);
		}
	}
}

static void munmap_under_writer(int tries) {
	pthread_t t[WRITERS];
	struct sigaction sa = {0};
	sa.sa_handler = on_segv;
	sa.sa_flags = SA_NODEFER;
	sigaction(SIGSEGV, &sa, NULL);
	for (long w = 0; w < WRITERS; w++)
		pthread_create(&t[w], NULL, writer, (void *)(w + 1));
	int late_stores = 0, no_fault = 0, dirty = 0;
	size_t len = MAP_PAGES * 4096;
	for (int k = 0; k < tries; k++) {
		while (atomic_load(&writers_waiting) != WRITERS)
			;
		unsigned long *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		atomic_store(&target, m);
		atomic_store(&faulted, 0);
		atomic_store(&stores, 0);
		for (int w = 1; w <= WRITERS; w++)
			atomic_store(&writer_stores[w], 0);
		atomic_store(&writer_go, 1);
		/* Let every writer run on its hart with the pages in its TLB. */
		for (int w = 1; w <= WRITERS; w++)
			while (atomic_load(&writer_stores[w]) < 5000)
				;
		atomic_store(&writer_go, 0); /* seen after their faults: they wait for the next round */
		munmap(m, len);
		long at_unmap = atomic_load(&stores);
		double t0 = now_s();
		while (atomic_load(&faulted) < WRITERS && now_s() - t0 < 5.0)
			;
		long after = atomic_load(&stores);
		if (atomic_load(&faulted) < WRITERS)
			no_fault++;
		/* One store per writer may have been under way when munmap returned. */
		if (after - at_unmap > WRITERS)
			late_stores++;
		/* Fresh memory (likely the frames just freed) must hold zeros. */
		unsigned char *n = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		for (size_t i = 0; i < len; i += 4096)
			n[i + 8] = 1; /* fault every page in */
		for (size_t i = 0; i < len; i++)
			if (n[i] != (i % 4096 == 8))
				dirty++;
		munmap(n, len);
	}
	atomic_store(&writer_quit, 1);
	for (int w = 0; w < WRITERS; w++)
		pthread_join(t[w], NULL);
	char what[200];
	snprintf(what, sizeof what,
		 "munmap under %d writers: %d rounds, %d without every writer's fault, %d with stores "
		 "after munmap, %d bad bytes in fresh memory",
		 WRITERS, tries, no_fault, late_stores, dirty);
	check(no_fault == 0 && late_stores == 0 && dirty == 0, what);
}

/* --- munmap under readers: 3 sibling threads pread a dbfs file into their own part of a
 * mapping without pause (on a kernel whose dbfs reads run without its big lock, on their own
 * harts) while the main thread unmaps it. Every read that succeeds must return the file's
 * bytes; munmap must wait for the reads under way into those pages (a read finishing after
 * munmap returned may have copied into a freed frame), so after munmap returns at most one
 * read per reader (between its return and its count) may still complete; each reader's next
 * read must fail with EFAULT, and memory mapped afterwards must read as zeros.
 * With `rw_writes` set, the threads pwrite the file's own bytes from the mapping instead
 * (dbfs's small writes also run without the big lock): a write finishing after munmap
 * returned may have copied from a freed frame, which the main thread fills with 0xee at
 * once, so the file must hold its pattern at the end. */
#define READERS 3
#define READER_PAGES 32
static _Atomic(unsigned char *) rtarget;
static atomic_int reader_go, reader_quit, readers_waiting, readers_faulted;
static atomic_long reads_done, bad_reads, reader_reads[READERS];
static int reader_fd, rw_writes;

static __thread sigjmp_buf reader_jmp;

static unsigned char pattern(size_t i) { return (unsigned char)(i * 7 % 251 + 1); }

/* A reader checking bytes a read just put into the mapping finds it unmapped: as EFAULT. */
static void on_reader_segv(int sig) {
	(void)sig;
	siglongjmp(reader_jmp, 1);
}

static void *reader(void *arg) {
	long me = (long)arg;
	for (;;) {
		atomic_fetch_add(&readers_waiting, 1);
		while (!atomic_load(&reader_go))
			if (atomic_load(&reader_quit))
				return NULL;
		atomic_fetch_sub(&readers_waiting, 1);
		unsigned char *buf = atomic_load(&rtarget) + me * READER_PAGES * 4096;
		if (sigsetjmp(reader_jmp, 1)) {
			atomic_fetch_add(&readers_faulted, 1);
			goto done;
		}
		for (long k = 0;; k++) {
			/* 4 KiB, 64 KiB and 128 KiB reads: the small path, a read through the window,
			 * and one from the disk straight into the mapping (sent without the big lock,
			 * waited for under it); 4 and 32 KiB writes of the region's bytes at their own
			 * offset. */
			size_t len = rw_writes ? (k % 2 ? 4096 : 8 * 4096)
				     : k % 3 == 0 ? 4096
				     : k % 3 == 1 ? 16 * 4096
						  : READER_PAGES * 4096;
			off_t off = (k * 4096) % ((READER_PAGES - (rw_writes ? 8 : 0)) * 4096);
			ssize_t r = rw_writes ? pwrite(reader_fd, buf + off, len, off)
					      : pread(reader_fd, buf, len, off);
			if (r < 0) {
				if (errno != EFAULT)
					atomic_fetch_add(&bad_reads, 1);
				atomic_fetch_add(&readers_faulted, 1);
				break;
			}
			/* Counted as it returns: the check below may outlast the munmap. */
			atomic_fetch_add(&reads_done, 1);
			for (ssize_t i = 0; i < r && !rw_writes; i++)
				if (buf[i] != pattern(off + i)) {
					atomic_fetch_add(&bad_reads, 1);
					break;
				}
			atomic_fetch_add_explicit(&reader_reads[me], 1, memory_order_relaxed);
		}
	done:
		while (atomic_load(&reader_go))
			;
	}
}

static void munmap_under_readers(const char *dir, int tries, int writes) {
	const char *who = writes ? "file writers" : "readers";
	rw_writes = writes;
	atomic_store(&reads_done, 0);
	atomic_store(&bad_reads, 0);
	atomic_store(&reader_quit, 0);
	atomic_store(&readers_waiting, 0);
	char path[512];
	snprintf(path, sizeof path, "%s/smp-unmap-%s", dir, writes ? "writers" : "readers");
	size_t flen = 2 * READER_PAGES * 4096;
	unsigned char *data = malloc(flen);
	for (size_t i = 0; i < flen; i++)
		data[i] = pattern(i);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	/* Committed, so that the large reads go from the disk into the mapping. */
	if (fd < 0 || write(fd, data, flen) != (ssize_t)flen || fsync(fd) != 0) {
		check(0, "munmap under readers or writers: file written");
		return;
	}
	free(data);
	reader_fd = fd;
	struct sigaction sa = {0};
	sa.sa_handler = on_reader_segv;
	sa.sa_flags = SA_NODEFER;
	sigaction(SIGSEGV, &sa, NULL);
	pthread_t t[READERS];
	for (long r = 0; r < READERS; r++)
		pthread_create(&t[r], NULL, reader, (void *)r);
	int late_reads = 0, no_fault = 0, dirty = 0;
	size_t len = READERS * READER_PAGES * 4096;
	for (int k = 0; k < tries; k++) {
		while (atomic_load(&readers_waiting) != READERS)
			;
		unsigned char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		/* Every page mapped writable: the calls need no fault. A writer's region holds
		 * the file's bytes at their offsets. */
		for (size_t i = 0; i < len; i++)
			m[i] = writes ? pattern(i % (READER_PAGES * 4096)) : 0;
		atomic_store(&rtarget, m);
		atomic_store(&readers_faulted, 0);
		for (int r = 0; r < READERS; r++)
			atomic_store(&reader_reads[r], 0);
		atomic_store(&reader_go, 1);
		for (int r = 0; r < READERS; r++)
			while (atomic_load(&reader_reads[r]) < 50)
				;
		/* Frames just freed are likely the ones fresh memory gets: a write still copying
		 * from them would put these bytes into the file. Its addresses are taken before
		 * the munmap, so that they are not the old ones (where the threads would find
		 * memory again). */
		unsigned char *reuse = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		munmap(m, len);
		long at_unmap = atomic_load(&reads_done);
		if (writes) {
			mprotect(reuse, len, PROT_READ | PROT_WRITE);
			memset(reuse, 0xee, len);
		}
		double t0 = now_s();
		while (atomic_load(&readers_faulted) < READERS && now_s() - t0 < 5.0)
			;
		long after = atomic_load(&reads_done);
		munmap(reuse, len);
		if (atomic_load(&readers_faulted) < READERS)
			no_fault++;
		if (after - at_unmap > READERS)
			late_reads++;
		atomic_store(&reader_go, 0);
		unsigned char *n = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		for (size_t i = 0; i < len; i += 4096)
			n[i + 8] = 1;
		for (size_t i = 0; i < len; i++)
			if (n[i] != (i % 4096 == 8))
				dirty++;
		munmap(n, len);
	}
	atomic_store(&reader_quit, 1);
	for (int r = 0; r < READERS; r++)
		pthread_join(t[r], NULL);
	/* The writers' file: its pattern, every byte. */
	if (writes) {
		unsigned char *back = malloc(flen);
		if (pread(fd, back, flen, 0) != (ssize_t)flen)
			atomic_fetch_add(&bad_reads, 1);
		else
			for (size_t i = 0; i < flen; i++)
				if (back[i] != pattern(i)) {
					atomic_fetch_add(&bad_reads, 1);
					break;
				}
		free(back);
	}
	close(fd);
	unlink(path);
	char what[240];
	snprintf(what, sizeof what,
		 "munmap under %d %s of a file in %s: %d rounds, %ld calls, %ld with wrong bytes or "
		 "errors, %d without every thread's EFAULT, %d with calls done after munmap, %d bad "
		 "bytes in fresh memory",
		 READERS, who, dir, tries, atomic_load(&reads_done), atomic_load(&bad_reads), no_fault,
		 late_reads, dirty);
	check(atomic_load(&bad_reads) == 0 && no_fault == 0 && late_reads == 0 && dirty == 0, what);
}

/* --- a signal to a thread spinning in user code on another hart must arrive at once (an IPI),
 * not at that hart's next timer tick (10 ms). Measured in the spinner's own loop turns after
 * pthread_kill returned, not in wall time: on a loaded host QEMU's thread for the spinner's
 * hart is often off the host CPU, and then its hart neither spins nor takes anything until it
 * is back (the overdue tick comes first). A round where the spinner went on for more than
 * half a millisecond of its own running (its fastest rate seen) is late; none may be. */
static atomic_int spin_quit;
static atomic_long spins, spins_at_signal;

static long now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static void on_usr1(int sig) {
	(void)sig;
	atomic_store(&spins_at_signal, atomic_load_explicit(&spins, memory_order_relaxed));
}

static void *spinner(void *arg) {
	(void)arg;
	for (long n = 1; !atomic_load_explicit(&spin_quit, memory_order_relaxed); n++)
		atomic_store_explicit(&spins, n, memory_order_relaxed);
	return NULL;
}

static int cmp_long(const void *a, const void *b) {
	long x = *(const long *)a, y = *(const long *)b;
	return x < y ? -1 : x > y;
}

#define SIG_ROUNDS 100
static void signal_to_spinner(long harts) {
	if (harts < 2) {
		printf("skip signal to a spinning thread: one hart\n");
		return;
	}
	struct sigaction sa = {0};
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	pthread_t t;
	pthread_create(&t, NULL, spinner, NULL);
	while (!atomic_load(&spins))
		;
	long turns[SIG_ROUNDS], wall[SIG_ROUNDS];
	double per_ms = 0;
	int lost = 0;
	for (int i = 0; i < SIG_ROUNDS; i++) {
		/* 3 ms of the spinner running: its rate, and it is back in user code. */
		long t0 = now_ns(), s0 = atomic_load(&spins);
		while (now_ns() - t0 < 3000000)
			;
		double rate = (atomic_load(&spins) - s0) / ((now_ns() - t0) / 1e6);
		if (rate > per_ms)
			per_ms = rate;
		atomic_store(&spins_at_signal, 0);
		t0 = now_ns();
		pthread_kill(t, SIGUSR1);
		long sent = atomic_load(&spins);
		while (!atomic_load(&spins_at_signal) && now_ns() - t0 < 2000000000L)
			;
		long at = atomic_load(&spins_at_signal);
		wall[i] = now_ns() - t0;
		if (!at)
			lost++;
		turns[i] = !at ? 1L << 40 : at > sent ? at - sent : 0;
	}
	int late = 0;
	for (int i = 0; i < SIG_ROUNDS; i++)
		late += turns[i] > per_ms / 2;
	atomic_store(&spin_quit, 1);
	pthread_join(t, NULL);
	qsort(turns, SIG_ROUNDS, sizeof turns[0], cmp_long);
	qsort(wall, SIG_ROUNDS, sizeof wall[0], cmp_long);
	char what[240];
	snprintf(what, sizeof what,
		 "signal to a thread spinning on another hart: %d rounds, %d late, at most %.3f ms of "
		 "its spinning after the kill (%.0f turns a ms), seen after %.2f ms (median, wall), "
		 "%d lost",
		 SIG_ROUNDS, late, turns[SIG_ROUNDS - 1] / per_ms, per_ms, wall[SIG_ROUNDS / 2] / 1e6,
		 lost);
	check(lost == 0 && late == 0, what);
}

/* --- pinned threads: thread i pinned to hart i (sched_setaffinity), all spinning and
 * yielding at once; each counts the turns on which sched_getcpu named another hart. */
#define PIN_TURNS 2000
static atomic_int pin_go;
static void *pinned(void *arg) {
	long hart = (long)arg, wrong = 0;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(hart, &set);
	if (sched_setaffinity(0, sizeof set, &set) != 0)
		return (void *)-1L;
	/* Moved before sched_setaffinity returned. */
	wrong += sched_getcpu() != hart;
	while (!atomic_load(&pin_go))
		sched_yield();
	for (int i = 0; i < PIN_TURNS; i++) {
		wrong += sched_getcpu() != hart;
		if (i % 16 == 0)
			sched_yield();
	}
	cpu_set_t got;
	if (sched_getaffinity(0, sizeof got, &got) != 0 || !CPU_EQUAL(&got, &set))
		wrong += 1000000;
	/* A child keeps the mask (fork copies the calling thread's). */
	pid_t pid = fork();
	if (pid == 0) {
		cpu_set_t c;
		_exit(sched_getaffinity(0, sizeof c, &c) != 0 || !CPU_EQUAL(&c, &set) ||
		      sched_getcpu() != hart);
	}
	int st = 0;
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		wrong += 1000000;
	return (void *)wrong;
}

static void pinned_threads(long harts) {
	if (harts > 16)
		harts = 16;
	pthread_t t[16];
	atomic_store(&pin_go, 0);
	for (long i = 0; i < harts; i++)
		pthread_create(&t[i], NULL, pinned, (void *)i);
	atomic_store(&pin_go, 1);
	long wrong = 0, failed_calls = 0;
	for (long i = 0; i < harts; i++) {
		void *r;
		pthread_join(t[i], &r);
		if ((long)r < 0)
			failed_calls++;
		else
			wrong += (long)r;
	}
	char what[200];
	snprintf(what, sizeof what,
		 "%ld threads each pinned to its own hart: %ld turns off their hart, %ld failed "
		 "sched_setaffinity calls",
		 harts, wrong, failed_calls);
	check(wrong == 0 && failed_calls == 0, what);
}

/* --- 4 writer and 4 reader processes on one directory (of a dbfs mount: argv[2]). Writers
 * create files under a temporary name, fill them with a pattern of the file's own, fsync some
 * and rename them to their final name; readers list the directory without pause and check
 * every final file they open, whole. At the end every file is checked once more. */
#define DIR_PROCS 4
#define DIR_FILES 40
static unsigned char dir_byte(int w, int f, size_t i) {
	return (unsigned char)(w * 31 + f * 7 + i * 13 + (i >> 9));
}
static size_t dir_len(int w, int f) {
	return 1000 + (size_t)((w * 5077 + f * 3001) % 20000);
}
static int dir_check_file(const char *path, int w, int f) {
	static __thread unsigned char buf[24000];
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1; /* renamed away meanwhile: not there is fine */
	size_t want = dir_len(w, f), got = 0;
	ssize_t r;
	while ((r = read(fd, buf + got, sizeof buf - got)) > 0)
		got += r;
	close(fd);
	if (r < 0 || got != want)
		return -1;
	for (size_t i = 0; i < want; i++)
		if (buf[i] != dir_byte(w, f, i))
			return -1;
	return 1;
}

static void dir_writers_readers(const char *base) {
	char dir[200];
	snprintf(dir, sizeof dir, "%s/smpdir.%d", base, (int)getpid());
	if (mkdir(dir, 0755)) {
		check(0, "writers and readers on one directory: mkdir");
		return;
	}
	atomic_int *done = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	double t0 = now_s();
	pid_t pids[2 * DIR_PROCS];
	for (int p = 0; p < 2 * DIR_PROCS; p++) {
		pids[p] = fork();
		if (pids[p] != 0)
			continue;
		if (p < DIR_PROCS) {
			static unsigned char buf[24000];
			char tmp[260], fin[260];
			for (int f = 0; f < DIR_FILES; f++) {
				size_t len = dir_len(p, f);
				for (size_t i = 0; i < len; i++)
					buf[i] = dir_byte(p, f, i);
				snprintf(tmp, sizeof tmp, "%s/.tmp-%d-%d", dir, p, f);
				snprintf(fin, sizeof fin, "%s/w%d-f%d", dir, p, f);
				int fd = open(tmp, O_CREAT | O_WRONLY | O_TRUNC, 0644);
				if (fd < 0)
					_exit(20);
				/* In two pieces: a reader must never see the first alone. */
				if (write(fd, buf, len / 2) != (ssize_t)(len / 2) ||
				    write(fd, buf + len / 2, len - len / 2) != (ssize_t)(len - len / 2))
					_exit(21);
				if (f % 8 == 0 && fsync(fd))
					_exit(22);
				close(fd);
				if (rename(tmp, fin))
					_exit(23);
			}
			_exit(0);
		}
		/* A reader. */
		long seen = 0;
		int bad = 0;
		while (!atomic_load(done) && !bad) {
			DIR *d = opendir(dir);
			if (!d)
				_exit(30);
			struct dirent *e;
			while ((e = readdir(d))) {
				int w, f;
				if (sscanf(e->d_name, "w%d-f%d", &w, &f) != 2)
					continue;
				char path[300];
				snprintf(path, sizeof path, "%s/w%d-f%d", dir, w, f);
				int r = dir_check_file(path, w, f);
				if (r < 0) {
					printf("reader %d: %s wrong\n", p - DIR_PROCS, path);
					bad = 1;
					break;
				}
				seen += r;
			}
			closedir(d);
		}
		_exit(bad ? 31 : seen > 0 ? 0 : 32);
	}
	int bad = 0;
	for (int p = 0; p < DIR_PROCS; p++) {
		int st;
		if (pids[p] < 0 || waitpid(pids[p], &st, 0) != pids[p] || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 0) {
			printf("writer %d: status %#x\n", p, st);
			bad++;
		}
	}
	atomic_store(done, 1);
	for (int p = DIR_PROCS; p < 2 * DIR_PROCS; p++) {
		int st;
		if (pids[p] < 0 || waitpid(pids[p], &st, 0) != pids[p] || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 0) {
			printf("reader %d: status %#x\n", p - DIR_PROCS, st);
			bad++;
		}
	}
	/* Every file there, whole; nothing else left. */
	int files = 0, wrong = 0;
	for (int w = 0; w < DIR_PROCS; w++)
		for (int f = 0; f < DIR_FILES; f++) {
			char path[300];
			snprintf(path, sizeof path, "%s/w%d-f%d", dir, w, f);
			if (dir_check_file(path, w, f) == 1)
				files++;
			else
				wrong++;
			unlink(path);
		}
	int extra = 0;
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			extra++;
	if (d)
		closedir(d);
	rmdir(dir);
	char what[200];
	snprintf(what, sizeof what,
		 "%d writers and %d readers on %s: %d files in %.2f s, %d wrong or missing, %d extra, "
		 "%d processes failed",
		 DIR_PROCS, DIR_PROCS, base, files, now_s() - t0, wrong, extra, bad);
	check(bad == 0 && wrong == 0 && extra == 0, what);
}

/* Large writers: LW_PROCS processes, each LW_ROUNDS writes of up to 1.5 MiB at odd offsets
 * into an LW_SPAN region of a file (process p's own file for p >= 2; processes 0 and 1 write
 * disjoint halves of one shared file). Each write's bytes depend on the process and the round,
 * every fourth write is followed by fsync, and each process keeps what its region must hold;
 * the files are checked against that at the end. */
#define LW_PROCS 4
#define LW_ROUNDS 24
#define LW_SPAN (4 << 20)

static unsigned char lw_byte(int p, int round, size_t i) {
	return (unsigned char)(i * 131 + i / 4096 * 7 + (size_t)round * 29 + (size_t)p * 101 + 1);
}

static void large_writers(const char *base) {
	char shared[200];
	snprintf(shared, sizeof shared, "%s/lw-shared.%d", base, (int)getpid());
	unlink(shared);
	double t0 = now_s();
	pid_t pids[LW_PROCS];
	for (int p = 0; p < LW_PROCS; p++) {
		pids[p] = fork();
		if (pids[p] != 0)
			continue;
		char path[220];
		if (p < 2)
			snprintf(path, sizeof path, "%s", shared);
		else
			snprintf(path, sizeof path, "%s/lw-%d.%d", base, p, (int)getppid());
		int fd = open(path, O_CREAT | O_RDWR, 0644);
		/* The region this process owns: half of the shared file each, or a whole file. */
		off_t at0 = p == 1 ? LW_SPAN : 0;
		unsigned char *model = calloc(LW_SPAN, 1);
		unsigned char *buf = malloc((3 << 20) / 2 + 4096);
		if (fd < 0 || !model || !buf)
			_exit(40);
		unsigned seed = 12345u + (unsigned)p * 7919u;
		for (int r = 0; r < LW_ROUNDS; r++) {
			seed = seed * 1103515245u + 12345u;
			size_t len = 128 * 1024 + (seed >> 8) % ((3 << 20) / 2 - 128 * 1024);
			seed = seed * 1103515245u + 12345u;
			size_t off = (seed >> 8) % (LW_SPAN - len);
			if (r % 3 == 0)
				off &= ~(size_t)0xffff; /* whole chunks from the start */
			/* The buffer starts inside a page on odd rounds, as malloc'ed ones do. */
			unsigned char *src = buf + (r % 2 ? 100 : 0);
			for (size_t i = 0; i < len; i++)
				src[i] = lw_byte(p, r, off + i);
			if (pwrite(fd, src, len, at0 + (off_t)off) != (ssize_t)len)
				_exit(41);
			memcpy(model + off, src, len);
			if (r % 4 == 3 && fsync(fd))
				_exit(42);
		}
		/* Read back this process's region (for the shared file, only its half). */
		unsigned char *got = malloc(LW_SPAN);
		if (!got || pread(fd, got, LW_SPAN, at0) < 0)
			_exit(43);
		struct stat st;
		fstat(fd, &st);
		size_t have = st.st_size > at0 ? (size_t)(st.st_size - at0) : 0;
		if (have > LW_SPAN)
			have = LW_SPAN;
		for (size_t i = 0; i < LW_SPAN; i++)
			if ((i < have ? got[i] : 0) != model[i])
				_exit(44);
		close(fd);
		if (p >= 2)
			unlink(path);
		_exit(0);
	}
	int bad = 0;
	for (int p = 0; p < LW_PROCS; p++) {
		int status;
		if (waitpid(pids[p], &status, 0) != pids[p] || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0) {
			printf("large writer %d: status %#x\n", p, status);
			bad++;
		}
	}
	unlink(shared);
	char what[200];
	snprintf(what, sizeof what,
		 "%d large writers (2 files of their own, 1 shared by two) on %s: %d x %d writes "
		 "of 128 KiB-1.5 MiB in %.2f s, %d processes failed or read wrong bytes",
		 LW_PROCS, base, LW_PROCS, LW_ROUNDS, now_s() - t0, bad);
	check(bad == 0, what);
}

#define PR_PROCS 1
#define PR_SIZE (64 << 20)
#define PR_SECS 4.0
#define PR_ROUNDS 3

/* Page `pg` of process p's file in `round`: a byte of its own in every position but the
 * first 8, which hold the page's number and the round (a chunk read from the wrong place shows
 * up in either). Cheap to make and check, so the processes spend their time in read(2). */
static void pr_fill(unsigned char *page, int p, int round, size_t pg) {
	memset(page, (int)((pg * 7 + (size_t)round * 31 + (size_t)p * 97 + 3) & 0xff), 4096);
	unsigned stamp[2] = {(unsigned)pg, (unsigned)(round * PR_PROCS + p)};
	memcpy(page, stamp, sizeof stamp);
}

static int pr_ok(const unsigned char *page, int p, int round, size_t pg) {
	unsigned char want[4096];
	pr_fill(want, p, round, pg);
	return memcmp(page, want, 4096) == 0;
}

static void reads_before_writeback(const char *base) {
	double t0 = now_s();
	pid_t pids[PR_PROCS];
	for (int p = 0; p < PR_PROCS; p++) {
		pids[p] = fork();
		if (pids[p] != 0)
			continue;
		/* Page-aligned buffers, as fio's. */
		unsigned char *buf = NULL, *got = NULL;
		if (posix_memalign((void **)&buf, 4096, 1 << 20) || posix_memalign((void **)&got, 4096, 1 << 20))
			_exit(50);
		long reads = 0;
		char path[220];
		snprintf(path, sizeof path, "%s/pr-%d.%d", base, p, (int)getppid());
		int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0644);
		if (fd < 0)
			_exit(51);
		/* Laid out first, as fio does (the reads then also go through stored chunks). Each
		 * round rewrites it: its new chunks stay uncommitted until the write-back's timer
		 * commits them, in the middle of the reads. */
		if (posix_fallocate(fd, 0, PR_SIZE))
			_exit(56);
		for (int round = 0; round < PR_ROUNDS; round++) {
			for (size_t at = 0; at < PR_SIZE; at += 1 << 20) {
				for (size_t i = 0; i < 1 << 20; i += 4096)
					pr_fill(buf + i, p, round, (at + i) / 4096);
				if (pwrite(fd, buf, 1 << 20, (off_t)at) != 1 << 20)
					_exit(52);
			}
			/* Every pass's bytes are checked, but only one read in 8 of a pass after the
			 * first: reads back to back, so that the write-back finds dbfs's lock taken and
			 * taken again as a reader would in a loop. */
			double r0 = now_s();
			for (int pass = 0; now_s() - r0 < PR_SECS; pass++)
				for (size_t at = 0; at < PR_SIZE; at += 1 << 20) {
					if (pread(fd, got, 1 << 20, (off_t)at) != 1 << 20)
						_exit(53);
					if (pass == 0 || (at >> 20) % 8 == (size_t)pass % 8)
						for (size_t i = 0; i < 1 << 20; i += 4096)
							if (!pr_ok(got + i, p, round, (at + i) / 4096))
								_exit(54);
					reads++;
				}
		}
		close(fd);
		unlink(path);
		_exit(reads > 0 ? 0 : 55);
	}
	int bad = 0;
	for (int p = 0; p < PR_PROCS; p++) {
		int status;
		if (waitpid(pids[p], &status, 0) != pids[p] || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0) {
			printf("reader before the write-back %d: status %#x\n", p, status);
			bad++;
		}
	}
	char what[200];
	snprintf(what, sizeof what,
		 "%d process(es) each writing a %d MiB file %d times without fsync and reading it back "
		 "in 1 MiB pieces for %.0f s after each on %s (%.1f s): %d failed or read wrong bytes",
		 PR_PROCS, PR_SIZE >> 20, PR_ROUNDS, PR_SECS, base, now_s() - t0, bad);
	check(bad == 0, what);
}

/* --- reads again side by side: RA_PROCS processes each write a file of their own in 1 MiB
 * pieces and fsync it (so its chunks are stored, and large reads of them go through the disk
 * window), then all read their files RA_PASSES times together in 1 MiB reads: dbfs keeps the
 * pages of a stretch read again while another large read runs beside it, and copies later
 * reads out of memory. Each round rewrites the files (the new chunks land in pages the old
 * ones freed): a kept page the write did not drop would hand a reader the bytes of an
 * earlier round. Every read is checked; on dbfs-os with several harts the kernel's counters
 * (/proc/counters) must show pages kept and bytes copied from them. */
#define RA_PROCS 2
#define RA_SIZE (8 << 20)
#define RA_PASSES 6
#define RA_ROUNDS 3

/* A counter of /proc/counters, or -1 without it (Linux). */
static long long kernel_counter(const char *name) {
	FILE *f = fopen("/proc/counters", "r");
	if (!f)
		return -1;
	char key[64];
	long long v, found = -1;
	while (fscanf(f, "%63s %lld", key, &v) == 2)
		if (strcmp(key, name) == 0)
			found = v;
	fclose(f);
	return found;
}

static void reads_again_side_by_side(const char *base, long harts) {
	double t0 = now_s();
	long long kept0 = kernel_counter("window_kept_pages");
	long long cached0 = kernel_counter("window_cached_bytes");
	/* The processes meet before each round's reads: a count in shared memory. */
	atomic_int *met = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (met == MAP_FAILED) {
		check(0, "reads again side by side: mmap of the meeting count");
		return;
	}
	atomic_store(met, 0);
	pid_t pids[RA_PROCS];
	for (int p = 0; p < RA_PROCS; p++) {
		pids[p] = fork();
		if (pids[p] != 0)
			continue;
		unsigned char *buf = NULL, *got = NULL;
		if (posix_memalign((void **)&buf, 4096, 1 << 20) || posix_memalign((void **)&got, 4096, 1 << 20))
			_exit(60);
		char path[220];
		snprintf(path, sizeof path, "%s/ra-%d.%d", base, p, (int)getppid());
		int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0644);
		if (fd < 0)
			_exit(61);
		for (int round = 0; round < RA_ROUNDS; round++) {
			for (size_t at = 0; at < RA_SIZE; at += 1 << 20) {
				for (size_t i = 0; i < 1 << 20; i += 4096)
					pr_fill(buf + i, p + 8, round, (at + i) / 4096);
				if (pwrite(fd, buf, 1 << 20, (off_t)at) != 1 << 20)
					_exit(62);
			}
			if (fsync(fd))
				_exit(63);
			atomic_fetch_add(met, 1);
			while (atomic_load(met) < (round + 1) * RA_PROCS)
				sched_yield();
			for (int pass = 0; pass < RA_PASSES; pass++)
				for (size_t at = 0; at < RA_SIZE; at += 1 << 20) {
					if (pread(fd, got, 1 << 20, (off_t)at) != 1 << 20)
						_exit(64);
					for (size_t i = 0; i < 1 << 20; i += 4096)
						if (!pr_ok(got + i, p + 8, round, (at + i) / 4096))
							_exit(65);
				}
		}
		close(fd);
		unlink(path);
		_exit(0);
	}
	int bad = 0;
	for (int p = 0; p < RA_PROCS; p++) {
		int status;
		if (waitpid(pids[p], &status, 0) != pids[p] || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0) {
			printf("reader again %d: status %#x\n", p, status);
			bad++;
		}
	}
	munmap(met, 4096);
	long long kept = kernel_counter("window_kept_pages") - kept0;
	long long cached = kernel_counter("window_cached_bytes") - cached0;
	/* Kept pages are looked for where the kernel counts them and keeps them: dbfs-os with
	 * several harts and the default dbfs_keep_rereads. */
	FILE *k = fopen("/proc/sys/vm/dbfs_keep_rereads", "r");
	int keep = k && fgetc(k) == '1';
	if (k)
		fclose(k);
	int want_kept = kept0 >= 0 && harts > 1 && keep;
	char what[300];
	snprintf(what, sizeof what,
		 "%d processes each writing a %d MiB file %d times (fsync) and reading it %d times "
		 "side by side in 1 MiB reads on %s (%.1f s): %d failed or read wrong bytes; "
		 "%lld pages kept, %lld bytes copied from them%s",
		 RA_PROCS, RA_SIZE >> 20, RA_ROUNDS, RA_PASSES, base, now_s() - t0, bad, kept, cached,
		 want_kept ? "" : " (not looked for)");
	check(bad == 0 && (!want_kept || (kept > 0 && cached > 0)), what);
}

int main(int argc, char **argv) {
	rounds = argc > 1 ? atol(argv[1]) : 20000;
	const char *dir = argc > 2 ? argv[2] : NULL;
	alarm(600); /* a lost wake-up hangs: die of SIGALRM rather than for ever */
	long harts = sysconf(_SC_NPROCESSORS_ONLN);
	printf("smpstress: %ld harts online, %ld rounds\n", harts, rounds);
	futex_ping_pong();
	pipe_ping_pong(rounds / 10 >= 1000 ? rounds / 10 : rounds < 1000 ? rounds : 1000);
	fork_storm();
	munmap_under_writer(20);
	reads_meet_busy_process();
	signal_to_spinner(harts);
	pinned_threads(harts);
	if (dir) {
		dir_writers_readers(dir);
		large_writers(dir);
		reads_before_writeback(dir);
		reads_again_side_by_side(dir, harts);
		munmap_under_readers(dir, 20, 0);
		munmap_under_readers(dir, 20, 1);
	} else
		printf("skip writers and readers on one directory and munmap under readers and writers: no directory given\n");
	printf("smpstress: %d passed, %d failed\n", passed, failed);
	return failed != 0;
}
