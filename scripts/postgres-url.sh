#!/usr/bin/env bash
# Prints the PostgreSQL server URL the tests should use, or nothing when none answers:
# TEST_DATABASE_URL, else a postgres DATABASE_URL, else the local default. Each test creates
# and drops its own databases on that server.
set -euo pipefail
url="${TEST_DATABASE_URL:-}"
if [ -z "$url" ] && [[ "${DATABASE_URL:-}" == postgres* ]]; then url="$DATABASE_URL"; fi
url="${url:-postgres://postgres@127.0.0.1:5432/postgres}"
# host:port from postgres://[user[:pass]@]host[:port][/db][?opts]
rest="${url#*://}"; rest="${rest##*@}"; hostport="${rest%%/*}"; hostport="${hostport%%\?*}"
host="${hostport%%:*}"; port="${hostport##*:}"
[ "$port" = "$hostport" ] && port=5432
if timeout 3 bash -c "exec 3<>/dev/tcp/$host/$port" 2>/dev/null; then
  echo "$url"
fi
