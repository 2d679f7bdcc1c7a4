#!/usr/bin/env bash
# Tools the tests run for real, installed from Debian's packages when missing: etcd (discovery
# tests), systemd-analyze (the unit file check) and openssl (TLS certificates for the TLS tests).
set -euo pipefail
missing=()
command -v etcd >/dev/null || missing+=(etcd-server)
command -v systemd-analyze >/dev/null || missing+=(systemd)
command -v openssl >/dev/null || missing+=(openssl)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "The tests need: ${missing[*]} (Debian packages). Install them, e.g. sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "Installing test tools: ${missing[*]}"
apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
