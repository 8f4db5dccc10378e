#!/usr/bin/env bash
# Installs the build and test tools bulkq needs, each only when it is missing or at the wrong
# version, so a second run is fast and prints nothing.
#
#   scripts/install-tools.sh build     the wasm32 target (wasm-bindgen is a library of the
#                                      workspace's site-builder, ADR 0067)
#   scripts/install-tools.sh release   the above plus wasm-opt (npm binaryen), for --release
#   scripts/install-tools.sh test      the build tools plus Chromium, the Playwright packages,
#                                      schemathesis (PyPI, in .tools/schemathesis) and the test
#                                      mail relay aiosmtpd (PyPI, in .tools/aiosmtpd)
#
# Versions are pinned to what builds with this toolchain (see ARCHITECTURE.md, "Build").
set -euo pipefail
cd "$(dirname "$0")/.."

BINARYEN_VERSION=132        # Debian's binaryen 108 produces a WASM that never hydrates
SCHEMATHESIS_VERSION=4.32.5 # the API contract check (scripts/api-contract.sh)
AIOSMTPD_VERSION=1.4.6      # the TLS and AUTH mail relay of the tests (caseload/src/testing/tls_relay.py)
CRYPTOGRAPHY_VERSION=50.0.2 # its throwaway certificates

say() { printf '[install] %s\n' "$*"; }

wasm_target() {
  rustup target list --installed | grep -qx wasm32-unknown-unknown && return
  say "adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown
}

binaryen() {
  [ -x .tools/node_modules/.bin/wasm-opt ] && return
  say "installing wasm-opt (npm binaryen@$BINARYEN_VERSION) into .tools/"
  npm install --silent --no-audit --no-fund --prefix .tools "binaryen@$BINARYEN_VERSION" >/dev/null
}

chromium() {
  [ -x /usr/bin/chromium ] && return
  say "installing Debian's chromium for the browser tests"
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
}

playwright_packages() {
  # Reinstall when package-lock.json changed since the last install.
  if [ -d end2end/node_modules ] && [ end2end/node_modules/.package-lock.json -nt end2end/package-lock.json ]; then
    return
  fi
  say "installing the Playwright packages (npm ci; browsers come from Debian, not npx playwright install)"
  (cd end2end && npm ci --silent --no-audit --no-fund >/dev/null)
}

schemathesis() {
  local venv=.tools/schemathesis
  if "$venv/bin/schemathesis" --version 2>/dev/null | grep -q " $SCHEMATHESIS_VERSION\$"; then return; fi
  say "installing schemathesis $SCHEMATHESIS_VERSION (PyPI) into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION"
}

smtp_relay() {
  local venv=.tools/aiosmtpd want="aiosmtpd==$AIOSMTPD_VERSION cryptography==$CRYPTOGRAPHY_VERSION"
  if [ "$(cat "$venv/installed" 2>/dev/null)" = "$want" ]; then return; fi
  say "installing $want (PyPI) into $venv"
  python3 -m venv "$venv"
  # shellcheck disable=SC2086 # two requirements
  "$venv/bin/pip" install --quiet --disable-pip-version-check $want
  echo "$want" >"$venv/installed"
}

build_tools() { wasm_target; }

case "${1:-build}" in
  build) build_tools ;;
  release) build_tools; binaryen ;;
  test) build_tools; chromium; playwright_packages; schemathesis; smtp_relay ;;
  *) echo "usage: $0 [build|release|test]" >&2; exit 2 ;;
esac
