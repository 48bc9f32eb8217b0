# fio-jobs: run one fio job file (bench/fio/*.fio) on each directory in turn, REPS times,
# alternating the directories, and print a RESULT line per job line and run, then a table of
# medians. POSIX sh: the guest runs it under busybox sh (installed as /bin/fio-jobs, job files
# in /etc/fio), the host under bash (`make fio-host`), so both tables come from the same job
# file and the same parsing.
#
#   fio-jobs JOBFILE REPS NAME=DIR...
#
# Environment (defaults): SIZE (16m) bytes per job, JOBS (1) numjobs, BS (1m) block size,
# DIRECT (0), RUNTIME (10) seconds for time-limited lines, THREAD (0; 1 runs the jobs as
# threads), FIO (fio). RESULT fields: MBps (10^6 bytes/s), iops, and fio's completion-latency
# percentiles p50_us and p99_us.

job=$1
reps=$2
shift 2
[ -n "$job" ] && [ -n "$reps" ] && [ $# -gt 0 ] || {
	echo "usage: fio-jobs JOBFILE REPS NAME=DIR..." >&2
	exit 2
}
: "${SIZE:=16m}" "${JOBS:=1}" "${BS:=1m}" "${DIRECT:=0}" "${RUNTIME:=10}" "${THREAD:=0}"
: "${FIO:=fio}"
export SIZE JOBS BS DIRECT RUNTIME
threadopt=
[ "$THREAD" = 1 ] && threadopt=--thread
tag=$(basename "$job" .fio)
mode=procs
[ "$THREAD" = 1 ] && mode=threads
all=
status=0

rep=1
while [ "$rep" -le "$reps" ]; do
	for spec in "$@"; do
		name=${spec%%=*}
		dir=${spec#*=}
		mkdir -p "$dir/fio-jobs" || { echo "cannot create $dir/fio-jobs"; status=1; continue; }
		out=$(DIR="$dir/fio-jobs" $FIO $threadopt --minimal "$job" 2>&1)
		# Terse v3: field 3 job name, 6-8 read KiB/KiB/s/IOPS, 18-37 read completion
		# percentiles, 47-49 the same for writes, 59-78 their percentiles ("50.000000%=us").
		lines=$(printf '%s\n' "$out" | awk -F';' -v fs="$name" -v rep="$rep" -v tag="$tag" \
			-v bs="$BS" -v jobs="$JOBS" -v mode="$mode" '
			$1 == "3" {
				if ($6 > 0) { bw = $7; iops = $8; from = 18 } else { bw = $48; iops = $49; from = 59 }
				p50 = ""; p99 = ""
				for (i = from; i < from + 20; i++) {
					split($i, kv, "=")
					if (kv[1] == "50.000000%") p50 = kv[2]
					if (kv[1] == "99.000000%") p99 = kv[2]
				}
				printf "RESULT bench=fio-%s-%s-%s bs=%s jobs=%d mode=%s fs=%s rep=%d MBps=%.1f iops=%d p50_us=%s p99_us=%s\n", \
					tag, $3, bs, bs, jobs, mode, fs, rep, bw * 1024 / 1e6, iops, p50, p99
			}')
		if [ -z "$lines" ] || printf '%s\n' "$out" | grep -q 'verify: bad\|fio: pid=.*err='; then
			echo "fio failed on $name ($dir):"
			printf '%s\n' "$out" | grep -v '^3;' | head -20
			status=1
		fi
		printf '%s\n' "$lines"
		all="$all$lines
"
		rm -rf "$dir/fio-jobs"
	done
	rep=$((rep + 1))
done

echo
echo "  fio $tag, bs=$BS, $JOBS job(s) as $mode, $SIZE per job, median (min-max) of $reps: MB/s"
printf '%s' "$all" | awk '
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
				key = benches[b] SUBSEP fss[j]; m = n[key]
				for (x = 1; x <= m; x++) a[x] = v[key, x]
				for (x = 1; x <= m; x++) for (y = x + 1; y <= m; y++) if (a[y] < a[x]) { t = a[x]; a[x] = a[y]; a[y] = t }
				cell = m ? sprintf("%.1f (%.1f-%.1f)", a[int((m + 1) / 2)], a[1], a[m]) : "-"
				printf " %24s", cell
			}
			printf "\n"
		}
	}'
exit $status
