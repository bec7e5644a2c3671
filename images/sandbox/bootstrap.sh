#!/usr/bin/env bash
# bootstrap.sh OUT.tar: build a Debian bookworm root filesystem tarball for the
# podbot sandbox base image without any container registry.
#
# The tarball holds everything the sandbox Containerfile needs (bash,
# coreutils, git, python3, ca-certificates), so a build on top of it does not
# install anything. Import it with `podman import OUT.tar REF` or
# `docker import OUT.tar REF`, then build the Containerfile with
# --build-arg BASE=REF.
#
# An existing non-empty OUT.tar that lists as a tar archive is reused; pass
# --force (before OUT.tar) to rebuild it.
#
# Environment:
#   PODBOT_DEBIAN_SUITE            suite (default bookworm)
#   PODBOT_DEBIAN_MIRROR           archive mirror (default http://deb.debian.org/debian);
#                                  <suite> and <suite>-updates come from it
#   PODBOT_DEBIAN_SECURITY_MIRROR  security mirror for <suite>-security (default
#                                  http://deb.debian.org/debian-security; empty: none)
#
# Needs root (mmdebstrap root mode) and network access to the mirror.
set -euo pipefail

usage() {
	echo "usage: $0 [--force] OUT.tar" >&2
	exit 2
}

force=0
if [[ ${1:-} == --force ]]; then
	force=1
	shift
fi
[[ $# -eq 1 && -n $1 ]] || usage
out=$1
case $out in
*.tar) ;;
*)
	echo "bootstrap.sh: OUT must end in .tar, got '$out'" >&2
	exit 2
	;;
esac

suite=${PODBOT_DEBIAN_SUITE:-bookworm}
mirror=${PODBOT_DEBIAN_MIRROR:-http://deb.debian.org/debian}
security=${PODBOT_DEBIAN_SECURITY_MIRROR-http://deb.debian.org/debian-security}
sources=("deb $mirror $suite main" "deb $mirror $suite-updates main")
[[ -z $security ]] || sources+=("deb $security $suite-security main")
packages=python3,git,ca-certificates,bash,coreutils

if [[ $force -eq 0 && -s $out ]] && tar -tf "$out" ./usr/bin/git >/dev/null 2>&1; then
	echo "bootstrap.sh: reusing $out" >&2
	exit 0
fi

if ! command -v mmdebstrap >/dev/null 2>&1; then
	echo "bootstrap.sh: mmdebstrap not found; install it with: apt-get install -y mmdebstrap" >&2
	exit 1
fi

mkdir -p -- "$(dirname -- "$out")"
partial=$out.partial.$$
trap 'rm -f -- "$partial"' EXIT

start=$SECONDS
echo "bootstrap.sh: mmdebstrap $suite from $mirror into $out" >&2
# stdin from /dev/null: with no terminal on stdin mmdebstrap would read
# sources.list lines from it.
mmdebstrap --variant=apt --format=tar --include="$packages" \
	"$suite" "$partial" "${sources[@]}" </dev/null
mv -f -- "$partial" "$out"
trap - EXIT
echo "bootstrap.sh: wrote $out in $((SECONDS - start))s" >&2
