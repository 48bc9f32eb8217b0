#!/usr/bin/env bash
# `make help` cannot drift from the makefiles: it is generated from their `## target: ...`
# lines, and this checks the other direction too. Every target `make help` lists is a rule,
# every .PHONY target is listed, no target is listed twice, and every rule whose name is not a
# file path (no '/') is .PHONY (so a new target cannot hide from help by not being phony).
#
#   tests/make-help.sh        (from the repository root or anywhere; `make test-help`)
set -euo pipefail
cd "$(dirname "$0")/.."

fail=0
problem() {
	echo "make-help: $*" >&2
	fail=1
}

listed=$(make -s --no-print-directory help | sed -n '/^Every target, by group:$/,$p' |
	sed -n 's/^  \([a-zA-Z0-9_.-][a-zA-Z0-9_.-]*\) .*/\1/p' | sort)
[ -n "$listed" ] || { echo "make-help: make help lists no targets" >&2; exit 1; }
dups=$(uniq -d <<<"$listed")
[ -z "$dups" ] || problem "listed more than once: $(echo $dups)"

# make's database without running anything (-q: question mode, -p: print it, -r/-R: no
# built-in rules or variables). A rule's line is "name: ..." not preceded by "# Not a target:".
db=$(make -pqrR --no-print-directory 2>/dev/null || true)
rules=$(awk '/^# Not a target:/ { skip = 1; next }
	/^[a-zA-Z0-9_.][^ \t=#]*:([^=]|$)/ && !skip { sub(/:.*/, ""); print }
	{ skip = 0 }' <<<"$db" | grep -v '^\.' | sort -u)
phony=$(sed -n 's/^\.PHONY: //p' <<<"$db" | tr ' ' '\n' | sed '/^$/d' | sort -u)

for t in $listed; do
	grep -qxF "$t" <<<"$rules" || problem "make help lists '$t', which no makefile defines"
done
for t in $phony; do
	grep -qxF "$t" <<<"$listed" || problem ".PHONY target '$t' is not in make help (add a '## $t: ...' line above it)"
done
for t in $rules; do
	case $t in */*) continue ;; esac
	grep -qxF "$t" <<<"$phony" || problem "rule '$t' is not .PHONY (and so may not be in make help)"
done
[ "$fail" = 0 ] || exit 1
echo "make-help: ok ($(wc -w <<<"$listed") targets listed, each defined, every .PHONY one listed)"
