#!/usr/bin/env python3
"""Microsoft Presidio as a redctx external detector (docs/detector-protocol.md).

Runs Presidio's AnalyzerEngine with a local spaCy model, CPU only, no network at request
time, and answers redctx's newline-delimited JSON requests with spans at code-point
offsets. The entity mapping and the options follow the reference's `presidio` adapter
(spec 5.12); see README.md in this directory for installation.

Options (pass them from a wrapper script; the daemon starts the program without any):
  --model NAME          spaCy model package (default en_core_web_lg)
  --language CODE       analyzer language (default en)
  --threshold X         minimum score, 0..1 (default 0.5)
  --entities A|B        only these Presidio entity types
  --include-dates       report DATE_TIME as SENSITIVE (skipped by default)
  --map TYPE:CAT|...    extra or replaced entity → category mappings
"""

import argparse
import json
import sys
import unicodedata

CATEGORIES = {
    "CLIENT", "ORG", "PERSON", "SENSITIVE", "ENTITY", "EMAIL", "PHONE", "URL", "HANDLE",
    "SECRET", "SSN", "CARD", "IP", "ID", "DOMAIN", "IBAN", "MAC", "DOB", "PASSPORT",
    "DRIVER_ID", "CONNECTION", "SERVICE_ACCOUNT", "UNICODE_CONTROL", "PROMPT_INJECTION",
}

ENTITY_MAP = {
    "PERSON": "PERSON",
    "ORGANIZATION": "ORG",
    "EMAIL_ADDRESS": "EMAIL",
    "PHONE_NUMBER": "PHONE",
    "US_SSN": "SSN",
    "IP_ADDRESS": "IP",
    "URL": "URL",
    "CREDIT_CARD": "CARD",
    "IBAN_CODE": "IBAN",
    "US_DRIVER_LICENSE": "DRIVER_ID",
    "US_PASSPORT": "PASSPORT",
    "LOCATION": "SENSITIVE",
    "NRP": "SENSITIVE",
    "MEDICAL_LICENSE": "ID",
    "US_BANK_NUMBER": "ID",
    "US_ITIN": "ID",
    "UK_NHS": "ID",
    "CRYPTO": "SECRET",
}

# Texts longer than this are analysed in chunks cut at paragraph or line breaks, with
# this much overlap so an entity on a cut is seen whole by one chunk.
CHUNK_CHARS = 100_000
OVERLAP_CHARS = 1_000


def parse_args():
    p = argparse.ArgumentParser(description="Presidio detector for redctx")
    p.add_argument("--model", default="en_core_web_lg")
    p.add_argument("--language", default="en")
    p.add_argument("--threshold", type=float, default=0.5)
    p.add_argument("--entities", default="")
    p.add_argument("--include-dates", action="store_true")
    p.add_argument("--map", default="")
    args = p.parse_args()
    if not 0.0 <= args.threshold <= 1.0:
        p.error("--threshold must be between 0 and 1")
    mapping = dict(ENTITY_MAP)
    if args.include_dates:
        mapping["DATE_TIME"] = "SENSITIVE"
    for item in filter(None, args.map.split("|")):
        kind, _, category = item.partition(":")
        if not kind or category not in CATEGORIES:
            p.error("--map entries are TYPE:CATEGORY with a redctx category")
        mapping[kind.strip()] = category
    args.mapping = mapping
    args.entity_list = [e for e in args.entities.split("|") if e] or None
    return args


def load_engine(args):
    """The analyzer with the local model only (spaCy loads it from site-packages)."""
    from importlib.metadata import version as package_version

    import spacy
    from presidio_analyzer import AnalyzerEngine
    from presidio_analyzer.nlp_engine import NlpEngineProvider

    if not spacy.util.is_package(args.model):
        print(f"spaCy model {args.model} is not installed; see adapters/presidio/README.md",
              file=sys.stderr, flush=True)
        sys.exit(1)
    provider = NlpEngineProvider(nlp_configuration={
        "nlp_engine_name": "spacy",
        "models": [{"lang_code": args.language, "model_name": args.model}],
    })
    engine = AnalyzerEngine(nlp_engine=provider.create_engine(),
                            supported_languages=[args.language])
    model_version = spacy.util.get_package_version(args.model) or "unknown"
    options = f"t{args.threshold:g}" + ("+dates" if args.include_dates else "")
    if args.entity_list or args.map:
        options += "+custom"
    # presidio_analyzer has no __version__ attribute; the distribution's metadata does.
    presidio_version = package_version("presidio-analyzer")
    version = f"{presidio_version}/{args.model}-{model_version}/{options}"
    return engine, version


def chunks(text):
    """(offset, piece) pieces of at most CHUNK_CHARS, cut after a blank line or a line
    break when there is one in the last quarter, overlapping by OVERLAP_CHARS."""
    if len(text) <= CHUNK_CHARS:
        yield 0, text
        return
    start = 0
    while start < len(text):
        end = min(start + CHUNK_CHARS, len(text))
        if end < len(text):
            floor = start + CHUNK_CHARS * 3 // 4
            cut = text.rfind("\n\n", floor, end)
            if cut < 0:
                cut = text.rfind("\n", floor, end)
            if cut >= 0:
                end = cut + 1
        yield start, text[start:end]
        if end >= len(text):
            return
        start = max(end - OVERLAP_CHARS, start + 1)


def detect(engine, args, text):
    found = set()
    for offset, piece in chunks(text):
        results = engine.analyze(text=piece, language=args.language,
                                 entities=args.entity_list,
                                 score_threshold=args.threshold)
        for r in results:
            category = args.mapping.get(r.entity_type)
            if category is None:
                continue
            start, end = offset + r.start, offset + r.end
            # A span ends after any combining marks that follow it.
            while end < len(text) and unicodedata.combining(text[end]):
                end += 1
            if 0 <= start < end <= len(text):
                found.add((start, end, category))
    # Nested spans of one category collapse into the outer one.
    spans = sorted(found, key=lambda s: (s[0], -s[1]))
    kept = []
    for s in spans:
        if any(k[2] == s[2] and k[0] <= s[0] and s[1] <= k[1] for k in kept):
            continue
        kept.append(s)
    return [{"start": s, "end": e, "category": c} for s, e, c in kept]


def main():
    args = parse_args()
    engine, version = load_engine(args)
    out = sys.stdout

    def send(obj):
        out.write(json.dumps(obj) + "\n")
        out.flush()

    send({"type": "hello", "protocol": 1, "name": "presidio", "version": version,
          "protected_paths": []})
    for line in sys.stdin:
        try:
            req = json.loads(line)
        except ValueError:
            return 2
        rid = req.get("id") if isinstance(req, dict) else None
        text = req.get("text") if isinstance(req, dict) else None
        if not isinstance(req, dict) or req.get("type") != "detect" \
                or not isinstance(rid, int) or not isinstance(text, str):
            send({"type": "error", "id": rid})
            continue
        try:
            spans = detect(engine, args, text)
        except Exception:  # never let a text's trouble end the process or quote it
            send({"type": "error", "id": rid})
            continue
        send({"type": "spans", "id": rid, "spans": spans})
    return 0


if __name__ == "__main__":
    sys.exit(main())
