#!/usr/bin/env bash
# build.sh: the Linux Test Project for the guest, riscv64, dynamically linked against glibc.
#
#   tools/ltp/build.sh LIST...     build the test programs LIST's entries run, install them
#
# LIST: runtest-style files (`name command args` lines, `#` comments), e.g. tests/ltp/enabled.txt
# or LTP's own runtest/syscalls; the directories that hold their programs are found in LTP's
# tree (PROG.c, or PROG without _64/_16 for LTP's 64-bit-offset and 16-bit-uid variants, or
# a script PROG) and only those are built: all of testcases/kernel/syscalls takes long here.
#
# Output: $BUILD/ltp/install/opt/ltp (testcases/bin with the programs stripped and the data
# files their directories install, runtest/, IDcheck.sh, Version), what `dbfs-fuse import`
# puts at /opt/ltp. $BUILD/ltp/src is the build tree: a copy of LTP_SRC (never the
# repository), configured once with Debian's cross compiler (gcc-riscv64-linux-gnu).
#
# Cached: the copy and configure are redone only when LTP_SRC's files (names, sizes, times),
# the configure command or the compiler change; the build and install only when the source
# changes or a list needs a directory that is not installed; an unchanged rebuild takes about
# a second.
#
# Environment: BUILD (default build), LTP_SRC (default ../shared/ltp), JOBS (default nproc),
# LTP_DEST (where to install, default $BUILD/ltp/install; its stamp and directory list are
# LTP_DEST.stamp and LTP_DEST.dirs), so
# that another set of lists (mk/stress.mk's) installs beside the default one without
# replacing it; the build tree is shared.
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
BUILD=$(mkdir -p "${BUILD:-build}" && cd "${BUILD:-build}" && pwd)
LTP_SRC=${LTP_SRC:-../shared/ltp}
JOBS=${JOBS:-$(nproc)}
CROSS=riscv64-linux-gnu-
OUT="$BUILD/ltp"
SRC="$OUT/src"
DEST=${LTP_DEST:-$OUT/install}
STAMP="$DEST.stamp"

log() { printf '== ltp: %s\n' "$*" >&2; }
die() {
	printf 'ltp/build.sh: error: %s\n' "$*" >&2
	exit 1
}

[ $# -gt 0 ] || die "usage: tools/ltp/build.sh LIST... (runtest-style files)"
[ -f "$LTP_SRC/runtest/syscalls" ] || die "no LTP source at $LTP_SRC (LTP_SRC=DIR)"
command -v ${CROSS}gcc >/dev/null || die "${CROSS}gcc is missing (apt: gcc-riscv64-linux-gnu)"
LTP_SRC=$(cd "$LTP_SRC" && pwd)
mkdir -p "$OUT"

# libaio (Debian's source, cross-built statically): LTP's native-AIO cases need it.
BUILD="$BUILD" "$repo/tools/thirdparty/fetch-build.sh" libaio
AIO="$BUILD/thirdparty/libaio"
# PKG_CONFIG_LIBDIR: the host's .pc files (libtirpc, ...) are not the target's.
configure="PKG_CONFIG_LIBDIR=/nonexistent ./configure --host=riscv64-linux-gnu CC=${CROSS}gcc --prefix=/opt/ltp CPPFLAGS=-I$AIO/include LDFLAGS=-L$AIO/lib"
# The build tree's fingerprint: every source file's name, size and time, the configure
# command, the compiler.
src_key=$({
	(cd "$LTP_SRC" && find . -path ./.git -prune -o -printf '%P %s %T@\n' | sort)
	echo "$configure"
	${CROSS}gcc --version | head -1
} | sha256sum | cut -d' ' -f1)

if [ "$(cat "$OUT/src.stamp" 2>/dev/null)" != "$src_key" ]; then
	log "copying $LTP_SRC to $SRC and configuring (about 2 minutes)"
	rm -rf "$SRC" "$OUT/src.stamp" "$STAMP"
	cp -a "$LTP_SRC" "$SRC"
	chmod -R u+w "$SRC"
	(
		cd "$SRC"
		make autotools
		eval "$configure"
	) >"$OUT/configure.log" 2>&1 || {
		tail -20 "$OUT/configure.log" >&2
		die "configure failed, see $OUT/configure.log"
	}
	echo "$src_key" >"$OUT/src.stamp"
fi

# The program of each entry (a command's first word), then the directories that build them.
progs=$(cat "$@" | sed -e 's/#.*//' | awk 'NF >= 2 { print $2 }' | sort -u)
index=$(cd "$SRC" && find testcases -type f \( -name '*.c' -o -name '*.sh' -o -perm -u+x \) \
	-printf '%f %h\n' | sed -e 's/\.c / /' | sort -k1,1 -u)
dirs=$(awk 'NR == FNR { if (!($1 in dir)) dir[$1] = $2; next }
	{ n = $1; if (n in dir) print dir[n]
	  else { sub(/_(64|16)$/, "", n); if (n in dir) print dir[n] } }' \
	<(echo "$index") <(echo "$progs") | sort -u)
[ -n "$dirs" ] || die "no LTP program directory found for the lists: $*"
# Directories below one with a Makefile of its own build from that Makefile's directory.
dirs=$(for d in $dirs; do
	while [ ! -f "$SRC/$d/Makefile" ] && [ "$d" != . ]; do d=$(dirname "$d"); done
	echo "$d"
done | sort -u)

# Up to date when the source is unchanged and every directory needed is installed already in
# DEST (test-ltp after `make ltp` builds nothing); otherwise the needed and the installed ones
# are built together, so a smaller list never takes programs away from a larger one.
if [ "$(cat "$STAMP" 2>/dev/null)" = "$src_key" ] && [ -d "$DEST/opt/ltp" ]; then
	if [ -z "$(comm -23 <(echo "$dirs") <(sort -u "$DEST.dirs" 2>/dev/null))" ]; then
		log "up to date ($(echo "$dirs" | wc -l) directories needed, $(wc -l <"$DEST.dirs") installed, $(find "$DEST/opt/ltp/testcases/bin" -type f | wc -l) files in $DEST/opt/ltp)"
		exit 0
	fi
	dirs=$(sort -u <(echo "$dirs") "$DEST.dirs")
fi

start=$SECONDS
log "building lib, libs and $(echo "$dirs" | wc -l) test directories with $JOBS jobs (log $OUT/build.log)"
rm -f "$STAMP" "$DEST.dirs"
: >"$OUT/build.log"
make -C "$SRC/lib" -j"$JOBS" >>"$OUT/build.log" 2>&1 || die "lib failed, see $OUT/build.log"
make -C "$SRC/libs" -j"$JOBS" >>"$OUT/build.log" 2>&1 || die "libs failed, see $OUT/build.log"
make -C "$SRC/testcases/lib" -j"$JOBS" >>"$OUT/build.log" 2>&1 || die "testcases/lib failed, see $OUT/build.log"
# One directory per job (LTP's trunk Makefiles build their directories one after another).
# A directory that does not build is reported, not fatal: its cases then fail as missing.
failed=$(echo "$dirs" | xargs -P "$JOBS" -I{} sh -c \
	'make -C "$1/$2" -k >"$1/$2/.build.log" 2>&1 || echo "$2"' _ "$SRC" {} | sort)
for d in $failed; do
	cat "$SRC/$d/.build.log" >>"$OUT/build.log"
done

rm -rf "$DEST" && mkdir -p "$DEST"
for d in testcases/lib $dirs; do
	make -C "$SRC/$d" -k install DESTDIR="$DEST" >>"$OUT/build.log" 2>&1 || true
done
mkdir -p "$DEST/opt/ltp/runtest"
cp "$SRC"/runtest/* "$DEST/opt/ltp/runtest/"
cp "$SRC/IDcheck.sh" "$SRC/VERSION" "$DEST/opt/ltp/"
cp "$SRC/VERSION" "$DEST/opt/ltp/Version"
# Stripped: a program keeps its code, not its debug information (a fifth of the size).
find "$DEST/opt/ltp/testcases/bin" -type f -perm -u+x -exec sh -c \
	'for f; do head -c4 "$f" | grep -q ELF && '"${CROSS}"'strip "$f" || true; done' _ {} +
echo "$dirs" >"$DEST.dirs"
echo "$src_key" >"$STAMP"
log "$(find "$DEST/opt/ltp/testcases/bin" -type f | wc -l) files, $(du -sh "$DEST/opt/ltp" | cut -f1), $((SECONDS - start)) s"
if [ -n "$failed" ]; then
	log "directories that did not build (their programs are missing): $(echo $failed)"
fi
