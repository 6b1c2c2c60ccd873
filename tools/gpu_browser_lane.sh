#!/usr/bin/env bash
# The browser GPU lane: every fixture program in headless Chromium's WebGPU on the lent H200
# (tools/h200_browser_fixtures.py: the browser tests' page code, their tolerances), the
# adapter printed, a summary in docs/gpu-browser-lane.md (and $OUT when set).
#
# Chromium is Debian's chromium-headless-shell, packed here into .chromium-parts/pNN
# (../shared/tools/h200-chromium/pack.sh) and carried one part per device call; the Pyodide
# dist (build/web/pyodide, `make dist`) travels too, and on a freshly lent machine the .gl
# loaders unpacked first (tools/h200_env.sh's first line): without them Chromium finds no
# adapter. Extra arguments go to the fixture runner (e.g. --only conv/).
set -uo pipefail
cd "$(dirname "$0")/.."
source tools/h200_chromium_env.sh || exit 2
RESULT=${OUT:-build}/gpu-browser-lane.json
mkdir -p "$(dirname "$RESULT")"
python3 tools/h200_browser_fixtures.py --chrome "$CHROME" --dist build/web/pyodide \
  --out "$RESULT" "$@" -- $FLAGS
rc=$?
python3 - "$RESULT" "$rc" <<'PY'
import json, sys, time
from pathlib import Path
res = json.loads(Path(sys.argv[1]).read_text())
a = res.get("adapter_js") or {}
rows = res.get("results", [])
bad = [r for r in rows if r["verdict"] not in ("PASS",)]
lines = ["# Browser GPU lane: latest result", "",
         "Written by tools/gpu_browser_lane.sh: every fixture program in headless Chromium's",
         "WebGPU (tools/h200_browser_fixtures.py). Commit it after a run on a real GPU.", "",
         f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
         f"- adapter: {res.get('adapter')} (JS: vendor {a.get('vendor')}, "
         f"architecture {a.get('architecture')}, device {a.get('device')})",
         f"- browser: {a.get('userAgent')}",
         f"- Pyodide boot: {res.get('boot_s', 0):.1f} s; exit status {sys.argv[2]}",
         f"- **{res.get('counts')} of {len(rows)} programs**", ""]
if res.get("fatal"):
    lines += [f"FATAL: {res['fatal']}", ""]
lines += ["## Not passed", ""] + [f"- `{r['name']}`: {r['verdict']} {str(r['detail'])[:300]}"
                                  for r in bad] + ["", "## Adapter features", "",
                                                    ", ".join(a.get("features") or []), ""]
text = "\n".join(lines)
for target in (Path("docs/gpu-browser-lane.md"), Path(sys.argv[1]).with_suffix(".md")):
    target.write_text(text)
print(text)
PY
exit $rc
