#!/bin/bash
# tests/debian/run-figures.sh [KERNEL] [icount]: boot a copy of the Debian root
# (build/debian-root.img, `make debian-root`) with KERNEL (default: this tree's) and run
# tests/debian/exec-figures.sh with a static busybox (build/thirdparty/busybox) beside it;
# prints its FIGURE lines. `icount` runs QEMU with -icount shift=0 (figures in instructions).
set -euo pipefail
cd "$(dirname "$0")/../.."
B=build
K=${1:-target/riscv64gc-unknown-none-elf/release/kernel}
IC=${2:-}
cp --sparse=always $B/debian-root.img $B/debian-fig.img
rm -rf $B/debian/fig-stage && mkdir -p $B/debian/fig-stage
cp tests/debian/exec-figures.sh $B/debian/fig-stage/figures.sh
cp $B/thirdparty/busybox/busybox $B/debian/fig-stage/busybox
target/release/dbfs-fuse import $B/debian-fig.img $B/debian/fig-stage --dir /root >/dev/null
disk() { echo "-drive file=$1,if=none,format=raw,id=$2 -device virtio-blk-device,drive=$2,queue-size=1024"; }
# shellcheck disable=SC2046
timeout --foreground -k 10 900 qemu-system-riscv64 -machine virt -nographic -bios default -m 1G \
	-smp 1 ${IC:+-icount shift=0} -kernel "$K" $(disk $B/debian-fig.img vda) $(disk $B/fat.img vdb) \
	$(disk $B/raw.img vdc) $(disk $B/dbfs.img vdd) \
	-append "rootfs=dbfs init=/bin/bash log=warn bcache=8 -- /root/figures.sh" 2>&1 |
	tr -d '\r' | grep -E "^FIGURE|PANIC"
rm -f $B/debian-fig.img
