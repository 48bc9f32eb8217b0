#!/usr/bin/env bash
# extract-debs.sh: files of Debian trixie riscv64 packages, taken from their .debs on the host
# without installing the packages (and so without their dependencies).
#
#   tools/debian/extract-debs.sh OUT PKG[:PATH,PATH...]...
#
# Downloads each PKG's .deb (the version trixie has now) with an apt set-up of its own in
# $BUILD/apt-riscv64 (the machine's apt sources are not read or changed), and unpacks into OUT
# either the whole package or, with :PATH,..., only those paths of it (a shell pattern each,
# relative to the package's root, e.g. usr/lib/riscv64-linux-gnu/libEGL.so.1*). mk/stress.mk
# uses it for stress-ng and the two libraries of it whose packages pull in Mesa and LLVM.
# OUT is made afresh. Cached: the .debs stay in $BUILD/apt-riscv64/cache.
set -euo pipefail

[ $# -ge 2 ] || {
	echo "usage: $0 OUT PKG[:PATH,...]..." >&2
	exit 2
}
out=$1
shift
BUILD=$(mkdir -p "${BUILD:-build}" && cd "${BUILD:-build}" && pwd)
SUITE=${SUITE:-trixie}
apt_dir=$BUILD/apt-riscv64
mkdir -p "$apt_dir/sources.list.d" "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/debs"
touch "$apt_dir/status"
cat >"$apt_dir/sources.list.d/debian.sources" <<EOT
Types: deb
URIs: http://deb.debian.org/debian
Suites: $SUITE
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOT
apt_opts=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$apt_dir/sources.list.d"
	-o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
	-o "Dir::State::status=$apt_dir/status" -o APT::Architecture=riscv64
	-o APT::Architectures::=riscv64 -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
# The package lists: fetched once a day.
if [ -z "$(find "$apt_dir/lists" -maxdepth 1 -name '*Packages*' -mtime -1 2>/dev/null)" ]; then
	apt-get "${apt_opts[@]}" -q update >&2
fi

rm -rf "$out" && mkdir -p "$out"
out=$(cd "$out" && pwd)
for spec in "$@"; do
	pkg=${spec%%:*}
	ver=$(apt-cache "${apt_opts[@]}" show --no-all-versions "$pkg" | sed -n 's/^Version: //p' | head -1)
	[ -n "$ver" ] || {
		echo "extract-debs.sh: no package $pkg in $SUITE riscv64" >&2
		exit 1
	}
	deb=$(ls "$apt_dir/debs/${pkg}_${ver#*:}_"*.deb 2>/dev/null | head -1 || true)
	if [ -z "$deb" ]; then
		(cd "$apt_dir/debs" && apt-get "${apt_opts[@]}" -q download "$pkg=$ver" >&2)
		deb=$(ls "$apt_dir/debs/${pkg}_${ver#*:}_"*.deb | head -1)
	fi
	tmp=$(mktemp -d)
	dpkg-deb -x "$deb" "$tmp"
	if [ "$spec" = "$pkg" ]; then
		cp -a "$tmp/." "$out/"
	else
		IFS=, read -ra paths <<<"${spec#*:}"
		for p in "${paths[@]}"; do
			# shellcheck disable=SC2086
			(cd "$tmp" && ls -d $p >/dev/null && cp -a --parents $p "$out/")
		done
	fi
	rm -rf "$tmp"
	echo "extract-debs.sh: $pkg $ver${spec#"$pkg"}" >&2
done
