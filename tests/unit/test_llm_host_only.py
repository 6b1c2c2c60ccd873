"""The runtime and the llm package never pull in the host-only export tools."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "pkg"


def test_runtime_and_llm_import_without_export_tools():
    # (jinja2 is a runtime dependency, but imported only when a chat template is compiled)
    code = (
        "import sys\n"
        "import pte_webgpu, pte_webgpu.llm, pte_webgpu.llm.generate, pte_webgpu.llm.sampling\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('torch', 'executorch', 'gguf', 'transformers', 'tokenizers', 'jinja2') "
        "or m.startswith('pte_webgpu.export'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"PYTHONPATH": str(PKG), "PATH": "/usr/bin:/bin"}, check=True)
    assert out.stdout.strip() == ""
