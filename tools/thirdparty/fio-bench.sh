# fio-bench: the in-guest half of `make fio-bench` (installed as /bin/fio-bench). fio with the
# psync engine on each file system in turn (alternated), REPS times: a 16 MiB file written in
# 1 MiB blocks (fsync at the end, counted), then read at random in 4 KiB blocks. One RESULT line
# per run (fio's own bandwidth and IOPS, from --minimal's fields) and a table of medians.
#
#   sh /bin/fio-bench [REPS [DIR...]]      defaults: 3 /dbfs /fat

reps=${1:-3}
[ $# -gt 0 ] && shift
[ $# -eq 0 ] && set -- /dbfs /fat

status=0
results=""
rep=1
while [ "$rep" -le "$reps" ]; do
	for dir in "$@"; do
		fs=$(basename "$dir")
		f="$dir/fio-bench.dat"
		rm -f "$f"
		# --minimal (terse v3): field 7/8 read KiB/s and IOPS, 48/49 write KiB/s and IOPS.
		w=$(fio --name=seqwrite --filename="$f" --size=16m --bs=1m --rw=write --ioengine=psync \
			--end_fsync=1 --minimal 2>/dev/null | awk -F';' '{ print $48, $49 }')
		r=$(fio --name=randread4k --filename="$f" --size=16m --bs=4k --rw=randread --ioengine=psync \
			--minimal 2>/dev/null | awk -F';' '{ print $7, $8 }')
		[ -n "$w" ] && [ -n "$r" ] || { echo "fio failed on $dir"; status=1; }
		set -- $w $r "$@"
		echo "RESULT bench=fio-seqwrite1m fs=$fs rep=$rep KiBps=$1 iops=$2"
		echo "RESULT bench=fio-randread4k fs=$fs rep=$rep KiBps=$3 iops=$4"
		results="$results$fs w $1
$fs r $3 $4
"
		shift 4
		rm -f "$f"
	done
	rep=$((rep + 1))
done

echo
echo "  fio psync, 16 MiB file, median of $reps (MiB/s; IOPS for 4 KiB random reads)"
printf '  %-8s %16s %16s %12s\n' fs seqwrite-1m randread-4k iops-4k
for dir in "$@"; do
	fs=$(basename "$dir")
	w=$(printf '%s' "$results" | awk -v fs="$fs" '$1 == fs && $2 == "w" { print $3 }' | sort -n |
		awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] / 1024 }')
	r=$(printf '%s' "$results" | awk -v fs="$fs" '$1 == fs && $2 == "r" { print $3 }' | sort -n |
		awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] / 1024 }')
	i=$(printf '%s' "$results" | awk -v fs="$fs" '$1 == fs && $2 == "r" { print $4 }' | sort -n |
		awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }')
	printf '  %-8s %16.1f %16.1f %12d\n' "$fs" "$w" "$r" "$i"
done
exit $status
