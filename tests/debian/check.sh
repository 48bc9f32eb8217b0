# Sourced by the Debian guest scripts (tests/debian/guest.sh, gcc.sh; mk/debian.mk puts it
# beside them in /root): `check NAME COMMAND...` runs the command, prints `ok NAME` or
# `FAIL NAME: its output`, and counts; `summary LABEL` prints `LABEL: N passed, N failed`.
passed=0 failed=0
check() {
	local name=$1
	shift
	if out=$("$@" 2>&1); then
		echo "ok $name"
		passed=$((passed + 1))
	else
		echo "FAIL $name: $out"
		failed=$((failed + 1))
	fi
}
summary() { echo "$1: $passed passed, $failed failed"; }
