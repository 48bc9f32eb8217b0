#!/bin/bash
# The Debian root's own programs on dbfs-os (`make test-debian`): each check runs Debian's
# dynamically linked riscv64 binaries (bash, coreutils, python3, sqlite3, tar, gzip) and
# prints `ok NAME` or `FAIL NAME`; the last line is `debian: N passed, N failed`.
passed=0 failed=0
check() {
	local name=$1
	shift
	if out=$("$@" 2>&1); then
		echo "ok $name"
		passed=$((passed + 1))
	else
		echo "FAIL $name: $out"
		failed=$((failed + 1))
	fi
}

bash_arrays() {
	local -a a=(one two three)
	local -A m=([x]=1 [y]=2)
	a+=(four)
	twice() { echo "$(($1 * 2))"; }
	[ "${#a[@]}" = 4 ] && [ "${a[3]}" = four ] && [ "${m[y]}" = 2 ] && [ "$(twice 21)" = 42 ] &&
		[ "${BASH_VERSINFO[0]}" -ge 5 ]
}
check bash-arrays-functions bash_arrays
# ls -la uses statx: owners, modes and the symlinks of a merged /usr.
check ls-la bash -c 'ls -la / | grep -Eq "^lrwxrwxrwx .* bin -> usr/bin$" && ls -la /usr/bin/bash | grep -q "^-rwxr-xr-x .* root root "'
for dir in /dbfs /fat; do
	check "python3-fsync$dir" python3 -c "
import os, sys
p = '$dir/py-test.txt'
with open(p, 'w') as f:
    f.write('hello from python\n' * 100)
    f.flush()
    os.fsync(f.fileno())
data = open(p).read()
os.unlink(p)
sys.exit(0 if data == 'hello from python\n' * 100 else 1)"
done
check python3-monotonic python3 -c 'import time; a = time.monotonic(); b = time.monotonic(); assert b >= a > 0; assert time.time() > 1.6e9'
check sqlite3 bash -c '[ "$(sqlite3 :memory: "select 6*7")" = 42 ]'
check sort bash -c '[ "$(printf "pear\napple\nfig\n" | sort | tr "\n" " ")" = "apple fig pear " ]'
tar_round_trip() {
	rm -rf /dbfs/tartest /fat/t.tgz /fat/untar && mkdir -p /dbfs/tartest/sub /fat/untar &&
		seq 1 5000 >/dbfs/tartest/numbers && echo hi >/dbfs/tartest/sub/hi &&
		tar -C /dbfs -czf /fat/t.tgz tartest && gzip -t /fat/t.tgz &&
		tar -C /fat/untar -xzf /fat/t.tgz &&
		cmp /dbfs/tartest/numbers /fat/untar/tartest/numbers &&
		[ "$(cat /fat/untar/tartest/sub/hi)" = hi ]
}
check tar-gzip-dbfs-fat tar_round_trip
check exit-status bash -c '/usr/bin/false; [ $? = 1 ] && /usr/bin/sh -c "exit 7"; [ $? = 7 ]'
# exec maps a program from the page cache: 20 running `sleep`s share its text and libc's, so
# they take under 4 MiB (each its own stack, data and page tables: about 140 KiB); a loader
# that copied the segments took 5.8 MiB.
memfree() { local k v r; while read -r k v r; do [ "$k" = MemFree: ] && echo "$v"; done </proc/meminfo; }
sleep_share() {
	local a b pids=() i
	for i in 1 2 3; do /usr/bin/sleep 0; done
	a=$(memfree)
	for i in $(seq 20); do /usr/bin/sleep 100 & pids+=($!); done
	/usr/bin/sleep 3
	b=$(memfree)
	kill "${pids[@]}"
	wait "${pids[@]}" 2>/dev/null
	[ $((a - b)) -lt 4096 ] || { echo "20 sleep processes use $((a - b)) KiB"; false; }
}
check sleep20-share-text sleep_share
# A dynamically linked program and its loader run from FAT32 too (mapped from its pages).
check exec-from-fat bash -c 'cp /usr/bin/true /fat/true-copy && /fat/true-copy && rm /fat/true-copy'
echo "debian: $passed passed, $failed failed"
