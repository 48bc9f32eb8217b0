#!/usr/bin/env bash
# Boot loop (`make test-boot-loop`): BOOTS short boots with SMP harts, each mounting the disks
# (the dbfs one checked by the kernel's fsck, dbfs_fsck=1), starting the secondary harts and
# running `/bin/sh -c 'cat /proc/bkl'` as init, then powering off. Every boot must print
# OpenSBI's banner once, the kernel's first line once, every hart's /proc/bkl line, and exit
# with status 0 within BOOT_TIMEOUT: a hart entering the boot path twice, a hang at start-up
# or an overflowed boot stack (the kernel panics when it finds one) fails the test.
#
# Environment: KERNEL (required), BUILD (build), DBFS_IMG (BUILD/dbfs.img; opened read-only
# through QEMU's snapshot=on, as are the other disks), BOOTS (30), SMP (2), MEM (1G),
# BOOT_TIMEOUT (120 s).
set -euo pipefail
kernel=${KERNEL:?KERNEL: path of the kernel ELF}
build=${BUILD:-build}
img=${DBFS_IMG:-$build/dbfs.img}
boots=${BOOTS:-30}
smp=${SMP:-2}
mem=${MEM:-1G}
boot_timeout=${BOOT_TIMEOUT:-120}
dir=$build/boot-loop
mkdir -p "$dir"
rm -f "$dir"/boot-*.log

start=$(date +%s)
for b in $(seq 1 "$boots"); do
	log=$dir/boot-$b.log
	drives=()
	for d in "$build/root.img:vda" "$build/fat.img:vdb" "$build/raw.img:vdc" "$img:vdd"; do
		drives+=(-drive "file=${d%:*},if=none,format=raw,id=${d##*:},snapshot=on"
			-device "virtio-blk-device,drive=${d##*:},queue-size=1024")
	done
	status=0
	timeout --foreground -k 10 "$boot_timeout" qemu-system-riscv64 -machine virt -nographic \
		-bios default -m "$mem" -smp "$smp" -kernel "$kernel" "${drives[@]}" \
		-append "init=/bin/sh log=warn dbfs_fsck=1 -- -c 'cat /proc/bkl'" </dev/null >"$log" 2>&1 ||
		status=$?
	banners=$(grep -c '^OpenSBI v' "$log" || true)
	firsts=$(grep -c '^dbfs-os: ' "$log" || true)
	harts=$(grep -c '^hart[0-9]* acquires ' "$log" || true)
	if [ "$status" != 0 ] || [ "$banners" != 1 ] || [ "$firsts" != 1 ] || [ "$harts" != "$smp" ]; then
		echo "boot loop FAILED at boot $b: exit status $status, $banners OpenSBI banners, $firsts kernel first lines, $harts of $smp harts in /proc/bkl"
		tail -n 30 "$log"
		exit 1
	fi
done
echo "boot loop passed: $boots boots with SMP=$smp, each with one banner, one first line and every hart, $(($(date +%s) - start)) s"
