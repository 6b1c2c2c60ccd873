#!/usr/bin/env bash
# Fetch into .whl/ and .whl-playwright/ (ignored by git) the wheels tools/gpu_lane.sh installs where pip
# cannot reach a registry (e.g. a lent GPU machine with Python 3.12 on x86-64): the
# native backend (wgpu and what it imports) and flatbuffers, at the versions CI uses.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
PLATFORMS=()
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 \
         manylinux2014_x86_64 manylinux1_x86_64; do PLATFORMS+=(--platform "$p"); done
version() { "$PY" -m pip show "$1" 2>/dev/null | sed -n "s/^Version: //p" || true; }
for name in wgpu cffi pycparser rendercanvas flatbuffers; do
  v=$(version "$name")
  "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp "${PLATFORMS[@]}" -d .whl "$name${v:+==$v}"
done
ls -l .whl
# The browser tests on the lent GPU (tools/gpu_browser_tests.sh): Playwright (its wheel
# bundles node and the driver, ~55 MB: a device call of its own) and what it imports.
for name in playwright greenlet pyee typing_extensions jinja2 markupsafe; do
  v=$(version "$name")
  "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp "${PLATFORMS[@]}" -d .whl-playwright "$name${v:+==$v}"
done
ls -l .whl-playwright
# The lent machine has no fonts: Chromium's headless shell aborts as soon as a page draws
# text (SkFontMgr_FontConfigInterface "Not implemented"), e.g. the chat page's screenshot.
# tools/h200_chromium_env.sh unpacks these where they are carried (.fonts).
mkdir -p .fonts && (cd .fonts && apt-get download fonts-dejavu-core fontconfig-config)
ls -l .fonts
