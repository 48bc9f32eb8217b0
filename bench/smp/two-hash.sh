#!/usr/bin/env bash
# The two-hash CPU-scaling figure of docs/BENCHMARKS.md "Several harts" (`make bench-smp-hash`).
#
# PAIRS times: one boot with SMP_A harts, then one with SMP_B (alternating, so host load hits
# both alike). Each boot (QEMU -snapshot: the disk images stay as they are) writes a MIB MiB
# file on /dbfs, syncs, hashes it twice to cache it (and to let the write-back of the new file
# finish), then times busybox sha256sum alone and two side by
# side, printing /proc/bkl (the per-hart big-kernel-lock, IPI and idle counters) after each.
# Prints one line per boot (`TWOHASH smp=N alone=S pair=S ratio=R load=L vcpu_run=S
# vcpu_wait=S`: load = the host's 1-minute load average at the boot's start; vcpu_run and
# vcpu_wait = the seconds QEMU's vCPU threads ran on a host CPU and waited for one while the
# pair ran, from /proc/PID/task/*/schedstat) and the medians per SMP value. Logs in
# BUILD/smp-hash/.
#
# Environment: KERNEL (required), BUILD (build), MEM (1G), PAIRS (3), MIB (48), SMP_A (1),
# SMP_B (2), BOOT_TIMEOUT (300 s), PARAMS (more kernel parameters, e.g. unlocked_reads=0).
set -euo pipefail
kernel=${KERNEL:?KERNEL: path of the kernel ELF}
build=${BUILD:-build}
mem=${MEM:-1G}
pairs=${PAIRS:-3}
mib=${MIB:-48}
params=${PARAMS:-}
smps="${SMP_A:-1} ${SMP_B:-2}"
boot_timeout=${BOOT_TIMEOUT:-300}
dir=$build/smp-hash
mkdir -p "$dir"

guest="dd if=/dev/zero of=/dbfs/h bs=1M count=$mib 2>/dev/null; sync; sha256sum /dbfs/h >/dev/null; \
sha256sum /dbfs/h >/dev/null; \
echo ALONE; cat /proc/bkl; time sha256sum /dbfs/h; echo PAIR; cat /proc/bkl; \
time sh -c \"sha256sum /dbfs/h & sha256sum /dbfs/h & wait\"; echo END; cat /proc/bkl; sleep 1"

# busybox time's "real\t0m 1.50s" (or "real 0m1.50s") as seconds.
secs() { sed -n 's/^real[[:space:]]*\([0-9]*\)m[[:space:]]*\([0-9.]*\)s.*/\1 \2/p' | sed -n "${1}p" |
	awk '{ printf "%.2f", $1 * 60 + $2 }'; }

# The summed schedstat of QEMU $1's vCPU threads: "RUN_NS WAIT_NS".
vcpu_stat() {
	local t run=0 wait=0 r w
	for t in /proc/"$1"/task/*; do
		case $(cat "$t/comm" 2>/dev/null) in CPU*) ;; *) continue ;; esac
		read -r r w _ <"$t/schedstat" || continue
		run=$((run + r)) wait=$((wait + w))
	done
	echo "$run $wait"
}

results=()
for p in $(seq 1 "$pairs"); do
	for smp in $smps; do
		log=$dir/boot-$p-smp$smp.log
		load=$(cut -d' ' -f1 /proc/loadavg)
		timeout --foreground -k 10 "$boot_timeout" qemu-system-riscv64 -machine virt -nographic \
			-bios default -m "$mem" -smp "$smp" -snapshot -name debug-threads=on -kernel "$kernel" \
			-drive file="$build"/root.img,if=none,format=raw,id=vda -device virtio-blk-device,drive=vda,queue-size=1024 \
			-drive file="$build"/fat.img,if=none,format=raw,id=vdb -device virtio-blk-device,drive=vdb,queue-size=1024 \
			-drive file="$build"/raw.img,if=none,format=raw,id=vdc -device virtio-blk-device,drive=vdc,queue-size=1024 \
			-drive file="$build"/dbfs.img,if=none,format=raw,id=vdd -device virtio-blk-device,drive=vdd,queue-size=1024 \
			-append "init=/bin/sh log=warn $params -- -c '$guest'" </dev/null >"$log" 2>&1 &
		tpid=$!
		# The host's view of the pair: the time QEMU's vCPU threads ran and waited for a host
		# CPU (schedstat: ns on a CPU, ns runnable but waiting), sampled at PAIR and END.
		qpid="" at_pair="" at_end=""
		while kill -0 "$tpid" 2>/dev/null; do
			[ -n "$qpid" ] || qpid=$(pgrep -P "$tpid" || true)
			if [ -n "$qpid" ] && [ -z "$at_pair" ] && grep -aq '^PAIR' "$log"; then at_pair=$(vcpu_stat "$qpid"); fi
			if [ -n "$qpid" ] && [ -z "$at_end" ] && grep -aq '^END' "$log"; then at_end=$(vcpu_stat "$qpid"); fi
			sleep 0.02
		done
		wait "$tpid" || true
		host=""
		if [ -n "$at_pair" ] && [ -n "$at_end" ]; then
			host=$(echo "$at_pair $at_end" | awk '{ printf " vcpu_run=%.2f vcpu_wait=%.2f", ($3 - $1) / 1e9, ($4 - $2) / 1e9 }')
		fi
		alone=$(tr -d '\r' <"$log" | secs 1)
		pair=$(tr -d '\r' <"$log" | secs 2)
		if [ -z "$alone" ] || [ -z "$pair" ]; then
			echo "two-hash: boot $p with SMP=$smp gave no times (see $log)" >&2
			exit 1
		fi
		ratio=$(awk -v a="$alone" -v b="$pair" 'BEGIN { printf "%.2f", b / a }')
		echo "TWOHASH smp=$smp alone=$alone pair=$pair ratio=$ratio load=$load$host"
		results+=("$smp $alone $pair $ratio")
	done
done
# The median of column $2 of the results of SMP=$1.
median() { printf '%s\n' "${results[@]}" | awk -v s="$1" -v c="$2" '$1 == s { print $c }' | sort -n |
	awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
for smp in $smps; do
	echo "TWOHASH median smp=$smp alone=$(median "$smp" 2) pair=$(median "$smp" 3) ratio=$(median "$smp" 4) (of $pairs boots)"
done
