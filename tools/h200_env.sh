# Sourced at the start of a command on the lent H200 (device tool, carry [".whl", ".gl"]):
# the Vulkan loader from .gl/, NVIDIA's ICD, then this tree's package and the wheels of .whl/
# on PYTHONPATH (tools/stage_package.sh, as the GPU lane stages them).
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
export PTE_WEBGPU_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
source tools/stage_package.sh
stage_package /tmp/h200-stage python3
