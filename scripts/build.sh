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

# The site from the frontend built with cargo profile $1 (`dev` or `wasm-release`, whose
# module wasm-opt then shrinks).
site() {
  local cargo_profile=$1 out_dir=$1 wasm_opt=()
  if [ "$cargo_profile" = dev ]; then
    out_dir=debug
  else
    wasm_opt=(--wasm-opt .tools/node_modules/.bin/wasm-opt)
  fi
  cargo build --quiet -p frontend --lib --target wasm32-unknown-unknown --profile "$cargo_profile"
  cargo run --quiet -p site-builder -- \
    "target/wasm32-unknown-unknown/$out_dir/frontend.wasm" target/site "${wasm_opt[@]}"
}

case "$mode" in
  debug) site dev; cargo build --quiet -p server --bin bulkq ;;
  release) site wasm-release; cargo build --quiet --release -p server --bin bulkq ;;
  site) site dev ;;
  *) echo "usage: $0 [debug|release|site]" >&2; exit 2 ;;
esac
