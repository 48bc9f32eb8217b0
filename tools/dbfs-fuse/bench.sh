#!/usr/bin/env bash
# dbfs-fuse against fuse2fs (ext4 image) and the host directory (ceiling), in one session,
# alternating the systems, per shared/BENCH-PROTOCOL.md. `make bench-fuse` runs this.
# dbfs-fuse runs twice: as mounted by default (every kvdb commit is a durability barrier: two
# fdatasyncs per metadata operation) and with `-o nobarrier` (image synced on fsync/unmount
# only, which is what fuse2fs does).
#
#   tools/dbfs-fuse/bench.sh            # full matrix, REPS=3
#   REPS=1 RUNTIME=3 N=5000 tools/dbfs-fuse/bench.sh   # quick look
#
# Variables: SIZE (fio --size per job, default 256M), RUNTIME (fio --runtime cap per run in
# seconds, default 5), REPS (repetitions, median reported, default 3), N (createdel files,
# default 20000), IMG_SIZE (both images, default 3G), WORK (scratch directory, default a new
# one under /tmp, removed at the end unless KEEP=1), DBFS_MKFS_OPTS (extra `dbfs-fuse mkfs`
# options for both dbfs images, e.g. "--chunk-size 4K"), JOBS ("1 4"), BSS ("1m 4k"),
# RWS ("write read randwrite randread"). Needs fio, fuse2fs, mkfs.ext4, fusermount3.
#
# fio runs buffered (no --direct: FUSE mounts without direct_io); write jobs end with fsync
# (--end_fsync=1) so every system pays for getting the data to its image. Both FUSE daemons
# open files without keep_cache, so the kernel drops a file's cached pages at open and reads
# reach the daemon; the host directory's reads may come from the page cache (it is the
# ceiling). MB/s = 10^6 bytes/s.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SIZE=${SIZE:-256M}
RUNTIME=${RUNTIME:-5}
REPS=${REPS:-3}
N=${N:-20000}
DBFS_MKFS_OPTS=${DBFS_MKFS_OPTS:-}
IMG_SIZE=${IMG_SIZE:-3G}
JOBS=${JOBS:-"1 4"}
BSS=${BSS:-"1m 4k"}
RWS=${RWS:-"write read randwrite randread"}
SYSTEMS=(dbfs dbfsnb ext4 host)
NSYS=${#SYSTEMS[@]}

for tool in fio fuse2fs mkfs.ext4 fusermount3; do
    command -v "$tool" >/dev/null || { echo "bench-fuse: $tool is not installed" >&2; exit 1; }
done

TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
(cd "$ROOT" && cargo build --release -q -p dbfs-fuse)
BIN=$TARGET/release/dbfs-fuse

WORK=${WORK:-$(mktemp -d /tmp/dbfs-bench.XXXXXX)}
mkdir -p "$WORK"
MNT_dbfs=$WORK/mnt-dbfs
MNT_dbfsnb=$WORK/mnt-dbfsnb
MNT_ext4=$WORK/mnt-ext4
MNT_host=$WORK/host
mkdir -p "$MNT_dbfs" "$MNT_dbfsnb" "$MNT_ext4" "$MNT_host"
DBFS_PID=
DBFSNB_PID=
EXT4_PID=

cleanup() {
    set +e
    for m in "$MNT_dbfs" "$MNT_dbfsnb" "$MNT_ext4"; do
        if grep -q " $m " /proc/mounts; then
            fusermount3 -u "$m" 2>/dev/null || fusermount3 -uz "$m" 2>/dev/null || umount -l "$m"
        fi
    done
    for p in $DBFS_PID $DBFSNB_PID $EXT4_PID; do
        for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$p" 2>/dev/null && kill -KILL "$p"
    done
    if [ "${KEEP:-0}" != 1 ]; then rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

wait_mounted() {
    for _ in $(seq 200); do grep -q " $1 " /proc/mounts && return 0; sleep 0.05; done
    echo "bench-fuse: $1 did not mount" >&2
    exit 1
}

"$BIN" mkfs "$WORK/dbfs.img" --size "$IMG_SIZE" $DBFS_MKFS_OPTS
DBFS_PID=$("$BIN" mount "$WORK/dbfs.img" "$MNT_dbfs")
wait_mounted "$MNT_dbfs"
"$BIN" mkfs "$WORK/dbfsnb.img" --size "$IMG_SIZE" $DBFS_MKFS_OPTS
DBFSNB_PID=$("$BIN" mount "$WORK/dbfsnb.img" "$MNT_dbfsnb" -o nobarrier)
wait_mounted "$MNT_dbfsnb"
truncate -s "$IMG_SIZE" "$WORK/ext4.img"
mkfs.ext4 -F -q "$WORK/ext4.img"
fuse2fs "$WORK/ext4.img" "$MNT_ext4" -f >"$WORK/fuse2fs.log" 2>&1 &
EXT4_PID=$!
wait_mounted "$MNT_ext4"

echo "# dbfs-fuse benchmark, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "# CPU: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores; kernel $(uname -r); $(fio --version); fuse2fs $(fuse2fs -V 2>&1 | head -1 | awk '{print $2}')"
echo "# fio --size=$SIZE per job, --runtime=$RUNTIME cap, buffered, --end_fsync=1 on writes, psync; REPS=$REPS (median); createdel N=$N"

declare -A RES

mnt_of() { case $1 in dbfs) echo "$MNT_dbfs" ;; dbfsnb) echo "$MNT_dbfsnb" ;; ext4) echo "$MNT_ext4" ;; host) echo "$MNT_host" ;; esac; }

run_fio() { # sys rw bs jobs -> MB/s
    local dir extra=""
    dir=$(mnt_of "$1")
    case $2 in *write) extra="--end_fsync=1" ;; esac
    timeout -k 10 $((RUNTIME * 4 + 300)) fio --name=t --directory="$dir" --rw="$2" --bs="$3" --size="$SIZE" \
        --numjobs="$4" --group_reporting --runtime="$RUNTIME" --ioengine=psync $extra \
        --output-format=terse --terse-version=3 |
        awk -F';' -v rw="$2" 'END { kib = (rw ~ /read/) ? $7 : $48; printf "%.1f", kib * 1024 / 1e6 }'
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {if (NR==0) {print "-"} else if (NR%2) {print a[(NR+1)/2]} else {printf "%.1f", (a[NR/2]+a[NR/2+1])/2}}'; }

for jobs in $JOBS; do
    for bs in $BSS; do
        for rw in $RWS; do
            for rep in $(seq "$REPS"); do
                # Rotate the order each repetition so no system always goes first.
                for k in $(seq 0 $((NSYS - 1))); do
                    sys=${SYSTEMS[$(( (k + rep) % NSYS ))]}
                    v=$(run_fio "$sys" "$rw" "$bs" "$jobs")
                    RES["$rw $bs $jobs $sys"]+="$v "
                    echo "RESULT bench=fio fs=$sys rw=$rw bs=$bs jobs=$jobs rep=$rep MBps=$v"
                done
            done
        done
    done
done

for rep in $(seq "$REPS"); do
    for k in $(seq 0 $((NSYS - 1))); do
        sys=${SYSTEMS[$(( (k + rep) % NSYS ))]}
        d=$(mnt_of "$sys")/createdel
        mkdir -p "$d"
        line=$(timeout -k 10 1200 "$BIN" createdel "$d" -n "$N" --fs "$sys")
        echo "$line rep=$rep"
        RES["createdel $sys"]+="$(sed -n 's/.*ops_per_sec=\([0-9.]*\).*/\1/p' <<<"$line") "
        rmdir "$d"
    done
done

echo
echo "| workload | bs | jobs | dbfs-fuse MB/s | dbfs-fuse nobarrier MB/s | fuse2fs ext4 MB/s | host dir MB/s | dbfs / ext4 | nobarrier / ext4 |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
for jobs in $JOBS; do
    for bs in $BSS; do
        for rw in $RWS; do
            d=$(median <<<"${RES["$rw $bs $jobs dbfs"]}")
            nb=$(median <<<"${RES["$rw $bs $jobs dbfsnb"]}")
            e=$(median <<<"${RES["$rw $bs $jobs ext4"]}")
            h=$(median <<<"${RES["$rw $bs $jobs host"]}")
            echo "| $rw | $bs | $jobs | $d | $nb | $e | $h | $(ratio "$d" "$e") | $(ratio "$nb" "$e") |"
        done
    done
done
d=$(median <<<"${RES["createdel dbfs"]}")
nb=$(median <<<"${RES["createdel dbfsnb"]}")
e=$(median <<<"${RES["createdel ext4"]}")
h=$(median <<<"${RES["createdel host"]}")
echo "| createdel N=$N (ops/s, creates + unlinks) | - | 1 | $d | $nb | $e | $h | $(ratio "$d" "$e") | $(ratio "$nb" "$e") |"
