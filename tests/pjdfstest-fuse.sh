#!/usr/bin/env bash
# POSIX conformance of dbfs through FUSE, measured with pjdfstest (`make pjdfstest`,
# `make test-pjdfstest`; figures and method in docs/CONFORMANCE.md).
#
# pjdfstest (../shared/pjdfstest, third-party, never copied into the repository) is copied to
# $BUILD/pjdfstest and built there for the host, once: a stamp holding a checksum of the
# source tree skips the rebuild while the source is unchanged. Then, for every system of
# SYSTEMS, each test file (tests/DIR/NN.t, a sh script printing TAP) runs with the mount as its
# working directory, as root, and its TAP is counted here: an `ok` line is a passed assertion,
# a `not ok` line a failed one, except `not ok N # TODO ...`: an assertion the suite itself
# marks as expected to fail on this OS (e.g. chown/00.t: Linux keeps set-id bits of a directory on
# chown), which prove counts as passed; it is counted as passed here too and shown as todo=N.
# Assertions the plan (`1..N`) announced but the file never printed (it died or timed out)
# count as failed. That is what `prove -r tests` counts, file by file, without a second
# harness in between.
#
# Systems (SYSTEMS, any subset, in this order):
#   dbfs        dbfs-fuse on a fresh image, the whole selection in one continuous run
#   dbfs-nowb   the same, mounted with -o nowriteback_cache
#   dbfs-aged   an image that first saw 20000 creates and deletes (`dbfs-fuse createdel`) and
#               a fill-to-ENOSPC-then-delete cycle on the same mount, then unmounted, fscked
#               and mounted again for the run
#   dbfs-guest  a copy of GUEST_IMAGE, an image the guest kernel formatted and wrote
#               (`make pjdfstest` makes one with /bin/crosscheck gen); after the run its
#               tree must still match its MANIFEST (`dbfs-fuse verify-tree`)
#   fuse2fs     reference: fuse2fs on ext4, a FRESH IMAGE PER TEST FILE (in one continuous
#               run a 256-byte name gives EIO and the file system turns read-only)
#   tmpfs       reference: the kernel's tmpfs, one continuous run
# Every FUSE mount is -o allow_other,default_permissions. After each dbfs run the image is
# unmounted and `dbfs-fuse fsck` must report it clean.
#
# Output: one line per system
#   PJDFSTEST fs=dbfs-fuse config=fresh passed=N failed=N todo=N files=N secs=S fsck=clean
# then a per-directory table (passed/total per system), then the failing assertions.
# Exit status: 0 only if every dbfs configuration ran, passed every assertion and fscked
# clean. The references never change the exit status.
#
# Variables: DBFS_FUSE (the dbfs-fuse binary, required), BUILD (default build), SUITE_SRC
# (default ../shared/pjdfstest), SYSTEMS (default "dbfs dbfs-nowb dbfs-aged" plus dbfs-guest
# when GUEST_IMAGE is set, plus "fuse2fs tmpfs"), DIRS (test directories, default every one),
# GUEST_IMAGE, RUN_LIMIT (seconds per system, default 1500), FILE_LIMIT (seconds per test
# file, default 180), IMG_SIZE (default 1G), AGED_SIZE (default 512M), AGE_FILES (default
# 20000). Every mount daemon runs under `timeout -k 10`, and the EXIT trap unmounts and kills
# what the script started.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
: "${DBFS_FUSE:?set DBFS_FUSE to the dbfs-fuse binary}"
BUILD=${BUILD:-$ROOT/build}
mkdir -p "$BUILD"
BUILD=$(cd "$BUILD" && pwd)
SUITE_SRC=${SUITE_SRC:-$ROOT/../shared/pjdfstest}
SUITE=$BUILD/pjdfstest
WORK=$BUILD/pjdfstest-run
MNT=$WORK/mnt
GUEST_IMAGE=${GUEST_IMAGE:-}
RUN_LIMIT=${RUN_LIMIT:-1500}
FILE_LIMIT=${FILE_LIMIT:-180}
IMG_SIZE=${IMG_SIZE:-1G}
AGED_SIZE=${AGED_SIZE:-512M}
AGE_FILES=${AGE_FILES:-20000}
default_systems="dbfs dbfs-nowb dbfs-aged${GUEST_IMAGE:+ dbfs-guest} fuse2fs tmpfs"
read -r -a SYSTEMS <<<"${SYSTEMS:-$default_systems}"
DBFS_FUSE=$(realpath "$DBFS_FUSE")

started_pids=()
cleanup() {
    set +e
    if grep -qs " $MNT " /proc/self/mounts; then
        fusermount3 -u "$MNT" 2>/dev/null || umount "$MNT" 2>/dev/null ||
            fusermount3 -uz "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null
    fi
    for p in "${started_pids[@]}"; do
        for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$p" 2>/dev/null && kill -KILL "$p" 2>/dev/null
    done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

die() {
    echo "pjdfstest: $*" >&2
    exit 2
}

for tool in fusermount3 autoreconf make cc; do
    command -v "$tool" >/dev/null || die "$tool is not installed (make deps; apt: autoconf automake libtool)"
done
[ "$(id -u)" = 0 ] || die "pjdfstest must run as root (chown, mknod, other users' permissions)"
[ -d "$SUITE_SRC/tests" ] || die "no pjdfstest source at $SUITE_SRC"

# ---- build the suite (cached) ----
# The stamp is a checksum of every source file, so an edited or updated suite is rebuilt.
src_sum=$(cd "$SUITE_SRC" && find . -type f -print0 | sort -z | xargs -0 sha1sum | sha1sum | cut -d' ' -f1)
if [ -x "$SUITE/pjdfstest" ] && [ "$(cat "$SUITE/.dbfs-os-stamp" 2>/dev/null)" = "$src_sum" ]; then
    echo "pjdfstest: suite already built in $SUITE"
else
    echo "pjdfstest: building the suite in $SUITE (log $BUILD/pjdfstest-build.log)"
    rm -rf "$SUITE"
    cp -a "$SUITE_SRC" "$SUITE"
    if ! (cd "$SUITE" && autoreconf -ifs && ./configure && make pjdfstest) >"$BUILD/pjdfstest-build.log" 2>&1; then
        tail -20 "$BUILD/pjdfstest-build.log"
        die "building pjdfstest failed"
    fi
    echo "$src_sum" >"$SUITE/.dbfs-os-stamp"
fi

# ---- the selection ----
if [ -n "${DIRS:-}" ]; then
    read -r -a dirs <<<"$DIRS"
else
    mapfile -t dirs < <(cd "$SUITE/tests" && for d in */; do ls "$d"*.t >/dev/null 2>&1 && echo "${d%/}"; done)
fi
files=()
for d in "${dirs[@]}"; do
    [ -d "$SUITE/tests/$d" ] || die "no test directory $d"
    for t in "$SUITE/tests/$d"/*.t; do files+=("$d/$(basename "$t")"); done
done
echo "pjdfstest: ${#files[@]} test files in ${#dirs[@]} directories: ${dirs[*]}"

rm -rf "$WORK"
mkdir -p "$MNT" "$WORK/tap" "$WORK/results"

# ---- mounting ----
daemon_pid=""

wait_mounted() {
    for _ in $(seq 300); do
        grep -qs " $MNT " /proc/self/mounts && return 0
        kill -0 "$daemon_pid" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}

# mount_dbfs IMAGE [OPT...]: dbfs-fuse in the foreground under a hard time limit.
mount_dbfs() {
    local image=$1
    shift
    local opts=allow_other,default_permissions
    for o in "$@"; do opts+=",$o"; done
    timeout -k 10 "$RUN_LIMIT" "$DBFS_FUSE" mount "$image" "$MNT" -f -o "$opts" \
        </dev/null >>"$WORK/daemon.log" 2>&1 &
    daemon_pid=$!
    started_pids+=("$daemon_pid")
    wait_mounted || { tail -5 "$WORK/daemon.log"; return 1; }
}

mount_fuse2fs() {
    truncate -s 0 "$WORK/ext4.img"
    truncate -s 512M "$WORK/ext4.img"
    mkfs.ext4 -F -q "$WORK/ext4.img" || return 1
    timeout -k 10 "$FILE_LIMIT" fuse2fs "$WORK/ext4.img" "$MNT" -f -o allow_other,default_permissions \
        </dev/null >>"$WORK/daemon.log" 2>&1 &
    daemon_pid=$!
    started_pids+=("$daemon_pid")
    wait_mounted || { tail -5 "$WORK/daemon.log"; return 1; }
}

# unmount: unmount $MNT and wait until the daemon (if any) has written back and exited.
unmount() {
    if grep -qs " $MNT " /proc/self/mounts; then
        timeout -k 5 60 fusermount3 -u "$MNT" 2>/dev/null || timeout -k 5 60 umount "$MNT" || {
            fusermount3 -uz "$MNT" 2>/dev/null
            return 1
        }
    fi
    if [ -n "$daemon_pid" ]; then
        local rc=0
        wait "$daemon_pid" || rc=$?
        daemon_pid=""
        return $rc
    fi
}

# ---- running and counting ----
# run_file SYSTEM DIR/NN.t: run one test file in $MNT; appends
# "dir file planned ok failed todo missing milliseconds" to the system's results.
run_file() {
    local sys=$1 f=$2 d=${2%/*}
    local tap=$WORK/tap/$sys/${f//\//-}.tap t0=$EPOCHREALTIME
    mkdir -p "$WORK/tap/$sys"
    (cd "$MNT" && timeout -k 5 "$FILE_LIMIT" /bin/sh "$SUITE/tests/$f") >"$tap" 2>&1 </dev/null
    local ms=$(((${EPOCHREALTIME/./} - ${t0/./}) / 1000))
    local planned ok notok todo missing
    planned=$(sed -n 's/^1\.\.\([0-9][0-9]*\).*/\1/p' "$tap" | head -1)
    ok=$(grep -c '^ok ' "$tap")
    notok=$(grep '^not ok ' "$tap" | grep -vc '# TODO')
    todo=$(grep '^not ok ' "$tap" | grep -c '# TODO')
    planned=${planned:-0}
    missing=$((planned - ok - notok - todo))
    [ "$missing" -lt 0 ] && missing=0
    # A file that printed no plan at all failed as a whole: count it as one failed assertion.
    [ "$planned" = 0 ] && missing=1
    echo "$d $f $planned $ok $notok $todo $missing $ms" >>"$WORK/results/$sys"
}

# run_selection SYSTEM: every selected file in one continuous run on the mounted $MNT.
run_selection() {
    local sys=$1 start=$SECONDS
    for f in "${files[@]}"; do
        if ((SECONDS - start > RUN_LIMIT)); then
            echo "pjdfstest: $sys: over RUN_LIMIT=${RUN_LIMIT}s, stopping at $f" >&2
            echo "${f%/*} $f 0 0 0 0 1 0" >>"$WORK/results/$sys"
            continue
        fi
        run_file "$sys" "$f"
    done
}

# age MOUNTED_DIR: AGE_FILES creates and deletes, then fill until ENOSPC and delete.
# The fill is 16 MiB files, each fsynced: with the write-back cache, write(2) lands in the
# kernel's page cache and a full image answers ENOSPC only at fsync or close, so one endless
# file would never see it. The number of files is bounded, so a fill that never fails ends.
age() {
    "$DBFS_FUSE" createdel "$1" -n "$AGE_FILES" --fs aging || return 1
    local err="" i max
    max=$(($(numfmt --from=iec "$AGED_SIZE") / (16 << 20) + 8))
    for ((i = 0; i < max; i++)); do
        err=$(dd if=/dev/urandom of="$1/fill$i" bs=1M count=16 conv=fsync status=none 2>&1) || break
    done
    case $err in
    *"No space left"*) ;;
    *) echo "pjdfstest: the fill did not end in ENOSPC after $i files: $err" >&2; return 1 ;;
    esac
    echo "pjdfstest: aged: $AGE_FILES creates and deletes, filled $(du -sm "$1" | cut -f1) MiB in $((i + 1)) files to ENOSPC, deleted"
    rm -f "$1"/fill*
    sync -f "$1"
}

declare -A label config secs fsck_state
hard_fail=0

run_dbfs() {
    local sys=$1 image=$WORK/$1.img start=$SECONDS
    local opts=()
    label[$sys]=dbfs-fuse
    fsck_state[$sys]=not-run
    case $sys in
    dbfs) config[$sys]=fresh ;;
    dbfs-nowb) config[$sys]=fresh,nowriteback_cache; opts=(nowriteback_cache) ;;
    dbfs-aged) config[$sys]=aged ;;
    dbfs-guest) config[$sys]=guest-written ;;
    esac
    case $sys in
    dbfs-guest)
        [ -f "$GUEST_IMAGE" ] || { echo "pjdfstest: GUEST_IMAGE '$GUEST_IMAGE' missing" >&2; return 1; }
        cp --sparse=always "$GUEST_IMAGE" "$image" || return 1
        "$DBFS_FUSE" fsck "$image" || { echo "pjdfstest: the guest image is not clean before the run" >&2; return 1; }
        ;;
    dbfs-aged)
        "$DBFS_FUSE" mkfs "$image" --size "$AGED_SIZE" >/dev/null || return 1
        mount_dbfs "$image" || return 1
        age "$MNT" || { unmount; return 1; }
        unmount || return 1
        "$DBFS_FUSE" fsck "$image" || { echo "pjdfstest: the aged image is not clean" >&2; return 1; }
        ;;
    *)
        "$DBFS_FUSE" mkfs "$image" --size "$IMG_SIZE" >/dev/null || return 1
        ;;
    esac
    start=$SECONDS
    mount_dbfs "$image" "${opts[@]}" || return 1
    run_selection "$sys"
    secs[$sys]=$((SECONDS - start))
    unmount || { echo "pjdfstest: $sys: unmount failed" >&2; return 1; }
    if "$DBFS_FUSE" fsck "$image" >"$WORK/$sys.fsck" 2>&1; then
        fsck_state[$sys]=clean
    else
        fsck_state[$sys]=DAMAGED
        cat "$WORK/$sys.fsck" >&2
        return 1
    fi
    # The guest's own tree shares the image with the run: it must be untouched.
    if [ "$sys" = dbfs-guest ] && ! "$DBFS_FUSE" verify-tree "$image" --dir /tree >"$WORK/$sys.verify" 2>&1; then
        tail -5 "$WORK/$sys.verify" >&2
        echo "pjdfstest: $sys: the guest-written tree changed during the run" >&2
        fsck_state[$sys]=clean,TREE-CHANGED
        return 1
    fi
}

run_fuse2fs() {
    local start=$SECONDS
    label[fuse2fs]=fuse2fs-ext4 config[fuse2fs]=fresh-image-per-file
    command -v fuse2fs >/dev/null && command -v mkfs.ext4 >/dev/null || return 1
    for f in "${files[@]}"; do
        mount_fuse2fs || return 1
        run_file fuse2fs "$f"
        unmount || true
    done
    secs[fuse2fs]=$((SECONDS - start))
}

run_tmpfs() {
    local start=$SECONDS
    label[tmpfs]=tmpfs config[tmpfs]=one-run
    mount -t tmpfs -o size=1G,mode=0755 pjdfstest-tmpfs "$MNT" || return 1
    run_selection tmpfs
    secs[tmpfs]=$((SECONDS - start))
    unmount
}

for sys in "${SYSTEMS[@]}"; do
    echo "pjdfstest: == $sys"
    : >"$WORK/results/$sys"
    rc=0
    case $sys in
    dbfs | dbfs-nowb | dbfs-aged | dbfs-guest) run_dbfs "$sys" || rc=$? ;;
    fuse2fs) run_fuse2fs || rc=$? ;;
    tmpfs) run_tmpfs || rc=$? ;;
    *) die "unknown system $sys" ;;
    esac
    if [ $rc -ne 0 ]; then
        echo "pjdfstest: $sys: the run did not complete" >&2
        echo "- - 0 0 0 0 1 0" >>"$WORK/results/$sys"
        [[ $sys == dbfs* ]] && hard_fail=1
    fi
    cleanup
    started_pids=()
    daemon_pid=""
done

# ---- report ----
echo
for sys in "${SYSTEMS[@]}"; do
    read -r passed failed todo nfiles < <(awk '{p += $4 + $6; f += $5 + $7; t += $6; n++} END {print p + 0, f + 0, t + 0, n + 0}' "$WORK/results/$sys")
    line="PJDFSTEST fs=${label[$sys]:-$sys} config=${config[$sys]:-?} passed=$passed failed=$failed todo=$todo files=$nfiles secs=${secs[$sys]:-?}"
    [[ $sys == dbfs* ]] && line+=" fsck=${fsck_state[$sys]:-not-run}"
    echo "$line"
    if [[ $sys == dbfs* ]] && { [ "$failed" != 0 ] || [ "$passed" = 0 ] || [ "${fsck_state[$sys]:-}" != clean ]; }; then
        hard_fail=1
    fi
done

echo
printf '%-16s' "directory"
for sys in "${SYSTEMS[@]}"; do printf ' %12s' "$sys"; done
echo
for d in "${dirs[@]}" TOTAL; do
    printf '%-16s' "$d"
    for sys in "${SYSTEMS[@]}"; do
        printf ' %12s' "$(awk -v d="$d" '$1 == d || d == "TOTAL" {p += $4 + $6; t += $4 + $5 + $6 + $7} END {printf "%d/%d", p, t}' "$WORK/results/$sys")"
    done
    echo
done
echo "(passed/counted assertions, TODO ones counted as passed as prove does; fuse2fs: a fresh"
echo " image per test file; the others: one continuous run)"

# Seconds spent in each directory's test files (mounting and aging not included).
echo
printf '%-16s' "seconds"
for sys in "${SYSTEMS[@]}"; do printf ' %12s' "$sys"; done
echo
for d in "${dirs[@]}" TOTAL; do
    printf '%-16s' "$d"
    for sys in "${SYSTEMS[@]}"; do
        printf ' %12s' "$(awk -v d="$d" '$1 == d || d == "TOTAL" {ms += $8} END {printf "%.1f", ms / 1000}' "$WORK/results/$sys")"
    done
    echo
done

for sys in "${SYSTEMS[@]}"; do
    # Collected first: `grep -q` in a pipeline would end it early, and pipefail would see
    # the writer's SIGPIPE as a failure.
    failing=$(grep -Hs '^not ok' "$WORK/tap/$sys"/*.tap | grep -v '# TODO' | sed "s|$WORK/tap/$sys/||")
    if [ -n "$failing" ]; then
        echo
        echo "failing assertions on $sys: $(wc -l <<<"$failing") (at most 40 shown; TAP in $WORK/tap/$sys):"
        head -40 <<<"$failing" | cut -c1-200
    fi
done
awk '$7 > 0 {print "incomplete:", FILENAME, $2, "(" $7 " assertions not run)"}' "$WORK/results/"* | sed "s|$WORK/results/||" | head -30

exit $hard_fail
