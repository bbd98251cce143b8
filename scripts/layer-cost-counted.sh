#!/usr/bin/env bash
# The detector layer's cost counted under callgrind: the instructions and modelled
# cycles of one warm round of the engine bench (benches/engine_throughput.rs, generated
# corpus), with the layer off and on, per mode. Unlike the bench's timings on a shared
# machine, the counts do not move from run to run, so this is the figure to compare
# changes by. Needs valgrind; takes about 5 minutes for `code`, 8 for `balanced` and 12
# for `strict` on our 2-core VM.
#
# Usage: scripts/layer-cost-counted.sh [strict|balanced|code ...]   (default: all three)
#
# A round is counted as the second of two runs minus the first (the first round warms
# the engine's memos); only the engine's `redact` is collected. Instructions alone
# understate the layer: its code is branchier and spread over more of the binary than
# the baseline's regex loops (per instruction, twice the instruction-cache misses and
# 1.4 times the mispredicted branches), which the plain count does not see. Modelled
# cycles add those costs at about the latencies of the EPYC (Zen) cores we run on: an
# instruction a third of a cycle (about three retire per cycle on straight code), a
# mispredicted branch 17, a first-level instruction or data miss 10, a miss of the
# simulated 512 KiB second level 40. The model does not see dependency chains: a
# lazy DFA's loop, each step waiting on the load of the step before, retires far fewer
# than three instructions per cycle. So when the layer spares the baseline such a
# loop, the model misses most of the saving: on the generated corpus, balanced, it
# gave the layer +34% and then +36.5% after the allow stage started from the keyword
# pass's words (2026-12-03), where the bench timed 30.5-31.6% and then 20-24%.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if ! command -v valgrind >/dev/null; then
    echo "layer-cost-counted: valgrind is not installed (apt install valgrind)" >&2
    exit 2
fi
modes=("$@")
if [[ ${#modes[@]} -eq 0 ]]; then
    modes=(strict balanced code)
fi
for mode in "${modes[@]}"; do
    case "$mode" in
    strict | balanced | code) ;;
    *)
        echo "layer-cost-counted: unknown mode '$mode' (strict, balanced or code)" >&2
        exit 2
        ;;
    esac
done

if ! built=$(cargo bench --bench engine_throughput --no-run --message-format=json); then
    echo "layer-cost-counted: the engine bench does not build (see: cargo bench --bench engine_throughput --no-run)" >&2
    exit 1
fi
bench=$(sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' <<<"$built" | tail -n 1)
if [[ -z "$bench" ]]; then
    echo "layer-cost-counted: cargo built no engine_throughput executable" >&2
    exit 1
fi
export REDCTX_SKIP_ORACLE=1 REDCTX_BENCH_DEPS_KB=0
# Generate the corpus natively once; under valgrind it would take minutes.
REDCTX_BENCH_MODES=code REDCTX_BENCH_DETECTORS=off REDCTX_BENCH_ROUNDS=1 "$bench" >/dev/null

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
count() { # mode layer rounds: writes $out/<mode>-<layer>-<rounds>.out
    if ! REDCTX_BENCH_MODES=$1 REDCTX_BENCH_DETECTORS=$2 REDCTX_BENCH_ROUNDS=$3 \
        valgrind --tool=callgrind --branch-sim=yes --cache-sim=yes --LL=524288,8,64 \
        --toggle-collect='*Engine*redact*' --callgrind-out-file="$out/$1-$2-$3.out" \
        "$bench" >"$out/log" 2>&1; then
        echo "layer-cost-counted: the bench failed under callgrind ($1, layer $2):" >&2
        tail -n 20 "$out/log" >&2
        return 1
    fi
}
for mode in "${modes[@]}"; do
    files=()
    for layer in off on; do
        echo "counting $mode, layer $layer ..." >&2
        for rounds in 1 2; do
            count "$mode" "$layer" "$rounds"
            files+=("$out/$mode-$layer-$rounds.out")
        done
    done
    python3 - "$mode" "${files[@]}" <<'PY'
import sys

def totals(path):
    events = values = None
    for line in open(path):
        if line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith(("summary:", "totals:")):
            values = [int(v) for v in line.split()[1:]]
    return dict(zip(events, values))

def round_of(first, second):
    a, b = totals(first), totals(second)
    d = {k: b[k] - a.get(k, 0) for k in b}
    mispredicted = d.get("Bcm", 0) + d.get("Bim", 0)
    l1 = d.get("I1mr", 0) + d.get("D1mr", 0) + d.get("D1mw", 0)
    ll = d.get("ILmr", 0) + d.get("DLmr", 0) + d.get("DLmw", 0)
    return d["Ir"], d["Ir"] / 3 + 17 * mispredicted + 10 * l1 + 40 * ll

mode, files = sys.argv[1], sys.argv[2:]
off, on = round_of(*files[0:2]), round_of(*files[2:4])
if off[0] <= 0 or on[0] <= 0:
    sys.exit(
        f"layer-cost-counted: nothing was collected in {mode} mode; is `Engine::redact` "
        "inlined into the bench (LTO)? The counts need it as a function of its own."
    )
added = [100 * (n / f - 1) for f, n in zip(off, on)]
print(
    f"{mode:<9} off {off[0] / 1e6:6.0f}M instr {off[1] / 1e6:6.0f}M cycles   "
    f"on {on[0] / 1e6:6.0f}M instr {on[1] / 1e6:6.0f}M cycles   "
    f"added {added[0]:+.1f}% instr {added[1]:+.1f}% cycles  (target <= 30%)"
)
PY
done
