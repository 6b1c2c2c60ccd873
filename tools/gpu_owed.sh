#!/usr/bin/env bash
# What session 27 left owed on a GPU, in one device call (about 8 minutes), on the lent
# machine with carry [".whl", ".gl", "build/gpullm32", "build/gpullm16"] (zero-weight
# SmolLM2-135M programs, fp32 and fp16: `python bench/llm_bench.py zero build/llm/NAME.pte
# build/gpullmNN/NAME.pte.gz`, each with its NAME.export.json):
#   1. the native lane (tests/native, every fixture) on this tree -> $OUT/lane;
#   2. prefill A/B of the tiles form's key parts: up to 4 (the default) against 1 (a copy
#      of the staged package with PARTS = 1: no shares, no merge), 256 and 1020 tokens,
#      per-op times -> $OUT/ab.tgz and the table printed;
#   3. the anchor against torch (eager, CUDA graph, torch.compile + CUDA graph), fp32 then
#      fp16, contexts 16 / 256 / 1024 -> $OUT/anchor{,-fp16}.json.
# Each part's failure is printed and the next part still runs.
set -uo pipefail
cd "$(dirname "$0")/.."
: "${OUT:?set OUT (the device tool sets it)}"
source tools/h200_env.sh >/dev/null 2>&1
DEST=$OUT
OUT=$DEST/lane timeout "${LANE_S:-170}" bash tools/gpu_lane.sh -q -rfEsx -p no:cacheprovider \
  -n 12 tests/native | tail -6 || echo "owed: the lane exited $?"
S=/tmp/h200-stage/site
rm -rf /tmp/ab /tmp/parts1 && mkdir -p /tmp/parts1 \
  && cp -r /tmp/h200-stage/pkg/pte_webgpu /tmp/parts1/ \
  && sed -i 's/^PARTS = 4$/PARTS = 1/' /tmp/parts1/pte_webgpu/ops/attention_tiles.py \
  && grep -q "^PARTS = 1$" /tmp/parts1/pte_webgpu/ops/attention_tiles.py \
  || echo "owed: the PARTS = 1 copy was not made"
SETTINGS="parts4: parts1:PYTHONPATH=/tmp/parts1:$S" OUT=/tmp/ab ROUNDS=1 timeout 150 \
  bash tools/llm_ab.sh build/gpullm32 --contexts 256,1024 --steps 4 --profile | tail -10 \
  || echo "owed: the A/B exited $?"
tar czf "$DEST/ab.tgz" -C /tmp/ab . 2>/dev/null
for m in build/gpullm32/smollm2-135m-instruct build/gpullm16/smollm2-135m-instruct-fp16; do
  PTE_WEBGPU_IN_FLIGHT=8 timeout 130 python3 -m pte_webgpu bench -q --llm "$m.pte.gz" \
    --backend native --export-json "$m.export.json" --contexts 16,256,1024 --steps 32 \
    --output "$DEST/anchor$([[ $m == *fp16 ]] && echo -fp16).json" 2>&1 | tail -20 \
    || echo "owed: the anchor of $m exited $?"
done
