#!/usr/bin/env bash
# The GPU lane: tests/native (every fixture included) on the adapter wgpu
# picks, the adapter printed, the result written to docs/gpu-lane.md (and into $OUT
# when that is set, e.g. on a lent machine).
#
# Needs Python >= 3.11 with numpy and pytest. Wheels in .whl/ (wgpu, cffi, pycparser,
# rendercanvas, flatbuffers: tools/gpu_lane_wheels.sh fetches them) are
# installed into a private folder first; this tree's package is used without a build
# (pkg/pte_webgpu with shaders/ as pte_webgpu.shaders). Extra arguments go to pytest.
# Set VK_DRIVER_FILES if the Vulkan loader finds no driver; PTE_WEBGPU_REQUIRE_GPU=1
# fails the lane when wgpu picks a CPU adapter.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
source tools/stage_package.sh
stage_package "${TMPDIR:-/tmp}/pte-webgpu-gpu-lane" "$PY"
export PYTHONUNBUFFERED=1
"$PY" -c "import pte_webgpu, wgpu, flatbuffers, numpy, pytest; print('GPU lane: pte_webgpu from', pte_webgpu.__file__, '| wgpu', wgpu.__version__)"
exec "$PY" tools/gpu_lane.py ${OUT:+--copy-to "$OUT"} "$@"
