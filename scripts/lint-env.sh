# Sourced by the build and test scripts: compile every workspace crate through clippy-driver
# with warnings denied, the lints of `cargo clippy --all-targets -- -D warnings` as a side
# effect of the build itself (ADR 0067). `cargo clippy` would check the whole dependency tree
# a second time in check mode; the wrapper only applies to the workspace's own crates, so the
# dependencies' build artifacts stay shared with every other build.
RUSTC_WORKSPACE_WRAPPER="$(rustc --print sysroot)/bin/clippy-driver"
# clippy-driver's argument list, as `cargo clippy -- -D warnings` would pass it.
CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
export RUSTC_WORKSPACE_WRAPPER CLIPPY_ARGS
