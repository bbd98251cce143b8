#!/usr/bin/env bash
# Creates (once) the Python venv that holds the reference implementation,
# redacted-context-mcp 0.10.1, used as the differential oracle by the engine tests
# and the throughput bench. Idempotent: a venv that already has the pinned version
# is left untouched. Installs nothing else.
set -euo pipefail

REF_PACKAGE="redacted-context-mcp"
REF_VERSION="0.10.1"

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$repo/.venv-oracle"
py="$venv/bin/python"

installed_version() {
    "$py" -c 'import importlib.metadata as m; print(m.version("redacted-context-mcp"))' 2>/dev/null || true
}

if [[ -x "$py" && "$(installed_version)" == "$REF_VERSION" ]]; then
    echo "setup-oracle: $REF_PACKAGE==$REF_VERSION already present in .venv-oracle"
    exit 0
fi

if [[ ! -x "$py" ]]; then
    echo "setup-oracle: creating .venv-oracle"
    python3 -m venv "$venv"
fi

echo "setup-oracle: installing $REF_PACKAGE==$REF_VERSION"
"$py" -m pip install --quiet --disable-pip-version-check --no-deps "$REF_PACKAGE==$REF_VERSION"

got="$(installed_version)"
if [[ "$got" != "$REF_VERSION" ]]; then
    echo "setup-oracle: expected $REF_PACKAGE $REF_VERSION in .venv-oracle, found '${got:-nothing}'" >&2
    exit 1
fi
"$py" -c 'import redacted_context_mcp.redaction, redacted_context_mcp.config' 
echo "setup-oracle: ready ($py)"
