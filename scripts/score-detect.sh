#!/usr/bin/env bash
# Scores the built-in detector layer ALONE (no reference baseline stages) on the
# CredData dev split: builds daemon/examples/detect_cat.rs in release, runs the shared
# scorer, and prints the overall and per-category figures.
#
#   scripts/score-detect.sh [JSON_OUT]      (default /tmp/detect.json)
#
# Needs ../shared/eval (the split and score_secrets.py) next to the repository, or
# EVAL_DIR pointing at it.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
eval_dir="${EVAL_DIR:-$(cd "$(dirname "$0")/.." && pwd)/../shared/eval}"
json="${1:-/tmp/detect.json}"
target="${CARGO_TARGET_DIR:-$here/target}"
cargo build --quiet --release -p redctx-daemon --example detect_cat --manifest-path "$here/Cargo.toml"
bin="$target/release/examples/detect_cat"
python3 "$eval_dir/score_secrets.py" "$eval_dir/creddata-dev" --jobs 2 \
  --cmd "$bin --root {root} {path}" --json "$json" --details "${json%.json}-labels.jsonl" > "${json%.json}.out"
tail -n 1 "${json%.json}.out"
python3 - "$json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(f"overall: recall_full={d['recall_full']}% recall_overlap={d['recall_overlap']}% "
      f"false_values={d['false_values']}% false_lines={d['false_lines']}% "
      f"false_values_span_given={d['false_values_span_given']}% (T={d['T']} F_values={d['F_values']} "
      f"F_lines={d['F_lines']} refused={d['refused_files']} misaligned={d['misaligned_files']})")
print(f"{'component':34} {'T':>5} {'full%':>7} {'overlap%':>9} {'F':>5} {'falseval%':>9}")
for name, c in d['by_component'].items():
    print(f"{name[:34]:34} {c['T']:5} {c['recall_full']:7.1f} {c['recall_overlap']:9.1f} {c['F_values']:5} {c['false_values']:9.1f}")
PY
