#!/usr/bin/env bash
# The browser tests (pytest tests/browser: Playwright driving Pyodide pages) in the carried
# headless Chromium on the lent GPU, its adapter printed, the result in
# docs/gpu-browser-tests.md (and $OUT when set). The twin of tools/gpu_browser_lane.sh,
# which runs every fixture program; this runs the tests as CI runs them on SwiftShader.
#
# Carry, beside what gpu_browser_lane.sh needs (.chromium-parts, .fonts, .gl, .whl,
# build/web/pyodide): .whl-playwright (tools/gpu_lane_wheels.sh fetches playwright, greenlet
# and pyee: ~55 MB, more than one device call carries beside the tree: split it) and
# build/npm (the Pyodide tarball: the staged package is no checkout, so its dist is built
# in a cache of its own). Chromium starts through a wrapper that gives it its Debian
# libraries and the flags that get the NVIDIA adapter (tools/h200_chromium_env.sh), after
# Playwright's own (the last of a repeated switch wins).
# Extra arguments go to pytest (default: -n 8).
# Call by call on one lease (the tree travels too, ~32 MB, within 64 MiB a call; carried
# paths stay while the machine is held, 30 s between calls): .chromium-parts/p00, p01 and
# p02 one a call, each copied to /tmp/parts; p03 + build/web + .fonts + .gl, then
# `CHROMIUM_PARTS=/tmp/parts tools/gpu_browser_lane.sh`; build/parts/q00 (the playwright
# wheel's first 30 MB, `split -b 30M`) copied to /tmp/pw; build/parts/q01 (the rest and
# .whl-playwright's other wheels) + build/npm, the wheel put back together in
# .whl-playwright, then this with CHROMIUM_PARTS=/tmp/parts (session 27: 102 s, -n 14).
set -uo pipefail
cd "$(dirname "$0")/.."
source tools/h200_chromium_env.sh || exit 2
source tools/stage_package.sh
STAGE=${TMPDIR:-/tmp}/pte-webgpu-browser-tests
stage_package "$STAGE" python3
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
  --target "$STAGE/site" .whl-playwright/*.whl || exit 2
# the stage looks like a checkout to the package (chromium/paths.py): the CLI's pages and
# bundled examples are this tree's web/ and tests/fixtures, its dist in the stage's build/
ln -s "$PWD/pyproject.toml" "$PWD/web" "$STAGE/" && mkdir -p "$STAGE/tests" "$STAGE/build/npm" \
  && ln -s "$PWD/tests/fixtures" "$STAGE/tests/fixtures" && cp build/npm/pyodide-*.tgz "$STAGE/build/npm/"
# our flags only where the launch asks for WebGPU (a test starts Chromium without it)
WRAPPER=$STAGE/chromium
cat > "$WRAPPER" <<EOF
#!/bin/sh
case " \$* " in *" --enable-unsafe-webgpu "*) more="$(echo $FLAGS)" ;; *) more= ;; esac
LD_LIBRARY_PATH=$CHROME_LD exec $CHROME "\$@" \$more
EOF
chmod +x "$WRAPPER"
export PTE_WEBGPU_CACHE=$STAGE/cache PTE_WEBGPU_CHROMIUM=$WRAPPER PYTHONUNBUFFERED=1
mkdir -p "$PTE_WEBGPU_CACHE/npm" && cp build/npm/pyodide-*.tgz "$PTE_WEBGPU_CACHE/npm/"
ARGS=("$@")
[ ${#ARGS[@]} -gt 0 ] || ARGS=(-n 8)
RESULT=${OUT:-build}/gpu-browser-tests.xml
mkdir -p "$(dirname "$RESULT")"
# test_installed_wheel builds a wheel with pip, which needs setuptools from an index
python3 -m pytest tests/browser -q -rfEs -p no:cacheprovider --junitxml="$RESULT" \
  --ignore tests/browser/test_installed_wheel.py --durations=25 "${ARGS[@]}" 2>&1 | tee "${RESULT%.xml}.log" | tail -70
rc=${PIPESTATUS[0]}
PYTEST_ARGS="${ARGS[*]}" python3 tools/gpu_browser_tests_report.py "$RESULT" "$rc" docs/gpu-browser-tests.md \
  "${OUT:+$OUT/gpu-browser-tests.md}"
exit $rc
