"""tools/h200_chat_screenshot.py, the chat page's screenshot and limit check for the lent GPU
(no Playwright there), run here on SwiftShader as it runs there: ``split`` the tiny decoder
(gzipped, cut into pNN/part) with a tiny tokenizer, then run the chat over Chromium's
DevTools pipe from the parts: a PNG of the answered chat, a report with the answer, the
speed line and the typed GpuLimitError of a binding limit lowered to 1024 bytes."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from pte_webgpu.chromium.config import launch_options
from pte_webgpu.chromium.dist import ensure_dist

from tests.support.llm_models import tiny_case, write_tiny_tokenizer

pytestmark = pytest.mark.browser
REPO = Path(__file__).resolve().parents[2]
TOOL = REPO / "tools" / "h200_chat_screenshot.py"
NAME = "llama_dynamic_hfrope"


def test_gpu_chat_screenshot_from_parts(tmp_path):
    tok = write_tiny_tokenizer(tmp_path, NAME)
    parts = tmp_path / "gpuchat"
    subprocess.run([sys.executable, TOOL, "split", "--model", tiny_case(NAME)["pte"],
                    "--tokenizer", tok, "--out", parts, "--part-mb", "0.05"],
                   check=True, timeout=60)
    folders = sorted(p.name for p in parts.iterdir())
    assert folders[:3] == ["p00", "p01", "p02"] and folders[-1] == "tok", folders
    assert all((parts / f / "part").stat().st_size <= 50_000 for f in folders[:-1])
    png, report = tmp_path / "chat.png", tmp_path / "chat.json"
    run = subprocess.run(
        [sys.executable, TOOL, "--chrome", launch_options()["executable_path"],
         "--dist", ensure_dist(), "--parts", parts, "--question", "Hi", "--out", png,
         "--report", report, "--timeout", "120", "--log", tmp_path / "chromium.log", "--",
         "--enable-unsafe-webgpu", "--headless=new"],
        capture_output=True, text=True, timeout=400)
    got = json.loads(report.read_text())
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
    assert got["answer"] and "tok/s" in got["speed"], got
    assert got["model"] == f"{NAME}.pte" and got["model_bytes"] == tiny_case(NAME)["pte"].stat().st_size
    assert got["heap"]["after"] >= got["heap"]["before"] > 0
    assert got["limit_error"].startswith("GpuLimitError: plan 'forward' instruction 0 graph value ")
    assert "maxStorageBufferBindingSize is 1024 bytes" in got["limit_error"]
