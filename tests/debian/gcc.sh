#!/bin/bash
# Debian's gcc inside dbfs-os (`make test-gcc`, a root built with DEBS=+gcc,+libc6-dev): gcc -O2
# compiles C programs on the dbfs root (cc1, as, collect2 and ld all run in the guest), they
# run and check what they compute. Prints `ok NAME` or `FAIL NAME`, the time each compile
# took, and last `gcc: N passed, N failed`.
# shellcheck source=tests/debian/check.sh
. "$(dirname "$0")/check.sh"
exec 3>&1 # the compile times, past check's capture
# Run a compile, printing how long it took (wall clock of the guest).
timed() {
	local what=$1 t0 t1
	shift
	t0=$(date +%s%N)
	"$@" || return 1
	t1=$(date +%s%N)
	echo "time $what: $(((t1 - t0) / 1000000)) ms" >&3
}

work=/root/gcc-test
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1

# 1. Pure computation: primes below 200000 by a sieve, and a 64-bit FNV-1a hash of them;
# the program checks its own results against values known from elsewhere.
cat >primes.c <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
int main(void) {
	enum { N = 200000 };
	char *composite = calloc(N, 1);
	if (!composite) return 2;
	unsigned count = 0;
	uint64_t h = 1469598103934665603ull;
	for (unsigned i = 2; i < N; i++) {
		if (composite[i]) continue;
		count++;
		h = (h ^ i) * 1099511628211ull;
		for (unsigned long j = (unsigned long)i * i; j < N; j += i) composite[j] = 1;
	}
	printf("%u %016llx\n", count, (unsigned long long)h);
	return count == 17984 ? 0 : 1;
}
C
compile_primes() { timed primes gcc -O2 -Wall -o primes primes.c; }
check gcc-O2-compiles-primes compile_primes
check primes-run bash -c './primes | grep -q "^17984 "'

# 2. Headers and libraries of libc6-dev: <pthread.h>, <math.h> (-lm), <sys/stat.h>,
# <fcntl.h>: four threads sum disjoint ranges, sqrt and a file written, fsync'd and stat'ed
# (its mode checked too where the file system keeps modes).
cat >libc.c <<'C'
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
static unsigned long long part[4];
static void *sum(void *arg) {
	long k = (long)arg;
	for (unsigned long long i = k * 250000ull + 1; i <= (k + 1) * 250000ull; i++) part[k] += i;
	return 0;
}
int main(int argc, char **argv) {
	pthread_t t[4];
	for (long k = 0; k < 4; k++)
		if (pthread_create(&t[k], 0, sum, (void *)k)) return 2;
	unsigned long long total = 0;
	for (int k = 0; k < 4; k++) {
		pthread_join(t[k], 0);
		total += part[k];
	}
	if (total != 500000500000ull) return 3;
	if (fabs(sqrt(2.0) * sqrt(2.0) - 2.0) > 1e-12) return 4;
	const char *path = argc > 1 ? argv[1] : "out.txt";
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0640);
	if (fd < 0) return 5;
	char line[64];
	int n = snprintf(line, sizeof line, "%llu\n", total);
	if (write(fd, line, n) != n || fsync(fd) || close(fd)) return 6;
	struct stat st;
	if (stat(path, &st) || st.st_size != n) return 7;
	if (argc > 2 && (st.st_mode & 0777) != 0640) return 8; /* FAT has no mode bits */
	puts(line);
	return 0;
}
C
compile_libc() { timed libc gcc -O2 -Wall -pthread -o libc libc.c -lm; }
check gcc-O2-libc6-dev-headers compile_libc
check libc-run-dbfs-root bash -c './libc out.txt mode | grep -qx 500000500000'
check libc-run-fat bash -c './libc /fat/gcc-out.txt | grep -qx 500000500000 && rm /fat/gcc-out.txt'

# 3. Separate compilation and a static archive (ar) linked by make, as a project builds.
cat >util.h <<'C'
int fib(int n);
C
cat >util.c <<'C'
#include "util.h"
int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
C
cat >main.c <<'C'
#include <stdio.h>
#include "util.h"
int main(void) { printf("%d\n", fib(25)); return fib(25) == 75025 ? 0 : 1; }
C
printf 'CFLAGS = -O2\nfib: main.o libutil.a\n\t$(CC) -o $@ main.o -L. -lutil\nlibutil.a: util.o\n\t$(AR) rcs $@ $^\n' >Makefile
compile_make() { timed make make -s; }
check make-ar-link compile_make
check fib-run bash -c '[ "$(./fib)" = 75025 ]'

summary gcc
