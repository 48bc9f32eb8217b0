#!/usr/bin/env bash
# tests/guest-timeout.sh SECONDS QEMU-COMMAND...: the hard timeout of a test's QEMU boot, as
# `timeout --foreground -k 10 SECONDS` (QEMU stays in the foreground: the console and ^C work),
# and when the time is up, before QEMU is stopped, where every hart is: QEMU gets a QMP socket
# and `tools/hartdump` (HARTDUMP: its binary) prints each hart's registers and the kernel
# functions on its stack. Exit status: QEMU's, or 124 when the time ran out (as timeout's).
set -u
secs=${1:?usage: guest-timeout.sh SECONDS QEMU-COMMAND...}
shift
kernel="" prev=""
for a in "$@"; do
    [ "$prev" = -kernel ] && kernel=$a
    prev=$a
done
sock=$(mktemp -u "${TMPDIR:-/tmp}/guest-qmp.XXXXXX")
sleeper="" qemu=""
cleanup() {
    [ -n "$sleeper" ] && kill "$sleeper" 2>/dev/null
    [ -n "$qemu" ] && kill -KILL "$qemu" 2>/dev/null
    rm -f "$sock"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# A background job of a script reads /dev/null unless told otherwise: QEMU keeps our stdin.
"$@" -qmp "unix:$sock,server=on,wait=off" <&0 &
qemu=$!
sleep "$secs" &
sleeper=$!
ended=""
wait -n -p ended "$qemu" "$sleeper"
status=$?
if [ "$ended" = "$qemu" ]; then
    qemu=""
    exit $status
fi
if [ "$ended" = "$sleeper" ]; then
    sleeper=""
    echo "guest-timeout: QEMU still running after $secs s; where the harts are:" >&2
    if [ -n "${HARTDUMP:-}" ] && [ -x "$HARTDUMP" ]; then
        "$HARTDUMP" "$sock" "${kernel:-/dev/null}" >&2 || true
    else
        echo "guest-timeout: no hartdump (HARTDUMP=${HARTDUMP:-}): no dump" >&2
    fi
    kill -TERM "$qemu" 2>/dev/null
    for _ in $(seq 100); do
        kill -0 "$qemu" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL "$qemu" 2>/dev/null
    wait "$qemu" 2>/dev/null
    qemu=""
    exit 124
fi
exit 130 # a signal ended the wait
