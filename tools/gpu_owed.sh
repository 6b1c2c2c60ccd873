#!/usr/bin/env bash
# What a session without a GPU left owed, in one device call (about 6 minutes), on the
# lent machine with carry [".whl", ".gl", "build/gpullm32"] (build/gpullm32: SmolLM2's fp32
# program with zero weights, `python bench/llm_bench.py zero build/llm/NAME.pte
# build/gpullm32/NAME.pte.gz`, and its NAME.export.json):
#   1. the native lane (tests/native, every fixture) after shader changes -> $OUT/lane;
#   2. bench/coop_probe.py: what cooperative matrices wgpu-native offers -> $OUT/coop.json;
#   3. prefill A/B, `split` (rows for prefill) against `tiles` (flash attention), 256 and
#      1020 tokens, with per-op times -> $OUT/ab.tgz and the table printed;
#   4. the prefill's matrix shapes and 2048^3 against torch -> $OUT/linear.json.
# Each part's failure is printed and the next part still runs.
set -uo pipefail
cd "$(dirname "$0")/.."
: "${OUT:?set OUT (the device tool sets it)}"
source tools/h200_env.sh >/dev/null 2>&1
MODELS=${MODELS:-build/gpullm32}
DEST=$OUT
OUT=$DEST/lane timeout "${LANE_S:-170}" bash tools/gpu_lane.sh -q -rfEsx -p no:cacheprovider \
  -n 12 tests/native | tail -6 || echo "owed: the lane exited $?"
timeout 90 python3 bench/coop_probe.py --output "$DEST/coop.json" | tail -60 \
  || echo "owed: the probe exited $?"
rm -rf /tmp/ab
SETTINGS="split:PTE_WEBGPU_SDPA=split tiles:PTE_WEBGPU_SDPA=tiles" OUT=/tmp/ab ROUNDS=1 timeout 200 \
  bash tools/llm_ab.sh "$MODELS" --contexts 256,1024 --steps 4 --profile | tail -12 \
  || echo "owed: the A/B exited $?"
tar czf "$DEST/ab.tgz" -C /tmp/ab . 2>/dev/null
timeout 120 python3 -m pte_webgpu bench --op linear --backend native --dtypes float32 \
  --shapes 2048x2048x2048,1024x576x1536,1024x1536x576,1024x576x960 \
  --output "$DEST/linear.json" | tail -14 || echo "owed: the linear bench exited $?"
