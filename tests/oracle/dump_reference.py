#!/usr/bin/env python3
"""Differential oracle: runs the reference redactor (redacted-context-mcp 0.10.1)
over a batch of files and paths and prints everything as one JSON document.

Input (stdin, JSON):
    {"root": "/abs/dir", "config_path": "/abs/file.toml" | null, "salt": "...",
     "modes": ["strict", "balanced"], "profiles": ["default", "extended"],
     "files": ["rel/path", ...], "paths": ["rel/path", ...],
     "include_non_text": false}

Output (stdout, JSON, UTF-8):
    {"reference_version": "0.10.1",
     "policy": {"salt", "salt_source", "detector_profile", "clients", "organizations",
                "people", "terms", "allow", "root_terms",
                "alias_groups": [{"canonical", "category", "aliases"}]},
     "files": {rel: {"is_text": bool, "bytes": n, "chars": n, "decoded_sha256": hex}},
     "path_ids": {rel: "@p_<12hex>"},
     "runs": [{"mode", "profile",
               "files": {rel: {"preserve": OUT, "flat": OUT}},
               "paths": {rel: OUT}}]}
    where OUT = {"text": str, "counts": {CATEGORY: n}} or {"error": "<ExceptionType>: <msg>"}.

Files are decoded the way the reference reads them (UTF-8, one leading BOM stripped,
invalid bytes replaced by U+FFFD). `is_text` is the reference's text sniffing of the
first 4096 bytes; the caller decides what to do with non-text files (the reference
refuses to print them). Each (mode, profile) uses one Redactor for all files, as the
reference server does, and counts are the receipt delta of each single call.
One invocation does the whole batch; independent (mode, profile) runs are spread over
forked workers (`REDCTX_ORACLE_JOBS`, default: one per CPU). The environment is
sanitised first so no user setting (terms, profile, state dir) leaks into the oracle.
"""

from __future__ import annotations

import atexit
import dataclasses
import hashlib
import json
import multiprocessing
import os
import shutil
import sys
import tempfile
from pathlib import Path

REF_ENV = (
    "REDACTED_CONTEXT_TERMS",
    "REDACTED_CONTEXT_SALT",
    "REDACTED_CONTEXT_DETECTOR_PROFILE",
    "REDACTED_CONTEXT_STATE_DIR",
)


def main() -> int:
    job = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    for name in REF_ENV:
        os.environ.pop(name, None)
    state_dir = tempfile.mkdtemp(prefix="redctx-oracle-state-")
    # The reference writes nothing we read back; leave no directory behind.
    atexit.register(shutil.rmtree, state_dir, ignore_errors=True)
    os.environ["REDACTED_CONTEXT_STATE_DIR"] = state_dir
    salt = job.get("salt") or ""
    if salt:
        os.environ["REDACTED_CONTEXT_SALT"] = salt

    # Imported after the environment is prepared.
    from importlib.metadata import version

    from redacted_context_mcp import config as ref_config
    from redacted_context_mcp import filesystem as ref_fs
    from redacted_context_mcp import paths as ref_paths
    from redacted_context_mcp import redaction as ref_redaction

    root = Path(job["root"]).expanduser().resolve()
    config_path = job.get("config_path")
    config = ref_config.load_config(root, Path(config_path).expanduser().resolve() if config_path else None)

    out: dict = {
        "reference_version": version("redacted-context-mcp"),
        "policy": {
            "salt": config.salt,
            "salt_source": config.salt_source,
            "detector_profile": config.detector_profile,
            "clients": list(config.clients),
            "organizations": list(config.organizations),
            "people": list(config.people),
            "terms": list(config.terms),
            "allow": list(config.allow),
            "root_terms": list(config.root_terms),
            "alias_groups": [
                {"canonical": g.canonical, "category": g.category, "aliases": list(g.aliases)}
                for g in config.alias_groups
            ],
        },
        "files": {},
        "path_ids": {},
        "runs": [],
    }

    texts: dict[str, str] = {}
    for rel in job.get("files", []):
        data = (root / rel).read_bytes()
        text = data.decode("utf-8-sig", errors="replace")
        texts[rel] = text
        out["files"][rel] = {
            "is_text": ref_fs.is_probably_text_bytes(data[: ref_fs.TEXT_DETECTION_PREFIX_BYTES]),
            "bytes": len(data),
            "chars": len(text),
            "decoded_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        }

    paths = job.get("paths", [])
    for rel in paths:
        out["path_ids"][rel] = "@" + ref_paths.path_id(rel, config.salt)

    include_non_text = bool(job.get("include_non_text", False))
    selected = [rel for rel in texts if include_non_text or out["files"][rel]["is_text"]]
    combos = [(mode, profile) for profile in job.get("profiles", ["default"]) for mode in job.get("modes", ["strict"])]

    def one_run(combo: tuple[str, str]) -> dict:
        mode, profile = combo
        redactor = ref_redaction.Redactor(dataclasses.replace(config, detector_profile=profile), mode=mode)
        run = {"mode": mode, "profile": profile, "files": {}, "paths": {}}
        for rel in selected:
            text = texts[rel]
            run["files"][rel] = {
                "preserve": call(redactor, lambda: redactor.redact(text, preserve_line_count=True)),
                "flat": call(redactor, lambda: redactor.redact(text, preserve_line_count=False)),
            }
        for rel in paths:
            run["paths"][rel] = call(redactor, lambda: redactor.redact_path(rel))
        return run

    workers = min(len(combos), int(os.environ.get("REDCTX_ORACLE_JOBS") or os.cpu_count() or 1))
    if workers > 1 and "fork" in multiprocessing.get_all_start_methods():
        # Independent (mode, profile) runs on forked workers: the decoded texts and the
        # loaded config are inherited, only the results travel back.
        global _RUN
        _RUN = one_run
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            out["runs"] = pool.map(_run_in_worker, combos, chunksize=1)
    else:
        out["runs"] = [one_run(combo) for combo in combos]

    sys.stdout.buffer.write(json.dumps(out, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    sys.stdout.buffer.write(b"\n")
    return 0


_RUN = None


def _run_in_worker(combo):
    return _RUN(combo)


def call(redactor, fn) -> dict:
    """One redaction call with its own receipt delta; failures become an error entry."""
    before = redactor.stats_snapshot()
    try:
        text = fn()
    except Exception as exc:  # noqa: BLE001 - any failure is part of the observed behaviour
        return {"error": f"{type(exc).__name__}: {exc}"}
    except SystemExit as exc:
        return {"error": f"SystemExit: {exc}"}
    return {"text": text, "counts": redactor.receipt(before)["counts_by_category"]}


if __name__ == "__main__":
    sys.exit(main())
