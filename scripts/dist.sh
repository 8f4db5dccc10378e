#!/usr/bin/env bash
# `make dist`: the release tarball an operator installs, then a check of it.
#
#   target/dist/bulkq-VERSION-linux-ARCH.tar.gz
#     bin/bulkq            the release binary (migrates the database it is given)
#     site/                the dashboard's WASM, JS and CSS, found beside bin/
#     deploy/              an example systemd unit and settings file
#     README.md
#
# The check unpacks it into an empty directory and, with no Rust toolchain on the PATH,
# serves the demo from it: /healthz names the version, a page and its assets load, and
# SIGTERM stops it cleanly.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-tools.sh release
scripts/build.sh release

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)
name="bulkq-$version-linux-$(uname -m)"
stage="target/dist/$name"
rm -rf "$stage" "$stage.tar.gz"
mkdir -p "$stage/bin" "$stage/deploy"
cp target/release/bulkq "$stage/bin/"
cp -r target/site "$stage/site"
cp deploy/bulkq.service deploy/bulkq.toml "$stage/deploy/"
cp README.md "$stage/"
tar -C target/dist -czf "$stage.tar.gz" "$name"
rm -rf "$stage"
echo "built $stage.tar.gz ($(du -h "$stage.tar.gz" | cut -f1))"

# The check, in an empty directory with only the system's tools on the PATH.
check=$(mktemp -d)
pid=""
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$check"' EXIT
tar -C "$check" -xzf "$stage.tar.gz"
plain_path=/usr/local/bin:/usr/bin:/bin
if PATH=$plain_path command -v cargo >/dev/null; then
  echo "dist check: cargo is on $plain_path; the check would not prove the tarball stands alone" >&2
  exit 1
fi
(cd "$check" && exec env -i HOME="$check" PATH="$plain_path" "$name/bin/bulkq" serve --demo \
  --demo-people 100 --listen 127.0.0.1:0 >"$check/node.log" 2>&1) &
pid=$!
url=""
for _ in $(seq 1 300); do
  url=$(sed -n 's/^bulkq is running at \(http:[^ ]*\)$/\1/p' "$check/node.log")
  [ -n "$url" ] && break
  kill -0 "$pid" 2>/dev/null || { cat "$check/node.log"; echo "dist check: the node died" >&2; exit 1; }
  sleep 0.1
done
[ -n "$url" ] || { cat "$check/node.log"; echo "dist check: the node never listened" >&2; exit 1; }
curl -fsS "$url/healthz" | grep -q "\"version\":\"$version\"" \
  || { echo "dist check: /healthz does not name $version" >&2; exit 1; }
curl -fsS "$url/login" | grep -q '/pkg/bulkq.js' \
  || { echo "dist check: the sign-in page does not load the site" >&2; exit 1; }
for asset in bulkq.js bulkq.wasm bulkq.css; do
  curl -fsS -o /dev/null "$url/pkg/$asset" || { echo "dist check: /pkg/$asset missing" >&2; exit 1; }
done
kill -TERM "$pid"
wait "$pid" || { cat "$check/node.log"; echo "dist check: SIGTERM did not stop it cleanly" >&2; exit 1; }
echo "dist check: served $version from the unpacked tarball with no toolchain, stopped cleanly"
