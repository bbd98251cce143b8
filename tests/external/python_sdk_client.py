"""Drives `redctx mcp` with the official MCP Python SDK (the `mcp` package), as an agent's
client would: start the shim over stdio, list the tools, call each tool once (the GitHub
tools other than `redctx_github_repos` are listed only: they would reach the network).

Run by tests/external_clients.rs with the interpreter of .venv-clients
(scripts/setup-clients.sh). Usage:

    python_sdk_client.py --raw VALUE [--raw VALUE ...] \
        --expect-placeholder CAT [...] -- COMMAND [ARG ...]

COMMAND is the server to start (`redctx mcp --root ROOT ...`). The root must hold
`docs/notes.md` with the raw values passed as --raw, and each CAT passed as
--expect-placeholder must show up as a `[CAT_<32hex>]` placeholder when that file is read.
The server gets this process's REDCTX_* and REDACTED_CONTEXT_* variables (the SDK passes
only a short safe list of the parent's environment on its own).

The session runs twice: once with the `initialize` handshake (mode "legacy") and once
with the SDK's default negotiation (mode "auto", which tries the stateless
`server/discover` first). Exits 0 and prints one summary line per session when every
check holds; any failure raises (non-zero exit, traceback on stderr).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import os
import re
import sys

from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

TOOLS = [
    "redctx_tree",
    "redctx_list",
    "redctx_read",
    "redctx_search",
    "redctx_retrieve",
    "redctx_stat",
    "redctx_bundle",
    "redctx_doctor",
    "redctx_audit",
    "redctx_refresh_index",
    "redctx_github_repos",
    "redctx_github_list_issues",
    "redctx_github_read_issue",
    "redctx_github_search_issues",
]

NOTES = "docs/notes.md"

# One valid call per tool that needs no network (the other GitHub tools would reach
# api.github.com). The file-content calls must show the notes file's placeholders.
CALLS: list[tuple[str, dict, bool]] = [
    ("redctx_tree", {"path": ".", "max_depth": 3}, False),
    ("redctx_list", {"path": "docs"}, False),
    ("redctx_read", {"path": NOTES}, True),
    ("redctx_search", {"query": "Contact", "context": 1}, True),
    ("redctx_retrieve", {"query": "contact owner password"}, True),
    ("redctx_stat", {"path": NOTES}, False),
    ("redctx_bundle", {"paths": ["docs"]}, True),
    ("redctx_doctor", {}, False),
    ("redctx_audit", {}, False),
    ("redctx_refresh_index", {}, False),
    ("redctx_github_repos", {}, False),
]

PATH_ID = re.compile(r"@p_[0-9a-f]{12}")


def server_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k.startswith(("REDCTX_", "REDACTED_CONTEXT_"))}


def check_no_raw(where: str, blob: str, raw: list[str]) -> None:
    for value in raw:
        if value in blob:
            raise AssertionError(f"{where}: a raw private value reached the client")


async def session(mode: str, params: StdioServerParameters, raw: list[str], cats: list[str]) -> str:
    async with Client(params, mode=mode, read_timeout_seconds=60) as client:
        listed = await client.list_tools()
        names = [t.name for t in listed.tools]
        if names != TOOLS:
            raise AssertionError(f"{mode}: tools/list gave {names}, want {TOOLS}")
        for t in listed.tools:
            if t.output_schema is None or t.input_schema.get("additionalProperties") is not False:
                raise AssertionError(f"{mode}: {t.name}: missing outputSchema or open inputSchema")
        check_no_raw(f"{mode}: tools/list", listed.model_dump_json(by_alias=True), raw)

        for name, args, shows_content in CALLS:
            # The SDK validates structuredContent against the tool's outputSchema here.
            result = await client.call_tool(name, args)
            dumped = result.model_dump_json(by_alias=True)
            if result.is_error:
                raise AssertionError(f"{mode}: {name} {args} answered an error: {dumped}")
            if len(result.content) != 1 or result.content[0].type != "text":
                raise AssertionError(f"{mode}: {name}: want exactly one text block: {dumped}")
            text = result.content[0].text
            sc = result.structured_content or {}
            if sc.get("text") != text or not isinstance(sc.get("receipt"), dict):
                raise AssertionError(f"{mode}: {name}: structuredContent must repeat the text and carry a receipt")
            if not text.strip():
                raise AssertionError(f"{mode}: {name}: empty answer")
            check_no_raw(f"{mode}: {name}", dumped, raw)
            if shows_content:
                for cat in cats:
                    if not re.search(r"\[" + cat + r"_[0-9a-f]{32}\]", text):
                        raise AssertionError(f"{mode}: {name}: no [{cat}_…] placeholder in: {text}")
                counts = sc["receipt"].get("counts_by_category", {})
                for cat in cats:
                    if not counts.get(cat):
                        raise AssertionError(f"{mode}: {name}: receipt counts no {cat}: {sc['receipt']}")
            if name in ("redctx_list", "redctx_stat", "redctx_tree") and not PATH_ID.search(text):
                raise AssertionError(f"{mode}: {name}: no opaque @p_ id in: {text}")
        return f"mode={mode} protocol={client.protocol_version}: {len(names)} tools listed, {len(CALLS)} calls ok"


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--raw", action="append", default=[], help="a raw value that must never be shown")
    ap.add_argument("--expect-placeholder", action="append", default=[], help="a placeholder category")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not cmd or not a.raw or not a.expect_placeholder:
        ap.error("need --raw, --expect-placeholder and -- COMMAND")
    params = StdioServerParameters(command=cmd[0], args=cmd[1:], env=server_env())
    version = importlib.metadata.version("mcp")
    for mode in ("legacy", "auto"):
        summary = await session(mode, params, a.raw, a.expect_placeholder)
        print(f"python-sdk mcp {version}: {summary}", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
    sys.exit(0)
