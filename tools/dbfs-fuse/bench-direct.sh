#!/usr/bin/env bash
# The direct-I/O table of shared/BENCH-PROTOCOL.md, the seed experiment's method: fio
# --direct=1 (psync) on dbfs-fuse, fuse2fs on ext4, ext3 and ext2 images, and the host
# directory (the ceiling), fresh and then aged. `make bench-fuse` runs it after bench.sh
# (whose buffered table is the cached one).
#
#   tools/dbfs-fuse/bench-direct.sh                       # fresh + aged, REPS=3 (~20 min)
#   REPS=1 AGED=0 SIZE_1M=128M SIZE_4K=16M tools/dbfs-fuse/bench-direct.sh   # quick look
#
# What a line is: for each block size (1m, 4k) and job count (1, 4), each repetition and each
# system (in `rep_order`: the order changes every repetition, so the systems alternate run by
# run and none always follows the same one):
#   write      fresh files (--verify=crc32c: fio reads every block back and checks it;
#              a failed check is reported as FAIL, not as a figure)
#   randwrite  over the same files (--verify=crc32c)
#   read       after the caches are dropped (see below)
#   randread   after the caches are dropped again (the sequential read refilled them)
# then the files are removed. Writes run to the end of the files (no --runtime: a read must
# find every block written); random reads stop after RUNTIME seconds.
#
# No cache holds the files when they are read back: before each read line the FUSE daemon is
# unmounted and mounted again (dbfs-fuse's page cache and fuse2fs's block cache are in the
# daemon's memory), then the host page cache is dropped (`echo 3 > /proc/sys/vm/drop_caches`,
# root only: without root the script says so in its header and the reads may come from the
# host's cache of the image files). With --direct=1 the kernel's FUSE page cache is bypassed.
#
# Aged (AGED=1, default): on the same mounted images, createdel of N files (the
# BENCH-PROTOCOL workload, timed: create and unlink seconds are reported per system), then the
# file system filled to FILL_PCT percent (default 90) of its size with FILL_FILE files
# (buffered writes of 1 MiB), and those files deleted; then the whole table again. The host
# directory is not aged (it is the host's own /tmp): its aged column is a second fresh run.
#
# Variables: SIZE_1M (total bytes of the 1 MiB lines, split between the jobs; default 512M),
# SIZE_4K (the same for 4 KiB lines, default 64M), RUNTIME (random reads' cap in seconds,
# default 3), REPS (default 3), JOBS ("1 4"), BSS ("1m 4k"), SYSTEMS (default
# "dbfs ext4 ext3 ext2 host"; dbfsalt = the dbfs-fuse binary ALT_BIN, for before/after),
# IMG_SIZE (every image, default 4G), N (createdel files when aging, default 20000), FILL_PCT,
# AGED (0: fresh table only), WORK (scratch directory, removed unless KEEP=1), DBFS_MOUNT_OPTS
# (extra -o options for dbfs-fuse), CHARTS (see below). MB/s = 10^6 bytes/s.
#
# Charts: tools/bench-report draws one per phase and block size from the RESULT lines (a group
# of bars per line, one bar per system: the median MB/s), into CHARTS/<phase>-<bs>/
# (throughput.svg and .png, summary.md, results.csv). CHARTS defaults to
# build/bench-fuse-direct; CHARTS= (empty) draws none. CHARTS_FROM=FILE (a saved output of this
# script) draws them again from its RESULT lines and runs nothing else.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SIZE_1M=${SIZE_1M:-512M}
SIZE_4K=${SIZE_4K:-64M}
RUNTIME=${RUNTIME:-3}
REPS=${REPS:-3}
JOBS=${JOBS:-"1 4"}
BSS=${BSS:-"1m 4k"}
IMG_SIZE=${IMG_SIZE:-4G}
N=${N:-20000}
FILL_PCT=${FILL_PCT:-90}
AGED=${AGED:-1}
DBFS_MOUNT_OPTS=${DBFS_MOUNT_OPTS:-}
CHARTS=${CHARTS-$ROOT/build/bench-fuse-direct}
read -r -a SYSTEMS <<<"${SYSTEMS:-dbfs ext4 ext3 ext2 host}"
NSYS=${#SYSTEMS[@]}
RWS="write randwrite read randread"

# shellcheck source=tools/dbfs-fuse/systems.sh
. "$ROOT/tools/dbfs-fuse/systems.sh"

# The charts: each phase and block size as a log of its own, one benchmark a line and jobs
# count ("randread-4j"), for bench-report's throughput chart.
# Returns non-zero if a chart could not be drawn.
draw_charts() {
    local report phase bs log failed=0
    [ -n "$CHARTS" ] || return 0
    if ! report=$(cargo_bin bench-report); then
        echo "bench-direct: bench-report did not build: no charts" >&2
        return 1
    fi
    for phase in fresh aged; do
        for bs in $BSS; do
            log=$WORK/chart-$phase-$bs.log
            awk -v p="$phase" -v b="$bs" '/^RESULT / {
                delete f
                for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
                if (f["phase"] == p && f["bs"] == b)
                    printf "RESULT bench=%s-%sj fs=%s MBps=%s\n", f["rw"], f["jobs"], f["fs"], f["MBps"]
            }' "$WORK/results.log" >"$log"
            [ -s "$log" ] || continue
            "$report" "$log" --out-dir "$CHARTS/$phase-$bs" \
                --title "Direct I/O through FUSE, $phase images, $bs blocks, median of each line" >/dev/null ||
                { echo "bench-direct: bench-report failed on $log" >&2; failed=1; }
        done
    done
    echo
    echo "charts: $CHARTS/{fresh,aged}-{$(tr ' ' ',' <<<"$BSS")}/throughput.svg"
    return $failed
}

# CHARTS_FROM=FILE: only draw the charts again, from the RESULT lines of a saved run's output.
if [ -n "${CHARTS_FROM:-}" ]; then
    WORK=$(mktemp -d /tmp/dbfs-bench-direct.XXXXXX)
    trap 'rm -rf "$WORK"' EXIT
    grep '^RESULT bench=fio-direct ' "$CHARTS_FROM" >"$WORK/results.log" ||
        { echo "bench-direct: no RESULT lines in $CHARTS_FROM" >&2; exit 1; }
    draw_charts || exit 1
    exit 0
fi

for tool in fio fuse2fs mke2fs fusermount3; do
    command -v "$tool" >/dev/null || { echo "bench-direct: $tool is not installed" >&2; exit 1; }
done

WORK=${WORK:-$(mktemp -d /tmp/dbfs-bench-direct.XXXXXX)}
BENCH_NAME=bench-direct
systems_setup

CAN_DROP=0
if [ -w /proc/sys/vm/drop_caches ]; then CAN_DROP=1; fi

# Empty every cache between the data and a read: the daemon's (remount) and the host's.
drop_caches() {
    unmount_sys "$1"
    sync
    [ $CAN_DROP = 1 ] && echo 3 >/proc/sys/vm/drop_caches
    mount_sys "$1"
}

bytes() { numfmt --from=iec "$1"; }

# fio on one system; prints MB/s, or FAIL (fio failed, e.g. a verify error).
run_fio() { # sys rw bs jobs
    local dir size extra=() out
    dir=$(mnt_of "$1")/bench
    mkdir -p "$dir"
    size=$(bytes "$([ "$3" = 1m ] && echo "$SIZE_1M" || echo "$SIZE_4K")")
    size=$((size / $4 / 1048576 * 1048576))
    case $2 in
    *write) extra=(--verify=crc32c --verify_state_save=0) ;;
    randread) extra=(--runtime="$RUNTIME") ;;
    esac
    if ! out=$(timeout -k 10 900 fio --name=t --directory="$dir" --rw="$2" --bs="$3" --size="$size" \
        --numjobs="$4" --group_reporting --direct=1 --ioengine=psync "${extra[@]}" \
        --output-format=terse --terse-version=3 2>>"$WORK/fio.err"); then
        echo FAIL
        return
    fi
    awk -F';' -v rw="$2" 'END { kib = (rw ~ /read/) ? $7 : $48; printf "%.1f", kib * 1024 / 1e6 }' <<<"$out"
}

declare -A RES

# One table: every line, every system, REPS times. $1 = fresh | aged.
run_table() {
    local phase=$1 bs jobs rep k sys rw v
    for bs in $BSS; do
        for jobs in $JOBS; do
            for rep in $(seq "$REPS"); do
                for k in $(rep_order "$NSYS" "$rep"); do
                    sys=${SYSTEMS[$k]}
                    for rw in $RWS; do
                        case $rw in read | randread) drop_caches "$sys" ;; esac
                        v=$(run_fio "$sys" "$rw" "$bs" "$jobs")
                        RES["$phase $rw $bs $jobs $sys"]+="$v "
                        echo "RESULT bench=fio-direct phase=$phase fs=$sys rw=$rw bs=$bs jobs=$jobs rep=$rep MBps=$v" |
                            tee -a "$WORK/results.log"
                    done
                    rm -rf "$(mnt_of "$sys")/bench"
                done
            done
        done
    done
}

# createdel, then fill to FILL_PCT% and delete, on one mounted system.
age() {
    local sys=$1 m d line used total want i=0
    m=$(mnt_of "$sys")
    d=$m/createdel
    mkdir -p "$d"
    line=$(timeout -k 10 1200 "$BIN" createdel "$d" -n "$N" --fs "$sys")
    echo "$line"
    RES["createdel $sys"]="$(sed -n 's/.*create_secs=\([0-9.]*\) delete_secs=\([0-9.]*\).*/\1 \2/p' <<<"$line")"
    rmdir "$d"
    mkdir -p "$m/fill"
    total=$(stat -f -c '%b' "$m")
    while :; do
        used=$((total - $(stat -f -c '%f' "$m")))
        [ $((used * 100)) -lt $((total * FILL_PCT)) ] || break
        want=$(((total * FILL_PCT / 100 - used) * $(stat -f -c '%S' "$m")))
        [ "$want" -gt 1048576 ] || break
        [ "$want" -gt 268435456 ] && want=268435456
        dd if=/dev/zero of="$m/fill/f$i" bs=1M count=$((want / 1048576)) status=none 2>/dev/null || break
        i=$((i + 1))
    done
    sync -f "$m" 2>/dev/null || true
    echo "# aged $sys: filled to $(( (total - $(stat -f -c '%f' "$m")) * 100 / total ))% in $i files, then deleted"
    rm -rf "$m/fill"
    sync -f "$m" 2>/dev/null || true
}

for sys in "${SYSTEMS[@]}"; do
    make_image "$sys"
    mount_sys "$sys"
done

echo "# dbfs-fuse direct-I/O benchmark, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$ROOT" rev-parse --short HEAD)"
echo "# CPU: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB RAM; kernel $(uname -r); $(fio --version); fuse2fs $(fuse2fs -V 2>&1 | head -1 | awk '{print $2}')"
echo "# fio --direct=1 --ioengine=psync, 1m lines $SIZE_1M and 4k lines $SIZE_4K in total per run (split between jobs), --verify=crc32c on writes, random reads --runtime=$RUNTIME; images $IMG_SIZE; REPS=$REPS"
if [ $CAN_DROP = 1 ]; then
    echo "# caches before each read line: daemon remounted, host page cache dropped (drop_caches)"
else
    echo "# caches before each read line: daemon remounted; NOT root: the host page cache was not dropped"
fi

run_table fresh
if [ "$AGED" = 1 ]; then
    for sys in "${SYSTEMS[@]}"; do
        [ "$sys" = host ] && continue
        age "$sys"
    done
    run_table aged
fi

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {if (NR==0) {print "-"} else if (NR%2) {print a[(NR+1)/2]} else {printf "%.1f", (a[NR/2]+a[NR/2+1])/2}}'; }
spread() { tr ' ' '\n' | grep -v '^$' | sort -g | awk 'NR==1 {lo=$1} {hi=$1} END {if (NR) printf "%s-%s", lo, hi}'; }
has_fail() { grep -q FAIL <<<"$1"; }

# dbfs / other: the ratio of the medians, and the range of the ratios of the runs paired by
# repetition; "*" when that range includes 1.0.
ratio_cell() { # dbfs-values other-values
    if has_fail "$1" || has_fail "$2"; then echo "FAIL"; return; fi
    local a b
    read -r -a a <<<"$1"
    read -r -a b <<<"$2"
    awk -v ma="$(median <<<"$1")" -v mb="$(median <<<"$2")" -v as="${a[*]}" -v bs="${b[*]}" 'BEGIN {
        n = split(as, x, " "); split(bs, y, " "); lo = 1e9; hi = 0
        for (i = 1; i <= n; i++) if (y[i] > 0) { r = x[i] / y[i]; if (r < lo) lo = r; if (r > hi) hi = r }
        if (mb <= 0) { print "-"; exit }
        printf "%.2f (%.2f-%.2f)%s", ma / mb, lo, hi, (lo <= 1 && hi >= 1) ? " *" : ""
    }'
}

cell() { # values
    if has_fail "$1"; then echo "FAIL ($1)"; return; fi
    echo "$(median <<<"$1") ($(spread <<<"$1"))"
}

label() { case $1 in dbfs) echo "dbfs-fuse" ;; dbfsalt) echo "dbfs-fuse ALT_BIN" ;; ext4 | ext3 | ext2) echo "fuse2fs $1" ;; host) echo "host dir" ;; esac; }

DB=dbfs

table() { # phase
    local hdr="| workload | bs | jobs" sep="|---|---|---:" sys out
    for sys in "${SYSTEMS[@]}"; do hdr+=" | $(label "$sys") MB/s"; sep+="|---:"; done
    for sys in "${SYSTEMS[@]}"; do [ "$sys" != "$DB" ] && { hdr+=" | $DB / $sys"; sep+="|---:"; }; done
    echo "$hdr |"
    echo "$sep|"
    for bs in $BSS; do
        for jobs in $JOBS; do
            for rw in $RWS; do
                out="| $rw | $bs | $jobs"
                for sys in "${SYSTEMS[@]}"; do out+=" | $(cell "${RES["$1 $rw $bs $jobs $sys"]:-}")"; done
                for sys in "${SYSTEMS[@]}"; do
                    [ "$sys" != "$DB" ] && out+=" | $(ratio_cell "${RES["$1 $rw $bs $jobs $DB"]:-}" "${RES["$1 $rw $bs $jobs $sys"]:-}")"
                done
                echo "$out |"
            done
        done
    done
}

echo
echo "## Fresh images (median MB/s, min-max over $REPS runs; ratios: of the medians, (range of the per-repetition ratios), * = range includes 1.0)"
echo
table fresh
if [ "$AGED" = 1 ]; then
    echo
    echo "## Aged images (after createdel N=$N and a fill to $FILL_PCT% then delete)"
    echo
    table aged
    echo
    echo "## Aged / fresh, per system (ratio of medians)"
    echo
    hdr="| workload | bs | jobs" sep="|---|---|---:"
    for sys in "${SYSTEMS[@]}"; do hdr+=" | $(label "$sys")"; sep+="|---:"; done
    echo "$hdr |"
    echo "$sep|"
    for bs in $BSS; do
        for jobs in $JOBS; do
            for rw in $RWS; do
                out="| $rw | $bs | $jobs"
                for sys in "${SYSTEMS[@]}"; do
                    f=${RES["fresh $rw $bs $jobs $sys"]:-}
                    a=${RES["aged $rw $bs $jobs $sys"]:-}
                    if has_fail "$f$a"; then out+=" | FAIL"; else
                        out+=" | $(awk -v a="$(median <<<"$a")" -v f="$(median <<<"$f")" 'BEGIN { if (f > 0) printf "%.2f", a / f; else print "-" }')"
                    fi
                done
                echo "$out |"
            done
        done
    done
    echo
    echo "## createdel N=$N while aging (seconds: create, unlink)"
    echo
    for sys in "${SYSTEMS[@]}"; do
        [ "$sys" = host ] && continue
        read -r c u <<<"${RES["createdel $sys"]:-- -}"
        echo "- $(label "$sys"): create $c s, unlink $u s"
    done
fi

# A chart that fails is reported; the tables above stand.
draw_charts || true
exit 0
