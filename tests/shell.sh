#!/usr/bin/env bash
# The console shell, tested as a person uses it: QEMU runs in a tmux pane with busybox sh as
# init; commands are typed with `tmux send-keys`, the screen is read with `capture-pane`.
# Checks: a command's output, a pipeline and a redirection onto /dbfs, ^C stopping a running
# `sleep` (status 130, the prompt back), line editing (backspace, history recall with Up), and
# `exit 3` ending QEMU with status 3. Every wait is bounded; the session is killed on exit.
#
#   QEMU='qemu-system-riscv64 ...' KPARAMS='init=/bin/sh ...' BUILD=build tests/shell.sh
set -euo pipefail
: "${QEMU:?}" "${KPARAMS:?}" "${BUILD:=build}"
session="dbfs-os-shell-$$"
status_file="$BUILD/shell-test.status"
rm -f "$status_file"
cleanup() { tmux kill-session -t "$session" 2>/dev/null || true; }
trap cleanup EXIT

tmux new-session -d -s "$session" -x 160 -y 50 \
	"timeout --foreground -k 5 300 $QEMU -append '$KPARAMS'; echo \$? > '$status_file'; sleep 30"

screen() { tmux capture-pane -t "$session" -p -S -200; }
# wait_for TEXT SECS: until TEXT is on the screen.
wait_for() {
	local text=$1 secs=$2 i
	for ((i = 0; i < secs * 4; i++)); do
		if screen | grep -qF -- "$text"; then return 0; fi
		sleep 0.25
	done
	echo "shell test: '$text' did not appear within ${secs}s; the screen:" >&2
	screen >&2
	return 1
}
type_line() { tmux send-keys -t "$session" -l -- "$1"; tmux send-keys -t "$session" Enter; }

# The prompt: "~ #" (root's home is / in /etc/passwd, and ash shows it as ~).
wait_for "~ #" 120
type_line 'echo sum=$((40+2))'
wait_for "sum=42" 20
type_line 'seq 1 500 | sort -rn | head -2 > /dbfs/shell-test.txt; cat /dbfs/shell-test.txt | tr "\n" " "; echo END'
wait_for "500 499 END" 30
type_line 'sleep 100'
sleep 2
tmux send-keys -t "$session" C-c
type_line 'echo after=$?'
wait_for "after=130" 20
# Line editing: a typo fixed with backspace, then the line recalled with Up and run again.
tmux send-keys -t "$session" -l -- 'echo fixedX'
tmux send-keys -t "$session" BSpace
tmux send-keys -t "$session" -l -- 'Y'
tmux send-keys -t "$session" Enter
wait_for "fixedY" 20
tmux send-keys -t "$session" Up Enter
sleep 2
[ "$(screen | grep -c '^fixedY$')" -ge 2 ] || { echo "shell test: Up did not recall the line" >&2; screen >&2; exit 1; }
# ps (procfs): a background sleep shows up with its arguments, and goes away when killed.
type_line 'sleep 77 & echo "psbefore=$(ps | grep -c "[s]leep 77")"; kill $!; wait; echo "psafter=$(ps | grep -c "[s]leep 77") mounts=$(grep -c "^dbfs /dbfs" /proc/mounts)"'
wait_for "psbefore=1" 20
wait_for "psafter=0 mounts=1" 20
type_line 'exit 3'
for ((i = 0; i < 120; i++)); do
	[ -s "$status_file" ] && break
	sleep 0.5
done
status=$(cat "$status_file" 2>/dev/null || echo none)
if [ "$status" != 3 ]; then
	echo "shell test: QEMU exited with '$status', expected 3 (exit 3 in the shell)" >&2
	screen >&2
	exit 1
fi
echo "shell test: ok (output, pipe and redirection, ^C, line editing, ps and /proc, exit status)"
