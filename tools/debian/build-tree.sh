#!/usr/bin/env bash
# build-tree.sh: the guest's Debian userland, as a tar of a Debian 13 (trixie) riscv64 tree.
#
#   tools/debian/build-tree.sh            build (or find cached) $DEBIAN_OUT/tree.tar
#
# The packages: tools/debian/packages.txt, changed for one build by DEBS (comma-separated:
# `+gcc` or `gcc` adds a package, `-fio` leaves one out). mmdebstrap downloads them from
# Debian's archive with an apt set-up of its own (the machine's apt sources are not read or
# changed) and runs their maintainer scripts in a chroot of the new tree; riscv64 programs
# run there through qemu-user (qemu-riscv64-static and a binfmt_misc entry, registered for
# the run and removed after, unless the machine already had one).
#
# Cached by what decides the result: the package list after DEBS, the suite, mmdebstrap's
# version and this script. A build with nothing changed takes a second. The tree keeps
# owners, modes, device nodes and links (tar); `dbfs-fuse import` writes it into a dbfs image.
#
# Left out of the tree (dpkg path-exclude, documented in the tree's /etc/dpkg/dpkg.cfg.d):
# manual pages, info pages, documentation other than copyright files, and translations, so
# that a first `make run` downloads and writes less. `apt-get install` in the guest keeps
# those rules.
#
# Environment: BUILD (default build), DEBS, SUITE (default trixie), DEBIAN_OUT (the cache
# folder, default $BUILD/debian; mk/debian.mk gives each DEBS list a folder of its own, e.g.
# $BUILD/debian-gcc-libc6-dev for `make test-gcc`, so the trees do not replace each other). Needs root (chroot, mknod, binfmt_misc).
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
here="$repo/tools/debian"
cd "$repo"
BUILD=$(mkdir -p "${BUILD:-build}" && cd "${BUILD:-build}" && pwd)
SUITE=${SUITE:-trixie}
DEBS=${DEBS:-}
OUT=${DEBIAN_OUT:-$BUILD/debian}

log() { printf '== debian: %s\n' "$*" >&2; }
die() {
	printf 'build-tree.sh: error: %s\n' "$*" >&2
	exit 1
}

[ "$(id -u)" = 0 ] || die "needs root (mmdebstrap's root mode: chroot, device nodes, binfmt_misc)"
command -v mmdebstrap >/dev/null || die "mmdebstrap is missing: run \`make deps-debian\`"
command -v qemu-riscv64-static >/dev/null || die "qemu-riscv64-static is missing: run \`make deps-debian\`"

# The package list: the file's names, then DEBS's changes, sorted and unique.
packages() {
	local -A want=()
	local p
	while read -r p; do
		p=${p%%#*}
		p=${p//[[:space:]]/}
		[ -n "$p" ] && want[$p]=1
	done <"$here/packages.txt"
	local IFS=,
	for p in $DEBS; do
		p=${p//[[:space:]]/}
		case $p in
		"") ;;
		-*) unset "want[${p#-}]" ;;
		+*) want[${p#+}]=1 ;;
		*) want[$p]=1 ;;
		esac
	done
	for p in "${!want[@]}"; do
		case $p in
		*[!a-z0-9.+-]*) die "DEBS / packages.txt: '$p' is not a Debian package name" ;;
		esac
		echo "$p"
	done | sort
}

list=$(packages)
key=$({
	echo "$list"
	echo "$SUITE"
	mmdebstrap --version
	cat "$0"
} | sha256sum | cut -d' ' -f1)
mkdir -p "$OUT"
if [ -f "$OUT/tree.stamp" ] && [ "$(cat "$OUT/tree.stamp")" = "$key" ] && [ -s "$OUT/tree.tar" ]; then
	log "tree up to date ($(echo "$list" | wc -l) packages: $OUT/tree.tar)"
	exit 0
fi

# qemu-user for the maintainer scripts.
# shellcheck source=tools/thirdparty/binfmt-riscv64.sh
. "$repo/tools/thirdparty/binfmt-riscv64.sh"
# An entry of this run's own: builds running at once (other checkouts) must not remove each
# other's entry halfway (their maintainer scripts then fail with "Exec format error").
binfmt_riscv64_for_run "dbfs-os-debian-riscv64-$$"
cleanup=$binfmt_cleanup
# shellcheck disable=SC2064
trap "$cleanup" EXIT

log "mmdebstrap $SUITE riscv64, $(echo "$list" | wc -l) packages (log $OUT/mmdebstrap.log)"
start=$SECONDS
rm -rf "$OUT/tree.stamp" "$OUT/tree.new.tar"
timeout 3600 mmdebstrap --mode=root --format=tar --architectures=riscv64 --variant=apt \
	--keyring=/usr/share/keyrings/debian-archive-keyring.gpg \
	--include="$(echo "$list" | paste -sd,)" \
	--dpkgopt='path-exclude=/usr/share/man/*' \
	--dpkgopt='path-exclude=/usr/share/info/*' \
	--dpkgopt='path-exclude=/usr/share/doc/*' \
	--dpkgopt='path-include=/usr/share/doc/*/copyright' \
	--dpkgopt='path-exclude=/usr/share/locale/*' \
	--dpkgopt='path-include=/usr/share/locale/locale.alias' \
	"$SUITE" "$OUT/tree.new.tar" >"$OUT/mmdebstrap.log" 2>&1 ||
	{ tail -20 "$OUT/mmdebstrap.log" >&2; die "mmdebstrap failed, see $OUT/mmdebstrap.log"; }
mv "$OUT/tree.new.tar" "$OUT/tree.tar"
echo "$list" >"$OUT/packages.txt"
echo "$key" >"$OUT/tree.stamp"
log "tree: $(du -h "$OUT/tree.tar" | cut -f1), $(tar -tf "$OUT/tree.tar" | wc -l) entries, $((SECONDS - start)) s"
