#!/bin/sh
# Installs disagg-proxy from a release tarball on a systemd host, or upgrades the running one:
#   sudo sh install.sh [--prefix DIR] [--destdir DIR] [disagg-proxy-<version>-linux-<arch>.tar.gz]
# Checks the tarball against the SHA256SUMS beside it, then installs
#   <prefix>/bin/disagg-proxy                              (prefix: /usr/local)
#   /etc/systemd/system/disagg-proxy@.service             (slots a and b; ExecStart names <prefix>/bin/disagg-proxy)
#   /etc/sysctl.d/60-disagg-proxy.conf                     (net.ipv4.tcp_migrate_req = 1)
#   /etc/disagg-proxy/disagg_config.yaml                   (only when there is none: yours is kept)
#   <prefix>/share/doc/disagg-proxy/{README.md,LICENSE,docs/}
# all under DESTDIR when it is set (for packaging and tests; then systemd and sysctl are left alone).
# Where disagg-proxy@a (or @b) runs, it then upgrades it without refusing a connection: it starts
# the other slot, which takes the port over once its workers are ready, and enables it in place
# of the old one, which drains its streams and exits. The same with an older tarball rolls back.
# Without a tarball argument it takes the one beside this script for this machine's architecture.
set -eu

usage() {
  sed -n '2,14s/^# \{0,1\}//p' "$0"
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
for file in disagg-proxy disagg-proxy@.service disagg_config.yaml README.md LICENSE; do
  [ -f "$from/$file" ] || die "$name has no ${name%.tar.gz}/$file"
done
[ -d "$from/docs" ] || die "$name has no ${name%.tar.gz}/docs/"

bindir=$destdir$prefix/bin
unitdir=$destdir/etc/systemd/system
sysctldir=$destdir/etc/sysctl.d
confdir=$destdir/etc/disagg-proxy
docdir=$destdir$prefix/share/doc/disagg-proxy
install -d -m 0755 "$bindir" "$unitdir" "$sysctldir" "$confdir" "$docdir" "$docdir/docs"

# Into place by rename: a running proxy keeps its old binary until it is restarted.
install -m 0755 "$from/disagg-proxy" "$bindir/.disagg-proxy.new"
mv -f "$bindir/.disagg-proxy.new" "$bindir/disagg-proxy"
echo "installed $bindir/disagg-proxy"

sed "s|^ExecStart=/usr/local/bin/disagg-proxy |ExecStart=$prefix/bin/disagg-proxy |" "$from/disagg-proxy@.service" >"$work/unit"
grep -q "^ExecStart=$prefix/bin/disagg-proxy " "$work/unit" || die "the unit in $name has an unexpected ExecStart line"
install -m 0644 "$work/unit" "$unitdir/disagg-proxy@.service"
echo "installed $unitdir/disagg-proxy@.service"

# Connections already queued on the old process's listener when it closes move to the new
# one's instead of being reset (Linux >= 5.14). Undo: remove the file, sysctl -w net.ipv4.tcp_migrate_req=0.
printf '# Written by disagg-proxy install.sh: an upgrade resets no queued connection (docs/upgrading.md).\nnet.ipv4.tcp_migrate_req = 1\n' >"$work/sysctl"
install -m 0644 "$work/sysctl" "$sysctldir/60-disagg-proxy.conf"
echo "installed $sysctldir/60-disagg-proxy.conf"

if [ -e "$confdir/disagg_config.yaml" ]; then
  echo "kept $confdir/disagg_config.yaml (the example is in $docdir/disagg_config.yaml)"
else
  install -m 0644 "$from/disagg_config.yaml" "$confdir/disagg_config.yaml"
  echo "installed $confdir/disagg_config.yaml (an example: put your workers in it)"
fi
install -m 0644 "$from/README.md" "$from/LICENSE" "$from/disagg_config.yaml" "$docdir/"
install -m 0644 "$from"/docs/* "$docdir/docs/"

"$bindir/disagg-proxy" --version 2>/dev/null || echo "note: $bindir/disagg-proxy does not run on this machine (wrong architecture?)"

# Starts the service, or upgrades the one running: the other slot takes the port over.
activate() {
  ctl=$1
  units=$2
  serving=
  for slot in a b; do
    if "$ctl" -q is-active "disagg-proxy@$slot" && { [ -z "$serving" ] || "$ctl" -q is-enabled "disagg-proxy@$slot"; }; then
      serving=$slot
    fi
  done
  if [ -z "$serving" ] && "$ctl" -q is-active disagg-proxy.service; then
    # A release before the slots: its port is not shared, so this once it is a restart.
    echo "disagg-proxy.service (a release without take-over) runs: restarting it once as disagg-proxy@a"
    "$ctl" disable --now disagg-proxy.service
    rm -f "$units/disagg-proxy.service"
    "$ctl" daemon-reload
    "$ctl" enable --now disagg-proxy@a
    echo "disagg-proxy@a serves"
    return
  fi
  if [ -z "$serving" ]; then
    echo
    echo "Next: put your workers' URLs in /etc/disagg-proxy/disagg_config.yaml, then"
    echo "  systemctl enable --now disagg-proxy@a"
    return
  fi
  next=a
  [ "$serving" = a ] && next=b
  waited=0
  while "$ctl" -q is-active "disagg-proxy@$next"; do
    # The slot a previous upgrade replaced is still draining its streams.
    [ "$waited" -eq 0 ] && echo "waiting for disagg-proxy@$next to finish draining (up to its --drain-timeout)"
    [ "$waited" -lt "${DRAIN_WAIT_S:-300}" ] || die "disagg-proxy@$next is still draining after ${DRAIN_WAIT_S:-300} s: try again later"
    sleep 1
    waited=$((waited + 1))
  done
  echo "upgrading: disagg-proxy@$next takes the port over from disagg-proxy@$serving once its workers are ready"
  if ! "$ctl" start "disagg-proxy@$next"; then
    # No retry in the background: the old slot serves on, untouched.
    "$ctl" stop "disagg-proxy@$next" || true
    die "disagg-proxy@$next did not take over (journalctl -u disagg-proxy@$next says why); disagg-proxy@$serving serves on"
  fi
  "$ctl" -q enable "disagg-proxy@$next"
  "$ctl" -q disable "disagg-proxy@$serving"
  echo "upgraded: disagg-proxy@$next serves; disagg-proxy@$serving drains its streams (up to its --drain-timeout) and exits"
}

# Only a real install tells systemd and the kernel; a staged one (DESTDIR) leaves the host alone.
# SYSTEMCTL and SYSCTL name other commands (the tests' stand-ins); setting SYSTEMCTL runs this part.
systemctl=${SYSTEMCTL:-systemctl}
sysctl=${SYSCTL:-sysctl}
if [ -n "${SYSTEMCTL:-}" ] || { [ -z "$destdir" ] && [ -d /run/systemd/system ]; }; then
  "$sysctl" -q -p "$sysctldir/60-disagg-proxy.conf" || echo "note: net.ipv4.tcp_migrate_req is not set (a kernel before 5.14?): an upgrade may reset connections queued at its moment"
  "$systemctl" daemon-reload
  activate "$systemctl" "$unitdir"
else
  echo
  echo "Next: put your workers' URLs in /etc/disagg-proxy/disagg_config.yaml, then"
  echo "  systemctl enable --now disagg-proxy@a"
fi
