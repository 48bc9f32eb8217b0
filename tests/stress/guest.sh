#!/bin/bash
# The stress tools in the guest (mk/stress.mk; docs/RELIABILITY.md): LTP's fsx-linux and
# fsstress, and stress-ng, each on a directory of /dbfs and then of /fat. The first process
# of a copy of the stress root (the Debian root with stress-ng, LTP's two programs in
# /opt/ltp/testcases/bin); the host checks the lines below and then fscks the disks.
#
#   guest.sh fsx N [FSX_ARGS...]      fsx-linux -N N FSX_ARGS on each file system
#   guest.sh fsstress N               fsstress -p 4 -n N on each file system
#   guest.sh stress T SEQ CLASS...    every stressor of each stress-ng CLASS, one at a time:
#                                     stress-ng --STRESSOR SEQ --verify --timeout T
#   guest.sh profile N                fsx-linux -N N (fsx01's arguments), then fsxprof (the same
#                                     operation mix, each step timed; the kernel's counters per
#                                     operation kind) on each file system
#   guest.sh short                    the short set for `make test`: fsx-linux -N 1000, fsstress
#                                     -n 200, one stressor of each class (5 s) on each file system
#
# FS=dbfs or FS=fat in the environment (the kernel passes none: the host writes
# /root/stress.conf, sourced here) restricts the runs to one file system.
#
# One line per run:
#   FSX fs=F ops=N result=pass|fail secs=S              (fsx-linux's TPASS: every op compared)
#   FSSTRESS fs=F procs=4 ops=N result=pass|fail secs=S files=N
#   STRESSNG fs=F class=C stressor=S result=pass|fail|skip secs=S [reason=...]
# and at the end `stress: N passed, N failed, N skipped`. A stressor is skipped when
# stress-ng itself says it cannot run here (its reason, e.g. a system call's ENOSYS, is kept);
# it fails when it reports a failure (a verification error), dies, or outlives its time.
# The exit status is 0 when nothing failed.
[ -f /root/stress.conf ] && . /root/stress.conf
export PATH=/opt/ltp/testcases/bin:/usr/sbin:/usr/bin:/sbin:/bin
export LTPROOT=/opt/ltp
LOG=/dbfs/stress-log
mkdir -p "$LOG"
passed=0 failed=0 skipped=0
systems=${FS:-dbfs fat}

result() {
	case $1 in
	pass) passed=$((passed + 1)) ;;
	skip) skipped=$((skipped + 1)) ;;
	*) failed=$((failed + 1)) ;;
	esac
}

# Print a failed run's last lines, indented.
show_tail() {
	tail -n "${2:-8}" "$1" | cut -c1-200 | sed 's/^/    /'
}

# fsx FS N ARGS...: fsx-linux in a fresh directory of FS (its TMPDIR). LTP's own timeout
# (1800 s) is sized for hardware: LTP_TIMEOUT_MUL gives the long runs room.
fsx() {
	local fs=$1 n=$2 start=$SECONDS out r
	shift 2
	rm -rf "/$fs/fsx" && mkdir -p "/$fs/fsx"
	out="$LOG/fsx-$fs.log"
	if TMPDIR=/$fs/fsx LTP_TIMEOUT_MUL=${LTP_TIMEOUT_MUL:-100} fsx-linux -N "$n" "$@" >"$out" 2>&1 &&
		grep -q 'TPASS.*All file operations succeed' "$out"; then
		r=pass
	else
		r=fail
	fi
	echo "FSX fs=$fs ops=$n args=\"$*\" result=$r secs=$((SECONDS - start))"
	[ $r = pass ] || show_tail "$out"
	result $r
	rm -rf "/$fs/fsx"
}

# fsstress FS N: 4 processes, N operations each, in /FS/fsstress (left there for the host's
# fsck). fsstress does not check data itself: the run passes when it exits 0 and every file it
# left can be read to its end (its size as stat says).
fsstress_run() {
	local fs=$1 n=$2 start=$SECONDS out r=pass files bad
	rm -rf "/$fs/fsstress"
	out="$LOG/fsstress-$fs.log"
	fsstress -d "/$fs/fsstress" -p 4 -n "$n" -l 1 -c >"$out" 2>&1 || r=fail
	files=$(find "/$fs/fsstress" -type f | wc -l)
	bad=$(find "/$fs/fsstress" -type f -exec sh -c \
		'for f; do [ "$(wc -c <"$f")" = "$(stat -c %s "$f")" ] || echo "$f"; done' _ {} + 2>&1 | head -5)
	[ -z "$bad" ] || { r=fail; echo "  short reads: $bad" >>"$out"; }
	echo "FSSTRESS fs=$fs procs=4 ops=$n result=$r secs=$((SECONDS - start)) files=$files $(grep -m1 '^seed' "$out" | tr -d ' ')"
	[ $r = pass ] || show_tail "$out"
	result $r
}

# stressor FS CLASS NAME T SEQ: one stressor in /FS/stress-ng; coreutils' timeout ends one that
# outlives its time by a minute (a hang: it fails).
stressor() {
	local fs=$1 class=$2 s=$3 t=$4 seq=$5 start=$SECONDS out rc r reason=
	out="$LOG/sng-$fs-$s.log"
	rm -rf "/$fs/stress-ng" && mkdir -p "/$fs/stress-ng"
	(cd "/$fs/stress-ng" && timeout -k 10 $((t + 60)) stress-ng --"$s" "$seq" --verify --timeout "$t" \
		--temp-path "/$fs/stress-ng" --metrics-brief >"$out" 2>&1)
	rc=$?
	if grep -Eq "^stress-ng: (info|fail): +\[[0-9]+\] passed: [1-9]" "$out" &&
		grep -Eq "failed: 0" "$out" && [ $rc = 0 ]; then
		r=pass
	elif [ $rc = 3 ] || [ $rc = 4 ] || grep -Eq "skipped: [1-9]" "$out" && ! grep -Eq "failed: [1-9]" "$out"; then
		r=skip
		reason=$(grep -Eim1 "skipping|skipped|not implemented|not supported|ENOSYS|cannot|no resources|requires|need" "$out" |
			grep -v 'skipped: ' | sed -e 's/^stress-ng: [a-z]*: *\[[0-9]*\] //' | cut -c1-160)
		reason=" reason=\"${reason:-exit $rc}\""
	else
		r=fail
	fi
	echo "STRESSNG fs=$fs class=$class stressor=$s result=$r secs=$((SECONDS - start)) rc=$rc$reason"
	[ $r != fail ] || show_tail "$out" 12
	result $r
	# Anything it left running (a child stress-ng lost) goes before the next.
	pkill -9 -x stress-ng 2>/dev/null
	wait 2>/dev/null
}

stress_class() {
	local fs=$1 class=$2 t=$3 seq=$4 s list
	list=$(stress-ng --class "$class?" 2>&1 | sed -n 's/^class .* stressors: //p')
	[ -n "$list" ] || {
		echo "STRESSNG fs=$fs class=$class result=fail (no stressor list)"
		result fail
		return
	}
	for s in $list; do
		case " $STRESS_ONLY " in "  ") ;; *" $s "*) ;; *) continue ;; esac
		stressor "$fs" "$class" "$s" "$t" "$seq"
	done
}

mode=$1
shift
case $mode in
fsx)
	n=$1
	shift
	for fs in $systems; do fsx "$fs" "$n" "$@"; done
	;;
fsstress)
	for fs in $systems; do fsstress_run "$fs" "$1"; done
	;;
profile)
	for fs in $systems; do
		fsx "$fs" "$1" -l 500000 -r 4096 -t 4096 -w 4096
		rm -rf "/$fs/fsxprof" && mkdir -p "/$fs/fsxprof"
		if /root/fsxprof "/$fs/fsxprof" "$1" 500000; then result pass; else result fail; fi
		rm -rf "/$fs/fsxprof"
	done
	;;
stress)
	t=$1 seq=$2
	shift 2
	for fs in $systems; do
		for class in "$@"; do stress_class "$fs" "$class" "$t" "$seq"; done
	done
	;;
short)
	for fs in $systems; do
		fsx "$fs" 1000 -l 500000 -r 4096 -t 4096 -w 4096
		fsstress_run "$fs" 200
		# A few stressors with --verify, one of each class, 5 s each, and those whose
		# findings were fixed (docs/RELIABILITY.md; fsize is not among them: its fallocate
		# emulation races its own timeout here, and testrunner guards RLIMIT_FSIZE).
		for cs in filesystem:dir filesystem:rename memory:mmap os:fork pipe:pipe scheduler:yield \
			io:hdd io:readahead memory:vm-segv filesystem:fpunch os:sigbus; do
			stressor "$fs" "${cs%%:*}" "${cs#*:}" 5 1
		done
	done
	;;
*)
	echo "guest.sh: unknown mode '$mode' (fsx, fsstress, stress, short)"
	exit 2
	;;
esac
stress-ng --version 2>/dev/null | head -1
echo "stress: $passed passed, $failed failed, $skipped skipped"
[ $failed = 0 ]
