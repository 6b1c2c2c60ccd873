"""bench/dispatch_cost.py inside Pyodide on Chromium's WebGPU (SwiftShader here): the same
code as natively, on the page's device, so the lent GPU's Chromium can say what a
dispatch costs there (issue 24)."""

from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

HERE = Path(__file__).parent
BENCH = (HERE.parents[1] / "bench" / "dispatch_cost.py").read_text()


def test_dispatch_cost_runs_in_the_page(browser_session):
    page = browser_session
    page.run_python((HERE / "page_support.py").read_text())
    page.run_python(BENCH.replace('if __name__ == "__main__":', "if False:"))
    records = page.run_python(
        "await run((await runtime()).device, counts=(4, 12), repeats=2)")
    assert [r["layout"] for r in records] == ["chain", "apart", "bound8"]
    for r in records:
        # the page's clock is coarse (performance.now): a short run can read 0 (CI did)
        assert len(r["wall_us"]) == 2 and all(t >= 0 for t in r["wall_us"]), r
        assert r["wall_per_dispatch_us"] == (r["wall_us"][1] - r["wall_us"][0]) / 8


def test_the_lent_gpus_runner_works_here(tmp_path):
    """tools/h200_dispatch_cost.py (the DevTools pipe, no Playwright) on this Chromium."""
    import json
    import subprocess
    import sys

    from pte_webgpu.chromium.config import launch_options
    from pte_webgpu.chromium.dist import ensure_dist

    out = tmp_path / "cost.json"
    run = subprocess.run(
        [sys.executable, HERE.parents[1] / "tools" / "h200_dispatch_cost.py", "--chrome",
         launch_options()["executable_path"], "--dist", ensure_dist(), "--out", out, "--",
         "--enable-unsafe-webgpu", "--headless=new"],
        capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    result = json.loads(out.read_text())
    assert [r["layout"] for r in result["records"]] == ["chain", "apart", "bound8"]
    assert all(r["wall_us"][1] >= 0 for r in result["records"])  # a coarse clock: 0 can be
