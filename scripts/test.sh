#!/usr/bin/env bash
# `make test`: formatting, one linted build, then side by side every Rust test on SQLite and
# PostgreSQL, the API contract check (schemathesis) and the Playwright suite, the last two
# against the very binary the Rust tests built. Stops at the first failed step and ends,
# pass or fail, with a table of each step's duration (also written, one JSON object a step,
# to target/test-steps.jsonl).
set -euo pipefail
cd "$(dirname "$0")/.."

step_names=()
step_seconds=()
step_results=()
# Where scripts/side-by-side.sh records the time of each command it ran.
STEP_TIMES=$(mktemp)
export STEP_TIMES
current_step=""
current_start=0

# Starts timing a new step (and ends the one before).
step() {
  end_step ok
  current_step=$1
  current_start=$SECONDS
  printf '\n==> [%s] %s\n' "$(date +%T)" "$current_step"
}

end_step() {
  [ -n "$current_step" ] || return 0
  step_names+=("$current_step")
  step_seconds+=($((SECONDS - current_start)))
  step_results+=("$1")
  current_step=""
}

report() {
  local status=$?
  end_step "$([ "$status" = 0 ] && echo ok || echo FAILED)"
  printf '\n%-64s %8s  %s\n' "step" "seconds" "result"
  local i
  for i in "${!step_names[@]}"; do
    printf '%s\t%s\t%s\n' "${step_names[$i]}" "${step_seconds[$i]}" "${step_results[$i]}"
  done >"$STEP_TIMES.main"
  {
    cat "$STEP_TIMES.main"
    sed 's/^/  /' "$STEP_TIMES"
    printf '%s\t%s\t%s\n' total "$SECONDS" "$([ "$status" = 0 ] && echo ok || echo FAILED)"
  } >"$STEP_TIMES.all"
  local name seconds result commit
  commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
  mkdir -p target
  : >target/test-steps.jsonl
  while IFS=$'\t' read -r name seconds result; do
    printf '%-64s %8d  %s\n' "$name" "$seconds" "$result"
    printf '{"commit": "%s", "step": "%s", "seconds": %d, "result": "%s"}\n' \
      "$commit" "${name#  }" "$seconds" "$result" >>target/test-steps.jsonl
  done <"$STEP_TIMES.all"
  rm -f "$STEP_TIMES" "$STEP_TIMES.main" "$STEP_TIMES.all"
}
trap report EXIT

step "install missing tools"
scripts/install-tools.sh test

step "cargo fmt --check"
cargo fmt --all --check

# One build serves clippy, the Rust tests, the contract check and the browser tests.
source scripts/lint-env.sh
export BULKQ_LINT=1

step "build and lint: tests, examples, the bulkq binary"
cargo test --workspace --exclude frontend --exclude site-builder --no-run --quiet 2>&1 |
  grep -v '^ *Executable ' || true
[ "${PIPESTATUS[0]}" = 0 ]

step "build and lint: the site (frontend wasm32, site-builder)"
scripts/build.sh site

pg_url=$(scripts/postgres-url.sh)
if [ -n "$pg_url" ]; then
  export TEST_DATABASE_URL="$pg_url" BULKQ_REQUIRE_POSTGRES=1
  backends="SQLite and PostgreSQL"
elif [ -n "${CI:-}" ]; then
  echo "ERROR: no PostgreSQL server answers and CI is set: the PostgreSQL suite must run." >&2
  exit 1
else
  unset BULKQ_REQUIRE_POSTGRES
  backends="SQLite only"
  cat <<'BANNER'

  ##########################################################################
  #  PostgreSQL SKIPPED: no server answers (set TEST_DATABASE_URL to one). #
  #  Only the SQLite half of the database tests runs.                      #
  ##########################################################################

BANNER
fi
# RabbitMQ (the optional wake-up hints): when the local broker's port answers, its tests must
# run rather than skip.
if timeout 3 bash -c 'exec 3<>/dev/tcp/127.0.0.1/5672' 2>/dev/null; then
  export BULKQ_REQUIRE_RABBITMQ=1
else
  unset BULKQ_REQUIRE_RABBITMQ
  echo "RabbitMQ SKIPPED: nothing answers on 127.0.0.1:5672; the wake-up hint tests will skip"
fi

# Side by side: the Rust tests spend most of their time waiting on databases, sockets and
# child processes, which leaves room on the cores for the servers of the other two.
step "tests, side by side"
scripts/side-by-side.sh "Rust tests on $backends" scripts/rust-tests.sh \
  -- "API contract (schemathesis)" scripts/api-contract.sh \
  -- "browser flows (Playwright)" scripts/e2e.sh
