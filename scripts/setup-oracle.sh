#!/usr/bin/env bash
# Creates (once) the Python venv that holds the reference implementation,
# redacted-context-mcp 0.10.1, used as the differential oracle by the engine tests
# and the throughput bench. Idempotent: a venv that already has the pinned version
# is left untouched. Also .venv-documents: the same package with its `documents` extra,
# for the documents differential test.
set -euo pipefail

REF_PACKAGE="redacted-context-mcp"
REF_VERSION="0.10.1"

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$repo/.venv-oracle"
py="$venv/bin/python"

installed_version() {
    "$py" -c 'import importlib.metadata as m; print(m.version("redacted-context-mcp"))' 2>/dev/null || true
}

documents_venv() {
    # The reference with its `documents` extra (MarkItDown and the format libraries), in
    # a venv of its own: tests/documents_differential.rs compares extractions with it.
    local dvenv="$repo/.venv-documents" dpy="$repo/.venv-documents/bin/python"
    if [[ -x "$dpy" ]] && "$dpy" -c 'import markitdown, importlib.metadata as m; assert m.version("redacted-context-mcp") == "'"$REF_VERSION"'"; assert int(m.version("lxml").split(".")[0]) < 6' 2>/dev/null; then
        echo "setup-oracle: $REF_PACKAGE[documents]==$REF_VERSION already present in .venv-documents"
        return
    fi
    [[ -x "$dpy" ]] || python3 -m venv "$dvenv"
    echo "setup-oracle: installing $REF_PACKAGE[documents]==$REF_VERSION into .venv-documents"
    # lxml 6 makes MarkItDown's .docx pre-processing (BeautifulSoup, "xml") drop the
    # `w:` prefixes, and every .docx then fails ("Could not find the body element"): pin
    # the lxml the reference was released against.
    "$dpy" -m pip install --quiet --disable-pip-version-check \
        "$REF_PACKAGE[documents]==$REF_VERSION" "lxml<6"
    "$dpy" -c 'import markitdown'
    echo "setup-oracle: ready ($dpy)"
}

if [[ -x "$py" && "$(installed_version)" == "$REF_VERSION" ]]; then
    echo "setup-oracle: $REF_PACKAGE==$REF_VERSION already present in .venv-oracle"
    documents_venv
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
documents_venv
