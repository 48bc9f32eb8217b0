#!/usr/bin/env bash
# lists.sh: the enabled and not-enabled LTP lists from a broad run's console log.
#
#   tools/ltp/lists.sh LOG RUNTEST [ENABLED NOT_ENABLED]
#
# LOG: the console of a `make ltp` run over RUNTEST (e.g. LTP's runtest/syscalls), with the
# runner's per-case lines (tests/ltp/runltp.sh); the consoles of several runs may be joined
# into one LOG, and a case's last result counts (a later run of some cases on a fixed kernel). Writes ENABLED (default
# tests/ltp/enabled.txt): RUNTEST's lines of the cases that passed (verdict PASS), in
# RUNTEST's order; and NOT_ENABLED (default tests/ltp/not-enabled.txt): every other entry of
# RUNTEST, `NAME  CLASS: REASON`, the class from what the case printed (the first
# TFAIL/TBROK/TCONF line the runner shows, or its verdict), the reason that line:
#   device      it needs a spare block device (LTP_DEV), mount(2) or a file system to make
#   network     it needs a network interface or address family we do not have
#   missing     a kernel feature that is not built (ENOSYS, EOPNOTSUPP, a /proc or /sys file,
#               the kernel's .config, a mount option, ...): LTP's own words name it
#   fails       it runs and a check fails or breaks: a kernel bug or a missing behaviour
#   timeout     it did not finish within the runner's timeout
#   crash       it died of a signal
#   not-built   its program did not build for riscv64
#   not-run     the log has no line for it (the run ended early)
# Entries of LOG's closing figures are untouched; edit NOT_ENABLED by hand afterwards only to
# sharpen a reason (a later run of this script writes it again).
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: tools/ltp/lists.sh LOG RUNTEST [ENABLED NOT_ENABLED]" >&2; exit 2; }
log=$1 runtest=$2
enabled=${3:-tests/ltp/enabled.txt}
not_enabled=${4:-tests/ltp/not-enabled.txt}

# name<TAB>verdict<TAB>first reason line, from the runner's lines (console \r removed).
verdicts=$(tr -d '\r' <"$log" | awk '
	/^(PASS|FAIL|BROK|CONF|WARN|TIMEOUT|CRASH|MISSING) [^ ]+ [0-9]+s passed=/ {
		if (name != "") print name "\t" verdict "\t" why
		verdict = $1; name = $2; why = ""; next
	}
	/^    / && name != "" && why == "" {
		why = substr($0, 5)
		# LTP prefixes "file.c:NN: " to its results; keep the message.
		sub(/^[^ ]+\.c:[0-9]+: /, "", why)
		if (length(why) > 160) why = substr(why, 1, 160) "..." 
		next
	}
	/^LTP / { if (name != "") print name "\t" verdict "\t" why; name = "" }
	END { if (name != "") print name "\t" verdict "\t" why }')

classify() {
	local verdict=$1 why=$2
	case $verdict in
	TIMEOUT) echo "timeout: did not finish in the runner's time${why:+ (last: $why)}"; return ;;
	CRASH) echo "crash: ${why:-killed by a signal}"; return ;;
	MISSING) echo "not-built: its program did not build for riscv64"; return ;;
	esac
	case $why in
	*"acquire device"* | *"LTP_DEV"* | *"loop device"* | *"mkfs"* | *"needs_device"* | *"tst_device"*)
		echo "device: $why" ;;
	*"network"* | *"AF_INET"* | *"ENETUNREACH"* | *"ENETDOWN"* | *"EADDRNOTAVAIL"* | *"ifconfig"* | *" ip "*)
		echo "network: $why" ;;
	*ENOSYS* | *"not implemented"* | *"not supported"* | *EOPNOTSUPP* | *"No such file or directory"*"/proc/"* | \
		*"/proc/sys"* | *"/sys/"* | *"kernel config"* | *"CONFIG_"* | *"Couldn't locate"* | *TCONF*)
		echo "missing: $why" ;;
	*) echo "fails: ${why:-$verdict without a message}" ;;
	esac
}

src=$(basename "$runtest")
{
	echo "# LTP cases \`make ltp\` runs: the entries of runtest/$src that passed in the run of"
	echo "# $(basename "$log") (tools/ltp/lists.sh wrote this; see tests/ltp/README.md)."
} >"$enabled.tmp"
{
	echo "# Entries of LTP's runtest/$src not in enabled.txt, each with its class and reason: the"
	echo "# line LTP printed (tools/ltp/lists.sh, from the run of $(basename "$log"); classes in"
	echo "# tools/ltp/lists.sh and tests/ltp/README.md)."
} >"$not_enabled.tmp"
while IFS= read -r line; do
	case $line in '' | '#'*) continue ;; esac
	name=${line%%[[:space:]]*}
	# The last result of the case counts (a log of later runs may follow the broad one).
	row=$(awk -F'\t' -v n="$name" '$1 == n { r = $0 } END { if (r != "") print r }' <<<"$verdicts")
	if [ -z "$row" ]; then
		printf '%-28s %s\n' "$name" "not-run: no result in the log" >>"$not_enabled.tmp"
		continue
	fi
	IFS=$'\t' read -r _ verdict why <<<"$row"
	if [ "$verdict" = PASS ]; then
		echo "$line" >>"$enabled.tmp"
	else
		printf '%-28s %s\n' "$name" "$(classify "$verdict" "$why")" >>"$not_enabled.tmp"
	fi
done <"$runtest"
mv "$enabled.tmp" "$enabled"
mv "$not_enabled.tmp" "$not_enabled"
echo "lists.sh: $(grep -vc '^#' "$enabled") enabled ($enabled), $(grep -vc '^#' "$not_enabled") not enabled ($not_enabled)"
