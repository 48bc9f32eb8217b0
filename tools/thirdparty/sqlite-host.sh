#!/usr/bin/env bash
# The host half of the sqlite benchmark: sqlite's speedtest1 (built for this machine from the
# guest's amalgamation, `fetch-build.sh sqlite-host`) on dbfs-fuse, fuse2fs ext4 and a host
# directory, each on a fresh image, alternated run by run, through the very script the guest
# runs (tools/thirdparty/sqlite-bench.sh). `make sqlite-host-bench` calls it.
#
#   tools/thirdparty/sqlite-host.sh [REPS [SIZE]]        defaults: 3 10
#
# Variables: SYSTEMS (default "dbfs ext4 host"), IMG_SIZE (default 4G), SPEEDTEST_DIR (the
# directory holding the host speedtest1; default build/thirdparty/sqlite-host).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
REPS=${1:-3}
SIZE=${2:-10}
IMG_SIZE=${IMG_SIZE:-4G}
SPEEDTEST_DIR=${SPEEDTEST_DIR:-$ROOT/build/thirdparty/sqlite-host}
read -r -a SYSTEMS <<<"${SYSTEMS:-dbfs ext4 host}"
[ -x "$SPEEDTEST_DIR/speedtest1" ] || { echo "sqlite-host: no $SPEEDTEST_DIR/speedtest1" >&2; exit 1; }
for tool in fuse2fs mke2fs fusermount3; do
    command -v "$tool" >/dev/null || { echo "sqlite-host: $tool is not installed" >&2; exit 1; }
done

WORK=$(mktemp -d /tmp/dbfs-sqlite-host.XXXXXX)
DBFS_MOUNT_OPTS=${DBFS_MOUNT_OPTS:-}
BENCH_NAME=sqlite-host
# shellcheck source=tools/dbfs-fuse/systems.sh
. "$ROOT/tools/dbfs-fuse/systems.sh"
systems_setup

dirs=()
for sys in "${SYSTEMS[@]}"; do
    make_image "$sys"
    mount_sys "$sys"
    dirs+=("$(mnt_of "$sys")")
done
echo "# sqlite-host: speedtest1 --size $SIZE on ${SYSTEMS[*]} (directories ${dirs[*]}), $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores"
PATH=$SPEEDTEST_DIR:$PATH timeout -k 10 "${SQLITE_TIMEOUT:-3600}" \
    sh "$ROOT/tools/thirdparty/sqlite-bench.sh" "$REPS" "$SIZE" "${dirs[@]}"
