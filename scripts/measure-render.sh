#!/usr/bin/env bash
# Times the server-rendered caseload page (signed in, as a browser's first request gets it)
# on each database given, e.g. one seeded with `bulkq seed --people 1000000`:
#
#   make build-release
#   scripts/measure-render.sh "sqlite:///tmp/big.db?mode=rwc" postgres://postgres@127.0.0.1:5432/big
#
# Prints p50 and max of 10 requests (after 2 warm-ups) per page. Creates a staff user
# `render-bench` in each database if it is missing.
set -uo pipefail
cd "$(dirname "$0")/.."
bin=target/release/bulkq
[ -x "$bin" ] || { echo "missing $bin: run 'make build-release' first" >&2; exit 1; }
[ $# -gt 0 ] || { echo "usage: $0 DATABASE_URL..." >&2; exit 2; }
workdir=$(mktemp -d)
trap 'rm -rf "$workdir"' EXIT
for url in "$@"; do
  echo "=== $url"
  "$bin" --database-url "$url" --log-level warn user create --username render-bench \
    --role staff --password pages-render-password >/dev/null 2>&1
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "$bin" --database-url "$url" --log-level warn serve --listen "127.0.0.1:$port" \
    --exports-dir "$workdir/exports" --outbox-dir "$workdir/outbox" >"$workdir/server.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 100); do curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break; sleep 0.2; done
  jar="$workdir/cookies"
  curl -s -c "$jar" -o /dev/null -d 'username=render-bench&password=pages-render-password' \
    "http://127.0.0.1:$port/api/sign_in"
  for path in "/" "/?q=ada" "/?status=GRADUATED&page=999"; do
    times=()
    for _ in $(seq 1 12); do
      times+=("$(curl -s -b "$jar" -o /dev/null -w '%{time_total}' "http://127.0.0.1:$port$path")")
    done
    printf '%-30s ' "$path"
    printf '%s\n' "${times[@]:2}" | sort -n |
      awk '{a[NR]=$1*1000} END {printf "p50 %.1f ms, max %.1f ms\n", a[int((NR+1)/2)], a[NR]}'
  done
  kill "$pid"; wait "$pid" 2>/dev/null
done
