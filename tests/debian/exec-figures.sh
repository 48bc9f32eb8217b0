#!/bin/bash
# Exec figures on the Debian root (guest side of `make bench-debian`): MemFree taken by 20
# running `sleep 100`, 50 exec+exit of Debian's dynamically linked /usr/bin/true and of our
# static busybox (`/opt/dbfs-os/bin/busybox true`) run from bash, three `python3 -c pass`. Times are
# microseconds of the guest clock: under `-icount shift=0` one nanosecond per instruction
# (idle time skipped), so they count instructions.
free_kb() { local k v r; while read -r k v r; do [ "$k" = MemFree: ] && echo "$v"; done </proc/meminfo; }
us() { local t=$EPOCHREALTIME; echo "${t/./}"; }
for i in 1 2 3; do /usr/bin/sleep 0; /usr/bin/true; /opt/dbfs-os/bin/busybox true; done
a=$(free_kb)
pids=()
for i in $(seq 20); do /usr/bin/sleep 100 & pids+=($!); done
/usr/bin/sleep 5
b=$(free_kb)
echo "FIGURE sleep20 memfree_before_kib=$a memfree_during_kib=$b used_kib=$((a - b))"
kill "${pids[@]}"; wait 2>/dev/null
for prog in /usr/bin/true "/opt/dbfs-os/bin/busybox true"; do
	s=$(us); for i in $(seq 50); do $prog; done; e=$(us)
	echo "FIGURE exec50 prog='$prog' total_us=$((e - s)) per_exec_us=$(((e - s) / 50))"
done
for i in 1 2 3; do
	s=$(us); python3 -c pass; e=$(us)
	echo "FIGURE python3_c_pass run=$i us=$((e - s))"
done
echo "FIGURES DONE"
