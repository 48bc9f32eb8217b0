#!/usr/bin/env bash
# Guest and host agree on dbfs (`make test-cross`; see docs/ARCHITECTURE.md, "Cross-check").
#
#   1. host -> guest: `dbfs-fuse gen-tree` writes the tree of SEED and its MANIFEST into a fresh
#      image through the dbfs library (no mount); the guest boots on it and
#      `crosscheck verify /dbfs` checks every entry; the host fscks the image afterwards.
#   2. guest -> host: the guest writes the same kind of tree with `crosscheck gen` on a blank
#      disk (the kernel formats it); the host runs `dbfs-fuse fsck`, `verify-tree` (library)
#      and `verify-dir` on a real FUSE mount.
#   3. the workload of tests/crosscheck/workload.txt runs in the guest (blank disk) and on a
#      FUSE mount of a freshly mkfs'd image; the two listings must be byte-identical.
#
# Called by the Makefile with:
#   QEMU          the QEMU command line of QEMU_BASE, with @DBFS@ where the vdd image goes
#   KPARAMS       kernel parameters after init= (log=... bcache=...)
#   DBFS_FUSE     the dbfs-fuse binary
#   WORK          a scratch directory (recreated)
#   SEED          the tree's seed (default 1)
# Every QEMU boot and every mount has a hard time limit; the EXIT trap unmounts and kills
# whatever is still running. Exit status 0 only if every part passed.
set -euo pipefail

: "${QEMU:?}" "${KPARAMS:?}" "${DBFS_FUSE:?}" "${WORK:?}"
SEED=${SEED:-1}
BOOT_LIMIT=${BOOT_LIMIT:-300}
IMG_SIZE=64M

rm -rf "$WORK"
mkdir -p "$WORK/mnt"
WORK=$(cd "$WORK" && pwd)
MNT=$WORK/mnt
mount_pid=""
qemu_pid=""
failures=0

cleanup() {
    if [ -n "$qemu_pid" ] && kill -0 "$qemu_pid" 2>/dev/null; then
        kill "$qemu_pid" 2>/dev/null || true
    fi
    if grep -qs " $MNT " /proc/self/mounts; then
        fusermount3 -u "$MNT" 2>/dev/null || fusermount3 -uz "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null || true
    fi
    if [ -n "$mount_pid" ] && kill -0 "$mount_pid" 2>/dev/null; then
        kill "$mount_pid" 2>/dev/null || true
    fi
}
trap cleanup EXIT

fail() {
    echo "test-cross: FAILED: $*"
    failures=$((failures + 1))
}

# boot NAME IMAGE INIT-ARGS...: boot the guest with IMAGE as vdd; log in $WORK/NAME.log.
boot() {
    local name=$1 image=$2
    shift 2
    local cmd=${QEMU//@DBFS@/$image}
    echo "test-cross: boot: crosscheck $*"
    # shellcheck disable=SC2086 # the command line is split on purpose, as make does
    timeout -k 10 "$BOOT_LIMIT" $cmd -append "init=/bin/crosscheck $KPARAMS -- $*" \
        </dev/null >"$WORK/$name.log" 2>&1 &
    qemu_pid=$!
    local rc=0
    wait "$qemu_pid" || rc=$?
    qemu_pid=""
    tr -d '\r' <"$WORK/$name.log" >"$WORK/$name.txt"
    return $rc
}

# mount IMAGE: FUSE-mount it on $MNT (background process, time-limited start).
mount_image() {
    mount_pid=$(timeout -k 5 30 "$DBFS_FUSE" mount "$1" "$MNT")
}

# unmount: unmount $MNT and wait for the mount process to write back and exit.
unmount_image() {
    timeout -k 5 30 fusermount3 -u "$MNT" || { fusermount3 -uz "$MNT" || true; return 1; }
    for _ in $(seq 200); do
        kill -0 "$mount_pid" 2>/dev/null || { mount_pid=""; return 0; }
        sleep 0.1
    done
    echo "test-cross: the mount process did not exit"
    return 1
}

# clean_line FILE: true if FILE has a line `N passed, 0 failed` with N > 0.
clean_line() {
    grep -Eq '^[1-9][0-9]* passed, 0 failed$' "$1"
}

start=$(date +%s)

# ---- 1. host -> guest
echo "== test-cross 1/3: host writes (seed $SEED), guest verifies"
H2G=$WORK/host-to-guest.img
"$DBFS_FUSE" mkfs "$H2G" --size $IMG_SIZE
"$DBFS_FUSE" gen-tree "$H2G" --seed "$SEED"
rc=0
boot verify "$H2G" verify /dbfs || rc=$?
grep -E '^crosscheck|passed, ' "$WORK/verify.txt" || true
if [ $rc -ne 0 ] || ! clean_line "$WORK/verify.txt"; then
    fail "guest verification of the host-written tree (exit $rc; log $WORK/verify.log)"
fi
"$DBFS_FUSE" fsck "$H2G" || fail "fsck after the guest mounted the host-written image"

# ---- 2. guest -> host
echo "== test-cross 2/3: guest writes (seed $SEED), host verifies"
G2H=$WORK/guest-to-host.img
truncate -s $IMG_SIZE "$G2H"   # blank: the kernel formats it
rc=0
boot gen "$G2H" gen /dbfs/tree "seed=$SEED" || rc=$?
grep -E '^crosscheck' "$WORK/gen.txt" || true
if [ $rc -ne 0 ] || ! grep -q "^crosscheck gen: seed $SEED written" "$WORK/gen.txt"; then
    fail "guest tree generation (exit $rc; log $WORK/gen.log)"
fi
"$DBFS_FUSE" fsck "$G2H" || fail "fsck of the guest-written image"
"$DBFS_FUSE" verify-tree "$G2H" --dir /tree >"$WORK/verify-tree.txt" 2>&1 || true
cat "$WORK/verify-tree.txt"
clean_line "$WORK/verify-tree.txt" || fail "verify-tree (library) of the guest-written tree"
if mount_image "$G2H"; then
    timeout -k 5 120 "$DBFS_FUSE" verify-dir "$MNT/tree" >"$WORK/verify-dir.txt" 2>&1 || true
    cat "$WORK/verify-dir.txt"
    clean_line "$WORK/verify-dir.txt" || fail "verify-dir (FUSE mount) of the guest-written tree"
    unmount_image || fail "unmount after verify-dir"
else
    fail "cannot FUSE-mount the guest-written image"
fi

# ---- 3. the same workload on both sides
echo "== test-cross 3/3: tests/crosscheck/workload.txt in the guest and through FUSE"
WG=$WORK/workload-guest.img
truncate -s $IMG_SIZE "$WG"
rc=0
boot workload "$WG" workload /dbfs/wl || rc=$?
sed -n '/^--- crosscheck listing begin ---$/,/^--- crosscheck listing end ---$/p' \
    "$WORK/workload.txt" >"$WORK/listing-guest.txt"
grep -E '^crosscheck|passed, ' "$WORK/workload.txt" || true
if [ $rc -ne 0 ] || ! clean_line "$WORK/workload.txt"; then
    fail "guest workload (exit $rc; log $WORK/workload.log)"
fi
"$DBFS_FUSE" fsck "$WG" || fail "fsck of the guest's workload image"
WH=$WORK/workload-host.img
"$DBFS_FUSE" mkfs "$WH" --size $IMG_SIZE
if mount_image "$WH"; then
    timeout -k 5 120 "$DBFS_FUSE" workload "$MNT/wl" >"$WORK/workload-host.txt" 2>&1 || true
    unmount_image || fail "unmount after the host workload"
    sed -n '/^--- crosscheck listing begin ---$/,/^--- crosscheck listing end ---$/p' \
        "$WORK/workload-host.txt" >"$WORK/listing-host.txt"
    grep -E '^workload|passed, ' "$WORK/workload-host.txt" || true
    clean_line "$WORK/workload-host.txt" || fail "host workload through FUSE"
    "$DBFS_FUSE" fsck "$WH" || fail "fsck of the host's workload image"
else
    fail "cannot FUSE-mount the host workload image"
fi
if [ "$(grep -c '^[fdlcbps] ' "$WORK/listing-guest.txt")" -eq 0 ]; then
    fail "the guest printed no listing"
elif diff -u "$WORK/listing-host.txt" "$WORK/listing-guest.txt"; then
    echo "test-cross: guest and host listings identical ($(grep -c '^[fdlcbps] ' "$WORK/listing-guest.txt") entries)"
else
    fail "guest and host listings differ (diff above: - host, + guest)"
fi

echo "test-cross: $(($(date +%s) - start)) s, seed $SEED, logs in $WORK"
if [ $failures -ne 0 ]; then
    echo "test-cross: $failures parts failed"
    exit 1
fi
echo "test-cross: all parts passed"
