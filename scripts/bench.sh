#!/usr/bin/env bash
# `make bench`: the benchmark suite, on release builds, on SQLite and on the local
# PostgreSQL (skipped, and said so, when none answers).
#
#   1. The queue (queue/examples/queue_bench): drain, latency and aged-table scenarios;
#      then the task explorer's views over a million retained tasks (explorer_bench).
#   2. The caseload at scale (caseload/examples/scale): seed, search (200 mixed queries),
#      export of everyone, email to everyone GRADUATED (~100,000), status change of
#      everyone, an early alert for everyone, everyone moved to a new coach (all but email
#      then their plain-SQL floor, engine ÷ floor printed); then, into an empty database,
#      an import of a generated file of as many people and the same file again; each step
#      in its own process, so each peak RSS is that step's own.
#   3. People under load (server/examples/people_under_load): eight staff using the
#      dashboard of a node while its queue works off their Watch tasks, against the same
#      backlog worked off alone.
#
# Prints each program's table and one JSON line per scenario; all JSON lines are also
# collected in target/bench/results-<time>.jsonl.
#
#   BENCH_PEOPLE=1000000   people in the bulk scenarios' caseload
#   BENCH_QUEUE_ARGS=...   arguments for queue_bench (e.g. "--tasks 5000 --aged 100000")
#   BENCH_EXPLORER_ARGS=... arguments for explorer_bench (e.g. "--tasks 100000 --runs 10")
#   BENCH_SKIP_BULK=1      run only the queue scenarios
#   BENCH_OFFICE_PEOPLE=100000 BENCH_OFFICE_SECONDS=60   size of "people under load"
set -euo pipefail
cd "$(dirname "$0")/.."

people="${BENCH_PEOPLE:-1000000}"
out=target/bench
mkdir -p "$out"
results="$out/results-$(date +%Y%m%dT%H%M%S).jsonl"

step() { printf '\n==> [%s] %s\n' "$(date +%T)" "$*"; }
# Runs a command, showing its output and keeping its JSON lines.
collect() {
  "$@" | while IFS= read -r line; do
    printf '%s\n' "$line"
    if [[ $line == "{"* ]]; then printf '%s\n' "$line" >> "$results"; fi
  done
}

step "release build of the benchmarks"
cargo build --release --quiet --features queue/testing,caseload/testing \
  -p queue --example queue_bench --example explorer_bench -p caseload --example scale \
  -p server --example people_under_load

pg_server=$(scripts/postgres-url.sh)
if [ -n "$pg_server" ]; then
  export TEST_DATABASE_URL="$pg_server"
else
  echo "PostgreSQL SKIPPED: no server answers (set TEST_DATABASE_URL to one)."
fi

step "queue: drain, latency, aged table"
# shellcheck disable=SC2086 # BENCH_QUEUE_ARGS is a list of arguments
collect target/release/examples/queue_bench ${BENCH_QUEUE_ARGS:-}

step "the task explorer: its views over 1,000,000 retained tasks"
# shellcheck disable=SC2086 # BENCH_EXPLORER_ARGS is a list of arguments
collect target/release/examples/explorer_bench ${BENCH_EXPLORER_ARGS:-}

if [ -z "${BENCH_SKIP_BULK:-}" ]; then
  urls=("sqlite://$PWD/$out/bulk.db?mode=rwc")
  rm -f "$out"/bulk.db*
  if [ -n "$pg_server" ] && ! command -v psql >/dev/null; then
    echo "PostgreSQL bulk scenarios SKIPPED: no psql to create their database with."
    pg_server=""
  fi
  if [ -n "$pg_server" ]; then
    pg_bench="${pg_server%/*}/bulkq_bench"
    psql "$pg_server" -qc "DROP DATABASE IF EXISTS bulkq_bench" -c "CREATE DATABASE bulkq_bench"
    urls+=("$pg_bench")
  fi
  for url in "${urls[@]}"; do
    for what in seed search export email watch status alert reassign; do
      step "bulk at $people people: $what ($url)"
      collect target/release/examples/scale "$url" "$people" "$what"
    done
  done
  rm -f "$out"/bulk.db*
  [ -n "$pg_server" ] && psql "$pg_server" -qc "DROP DATABASE IF EXISTS bulkq_bench" \
    -c "CREATE DATABASE bulkq_bench"
  # An organisation's first import goes into an empty caseload; an import allocates its
  # file's megabyte windows as a node does (server::memory).
  for url in "${urls[@]}"; do
    step "bulk at $people people: import into an empty database ($url)"
    collect env MALLOC_MMAP_THRESHOLD_=1048576 target/release/examples/scale "$url" "$people" import
  done
  rm -f "$out"/bulk.db*
  [ -n "$pg_server" ] && psql "$pg_server" -qc "DROP DATABASE IF EXISTS bulkq_bench"

  office_people="${BENCH_OFFICE_PEOPLE:-100000}"
  office_seconds="${BENCH_OFFICE_SECONDS:-60}"
  for url in "${urls[@]}"; do
    [[ $url == postgres* ]] && psql "$pg_server" -qc "DROP DATABASE IF EXISTS bulkq_bench" \
      -c "CREATE DATABASE bulkq_bench"
    step "people under load: $office_people people, $office_seconds s ($url)"
    collect target/release/examples/people_under_load "$url" "$office_people" "$office_seconds"
  done
  rm -f "$out"/bulk.db*
  [ -n "$pg_server" ] && psql "$pg_server" -qc "DROP DATABASE IF EXISTS bulkq_bench"
fi

step "done: JSON lines in $results"
