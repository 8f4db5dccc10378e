#!/usr/bin/env bash
# Builds what `bulkq serve` needs with plain cargo (ADR 0067): the site under target/site
# (the frontend compiled to wasm32, its wasm-bindgen glue, the stylesheet, public/) and the
# server binary target/<profile>/bulkq.
#
#   scripts/build.sh [debug|release]   the site and the server
#   scripts/build.sh site              the debug site only (the tests build the server)
#
# With BULKQ_LINT=1 every workspace crate is compiled through clippy-driver with warnings
# denied, so linting costs no second compile of the tree (see scripts/lint-env.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

mode="${1:-debug}"
[ -n "${BULKQ_LINT:-}" ] && source scripts/lint-env.sh

site() {
  local profile=$1 cargo_profile wasm_opt=()
  cargo_profile=dev
  if [ "$profile" = release ]; then
    cargo_profile=wasm-release
    wasm_opt=(--wasm-opt .tools/node_modules/.bin/wasm-opt)
  fi
  cargo build --quiet -p frontend --lib --target wasm32-unknown-unknown --profile "$cargo_profile"
  local out_dir=$profile
  [ "$cargo_profile" = dev ] && out_dir=debug
  cargo run --quiet -p site-builder -- \
    "target/wasm32-unknown-unknown/$out_dir/frontend.wasm" target/site "${wasm_opt[@]}"
}

case "$mode" in
  debug) site debug; cargo build --quiet -p server --bin bulkq ;;
  release) site release; cargo build --quiet --release -p server --bin bulkq ;;
  site) site debug ;;
  *) echo "usage: $0 [debug|release|site]" >&2; exit 2 ;;
esac
