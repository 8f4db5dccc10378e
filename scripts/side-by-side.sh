#!/usr/bin/env bash
# Runs commands at once, each with its output in its own log, then prints the logs in turn
# (headed by their names, results and times) and fails when any failed. When STEP_TIMES
# names a file, appends a line per command to it: name, seconds, result (tab-separated).
#
#   scripts/side-by-side.sh NAME1 CMD1 [ARGS...] -- NAME2 CMD2 [ARGS...] [-- ...]
set -euo pipefail

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

run() {
  local log=$1; shift
  local start=$SECONDS status=0
  "$@" >"$log" 2>&1 || status=$?
  echo "$status $((SECONDS - start))" >"$log.result"
}

names=()
while [ $# -gt 0 ]; do
  names+=("$1"); shift
  command=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do command+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  run "$logs/${#names[@]}" "${command[@]}" &
done
wait

failed=0
for i in "${!names[@]}"; do
  read -r status seconds <"$logs/$((i + 1)).result"
  result=ok
  [ "$status" = 0 ] || { result="FAILED ($status)"; failed=1; }
  printf '\n--- %s: %s after %d s ---\n' "${names[$i]}" "$result" "$seconds"
  cat "$logs/$((i + 1))"
  [ -z "${STEP_TIMES:-}" ] || printf '%s\t%s\t%s\n' "${names[$i]}" "$seconds" "$result" >>"$STEP_TIMES"
done
exit "$failed"
