# fio-jobs: run one fio job file (bench/fio/*.fio) on each directory in turn, REPS times,
# alternating the directories, and print a RESULT line per job line and run, then a table of
# medians. POSIX sh: the guest runs it under busybox sh (installed as /bin/fio-jobs, job files
# in /etc/fio), the host under bash (`make fio-host`), so both tables come from the same job
# file and the same parsing.
#
#   fio-jobs JOBFILE REPS NAME=DIR...
#
# Environment (defaults): SIZE (16m) bytes per job, JOBS (1) numjobs, BS (1m) block size,
# DIRECT (0), RUNTIME (10) seconds for time-limited lines, LOOPS (1) times each line runs over
# its files (fio's `loops`: longer runs for small files), THREAD (0; 1 runs the jobs as
# threads), FIO (fio), QD (16) and IOSIZE (4m) for qd.fio. Jobs named setup-* (a cache
# drop before a line) get no RESULT line. IOSIZE is for qd.fio: the bytes all jobs of a run read
# together (each job IOSIZE_JOB = IOSIZE / JOBS). A NAME=DIR whose DIR is a disk
# (e.g. raw=/dev/vdc) is for job files that name ${FILE} (the disk itself) rather than
# ${DIR} (a directory of files, or FILE in it). RESULT fields: MBps (10^6 bytes/s), iops, and fio's completion-latency
# percentiles p50_us and p99_us.
#
# JOBS may be a comma-separated list (JOBS=1,4): each repetition then runs the job file once
# per value on every directory, and a closing table sets each value against the first, per
# line and directory (ratio of medians, and in how many repetitions the value was at least as
# fast as the first in the same repetition). With TOTAL (e.g. 64m) the jobs of a run share
# that many bytes (SIZE = TOTAL / JOBS), so 1 job and 4 jobs move the same data.
#
# Order: repetition r starts with the (r-1)-th directory (mod their number) and the (r-1)-th
# jobs value, so no system always runs first, or right after the same other system (in one
# boot the run before leaves its write-back, timers and freed space behind).
job=$1
reps=$2
shift 2
[ -n "$job" ] && [ -n "$reps" ] && [ $# -gt 0 ] || {
	echo "usage: fio-jobs JOBFILE REPS NAME=DIR..." >&2
	exit 2
}
: "${SIZE:=16m}" "${JOBS:=1}" "${BS:=1m}" "${DIRECT:=0}" "${RUNTIME:=10}" "${THREAD:=0}"
: "${LOOPS:=1}" "${FIO:=fio}" "${QD:=16}" "${IOSIZE:=4m}"
case $LOOPS in '' | *[!0-9]* | 0) echo "fio-jobs: LOOPS=$LOOPS: a whole number above 0" >&2; exit 2 ;; esac
export SIZE BS DIRECT RUNTIME LOOPS QD IOSIZE
jobs_list=$(printf '%s' "$JOBS" | tr ',' ' ')
for j in $jobs_list; do
	case $j in '' | *[!0-9]* | 0) echo "fio-jobs: JOBS=$JOBS: whole numbers above 0, comma-separated" >&2; exit 2 ;; esac
done

# Bytes of a size such as 64m, 4k, 1g or 1048576.
to_bytes() {
	case $1 in
	*[kK]) echo $((${1%?} * 1024)) ;;
	*[mM]) echo $((${1%?} * 1048576)) ;;
	*[gG]) echo $((${1%?} * 1073741824)) ;;
	*) echo $(($1)) ;;
	esac
}
iosize_bytes=$(to_bytes "$IOSIZE") || exit 2
if [ -n "${TOTAL:-}" ]; then
	total_bytes=$(to_bytes "$TOTAL") || exit 2
	[ "$total_bytes" -gt 0 ] || { echo "fio-jobs: TOTAL=$TOTAL is not a size" >&2; exit 2; }
fi

# The words of list $2.. rotated left by $1.
rotate() {
	by=$1
	shift
	n=$#
	i=0
	out=
	while [ "$i" -lt "$n" ]; do
		k=$(((i + by) % n + 1))
		eval "out=\"\$out \${$k}\""
		i=$((i + 1))
	done
	printf '%s' "$out"
}
threadopt=
[ "$THREAD" = 1 ] && threadopt=--thread
tag=$(basename "$job" .fio)
mode=procs
[ "$THREAD" = 1 ] && mode=threads
all=
status=0
rep=1
while [ "$rep" -le "$reps" ]; do
	for jobs in $(rotate $((rep - 1)) $jobs_list); do
		export JOBS=$jobs
		if [ -n "${TOTAL:-}" ]; then
			export SIZE=$((total_bytes / jobs / 4096 * 4096))
		fi
		export IOSIZE_JOB=$((iosize_bytes / jobs / 4096 * 4096))
		for spec in $(rotate $((rep - 1)) "$@"); do
			name=${spec%%=*}
			dir=${spec#*=}
			if [ -b "$dir" ]; then
				# A disk: job files that name FILE (qd.fio) read and write it whole.
				jobdir=$dir
				file=$dir
			else
				mkdir -p "$dir/fio-jobs" || { echo "cannot create $dir/fio-jobs"; status=1; continue; }
				jobdir=$dir/fio-jobs
				file=$jobdir/fio.file
			fi
			out=$(DIR="$jobdir" FILE="$file" $FIO $threadopt --minimal "$job" 2>&1)
			# Terse v3: field 3 job name, 6-8 read KiB/KiB/s/IOPS, 18-37 read completion
			# percentiles, 47-49 the same for writes, 59-78 their percentiles ("50.000000%=us").
			lines=$(printf '%s\n' "$out" | awk -F';' -v fs="$name" -v rep="$rep" -v tag="$tag" \
				-v bs="$BS" -v jobs="$JOBS" -v mode="$mode" '
				$1 == "3" && $3 !~ /^setup-/ {
					if ($6 > 0) { bw = $7; iops = $8; from = 18 } else { bw = $48; iops = $49; from = 59 }
					p50 = ""; p99 = ""
					for (i = from; i < from + 20; i++) {
						split($i, kv, "=")
						if (kv[1] == "50.000000%") p50 = kv[2]
						if (kv[1] == "99.000000%") p99 = kv[2]
					}
					printf "RESULT bench=fio-%s-%s-%s-%dj%s bs=%s jobs=%d mode=%s fs=%s rep=%d MBps=%.1f iops=%d p50_us=%s p99_us=%s\n", \
						tag, $3, bs, jobs, mode == "threads" ? "t" : "", bs, jobs, mode, fs, rep, bw * 1024 / 1e6, iops, p50, p99
				}')
			if [ -z "$lines" ] || printf '%s\n' "$out" | grep -q 'verify: bad\|fio: pid=.*err='; then
				echo "fio failed on $name ($dir):"
				printf '%s\n' "$out" | grep -v '^3;' | head -20
				status=1
			fi
			printf '%s\n' "$lines"
			all="$all$lines
"
			[ -b "$dir" ] || rm -rf "$dir/fio-jobs"
		done
	done
	rep=$((rep + 1))
done
# awk: the `n[key]` values `v[key, 1..]` of `key` into `a[1..]`, ascending; returns how many.
sorted='
	function sorted(key, a,   m, x, y, t) {
		m = n[key]
		for (x = 1; x <= m; x++) a[x] = v[key, x]
		for (x = 1; x <= m; x++) for (y = x + 1; y <= m; y++) if (a[y] < a[x]) { t = a[x]; a[x] = a[y]; a[y] = t }
		return m
	}'
echo
if [ -n "${TOTAL:-}" ]; then per="$TOTAL in all per run"; else per="$SIZE per job"; fi
[ "$LOOPS" -gt 1 ] && per="$per, $LOOPS loops"
echo "  fio $tag, bs=$BS, $(printf '%s' "$jobs_list" | tr ' ' ,) job(s) as $mode, $per, median (min-max) of $reps: MB/s"
printf '%s' "$all" | awk "$sorted"'
	$1 == "RESULT" {
		for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
		key = f["bench"] SUBSEP f["fs"]
		if (!(f["bench"] in seenb)) { seenb[f["bench"]] = 1; benches[++nb] = f["bench"] }
		if (!(f["fs"] in seenf)) { seenf[f["fs"]] = 1; fss[++nf] = f["fs"] }
		n[key]++; v[key, n[key]] = f["MBps"] + 0
	}
	END {
		printf "  %-32s", "line"
		for (j = 1; j <= nf; j++) printf " %24s", fss[j]
		printf "\n"
		for (b = 1; b <= nb; b++) {
			printf "  %-32s", benches[b]
			for (j = 1; j <= nf; j++) {
				m = sorted(benches[b] SUBSEP fss[j], a)
				cell = m ? sprintf("%.1f (%.1f-%.1f)", a[int((m + 1) / 2)], a[1], a[m]) : "-"
				printf " %24s", cell
			}
			printf "\n"
		}
	}'

# Several jobs values: each against the first, per line and directory.
set -- $jobs_list
if [ $# -gt 1 ]; then
	echo
	echo "  jobs against $1 job(s) in the same boot: ratio of medians (repetitions at least as fast)"
	printf '%s' "$all" | awk -v first="$1" "$sorted"'
		$1 == "RESULT" {
			for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
			base = f["bench"]; sub(/-[0-9]+jt?$/, "", base)
			key = base SUBSEP f["fs"] SUBSEP f["jobs"]
			if (!(base in seenb)) { seenb[base] = 1; bases[++nb] = base }
			if (!(f["fs"] in seenf)) { seenf[f["fs"]] = 1; fss[++nf] = f["fs"] }
			if (!(f["jobs"] in seenj)) { seenj[f["jobs"]] = 1; js[++nj] = f["jobs"] }
			n[key]++; v[key, n[key]] = f["MBps"] + 0; byrep[key, f["rep"]] = f["MBps"] + 0
			reps[f["rep"]] = 1
		}
		function median(key,   m, a) {
			m = sorted(key, a)
			return m ? a[int((m + 1) / 2)] : 0
		}
		END {
			for (b = 1; b <= nb; b++) for (k = 1; k <= nf; k++) for (j = 1; j <= nj; j++) {
				if (js[j] == first) continue
				one = bases[b] SUBSEP fss[k] SUBSEP first
				many = bases[b] SUBSEP fss[k] SUBSEP js[j]
				if (!n[one] || !n[many]) continue
				won = 0; both = 0
				for (r in reps) if ((one, r) in byrep && (many, r) in byrep) {
					both++
					if (byrep[many, r] >= byrep[one, r]) won++
				}
				printf "  %-28s %-8s %2sj/%sj %5.2f (%d of %d)\n", bases[b], fss[k], js[j], first, \
					median(one) ? median(many) / median(one) : 0, won, both
			}
		}'
fi
exit $status
