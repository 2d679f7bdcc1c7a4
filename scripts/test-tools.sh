#!/usr/bin/env bash
# Tools the tests run for real, installed from Debian's packages when missing: etcd (discovery
# tests), systemd-analyze (the unit file check), openssl (TLS certificates for the TLS tests),
# qemu-user with arm64's C library (the release check runs the linux-arm64 binary under
# qemu-aarch64), shellcheck (deploy/install.sh), curl (the README's install lines) and chromium
# (the dashboard's browser test drives it headless over the DevTools protocol).
set -euo pipefail
missing=()
command -v etcd >/dev/null || missing+=(etcd-server)
command -v systemd-analyze >/dev/null || missing+=(systemd)
command -v openssl >/dev/null || missing+=(openssl)
# The release check runs the other architecture's binary under qemu-user with that
# architecture's C library (scripts/release/check.ts).
if [ "$(uname -m)" = aarch64 ]; then
  command -v qemu-x86_64 >/dev/null || missing+=(qemu-user)
  [ -e /usr/x86_64-linux-gnu/lib64/ld-linux-x86-64.so.2 ] || missing+=(libc6-amd64-cross)
else
  command -v qemu-aarch64 >/dev/null || missing+=(qemu-user)
  [ -e /usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1 ] || missing+=(libc6-arm64-cross)
fi
command -v shellcheck >/dev/null || missing+=(shellcheck)
command -v curl >/dev/null || missing+=(curl)
command -v chromium >/dev/null || missing+=(chromium)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "The tests need: ${missing[*]} (Debian packages). Install them, e.g. sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "Installing test tools: ${missing[*]}"
# Others may be installing at the same time: wait for dpkg's lock instead of failing.
apt-get update -qq -o DPkg::Lock::Timeout=120 &&
  apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=120 "${missing[@]}" >/dev/null
