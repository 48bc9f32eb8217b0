# Systems under test for the host benchmarks (sourced by bench-direct.sh and tools/fio/fio-host.sh):
# make an image, mount it, unmount it and wait for its daemon; `cargo_bin` builds a tool. The caller sets ROOT, WORK
# (scratch directory), SYSTEMS (array), ALT_BIN (optional second dbfs-fuse, system
# "dbfsalt"; without ALT_BIN it is this dbfs-fuse), IMG_SIZE, DBFS_MOUNT_OPTS (mount options of
# dbfs), ALT_MOUNT_OPTS (of dbfsalt; default DBFS_MOUNT_OPTS), FUSE2FS_OPTS (mount options of the
# fuse2fs systems; default none, fuse2fs's own: e.g. default_permissions gives them the kernel's
# permission checks, which dbfs-fuse asks for unless only root can reach its mount), then calls `systems_setup` (builds dbfs-fuse into BIN,
# and on exit unmounts every system and removes WORK unless KEEP=1). Systems: dbfs, dbfsalt, ext4,
# ext3, ext2 (fuse2fs on an image made by mke2fs), host (a plain directory of WORK).
# Every wait is bounded: a mount that does not appear in 10 s, or a daemon that does not end
# 60 s after its unmount (it is then killed), fails or is cleaned up, never hangs.

# shellcheck source=tools/dbfs-fuse/rep_order.sh
. "$(dirname "${BASH_SOURCE[0]}")/rep_order.sh"

mnt_of() { if [ "$1" = host ]; then echo "$WORK/host"; else echo "$WORK/mnt-$1"; fi; }

mounted() { grep -q " $1 " /proc/mounts; }

wait_mounted() {
    for _ in $(seq 200); do mounted "$1" && return 0; sleep 0.05; done
    echo "${BENCH_NAME:-bench}: $1 did not mount" >&2
    exit 1
}

# Unmount and wait for the daemon to finish writing its image (dbfs-fuse syncs at unmount).
unmount_sys() {
    local m p
    m=$(mnt_of "$1")
    mounted "$m" || return 0
    fusermount3 -u "$m" 2>/dev/null || { sleep 1; fusermount3 -u "$m"; }
    p=${PID[$1]:-}
    if [ -n "$p" ]; then
        for _ in $(seq 600); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$p" 2>/dev/null && kill -KILL "$p"
    fi
    PID[$1]=
}

mount_sys() {
    local m
    m=$(mnt_of "$1")
    mkdir -p "$m"
    case $1 in
    dbfs | dbfsalt)
        local bin=$BIN opts=$DBFS_MOUNT_OPTS
        if [ "$1" = dbfsalt ]; then
            bin=${ALT_BIN:-$BIN}
            opts=${ALT_MOUNT_OPTS-$DBFS_MOUNT_OPTS}
        fi
        # shellcheck disable=SC2086
        PID[$1]=$("$bin" mount "$WORK/$1.img" "$m" ${opts:+-o $opts})
        ;;
    ext4 | ext3 | ext2)
        # shellcheck disable=SC2086
        fuse2fs "$WORK/$1.img" "$m" -f ${FUSE2FS_OPTS:+-o $FUSE2FS_OPTS} >>"$WORK/fuse2fs-$1.log" 2>&1 &
        PID[$1]=$!
        ;;
    host) return 0 ;;
    esac
    wait_mounted "$m"
}

make_image() {
    case $1 in
    dbfs | dbfsalt)
        local bin=$BIN
        [ "$1" = dbfsalt ] && bin=${ALT_BIN:-$BIN}
        "$bin" mkfs "$WORK/$1.img" --size "$IMG_SIZE" >/dev/null
        ;;
    ext4 | ext3 | ext2)
        truncate -s "$IMG_SIZE" "$WORK/$1.img"
        mke2fs -q -F -t "$1" "$WORK/$1.img"
        ;;
    host) mkdir -p "$WORK/host" ;;
    *) echo "${BENCH_NAME:-bench}: unknown system $1 (dbfs dbfsalt ext4 ext3 ext2 host)" >&2; exit 1 ;;
    esac
}


# Build the workspace package $1 (release) and print the path of its binary of the same name.
cargo_bin() {
    (cd "$ROOT" && cargo build --release -q -p "$1") || return 1
    # Make exports CARGO_TARGET_DIR relative to the repository root.
    local target=${CARGO_TARGET_DIR:-target}
    case $target in /*) ;; *) target=$ROOT/$target ;; esac
    echo "$target/release/$1"
}

# Build dbfs-fuse, create WORK, and arrange the clean-up at exit (or ^C).
systems_setup() {
    BIN=$(cargo_bin dbfs-fuse)
    mkdir -p "$WORK"
    declare -gA PID
    trap systems_cleanup EXIT
    trap 'exit 130' INT TERM
}

systems_cleanup() {
    set +e
    for sys in "${SYSTEMS[@]}"; do unmount_sys "$sys"; done
    if [ "${KEEP:-0}" != 1 ]; then rm -rf "$WORK"; fi
}
