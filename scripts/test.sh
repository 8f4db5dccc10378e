#!/usr/bin/env bash
# `make test`: formatting, clippy, every Rust test on SQLite and PostgreSQL, then the API
# contract check (schemathesis) and the Playwright suite against freshly started servers.
# Stops at the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> [%s] %s\n' "$(date +%T)" "$*"; }

scripts/install-tools.sh test

step "cargo fmt --check"
cargo fmt --all --check

step "cargo clippy (server side, all targets)"
cargo clippy --workspace --exclude frontend --all-targets --quiet -- -D warnings
step "cargo clippy (browser side, wasm32)"
cargo clippy -p frontend --target wasm32-unknown-unknown --quiet -- -D warnings

pg_url=$(scripts/postgres-url.sh)
if [ -n "$pg_url" ]; then
  export TEST_DATABASE_URL="$pg_url" BULKQ_REQUIRE_POSTGRES=1
  step "Rust tests on SQLite and PostgreSQL ($pg_url)"
elif [ -n "${CI:-}" ]; then
  echo "ERROR: no PostgreSQL server answers and CI is set: the PostgreSQL suite must run." >&2
  exit 1
else
  unset BULKQ_REQUIRE_POSTGRES
  cat <<'BANNER'

  ##########################################################################
  #  PostgreSQL SKIPPED: no server answers (set TEST_DATABASE_URL to one). #
  #  Only the SQLite half of the database tests runs.                      #
  ##########################################################################

BANNER
  step "Rust tests on SQLite only"
fi
# RabbitMQ (the optional wake-up hints): when the local broker's port answers, its tests must
# run rather than skip; `server` enables `queue/amqp`, so the workspace run builds them.
if timeout 3 bash -c 'exec 3<>/dev/tcp/127.0.0.1/5672' 2>/dev/null; then
  export BULKQ_REQUIRE_RABBITMQ=1
else
  unset BULKQ_REQUIRE_RABBITMQ
  echo "RabbitMQ SKIPPED: nothing answers on 127.0.0.1:5672; the wake-up hint tests will skip"
fi
cargo test --workspace --exclude frontend

step "build the site (debug) for the browser tests"
cargo leptos build

step "the JSON API against its OpenAPI contract (schemathesis)"
scripts/api-contract.sh

step "Playwright (Debian Chromium)"
scripts/e2e.sh
