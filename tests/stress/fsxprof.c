/* fsxprof DIR N [MAXSIZE] [SEED]: fsx-linux's operation mix (LTP fsx01: -l MAXSIZE -r 4096
 * -t 4096 -w 4096), each system call and each user-space step timed with clock_gettime. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

enum { C_LSEEK, C_READ, C_WRITE, C_TRUNC, C_MMAP, C_MUNMAP, C_MSYNC, C_MEMCPY_MAP, C_USER, C_N };
static const char *cname[] = { "lseek", "read", "write", "ftruncate", "mmap", "munmap", "msync", "memcpy-map", "user" };
static double ctime_[C_N];
static long ccount[C_N];
enum { OP_READ, OP_WRITE, OP_TRUNC, OP_MREAD, OP_MWRITE, OP_N };
static const char *oname[] = { "read", "write", "truncate", "mapread", "mapwrite" };
static double otime[OP_N];
static long ocount[OP_N];
static long long obytes[OP_N];

/* /proc/counters (the kernel's I/O counters), read outside the timed steps. */
#define NCNT 16
static char cntname[NCNT][64];
static int ncnt;
static long long cnt_delta[OP_N][NCNT];
static int read_counters(long long *v)
{
	FILE *f = fopen("/proc/counters", "r");
	if (!f)
		return 0;
	char name[64];
	long long x;
	int k = 0;
	while (k < NCNT && fscanf(f, "%63s %lld", name, &x) == 2) {
		if (!ncnt || k >= ncnt)
			snprintf(cntname[k], sizeof cntname[k], "%s", name);
		v[k++] = x;
	}
	fclose(f);
	if (k > ncnt)
		ncnt = k;
	return k;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}
static double mark;
static void lap(int c)
{
	double t = now();
	ctime_[c] += t - mark;
	ccount[c]++;
	mark = t;
}
static void die(const char *what)
{
	perror(what);
	exit(1);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: fsxprof DIR N [MAXSIZE] [SEED]\n");
		return 2;
	}
	long n = atol(argv[2]);
	long long max = argc > 3 ? atoll(argv[3]) : 500000;
	srandom(argc > 4 ? atoi(argv[4]) : 1);
	long pg = sysconf(_SC_PAGESIZE);
	char path[512];
	snprintf(path, sizeof path, "%s/fsxprof.dat", argv[1]);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die("open");
	char *model = calloc(1, max), *tmp = calloc(1, max);
	long long size = 0;
	double start = now();
	for (long i = 0; i < n; i++) {
		int op = random() % OP_N;
		long long c0[NCNT], c1[NCNT];
		int have = read_counters(c0);
		double t0 = now();
		mark = t0;
		long long off, len, fs = (op == OP_READ || op == OP_MREAD) ? size : max;
		if (fs == 0)
			continue;
		if ((op == OP_WRITE || op == OP_MWRITE) && size >= max)
			continue;
		off = random() % fs;
		len = random() % (fs - off);
		off -= off % 4096;
		if (!len)
			len = 1;
		if (op == OP_MREAD || op == OP_MWRITE) {
			len += off % pg;
			off -= off % pg;
		}
		lap(C_USER);
		switch (op) {
		case OP_READ:
			memset(tmp, 0, max);
			lap(C_USER);
			lseek(fd, off, SEEK_SET);
			lap(C_LSEEK);
			if (read(fd, tmp, len) != len)
				die("read");
			lap(C_READ);
			if (memcmp(tmp, model + off, len))
				fprintf(stderr, "miscompare read %lld %lld\n", off, len), exit(1);
			lap(C_USER);
			break;
		case OP_WRITE:
			for (long long k = 0; k < len; k++)
				model[off + k] = tmp[k] = random() % 10 + 'a';
			lap(C_USER);
			lseek(fd, off, SEEK_SET);
			lap(C_LSEEK);
			if (write(fd, tmp, len) != len)
				die("write");
			lap(C_WRITE);
			if (off + len > size)
				size = off + len;
			break;
		case OP_TRUNC:
			size = off + len;
			if (ftruncate(fd, size))
				die("ftruncate");
			lap(C_TRUNC);
			memset(model + size, 0, max - size);
			lap(C_USER);
			break;
		case OP_MREAD: {
			char *a = mmap(0, len, PROT_READ, MAP_SHARED, fd, off);
			if (a == MAP_FAILED)
				die("mmap");
			lap(C_MMAP);
			memcpy(tmp, a, len);
			lap(C_MEMCPY_MAP);
			if (memcmp(tmp, model + off, len))
				fprintf(stderr, "miscompare mapread %lld %lld\n", off, len), exit(1);
			lap(C_USER);
			munmap(a, len);
			lap(C_MUNMAP);
			break;
		}
		case OP_MWRITE: {
			if (size < off + len && ftruncate(fd, off + len))
				die("ftruncate");
			lap(C_TRUNC);
			for (long long k = 0; k < len; k++)
				model[off + k] = random() % 10 + 'l';
			lap(C_USER);
			char *a = mmap(0, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off);
			if (a == MAP_FAILED)
				die("mmap");
			lap(C_MMAP);
			memcpy(a, model + off, len);
			lap(C_MEMCPY_MAP);
			if (msync(a, len, MS_SYNC))
				die("msync");
			lap(C_MSYNC);
			munmap(a, len);
			lap(C_MUNMAP);
			if (off + len > size)
				size = off + len;
			break;
		}
		}
		otime[op] += now() - t0;
		ocount[op]++;
		if (have && read_counters(c1) == have)
			for (int k = 0; k < have; k++)
				cnt_delta[op][k] += c1[k] - c0[k];
		obytes[op] += len;
	}
	double total = now() - start;
	long done = 0;
	for (int o = 0; o < OP_N; o++)
		done += ocount[o];
	printf("FSXPROF dir=%s ops=%ld secs=%.2f ops_per_s=%.1f\n", argv[1], done, total, done / total);
	for (int o = 0; o < OP_N; o++)
		printf("  op %-9s n=%-6ld avg_ms=%.3f avg_kib=%.0f share=%.0f%%\n", oname[o], ocount[o],
		       ocount[o] ? otime[o] * 1e3 / ocount[o] : 0, ocount[o] ? obytes[o] / 1024.0 / ocount[o] : 0,
		       100 * otime[o] / total);
	for (int c = 0; c < C_N; c++)
		printf("  step %-10s calls=%-6ld total_s=%.2f avg_ms=%.3f share=%.0f%%\n", cname[c], ccount[c],
		       ctime_[c], ccount[c] ? ctime_[c] * 1e3 / ccount[c] : 0, 100 * ctime_[c] / total);
	for (int k = 0; k < ncnt; k++) {
		printf("  per-op %-20s", cntname[k]);
		for (int o = 0; o < OP_N; o++)
			printf(" %s=%.1f", oname[o], ocount[o] ? (double)cnt_delta[o][k] / ocount[o] : 0);
		printf("\n");
	}
	close(fd);
	unlink(path);
	return 0;
}
