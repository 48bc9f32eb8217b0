#!/usr/bin/env bash
# dbfs-fuse against fuse2fs (ext4 image) and the host directory (ceiling), in one session,
# alternating the systems, per shared/BENCH-PROTOCOL.md. `make bench-fuse` runs this.
# dbfs-fuse runs twice: as mounted by default (commits deferred to barriers, two fdatasyncs
# each, on fsync, syncfs, unmount and every 5 s) and with `-o nobarrier` (image synced on
# fsync/unmount only, which is what fuse2fs does).
#
#   tools/dbfs-fuse/bench.sh            # full matrix, REPS=3
#   REPS=1 RUNTIME=3 N=5000 tools/dbfs-fuse/bench.sh   # quick look
#
# Variables: SIZE (fio --size per job, default 256M), RUNTIME (fio --runtime cap per run in
# seconds, default 5), REPS (repetitions, median reported, default 3), N (createdel files,
# default 20000), IMG_SIZE (both images, default 3G), WORK (scratch directory, default a new
# one under /tmp, removed at the end unless KEEP=1), DBFS_MKFS_OPTS (extra `dbfs-fuse mkfs`
# options for both dbfs images, e.g. "--chunk-size 4K"), JOBS ("1 4"), BSS ("1m 4k"),
# RWS ("write read randwrite randread"), SYSTEMS (columns, default "dbfs dbfsnb ext4 host";
# also dbfs4k: a dbfs image made with --chunk-size 4K; dbfsds: mounted with -o dirsync, every
# commit durable as before deferred commits; dbfsnwb: mounted with -o nowriteback_cache (every
# write(2) a FUSE request, as before the kernel's write-back cache was on); dbfsalt: the dbfs-fuse binary ALT_BIN, e.g. an
# older commit's build (default: this one), mounted with ALT_MOUNT_OPTS (e.g. noidle_commits),
# for before/after in one session), N=0 skips createdel, FIO=0 skips the
# fio lines (e.g. FIO=0 SYSTEMS="dbfs dbfsds ext4": the createdel line only). Needs fio,
# fuse2fs, mkfs.ext4, fusermount3.
#
# This is the CACHED table (buffered I/O; tools/dbfs-fuse/bench-direct.sh makes the direct one).
# fio runs buffered (no --direct: FUSE mounts without direct_io); write jobs end with fsync
# (--end_fsync=1) so every system pays for getting the data to its image. Both FUSE daemons
# let the kernel keep a file's cached pages across opens (fuse2fs's kernel_cache, dbfs-fuse's
# keep_cache), but fio drops a file's cached pages before each job (its default invalidate=1),
# so reads reach the daemon; the host directory's reads may come from the page cache (it is
# the ceiling). MB/s = 10^6 bytes/s.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tools/dbfs-fuse/rep_order.sh
. "$ROOT/tools/dbfs-fuse/rep_order.sh"
SIZE=${SIZE:-256M}
RUNTIME=${RUNTIME:-5}
REPS=${REPS:-3}
N=${N:-20000}
DBFS_MKFS_OPTS=${DBFS_MKFS_OPTS:-}
IMG_SIZE=${IMG_SIZE:-3G}
JOBS=${JOBS:-"1 4"}
BSS=${BSS:-"1m 4k"}
RWS=${RWS:-"write read randwrite randread"}
read -r -a SYSTEMS <<<"${SYSTEMS:-dbfs dbfsnb ext4 host}"
[ "${FIO:-1}" = 0 ] && JOBS=""
NSYS=${#SYSTEMS[@]}

for tool in fio fuse2fs mkfs.ext4 fusermount3; do
    command -v "$tool" >/dev/null || { echo "bench-fuse: $tool is not installed" >&2; exit 1; }
done

TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
(cd "$ROOT" && cargo build --release -q -p dbfs-fuse)
BIN=$TARGET/release/dbfs-fuse

WORK=${WORK:-$(mktemp -d /tmp/dbfs-bench.XXXXXX)}
mkdir -p "$WORK"
MNT_host=$WORK/host
mkdir -p "$MNT_host"
PIDS=()

cleanup() {
    set +e
    for m in "$WORK"/mnt-*; do
        if grep -q " $m " /proc/mounts; then
            fusermount3 -u "$m" 2>/dev/null || fusermount3 -uz "$m" 2>/dev/null || umount -l "$m"
        fi
    done
    for p in "${PIDS[@]}"; do
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

# The systems: dbfs (default mount), dbfsnb (-o nobarrier), dbfs4k (4 KiB chunks), ext4
# (fuse2fs), host (a plain directory).
mnt_of() { if [ "$1" = host ]; then echo "$MNT_host"; else echo "$WORK/mnt-$1"; fi; }
for sys in "${SYSTEMS[@]}"; do
    mnt=$(mnt_of "$sys")
    mkdir -p "$mnt"
    case $sys in
    dbfs | dbfsnb | dbfs4k | dbfsds | dbfsnwb | dbfsalt)
        mkfs_opts=$DBFS_MKFS_OPTS mount_opts=() bin=$BIN
        [ "$sys" = dbfs4k ] && mkfs_opts="$mkfs_opts --chunk-size 4K"
        [ "$sys" = dbfsnb ] && mount_opts=(-o nobarrier)
        [ "$sys" = dbfsds ] && mount_opts=(-o dirsync)
        [ "$sys" = dbfsnwb ] && mount_opts=(-o nowriteback_cache)
        if [ "$sys" = dbfsalt ]; then
            bin=${ALT_BIN:-$BIN}
            # shellcheck disable=SC2206
            [ -n "${ALT_MOUNT_OPTS:-}" ] && mount_opts=(-o $ALT_MOUNT_OPTS)
        fi
        # shellcheck disable=SC2086
        "$bin" mkfs "$WORK/$sys.img" --size "$IMG_SIZE" $mkfs_opts
        PIDS+=("$("$bin" mount "$WORK/$sys.img" "$mnt" "${mount_opts[@]}")")
        wait_mounted "$mnt"
        ;;
    ext4)
        truncate -s "$IMG_SIZE" "$WORK/ext4.img"
        mkfs.ext4 -F -q "$WORK/ext4.img"
        fuse2fs "$WORK/ext4.img" "$mnt" -f >"$WORK/fuse2fs.log" 2>&1 &
        PIDS+=($!)
        wait_mounted "$mnt"
        ;;
    host) ;;
    *) echo "bench-fuse: unknown system $sys (dbfs dbfsnb dbfs4k dbfsds dbfsnwb dbfsalt ext4 host)" >&2; exit 1 ;;
    esac
done

echo "# dbfs-fuse benchmark, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "# CPU: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores; kernel $(uname -r); $(fio --version); fuse2fs $(fuse2fs -V 2>&1 | head -1 | awk '{print $2}')"
echo "# CACHED table: fio --size=$SIZE per job, --runtime=$RUNTIME cap, buffered, --end_fsync=1 on writes, psync; REPS=$REPS (median); createdel N=$N"

declare -A RES


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
                # No system always goes first, or always right after the same one.
                for k in $(rep_order "$NSYS" "$rep"); do
                    sys=${SYSTEMS[$k]}
                    v=$(run_fio "$sys" "$rw" "$bs" "$jobs")
                    RES["$rw $bs $jobs $sys"]+="$v "
                    echo "RESULT bench=fio fs=$sys rw=$rw bs=$bs jobs=$jobs rep=$rep MBps=$v"
                done
            done
        done
    done
done

for rep in $(seq "$REPS"); do
    [ "$N" -gt 0 ] || break
    for k in $(rep_order "$NSYS" "$rep"); do
        sys=${SYSTEMS[$k]}
        d=$(mnt_of "$sys")/createdel
        mkdir -p "$d"
        line=$(timeout -k 10 1200 "$BIN" createdel "$d" -n "$N" --fs "$sys")
        echo "$line rep=$rep"
        RES["createdel $sys"]+="$(sed -n 's/.*ops_per_sec=\([0-9.]*\).*/\1/p' <<<"$line") "
        rmdir "$d"
    done
done

label() { case $1 in dbfs) echo "dbfs-fuse" ;; dbfsnb) echo "dbfs-fuse nobarrier" ;; dbfs4k) echo "dbfs-fuse 4K chunks" ;; dbfsds) echo "dbfs-fuse dirsync" ;; dbfsnwb) echo "dbfs-fuse nowriteback_cache" ;; dbfsalt) echo "dbfs-fuse alt${ALT_MOUNT_OPTS:+ -o $ALT_MOUNT_OPTS}" ;; ext4) echo "fuse2fs ext4" ;; host) echo "host dir" ;; esac; }
HAVE_EXT4=0
for sys in "${SYSTEMS[@]}"; do [ "$sys" = ext4 ] && HAVE_EXT4=1; done
row() { # label key-prefix
    local out="| $1" v
    for sys in "${SYSTEMS[@]}"; do out+=" | $(median <<<"${RES["$2 $sys"]:-}")"; done
    if [ $HAVE_EXT4 = 1 ]; then
        e=$(median <<<"${RES["$2 ext4"]:-}")
        for sys in "${SYSTEMS[@]}"; do
            case $sys in dbfs*) v=$(median <<<"${RES["$2 $sys"]:-}"); out+=" | $(ratio "$v" "$e")" ;; esac
        done
    fi
    echo "$out |"
}
echo
hdr="| workload | bs | jobs" sep="|---|---|---:"
for sys in "${SYSTEMS[@]}"; do hdr+=" | $(label "$sys") MB/s"; sep+="|---:"; done
if [ $HAVE_EXT4 = 1 ]; then
    for sys in "${SYSTEMS[@]}"; do case $sys in dbfs*) hdr+=" | $sys / ext4"; sep+="|---:" ;; esac; done
fi
echo "$hdr |"
echo "$sep|"
for jobs in $JOBS; do
    for bs in $BSS; do
        for rw in $RWS; do
            row "$rw | $bs | $jobs" "$rw $bs $jobs"
        done
    done
done
[ "$N" -gt 0 ] && row "createdel N=$N (ops/s, creates + unlinks) | - | 1" "createdel"
exit 0
