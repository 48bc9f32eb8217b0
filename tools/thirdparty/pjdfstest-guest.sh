# pjdfstest-run: runs the pjdfstest suite on one directory with busybox sh, and counts the TAP
# lines itself (the guest has no prove). Installed as /bin/pjdfstest-run in root.img; written
# for busybox ash (POSIX sh + busybox awk), no file of its own outside the directory tested.
#
#   sh /bin/pjdfstest-run [-s SUITE] [-n NAME] [-T FSTYPE] [-t SECS] TARGET [TESTDIR...]
#
#   TARGET    a directory on the file system to test (e.g. /dbfs or /fat); the tests run in a
#             fresh scratch directory under it, one per .t file, removed afterwards
#   TESTDIR   directories of SUITE/tests to run (chmod, open, rename, ...); default: all
#   -s SUITE  where the suite is installed (default /usr/pjdfstest: pjdfstest, tests/)
#   -n NAME   the file system's name in the summary (default: TARGET's last component)
#   -T TYPE   the type tests/conf sees when `df -PT .` cannot tell (no /proc/mounts), in upper
#             case as conf makes it (default: NAME in upper case)
#   -t SECS   time limit of one .t file, when busybox has `timeout` (default 600)
#
# Output: one line per .t file, then a table per directory, then
#   PJDFSTEST fs=NAME passed=N failed=N skipped=N todo=N planned=N
# and exit status 0 only when failed=0. `ok ... # SKIP` counts as skipped, `not ok ... # TODO` as
# todo (prove counts it as passed); an assertion that a file planned (1..N) but never printed,
# because the script died or timed out, counts as failed. Every failing assertion is printed as
#   FAIL dir/NN.t: not ok K - tried '...', expected E, got G
#
# Two commands the scripts use that the guest lacks are shell functions in each test's shell:
# `openssl md5` (tests/misc.sh makes random names with it) is md5sum, and `df` answers with TYPE
# when the real one cannot (conf exits when it finds no file-system type).

suite=/usr/pjdfstest
name=
fstype=
limit=600
while getopts s:n:T:t: opt; do
	case "$opt" in
	s) suite=$OPTARG ;;
	n) name=$OPTARG ;;
	T) fstype=$OPTARG ;;
	t) limit=$OPTARG ;;
	*)
		echo "usage: pjdfstest-run [-s SUITE] [-n NAME] [-T FSTYPE] [-t SECS] TARGET [TESTDIR...]" >&2
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
total_pass=0 total_fail=0 total_skip=0 total_todo=0 total_plan=0
table=
start_all=$(now)
for d in "$@"; do
	if ! ls "$suite/tests/$d"/*.t >/dev/null 2>&1; then
		echo "pjdfstest-run: no tests in $suite/tests/$d" >&2
		total_fail=$((total_fail + 1))
		table="$table
$(printf '%-16s %6s %6s %6s %6s %6s' "$d" - - - - 'none')"
		continue
	fi
	dpass=0 dfail=0 dskip=0 dtodo=0 dplan=0 dfiles=0
	start_dir=$(now)
	for t in "$suite/tests/$d"/*.t; do
		f="$d/$(basename "$t")"
		work="$scratch/$d.$(basename "$t" .t)"
		mkdir "$work" || { echo "pjdfstest-run: cannot create $work" >&2; break; }
		t0=$(now)
		out=$(cd "$work" && $runner sh -c "$prelude
. \"\$0\"" "$t" 2>&1)
		t1=$(now)
		rm -rf "$work" 2>/dev/null
		# plan passed failed skipped todo missing, then the failing lines.
		res=$(printf '%s\n' "$out" | awk -v f="$f" '
			/^1\.\.[0-9]+/ { plan = substr($0, 4) + 0; next }
			/^ok / { if ($0 ~ /# *[Ss][Kk][Ii][Pp]/) skip++; else pass++; next }
			/^not ok / {
				if ($0 ~ /# *[Tt][Oo][Dd][Oo]/) todo++
				else { fail++; print "FAIL " f ": " $0 }
				next
			}
			END {
				ran = pass + fail + skip + todo
				missing = plan > ran ? plan - ran : 0
				if (plan == 0) missing = 1
				if (missing) print "FAIL " f ": planned " plan ", printed " ran " results"
				printf "COUNTS %d %d %d %d %d %d\n", plan, pass, fail + missing, skip, todo, missing
			}')
		read -r _ plan pass fail skip todo _ <<EOF
$(printf '%s\n' "$res" | tail -n 1)
EOF
		[ "$plan" -gt 0 ] || plan=1
		printf '%-22s planned=%-4d passed=%-4d failed=%-4d skipped=%-3d todo=%-3d %ds\n' \
			"$f" "$plan" "$pass" "$fail" "$skip" "$todo" $((t1 - t0))
		printf '%s\n' "$res" | grep '^FAIL ' || true
		dpass=$((dpass + pass)) dfail=$((dfail + fail)) dskip=$((dskip + skip))
		dtodo=$((dtodo + todo)) dplan=$((dplan + plan)) dfiles=$((dfiles + 1))
	done
	table="$table
$(printf '%-16s %6d %6d %7d %7d %7d %5d %6ds' "$d" "$dfiles" "$dplan" "$dpass" "$dfail" "$dskip" "$dtodo" $(($(now) - start_dir)))"
	total_pass=$((total_pass + dpass)) total_fail=$((total_fail + dfail))
	total_skip=$((total_skip + dskip)) total_todo=$((total_todo + dtodo))
	total_plan=$((total_plan + dplan))
done
rmdir "$scratch" 2>/dev/null || echo "pjdfstest-run: $scratch is not empty after the run"

echo
echo "pjdfstest on $target (fs=$name), $(($(now) - start_all)) s"
printf '%-16s %6s %6s %7s %7s %7s %5s %7s\n' dir files planned passed failed skipped todo time
printf '%s\n' "$table" | sed '/^$/d'
printf '%-16s %6s %6d %7d %7d %7d %5d\n' total "" "$total_plan" "$total_pass" "$total_fail" "$total_skip" "$total_todo"
echo "PJDFSTEST fs=$name passed=$total_pass failed=$total_fail skipped=$total_skip todo=$total_todo planned=$total_plan"
[ "$total_fail" -eq 0 ]
