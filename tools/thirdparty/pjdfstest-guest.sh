# pjdfstest-run: runs the pjdfstest suite on one directory with busybox sh, and counts the TAP
# lines itself (the guest has no prove). Installed as /bin/pjdfstest-run in root.img; written
# for busybox ash (POSIX sh + busybox awk), no file of its own outside the directory tested.
#
#   sh /bin/pjdfstest-run [-s SUITE] [-n NAME] [-T FSTYPE] [-t SECS] [-x EXPECT] TARGET [TESTDIR...]
#
#   TARGET    a directory on the file system to test (e.g. /dbfs or /fat); the tests run in a
#             fresh scratch directory under it, one per .t file, removed afterwards
#   TESTDIR   directories of SUITE/tests to run (chmod, open, rename, ...); default: all
#   -s SUITE  where the suite is installed (default /usr/pjdfstest: pjdfstest, tests/)
#   -n NAME   the file system's name in the summary (default: TARGET's last component)
#   -T TYPE   the type tests/conf sees when `df -PT .` cannot tell (no /proc/mounts), in upper
#             case as conf makes it (default: NAME in upper case)
#   -t SECS   time limit of one .t file, when busybox has `timeout` (default 600)
#   -x EXPECT what the file system is known not to support, one entry a line (the format is
#             described in tools/thirdparty/pjdfstest-fat32-expect.txt, installed as
#             /etc/pjdfstest-fat32.expect): `skip FILE REASON` is not run, its planned
#             assertions count as skipped (the plan is read by running the script only up to
#             its `echo "1..N"`, where a stand-in `echo` exits: no assertion is tried);
#             `xfail FILE LIST REASON` makes those assertions expected failures; `flaky FILE
#             LIST REASON` accepts either result (counted as passed or xfail)
#
# Output: one line per .t file, then a table per directory, then
#   PJDFSTEST fs=NAME passed=N failed=N xfail=N xpass=N skipped=N todo=N planned=N
# and exit status 0 only when failed=0 and xpass=0. `ok ... # SKIP` and the assertions of
# skipped files count as skipped, `not ok ... # TODO` as todo (prove counts it as passed); an
# assertion that a file planned (1..N) but never printed, because the script died or timed out,
# counts as failed (as xfail when it is listed). `failed` counts unexpected failures only; each
# is printed as
#   FAIL dir/NN.t: not ok K - tried '...', expected E, got G
# an expected one as `XFAIL dir/NN.t: not ok K ...`, and a listed assertion that passed as
#   XPASS dir/NN.t: ok K (listed as an expected failure)
# which fails the run too, so the list cannot outlive the limits it names. The FAIL and XPASS
# lines are repeated after the summary.
#
# Two commands the scripts use that the guest lacks are shell functions in each test's shell:
# `openssl md5` (tests/misc.sh makes random names with it) is md5sum, and `df` answers with TYPE
# when the real one cannot (conf exits when it finds no file-system type).

suite=/usr/pjdfstest
name=
fstype=
limit=600
expect=
while getopts s:n:T:t:x: opt; do
	case "$opt" in
	s) suite=$OPTARG ;;
	n) name=$OPTARG ;;
	T) fstype=$OPTARG ;;
	t) limit=$OPTARG ;;
	x) expect=$OPTARG ;;
	*)
		echo "usage: pjdfstest-run [-s SUITE] [-n NAME] [-T FSTYPE] [-t SECS] [-x EXPECT] TARGET [TESTDIR...]" >&2
		exit 2
		;;
	esac
done
shift $((OPTIND - 1))
if [ $# -lt 1 ]; then
	echo "pjdfstest-run: no target directory (e.g. /dbfs)" >&2
	exit 2
fi
target=${1%/}
[ -n "$target" ] || target=/
shift
[ -n "$name" ] || name=$(basename "$target")
[ -n "$fstype" ] || fstype=$(echo "$name" | tr '[:lower:]' '[:upper:]')
if [ ! -d "$suite/tests" ] || [ ! -x "$suite/pjdfstest" ]; then
	echo "pjdfstest-run: no suite at $suite (tests/ and an executable pjdfstest)" >&2
	exit 2
fi

# The expectation file: comments (#) and blank lines aside, `skip FILE REASON`,
# `xfail FILE LIST REASON` or `flaky FILE LIST REASON`, LIST being assertion numbers and ranges
# (3,5-9). Anything else, or a FILE the suite does not have, is an error: a typo must not
# quietly turn an expectation off.
if [ -n "$expect" ]; then
	if [ ! -r "$expect" ]; then
		echo "pjdfstest-run: cannot read $expect" >&2
		exit 2
	fi
	bad=$(awk -v suite="$suite" '
		/^[ \t]*(#|$)/ { next }
		{
			ok = ($1 == "skip" && NF >= 3) ||
				(($1 == "xfail" || $1 == "flaky") && NF >= 4 && $3 ~ /^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$/)
			if (!ok || system("test -f \"" suite "/tests/" $2 "\"") != 0) print "line " NR ": " $0
		}' "$expect")
	if [ -n "$bad" ]; then
		echo "pjdfstest-run: bad entries in $expect:" >&2
		printf '%s\n' "$bad" >&2
		exit 2
	fi
fi
# lists KIND FILE: the assertion lists of FILE's KIND entries, joined with commas.
lists() {
	[ -n "$expect" ] || return 0
	awk -v k="$1" -v f="$2" '$1 == k && $2 == f { printf "%s%s", sep, $3; sep = "," }' "$expect"
}
# skip_reason FILE: the reason FILE is listed as skipped (nothing when it is not).
skip_reason() {
	[ -n "$expect" ] || return 0
	awk -v f="$1" '$1 == "skip" && $2 == f { $1 = ""; $2 = ""; sub(/^ +/, ""); print; exit }' "$expect"
}

if [ $# -eq 0 ]; then
	for d in "$suite"/tests/*/; do
		d=$(basename "$d")
		set -- "$@" "$d"
	done
fi
umask 022

# The prelude of each test's shell: the two stand-ins, then the .t file itself ($0 is its path,
# as tests/misc.sh expects). The real df is kept when it names a type here.
real_type=$(cd "$target" && df -PT . 2>/dev/null | tail -n 1 | awk '{print $2}')
prelude='openssl() { [ "$1" = md5 ] || return 1; md5sum | sed "s/ .*//"; }'
if [ -z "$real_type" ]; then
	prelude="$prelude
df() { echo 'Filesystem Type 1024-blocks Used Available Capacity Mounted-on'; echo 'none $fstype 0 0 0 0% /'; }"
	echo "pjdfstest-run: df -PT cannot tell the type of $target; the tests see $fstype"
fi
# For a skipped file: the plan line ends the script.
plan_only='echo() { case "$1" in 1..*) printf "%s\n" "$1"; exit 0 ;; esac; command echo "$@"; }'
runner=
if command -v timeout >/dev/null 2>&1; then
	runner="timeout $limit"
fi

scratch="$target/pjdfstest-run.$$"
if ! mkdir "$scratch"; then
	echo "pjdfstest-run: cannot create $scratch" >&2
	exit 2
fi

now() { date +%s; }
total_pass=0 total_fail=0 total_xfail=0 total_xpass=0 total_skip=0 total_todo=0 total_plan=0
table=
report=
start_all=$(now)
for d in "$@"; do
	if ! ls "$suite/tests/$d"/*.t >/dev/null 2>&1; then
		echo "pjdfstest-run: no tests in $suite/tests/$d" >&2
		total_fail=$((total_fail + 1))
		report="$report
FAIL $d: no tests in $suite/tests/$d"
		table="$table
$(printf '%-16s %6s %6s %7s %7s %6s %6s %7s %5s' "$d" - - - - - - - 'none')"
		continue
	fi
	dpass=0 dfail=0 dxfail=0 dxpass=0 dskip=0 dtodo=0 dplan=0 dfiles=0
	start_dir=$(now)
	for t in "$suite/tests/$d"/*.t; do
		f="$d/$(basename "$t")"
		work="$scratch/$d.$(basename "$t" .t)"
		mkdir "$work" || { echo "pjdfstest-run: cannot create $work" >&2; break; }
		reason=$(skip_reason "$f")
		t0=$(now)
		if [ -n "$reason" ]; then
			out=$(cd "$work" && $runner sh -c "$prelude
$plan_only
. \"\$0\"" "$t" 2>&1)
		else
			out=$(cd "$work" && $runner sh -c "$prelude
. \"\$0\"" "$t" 2>&1)
		fi
		t1=$(now)
		rm -rf "$work" 2>/dev/null
		# COUNTS plan passed failed xfail xpass skipped todo, after the FAIL/XFAIL/XPASS lines.
		res=$(printf '%s\n' "$out" | awk -v f="$f" -v skipped="${reason:+1}" \
			-v xfail="$(lists xfail "$f")" -v flaky="$(lists flaky "$f")" '
			function expand(list, set,    n, i, r, a, b, parts) {
				n = split(list, parts, ",")
				for (i = 1; i <= n; i++) {
					if (split(parts[i], r, "-") == 2) { a = r[1] + 0; b = r[2] + 0 }
					else { a = parts[i] + 0; b = a }
					for (; a <= b; a++) set[a] = 1
				}
			}
			BEGIN { expand(xfail, xf); expand(flaky, fl) }
			/^1\.\.[0-9]+/ { if (!plan) plan = substr($0, 4) + 0; next }
			/^ok / {
				k = $2 + 0; seen[k] = 1
				if ($0 ~ /# *[Ss][Kk][Ii][Pp]/) skip++
				else if (k in xf) { xpass++; print "XPASS " f ": " $0 " (listed as an expected failure)" }
				else pass++
				next
			}
			/^not ok / {
				k = $3 + 0; seen[k] = 1
				if ($0 ~ /# *[Tt][Oo][Dd][Oo]/) todo++
				else if ((k in xf) || (k in fl)) { xfails++; print "XFAIL " f ": " $0 }
				else { fail++; print "FAIL " f ": " $0 }
				next
			}
			END {
				if (skipped) {
					# A skipped file whose plan could not be read counts as one assertion.
					n = plan ? plan : 1
					printf "COUNTS %d 0 0 0 0 %d 0\n", n, n
					exit
				}
				if (plan == 0) { fail++; print "FAIL " f ": no plan (1..N) printed" }
				for (k = 1; k <= plan; k++) {
					if (k in seen) continue
					if ((k in xf) || (k in fl)) { xfails++; print "XFAIL " f ": assertion " k " never printed" }
					else { fail++; print "FAIL " f ": assertion " k " of " plan " never printed" }
				}
				printf "COUNTS %d %d %d %d %d %d %d\n", plan ? plan : 1, pass, fail, xfails, xpass, skip, todo
			}')
		read -r _ plan pass fail xfail xpass skip todo <<EOF
$(printf '%s\n' "$res" | tail -n 1)
EOF
		if [ -n "$reason" ]; then
			printf '%-22s planned=%-4d skipped: %s\n' "$f" "$plan" "$reason"
		else
			printf '%-22s planned=%-4d passed=%-4d failed=%-4d xfail=%-4d xpass=%-3d skipped=%-3d todo=%-3d %ds\n' \
				"$f" "$plan" "$pass" "$fail" "$xfail" "$xpass" "$skip" "$todo" $((t1 - t0))
		fi
		printf '%s\n' "$res" | grep -E '^(FAIL|XFAIL|XPASS) ' || true
		bad=$(printf '%s\n' "$res" | grep -E '^(FAIL|XPASS) ' || true)
		[ -z "$bad" ] || report="$report
$bad"
		dpass=$((dpass + pass)) dfail=$((dfail + fail)) dxfail=$((dxfail + xfail))
		dxpass=$((dxpass + xpass)) dskip=$((dskip + skip)) dtodo=$((dtodo + todo))
		dplan=$((dplan + plan)) dfiles=$((dfiles + 1))
	done
	table="$table
$(printf '%-16s %6d %6d %7d %7d %6d %6d %7d %5d %6ds' "$d" "$dfiles" "$dplan" "$dpass" "$dfail" \
		"$dxfail" "$dxpass" "$dskip" "$dtodo" $(($(now) - start_dir)))"
	total_pass=$((total_pass + dpass)) total_fail=$((total_fail + dfail))
	total_xfail=$((total_xfail + dxfail)) total_xpass=$((total_xpass + dxpass))
	total_skip=$((total_skip + dskip)) total_todo=$((total_todo + dtodo))
	total_plan=$((total_plan + dplan))
done
rmdir "$scratch" 2>/dev/null || echo "pjdfstest-run: $scratch is not empty after the run"

echo
echo "pjdfstest on $target (fs=$name), $(($(now) - start_all)) s${expect:+, expectations: $expect}"
printf '%-16s %6s %6s %7s %7s %6s %6s %7s %5s %7s\n' dir files planned passed failed xfail xpass skipped todo time
printf '%s\n' "$table" | sed '/^$/d'
printf '%-16s %6s %6d %7d %7d %6d %6d %7d %5d\n' total "" "$total_plan" "$total_pass" "$total_fail" \
	"$total_xfail" "$total_xpass" "$total_skip" "$total_todo"
echo "PJDFSTEST fs=$name passed=$total_pass failed=$total_fail xfail=$total_xfail xpass=$total_xpass skipped=$total_skip todo=$total_todo planned=$total_plan"
if [ -n "$(printf '%s' "$report" | sed '/^$/d')" ]; then
	echo "unexpected results on $name (FAIL: not listed; XPASS: listed, but passed):"
	printf '%s\n' "$report" | sed '/^$/d'
else
	echo "unexpected results on $name: none"
fi
[ "$total_fail" -eq 0 ] && [ "$total_xpass" -eq 0 ]
