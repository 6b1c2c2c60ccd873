"""The exported programs of tests/fixtures/tensor_ops (make_tensor_ops.py): names and the
tolerance each is checked at against eager torch (fp32 1e-4 relative, force_fp16 2e-2;
integer and bool outputs exact either way)."""

import json
from pathlib import Path

TENSOR_OPS = Path(__file__).resolve().parents[1] / "fixtures" / "tensor_ops"
NAMES = [e["name"] for e in json.loads((TENSOR_OPS / "index.json").read_text())]


CALLS = {"update_cache": 4}  # calls sharing state (step0_.. of the npz); else one


def tolerance(name: str) -> float:
    return 2e-2 if name.endswith("_fp16") else 1e-4
