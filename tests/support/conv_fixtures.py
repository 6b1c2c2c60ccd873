"""The exported convolution programs (tests/fixtures/conv, make_conv.py) and their
tolerance against eager torch: fp32 1e-4, force_fp16 2e-2, relative, with an absolute
floor of the same fraction of the output's largest magnitude (values near 0)."""

import json

from tests.support.fixture_index import FIXTURES

CONV = FIXTURES / "conv"
INDEX = json.loads((CONV / "index.json").read_text())
NAMES = [e["name"] for e in INDEX]


def tolerance(name: str) -> float:
    entry = next(e for e in INDEX if e["name"] == name)
    return 2e-2 if entry.get("partitioner_compile_options", {}).get("force_fp16") else 1e-4
