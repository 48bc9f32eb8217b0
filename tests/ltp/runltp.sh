#!/bin/bash
# runltp.sh: run LTP cases in the guest (Debian's bash and coreutils, no Python, no kirk);
# installed as /opt/ltp/runltp.sh by mk/ltp.mk.
#
#   /opt/ltp/runltp.sh [LIST [TIMEOUT]]
#
# LIST: a runtest-style file (`name command args` lines; `#` starts a comment), default
# /opt/ltp/list.txt; TIMEOUT: seconds each case may take, enforced here with coreutils'
# `timeout` (SIGTERM, SIGKILL 5 s later), default 120. /opt/ltp/run.conf, when present, may set
# LIST and TIMEOUT (the host writes it: the kernel command line carries no arguments).
#
# Each case runs with `bash -c "command args"` in a fresh directory under TMPDIR (LTP_TMPDIR
# from run.conf, default /dbfs/ltp-tmp: `make ltp-fs` sets /fat/ltp-tmp for its FAT32 run),
# its output kept in /dbfs/ltp-log/NAME.log. One line per case:
#   VERDICT NAME Ns passed=N failed=N broken=N conf=N warn=N exit=N
# (VERDICT one of PASS FAIL BROK CONF WARN TIMEOUT CRASH MISSING; exit= the case's status)
# (the counts are the case's TPASS... results: its `Summary:` block, or for a test written to
# LTP's old API, its TPASS/TFAIL/TBROK/TCONF/TWARN lines). A case is
#   FAIL/BROK  when it reports a TFAIL/TBROK, or exits with LTP's TFAIL/TBROK bit (1, 2);
#   TIMEOUT    when the runner killed it at its time; CRASH when it died of a signal (124 or
#              137 before its time too: the status timeout(1) gives); MISSING when its
#              program is not installed (not built); each of these counts one `broken`;
#   CONF       when it only skipped (TCONF); WARN when it passed with a TWARN.
# A case that is not PASS prints, indented, its first TFAIL/TBROK/TCONF/TWARN lines (or its
# output's last lines when it has none), each cut at 200 characters.
# The last line: `LTP passed=N failed=N broken=N conf=N warn=N cases=N` (sums over the cases),
# after one `LTP cases: pass=N fail=N ... ` line of verdicts. The exit status is 0 when no
# case failed, broke, timed out, crashed or was missing; 1 otherwise.
LTPROOT=/opt/ltp
LIST=$LTPROOT/list.txt
TIMEOUT=120
[ -f "$LTPROOT/run.conf" ] && . "$LTPROOT/run.conf"
LIST=${1:-$LIST}
TIMEOUT=${2:-$TIMEOUT}
export LTPROOT TMPDIR=${LTP_TMPDIR:-/dbfs/ltp-tmp} PATH="$LTPROOT/testcases/bin:/usr/sbin:/usr/bin:/sbin:/bin:/opt/dbfs-os/bin"
# LTP's device tests (.needs_device, .format_device, .mount_device, .all_filesystems): the
# spare disk vdc (blank, 320 MiB) is LTP_DEV, which each case formats with mkfs.TYPE and
# mounts with mount(2): as LTP_DEV_FS_TYPE (default vfat), or for .all_filesystems each type
# of /proc/filesystems LTP knows (vfat), or only LTP_SINGLE_FS_TYPE (e.g. dbfs) when run.conf
# sets it.
[ -b /dev/vdc ] && export LTP_DEV=/dev/vdc
export LTP_DEV_FS_TYPE=${LTP_DEV_FS_TYPE:-vfat}
[ -n "${LTP_SINGLE_FS_TYPE:-}" ] && export LTP_SINGLE_FS_TYPE
# LTP's own per-test timeouts (SIGALRM) are sized for hardware; QEMU's TCG is slower.
export LTP_TIMEOUT_MUL=${LTP_TIMEOUT_MUL:-4}
LOGDIR=/dbfs/ltp-log
mkdir -p "$TMPDIR" "$LOGDIR"
# World-writable and sticky, as /tmp is: cases that drop to user nobody make their
# directories there too (symlink03). FAT32 (`make ltp-fs`) keeps no mode: nothing to set.
[ "$(stat -f -c %T "$TMPDIR")" = msdos ] || chmod 1777 "$TMPDIR"

tot_pass=0 tot_fail=0 tot_brok=0 tot_conf=0 tot_warn=0 cases=0
declare -A verdicts=()
start_all=$SECONDS

# count WORD FILE: the lines of FILE with LTP's result WORD (TPASS...) as a word.
count() {
	grep -cE "(^|[^A-Za-z_])$1([^A-Za-z_]|$)" "$2"
}

# summary FIELD FILE: FIELD's figure in the `Summary:` block (empty if none).
summary() {
	sed -n '/^Summary:$/,$p' "$2" | awk -v f="$1" '$1 == f { print $2; exit }'
}

# A case's processes left behind (a test's children that the kernel handed to init when the
# case was killed; the runner is init when the kernel starts it) are killed before the next.
reap_strays() {
	local round s pid rest ppid n=0
	for round in 1 2 3; do
		for s in /proc/[0-9]*/stat; do
			read -r pid rest <"$s" 2>/dev/null || continue
			rest=${rest##*) }
			ppid=${rest#* }
			ppid=${ppid%% *}
			if [ "$ppid" = $$ ]; then
				kill -9 "$pid" 2>/dev/null && n=$((n + 1))
			fi
		done
		wait 2>/dev/null
	done
	[ "$n" = 0 ] || echo "runltp: killed $n stray processes"
}

while read -r name cmd; do
	case $name in '' | '#'*) continue ;; esac
	[ -n "$cmd" ] || continue
	cases=$((cases + 1))
	log="$LOGDIR/$name.log"
	prog=${cmd%% *}
	if ! command -v "$prog" >/dev/null 2>&1; then
		verdict=MISSING p=0 f=0 b=1 c=0 w=0 secs=0 rc=
		echo "program $prog is not installed" >"$log"
	else
		dir=$(mktemp -d "$TMPDIR/case.XXXXXX")
		t0=$SECONDS
		(cd "$dir" && exec timeout -k 5 "$TIMEOUT" bash -c "$cmd") </dev/null >"$log" 2>&1
		rc=$?
		secs=$((SECONDS - t0))
		reap_strays >>"$log"
		rm -rf "$dir"
		if [ -n "$(summary passed "$log")" ]; then
			p=$(summary passed "$log") f=$(summary failed "$log") b=$(summary broken "$log")
			c=$(summary skipped "$log") w=$(summary warnings "$log")
			p=${p:-0} f=${f:-0} b=${b:-0} c=${c:-0} w=${w:-0}
		else
			p=$(count TPASS "$log") f=$(count TFAIL "$log") b=$(count TBROK "$log")
			c=$(count TCONF "$log") w=$(count TWARN "$log")
		fi
		if { [ "$rc" = 124 ] || [ "$rc" = 137 ]; } && [ "$secs" -ge "$TIMEOUT" ]; then
			verdict=TIMEOUT b=$((b + 1))
		elif [ "$rc" -gt 128 ] || [ "$rc" = 124 ]; then
			verdict=CRASH b=$((b + 1))
			echo "killed by signal $((rc - 128))" >>"$log"
		elif [ "$f" -gt 0 ] || [ $((rc & 1)) != 0 ]; then
			verdict=FAIL
			[ "$f" -gt 0 ] || f=1
		elif [ "$b" -gt 0 ] || [ $((rc & 2)) != 0 ] || { [ "$rc" != 0 ] && [ $((rc & 36)) = 0 ]; }; then
			# Also an exit status that is none of LTP's bits: the program failed its own way.
			verdict=BROK
			[ "$b" -gt 0 ] || b=1
		elif [ "$p" = 0 ] && { [ "$c" -gt 0 ] || [ $((rc & 32)) != 0 ]; }; then
			verdict=CONF
			[ "$c" -gt 0 ] || c=1
		elif [ "$w" -gt 0 ] || [ $((rc & 4)) != 0 ]; then
			verdict=WARN
		else
			verdict=PASS
		fi
	fi
	tot_pass=$((tot_pass + p)) tot_fail=$((tot_fail + f)) tot_brok=$((tot_brok + b))
	tot_conf=$((tot_conf + c)) tot_warn=$((tot_warn + w))
	verdicts[$verdict]=$((${verdicts[$verdict]:-0} + 1))
	echo "$verdict $name ${secs}s passed=$p failed=$f broken=$b conf=$c warn=$w exit=${rc:-none}"
	if [ "$verdict" != PASS ]; then
		why=$(grep -E 'TFAIL|TBROK|TCONF|TWARN' "$log" | head -n 6)
		[ -n "$why" ] || why=$(grep -vE '^(Summary:|passed|failed|broken|skipped|warnings) ' "$log" | tail -n 6)
		printf '%s\n' "$why" | cut -c1-200 | sed 's/^/    /'
	fi
done <"$LIST"

line="LTP cases:"
for v in PASS FAIL BROK CONF WARN TIMEOUT CRASH MISSING; do
	line="$line ${v,,}=${verdicts[$v]:-0}"
done
echo "$line time=$((SECONDS - start_all))s"
echo "LTP passed=$tot_pass failed=$tot_fail broken=$tot_brok conf=$tot_conf warn=$tot_warn cases=$cases"
[ "$tot_fail" = 0 ] && [ "$tot_brok" = 0 ]
