/* threadtest: POSIX threads on dbfs-os, through glibc's pthreads (clone with CLONE_THREAD,
 * futexes, set_robust_list, tgkill, exit vs exit_group). Built static for riscv64 by
 * tools/thirdparty/fetch-build.sh and run by `make test-apps` as /bin/threadtest.
 * Prints one line per check and "threadtest: N passed, M failed". */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
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

static pid_t gettid_(void) { return (pid_t)syscall(SYS_gettid); }

/* --- a mutex under contention: N threads x M increments, exact total */
#define NTHREADS 4
#define INCREMENTS 20000
static pthread_mutex_t counter_lock = PTHREAD_MUTEX_INITIALIZER;
static long counter;

static void *incrementer(void *arg) {
	(void)arg;
	for (int i = 0; i < INCREMENTS; i++) {
		pthread_mutex_lock(&counter_lock);
		long v = counter;
		if (i % 512 == 0)
			sched_yield(); /* hold the lock across a switch now and then */
		counter = v + 1;
		pthread_mutex_unlock(&counter_lock);
	}
	return NULL;
}

static void test_mutex(void) {
	pthread_t t[NTHREADS];
	int ok = 1;
	for (int i = 0; i < NTHREADS; i++)
		ok &= pthread_create(&t[i], NULL, incrementer, NULL) == 0;
	for (int i = 0; i < NTHREADS; i++)
		ok &= pthread_join(t[i], NULL) == 0;
	check(ok && counter == (long)NTHREADS * INCREMENTS, "mutex: 4 threads x 20000 increments");
}

/* --- condition variables: a bounded buffer, 2 producers, 2 consumers */
#define SLOTS 4
#define ITEMS 2000
static pthread_mutex_t buf_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER, not_empty = PTHREAD_COND_INITIALIZER;
static long buf[SLOTS];
static int head, count, producers_left = 2;

static void *producer(void *arg) {
	long base = (long)arg;
	for (long i = 1; i <= ITEMS; i++) {
		pthread_mutex_lock(&buf_lock);
		while (count == SLOTS)
			pthread_cond_wait(&not_full, &buf_lock);
		buf[(head + count) % SLOTS] = base + i;
		count++;
		pthread_cond_signal(&not_empty);
		pthread_mutex_unlock(&buf_lock);
	}
	pthread_mutex_lock(&buf_lock);
	producers_left--;
	pthread_cond_broadcast(&not_empty);
	pthread_mutex_unlock(&buf_lock);
	return NULL;
}

static void *consumer(void *arg) {
	(void)arg;
	long sum = 0;
	for (;;) {
		pthread_mutex_lock(&buf_lock);
		while (count == 0 && producers_left > 0)
			pthread_cond_wait(&not_empty, &buf_lock);
		if (count == 0) {
			pthread_mutex_unlock(&buf_lock);
			return (void *)sum;
		}
		sum += buf[head];
		head = (head + 1) % SLOTS;
		count--;
		pthread_cond_signal(&not_full);
		pthread_mutex_unlock(&buf_lock);
	}
}

static void test_condvar(void) {
	pthread_t p[2], c[2];
	void *r0, *r1;
	pthread_create(&c[0], NULL, consumer, NULL);
	pthread_create(&c[1], NULL, consumer, NULL);
	pthread_create(&p[0], NULL, producer, (void *)0L);
	pthread_create(&p[1], NULL, producer, (void *)1000000L);
	pthread_join(p[0], NULL);
	pthread_join(p[1], NULL);
	pthread_join(c[0], &r0);
	pthread_join(c[1], &r1);
	long n = ITEMS;
	long want = 2 * (n * (n + 1) / 2) + 1000000L * n;
	check((long)r0 + (long)r1 == want, "condvar: producer/consumer, every item once");
}

/* --- pthread_join return values, gettid vs getpid */
static pid_t main_pid;
static void *returner(void *arg) {
	long i = (long)arg;
	pid_t tid = gettid_();
	if (getpid() != main_pid || tid == main_pid || tid <= 0)
		return (void *)-1L;
	return (void *)(i * 7 + 1);
}

static void test_join_and_ids(void) {
	pthread_t t[8];
	int ok = 1;
	for (long i = 0; i < 8; i++)
		ok &= pthread_create(&t[i], NULL, returner, (void *)i) == 0;
	for (long i = 0; i < 8; i++) {
		void *r;
		ok &= pthread_join(t[i], &r) == 0 && (long)r == i * 7 + 1;
	}
	check(ok, "join: return values; getpid same in threads, gettid distinct");
	check(gettid_() == getpid(), "gettid == getpid in the main thread");
}

/* --- a thread exits while others run */
static volatile int spin_stop;
static void *spinner(void *arg) {
	(void)arg;
	long n = 0;
	while (!spin_stop)
		n++, sched_yield();
	return (void *)7L;
}
static void *early_exit(void *arg) {
	(void)arg;
	pthread_exit((void *)5L);
}

static void test_thread_exit(void) {
	pthread_t s, e;
	void *rs, *re;
	pthread_create(&s, NULL, spinner, NULL);
	pthread_create(&e, NULL, early_exit, NULL);
	int ok = pthread_join(e, &re) == 0 && (long)re == 5;
	spin_stop = 1;
	ok &= pthread_join(s, &rs) == 0 && (long)rs == 7;
	check(ok, "pthread_exit in one thread while another runs");
	/* detached threads come and go */
	for (int i = 0; i < 16; i++) {
		pthread_t d;
		pthread_attr_t a;
		pthread_attr_init(&a);
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		ok &= pthread_create(&d, &a, early_exit, NULL) == 0;
	}
	usleep(100000);
	check(ok, "16 detached threads");
}

/* --- signals to one thread (pthread_kill = tgkill), and to the process (kill) */
static volatile pid_t handled_in;
static volatile int target_go;
static void on_usr(int sig) {
	(void)sig;
	handled_in = gettid_();
}
static volatile pid_t target_tid;
static void *sig_target(void *arg) {
	(void)arg;
	target_tid = gettid_();
	while (!handled_in && !target_go)
		usleep(1000);
	return NULL;
}

static void test_signals(void) {
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr;
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	pthread_t t;
	handled_in = 0;
	target_tid = 0;
	pthread_create(&t, NULL, sig_target, NULL);
	while (!target_tid)
		sched_yield();
	int ok = pthread_kill(t, SIGUSR1) == 0;
	pthread_join(t, NULL);
	check(ok && handled_in == target_tid, "pthread_kill: the handler runs in the target thread");

	/* kill() to the process while the main thread blocks the signal: the other takes it */
	sigset_t set, old;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	handled_in = 0;
	target_tid = 0;
	pthread_create(&t, NULL, sig_target, NULL);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	while (!target_tid)
		sched_yield();
	kill(getpid(), SIGUSR2);
	for (int i = 0; i < 2000 && !handled_in; i++)
		usleep(1000);
	target_go = 1;
	pthread_join(t, NULL);
	target_go = 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	check(handled_in == target_tid, "kill: a thread that does not block the signal takes it");
	check(syscall(SYS_tgkill, getpid(), 999999, 0) == -1 && errno == ESRCH,
	      "tgkill to a thread that does not exist: ESRCH");
}

/* --- in a forked child: what ends the whole process */
static void *segv_thread(void *arg) {
	(void)arg;
	usleep(10000);
	volatile int *volatile bad = (int *)8;
	*bad = 1;
	return NULL;
}
static void *sleeper(void *arg) {
	(void)arg;
	for (;;)
		pause();
	return NULL;
}
static void *exiter(void *arg) {
	(void)arg;
	usleep(20000);
	exit(42); /* exit_group */
}
static void *execer(void *arg) {
	(void)arg;
	usleep(20000);
	execl("/bin/sh", "sh", "-c", "exit 9", (char *)NULL);
	return NULL;
}

static int run_child(void *(*fn)(void *), int extra_sleepers) {
	pid_t pid = fork();
	if (pid == 0) {
		pthread_t t;
		for (int i = 0; i < extra_sleepers; i++)
			pthread_create(&t, NULL, sleeper, NULL);
		pthread_create(&t, NULL, fn, NULL);
		for (;;)
			pause();
	}
	int st = 0;
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return st;
}

static void test_group_end(void) {
	int st = run_child(segv_thread, 2);
	check(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "SIGSEGV in one thread kills the group");
	st = run_child(exiter, 2);
	check(WIFEXITED(st) && WEXITSTATUS(st) == 42, "exit (exit_group) from a thread ends all");
	st = run_child(execer, 2);
	check(WIFEXITED(st) && WEXITSTATUS(st) == 9, "execve from a thread ends the others");
	/* a thread is not a child: wait4 has nothing to wait for */
	pthread_t t;
	spin_stop = 0;
	pthread_create(&t, NULL, spinner, NULL);
	int r = waitpid(-1, &st, WNOHANG);
	check(r == -1 && errno == ECHILD, "wait4 does not see threads");
	spin_stop = 1;
	pthread_join(t, NULL);
}

/* --- a robust mutex whose owner exits */
static pthread_mutex_t robust;
static void *lock_and_exit(void *arg) {
	(void)arg;
	pthread_mutex_lock(&robust);
	return NULL;
}

static void test_robust(void) {
	pthread_mutexattr_t a;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(&robust, &a);
	pthread_t t;
	pthread_create(&t, NULL, lock_and_exit, NULL);
	pthread_join(t, NULL);
	int r = pthread_mutex_lock(&robust);
	int ok = r == EOWNERDEAD && pthread_mutex_consistent(&robust) == 0 &&
		 pthread_mutex_unlock(&robust) == 0;
	check(ok, "robust mutex: its owner's exit gives EOWNERDEAD");
}

/* --- too many threads: pthread_create fails cleanly (EAGAIN, or ENOMEM from the kernel heap),
 * and everything works again once they are gone */
#define BOMB_CAP 5000
static pthread_mutex_t bomb_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t bomb_go = PTHREAD_COND_INITIALIZER;
static int bomb_released;
static void *bomb_wait(void *arg) {
	(void)arg;
	pthread_mutex_lock(&bomb_lock);
	while (!bomb_released)
		pthread_cond_wait(&bomb_go, &bomb_lock);
	pthread_mutex_unlock(&bomb_lock);
	return NULL;
}

static void test_thread_bomb(void) {
	static pthread_t t[BOMB_CAP];
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 64 * 1024);
	int n = 0, err = 0;
	while (n < BOMB_CAP && (err = pthread_create(&t[n], &a, bomb_wait, NULL)) == 0)
		n++;
	printf("     thread bomb: %d threads, then %s\n", n, err ? strerror(err) : "the cap");
	pthread_mutex_lock(&bomb_lock);
	bomb_released = 1;
	pthread_cond_broadcast(&bomb_go);
	pthread_mutex_unlock(&bomb_lock);
	int ok = n > 100 && (err == EAGAIN || err == ENOMEM || n == BOMB_CAP);
	for (int i = 0; i < n; i++)
		ok &= pthread_join(t[i], NULL) == 0;
	pthread_t again;
	ok &= pthread_create(&again, NULL, returner, (void *)1L) == 0 && pthread_join(again, NULL) == 0;
	check(ok, "thread bomb: creation fails cleanly, and works again after");
}

/* A thread sleeping in read(2) on an empty pipe, its buffer unmapped by a sibling meanwhile:
 * the read must not write into the frame that backed the buffer (it may belong to anyone by
 * then). Linux answers EFAULT once the data arrives; so must we. */
static int unmap_pipe[2];
static char *unmap_buf;
static ssize_t unmap_got;
static int unmap_errno;

static void *blocked_reader(void *arg) {
	(void)arg;
	unmap_got = read(unmap_pipe[0], unmap_buf, 4096);
	unmap_errno = errno;
	return NULL;
}

static void test_unmap_under_read(void) {
	pthread_t t;
	int ok = pipe(unmap_pipe) == 0;
	unmap_buf = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ok = ok && unmap_buf != MAP_FAILED;
	if (ok) {
		unmap_buf[0] = 1; /* resident before the read starts */
		ok = pthread_create(&t, NULL, blocked_reader, NULL) == 0;
	}
	if (ok) {
		usleep(100000); /* the reader is asleep in read(2) */
		ok = munmap(unmap_buf, 4096) == 0;
		/* The address stays unusable (so the read cannot land in a new mapping there). */
		ok = ok && mmap(unmap_buf, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
				-1, 0) == unmap_buf;
		/* Fresh anonymous memory that a reused frame would show the pipe's bytes in. */
		char *other = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		ok = ok && other != MAP_FAILED;
		for (int i = 0; ok && i < (1 << 20); i += 4096)
			other[i] = 0;
		ok = ok && write(unmap_pipe[1], "SECRET", 6) == 6;
		pthread_join(t, NULL);
		int leaked = 0;
		for (int i = 0; ok && i < (1 << 20); i += 4096)
			leaked |= memcmp(other + i, "SECRET", 6) == 0;
		if (!(unmap_got == -1 && unmap_errno == EFAULT && !leaked))
			printf("  read returned %zd (errno %d), bytes seen in other memory: %d\n",
			       unmap_got, unmap_errno, leaked);
		ok = ok && unmap_got == -1 && unmap_errno == EFAULT && !leaked;
	}
	check(ok, "read(2) from a pipe whose buffer a sibling unmapped while it slept: EFAULT");
}

/* A large read of a stored dbfs file goes from the disk straight into the caller's pages, and
 * the reader gives the CPU away while the disk fills them, in a threaded process too. A
 * sibling that unmaps the buffer meanwhile must wait for the read: were the frames freed
 * first, the device would write the file's bytes into memory that belongs to someone else by
 * then. Every round a thread starts an 8 MiB pread (eight 1 MiB reads in the kernel) into a
 * buffer; as soon as the main thread runs while the reader is away for the disk, it unmaps
 * the buffer, maps fresh zeroed memory at the same address and touches it. Once the unmap has
 * returned, nothing may write there: the new memory must still be all zeros after the read,
 * and the read must have returned every byte of the file, right. */
#define RD_PATH "/dbfs/threadtest-read"
#define RD_FILE (16 << 20)
#define RD_LEN ((8 << 20) - 512)
#define RD_BUF (9 << 20)
static int rd_fd;
static char *rd_buf;
static off_t rd_off;
static ssize_t rd_got;
static volatile int rd_go;

/* The 8 bytes each 512-byte sector of the file starts with: a tag and its sector number. */
static void rd_stamp(char *out, long sector) {
	memcpy(out, "RdTt", 4);
	memcpy(out + 4, &sector, 4);
}

static void *rd_reader(void *arg) {
	char *copy = arg;
	rd_go = 1;
	rd_got = pread(rd_fd, copy, RD_LEN, rd_off);
	return NULL;
}

static long voluntary_switches(void) {
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_nvcsw;
}

static void test_read_while_sibling_unmaps(void) {
	char *file = malloc(RD_FILE);
	int ok = file != NULL;
	for (long s = 0; ok && s < RD_FILE / 512; s++) {
		memset(file + s * 512, (int)(s * 7), 512);
		rd_stamp(file + s * 512, s);
	}
	int fd = ok ? open(RD_PATH, O_RDWR | O_CREAT | O_TRUNC, 0644) : -1;
	ok = ok && fd >= 0 && write(fd, file, RD_FILE) == RD_FILE && fsync(fd) == 0;
	if (fd >= 0)
		close(fd);
	rd_fd = ok ? open(RD_PATH, O_RDONLY) : -1;
	ok = ok && rd_fd >= 0;
	long away = 0, written_after = 0, bad = 0;
	for (int r = 0; ok && r < 8; r++) {
		rd_buf = mmap(NULL, RD_BUF, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		ok = rd_buf != MAP_FAILED;
		if (!ok)
			break;
		memset(rd_buf, 0, RD_BUF); /* resident before the read */
		rd_off = ((off_t)(r % 8) << 20) + 512;
		rd_go = 0;
		rd_got = 0;
		pthread_t t;
		long before = voluntary_switches();
		ok = pthread_create(&t, NULL, rd_reader, rd_buf + 16) == 0;
		while (ok && !rd_go)
			sched_yield();
		/* Here because the reader gave the CPU away inside pread (a voluntary switch), or
		 * was preempted (the round then proves nothing about the unmap). */
		int was_away = voluntary_switches() != before;
		away += was_away;
		if (ok && was_away) {
			ok = munmap(rd_buf, RD_BUF) == 0 &&
			     mmap(rd_buf, RD_BUF, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == rd_buf;
			if (ok)
				memset(rd_buf, 0, RD_BUF);
		}
		pthread_join(t, NULL);
		if (was_away) {
			for (long i = 0; ok && i < RD_BUF; i += 512)
				written_after += memcmp(rd_buf + i, "\0\0\0\0", 4) != 0;
		} else if (rd_got != RD_LEN || memcmp(rd_buf + 16, file + rd_off, RD_LEN) != 0) {
			bad++;
		}
		if (was_away && rd_got != RD_LEN)
			bad++;
		munmap(rd_buf, RD_BUF);
	}
	if (rd_fd >= 0)
		close(rd_fd);
	unlink(RD_PATH);
	free(file);
	printf("     8 rounds: the reader away in %ld, sectors written after the unmap %ld, "
	       "bad reads %ld\n", away, written_after, bad);
	check(ok && !written_after && !bad,
	      "a sibling's munmap waits for a large read into the buffer");
	/* With several harts the main thread has a hart of its own: it runs on while the reader
	 * waits, whether or not the reader gave its hart away, so this says nothing there. */
	if (sysconf(_SC_NPROCESSORS_ONLN) > 1)
		printf("skip a large read in a threaded process gives the CPU away for the disk "
		       "(%ld harts: the main thread does not wait for the reader's hart)\n",
		       sysconf(_SC_NPROCESSORS_ONLN));
	else
		check(ok && away > 0,
		      "a large read in a threaded process gives the CPU away for the disk");
}

/* --- a private futex on a page a fork still shares copy-on-write: a thread of the child
 * waits on a static word, then a store to the same page gives the child its own copy of
 * the page, and FUTEX_WAKE_PRIVATE must still find the waiter (LTP's futex_wake02: the
 * kernel once named private futexes by their frame, which the copy changes). */
static struct {
	int word;
	int other; /* same page: a store here copies the page */
} cow_page __attribute__((aligned(4096)));

static void *cow_waiter(void *arg) {
	(void)arg;
	syscall(SYS_futex, &cow_page.word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
	return NULL;
}

static void test_futex_after_fork_copy(void) {
	cow_page.word = 0;
	pid_t pid = fork();
	if (pid == 0) {
		pthread_t t;
		if (pthread_create(&t, NULL, cow_waiter, NULL) != 0)
			_exit(2);
		/* Let the waiter get to sleep (/proc/self/task/TID/stat says S; the futex is the
		 * only place it sleeps), so the store below copies the page under a sleeper. */
		int asleep = 0;
		for (int i = 0; i < 2000 && !asleep; i++) {
			usleep(1000);
			DIR *d = opendir("/proc/self/task");
			struct dirent *e;
			while (d && (e = readdir(d)) != NULL) {
				char path[300], st[256];
				if (atoi(e->d_name) == 0 || atoi(e->d_name) == getpid())
					continue;
				snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
				FILE *f = fopen(path, "r");
				if (f && fgets(st, sizeof st, f) && strstr(st, ") S "))
					asleep = 1;
				if (f)
					fclose(f);
			}
			if (d)
				closedir(d);
		}
		cow_page.other = 1; /* the child's own copy of the page from here on */
		long woken = 0;
		for (int i = 0; i < 200 && woken == 0; i++) {
			woken = syscall(SYS_futex, &cow_page.word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
			if (woken == 0)
				usleep(1000);
		}
		if (!asleep || woken != 1)
			_exit(1); /* exit_group ends the waiter too */
		pthread_join(t, NULL);
		_exit(0);
	}
	int status = 0;
	waitpid(pid, &status, 0);
	check(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "FUTEX_WAKE_PRIVATE finds a waiter after a store copied its page (forked child)");
}

/* --- /proc/<pid>/task/<tid>/syscall names the call a sleeping thread waits in (futex, its
 * word's address and expected value as arguments), and says "running" of the caller. */
static int syscall_word;
static void *syscall_sleeper(void *arg) {
	*(pid_t *)arg = gettid_();
	syscall(SYS_futex, &syscall_word, FUTEX_WAIT_PRIVATE, 5, NULL, NULL, 0);
	return NULL;
}

static void test_proc_syscall(void) {
	syscall_word = 5;
	volatile pid_t tid = 0;
	pthread_t t;
	if (pthread_create(&t, NULL, syscall_sleeper, (void *)&tid) != 0) {
		check(0, "/proc/PID/task/TID/syscall: pthread_create");
		return;
	}
	char want[128], got[256] = "", path[64], self[64] = "";
	while (tid == 0)
		usleep(1000);
	snprintf(want, sizeof want, "%d %#lx %#x %#x ", SYS_futex, (unsigned long)&syscall_word,
		 FUTEX_WAIT_PRIVATE, 5);
	snprintf(path, sizeof path, "/proc/%d/task/%d/syscall", getpid(), (int)tid);
	for (int i = 0; i < 2000 && strncmp(got, want, strlen(want)) != 0; i++) {
		usleep(1000);
		FILE *f = fopen(path, "r");
		if (!f || !fgets(got, sizeof got, f))
			got[0] = 0;
		if (f)
			fclose(f);
	}
	FILE *f = fopen("/proc/self/syscall", "r");
	if (!f || !fgets(self, sizeof self, f))
		self[0] = 0;
	if (f)
		fclose(f);
	syscall_word = 0;
	syscall(SYS_futex, &syscall_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	pthread_join(t, NULL);
	char what[512];
	snprintf(what, sizeof what, "/proc/PID/task/TID/syscall of a futex sleeper: %.*s; of itself: %.*s",
		 (int)strcspn(got, "\n"), got, (int)strcspn(self, "\n"), self);
	check(strncmp(got, want, strlen(want)) == 0 && strcmp(self, "running\n") == 0, what);
}

int main(void) {
	setvbuf(stdout, NULL, _IOLBF, 0);
	main_pid = getpid();
	test_mutex();
	test_condvar();
	test_join_and_ids();
	test_thread_exit();
	test_signals();
	test_group_end();
	test_robust();
	test_thread_bomb();
	test_unmap_under_read();
	test_read_while_sibling_unmaps();
	test_futex_after_fork_copy();
	test_proc_syscall();
	printf("threadtest: %d passed, %d failed\n", passed, failed);
	return failed != 0;
}
