/* smpstress: checks that fail on a kernel whose harts race (dbfs-os issue 44). Built static
 * for riscv64 by tools/thirdparty/fetch-build.sh, run by `make test-smp` (SMP=4) as
 * /bin/smpstress [rounds]. Each check also passes on one hart (and on Linux): what it looks for
 * only goes wrong when threads run on several harts at once.
 *  - futex ping-pong: two threads hand a turn back and forth with FUTEX_WAIT/FUTEX_WAKE; a
 *    lost wake-up hangs (the alarm fails the run), a turn taken twice breaks the count.
 *  - pipe ping-pong between two processes.
 *  - fork/exit storm: 4 processes each fork children that change a copy-on-write page and
 *    exit with a value computed from it; the parents' page must stay as it was.
 *  - munmap under a writer: a thread stores into a mapping without pause while its sibling
 *    unmaps it; after munmap returns the writer must fault (SIGSEGV) without another store
 *    landing (a stale TLB entry on its hart would let it go on writing into a freed frame),
 *    and memory mapped afterwards must read as zeros.
 * Prints one line per check and "smpstress: N passed, M failed". */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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
static void pipe_ping_pong(void) {
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

/* --- munmap under a writer */
#define MAP_PAGES 16
static _Atomic(unsigned long *) target;
static atomic_long stores;
static atomic_int faulted, writer_go, writer_quit;
static sigjmp_buf writer_jmp;

static void on_segv(int sig) {
	(void)sig;
	atomic_store(&faulted, 1);
	siglongjmp(writer_jmp, 1);
}

static void *writer(void *arg) {
	(void)arg;
	struct sigaction sa = {0};
	sa.sa_handler = on_segv;
	sigaction(SIGSEGV, &sa, NULL);
	sigsetjmp(writer_jmp, 1);
	for (;;) {
		while (!atomic_load(&writer_go))
			if (atomic_load(&writer_quit))
				return NULL;
		unsigned long *p = atomic_load(&target);
		for (unsigned long i = 0;; i = (i + 512) % (MAP_PAGES * 512)) {
			p[i] = 0x5a5a5a5a5a5a5a5aul;
			atomic_fetch_add(&stores, 1);
		}
	}
}

static void munmap_under_writer(int tries) {
	pthread_t t;
	pthread_create(&t, NULL, writer, NULL);
	int late_stores = 0, no_fault = 0, dirty = 0;
	size_t len = MAP_PAGES * 4096;
	for (int k = 0; k < tries; k++) {
		unsigned long *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		atomic_store(&target, m);
		atomic_store(&faulted, 0);
		atomic_store(&stores, 0);
		atomic_store(&writer_go, 1);
		/* Let the writer run on its hart with the pages in its TLB. */
		while (atomic_load(&stores) < 20000)
			;
		atomic_store(&writer_go, 0); /* seen after its fault: it waits for the next round */
		munmap(m, len);
		long at_unmap = atomic_load(&stores);
		double t0 = now_s();
		while (!atomic_load(&faulted) && now_s() - t0 < 2.0)
			;
		long after = atomic_load(&stores);
		if (!atomic_load(&faulted))
			no_fault++;
		/* One store may have been under way when munmap returned. */
		if (after - at_unmap > 1)
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
	pthread_join(t, NULL);
	char what[160];
	snprintf(what, sizeof what,
		 "munmap under a writer: %d rounds, %d without a fault, %d with stores after munmap, "
		 "%d bad bytes in fresh memory",
		 tries, no_fault, late_stores, dirty);
	check(no_fault == 0 && late_stores == 0 && dirty == 0, what);
}

int main(int argc, char **argv) {
	rounds = argc > 1 ? atol(argv[1]) : 20000;
	alarm(600); /* a lost wake-up hangs: die of SIGALRM rather than for ever */
	long harts = sysconf(_SC_NPROCESSORS_ONLN);
	printf("smpstress: %ld harts online, %ld rounds\n", harts, rounds);
	futex_ping_pong();
	pipe_ping_pong();
	fork_storm();
	munmap_under_writer(20);
	printf("smpstress: %d passed, %d failed\n", passed, failed);
	return failed != 0;
}
