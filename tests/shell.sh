#!/usr/bin/env bash
# The console shell, tested as a person uses it: QEMU runs in a tmux pane with the Debian root's
# first process (Debian's bash as a login shell, in /root); commands are typed with `tmux
# send-keys`, the screen is read with `capture-pane`. Checks: the prompt, a command's output, a
# pipeline and a redirection onto /dbfs, ^C stopping a running `sleep` (status 130, the prompt
# back), ^Z stopping one (jobs lists it, fg continues it), line editing (backspace, history recall with Up), ps and /proc, python3, vi (insert,
# save, quit) and less (a page, then q), and `exit 3` ending QEMU with status 3. Every wait is
# bounded; the session is killed on exit.
#
#   QEMU='qemu-system-riscv64 ...' KPARAMS='rootfs=dbfs init=...' BUILD=build tests/shell.sh
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

# The prompt: Debian's /etc/bash.bashrc sets \u@\h:\w\$; the kernel's node name is dbfs-os.
wait_for "root@dbfs-os:~#" 180
type_line 'echo "pwd=$(pwd) home=$HOME path=$PATH"'
wait_for "pwd=/root home=/root path=/usr/local/sbin:" 20
type_line 'echo sum=$((40+2))'
wait_for "sum=42" 20
type_line 'seq 1 500 | sort -rn | head -2 > /dbfs/shell-test.txt; cat /dbfs/shell-test.txt | tr "\n" " "; echo END'
wait_for "500 499 END" 30
type_line 'sleep 100'
sleep 2
tmux send-keys -t "$session" C-c
type_line 'echo after=$?'
wait_for "after=130" 20
# Job control: ^Z stops a running sleep (bash reports it Stopped), jobs lists it, fg
# continues it in the foreground, and ^C then ends it.
type_line 'sleep 200'
sleep 2
tmux send-keys -t "$session" C-z
wait_for "Stopped" 20
type_line 'jobs; echo jobs-listed'
wait_for "jobs-listed" 20
[ "$(screen | grep -c 'Stopped.*sleep 200')" -ge 2 ] || { echo "shell test: jobs did not list the stopped sleep" >&2; screen >&2; exit 1; }
type_line 'fg'
sleep 2
tmux send-keys -t "$session" C-c
type_line 'echo fg=$?'
wait_for "fg=130" 20
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
type_line 'sleep 77 & echo "psbefore=$(ps ax | grep -c "[s]leep 77")"; kill $!; wait; echo "psafter=$(ps ax | grep -c "[s]leep 77") mounts=$(grep -c " /dbfs dbfs " /proc/mounts)"'
wait_for "psbefore=1" 30
wait_for "psafter=0 mounts=1" 30
type_line 'python3 -c "import sys; print(\"py\", 6 * 7, sys.version_info[0])"'
wait_for "py 42 3" 60
# vi (vim-tiny): insert a line, leave insert mode, write and quit; the file has the line.
type_line 'vi /root/vi-test.txt'
sleep 4
tmux send-keys -t "$session" -l -- 'ihello from vi'
tmux send-keys -t "$session" Escape
sleep 1
tmux send-keys -t "$session" -l -- ':wq'
tmux send-keys -t "$session" Enter
sleep 2
type_line 'echo "vi=$(cat /root/vi-test.txt)"'
wait_for "vi=hello from vi" 30
# less: the first page of a long file, then q brings the prompt back.
type_line 'seq 1000 2000 > /root/less-test.txt; less /root/less-test.txt'
wait_for "1010" 30
tmux send-keys -t "$session" q
type_line 'echo less-done=$?'
wait_for "less-done=0" 20
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
echo "shell test: ok (prompt in /root, output, pipe and redirection, ^C, ^Z and fg, line editing, ps and /proc, python3, vi, less, exit status)"
