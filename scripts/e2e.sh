#!/usr/bin/env bash
# Runs the Playwright suite against a freshly started server on a free port with a throwaway
# SQLite database and known test users, its email going to end2end/smtp-sink.mjs (which
# defers messages marked "[relay-fail]", so tests can make a task fail). Expects a built
# site (`cargo leptos build`). Arguments go to `playwright test` (e.g. a spec file's name).
set -euo pipefail
cd "$(dirname "$0")/.."

bin=target/debug/bulkq
[ -x "$bin" ] || { echo "missing $bin: run 'cargo leptos build' first" >&2; exit 1; }

workdir=$(mktemp -d)
server_pid=""
sink_pid=""
cleanup() {
  # The server first: it may be talking to the sink. `|| true`: a process ended by the
  # signal reports failure, which must not become the script's exit status.
  for pid in $server_pid $sink_pid; do
    kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  done
  rm -rf "$workdir"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
port=$(free_port)
smtp_port=$(free_port)
export DATABASE_URL="sqlite://$workdir/e2e.db?mode=rwc" BULKQ_LOG=warn
export E2E_STAFF_PASSWORD="staff-$RANDOM-$RANDOM" E2E_ADMIN_PASSWORD="admin-$RANDOM-$RANDOM"
export E2E_OTHER_PASSWORD="other-$RANDOM-$RANDOM"

"$bin" migrate >/dev/null
"$bin" create-user --username e2e-staff --display-name "Erin Staff" --role staff \
  --password "$E2E_STAFF_PASSWORD" >/dev/null
"$bin" create-user --username e2e-admin --display-name "Ari Admin" --role admin \
  --password "$E2E_ADMIN_PASSWORD" >/dev/null
# The seed makes the staff users existing now the coaches of about four in five people, so
# e2e-staff coaches those and may act on everyone (the rest are unassigned).
"$bin" seed --people 500 --seed 7 >/dev/null
# Created after the seed, so this colleague coaches nobody: the owner of tasks that
# e2e-staff must not see.
"$bin" create-user --username e2e-other --display-name "Olu Other" --role staff \
  --password "$E2E_OTHER_PASSWORD" >/dev/null

node end2end/smtp-sink.mjs "$smtp_port" >"$workdir/smtp.log" 2>&1 &
sink_pid=$!

# Exports are kept 30 s, so a test can see one expire (scheduling.spec.ts).
"$bin" serve --listen "127.0.0.1:$port" --site-root target/site \
  --exports-dir "$workdir/exports" --export-retention 30s --smtp-relay "127.0.0.1:$smtp_port" \
  >"$workdir/server.log" 2>&1 &
server_pid=$!
export BASE_URL="http://127.0.0.1:$port"
for _ in $(seq 1 100); do
  curl -fsS "$BASE_URL/healthz" >/dev/null 2>&1 && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$workdir/server.log"; exit 1; }
  sleep 0.1
done

status=0
(cd end2end && npx playwright test "$@") || status=$?
if [ "$status" != 0 ]; then
  echo "--- server log ---"; cat "$workdir/server.log"
fi
exit "$status"
