#!/bin/bash
# fuzz-kernel.sh: trinity against the kernel (make fuzz-kernel, make test-trinity). One boot of
# a fresh copy of the trinity root per seed, on a fresh dbfs disk (/dbfs), running
# tests/trinity/guest.sh as the first process. The boot's hard timeout is the watchdog: a boot
# that has not powered off by then counts as a hang. After each boot `dbfs-fuse fsck` of the
# dbfs disk and of the root must be clean.
#
#   fuzz-kernel.sh OPS SEED...    OPS system calls per seed; the last line:
#   fuzz-kernel: N syscalls executed, seeds S..., P panics, H hangs, F runs without calls,
#   fsck clean|FAILED (K)
#
# Environment (mk/trinity.mk sets them): QEMU (the command line, ROOT_IMG as vda and DBFS_IMG
# as vdd), ROOT (the trinity root.img), ROOT_IMG, DBFS_IMG, DBFS_FUSE, MKIMAGE, PARAMS (the
# kernel parameters), CHILDREN (trinity's, default 4), TIMEOUT (seconds per boot), LOGDIR,
# FSCK_TIMEOUT (seconds per fsck, default 300).
set -u
ops=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
children=${CHILDREN:-4}
total=0 panics=0 hangs=0 fsck_bad=0 failed=0
for seed in "$@"; do
	log=$LOGDIR/trinity-$seed.log
	cp --sparse=always "$ROOT" "$ROOT_IMG" || exit 1
	stage=$LOGDIR/trinity-stage
	rm -rf "$stage" && mkdir -p "$stage" && cp "$here/guest.sh" "$stage/" || exit 1
	"$DBFS_FUSE" import "$ROOT_IMG" "$stage" --dir /root >/dev/null || exit 1
	rm -f "$DBFS_IMG" && $MKIMAGE blank "$DBFS_IMG" --size 256M >/dev/null || exit 1
	echo "fuzz-kernel: seed $seed, $ops syscalls, $children children, timeout ${TIMEOUT}s (log $log)"
	# shellcheck disable=SC2086 # QEMU is a command line
	timeout --foreground -k 10 "$TIMEOUT" $QEMU \
		-append "$PARAMS -- /root/guest.sh $seed $ops $children" </dev/null >"$log" 2>&1
	rc=$?
	ran=$(sed -n "s/^trinity-guest: seed $seed, \([0-9]*\) syscalls, exit .*/\1/p" "$log" | tail -1)
	if grep -q '\[kernel\] PANIC' "$log"; then
		panics=$((panics + 1))
		echo "fuzz-kernel: seed $seed: kernel panic:"
		grep -A3 '\[kernel\] PANIC' "$log" | head -8
	elif [ "$rc" = 124 ] || [ "$rc" = 137 ] || [ -z "$ran" ]; then
		hangs=$((hangs + 1))
		echo "fuzz-kernel: seed $seed: hang (no end line, QEMU status $rc); the log's last lines:"
		tail -5 "$log"
	fi
	if [ "${ran:-0}" = 0 ] && [ -n "$ran" ]; then
		failed=$((failed + 1))
		echo "fuzz-kernel: seed $seed: trinity made no system calls; the log's last lines:"
		tail -8 "$log"
	fi
	total=$((total + ${ran:-0}))
	for img in "$DBFS_IMG" "$ROOT_IMG"; do
		# Bounded: the fsck reads every byte of every file, holes too, so a huge sparse file
		# trinity made can keep it busy for hours; that counts as a failure, named.
		timeout -k 10 "${FSCK_TIMEOUT:-300}" "$DBFS_FUSE" fsck "$img" >"$log.fsck" 2>&1
		frc=$?
		[ "$frc" != 124 ] || echo "fsck did not finish in ${FSCK_TIMEOUT:-300} s" >>"$log.fsck"
		if [ "$frc" != 0 ]; then
			fsck_bad=$((fsck_bad + 1))
			echo "fuzz-kernel: seed $seed: fsck of $img failed:"
			tail -5 "$log.fsck"
		fi
	done
	echo "fuzz-kernel: seed $seed: ${ran:-0} syscalls, QEMU status $rc"
done
fsck=clean
[ "$fsck_bad" = 0 ] || fsck="FAILED ($fsck_bad)"
echo "fuzz-kernel: $total syscalls executed, seeds $*, $panics panics, $hangs hangs, $failed runs without calls, fsck $fsck"
[ "$panics" = 0 ] && [ "$hangs" = 0 ] && [ "$failed" = 0 ] && [ "$fsck_bad" = 0 ]
