#!/usr/bin/env bash
# Creates (once) .venv-presidio, where tests/detector_conformance.rs runs the Presidio
# adapter (adapters/presidio/) for real: presidio-analyzer and spaCy pinned below, plus a
# *blank* English spaCy pipeline packaged here as `en_redctx_blank` (no download: spaCy's
# trained models are fetched from GitHub, which CI machines may not reach). With the
# blank pipeline Presidio's pattern recognisers (email, phone, card, IBAN, IP, URL…) run
# and its NER finds nothing, which is enough to prove the adapter speaks the protocol.
# A real model installed into the same venv (`python -m spacy download en_core_web_sm`)
# is preferred by the test when present. Idempotent.
set -euo pipefail

PRESIDIO_VERSION="2.2.366"
SPACY_VERSION="3.8.18"
BLANK="en_redctx_blank"

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$repo/.venv-presidio"
py="$venv/bin/python"

ready() {
    "$py" - "$PRESIDIO_VERSION" "$SPACY_VERSION" "$BLANK" 2>/dev/null <<'PY'
import sys, importlib.metadata as m, spacy
want_p, want_s, blank = sys.argv[1:]
ok = m.version("presidio-analyzer") == want_p and m.version("spacy") == want_s
sys.exit(0 if ok and spacy.util.is_package(blank) else 1)
PY
}

if [[ -x "$py" ]] && ready; then
    echo "setup-presidio: presidio-analyzer==$PRESIDIO_VERSION, spacy==$SPACY_VERSION and $BLANK already present"
    exit 0
fi

if [[ ! -x "$py" ]]; then
    echo "setup-presidio: creating .venv-presidio"
    python3 -m venv "$venv"
fi
echo "setup-presidio: installing presidio-analyzer==$PRESIDIO_VERSION spacy==$SPACY_VERSION"
"$py" -m pip install --quiet --disable-pip-version-check \
    "presidio-analyzer==$PRESIDIO_VERSION" "spacy==$SPACY_VERSION"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$py" - "$work/pipeline" <<'PY'
import sys, spacy
nlp = spacy.blank("en")
nlp.meta["name"] = "redctx_blank"
nlp.meta["version"] = "1.0.0"
nlp.to_disk(sys.argv[1])
PY
mkdir -p "$work/package"
if ! "$py" -m spacy package "$work/pipeline" "$work/package" --name redctx_blank \
    --version 1.0.0 >"$work/package.log" 2>&1; then
    cat "$work/package.log" >&2
    exit 1
fi
"$py" -m pip install --quiet --disable-pip-version-check \
    "$work/package/$BLANK-1.0.0/dist/$BLANK-1.0.0.tar.gz"

if ! ready; then
    echo "setup-presidio: .venv-presidio is not usable after installation" >&2
    exit 1
fi
echo "setup-presidio: ready ($py)"
