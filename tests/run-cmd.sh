#!/usr/bin/env bash
# `make run CMD=...` as a script uses it, on scratch disks (DISKS, passed as DISK_DIR; a
# person's own disks in build/disk are never touched, and this checks that too):
#   1. a file written on /root, /dbfs and /fat in one run is there in the next, also after the
#      system image is rebuilt (a file written elsewhere on / is kept until then), and `make
#      reset-disks` blanks them;
#   2. CMD reaches the guest byte for byte: $?, $$, quotes, backslashes, make's own $(...)
#      syntax; the output is compared with the host's bash running the same line;
#   3. stdout carries the command's output alone, as plain lines (no \r, no boot messages, no
#      build output), so `grep -x` works;
#   4. the exit status: build/run-cmd.status holds it, make exits 0 iff it is 0, stderr names it;
#      a failed build and a timeout leave no status file.
# Every boot has a hard timeout (TIMEOUT inside make, `timeout` around make).
#
#   DISKS=build/test-run-cmd-disks BUILD=build tests/run-cmd.sh      (`make test-run-cmd`)
set -euo pipefail
cd "$(dirname "$0")/.."
: "${DISKS:?set DISKS to a scratch directory for the disks}" "${BUILD:=build}"
case "$(realpath -m "$DISKS")" in
"$(realpath -m "$BUILD/disk")") echo "run-cmd: DISKS must not be the person's disks ($BUILD/disk)" >&2; exit 2 ;;
esac
status_file=$BUILD/run-cmd.status
out=$BUILD/test-run-cmd
mkdir -p "$out"
rm -rf "$DISKS"

fail=0
problem() {
	echo "run-cmd: FAIL: $*" >&2
	fail=1
}
# The person's disks, as they were: they must be the same at the end.
person_disks() { stat -c '%n %s %Y' "$BUILD"/disk/*.img 2>/dev/null || echo none; }
person_before=$(person_disks)

# run NAME CMD [MAKE-ARGS...]: make run CMD=CMD on the scratch disks; stdout in $out/NAME.out,
# stderr in $out/NAME.err, make's exit status in $rc.
run() {
	local name=$1 cmd=$2
	shift 2
	rc=0
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL timeout -k 10 400 \
		make --no-print-directory run DISK_DIR="$DISKS" TIMEOUT=240 "$@" "CMD=$cmd" \
		>"$out/$name.out" 2>"$out/$name.err" </dev/null || rc=$?
	echo "run-cmd: $name: make exited $rc, status file: $(cat "$status_file" 2>/dev/null || echo none)"
}
# expect_out NAME TEXT: NAME's stdout is exactly TEXT (plus the final newline).
expect_out() {
	if ! diff <([ -z "$2" ] || printf '%s\n' "$2") "$out/$1.out" >"$out/$1.diff"; then
		problem "$1: stdout is not what was expected (diff: want, got):"
		cat "$out/$1.diff" >&2
	fi
}
expect_status() { # NAME STATUS MAKE-RC-IS-ZERO(yes|no)
	local got
	got=$(cat "$status_file" 2>/dev/null || echo none)
	[ "$got" = "$2" ] || problem "$1: status file holds '$got', want '$2'"
	if [ "$3" = yes ]; then
		[ "$rc" = 0 ] || problem "$1: make exited $rc, want 0"
	else
		[ "$rc" != 0 ] || problem "$1: make exited 0 for a failing command"
	fi
}

# 1. Persistence across runs, and the disks made once; /root (the home disk), /dbfs and /fat
#    outlive a new system image (made here by touching its base, as a changed program would).
run write 'echo dbfs-data > /dbfs/keep.txt; echo fat-data > /fat/keep.txt; mkdir -p /dbfs/d; seq 1 1000 > /dbfs/d/seq; echo home-data > ~/keep.txt; echo sys-data > /etc/keep.txt'
expect_status write 0 yes
grep -q "new blank dbfs disk $DISKS/dbfs.img" "$out/write.err" || problem "write: no new dbfs disk was made"
grep -q "new blank dbfs disk $DISKS/home.img" "$out/write.err" || problem "write: no new home disk was made"
grep -q "new system disk $DISKS/root.img" "$out/write.err" || problem "write: no new system disk was made"
run again 'cat /etc/keep.txt'
expect_status again 0 yes
expect_out again sys-data
sleep 1 # the next system image gets a later mtime
touch "$BUILD/debian/base.img"
run read 'cat /dbfs/keep.txt /fat/keep.txt /root/keep.txt; wc -l < /dbfs/d/seq; ls /etc/keep.txt 2>/dev/null | wc -l'
expect_status read 0 yes
expect_out read $'dbfs-data\nfat-data\nhome-data\n1000\n0'
grep -q 'new .* disk' "$out/read.err" && problem "read: a disk was made again"
grep -q "root.img replaced by a copy of" "$out/read.err" || problem "read: the system disk was not refreshed (the test needs it to be)"

# 2 and 3. Byte for byte, plain lines; the host's bash is the reference for the output.
exact='false; printf "%s\n" "status=$?" '\''single $HOME "dq" \n'\'' "double '\''sq'\'' \\ \$HOME \`x\`" a\ b\\c '\''$(HOME) ${X} %% # ;'\'' "it'\''s" '\''it'\''\'\'''\''s'\'' "$((6*7))"'
want=$(env -i HOME=/nonexistent bash -c "$exact")
run exact "$exact"
expect_status exact 0 yes
expect_out exact "$want"
if grep -q $'\r' "$out/exact.out"; then problem "exact: stdout has \\r"; fi
run pid 'echo "pid=$$"; sqlite3 :memory: "select 6*7;"'
expect_status pid 0 yes
grep -qx 'pid=1' "$out/pid.out" || problem "pid: \$\$ did not reach the guest's bash (want pid=1)"
grep -qx 42 "$out/pid.out" || problem "pid: sqlite3's 42 is not a plain line on stdout"
grep -q 'OpenSBI\|^\[kernel\]\|cargo\|mkimage' "$out/pid.out" && problem "pid: boot or build messages on stdout"

# A long line arrives whole (the kernel took 1024 bytes of its command line and dropped the
# rest, so a long CMD ran cut short); one past the kernel's limit is refused, never cut.
long_word=$(head -c 3000 /dev/zero | tr '\0' x)
run long "echo $long_word | wc -c"
expect_status long 0 yes
expect_out long 3001
run toolong "echo $(head -c 9000 /dev/zero | tr '\0' y)"
[ "$rc" != 0 ] || problem "toolong: make exited 0"
grep -q 'command line is .* refused' "$out/toolong.err" "$out/toolong.out" ||
	problem "toolong: the kernel did not say it refused the command line"
grep -q yyyy "$out/toolong.out" && problem "toolong: a command longer than the limit ran"

# 4. Exit status.
run exit7 'echo before; exit 7'
expect_status exit7 7 no
expect_out exit7 before
grep -qx 'make run: the command exited with status 7' "$out/exit7.err" || problem "exit7: stderr does not name the status"
run true true
expect_status true 0 yes
expect_out true ""
# A failed build: no status file (the previous one is gone), make fails.
run badbuild true CARGO=false
[ ! -e "$status_file" ] || problem "badbuild: a failed build left a status file"
[ "$rc" != 0 ] || problem "badbuild: make exited 0"
# A timeout: no status file either.
run timeout 'echo started; sleep 600' TIMEOUT=25
[ ! -e "$status_file" ] || problem "timeout: a command killed by the timeout left a status file"
[ "$rc" != 0 ] || problem "timeout: make exited 0"

# 1 again: make reset-disks blanks them.
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL timeout -k 10 300 make --no-print-directory reset-disks DISK_DIR="$DISKS" \
	>"$out/reset.log" 2>&1 </dev/null || problem "make reset-disks failed (see $out/reset.log)"
run after-reset 'ls /dbfs /fat /root | grep -c keep.txt; exit 0'
expect_status after-reset 0 yes
expect_out after-reset 0

[ "$(person_disks)" = "$person_before" ] || problem "the person's disks in $BUILD/disk changed"
rm -rf "$DISKS"
if [ "$fail" != 0 ]; then
	echo "run-cmd: FAILED (outputs in $out/)" >&2
	exit 1
fi
echo "run-cmd: ok (persistence, reset, byte-exact CMD, plain lines, exit status, no status after a failed build or timeout)"
