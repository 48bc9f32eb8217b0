# sqlite-bench: the in-guest half of `make sqlite-bench` (installed as /bin/sqlite-bench).
# Runs sqlite's own benchmark, speedtest1, on each file system in turn (alternated, so host
# load drifts over all of them alike), REPS times, each run on a fresh database file, and
# prints one RESULT line per run (speedtest1's TOTAL in seconds, and the wall-clock seconds of
# the whole program, start-up and database creation included) and a table of medians.
#
#   sh /bin/sqlite-bench [REPS [SIZE [DIR...]]]      defaults: 3 10 /dbfs /fat

reps=${1:-3}
size=${2:-10}
[ $# -gt 0 ] && shift
[ $# -gt 0 ] && shift
[ $# -eq 0 ] && set -- /dbfs /fat

status=0
results=""
rep=1
while [ "$rep" -le "$reps" ]; do
	for dir in "$@"; do
		fs=$(basename "$dir")
		db="$dir/speedtest1-$rep.db"
		rm -f "$db" "$db-journal"
		start=$(date +%s%N 2>/dev/null)
		# Temporary files, should sqlite make any (it is built to keep them in memory), on
		# the file system measured, not on /.
		out=$(cd "$dir" && SQLITE_TMPDIR="$dir" speedtest1 --size "$size" "$db" 2>&1) || { echo "$out"; echo "speedtest1 failed on $dir"; status=1; }
		end=$(date +%s%N 2>/dev/null)
		total=$(echo "$out" | awk '/TOTAL/ { sub(/s$/, "", $NF); print $NF }')
		wall=$(awk -v s="$start" -v e="$end" 'BEGIN { if (s ~ /N/ || s == "") print "?"; else printf "%.3f", (e - s) / 1e9 }')
		echo "RESULT bench=speedtest1 fs=$fs size=$size rep=$rep secs=$total wall_secs=$wall"
		results="$results$fs $total
"
		rm -f "$db" "$db-journal"
	done
	rep=$((rep + 1))
done

echo
echo "  speedtest1 --size $size, TOTAL seconds (median of $reps)"
printf '  %-8s %10s %10s %10s\n' fs median min max
for dir in "$@"; do
	fs=$(basename "$dir")
	printf '%s' "$results" | grep "^$fs " | awk '{ print $2 }' | sort -n | awk -v fs="$fs" '
		{ v[NR] = $1 }
		END {
			if (NR == 0) exit
			m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "  %-8s %10.3f %10.3f %10.3f\n", fs, m, v[1], v[NR]
		}'
done
exit $status
