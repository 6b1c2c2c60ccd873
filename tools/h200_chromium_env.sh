# Sourced on the lent GPU machine (tools/gpu_browser_lane.sh, tools/h200_browser_bench.py's
# run): Chromium unpacked from the carried parts (once per lease), and what to start it with:
# CHROME, CHROME_LD (its Debian libraries, for Chromium alone) and FLAGS.
PARTS=${CHROMIUM_PARTS:-.chromium-parts}
ROOT_DIR=${CHROMIUM_DIR:-/tmp/chromium}
if [ ! -x "$ROOT_DIR/usr/lib/chromium/chromium-headless-shell" ]; then
  mkdir -p "$ROOT_DIR" && cat "$PARTS"/p*/part* | xz -d | tar -x -C "$ROOT_DIR" || return 2
fi
CHROME=$ROOT_DIR/usr/lib/chromium/chromium-headless-shell
# fonts and fontconfig's configuration, where carried (tools/gpu_lane_wheels.sh fetches them):
# without any font the headless shell aborts when a page draws text
for f in ${FONTS_DIR:-.fonts}/*.deb; do [ -f "$f" ] && dpkg -x "$f" /; done
# the unpacked Debian libraries, for Chromium alone (the runner sets them as its LD_LIBRARY_PATH)
export CHROME_LD=$ROOT_DIR/usr/lib/x86_64-linux-gnu:$ROOT_DIR/lib/x86_64-linux-gnu:$ROOT_DIR/usr/lib/x86_64-linux-gnu/pulseaudio
ICD=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -f "$ICD" ] && export VK_DRIVER_FILES=$ICD
# Dawn on Vulkan without a surface: the set that gave the NVIDIA adapter (2026-12-01)
FLAGS="--enable-unsafe-webgpu --enable-features=Vulkan --use-vulkan=native --disable-vulkan-surface
  --use-angle=vulkan --ignore-gpu-blocklist --disable-gpu-sandbox
  --enable-dawn-features=allow_unsafe_apis --enable-webgpu-developer-features"
