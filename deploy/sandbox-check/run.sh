#!/usr/bin/env bash
# Runs dist/disagg-proxy inside an emulation of deploy/disagg-proxy@.service's sandbox, for
# machines where systemd cannot start units (containers, CI): a mount namespace with
# ProtectSystem=strict, ProtectHome, PrivateTmp, PrivateDevices, ProtectProc=invisible and
# ProcSubset=pid; an unprivileged uid without capabilities (DynamicUser, CapabilityBoundingSet=);
# NoNewPrivileges and RestrictAddressFamilies as seccomp (filter.c). Emulated workers run
# outside. It prints what the proxy could do, its node_id, whether it holds W+X memory (the
# JIT), and with --load N its CPU time for N streamed requests.
#
#   deploy/sandbox-check/run.sh [--mdwe-seccomp | --mdwe-prctl] [--no-netlink] [--load N]
#
# Needs root, gcc, util-linux (unshare, setpriv), curl and a built dist/disagg-proxy.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=$root/dist/disagg-proxy

if [ "${1-}" = "--inside" ]; then
  work=$2 filter_flags=$3; shift 3
  mount --make-rprivate /
  mount --bind "$work/etc" /etc/disagg-proxy
  for m in $(findmnt -rno TARGET | sort -u); do # ProtectSystem=strict
    case "$m" in /proc* | /dev* | /sys*) continue ;; esac
    mount -o remount,bind,ro "$m" 2>/dev/null || true
  done
  mount -t proc -o subset=pid,hidepid=invisible proc /proc # ProtectProc=invisible, ProcSubset=pid
  mount -t tmpfs tmpfs /tmp && mount -t tmpfs tmpfs /var/tmp # PrivateTmp
  for d in /root /home /run/user; do # ProtectHome
    if [ -d "$d" ]; then mount -t tmpfs -o ro,mode=000 tmpfs "$d"; fi
  done
  mount -t tmpfs -o mode=755 tmpfs /dev # PrivateDevices
  for spec in "null 1 3" "zero 1 5" "full 1 7" "random 1 8" "urandom 1 9" "tty 5 0"; do
    read -r name major minor <<<"$spec"
    mknod -m 666 "/dev/$name" c "$major" "$minor"
  done
  mkdir /dev/shm && mount -t tmpfs -o mode=1777 tmpfs /dev/shm && ln -s /proc/self/fd /dev/fd
  # shellcheck disable=SC2086 # filter_flags is a word list
  exec setpriv --reuid=61234 --regid=61234 --clear-groups --inh-caps=-all --bounding-set=-all \
    "$work/filter" $filter_flags -- "$@"
fi

filter_flags="--families --netlink" load=""
while [ $# -gt 0 ]; do
  case "$1" in
    --mdwe-seccomp | --mdwe-prctl) filter_flags="$filter_flags $1" ;;
    --no-netlink) filter_flags=${filter_flags/ --netlink/} ;;
    --load) load=$2; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done

work=$(mktemp -d -p /run disagg-sandbox-check.XXXXXX) # /run: outside the emulated PrivateTmp
chmod 755 "$work" && mkdir -m 755 "$work/etc"
pids=() made_etc=""
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ -n "$made_etc" ]; then rmdir /etc/disagg-proxy; fi
  rm -rf "$work"
}
trap cleanup EXIT
gcc -O2 -o "$work/filter" "$here/filter.c"

first_line() { for _ in $(seq 100); do if head -1 "$1" 2>/dev/null | grep -q '^http'; then head -1 "$1"; return; fi; sleep 0.1; done; cat "$1" >&2; return 1; }
"$bin" worker --role context --port 0 --host 127.0.0.1 >"$work/ctx.out" 2>&1 & pids+=($!)
"$bin" worker --role generation --port 0 --host 127.0.0.1 --token-ms 2 --output-tokens 50 >"$work/gen.out" 2>&1 & pids+=($!)
ctx=$(first_line "$work/ctx.out") gen=$(first_line "$work/gen.out")
printf 'hostname: 127.0.0.1\nport: 0\ncontext_servers:\n  urls: ["%s"]\ngeneration_servers:\n  urls: ["%s"]\n' \
  "${ctx#http://}" "${gen#http://}" >"$work/etc/disagg_config.yaml"
chmod 644 "$work/etc/disagg_config.yaml"
if [ ! -d /etc/disagg-proxy ]; then mkdir /etc/disagg-proxy && made_etc=1; fi

unshare --mount "$0" --inside "$work" "$filter_flags" env -i BUN_CONFIG_MAX_HTTP_REQUESTS=65535 \
  "$bin" serve -c /etc/disagg-proxy/disagg_config.yaml >"$work/proxy.out" 2>&1 & proxy=$!
pids+=("$proxy")
url=$(first_line "$work/proxy.out")
for _ in $(seq 100); do [ "$(curl -s -o /dev/null -w '%{http_code}' "$url/health")" = 200 ] && break; sleep 0.1; done

chat() { curl -sS "$url/v1/chat/completions" -H 'content-type: application/json' "$@"; }
status=$(awk '/^Uid:/{u=$2} /^NoNewPrivs:/{n=$2} /^Seccomp:/{s=$2} END{print "uid " u ", no_new_privs " n ", seccomp " s}' "/proc/$proxy/status")
echo "sandbox: $filter_flags; proxy $status"
echo "health: $(curl -s -o /dev/null -w '%{http_code}' "$url/health")"
echo "chat: $(chat -o /dev/null -w '%{http_code}' -d '{"model":"m","messages":[{"role":"user","content":"hi"}]}')"
echo "streamed chat bytes: $(chat -N -d '{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}' | wc -c)"
id=$(chat -D - -o /dev/null -d '{"model":"m","messages":[{"role":"user","content":"hi"}]}' | tr -d '\r' | awk 'tolower($1)=="x-trtllm-engine-request-id:"{print $2}')
echo "node_id (from disagg_request_id $id): $(((id >> 16) & 255))"
echo "W+X mappings (JavaScriptCore JIT pool): $(grep -c ' rwxp ' "/proc/$proxy/maps" || true)"
kill -HUP "$proxy" && sleep 0.3 && echo "health after SIGHUP: $(curl -s -o /dev/null -w '%{http_code}' "$url/health")"
if [ -n "$load" ]; then
  before=$(awk '{print $14 + $15}' "/proc/$proxy/stat")
  "$root/node_modules/.bin/bun" "$here/load.ts" "$url" "$load" 64
  echo "proxy CPU for $load streamed requests: $((($(awk '{print $14 + $15}' "/proc/$proxy/stat") - before) * 1000 / $(getconf CLK_TCK))) ms"
fi
kill -TERM "$proxy" && code=0 && wait "$proxy" || code=$?
echo "exit code after SIGTERM: $code"
