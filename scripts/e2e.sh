#!/usr/bin/env bash
# Runs the Playwright suite against a freshly started server on a free port with a throwaway
# SQLite database and known test users. Expects a built site (`cargo leptos build`).
set -euo pipefail
cd "$(dirname "$0")/.."

bin=target/debug/bulkq
[ -x "$bin" ] || { echo "missing $bin: run 'cargo leptos build' first" >&2; exit 1; }

workdir=$(mktemp -d)
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  rm -rf "$workdir"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export DATABASE_URL="sqlite://$workdir/e2e.db?mode=rwc" BULKQ_LOG=warn
export E2E_STAFF_PASSWORD="staff-$RANDOM-$RANDOM" E2E_ADMIN_PASSWORD="admin-$RANDOM-$RANDOM"

"$bin" migrate >/dev/null
"$bin" create-user --username e2e-staff --display-name "Erin Staff" --role staff \
  --password "$E2E_STAFF_PASSWORD" >/dev/null
"$bin" create-user --username e2e-admin --display-name "Ari Admin" --role admin \
  --password "$E2E_ADMIN_PASSWORD" >/dev/null
"$bin" seed --people 500 --seed 7 >/dev/null

"$bin" serve --listen "127.0.0.1:$port" --site-root target/site >"$workdir/server.log" 2>&1 &
server_pid=$!
export BASE_URL="http://127.0.0.1:$port"
for _ in $(seq 1 100); do
  curl -fsS "$BASE_URL/healthz" >/dev/null 2>&1 && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$workdir/server.log"; exit 1; }
  sleep 0.1
done

status=0
(cd end2end && npx playwright test) || status=$?
if [ "$status" != 0 ]; then
  echo "--- server log ---"; cat "$workdir/server.log"
fi
exit "$status"
