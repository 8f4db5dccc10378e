#!/usr/bin/env bash
# Runs the Playwright suite against freshly started servers, one per Playwright worker
# (E2E_WORKERS, default 2), so that workers never see each other's tasks. Each server has a
# free port, a throwaway SQLite database with the same known test users and seeded people,
# its own exports directory, and its own SMTP sink (end2end/smtp-sink.mjs, which defers
# messages marked "[relay-fail]", so tests can make a task fail). BASE_URLS lists the servers
# in worker order. Expects a built site and server (`make build`). Arguments go to
# `playwright test` (e.g. a spec file's name); on failure every server's log is printed.
set -euo pipefail
cd "$(dirname "$0")/.."

bin=target/debug/bulkq
[ -x "$bin" ] || { echo "missing $bin: run 'make build' first" >&2; exit 1; }

export E2E_WORKERS="${E2E_WORKERS:-2}"
[[ "$E2E_WORKERS" =~ ^[1-9][0-9]*$ ]] || { echo "E2E_WORKERS must be a positive number" >&2; exit 1; }

workdir=$(mktemp -d)
server_pids=()
sink_pids=()
# Ends these processes: TERM, then KILL for any still running after 5 s (a server drains
# its connections first, and an interrupted run's browser may still hold some open).
stop() {
  kill "$@" 2>/dev/null || true
  for pid in "$@"; do
    for _ in $(seq 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    # `|| true`: a process ended by a signal reports failure, which must not become the
    # script's exit status.
    wait "$pid" 2>/dev/null || true
  done
}
cleanup() {
  # The servers first: they may be talking to their sinks.
  stop "${server_pids[@]}"
  stop "${sink_pids[@]}"
  rm -rf "$workdir"
}
trap cleanup EXIT

# Every port at once, each socket held until all are bound, so no two are the same.
read -r -a ports < <(python3 -c '
import socket, sys
sockets = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in sockets: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in sockets])' $((2 * E2E_WORKERS)))

export BULKQ_LOG=warn
export E2E_STAFF_PASSWORD="staff-password-$RANDOM-$RANDOM" E2E_ADMIN_PASSWORD="admin-password-$RANDOM-$RANDOM"
export E2E_OTHER_PASSWORD="other-password-$RANDOM-$RANDOM" E2E_EXPLORER_PASSWORD="explorer-password-$RANDOM-$RANDOM"
export E2E_NEWCOMER_PASSWORD="newcomer-password-$RANDOM-$RANDOM" E2E_BELL_PASSWORD="bell-password-$RANDOM-$RANDOM"

# A database with the test users, the same for every server.
prepare_database() {
  "$bin" migrate >/dev/null
  "$bin" user create --username e2e-staff --display-name "Erin Staff" --role staff \
    --password "$E2E_STAFF_PASSWORD" >/dev/null
  "$bin" user create --username e2e-admin --display-name "Ari Admin" --role admin \
    --password "$E2E_ADMIN_PASSWORD" >/dev/null
  # The seed makes the staff users existing now the coaches of about four in five people,
  # so e2e-staff coaches those and may act on everyone (the rest are unassigned).
  "$bin" seed --people 500 --seed 7 >/dev/null
  # Created after the seed, so these coach nobody. e2e-other owns the tasks that e2e-staff
  # must not see. e2e-explorer and e2e-newcomer each belong to one flow, which so knows all
  # their tasks: explorer.spec.ts's own, and none at all (my-tasks.spec.ts); e2e-bell's
  # are the bell flow's (notifications.spec.ts).
  "$bin" user create --username e2e-other --display-name "Olu Other" --role staff \
    --password "$E2E_OTHER_PASSWORD" >/dev/null
  "$bin" user create --username e2e-explorer --display-name "Eli Explorer" --role staff \
    --password "$E2E_EXPLORER_PASSWORD" >/dev/null
  "$bin" user create --username e2e-newcomer --display-name "Nia Newcomer" --role admin \
    --password "$E2E_NEWCOMER_PASSWORD" >/dev/null
  "$bin" user create --username e2e-bell --display-name "Bea Bell" --role staff \
    --password "$E2E_BELL_PASSWORD" >/dev/null
}

base_urls=()
for ((i = 0; i < E2E_WORKERS; i++)); do
  dir="$workdir/$i"
  port=${ports[2 * i]}
  smtp_port=${ports[2 * i + 1]}
  mkdir "$dir"
  DATABASE_URL="sqlite://$dir/e2e.db?mode=rwc" prepare_database

  node end2end/smtp-sink.mjs "$smtp_port" >"$dir/smtp.log" 2>&1 &
  sink_pids+=($!)
  # Exports are kept 10 s, so a test can see one expire (scheduling.spec.ts), yet long
  # enough for the flows that download one right after it is made.
  DATABASE_URL="sqlite://$dir/e2e.db?mode=rwc" "$bin" serve --listen "127.0.0.1:$port" \
    --site-root target/site --exports-dir "$dir/exports" --export-retention 10s \
    --smtp-relay "127.0.0.1:$smtp_port" >"$dir/server.log" 2>&1 &
  server_pids+=($!)
  base_urls+=("http://127.0.0.1:$port")
done

# Prints every server's log, named by its URL.
print_logs() {
  for ((i = 0; i < E2E_WORKERS; i++)); do
    echo "--- server log (${base_urls[i]}, worker $i) ---"
    cat "$workdir/$i/server.log"
  done
}

for ((i = 0; i < E2E_WORKERS; i++)); do
  for attempt in $(seq 1 100); do
    curl -fsS "${base_urls[i]}/healthz" >/dev/null 2>&1 && break
    if ! kill -0 "${server_pids[i]}" 2>/dev/null || [ "$attempt" = 100 ]; then
      echo "server ${base_urls[i]} did not start" >&2
      print_logs
      exit 1
    fi
    sleep 0.1
  done
done
BASE_URLS=$(IFS=,; echo "${base_urls[*]}")
export BASE_URLS

status=0
# pipefail: the status is playwright's, not tee's.
(cd end2end && npx playwright test "$@") 2>&1 | tee "$workdir/playwright.log" || status=$?
if [ "$status" != 0 ]; then
  print_logs
  # The failures again, after the logs, so a log's tail (all CI keeps) still says what failed.
  echo "--- what failed (repeated from above) ---"
  awk '/^  [0-9]+\) /{keep=1} /^  [0-9]+ (failed|passed|flaky)/{keep=0} keep' \
    "$workdir/playwright.log" | grep -v '^\s*$' | head -120
  # Last, each failure in a few lines (title, error, the failing line), for a short tail.
  echo "--- the failures in brief ---"
  grep -E '^  [0-9]+\) |^ +(Error|TimeoutError|Test timeout)|^ +> [0-9]+ \|' \
    "$workdir/playwright.log" | head -30
fi
exit "$status"
