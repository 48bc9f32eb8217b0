#!/bin/sh
# tartest DIR...: busybox tar with a compressor child (`tar czf`, `tar cjf`) and their
# extraction, between every ordered pair of the directories given (e.g. /dbfs /fat), in the
# guest (installed as /bin/tartest).
#
# tar starts gzip / bzip2 with vfork + execlp by name, so this checks exec through PATH of an
# applet, vfork (the parent must not write into the pipe before the child has exec'd), pipes
# between the two, and the bytes each file system returns. A tree with nested directories,
# an empty file, a name with spaces, a 300 KiB random file and a 1 MiB file of one byte is
# written on the first directory of a pair, archived onto the second, extracted back onto the
# first, and compared file by file (md5sum) with the original.
# Prints one line per failed check and closes with `tartest: N passed, N failed`; exits 1 on
# any failure.

pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() {
	fail=$((fail + 1))
	echo "tartest: FAIL: $*"
}

# sums DIR: md5 of every regular file under DIR with its relative path, sorted.
sums() {
	(cd "$1" && find . -type f | sort | while IFS= read -r f; do
		printf '%s %s\n' "$(md5sum <"$f" | cut -d' ' -f1)" "$f"
	done)
}

# make_tree DIR: the tree every round trip archives.
make_tree() {
	mkdir -p "$1/a/b/c" "$1/empty dir" || return 1
	echo "first line" >"$1/a/text.txt" || return 1
	: >"$1/a/b/empty" || return 1
	echo "spaces" >"$1/a/name with spaces" || return 1
	dd if=/dev/urandom of="$1/a/b/c/random.bin" bs=1024 count=300 2>/dev/null || return 1
	dd if=/dev/zero bs=4096 count=256 2>/dev/null | tr '\0' 'x' >"$1/a/b/ones.bin" || return 1
}

# round_trip FLAG SRCFS DSTFS: tar cFLAGf of a tree on SRCFS into DSTFS, extracted on SRCFS.
round_trip() {
	flag=$1 from=$2 to=$3
	work="$from/tartest.$$"
	archive="$to/tartest.$$.tar.$flag"
	rm -rf "$work" "$archive"
	mkdir -p "$work/src" "$work/out" || { bad "mkdir $work"; return; }
	if ! make_tree "$work/src"; then
		bad "writing the tree on $from"
		rm -rf "$work"
		return
	fi
	if (cd "$work/src" && tar "c${flag}f" "$archive" a "empty dir"); then ok; else
		bad "tar c${flag}f $archive (tree on $from)"
	fi
	if [ -s "$archive" ]; then ok; else bad "$archive is empty after tar c${flag}f"; fi
	if (cd "$work/out" && tar "x${flag}f" "$archive"); then ok; else
		bad "tar x${flag}f $archive into $work/out"
	fi
	if [ "$(sums "$work/src")" = "$(sums "$work/out")" ]; then ok; else
		bad "files differ after tar c${flag}f $from -> $to and x${flag}f back"
	fi
	if [ -d "$work/out/empty dir" ]; then ok; else bad "empty directory lost ($from -> $to, $flag)"; fi
	# The compressor's output must be what the standalone tools read back.
	case $flag in
	z) tool="gzip -t" ;;
	j) tool="bzip2 -t" ;;
	esac
	if $tool "$archive"; then ok; else bad "$tool $archive"; fi
	rm -rf "$work" "$archive"
}

if [ $# -eq 0 ]; then
	echo "usage: tartest DIR..." >&2
	exit 2
fi
for from in "$@"; do
	for to in "$@"; do
		[ "$from" = "$to" ] && [ $# -gt 1 ] && continue
		for flag in z j; do
			round_trip "$flag" "$from" "$to"
		done
	done
done
echo "tartest: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
