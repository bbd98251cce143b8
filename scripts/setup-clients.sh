#!/usr/bin/env bash
# Installs (once) the external MCP clients that tests/external_clients.rs drives against
# `redctx mcp`, so the MCP surface is checked by clients we did not write:
#   - the official Python SDK, `mcp` pinned below, in .venv-clients/
#   - the MCP Inspector CLI, pinned with its whole dependency tree by
#     tests/external/node/package-lock.json, in tests/external/node/node_modules/ (npm ci)
#   - Presidio, the external detector tests/detector_conformance.rs runs through its
#     adapter, in .venv-presidio/ (scripts/setup-presidio.sh)
# Idempotent: a venv that already has the pinned SDK and a node_modules installed from
# the current lockfile are left untouched. Needs python3 (>= 3.10) and node/npm (>= 18).
set -euo pipefail

MCP_VERSION="2.3.0"

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$repo/.venv-clients"
py="$venv/bin/python"
node_dir="$repo/tests/external/node"
stamp="$node_dir/node_modules/.redctx-lock-sha256"

# --- Python SDK -------------------------------------------------------------------------
installed_version() {
    "$py" -c 'import importlib.metadata as m; print(m.version("mcp"))' 2>/dev/null || true
}

if [[ -x "$py" && "$(installed_version)" == "$MCP_VERSION" ]]; then
    echo "setup-clients: mcp==$MCP_VERSION already present in .venv-clients"
else
    if [[ ! -x "$py" ]]; then
        echo "setup-clients: creating .venv-clients"
        python3 -m venv "$venv"
    fi
    echo "setup-clients: installing mcp==$MCP_VERSION"
    "$py" -m pip install --quiet --disable-pip-version-check "mcp==$MCP_VERSION"
    got="$(installed_version)"
    if [[ "$got" != "$MCP_VERSION" ]]; then
        echo "setup-clients: expected mcp $MCP_VERSION in .venv-clients, found '${got:-nothing}'" >&2
        exit 1
    fi
fi

# --- MCP Inspector CLI --------------------------------------------------------------------
if ! command -v npm >/dev/null 2>&1; then
    echo "setup-clients: npm not found; install Node.js (>= 18) to run the Inspector test" >&2
    exit 1
fi
want_sha="$(sha256sum "$node_dir/package-lock.json" | cut -d' ' -f1)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want_sha" && -f "$node_dir/node_modules/@modelcontextprotocol/inspector/cli/build/cli.js" ]]; then
    echo "setup-clients: MCP Inspector already installed from the current lockfile"
else
    echo "setup-clients: installing the MCP Inspector (npm ci)"
    (cd "$node_dir" && npm ci --no-audit --no-fund --loglevel=error)
    echo "$want_sha" >"$stamp"
fi

# --- Presidio (an external detector) ------------------------------------------------------
"$repo/scripts/setup-presidio.sh"
echo "setup-clients: ready ($py, $node_dir/node_modules, .venv-presidio)"
