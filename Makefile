# The two commands the README promises, plus the pieces they are made of.
# Every install step is idempotent: see scripts/install-tools.sh.

.PHONY: run test build run-release build-release dist tools e2e chaos bench bench-peers

# Build (debug, the fastest build) and start the dashboard on http://127.0.0.1:3000 with the
# embedded SQLite database under data/, demo users and a demo caseload.
run: build
	./target/debug/bulkq serve --demo

# Formatting, one linted build, all Rust tests on SQLite and PostgreSQL, then the API contract
# check and the Playwright suite side by side; ends with a table of each step's time.
test:
	scripts/test.sh

build:
	scripts/install-tools.sh build
	scripts/build.sh debug

# Optimised build (about 16 minutes cold): smaller WASM, faster server.
build-release:
	scripts/install-tools.sh release
	scripts/build.sh release

# The release tarball an operator installs (binary, site, example systemd unit and settings)
# in target/dist/, then a check that it serves from an empty directory with no toolchain.
dist:
	scripts/dist.sh

run-release: build-release
	./target/release/bulkq serve --demo

tools:
	scripts/install-tools.sh test

# Just the browser tests, against the current debug build.
e2e:
	scripts/e2e.sh

# The cluster chaos test at full size: 3 `bulkq serve` nodes on the local PostgreSQL run
# 5,000 checkpointing tasks while one node is SIGKILLed and restarted every 2-3 s
# (`make test` runs it with 600 tasks).
chaos:
	BULKQ_CHAOS_TASKS=5000 BULKQ_REQUIRE_POSTGRES=1 TEST_DATABASE_URL="$$(scripts/postgres-url.sh)" \
	  cargo test -p server --test it cluster::nodes_killed_at_random -- --nocapture

# The benchmark suite (release builds, 7-14 minutes at a million people): queue drain,
# latency and aged-table figures, then the bulk actions at scale. See scripts/bench.sh.
bench:
	scripts/bench.sh

# bulkq against graphile-worker 0.18 (default and batched) on the local PostgreSQL, three
# interleaved repetitions (about 3 minutes after the release build): medians and ratios.
# Installs Node 22 and graphile-worker from the npm registry when missing. Not part of
# `make test`. See scripts/bench-peers.sh.
bench-peers:
	scripts/bench-peers.sh
