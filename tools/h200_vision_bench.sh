#!/usr/bin/env bash
# Issue 19's vision benchmarks on a lent GPU machine, in one command (docs/performance.md,
# "Vision models (issue 19)"): for each model of $VISION_MODELS in $VISION_DIR (make
# vision-bench-programs, here), `bench --vision` natively (ours, torch eager / CUDA graph /
# torch.compile in the same run), ResNet-18's conv2d shapes (ours' one-op programs and
# cuDNN), and, when $CHROME is set (`source unpack.sh DIR` of ../shared/tools/h200-chromium,
# copied into the project), the same models in headless Chromium (ours in Pyodide, ORT Web)
# driven over the DevTools protocol. Records, tables and (with matplotlib) plots go to $OUT.
#
# Needs Python >= 3.11 with numpy (+ torch with CUDA for torch's side). Wheels in .whl/ are
# installed into a private folder first, as tools/gpu_lane.sh does; this tree's package runs
# without a build. Set RUNS (default 100) and VISION_TAG (default h200) to change the names.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
OUT=${OUT:-build/bench}
DIR=${VISION_DIR:-build/vision}
MODELS=${VISION_MODELS:-mobilenet_v2 resnet18}
RUNS=${RUNS:-100}
TAG=${VISION_TAG:-h200}
DIST=${DIST:-build/web/pyodide}
source tools/stage_package.sh
stage_package "${TMPDIR:-/tmp}/pte-webgpu-vision-bench" "$PY"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
"$PY" -c "import pte_webgpu, wgpu; print('vision bench: pte_webgpu', pte_webgpu.__file__, '| wgpu', wgpu.__version__)"
"$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())" || true
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu \
  --format=csv > "$OUT/vision_${TAG}_gpu.csv" 2>&1 || true
rc=0
for m in $MODELS; do
  if [ ! -f "$DIR/$m.pte" ]; then echo "no $DIR/$m.pte: skipping $m"; continue; fi
  echo "=== $m: native"
  "$PY" -m pte_webgpu bench --vision "$DIR/$m.pte" --backend native --runs "$RUNS" \
    --output "$OUT/vision_${TAG}_$m.json" --markdown "$OUT/vision_${TAG}_$m.md" || rc=1
done
if [ -d "$DIR/convs" ]; then
  echo "=== ResNet-18 conv2d shapes"
  # ours through bench/conv_gpu.py (the pick and every variant), then through the one-op
  # programs (the conv as a program loads it): both beside cuDNN
  "$PY" bench/vision_bench.py convs --programs "$DIR/convs" --output "$OUT/vision_${TAG}_convs.json" \
    --markdown "$OUT/vision_${TAG}_convs.md" || rc=1
  "$PY" bench/vision_bench.py convs --programs "$DIR/convs" --via programs \
    --output "$OUT/vision_${TAG}_convs_programs.json" --markdown "$OUT/vision_${TAG}_convs_programs.md" || rc=1
fi
if [ -n "${CHROME:-}" ]; then
  for m in $MODELS; do
    [ -f "$DIR/$m.pte" ] || continue
    echo "=== $m: Chromium (ours in Pyodide, ONNX Runtime Web)"
    "$PY" bench/vision_bench.py browser "$DIR/$m.pte" --chrome "$CHROME" --dist "$DIST" \
      --chrome-flags "${CHROME_FLAGS:---enable-unsafe-webgpu}" --runs "$RUNS" \
      --output "$OUT/vision_${TAG}_browser_$m.json" --markdown "$OUT/vision_${TAG}_browser_$m.md" || rc=1
  done
else
  echo "CHROME is not set (source unpack.sh first): no Chromium runs"
fi
exit $rc
