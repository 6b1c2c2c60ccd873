#!/usr/bin/env bash
# LLM decode and prefill under several settings in one run on one warm machine (a fold on
# and off, a forced kernel form), alternating, so their ratios come from the same clocks:
#   tools/llm_ab.sh MODELS_DIR [bench args...]
# Every MODELS_DIR/NAME.pte.gz with its NAME.export.json (bench/llm_bench.py zero) runs
# once per setting per round (ROUNDS, default 2). SETTINGS: space-separated LABEL:ENV,
# default "base: merge:PTE_WEBGPU_FOLDS_ON=merge split:PTE_WEBGPU_SDPA=split".
# Results: $OUT (or /tmp/llm-ab)/NAME-LABEL-ROUND.json, then a table of tok/s by context.
# On a lent GPU only a few files come back from $OUT: write to a folder of its own and tar
# the records into $OUT (OUT=/tmp/ab ... ; tar czf $OUT/ab.tgz -C /tmp/ab $(cd /tmp/ab && ls *.json)).
# The package comes from this tree as Python finds it (tools/h200_env.sh stages it there).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
MODELS=${1:?usage: tools/llm_ab.sh MODELS_DIR [bench args...]}
shift
ARGS=("$@")
[ ${#ARGS[@]} -gt 0 ] || ARGS=(--contexts 16,256,1024 --steps 32)
SETTINGS=${SETTINGS:-"base: merge:PTE_WEBGPU_FOLDS_ON=merge split:PTE_WEBGPU_SDPA=split"}
DEST=${OUT:-/tmp/llm-ab}
mkdir -p "$DEST"
for round in $(seq 1 "${ROUNDS:-2}"); do
  for gz in "$MODELS"/*.pte.gz; do
    name=$(basename "$gz" .pte.gz)
    for setting in $SETTINGS; do
      label=${setting%%:*}
      assign=${setting#*:}
      echo "=== round $round: $name, $label ${assign:+($assign)}"
      env ${assign:+"$assign"} "$PY" -m pte_webgpu bench -q --llm "$gz" --backend native \
        --no-torch --export-json "$MODELS/$name.export.json" "${ARGS[@]}" \
        --output "$DEST/$name-$label-$round.json"
    done
  done
done
"$PY" - "$DEST" <<'EOF'
import json, sys
from collections import defaultdict
from pathlib import Path

rows = defaultdict(list)  # (program, setting, phase, context) -> (tok/s, cost) of each round
for f in sorted(Path(sys.argv[1]).glob("*.json")):
    if f.name.endswith(".profile.json"):  # --profile's per-op rows, beside each record file
        continue
    program, setting, _ = f.stem.rsplit("-", 2)
    for r in json.loads(f.read_text()):
        if r.get("impl") == "ours":
            rows[program, setting, r["phase"], r["context"]].append((r["tok_s"], r.get("cost")))


def each(got, f):
    return " / ".join(f(t, c) for t, c in got)


# decode: the step's dispatches and GPU µs back to back (llm/step_cost.py) beside tok/s
print("| program | setting | phase | context | tok/s (each round) | dispatches | GPU µs |")
print("|---|---|---|---|---|---|---|")
for (program, setting, phase, context), got in sorted(rows.items()):
    cost = got[0][1] or {}
    print(f"| {program} | {setting} | {phase} | {context} | "
          + each(got, lambda t, c: f"{t:.0f}") + f" | {cost.get('dispatches', '-')} | "
          + each(got, lambda t, c: f"{c['gpu_us']:.0f}" if c and c.get("gpu_us") else "-") + " |")
EOF
