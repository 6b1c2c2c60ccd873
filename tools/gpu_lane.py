"""The GPU lane: the native test suite, which runs every fixture, on the
adapter wgpu picks; prints the adapter and writes a summary to docs/gpu-lane.md.

    python tools/gpu_lane.py [--summary docs/gpu-lane.md] [--copy-to DIR] [pytest args]

Run it through tools/gpu_lane.sh (or `make test-gpu`), which first installs wheels
carried in .whl/ and puts this tree's package on the path. The exit status is pytest's;
3 when PTE_WEBGPU_REQUIRE_GPU=1 and the adapter is a CPU (software) one; 4 with
--fail-on-skip when a test was skipped.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def adapter_info() -> dict:
    """What wgpu reports for the adapter pte-webgpu asks for (high-performance)."""
    import wgpu

    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    if adapter is None:
        return {"error": "no adapter"}
    info = dict(adapter.info)
    info["features"] = sorted(str(f) for f in adapter.features)
    return info


class Outcomes:
    """A pytest plugin that keeps each test's outcome (and why it skipped or failed)."""

    def __init__(self):
        self.counts = {k: 0 for k in ("passed", "failed", "error", "skipped", "xfailed",
                                      "xpassed")}
        self.failed, self.skipped, self.xfailed = [], [], []

    def pytest_runtest_logreport(self, report):
        if report.when == "call" or report.outcome != "passed":
            if hasattr(report, "wasxfail"):
                kind = "xfailed" if report.skipped else "xpassed"
                self.xfailed.append((report.nodeid, report.wasxfail))
            elif report.failed:
                kind = "failed" if report.when == "call" else "error"
                self.failed.append((report.nodeid, _first_line(report.longreprtext)))
            elif report.skipped:
                kind = "skipped"
                reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else ""
                self.skipped.append((report.nodeid, reason))
            else:
                kind = "passed"
            self.counts[kind] += 1


def _first_line(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.startswith("E ")]
    if lines:
        return lines[0][1:].strip()[:200]
    tail = text.strip().splitlines()
    return tail[-1][:200] if tail else ""


def summary(info: dict, outcomes: Outcomes, seconds: float, args: list[str], status: int) -> str:
    c = outcomes.counts
    name = info.get("device") or info.get("description") or "?"
    lines = [
        "# GPU lane: latest result",
        "",
        "Written by `make test-gpu` (tools/gpu_lane.py): the native suite (tests/native,",
        "which runs every fixture) on the adapter wgpu picks. Commit it after a run on a",
        "real GPU.",
        "",
        f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}",
        f"- adapter: {name} (vendor {info.get('vendor', '?')}, "
        f"{info.get('adapter_type', '?')}, backend {info.get('backend_type', '?')})",
        f"- driver: {info.get('description', '?')}",
        f"- host: {platform.node()}, Python {platform.python_version()}",
        f"- command: pytest {' '.join(args)} ({seconds:.0f} s, exit status {status})",
        f"- **passed {c['passed']}, failed {c['failed']}, errors {c['error']}, skipped "
        f"{c['skipped']}, xfailed {c['xfailed']}, xpassed {c['xpassed']}**",
        "",
    ]
    for title, rows in (("Failed", outcomes.failed), ("Skipped", outcomes.skipped),
                        ("Expected failures", outcomes.xfailed)):
        if rows:
            lines += [f"## {title}", ""] + [f"- `{nodeid}`: {why}" for nodeid, why in rows] + [""]
    lines += ["## Adapter features", "", ", ".join(info.get("features", [])) or "?", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--summary", default=str(ROOT / "docs" / "gpu-lane.md"))
    ap.add_argument("--copy-to", default=None, help="also copy the summary into this folder")
    ap.add_argument("--fail-on-skip", action="store_true",
                    help="exit 4 if any test skipped (on a real GPU none should)")
    opts, rest = ap.parse_known_args(argv)
    import pytest

    info = adapter_info()
    print("GPU lane adapter:", {k: v for k, v in info.items() if k != "features"}, flush=True)
    if os.environ.get("PTE_WEBGPU_REQUIRE_GPU") == "1" and info.get("adapter_type") == "CPU":
        print("GPU lane: PTE_WEBGPU_REQUIRE_GPU=1 but wgpu picked a CPU adapter", flush=True)
        return 3
    args = rest or ["-q", "-rfEsx", "-p", "no:cacheprovider", "tests/native"]
    outcomes = Outcomes()
    start = time.perf_counter()
    status = int(pytest.main(list(args), plugins=[outcomes]))  # pytest edits the list
    text = summary(info, outcomes, time.perf_counter() - start, args, status)
    Path(opts.summary).write_text(text)
    if opts.copy_to:
        shutil.copy(opts.summary, opts.copy_to)
    print(text.split("\n## ")[0], flush=True)
    if status == 0 and opts.fail_on_skip and outcomes.counts["skipped"]:
        print("GPU lane: tests were skipped (--fail-on-skip)", flush=True)
        return 4
    return status


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.exit(main())
