"""Screenshot web/chat.html answering a question with a real model (README's picture).

    python tools/screenshot_chat.py --model build/llm/smollm2-135m-instruct-fp16.pte \
        --out docs/images/chat-smollm2.png

Serves the pages as `pte-webgpu serve` does (web/ at /, the Pyodide dist at /pyodide/)
plus the model's folder at /llm/, opens the chat in headless Chromium (the project's
launch options), asks ``--question``, waits for the streamed answer and screenshots the
chat panel. It also prints the wasm heap before and after the load as JSON (the page's
``window.heapStats``). ``--no-ask`` stops after the load (heap numbers only).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", type=Path, required=True)
    ap.add_argument("--tokenizer", type=Path, help="default: the model's NAME.tokenizer.json")
    ap.add_argument("--out", type=Path, default=ROOT / "docs/images/chat-smollm2.png")
    ap.add_argument("--question", default="What is the capital of France?")
    ap.add_argument("--no-ask", action="store_true", help="load only; print the heap numbers")
    ap.add_argument("--timeout-s", type=float, default=900)
    args = ap.parse_args()

    from playwright.sync_api import sync_playwright
    from pte_webgpu.chromium.config import launch_options
    from pte_webgpu.chromium.dist import ensure_dist
    from pte_webgpu.chromium.server import StaticServer

    model = args.model.resolve()
    tok = args.tokenizer or model.with_name(
        model.name.removesuffix(".pte").removesuffix("-fp16") + ".tokenizer.json")
    tok = tok.resolve()
    mounts = {"/": ROOT / "web", "/pyodide/": ensure_dist(ROOT, log=lambda line: None),
              "/llm/": model.parent, "/tok/": tok.parent}  # /llm/ as `pte-webgpu serve`
    timeout_ms = args.timeout_s * 1000
    with StaticServer(mounts) as server, sync_playwright() as pw:
        browser = pw.chromium.launch(**launch_options())
        try:
            page = browser.new_page(viewport={"width": 900, "height": 700})
            page.on("console", lambda m: print(f"[console] {m.text}", file=sys.stderr)
                    if m.type in ("error", "warning") else None)
            started = time.perf_counter()
            page.goto(f"{server.url}chat.html?model=/llm/{model.name}&tokenizer=/tok/{tok.name}")
            page.wait_for_function("window.chatReady === true || !document.querySelector"
                                   "('#error').hidden", timeout=timeout_ms)
            error = page.inner_text("#error")
            report = {"load_wall_s": round(time.perf_counter() - started, 1),
                      "model_bytes": model.stat().st_size, "error": error or None,
                      **page.evaluate("window.heapStats ?? {}")}
            if not error and not args.no_ask:
                page.fill("#input", args.question)
                page.click("#send")
                page.wait_for_selector(".assistant[data-done=true]", timeout=timeout_ms)
                report["answer"] = page.inner_text(".assistant")
                report["speed"] = page.inner_text("#speed")
                args.out.parent.mkdir(parents=True, exist_ok=True)
                page.locator("#chat").screenshot(path=str(args.out))
                report["screenshot"] = str(args.out)
        finally:
            browser.close()
    print(json.dumps(report, indent=1))
    return 1 if report["error"] else 0


if __name__ == "__main__":
    sys.exit(main())
