#!/usr/bin/env bash
# The project's test command (README): formatting, lints, then every test of the
# workspace in a debug build. The differential tests need the reference oracle, which
# scripts/setup-oracle.sh installs into .venv-oracle/ (idempotent; skipped with
# REDCTX_SKIP_ORACLE=1). The external-client tests need the MCP Python SDK and the MCP
# Inspector, which scripts/setup-clients.sh installs into .venv-clients/ and
# tests/external/node/ (idempotent; skipped with REDCTX_SKIP_CLIENTS=1).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

step() {
    echo "==> $*"
    local started=$SECONDS
    "$@"
    echo "    ($*: $((SECONDS - started))s)"
}

if [[ "${REDCTX_SKIP_ORACLE:-}" != "1" ]]; then
    step scripts/setup-oracle.sh
fi
if [[ "${REDCTX_SKIP_CLIENTS:-}" != "1" ]]; then
    step scripts/setup-clients.sh
fi
step cargo fmt --all -- --check
step cargo clippy --workspace --all-targets -- -D warnings
step cargo test --workspace --no-fail-fast
