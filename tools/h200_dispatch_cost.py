"""bench/dispatch_cost.py in headless Chromium on the lent GPU (issue 24: what a dispatch
costs there against natively, where `python3 bench/dispatch_cost.py` measures it), over
the DevTools pipe of tools/h200_browser_fixtures.py (no Playwright there).

  (there, after `source tools/h200_chromium_env.sh`: CHROME, CHROME_LD, FLAGS)
  python3 tools/h200_dispatch_cost.py --chrome "$CHROME" --dist build/web/pyodide \\
      --out RESULT.json -- $FLAGS
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import h200_browser_fixtures as fx  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chrome", required=True)
    ap.add_argument("--dist", required=True, type=Path)
    ap.add_argument("--out", default="h200-dispatch-cost.json")
    ap.add_argument("--log", default="/tmp/h200-dispatch-cost-chromium.log")
    ap.add_argument("flags", nargs="*")
    args = ap.parse_args(argv)
    bench = (ROOT / "bench" / "dispatch_cost.py").read_text().replace(
        'if __name__ == "__main__":', "if False:")
    httpd = fx.serve(args.dist)
    chrome = fx.Chrome(args.chrome, args.flags, args.log)
    summary = {"flags": args.flags}
    try:
        chrome.open(f"http://127.0.0.1:{httpd.server_address[1]}/harness.html"
                    "?indexURL=/pyodide/")
        t0 = time.time()
        chrome.evaluate("new Promise(r => { const t = () => window.pyodideReady ? r(1)"
                        " : setTimeout(t, 50); t(); })", 60)
        chrome.evaluate("window.pyodideReady.then(() => true)", 120)
        summary["boot_s"] = time.time() - t0
        summary["adapter_js"] = chrome.evaluate(fx.ADAPTER_JS)
        chrome.python((ROOT / "tests" / "browser" / "page_support.py").read_text() + "\nNone")
        chrome.python(bench + "\nNone")
        summary["records"] = json.loads(chrome.python(
            "import json as _json\n_json.dumps(await run((await runtime()).device))", 300))
        for r in summary["records"]:
            gpu = r.get("gpu_per_dispatch_us")
            print(f"{r['layout']:>7}: {r['wall_per_dispatch_us']:.2f} µs a dispatch (wall)"
                  + (f", {gpu:.2f} µs (GPU)" if gpu is not None else ""))
        rc = 0
    except Exception as e:  # a hang or a broken page: say so in the result
        summary["fatal"] = f"{type(e).__name__}: {e}"
        print(f"FATAL: {summary['fatal']}")
        rc = 1
    finally:
        summary["console_tail"] = chrome.console[-50:]
        chrome.close()
        httpd.shutdown()
        Path(args.out).write_text(json.dumps(summary, indent=1, default=repr))
        print(f"wrote {args.out}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
