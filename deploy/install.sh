#!/bin/sh
# Installs disagg-proxy from a release tarball on a systemd host:
#   sudo sh install.sh [--prefix DIR] [--destdir DIR] [disagg-proxy-<version>-linux-<arch>.tar.gz]
# Checks the tarball against the SHA256SUMS beside it, then installs
#   <prefix>/bin/disagg-proxy                              (prefix: /usr/local)
#   /etc/systemd/system/disagg-proxy.service              (ExecStart names <prefix>/bin/disagg-proxy)
#   /etc/disagg-proxy/disagg_config.yaml                   (only when there is none: yours is kept)
#   <prefix>/share/doc/disagg-proxy/{README.md,LICENSE}
# all under DESTDIR when it is set (for packaging and tests). Running it again upgrades the
# binary and the unit and changes nothing else. Without a tarball argument it takes the one
# beside this script for this machine's architecture.
set -eu

usage() {
  sed -n '2,11s/^# \{0,1\}//p' "$0"
}

die() {
  echo "install.sh: $*" >&2
  exit 1
}

prefix=/usr/local
destdir=${DESTDIR:-}
tarball=
while [ $# -gt 0 ]; do
  case $1 in
    --prefix) [ $# -ge 2 ] || die "--prefix needs a directory"; prefix=$2; shift 2 ;;
    --prefix=*) prefix=${1#--prefix=}; shift ;;
    --destdir) [ $# -ge 2 ] || die "--destdir needs a directory"; destdir=$2; shift 2 ;;
    --destdir=*) destdir=${1#--destdir=}; shift ;;
    -h | --help) usage; exit 0 ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) [ -z "$tarball" ] || die "one tarball at a time"; tarball=$1; shift ;;
  esac
done

# The prefix goes into the unit's ExecStart line: absolute, and nothing systemd or sed would read specially.
case $prefix in
  /*) ;;
  *) die "--prefix must be an absolute path, got '$prefix'" ;;
esac
case $prefix in
  *[!A-Za-z0-9/._-]*) die "--prefix may hold only letters, digits and / . _ -, got '$prefix'" ;;
esac
prefix=${prefix%/}
destdir=${destdir%/}

if [ -z "$tarball" ]; then
  case $(uname -m) in
    x86_64 | amd64) arch=x64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) die "no release for this machine's architecture ($(uname -m)): linux x64 and arm64 only" ;;
  esac
  set -- "$(dirname "$0")"/disagg-proxy-*-linux-"$arch".tar.gz
  [ -e "$1" ] || die "no disagg-proxy-*-linux-$arch.tar.gz beside $0: download it, or name the tarball"
  [ $# -eq 1 ] || die "several tarballs for $arch beside $0: name the one to install"
  tarball=$1
fi
[ -f "$tarball" ] || die "$tarball: no such file"

name=$(basename "$tarball")
case $name in
  disagg-proxy-*-linux-*.tar.gz) ;;
  *) die "$name does not look like a release tarball (disagg-proxy-<version>-linux-<arch>.tar.gz)" ;;
esac
sums=$(dirname "$tarball")/SHA256SUMS
[ -f "$sums" ] || die "no SHA256SUMS beside $tarball: download it from the same release"
expected=$(awk -v name="$name" '$2 == name || $2 == "*" name { print $1 }' "$sums")
[ -n "$expected" ] || die "$name is not listed in $sums"
actual=$(sha256sum "$tarball" | cut -d ' ' -f 1)
[ "$actual" = "$expected" ] || die "$name does not match its checksum in $sums (got $actual, want $expected): download it again"
echo "$name: checksum OK"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
tar -xzf "$tarball" -C "$work"
from=$work/${name%.tar.gz}
for file in disagg-proxy disagg-proxy.service disagg_config.yaml README.md LICENSE; do
  [ -f "$from/$file" ] || die "$name has no ${name%.tar.gz}/$file"
done

bindir=$destdir$prefix/bin
unitdir=$destdir/etc/systemd/system
confdir=$destdir/etc/disagg-proxy
docdir=$destdir$prefix/share/doc/disagg-proxy
install -d -m 0755 "$bindir" "$unitdir" "$confdir" "$docdir"

# Into place by rename: a running proxy keeps its old binary until it is restarted.
install -m 0755 "$from/disagg-proxy" "$bindir/.disagg-proxy.new"
mv -f "$bindir/.disagg-proxy.new" "$bindir/disagg-proxy"
echo "installed $bindir/disagg-proxy"

sed "s|^ExecStart=/usr/local/bin/disagg-proxy |ExecStart=$prefix/bin/disagg-proxy |" "$from/disagg-proxy.service" >"$work/unit"
grep -q "^ExecStart=$prefix/bin/disagg-proxy " "$work/unit" || die "the unit in $name has an unexpected ExecStart line"
install -m 0644 "$work/unit" "$unitdir/disagg-proxy.service"
echo "installed $unitdir/disagg-proxy.service"

if [ -e "$confdir/disagg_config.yaml" ]; then
  echo "kept $confdir/disagg_config.yaml (the example is in $docdir/disagg_config.yaml)"
else
  install -m 0644 "$from/disagg_config.yaml" "$confdir/disagg_config.yaml"
  echo "installed $confdir/disagg_config.yaml (an example: put your workers in it)"
fi
install -m 0644 "$from/README.md" "$from/LICENSE" "$from/disagg_config.yaml" "$docdir/"

"$bindir/disagg-proxy" --version 2>/dev/null || echo "note: $bindir/disagg-proxy does not run on this machine (wrong architecture?)"

# Only a real install tells systemd; a staged one (DESTDIR) leaves the host alone.
if [ -z "$destdir" ] && [ -d /run/systemd/system ]; then
  systemctl daemon-reload
fi
echo
echo "Next: put your workers' URLs in /etc/disagg-proxy/disagg_config.yaml, then"
echo "  systemctl enable --now disagg-proxy"
echo "(already running? systemctl restart disagg-proxy starts the new binary)"
