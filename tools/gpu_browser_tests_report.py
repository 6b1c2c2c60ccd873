"""Summarise a browser-test run (pytest's JUnit XML) as markdown, with the WebGPU adapter
that the configured Chromium gets: tools/gpu_browser_tests.sh's report.

    python tools/gpu_browser_tests_report.py RESULT.xml EXIT_STATUS OUT.md [MORE.md ...]
"""

from __future__ import annotations

import os
import sys
import time
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from h200_browser_fixtures import ADAPTER_JS  # noqa: E402  (one probe for both lanes)


def adapter() -> dict:
    """The adapter a page of the configured Chromium gets (a served page: WebGPU needs a
    secure context, which 127.0.0.1 is and about:blank is not)."""
    from playwright.sync_api import sync_playwright

    from pte_webgpu.chromium import config
    from pte_webgpu.chromium.server import StaticServer

    with StaticServer({"/": ROOT / "web"}) as server, sync_playwright() as pw:
        browser = pw.chromium.launch(**config.launch_options())
        try:
            page = browser.new_page()
            page.goto(server.url)
            return page.evaluate(ADAPTER_JS) or {}
        finally:
            browser.close()


def outcomes(xml_path: Path) -> list[tuple[str, str, str]]:
    """(test id, outcome, message) for each test case in the JUnit XML."""
    rows = []
    for case in ET.parse(xml_path).getroot().iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        outcome, message = "passed", ""
        for tag in ("failure", "error", "skipped"):
            node = case.find(tag)
            if node is not None:
                outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[tag]
                message = (node.get("message") or node.text or "").strip()
                break
        rows.append((name, outcome, message))
    return rows


def main(argv: list[str]) -> int:
    xml_path, status, *targets = argv
    try:
        info = adapter()
    except Exception as e:  # noqa: BLE001 - the report still says what ran
        info = {"error": f"{type(e).__name__}: {e}"}
    rows = outcomes(Path(xml_path)) if Path(xml_path).is_file() else []
    counts = Counter(outcome for _, outcome, _ in rows)
    lines = ["# Browser tests on a real GPU: latest result", "",
             "Written by tools/gpu_browser_tests.sh: `pytest tests/browser` (Playwright, Pyodide",
             "pages) in the lent GPU's headless Chromium. Commit it after a run there.", "",
             f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
             f"- adapter: {info.get('vendor')} / {info.get('architecture')} / "
             f"{info.get('description') or info.get('device')}"
             + (f" ({info['error']})" if "error" in info else ""),
             f"- browser: {info.get('userAgent')}",
             f"- pytest arguments beyond tests/browser: `{os.environ.get('PYTEST_ARGS', '')}`",
             f"- pytest exit status {status}: **" + ", ".join(
                 f"{n} {k}" for k, n in sorted(counts.items())) + f" of {len(rows)} tests**", ""]
    for outcome in ("failed", "error", "skipped"):
        picked = [(n, m) for n, o, m in rows if o == outcome]
        if picked:
            lines += [f"## {outcome.capitalize()}", ""]
            lines += [f"- `{n}`: {' '.join(m.split())[:300]}" for n, m in picked] + [""]
    lines += ["## Adapter features", "", ", ".join(info.get("features") or []), ""]
    text = "\n".join(lines)
    for target in targets:
        if target:
            Path(target).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
