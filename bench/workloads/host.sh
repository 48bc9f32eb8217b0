#!/usr/bin/env bash
# The host half of the seed experiments' other workloads (crate bench/workloads): run
# `workloads-host` (the same code as the guest's /bin/workloads) on dbfs-fuse and fuse2fs ext4,
# each on a fresh image, and on a tmpfs directory (/dev/shm), the systems alternated within
# every repetition. `make bench-workloads-host` calls it; the guest side is `make bench-workloads`.
#
#   bench/workloads/host.sh [REPS] [WORKLOADS]        e.g. bench/workloads/host.sh 3 all
#
# Variables: SYSTEMS (default "dbfs ext4 tmpfs"), IMG_SIZE (default 2G), WL_TIMEOUT (seconds
# for the whole run, default 1800), DBFS_MOUNT_OPTS and FUSE2FS_OPTS (mount options of dbfs-fuse
# and of fuse2fs: see tools/dbfs-fuse/systems.sh). Every mount is bounded in time and undone on exit.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
REPS=${1:-3}
WL=${2:-all}
IMG_SIZE=${IMG_SIZE:-2G}
read -r -a WANT <<<"${SYSTEMS:-dbfs ext4 tmpfs}"
for tool in fuse2fs mke2fs fusermount3; do
    command -v "$tool" >/dev/null || { echo "workloads-host: $tool is not installed" >&2; exit 1; }
done

WORK=$(mktemp -d /tmp/dbfs-workloads-host.XXXXXX)
SHM=
DBFS_MOUNT_OPTS=${DBFS_MOUNT_OPTS:-}
BENCH_NAME=workloads-host
# systems.sh mounts and unmounts the image-backed systems; tmpfs is a directory of /dev/shm.
SYSTEMS=()
for s in "${WANT[@]}"; do [ "$s" = tmpfs ] || SYSTEMS+=("$s"); done
# shellcheck source=tools/dbfs-fuse/systems.sh
. "$ROOT/tools/dbfs-fuse/systems.sh"
systems_setup
trap 'systems_cleanup; [ -z "$SHM" ] || rm -rf "$SHM"' EXIT
(cd "$ROOT" && cargo build --release -q -p workloads)
TOOL=${CARGO_TARGET_DIR:-$ROOT/target}/release/workloads-host

specs=()
for sys in "${WANT[@]}"; do
    case $sys in
    tmpfs)
        SHM=$(mktemp -d /dev/shm/dbfs-workloads.XXXXXX)
        specs+=("tmpfs:$SHM")
        continue
        ;;
    dbfs) name=dbfs-fuse ;;
    ext4 | ext3 | ext2) name=fuse2fs-$sys ;;
    *) name=$sys ;;
    esac
    make_image "$sys"
    mount_sys "$sys"
    specs+=("$name:$(mnt_of "$sys")")
done
echo "# workloads-host: ${WANT[*]}, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$ROOT" rev-parse --short HEAD), $(nproc) cores, $(uname -r)"
# A hard bound on the whole run, as for every QEMU boot.
timeout -k 10 "${WL_TIMEOUT:-1800}" "$TOOL" "${specs[@]}" reps="$REPS" workloads="$WL"
