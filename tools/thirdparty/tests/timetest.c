/* timetest: the clock as glibc reads it on dbfs-os, through the kernel's vDSO
 * (kernel/src/arch/vdso.rs). Built static for riscv64 by tools/thirdparty/fetch-build.sh and
 * run by `make test-apps` as /bin/timetest.
 *
 * Checks that the kernel names a vDSO in the auxiliary vector, that glibc's clock_gettime and
 * gettimeofday agree with the system calls read just before and after (never earlier, never
 * later), that those library calls enter the kernel hardly at all (the `syscalls` line of
 * /proc/counters), that what the vDSO leaves to the kernel (other clocks, a null pointer, a
 * time zone) still gets the system call's answer, and that a forked child and an exec'd
 * program have a working copy. Prints one line per check and
 * "timetest: N passed, M failed". */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <sys/time.h>
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

static int64_t ns_of(const struct timespec *t) { return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec; }

static int64_t sys_clock_ns(clockid_t c) {
	struct timespec t;
	if (syscall(SYS_clock_gettime, c, &t) != 0)
		return -1;
	return ns_of(&t);
}

/* The kernel's count of system calls entered, from /proc/counters (-1 if unreadable). */
static long long syscalls_entered(void) {
	FILE *f = fopen("/proc/counters", "r");
	char line[128];
	long long v = -1;
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "syscalls %lld", &v) == 1)
			break;
	fclose(f);
	return v;
}

typedef int (*cgt_fn)(clockid_t, struct timespec *);
typedef int (*gtod_fn)(struct timeval *, void *);

/* cgt(c) (glibc's clock_gettime or the vDSO's) succeeds and lies between two system-call
 * reads of clock c, n times over. */
static int cgt_between(cgt_fn cgt, clockid_t c, int n) {
	for (int i = 0; i < n; i++) {
		struct timespec t;
		int64_t before = sys_clock_ns(c);
		if (cgt(c, &t) != 0 || t.tv_nsec < 0 || t.tv_nsec >= 1000000000)
			return 0;
		int64_t after = sys_clock_ns(c);
		if (before < 0 || ns_of(&t) < before || ns_of(&t) > after)
			return 0;
	}
	return 1;
}

/* gtod(&tv, tz) (glibc's gettimeofday or the vDSO's) succeeds and lies between two
 * system-call reads of CLOCK_REALTIME, n times over. */
static int gtod_between(gtod_fn gtod, void *tz, int n) {
	for (int i = 0; i < n; i++) {
		struct timeval tv;
		int64_t before = sys_clock_ns(CLOCK_REALTIME) / 1000;
		if (gtod(&tv, tz) != 0 || tv.tv_usec < 0 || tv.tv_usec >= 1000000)
			return 0;
		int64_t us = (int64_t)tv.tv_sec * 1000000 + tv.tv_usec;
		int64_t after = sys_clock_ns(CLOCK_REALTIME) / 1000;
		if (before < 0 || us < before || us > after)
			return 0;
	}
	return 1;
}

/* A symbol of the vDSO image at `base`, found the way a dynamic loader finds it: program
 * headers, dynamic section, SysV hash table, symbol and string tables. NULL if absent. */
static void *vdso_sym(const unsigned char *base, const char *name) {
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
	const Elf64_Phdr *ph = (const Elf64_Phdr *)(base + eh->e_phoff);
	const Elf64_Dyn *dyn = NULL;
	for (int i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_DYNAMIC)
			dyn = (const Elf64_Dyn *)(base + ph[i].p_offset);
	if (!dyn)
		return NULL;
	const Elf64_Sym *sym = NULL;
	const char *str = NULL;
	const uint32_t *hash = NULL;
	for (; dyn->d_tag != DT_NULL; dyn++) {
		if (dyn->d_tag == DT_SYMTAB)
			sym = (const Elf64_Sym *)(base + dyn->d_un.d_ptr);
		else if (dyn->d_tag == DT_STRTAB)
			str = (const char *)(base + dyn->d_un.d_ptr);
		else if (dyn->d_tag == DT_HASH)
			hash = (const uint32_t *)(base + dyn->d_un.d_ptr);
	}
	if (!sym || !str || !hash)
		return NULL;
	for (uint32_t i = 1; i < hash[1]; i++)
		if (ELF64_ST_TYPE(sym[i].st_info) == STT_FUNC && strcmp(str + sym[i].st_name, name) == 0)
			return (void *)(base + sym[i].st_value);
	return NULL;
}

static void test_auxv(void) {
	const unsigned char *ehdr = (const unsigned char *)getauxval(AT_SYSINFO_EHDR);
	check(ehdr != NULL, "the auxiliary vector names a vDSO (AT_SYSINFO_EHDR)");
	check(ehdr != NULL && memcmp(ehdr, "\177ELF", 4) == 0 && ehdr[16] == 3 /* ET_DYN */,
	      "the vDSO is an ELF shared object");
	if (!ehdr)
		return;
	/* Its functions called directly, as another C library would. */
	cgt_fn cgt = (cgt_fn)vdso_sym(ehdr, "__vdso_clock_gettime");
	gtod_fn gtod = (gtod_fn)vdso_sym(ehdr, "__vdso_gettimeofday");
	check(cgt != NULL && gtod != NULL, "__vdso_clock_gettime and __vdso_gettimeofday resolve");
	if (!cgt || !gtod)
		return;
	struct timespec t;
	check(cgt_between(cgt, CLOCK_MONOTONIC, 1),
	      "__vdso_clock_gettime(CLOCK_MONOTONIC) lies between system-call reads");
	check(cgt(12345, &t) == -EINVAL && cgt(CLOCK_MONOTONIC, NULL) == -EFAULT,
	      "__vdso_clock_gettime: unknown clock -EINVAL, null pointer -EFAULT");
	check(gtod_between(gtod, NULL, 1) && gtod(NULL, NULL) == 0,
	      "__vdso_gettimeofday lies between system-call reads of CLOCK_REALTIME");
}

static void test_agree(void) {
	check(cgt_between(clock_gettime, CLOCK_MONOTONIC, 2000),
	      "CLOCK_MONOTONIC lies between system-call reads");
	check(cgt_between(clock_gettime, CLOCK_REALTIME, 2000),
	      "CLOCK_REALTIME lies between system-call reads");
	check(cgt_between(clock_gettime, CLOCK_BOOTTIME, 200) &&
		      cgt_between(clock_gettime, CLOCK_MONOTONIC_RAW, 200) &&
		      cgt_between(clock_gettime, CLOCK_MONOTONIC_COARSE, 200),
	      "BOOTTIME, MONOTONIC_RAW, MONOTONIC_COARSE agree with the system call");
	check(gtod_between(gettimeofday, NULL, 1000),
	      "gettimeofday lies between system-call reads of CLOCK_REALTIME");
	struct timespec a, b;
	int ok = 1;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < 100000 && ok; i++) {
		clock_gettime(CLOCK_MONOTONIC, &b);
		ok = ns_of(&b) >= ns_of(&a);
		a = b;
	}
	check(ok, "CLOCK_MONOTONIC never goes back over 100000 reads");
}

static void test_no_syscalls(void) {
	long long before = syscalls_entered();
	struct timespec t;
	struct timeval tv;
	for (int i = 0; i < 10000; i++) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		clock_gettime(CLOCK_REALTIME, &t);
		gettimeofday(&tv, NULL);
	}
	long long after = syscalls_entered();
	printf("     30000 library clock reads entered the kernel %lld times\n",
	       before < 0 || after < 0 ? -1 : after - before);
	/* The second read of /proc/counters itself makes a handful (open, read, close). */
	check(before >= 0 && after >= 0 && after - before < 100,
	      "30000 clock reads through glibc make (almost) no system call");
}

static void test_fallbacks(void) {
	/* A null pointer through a volatile variable: glibc declares the argument nonnull. */
	struct timespec *volatile no_ts = NULL;
	struct timespec t;
	errno = 0;
	int r = clock_gettime(CLOCK_MONOTONIC, no_ts);
	check(r == -1 && errno == EFAULT, "a null timespec is EFAULT (the system call answers)");
	long sr = syscall(SYS_clock_gettime, CLOCK_PROCESS_CPUTIME_ID, &t);
	int se = errno;
	errno = 0;
	r = clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	check(r == (int)sr && (r == 0 || errno == se),
	      "a clock the vDSO does not serve gets the system call's answer");
	errno = 0;
	r = clock_gettime((clockid_t)12345, &t);
	check(r == -1 && errno == EINVAL, "an unknown clock is EINVAL");
	struct timezone tz;
	check(gtod_between(gettimeofday, &tz, 1), "gettimeofday with a time zone");
}

static void test_fork_exec(const char *self) {
	pid_t p = fork();
	if (p == 0)
		_exit(cgt_between(clock_gettime, CLOCK_MONOTONIC, 100) ? 0 : 1);
	int st = -1;
	waitpid(p, &st, 0);
	check(p > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "a forked child reads the clock");
	p = fork();
	if (p == 0) {
		execl(self, self, "child", (char *)NULL);
		_exit(2);
	}
	st = -1;
	waitpid(p, &st, 0);
	check(p > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "an exec'd program reads the clock");
}

int main(int argc, char **argv) {
	if (argc > 1 && strcmp(argv[1], "child") == 0)
		return getauxval(AT_SYSINFO_EHDR) != 0 &&
				       cgt_between(clock_gettime, CLOCK_REALTIME, 100)
			       ? 0
			       : 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	test_auxv();
	test_agree();
	test_no_syscalls();
	test_fallbacks();
	test_fork_exec(argv[0]);
	printf("timetest: %d passed, %d failed\n", passed, failed);
	return failed != 0;
}
