# Sourced by tools/gpu_lane.sh and tools/h200_vision_bench.sh (from the repository root):
# `stage_package STAGE PYTHON` installs the wheels of .whl/ (if any) into STAGE/site, copies
# this tree's package into STAGE/pkg (pkg/pte_webgpu with shaders/ as pte_webgpu.shaders, no
# build needed) and puts both first on PYTHONPATH.
stage_package() {
  local stage=$1 py=$2
  rm -rf "$stage" && mkdir -p "$stage/site" "$stage/pkg"
  if compgen -G ".whl/*.whl" >/dev/null; then
    "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target "$stage/site" .whl/*.whl
  fi
  cp -r pkg/pte_webgpu "$stage/pkg/" && rm -rf "$stage/pkg/pte_webgpu/shaders" \
    && cp -r shaders "$stage/pkg/pte_webgpu/shaders"
  export PYTHONPATH="$stage/pkg:$stage/site:.${PYTHONPATH:+:$PYTHONPATH}"
}
