#!/usr/bin/env bash
# rms_norm kernels before/after a change, in one run on one machine: the package at git
# ref BEFORE (default: main) and this tree's, benchmarked alternately (2 rounds each) with
# `pte-webgpu bench` (native backend). Extra arguments go to bench (default: three shapes).
#   tools/bench_ab.sh [BEFORE] [bench args...]
# Needs git, and what tools/gpu_lane.sh needs (wheels from .whl/ are installed the same way).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
BEFORE=${1:-main}
shift || true
ARGS=("$@")
[ ${#ARGS[@]} -gt 0 ] || ARGS=(--shapes 512x4096,4096x64,64x4096)
STAGE=${TMPDIR:-/tmp}/pte-webgpu-bench-ab
rm -rf "$STAGE" && mkdir -p "$STAGE/site" "$STAGE/before/src" "$STAGE/after"
if compgen -G ".whl/*.whl" >/dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$STAGE/site" .whl/*.whl
fi
stage() {  # stage SRC DST: SRC/pkg/pte_webgpu with SRC/shaders as pte_webgpu.shaders
  cp -r "$1/pkg/pte_webgpu" "$2/" && rm -rf "$2/pte_webgpu/shaders" && cp -r "$1/shaders" "$2/pte_webgpu/shaders"
}
git archive "$BEFORE" pkg shaders | tar -x -C "$STAGE/before/src"
stage "$STAGE/before/src" "$STAGE/before"
stage . "$STAGE/after"
for round in 1 2; do
  for side in before after; do
    echo "=== round $round: $side ($([ $side = before ] && echo "$BEFORE" || echo "this tree"))"
    PYTHONPATH="$STAGE/$side:$STAGE/site" "$PY" -m pte_webgpu bench --backend native "${ARGS[@]}" \
      --output "$STAGE/$side-$round.json" | sed -n '/^\*\*native/,/^wrote/p'
  done
done
