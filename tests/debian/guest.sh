#!/bin/bash
# The Debian root's own programs on dbfs-os (`make test-debian`): each check runs Debian's
# dynamically linked riscv64 binaries (bash, coreutils, python3, sqlite3, tar, gzip, fio) and
# prints `ok NAME` or `FAIL NAME`; the last line is `debian: N passed, N failed`.
# shellcheck source=tests/debian/check.sh
. "$(dirname "$0")/check.sh"

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
# procps's vmstat -d reads /proc/diskstats: the root disk (vda) has been read from.
check vmstat-disks bash -c 'vmstat -d | grep -Eq "^vda +[1-9][0-9]* "'
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
# Job control lines that need no terminal: background jobs, wait for each, their statuses.
bash_jobs() {
	(sleep 0.2; exit 3) &
	local a=$!
	(exit 5) &
	local b=$!
	wait "$b"; local sb=$?
	wait "$a"; local sa=$?
	[ "$sa" = 3 ] && [ "$sb" = 5 ] && [ -z "$(jobs -p)" ]
}
check bash-background-jobs bash_jobs
# cp -a of a tree with symlinks, modes, a hard link and times from / to /dbfs and back: stat
# (type, mode, owner, mtime, link target, link count) and sha256sum agree at every step.
tree_listing() { # DIR: one line per entry, relative names, sorted
	(cd "$1" && find . -mindepth 1 -printf '%P %y %m %U:%G %T@ %l %n\n' | sort &&
		find . -type f -print0 | sort -z | xargs -0 sha256sum)
}
cp_a_round_trip() {
	local src=/root/cp-src
	rm -rf "$src" /dbfs/cp-a /root/cp-back && mkdir -p "$src/sub/deeper" &&
		cp -a /usr/share/common-licenses "$src/" && seq 1 20000 >"$src/sub/numbers" &&
		echo secret >"$src/sub/deeper/private" && chmod 600 "$src/sub/deeper/private" &&
		chmod 4755 "$src/sub/numbers" && ln -s ../sub/numbers "$src/sub/deeper/link" &&
		ln -s /etc/hostname "$src/abs-link" && ln "$src/sub/numbers" "$src/hard" &&
		chown 1:2 "$src/sub/deeper" && touch -d '2001-02-03 04:05:06.789' "$src/sub/numbers" &&
		cp -a "$src" /dbfs/cp-a && cp -a /dbfs/cp-a /root/cp-back &&
		diff <(tree_listing "$src") <(tree_listing /dbfs/cp-a) &&
		diff <(tree_listing "$src") <(tree_listing /root/cp-back) &&
		[ "$(stat -c %h /dbfs/cp-a/hard)" = 2 ] && rm -rf "$src" /dbfs/cp-a /root/cp-back
}
check cp-a-root-dbfs-root cp_a_round_trip
check sqlite3-integrity bash -c 'rm -f /dbfs/t.db && sqlite3 /dbfs/t.db "create table t(k integer primary key, v text);
	with recursive n(i) as (select 1 union all select i+1 from n where i < 5000) insert into t(v) select hex(randomblob(40)) from n;
	create index tv on t(v); delete from t where k % 3 = 0;" &&
	[ "$(sqlite3 /dbfs/t.db "pragma integrity_check; select count(*) from t;" | tr "\n" " ")" = "ok 3334 " ] && rm /dbfs/t.db'
# Debian's fio, psync and libaio (io_setup/io_submit/io_getevents, depth 8), writing 4 MiB in
# random 4 KiB blocks with crc32c checksums and reading all of it back to verify them. Passes
# only if fio exits 0, names the engine it was asked for (it did not fall back), every err=
# field is 0, and both the writes and the verifying reads moved all 4096 KiB.
fio_verify() {
	local dir=$1 engine=$2 out errs rc
	shift 2
	rm -f "$dir"/fio-"$engine".*
	out=$(fio --name=fio-"$engine" --directory="$dir" --ioengine="$engine" "$@" --rw=randwrite \
		--bs=4k --size=4M --verify=crc32c --do_verify=1 --output-format=normal 2>&1)
	rc=$?
	[ "$rc" = 0 ] || { echo "$out"; echo "fio exited $rc"; return 1; }
	rm -f "$dir"/fio-"$engine".*
	errs=$(grep -o 'err= *[0-9]*' <<<"$out")
	if ! grep -q "ioengine=$engine" <<<"$out" || [ -z "$errs" ] || grep -qv 'err= *0$' <<<"$errs" ||
		! grep -q 'write: .*(4096KiB/' <<<"$out" || ! grep -q 'read: .*(4096KiB/' <<<"$out"; then
		echo "$out"
		return 1
	fi
}
for dir in /dbfs /fat; do
	check "fio-psync-verify$dir" fio_verify "$dir" psync
	check "fio-libaio-verify$dir" fio_verify "$dir" libaio --iodepth=8
done
# GNU make: a rule runs once, then the target is up to date; a changed input runs it again.
make_rebuilds() {
	local d=/dbfs/make-test
	rm -rf "$d" && mkdir -p "$d" && cd "$d" &&
		printf 'sorted.txt: in.txt\n\tsort -n in.txt > sorted.txt\n' >Makefile &&
		seq 10 -1 1 >in.txt && make -s && [ "$(head -1 sorted.txt)" = 1 ] &&
		make | grep -q "is up to date" && sleep 1 && echo 0 >>in.txt && make -s &&
		[ "$(head -1 sorted.txt)" = 0 ] && cd / && rm -rf "$d"
}
check make-rebuilds make_rebuilds
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
summary debian
