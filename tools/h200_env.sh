# Sourced at the start of a command on the lent H200 (device tool, carry [".whl", ".gl"]):
# the Vulkan loader from .gl/, NVIDIA's ICD, the wheels of .whl/ and this tree's package
# on PYTHONPATH (shaders as pte_webgpu.shaders), as tools/gpu_lane.sh stages them.
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
export PTE_WEBGPU_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
H200_STAGE=/tmp/h200-stage
rm -rf "$H200_STAGE" && mkdir -p "$H200_STAGE/site" "$H200_STAGE/pkg"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$H200_STAGE/site" .whl/*.whl
cp -r pkg/pte_webgpu "$H200_STAGE/pkg/" && rm -rf "$H200_STAGE/pkg/pte_webgpu/shaders" \
  && cp -r shaders "$H200_STAGE/pkg/pte_webgpu/shaders"
export PYTHONPATH="$H200_STAGE/pkg:$H200_STAGE/site:.${PYTHONPATH:+:$PYTHONPATH}"
