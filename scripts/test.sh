#!/usr/bin/env bash
# The project's test command (README): formatting, lints, then every test of the
# workspace in a debug build. The engine differential tests need the reference oracle
# (scripts/setup-oracle.sh); .ci/run sets it up first.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

step() {
    echo "==> $*"
    local started=$SECONDS
    "$@"
    echo "    ($*: $((SECONDS - started))s)"
}

step cargo fmt --all -- --check
step cargo clippy --workspace --all-targets -- -D warnings
step cargo test --workspace --no-fail-fast
