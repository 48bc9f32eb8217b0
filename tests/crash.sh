#!/usr/bin/env bash
# Crash-survival test of dbfs in the guest (`make test-crash`, `make crash-test`).
#
# One fresh dbfs image; CRASH_POINTS times: boot QEMU with init=/bin/crashwriter (see
# user-tests/src/bin/crashwriter.rs) and the kernel's dbfs_fsck=1, wait for the writer's CHECK
# summary (printed before it commits), wait a random 0..CRASH_MAX_DELAY_MS more and SIGKILL
# QEMU. Then:
#   - `dbfs-fuse fsck IMAGE` must pass (and the kernel's own fsck at the next mount);
#   - every slot file must hold exactly what the last COMMITTED line of this boot (or the
#     writer's STATE lines at boot) says, except the slots of the one operation in flight
#     (INTENT without COMMITTED): all old or all new, or, for an effect written `name=NEW|MID`
#     (mmap-extend: grown by ftruncate, stores not written back), all MID. Contents are
#     compared with `cksum`;
#   - the writer's STATE lines at the next boot must equal what the host saw, and its
#     CHECK line must say `0 failed`.
# A last boot (`check`) verifies the final state and exits cleanly. The summary counts commits
# by operation kind (the writer's `OP SEQ KIND` lines), kills with an operation in flight by
# kind, and, for the mmap operations, how the one in flight was found (applied, not applied,
# halfway).
#
# With CRASH_WRITERS=N (N > 1) the guest runs N writer processes at once (`writers=N`), writer
# K in /crash/wK pinned to hart K, its console lines beginning with `wK `: every check above is
# made for each writer, against its lines and its directory (so up to N operations are in
# flight at a kill).
#
# Environment: CRASH_POINTS (20), CRASH_SEED (random; printed, replays the writer's operations
# and the kill delays, though not the host's timing), CRASH_MAX_DELAY_MS (3000), BUILD (build),
# KERNEL, DBFS_FUSE, MEM (1G), SMP (harts, 1), LOG (warn), CRASH_BOOT_TIMEOUT (120 s per boot),
# CRASH_WRITERS (1), HARTDUMP (tools/hartdump's binary: a boot whose writers have not checked
# 10 s before its timeout is taken as hung, and every hart's registers and stack are printed
# through QEMU's QMP socket before the test fails).
set -euo pipefail

points=${CRASH_POINTS:-20}
seed=${CRASH_SEED:-$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')}
max_delay=${CRASH_MAX_DELAY_MS:-3000}
build=${BUILD:-build}
kernel=${KERNEL:?KERNEL: path of the kernel ELF}
fuse=${DBFS_FUSE:?DBFS_FUSE: path of the dbfs-fuse binary}
mem=${MEM:-1G}
smp=${SMP:-1}
log_level=${LOG:-warn}
boot_timeout=${CRASH_BOOT_TIMEOUT:-120}
[ "$boot_timeout" -gt 20 ] || { echo "CRASH_BOOT_TIMEOUT must be more than 20 s"; exit 2; }
hartdump=${HARTDUMP:-}
writers=${CRASH_WRITERS:-1}
# The writers' line prefixes ("": one writer, no prefix) and their directories.
if [ "$writers" -gt 1 ]; then
    prefixes=$(seq -f 'w%g' 0 $((writers - 1)))
else
    prefixes=-
fi
wp="" sub=/crash # the writer being checked: its prefix and directory
select_writer() { # PREFIX ("-": the only writer)
    if [ "$1" = - ]; then wp="" sub=/crash; else wp=$1 sub=/crash/$1; fi
}

dir=$build/crash
img=$dir/dbfs.img
mkdir -p "$dir"
rm -f "$dir"/boot-*.log
truncate -s 0 "$img"
truncate -s 256M "$img" # blank: the kernel formats it at the first boot

RANDOM=$seed
echo "crash test: seed=$seed points=$points smp=$smp writers=$writers max_delay=${max_delay}ms (replay: CRASH_SEED=$seed)"

tpid="" qpid=""
cleanup() {
    [ -n "$qpid" ] && kill -KILL "$qpid" 2>/dev/null || true
    [ -n "$tpid" ] && kill -KILL "$tpid" 2>/dev/null || true
}
trap cleanup EXIT

fail() {
    echo "crash test FAILED (seed=$seed, boot $boot): $*"
    [ -n "${log:-}" ] && [ -f "$log" ] && { echo "--- last lines of $log"; tail -n 25 "$log"; }
    echo "image kept in $img"
    exit 1
}

# Boot in the background; sets tpid (timeout) and qpid (QEMU itself).
boot_qemu() { # ARGS-FOR-THE-WRITER
    local drives=()
    local d
    for d in root:vda fat:vdb raw:vdc; do
        # The other disks are only read: snapshot=on leaves the shared images untouched.
        drives+=(-drive "file=$build/${d%%:*}.img,if=none,format=raw,id=${d##*:},snapshot=on"
            -device "virtio-blk-device,drive=${d##*:},queue-size=1024")
    done
    timeout -s KILL "$boot_timeout" qemu-system-riscv64 -machine virt -nographic -bios default \
        -m "$mem" -smp "$smp" -kernel "$kernel" "${drives[@]}" \
        -qmp "unix:$dir/qmp.sock,server=on,wait=off" \
        -drive "file=$img,if=none,format=raw,id=vdd" -device virtio-blk-device,drive=vdd,queue-size=1024 \
        -append "init=/bin/crashwriter log=$log_level dbfs_fsck=1 -- seed=$seed boot=$boot writers=$writers $*" \
        </dev/null >"$log" 2>&1 &
    tpid=$!
    qpid=""
    local i
    for i in $(seq 100); do
        qpid=$(pgrep -P "$tpid" || true)
        [ -n "$qpid" ] && return 0
        kill -0 "$tpid" 2>/dev/null || break
        sleep 0.05
    done
    fail "QEMU did not start"
}

# The log without carriage returns and without a last, unfinished line; with several writers,
# only the lines of the one selected (select_writer), without their prefix.
complete_lines() {
    tr -d '\r' <"$log" | if [ -n "$(tail -c1 "$log")" ]; then sed '$d'; else cat; fi |
        if [ -n "$wp" ]; then sed -n "s/^$wp //p"; else cat; fi
}

# STATE lines the guest printed, as "name=size:crc" sorted.
guest_state() {
    complete_lines | awk '/^STATE /{print $2 "=" $3 ":" $4}' | sort | tr '\n' ' '
}

# The host's view of a slot: "-" (absent) or "size:crc".
declare -A actual
observe() {
    actual=()
    local listing name sum
    listing=$("$fuse" ls "$img" "$sub") || fail "dbfs-fuse ls $sub failed"
    for name in $(awk '{print $NF}' <<<"$listing"); do
        case $name in
        f[0-9][0-9])
            sum=$("$fuse" cat "$img" "$sub/$name" | cksum) || fail "dbfs-fuse cat $sub/$name failed"
            set -- $sum
            actual[$name]="$2:$1"
            ;;
        journal | journal.new | tmp.*) ;;
        *) fail "unexpected file $sub/$name" ;;
        esac
    done
}

# Compare the image with this boot's log; sets in_flight=1 when an operation was cut, with
# in_flight_kind (the OP line's kind) and in_flight_outcome (applied, not applied, halfway), and
# adds this boot's commits by kind to committed_by_kind.
verify_boot() {
    local -A want=() pend=() mid=()
    local kind name st alt
    in_flight_kind=""
    while read -r kind name st alt; do
        case $kind in
        C) want[$name]=$st ;;
        P) pend[$name]=$st mid[$name]=$alt ;;
        K) in_flight_kind=$name ;;
        N) committed_by_kind[$name]=$((${committed_by_kind[$name]:-0} + st)) ;;
        esac
    done < <(complete_lines | awk '
        /^STATE / { st[$2] = $3 ":" $4 }
        /^OP / { op[$2] = $3 }
        /^INTENT / { pseq = $2; n = 0; for (i = 3; i <= NF; i++) pe[++n] = $i }
        /^COMMITTED / {
            for (i = 3; i <= NF; i++) { split($i, a, "="); st[a[1]] = a[2] }
            if ($2 == pseq) pseq = ""
            done[op[$2]]++
        }
        END {
            for (k in st) print "C", k, st[k]
            # An effect "name=NEW|MID": the operation may also leave the slot at MID.
            if (pseq != "") {
                for (i = 1; i <= n; i++) {
                    split(pe[i], a, "="); m = split(a[2], b, "|")
                    print "P", a[1], b[1], (m > 1 ? b[2] : "none")
                }
                print "K", op[pseq]
            }
            for (k in done) print "N", k, done[k]
        }')
    observe
    local slot have old=1 new=1 half=1
    for slot in $(seq -f 'f%02g' 0 15); do
        have=${actual[$slot]:--}
        if [ -n "${pend[$slot]:-}" ]; then
            [ "$have" = "${want[$slot]:--}" ] || old=0
            [ "$have" = "${pend[$slot]}" ] || new=0
            [ "${mid[$slot]}" != none ] && [ "$have" = "${mid[$slot]}" ] || half=0
        elif [ "$have" != "${want[$slot]:--}" ]; then
            fail "$slot holds $have, the last commit said ${want[$slot]:--}"
        fi
    done
    in_flight=0 in_flight_outcome=""
    if [ ${#pend[@]} -gt 0 ]; then
        in_flight=1
        if [ $new = 1 ]; then
            in_flight_outcome=applied
        elif [ $old = 1 ]; then
            in_flight_outcome="not applied"
        elif [ $half = 1 ]; then
            in_flight_outcome=halfway
        else
            fail "the operation in flight ($in_flight_kind) is torn: $(for s in "${!pend[@]}"; do echo -n "$s=${actual[$s]:--} (old ${want[$s]:--}, new ${pend[$s]}, halfway ${mid[$s]}) "; done)"
        fi
    fi
    host_state=$(for s in "${!actual[@]}"; do echo "$s=${actual[$s]}"; done | sort | tr '\n' ' ')
}

# Each writer's check at boot passed and found what the host saw after the kill before.
check_writers() { # WHAT WHEN
    local p
    for p in $prefixes; do
        select_writer "$p"
        # grep reads to the end (no -q): with pipefail, a grep that quits at its match can
        # leave the writer of the pipe killed by SIGPIPE, and the pipeline failed.
        complete_lines | grep -E '^CHECK [0-9]+ passed, 0 failed' >/dev/null ||
            fail "the ${wp:-} writer's $1 failed"
        [ "$(guest_state)" = "${host_states[$p]:-}" ] ||
            fail "the ${wp:-} writer found [$(guest_state)], the host saw [${host_states[$p]:-}] $2"
    done
}

# "kind=N kind=N ..." of an associative array, sorted by kind.
by_kind() { # ARRAY-NAME
    local -n arr=$1
    local k
    for k in $(printf '%s\n' "${!arr[@]}" | sort); do echo -n "$k=${arr[$k]} "; done
}

declare -A committed_by_kind=() in_flight_by_kind=() host_states=()
mmap_outcomes="" # one word per kill inside an mmap operation: its outcome
host_state=""
mid_op=0 commits=0
start=$(date +%s)
for boot in $(seq 1 "$points"); do
    log=$dir/boot-$boot.log
    boot_qemu
    # Wait for the writers to get going: each one's check is done (the summary line; the
    # check's "CHECK in-flight ..." lines come before it), which it prints before it commits.
    # Short of QEMU's own timeout: a guest that has not checked by then is hung, and the
    # harts are dumped (where each one is) before the test fails.
    checked=0
    for i in $(seq $(((boot_timeout - 10) * 20))); do
        [ "$(grep -Ec '^(w[0-9]+ )?CHECK [0-9]+ passed, ' "$log")" -ge "$writers" ] && { checked=1; break; }
        kill -0 "$qpid" 2>/dev/null || break
        sleep 0.05
    done
    if [ $checked = 0 ] && kill -0 "$qpid" 2>/dev/null; then
        echo "crash test: boot $boot: the writers did not all finish their checks in $((boot_timeout - 10)) s; the harts:"
        if [ -n "$hartdump" ]; then
            "$hartdump" "$dir/qmp.sock" "$kernel" || true
        else
            echo "(HARTDUMP not set: no dump)"
        fi
        kill -KILL "$qpid"
        fail "the guest hung before the writers' checks finished"
    fi
    delay=$((RANDOM % (max_delay + 1)))
    sleep "$(printf '%d.%03d' $((delay / 1000)) $((delay % 1000)))"
    kill -0 "$qpid" 2>/dev/null || fail "QEMU exited before the kill"
    kill -KILL "$qpid"
    wait "$tpid" 2>/dev/null || true
    tpid="" qpid=""

    grep -q 'dbfs fsck: clean' "$log" || fail "the kernel's fsck at mount did not report clean"
    ! grep -Eq '^(w[0-9]+ )?crashwriter: ERROR' "$log" ||
        fail "a writer stopped: $(grep -E '^(w[0-9]+ )?crashwriter: ERROR' "$log")"
    check_writers "check" "after the last kill"
    "$fuse" fsck "$img" >"$dir/fsck.out" 2>&1 || { cat "$dir/fsck.out"; fail "dbfs-fuse fsck found problems"; }
    n=0 flights=""
    for p in $prefixes; do
        select_writer "$p"
        verify_boot
        host_states[$p]=$host_state
        n=$((n + $(complete_lines | grep -c '^COMMITTED ' || true)))
        mid_op=$((mid_op + in_flight))
        if [ $in_flight = 1 ]; then
            in_flight_by_kind[$in_flight_kind]=$((${in_flight_by_kind[$in_flight_kind]:-0} + 1))
            case $in_flight_kind in mmap-*) mmap_outcomes+="${in_flight_outcome// /-} " ;; esac
            flights+="${wp:+$wp: }$in_flight_kind, $in_flight_outcome; "
        fi
    done
    commits=$((commits + n))
    echo "crash point $boot: killed ${delay}ms after the checks, $n commits this boot, in flight: $([ -n "$flights" ] && echo "${flights%; }" || echo none); fsck clean, contents ok"
done

boot=$((points + 1))
log=$dir/boot-$boot.log
boot_qemu check
status=0
wait "$tpid" || status=$?
tpid="" qpid=""
grep -q 'dbfs fsck: clean' "$log" || fail "the kernel's fsck at mount did not report clean"
check_writers "final check" "at the end"
[ $status = 0 ] || fail "the final check boot exited with status $status"
count_words() { # WORD LIST...
    local w=$1 n=0 x
    shift
    for x in "$@"; do [ "$x" = "$w" ] && n=$((n + 1)); done
    echo $n
}
mmap_commits=$((${committed_by_kind[mmap-patch]:-0} + ${committed_by_kind[mmap-extend]:-0}))
set -- $mmap_outcomes
echo "commits by kind: $(by_kind committed_by_kind)"
echo "kills with an operation in flight, by kind: $(by_kind in_flight_by_kind)"
echo "mmap operations: $mmap_commits committed, $# kills inside one ($(count_words applied "$@") applied, $(count_words not-applied "$@") not applied, $(count_words halfway "$@") halfway)"
echo "crash test passed: $points kill points ($mid_op operations in flight at a kill), $commits commits checked, $writers writer(s), $(($(date +%s) - start)) s, seed=$seed"
