#!/usr/bin/env bash
# The host half of the shared fio job files: run bench/fio/JOB.fio with tools/fio/fio-jobs.sh
# (the very script the guest runs) on dbfs-fuse, fuse2fs ext4 (or ext3/ext2) and a host
# directory, each on a fresh image, alternated run by run. `make fio-host` calls it; the guest
# side is `make fio`, so one job file gives both tables.
#
#   tools/fio/fio-host.sh JOB [REPS]        e.g. tools/fio/fio-host.sh seed 3
#
# Variables: SYSTEMS (default "dbfs ext4 host"), IMG_SIZE (default 4G), and fio-jobs.sh's
# SIZE, JOBS, BS, DIRECT, RUNTIME, LOOPS, THREAD. Every mount is bounded in time and undone on exit.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
JOB=${1:?usage: fio-host.sh JOB [REPS]}
REPS=${2:-3}
IMG_SIZE=${IMG_SIZE:-4G}
read -r -a SYSTEMS <<<"${SYSTEMS:-dbfs ext4 host}"
JOBFILE=$ROOT/bench/fio/$JOB.fio
[ -f "$JOBFILE" ] || { echo "fio-host: no job file $JOBFILE" >&2; exit 2; }
for tool in fio fuse2fs mke2fs fusermount3; do
    command -v "$tool" >/dev/null || { echo "fio-host: $tool is not installed" >&2; exit 1; }
done

WORK=$(mktemp -d /tmp/dbfs-fio-host.XXXXXX)
DBFS_MOUNT_OPTS=${DBFS_MOUNT_OPTS:-}
BENCH_NAME=fio-host
# shellcheck source=tools/dbfs-fuse/systems.sh
. "$ROOT/tools/dbfs-fuse/systems.sh"
systems_setup

specs=()
for sys in "${SYSTEMS[@]}"; do
    make_image "$sys"
    mount_sys "$sys"
    case $sys in
    dbfs) name=dbfs-fuse ;;
    ext4 | ext3 | ext2) name=fuse2fs-$sys ;;
    *) name=$sys ;;
    esac
    specs+=("$name=$(mnt_of "$sys")")
done
echo "# fio-host: $JOB.fio on ${SYSTEMS[*]}, $(date -u '+%Y-%m-%d %H:%M UTC'), $(fio --version), $(nproc) cores"
# A hard bound on the whole run, as for every QEMU boot.
timeout -k 10 "${FIO_TIMEOUT:-3600}" sh "$ROOT/tools/fio/fio-jobs.sh" "$JOBFILE" "$REPS" "${specs[@]}"
