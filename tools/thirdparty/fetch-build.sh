#!/usr/bin/env bash
# fetch-build.sh: third-party Linux programs for the dbfs-os guest, fetched and cross-built for
# riscv64 (static, glibc) on the host. Nothing here is committed: sources, objects and outputs
# live under $BUILD/thirdparty (git-ignored). Called from the Makefile (targets `thirdparty`,
# `busybox`, `pjdfstest`, `thirdparty-check`, `fio`, `sqlite`).
#
#   tools/thirdparty/fetch-build.sh busybox     busybox 1.35.0 (Debian bookworm source package)
#   tools/thirdparty/fetch-build.sh pjdfstest   pjdfstest from $PJDFSTEST_SRC (../shared/pjdfstest)
#   tools/thirdparty/fetch-build.sh rootfs      all of these (pjdfstest only when its source is
#                                               there), staged as the tree that
#                                               `mkimage --add-tree` copies into root.img
#   tools/thirdparty/fetch-build.sh check       run them under qemu-user on the host (see below)
#   tools/thirdparty/fetch-build.sh fio|sqlite  fio 3.33 (with libaio), sqlite3 3.40.1 (shell + speedtest1)
#   tools/thirdparty/fetch-build.sh libaio      libaio 0.3.113, static, in $BUILD/thirdparty/libaio
#                                               (fio and LTP link it)
#   tools/thirdparty/fetch-build.sh sqlite-host  speedtest1 built for this machine (make sqlite-host-bench)
#   tools/thirdparty/fetch-build.sh ctests      our C tests (tools/thirdparty/tests/*.c: threadtest, timetest, smpstress)
#
# Sources come from Debian's archive through apt, without touching the machine's apt set-up: the
# build has its own deb-src list, package lists and cache under $BUILD/apt, and `apt-get source`
# checks every file against the signed Release file. Only the upstream version is pinned (a
# Debian security update replaces the old revision on the mirror); the revision used is recorded
# in the source's stamp and printed.
#
# Caching: each output has a stamp holding a key: the sha256 of its inputs (the recipe function's
# own text from `declare -f`, the config fragment, the unpacked source version, the compiler
# version). An unchanged key skips the step, so a no-op run costs about a second; any change
# (config in the repo, recipe, toolchain) rebuilds that output from a clean object directory.
#
# The host packages (cross compiler, autotools, dpkg-dev, qemu-user) are installed by the
# Makefile's `deps-thirdparty` target; this script checks for them and says so if one is missing.
#
# Environment: BUILD (default build), JOBS (default 2), PJDFSTEST_SRC (default ../shared/pjdfstest).
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
here="$repo/tools/thirdparty"
cd "$repo"
BUILD=$(mkdir -p "${BUILD:-build}" && cd "${BUILD:-build}" && pwd)
JOBS=${JOBS:-2}
PJDFSTEST_SRC=${PJDFSTEST_SRC:-../shared/pjdfstest}
TP="$BUILD/thirdparty"
APT_DIR="$BUILD/apt"
CROSS=riscv64-linux-gnu-

BUSYBOX_VERSION=1.35.0
FIO_VERSION=3.33
LIBAIO_VERSION=0.3.113
SQLITE_VERSION=3.40.1

log() { printf '== thirdparty: %s\n' "$*" >&2; }
die() {
	printf 'fetch-build.sh: error: %s\n' "$*" >&2
	exit 1
}

need_tools() {
	local t
	for t in "$@"; do
		command -v "$t" >/dev/null || die "$t is missing: run \`make deps-thirdparty\` (as root)"
	done
}

# sha256 of stdin, the hex digest alone.
digest() { sha256sum | cut -d' ' -f1; }

# stamp_ok FILE KEY: FILE holds KEY (the output it guards was built from these inputs).
stamp_ok() { [ -f "$1" ] && [ "$(cat "$1")" = "$2" ]; }

toolchain_id() { "${CROSS}gcc" --version | head -1; }

## --- sources through apt -------------------------------------------------------------------

APT_OPTS=()
apt_setup() {
	mkdir -p "$APT_DIR/sources.list.d" "$APT_DIR/lists/partial" "$APT_DIR/cache/archives/partial"
	cat >"$APT_DIR/sources.list.d/debian-src.sources.new" <<'EOF'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
	mv "$APT_DIR/sources.list.d/debian-src.sources.new" "$APT_DIR/sources.list.d/debian-src.sources"
	# Our lists and caches only; as root, apt would otherwise drop to the _apt user, which
	# cannot write the build tree.
	APT_OPTS=(
		-o Dir::Etc::SourceList=/dev/null
		-o "Dir::Etc::SourceParts=$APT_DIR/sources.list.d"
		-o "Dir::State::Lists=$APT_DIR/lists"
		-o "Dir::Cache=$APT_DIR/cache"
		-o APT::Sandbox::User=root
		-q
	)
}

apt_update() {
	log "apt-get update (deb-src bookworm, lists in $APT_DIR/lists)"
	timeout 600 apt-get "${APT_OPTS[@]}" update >&2
}

# fetch_source PKG UPSTREAM: unpack Debian's source package PKG (upstream version UPSTREAM,
# Debian patches applied by dpkg-source) into $TP/src/PKG-UPSTREAM; prints that directory.
fetch_source() {
	local pkg=$1 upstream=$2
	local dest="$TP/src/$pkg-$upstream" dl="$TP/dl/$pkg"
	if [ -f "$dest/.unpacked" ]; then
		echo "$dest"
		return
	fi
	need_tools apt-get dpkg-source
	[ -f /usr/share/keyrings/debian-archive-keyring.gpg ] ||
		die "debian-archive-keyring is missing: run \`make deps-thirdparty\`"
	apt_setup
	ls "$APT_DIR"/lists/*Sources* >/dev/null 2>&1 || apt_update
	rm -rf "$dl" && mkdir -p "$dl"
	if ! (cd "$dl" && timeout 600 apt-get "${APT_OPTS[@]}" source --download-only "$pkg" >&2); then
		apt_update # the lists may name a revision the mirror no longer has
		(cd "$dl" && timeout 600 apt-get "${APT_OPTS[@]}" source --download-only "$pkg" >&2) ||
			die "apt-get source $pkg failed"
	fi
	local dsc
	dsc=$(ls "$dl"/*.dsc)
	local version
	version=$(sed -n 's/^Version: //p' "$dsc")
	case "${version#*:}" in
	"$upstream"-*) ;;
	*) die "$pkg: Debian has version $version, this build expects upstream $upstream" ;;
	esac
	log "unpacking $pkg $version"
	rm -rf "$dest.tmp" "$dest"
	mkdir -p "$TP/src"
	dpkg-source -x "$dsc" "$dest.tmp" >&2
	echo "$pkg $version" >"$dest.tmp/.unpacked"
	mv "$dest.tmp" "$dest"
	echo "$dest"
}

## --- busybox -------------------------------------------------------------------------------

# A static busybox from tools/thirdparty/busybox.config applied over allnoconfig.
build_busybox() {
	local src=$1 out="$TP/busybox" frag="$here/busybox.config"
	local obj="$out/obj"
	rm -rf "$obj" && mkdir -p "$obj"
	local mk=(make -C "$src" O="$obj" ARCH=riscv CROSS_COMPILE="$CROSS")
	"${mk[@]}" allnoconfig >"$out/config.log" 2>&1 ||
		die "busybox allnoconfig failed, see $out/config.log"
	# The fragment replaces the lines it names (busybox's kconfig ignores KCONFIG_ALLCONFIG
	# for allnoconfig); oldconfig then gives the options that appear under an applet turned on
	# here their Kconfig default, unless the fragment names them too.
	awk 'FNR == NR {
			if (match($0, /^CONFIG_[A-Za-z0-9_]+=/)) set[substr($0, 1, RLENGTH - 1)] = $0
			else if (match($0, /^# CONFIG_[A-Za-z0-9_]+ is not set/)) set[$2] = $0
			next
		}
		{
			name = ""
			if (match($0, /^CONFIG_[A-Za-z0-9_]+=/)) name = substr($0, 1, RLENGTH - 1)
			else if (match($0, /^# CONFIG_[A-Za-z0-9_]+ is not set/)) name = $2
			if (name in set) { print set[name]; done[name] = 1 } else print
		}
		END { for (n in set) if (!(n in done)) print set[n] }' \
		"$frag" "$obj/.config" >"$obj/.config.new"
	mv "$obj/.config.new" "$obj/.config"
	{ yes "" || true; } | "${mk[@]}" oldconfig >>"$out/config.log" 2>&1 ||
		die "busybox oldconfig failed, see $out/config.log"
	# Every setting of the fragment must have survived (a typo or an unmet dependency
	# drops it silently in kconfig).
	local line missing=0
	while IFS= read -r line; do
		case "$line" in CONFIG_* | "# CONFIG_"*" is not set") ;; *) continue ;; esac
		if ! grep -qxF "$line" "$obj/.config"; then
			echo "busybox.config: not in the resulting .config: $line" >&2
			missing=1
		fi
	done <"$frag"
	[ "$missing" = 0 ] || die "busybox config does not apply (see above)"
	log "building busybox (make -j$JOBS, log $out/build.log)"
	"${mk[@]}" -j"$JOBS" busybox >"$out/build.log" 2>&1 ||
		{ tail -30 "$out/build.log" >&2; die "busybox build failed, see $out/build.log"; }
	cp "$obj/busybox" "$out/busybox"
}

cmd_busybox() {
	need_tools "${CROSS}gcc" make bzip2
	local src
	src=$(fetch_source busybox "$BUSYBOX_VERSION")
	local key
	key=$({ declare -f build_busybox; cat "$here/busybox.config" "$src/.unpacked"; toolchain_id; } | digest)
	if stamp_ok "$TP/busybox/stamp" "$key" && [ -x "$TP/busybox/busybox" ]; then
		log "busybox up to date ($(cat "$src/.unpacked"))"
		return
	fi
	mkdir -p "$TP/busybox"
	rm -f "$TP/busybox/stamp"
	build_busybox "$src"
	echo "$key" >"$TP/busybox/stamp"
	log "busybox: $(stat -c %s "$TP/busybox/busybox") bytes, $(cat "$src/.unpacked")"
}

## --- pjdfstest -----------------------------------------------------------------------------

# pjdfstest is third-party test data kept beside the repository, not in it: where to get the
# version this tree is tested with.
PJDFSTEST_GET="git clone https://github.com/pjd/pjdfstest && git -C pjdfstest checkout 85a8aea9e685999ef0540392fd80535f873d7ff7"
have_pjdfstest() { [ -f "$PJDFSTEST_SRC/pjdfstest.c" ]; }

# pjdfstest from a copy of $PJDFSTEST_SRC (never built in place: it is shared, read-only data).
build_pjdfstest() {
	local out="$TP/pjdfstest"
	rm -rf "$out/src" && mkdir -p "$out"
	cp -r "$PJDFSTEST_SRC" "$out/src"
	chmod -R u+w "$out/src"
	(
		cd "$out/src"
		autoreconf -ifs
		./configure --host=riscv64-linux-gnu CC="${CROSS}gcc" LDFLAGS=-static
		make -j"$JOBS" pjdfstest
	) >"$out/build.log" 2>&1 || { tail -30 "$out/build.log" >&2; die "pjdfstest build failed, see $out/build.log"; }
	"${CROSS}strip" -o "$out/pjdfstest" "$out/src/pjdfstest"
}

cmd_pjdfstest() {
	need_tools "${CROSS}gcc" autoreconf make
	have_pjdfstest || die "no pjdfstest at $PJDFSTEST_SRC: $PJDFSTEST_GET (or set PJDFSTEST_SRC=DIR)"
	local key
	key=$({
		declare -f build_pjdfstest
		(cd "$PJDFSTEST_SRC" && find . -type f -print0 | sort -z | xargs -0 sha256sum)
		toolchain_id
	} | digest)
	if stamp_ok "$TP/pjdfstest/stamp" "$key" && [ -x "$TP/pjdfstest/pjdfstest" ]; then
		log "pjdfstest up to date"
		return
	fi
	mkdir -p "$TP/pjdfstest"
	rm -f "$TP/pjdfstest/stamp"
	log "building pjdfstest (log $TP/pjdfstest/build.log)"
	build_pjdfstest
	echo "$key" >"$TP/pjdfstest/stamp"
	log "pjdfstest: $(stat -c %s "$TP/pjdfstest/pjdfstest") bytes"
}

## --- the tree installed into root.img ------------------------------------------------------

# $TP/rootfs mirrors what goes into root.img under /:
#   /bin/busybox, /bin/sh        the same binary (busybox picks the applet from argv[0])
#   /bin/gzip, /bin/bzip2        copies again, for programs that exec a compressor by name
#                                (busybox tar's czf/cjf: execlp("gzip"); root.img is FAT32,
#                                which has no links, and the shell's applet lookup is its own)
#   /bin/pjdfstest               the pjdfstest program (this and the two below only when
#                                $PJDFSTEST_SRC has the source)
#   /bin/pjdfstest-run           tools/thirdparty/pjdfstest-guest.sh (the suite runner)
#   /bin/sqlite3, /bin/speedtest1  sqlite's shell and its benchmark program
#   /bin/fio                     fio (no zlib; libaio linked in: psync, sync, libaio, ...)
#   /usr/pjdfstest/pjdfstest     the program again, where tests/misc.sh looks for it (it walks
#                                up from each .t file; FAT32 has no links)
#   /usr/pjdfstest/tests/        conf, misc.sh and every */*.t
# pjdfstest is in the tree only when $PJDFSTEST_SRC has its source (a plain clone has none: a
# shell and the benchmarks do not need it; the targets that do say where to get it).
# Rebuilt (cheap copies) whenever any input is newer than the stamp, or pjdfstest comes or goes
# (the stamp holds "with pjdfstest" or "without pjdfstest").
cmd_rootfs() {
	local with=without
	if have_pjdfstest; then with=with; fi
	cmd_busybox
	[ "$with" = without ] || cmd_pjdfstest
	cmd_sqlite
	cmd_fio
	cmd_ctests
	local root="$TP/rootfs" stamp="$TP/rootfs.stamp" t
	local inputs=("$TP/busybox/busybox" "$TP/sqlite/sqlite3" "$TP/sqlite/speedtest1" "$TP/fio/fio")
	[ "$with" = without ] || inputs+=("$TP/pjdfstest/pjdfstest" "$here/pjdfstest-guest.sh" "$TP/pjdfstest/stamp")
	for t in "${CTESTS[@]}"; do inputs+=("$TP/$t/$t"); done
	if [ "$(cat "$stamp" 2>/dev/null)" = "$with pjdfstest" ] && [ -z "$(find "${inputs[@]}" -newer "$stamp")" ]; then
		log "rootfs tree up to date ($with pjdfstest)"
		return
	fi
	rm -rf "$root.tmp" && mkdir -p "$root.tmp/bin"
	cp "$TP/busybox/busybox" "$root.tmp/bin/busybox"
	cp "$TP/busybox/busybox" "$root.tmp/bin/sh"
	cp "$TP/busybox/busybox" "$root.tmp/bin/gzip"
	cp "$TP/busybox/busybox" "$root.tmp/bin/bzip2"
	cp "$TP/sqlite/sqlite3" "$TP/sqlite/speedtest1" "$TP/fio/fio" "$root.tmp/bin/"
	for t in "${CTESTS[@]}"; do cp "$TP/$t/$t" "$root.tmp/bin/"; done
	if [ "$with" = with ]; then
		mkdir -p "$root.tmp/usr/pjdfstest/tests"
		cp "$TP/pjdfstest/pjdfstest" "$root.tmp/bin/pjdfstest"
		cp "$TP/pjdfstest/pjdfstest" "$root.tmp/usr/pjdfstest/pjdfstest"
		cp "$here/pjdfstest-guest.sh" "$root.tmp/bin/pjdfstest-run"
		local tests="$TP/pjdfstest/src/tests" d
		cp "$tests/conf" "$tests/misc.sh" "$root.tmp/usr/pjdfstest/tests/"
		for d in "$tests"/*/; do
			d=$(basename "$d")
			ls "$tests/$d"/*.t >/dev/null 2>&1 || continue
			mkdir -p "$root.tmp/usr/pjdfstest/tests/$d"
			cp "$tests/$d"/*.t "$root.tmp/usr/pjdfstest/tests/$d/"
		done
	else
		log "NOTE: no pjdfstest source at $PJDFSTEST_SRC: the root image has no pjdfstest" \
			"(a shell and the benchmarks do not need it; to add it: $PJDFSTEST_GET, or set PJDFSTEST_SRC)"
	fi
	rm -rf "$root" && mv "$root.tmp" "$root"
	echo "$with pjdfstest" >"$stamp"
	log "rootfs tree: $(find "$root" -type f | wc -l) files, $(du -sh "$root" | cut -f1)"
}

## --- qemu-user checks on the host ----------------------------------------------------------

# check [TESTDIRS...]: busybox and pjdfstest under qemu-user on the host, as root.
# 1. busybox alone under qemu-riscv64: its output is compared with what is expected.
# 2. A chroot laid out like the guest's root ($TP/rootfs plus /dev/null, /dev/zero, /dev/random, /dev/urandom,
#    no /proc) with a tmpfs at /mnt; riscv64 programs run there through a binfmt_misc entry for
#    qemu-riscv64-static (flag F: the interpreter is opened now, so the chroot needs no copy;
#    P: argv[0] is kept, busybox needs it).
#    The entry is registered for the run and removed after, unless the machine had one.
#    The guest runner then runs the pjdfstest directories named (default: all) on the tmpfs.
cmd_check() {
	have_pjdfstest || die "check runs pjdfstest: no source at $PJDFSTEST_SRC: $PJDFSTEST_GET (or set PJDFSTEST_SRC=DIR)"
	cmd_rootfs
	need_tools qemu-riscv64 qemu-riscv64-static chroot
	[ "$(id -u)" = 0 ] || die "check needs root (chroot, mount, binfmt_misc)"
	local root="$TP/rootfs" bb="$TP/rootfs/bin/busybox"
	local got want
	want=$'hi\n3\n2\n1'
	got=$(timeout 60 qemu-riscv64 "$bb" sh -c 'echo hi; ls / >/dev/null; seq 3 | sort -r')
	[ "$got" = "$want" ] || die "busybox sh: got $(printf %q "$got"), want $(printf %q "$want")"
	# argv[0] "sh" runs ash: what /bin/sh in the image does.
	got=$(timeout 60 qemu-riscv64 -0 sh "$root/bin/sh" -c \
		'printf "%s\n" a b | wc -l; echo x | sed s/x/y/; echo 1 2 | awk "{print \$1+\$2}"')
	want=$'2\ny\n3'
	[ "$got" = "$want" ] || die "/bin/sh as ash: got $(printf %q "$got"), want $(printf %q "$want")"
	log "busybox under qemu-user: ok ($(timeout 60 qemu-riscv64 "$bb" --list | wc -l) applets)"

	local chroot="$TP/check-root" cleanup
	# shellcheck source=tools/thirdparty/binfmt-riscv64.sh
	. "$here/binfmt-riscv64.sh"
	binfmt_riscv64_for_run dbfs-os-riscv64
	cleanup=$binfmt_cleanup
	# shellcheck disable=SC2064
	trap "$cleanup" EXIT
	if mountpoint -q "$chroot/mnt" 2>/dev/null; then umount "$chroot/mnt"; fi
	rm -rf "$chroot" && cp -a "$root" "$chroot"
	mkdir -p "$chroot/dev" "$chroot/mnt" "$chroot/tmp"
	mknod -m 666 "$chroot/dev/null" c 1 3
	mknod -m 666 "$chroot/dev/zero" c 1 5
	mknod -m 666 "$chroot/dev/random" c 1 8
	mknod -m 666 "$chroot/dev/urandom" c 1 9
	mount -t tmpfs -o size=512m tmpfs "$chroot/mnt"
	# A test's background process may still hold the tmpfs for a moment after the run.
	cleanup="umount $chroot/mnt 2>/dev/null || { sleep 2; umount -l $chroot/mnt; } || true; $cleanup"
	# shellcheck disable=SC2064
	trap "$cleanup" EXIT
	local in_guest=(chroot "$chroot" /bin/busybox env -i PATH=/bin:/usr/bin HOME=/ /bin/sh)
	# Real execs now: sh by name (busybox re-executes /bin/busybox), timeout, pjdfstest.
	got=$(timeout 60 "${in_guest[@]}" -c \
		'sh -c "echo nested"; timeout 5 sh -c "echo exec"; /bin/pjdfstest mkdir /mnt/chk 0755; /bin/pjdfstest rmdir /mnt/chk')
	want=$'nested\nexec\n0\n0'
	[ "$got" = "$want" ] || die "execs in the chroot: got $(printf %q "$got"), want $(printf %q "$want")"
	log "execs under binfmt_misc in the chroot: ok"
	log "pjdfstest under qemu-user in a tmpfs, as root; log $TP/check-pjdfstest.log"
	local start=$SECONDS
	timeout 7200 "${in_guest[@]}" /bin/pjdfstest-run -n tmpfs -T TMPFS /mnt "$@" |
		tee "$TP/check-pjdfstest.log" || true
	log "pjdfstest run took $((SECONDS - start)) s"
	grep -q '^PJDFSTEST fs=' "$TP/check-pjdfstest.log" || die "the runner printed no summary line"
}

## --- fio and sqlite ------------------------------------------------------------------------

# libaio (static, for fio's libaio engine: io_setup, io_submit, io_getevents) into
# $TP/libaio/{include,lib}.
build_libaio() {
	local src=$1 out="$TP/libaio"
	rm -rf "$out/obj" "$out/include" "$out/lib" && cp -r "$src" "$out/obj"
	(
		cd "$out/obj/src"
		make CC="${CROSS}gcc" AR="${CROSS}ar" RANLIB="${CROSS}ranlib" libaio.a
	) >"$out/build.log" 2>&1 || { tail -30 "$out/build.log" >&2; die "libaio build failed, see $out/build.log"; }
	mkdir -p "$out/include" "$out/lib"
	cp "$out/obj/src/libaio.h" "$out/include/"
	cp "$out/obj/src/libaio.a" "$out/lib/"
}

build_fio() {
	local src=$1 aio=$2 out="$TP/fio"
	rm -rf "$out/obj" && cp -r "$src" "$out/obj"
	(
		cd "$out/obj"
		# configure finds libaio through the compiler's flags; fio links it statically.
		CFLAGS="-I$aio/include" LDFLAGS="-L$aio/lib" \
		./configure --cc="${CROSS}gcc" --build-static --disable-native --disable-optimizations \
			--extra-cflags=-O2 --disable-libnfs --disable-rdma --disable-gfapi --disable-pmem \
			--disable-tcmalloc --disable-dfs --disable-xnvme --disable-libzbc --disable-http
		grep -q '^CONFIG_LIBAIO=y' config-host.mak || { echo "fio's configure did not find libaio"; exit 1; }
		make -j"$JOBS" fio
	) >"$out/build.log" 2>&1 || { tail -30 "$out/build.log" >&2; die "fio build failed, see $out/build.log"; }
	"${CROSS}strip" -o "$out/fio" "$out/obj/fio"
}

# libaio for riscv64 in $TP/libaio (fio and LTP link it), rebuilt when its source changes.
cmd_libaio() {
	need_tools "${CROSS}gcc" make
	local src key
	src=$(fetch_source libaio "$LIBAIO_VERSION")
	key=$({ declare -f build_libaio; cat "$src/.unpacked"; toolchain_id; } | digest)
	if stamp_ok "$TP/libaio/stamp" "$key" && [ -f "$TP/libaio/lib/libaio.a" ]; then
		log "libaio up to date"
		return
	fi
	mkdir -p "$TP/libaio" && rm -f "$TP/libaio/stamp"
	log "building libaio (log $TP/libaio/build.log)"
	build_libaio "$src"
	echo "$key" >"$TP/libaio/stamp"
}

cmd_fio() {
	need_tools "${CROSS}gcc" make
	local src key
	cmd_libaio
	src=$(fetch_source fio "$FIO_VERSION")
	key=$({ declare -f build_fio; cat "$src/.unpacked" "$TP/libaio/stamp"; toolchain_id; } | digest)
	if stamp_ok "$TP/fio/stamp" "$key" && [ -x "$TP/fio/fio" ]; then
		log "fio up to date"
		return
	fi
	mkdir -p "$TP/fio" && rm -f "$TP/fio/stamp"
	log "building fio (log $TP/fio/build.log)"
	build_fio "$src" "$TP/libaio"
	echo "$key" >"$TP/fio/stamp"
	log "fio: $(stat -c %s "$TP/fio/fio") bytes"
}

# Our own C test programs (tools/thirdparty/tests/NAME.c), built as the other programs are
# (static, glibc, -pthread) into $TP/NAME/NAME: threadtest (POSIX threads), smpstress (races
# between harts) and timetest (the clock through the vDSO). Each is rebuilt when its source,
# this recipe or the compiler changes.
CTESTS=(threadtest timetest smpstress)
cmd_ctests() {
	need_tools "${CROSS}gcc"
	local name src out key
	for name in "${CTESTS[@]}"; do
		src="$here/tests/$name.c" out="$TP/$name"
		key=$({ declare -f cmd_ctests; cat "$src"; toolchain_id; } | digest)
		if stamp_ok "$out/stamp" "$key" && [ -x "$out/$name" ]; then
			log "$name up to date"
			continue
		fi
		mkdir -p "$out" && rm -f "$out/stamp"
		"${CROSS}gcc" -static -O2 -pthread -Wall -Werror -o "$out/$name" "$src"
		echo "$key" >"$out/stamp"
		log "$name: $(stat -c %s "$out/$name") bytes"
	done
}

# sqlite3 shell and speedtest1 from the amalgamation the source package's build makes.
build_sqlite() {
	local src=$1 out="$TP/sqlite"
	rm -rf "$out/obj" && mkdir -p "$out/obj"
	(
		cd "$out/obj"
		"$src/configure" --build="$(gcc -dumpmachine)" --host=riscv64-linux-gnu CC="${CROSS}gcc" \
			BUILD_CC=gcc --disable-tcl --disable-readline --disable-editline \
			--disable-load-extension --enable-static --disable-shared --disable-amalgamation
		# Debian's 30-cross.patch builds the code generators (lemon, mkkeywordhash) with
		# BUILD_CC only when CROSS_BUILDING=yes, which debian/rules would set.
		make -j"$JOBS" CROSS_BUILDING=yes sqlite3.c shell.c
		# sqlite_cfg.h (configure's findings for the target: pread, fdatasync, usleep, ...).
		# SQLITE_TEMP_STORE=2: temporary tables and VACUUM's copy in memory by default
		# (PRAGMA temp_store can still choose files). sqlite makes a temp file by opening and
		# unlinking it, and FAT32 here cannot keep an unlinked open file (fs/fat32).
		local defs=(-O2 -D_HAVE_SQLITE_CONFIG_H -DSQLITE_THREADSAFE=0 -DSQLITE_OMIT_LOAD_EXTENSION
			-DSQLITE_ENABLE_FTS5 -DSQLITE_ENABLE_MATH_FUNCTIONS -DSQLITE_TEMP_STORE=2)
		"${CROSS}gcc" "${defs[@]}" -static -I. -o sqlite3 shell.c sqlite3.c -lm
		"${CROSS}gcc" "${defs[@]}" -static -I. -o speedtest1 "$src/test/speedtest1.c" sqlite3.c -lm
	) >"$out/build.log" 2>&1 || { tail -30 "$out/build.log" >&2; die "sqlite build failed, see $out/build.log"; }
	"${CROSS}strip" -o "$out/sqlite3" "$out/obj/sqlite3"
	"${CROSS}strip" -o "$out/speedtest1" "$out/obj/speedtest1"
}

cmd_sqlite() {
	need_tools "${CROSS}gcc" make tclsh
	local src key
	src=$(fetch_source sqlite3 "$SQLITE_VERSION")
	key=$({ declare -f build_sqlite; cat "$src/.unpacked"; toolchain_id; } | digest)
	if stamp_ok "$TP/sqlite/stamp" "$key" && [ -x "$TP/sqlite/sqlite3" ] && [ -x "$TP/sqlite/speedtest1" ]; then
		log "sqlite up to date"
		return
	fi
	mkdir -p "$TP/sqlite" && rm -f "$TP/sqlite/stamp"
	log "building sqlite3 and speedtest1 (log $TP/sqlite/build.log)"
	build_sqlite "$src"
	echo "$key" >"$TP/sqlite/stamp"
	log "sqlite3: $(stat -c %s "$TP/sqlite/sqlite3") bytes, speedtest1: $(stat -c %s "$TP/sqlite/speedtest1") bytes"
}

# speedtest1 for the host (x86-64 or whatever this machine is), from the same amalgamation
# and defines as the guest's, so `make sqlite-host-bench` runs the guest's benchmark program
# on dbfs-fuse, fuse2fs and a host directory.
cmd_sqlite_host() {
	cmd_sqlite
	need_tools gcc
	local src out="$TP/sqlite-host" key
	src=$(fetch_source sqlite3 "$SQLITE_VERSION")
	key=$({ declare -f cmd_sqlite_host; cat "$TP/sqlite/stamp"; gcc --version | head -1; } | digest)
	if stamp_ok "$out/stamp" "$key" && [ -x "$out/speedtest1" ]; then
		log "host speedtest1 up to date"
		return
	fi
	mkdir -p "$out" && rm -f "$out/stamp"
	# The guest's build's sqlite_cfg.h describes riscv64 glibc; this host is glibc too.
	gcc -O2 -D_HAVE_SQLITE_CONFIG_H -DSQLITE_THREADSAFE=0 -DSQLITE_OMIT_LOAD_EXTENSION \
		-DSQLITE_TEMP_STORE=2 -I"$TP/sqlite/obj" -o "$out/speedtest1" \
		"$src/test/speedtest1.c" "$TP/sqlite/obj/sqlite3.c" -lm >"$out/build.log" 2>&1 ||
		{ tail -30 "$out/build.log" >&2; die "host speedtest1 build failed, see $out/build.log"; }
	echo "$key" >"$out/stamp"
	log "host speedtest1: $(stat -c %s "$out/speedtest1") bytes"
}

## --- main ----------------------------------------------------------------------------------

[ $# -ge 1 ] || die "usage: fetch-build.sh busybox|pjdfstest|rootfs|check [TESTDIR...]|fio|libaio|sqlite|sqlite-host|ctests"
command=$1
shift
case "$command" in
busybox) cmd_busybox ;;
pjdfstest) cmd_pjdfstest ;;
rootfs) cmd_rootfs ;;
check) cmd_check "$@" ;;
fio) cmd_fio ;;
libaio) cmd_libaio ;;
sqlite) cmd_sqlite ;;
sqlite-host) cmd_sqlite_host ;;
ctests) cmd_ctests ;;
*) die "unknown command $command" ;;
esac
