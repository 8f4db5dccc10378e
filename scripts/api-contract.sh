#!/usr/bin/env bash
# The JSON API against its published contract: starts the debug server on a throwaway
# database (SQLite, then PostgreSQL when one answers), signs in a staff user and an admin,
# makes the staff user a personal token, and runs schemathesis (PyPI; installed by scripts/install-tools.sh) over every operation of
# /api/1/openapi.json with each session: valid and invalid input, bounded examples, a fixed
# seed. It fails on any 5xx, any status the contract does not list, and any response body
# or content type that breaks the schema. Expects `target/debug/bulkq` (`make build`).
set -euo pipefail
cd "$(dirname "$0")/.."

bin=target/debug/bulkq
schemathesis=.tools/schemathesis/bin/schemathesis
[ -x "$bin" ] || { echo "missing $bin: run 'make build' first" >&2; exit 1; }
[ -x "$schemathesis" ] || { echo "missing schemathesis: run 'scripts/install-tools.sh test'" >&2; exit 1; }

workdir=$(mktemp -d)
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && { kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null || true; }
  rm -rf "$workdir"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Signs `$1` in with password `$2` and prints the session cookie (`bulkq_session=...`).
session_cookie() {
  local jar="$workdir/$1.cookies"
  curl -fsS -o /dev/null -c "$jar" --data-urlencode "username=$1" --data-urlencode "password=$2" \
    "$base_url/api/sign_in"
  awk '$6 == "bulkq_session" { print "bulkq_session=" $7 }' "$jar"
}

# Makes the user with session cookie `$1` a read-and-act token and prints its secret.
personal_token() {
  curl -fsS -H "Cookie: $1" -d name=contract -d can_act=true -d expires_in_days=1 \
    "$base_url/api/account/tokens/create" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["secret"])'
}

# Runs the contract against a fresh server on database `$1`.
check_contract() {
  local database_url=$1 label=$2
  export DATABASE_URL="$database_url" BULKQ_LOG=warn
  local staff_password="staff-password-$RANDOM-$RANDOM" admin_password="admin-password-$RANDOM-$RANDOM"
  "$bin" migrate >/dev/null
  "$bin" user create --username contract-staff --role staff --password "$staff_password" >/dev/null
  "$bin" user create --username contract-admin --role admin --password "$admin_password" >/dev/null
  "$bin" seed --people 300 --seed 3 >/dev/null
  local port
  port=$(free_port)
  base_url="http://127.0.0.1:$port"
  "$bin" serve --listen "127.0.0.1:$port" --site-root target/site \
    --exports-dir "$workdir/exports-$label" --outbox-dir "$workdir/outbox-$label" \
    >"$workdir/server-$label.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 1 100); do
    curl -fsS "$base_url/healthz" >/dev/null 2>&1 && break
    kill -0 "$server_pid" 2>/dev/null || { cat "$workdir/server-$label.log"; exit 1; }
    sleep 0.1
  done
  local status=0 who password credential
  # Cookies are the same on either backend; a token and the admin's reach are checked on both.
  local runs="staff admin staff-token"
  [ "$label" = postgres ] && runs="admin staff-token"
  for who in $runs; do
    password=$staff_password
    [ "$who" = admin ] && password=$admin_password
    credential="Cookie: $(session_cookie "contract-${who%-token}" "$password")"
    [ "$who" = staff-token ] && credential="Authorization: Bearer $(personal_token "${credential#Cookie: }")"
    echo "==> schemathesis on $label as $who"
    # The live event stream is excluded: it is meant never to end while signed in.
    "$schemathesis" run "$base_url/api/1/openapi.json" \
      --header "$credential" \
      --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance \
      --exclude-path /task-events \
      --max-examples 25 --seed 1 --workers 1 --request-timeout 30 \
      --suppress-health-check all --no-color || status=$?
  done
  kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null || true
  server_pid=""
  if [ "$status" != 0 ]; then
    echo "--- server log ($label) ---"; cat "$workdir/server-$label.log"
    exit "$status"
  fi
}

check_contract "sqlite://$workdir/contract.db?mode=rwc" sqlite

pg_url=$(scripts/postgres-url.sh)
if [ -z "$pg_url" ]; then
  echo "PostgreSQL SKIPPED: no server answers; the contract was checked on SQLite only"
elif ! command -v psql >/dev/null; then
  echo "PostgreSQL SKIPPED: no psql to create a database with; the contract was checked on SQLite only"
else
  name="bulkq_contract_$RANDOM$RANDOM"
  psql -q "$pg_url" -c "CREATE DATABASE $name" >/dev/null
  trap 'cleanup; psql -q "$pg_url" -c "DROP DATABASE IF EXISTS $name WITH (FORCE)" >/dev/null' EXIT
  check_contract "$(python3 -c 'import sys, urllib.parse as u; p = u.urlsplit(sys.argv[1]); print(u.urlunsplit(p._replace(path="/" + sys.argv[2])))' "$pg_url" "$name")" postgres
fi
