#!/usr/bin/env bash
# The project's main job on a fresh checkout: build both binaries (release) and serve a
# root to an MCP client over stdin/stdout. Extra arguments go to `redctx mcp`.
#   scripts/serve.sh /abs/path/to/repo [--mode strict|balanced|code] ...
# Build output goes to stderr; stdout stays the MCP channel.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ $# -lt 1 ]]; then
    echo "usage: scripts/serve.sh ROOT [redctx mcp options]" >&2
    exit 2
fi
root="$1"
shift
cargo build --quiet --release --manifest-path "$here/Cargo.toml" --bin redctx --bin redctxd >&2
exec "$here/target/release/redctx" mcp --root "$root" "$@"
